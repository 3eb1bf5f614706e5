"""A failing assertion that expects one call to raise: ``with pytest.raises(E): f(x)``,
``with self.assertRaises(E): ...``, and the callable forms ``self.assertRaises(E, f, x)``,
``pytest.raises(E, f, x)``, ``self.assertRaisesRegex(E, "msg", lambda: f(x))``."""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from referee.checks.arbitration.bindings import Bindings
from referee.checks.arbitration.sites import (
    WRAPPERS,
    Isolated,
    NotIsolated,
    Site,
    dotted,
    is_literal,
    wrapped_call,
)
from referee.checks.nodes import (
    call_arguments,
    excerpt,
    innermost_at,
    keyword_argument,
    statements,
    unwrap,
)
from referee.checks.pymodule import Function, PythonModule
from referee.checks.source import SourceFile

# What expects a call to raise: ``with pytest.raises(E)``, ``with self.assertRaises(E)``,
# and their callable forms ``self.assertRaises(E, f, *args)``, ``pytest.raises(E, f, x)``;
# the value is how many positional arguments come before the callable.
# what finds the callee of a call (and the object a method is of): isolate's
CalleeOf = Callable[
    [SourceFile, Function, Node, Node], "tuple[str, tuple[str, Node, tuple[str, ...]] | None]"
]
_RAISES = {"raises": 1, "assertRaises": 1, "assertRaisesRegex": 2, "assertRaisesRegexp": 2}


def _raises_name(source: SourceFile, call: Node) -> str | None:
    """``raises``/``assertRaises``... when ``call`` is one (``pytest.raises``, ``raises``,
    ``self.assertRaises``), else None."""
    if call.type != "call":
        return None
    function = call.child_by_field_name("function")
    name = dotted(source, function) or ""
    if not name and function is not None and function.type == "attribute":
        attribute = function.child_by_field_name("attribute")  # ``TestCase().assertRaises``
        name = "." + source.node_text(attribute) if attribute is not None else ""
    last = name.rsplit(".", 1)[-1]
    if last not in _RAISES:
        return None
    if last == "raises" and name not in ("raises", "pytest.raises"):
        return None
    return last


def raises_callable(source: SourceFile, call: Node) -> Node | None:
    """The callable a callable-form raises assertion hands over (``f`` of
    ``self.assertRaises(E, f, 1)``), or None."""
    name = _raises_name(source, call)
    if name is None:
        return None
    args = [a for a in call_arguments(call) if a.type != "keyword_argument"]
    position = _RAISES[name]
    return unwrap(args[position]) if len(args) > position else None


def raises_at(
    source: SourceFile,
    module: PythonModule,
    fn: Function,
    line: int,
    indices: dict[str, int],
    frame_locals: dict[str, str] | None,
    callee_of: CalleeOf | None = None,
) -> Isolated | None:
    """The assertion on ``line`` when it expects one call to raise: the call (the one
    statement of a ``with pytest.raises(E):`` / ``with self.assertRaises(E):`` block, or
    the callable and arguments of ``self.assertRaises(E, f, *args)``, a ``lambda: f(x)``
    too) and the exception (``op`` ``raises``, the expected value the exception's name).
    None when the line holds no such assertion; NotIsolated when it holds one that says
    nothing about one call. ``callee_of``: the dotted callee of a call and, for a method
    of an object the test builds, (the class, its constructor call, the form) —
    :func:`referee.checks.arbitration.receivers.callee_and_object`."""
    found = _raises_node(source, fn, line)
    if found is None:
        return None
    forms = ["raises"]
    block_literals: dict[str, Node] = {}
    if found.type == "with_statement":
        manager = _with_raises(source, found)
        assert manager is not None
        call, block_literals = _block_call(source, found)
        arguments_of = None
    else:
        manager = found
        call, arguments_of = _handed_call(source, found)
    name = _raises_name(source, manager) or ""
    if name.startswith("assert"):
        forms.insert(0, "unittest-method")
    args = [a for a in call_arguments(manager) if a.type != "keyword_argument"]
    exception = unwrap(args[0]) if args else None
    if exception is None or exception.type not in ("identifier", "attribute"):
        raise NotIsolated(
            "cannot isolate the call under test: the raises assertion does not name one "
            "exception class"
        )
    bindings = _BlockBindings(
        source, module, fn, indices, found.start_point.row, frame_locals, block_literals
    )
    callee, arguments, wrapper, built = _called(
        source, fn, found, (call, arguments_of), name, bindings, callee_of
    )
    constructor, constructor_arguments = bindings.built_object(built, forms)
    forms.extend(f for f in bindings.forms if f not in forms)
    pattern = match_pattern(source, manager, name)
    if pattern is not None:
        forms.append("raises-match")
    return Isolated.at(
        source,
        found,
        op="raises",
        call_side="left",
        callee=callee,
        arguments=arguments,
        expected=Site(
            "implicit",
            exception.start_byte,
            exception.end_byte,
            source.node_text(exception),
            exception.start_point.row + 1,
        ),
        wrapper=wrapper,
        forms=tuple(forms),
        definitions=bindings.definitions,
        constructor=constructor,
        constructor_arguments=constructor_arguments,
        match=pattern,
    )


def _called(
    source: SourceFile,
    fn: Function,
    found: Node,
    handed: tuple[Node, Node | None],
    name: str,
    bindings: Bindings,
    callee_of: CalleeOf | None,
) -> tuple[str, str, str | None, tuple[str, Node, tuple[str, ...]] | None]:
    """(the callee, the arguments, the wrapper, the object a method is of) of the call
    that should raise: ``handed`` is the call (or the callable handed over) and the
    assertion call whose arguments it is called with (None for a call)."""
    call, arguments_of = handed
    wrapper = None
    built: tuple[str, Node, tuple[str, ...]] | None = None
    if call.type == "call":
        outer = dotted(source, call.child_by_field_name("function"))
        inner_call = wrapped_call(call)
        if outer in WRAPPERS and inner_call is not None:
            wrapper, call = outer, inner_call
        _returned_callable(source, call)
        callee = dotted(source, call.child_by_field_name("function"))
        if callee_of is not None:
            callee, built = callee_of(source, fn, call, found)
        arguments = bindings.arguments(call)
    else:
        callee = dotted(source, call)
        assert arguments_of is not None
        rest = [a for a in call_arguments(arguments_of) if a.type != "keyword_argument"]
        parts = [bindings.site(a, "an argument").text for a in rest[_RAISES[name] + 1 :]]
        arguments = ", ".join(parts)
    if callee is None or callee.startswith("self."):
        raise NotIsolated(
            "cannot isolate the call under test: the call that should raise is not a plain "
            "function name"
        )
    return callee, arguments, wrapper, built


def match_pattern(source: SourceFile, manager: Node, name: str) -> str | None:
    """The message pattern a raises assertion holds the exception to — ``match=`` of
    ``pytest.raises``, the second argument of ``assertRaisesRegex`` — as the source
    writes it (a literal, or the expression); None when it names none."""
    pattern = keyword_argument(source, manager, "match")
    if pattern is None and name.startswith("assertRaisesRegex"):
        pattern = keyword_argument(source, manager, "expected_regex")
        args = [a for a in call_arguments(manager) if a.type != "keyword_argument"]
        if pattern is None and len(args) > 1:
            pattern = args[1]
    return source.node_text(unwrap(pattern)) if pattern is not None else None


def _returned_callable(source: SourceFile, call: Node) -> None:
    """Raises :class:`NotIsolated` when ``call`` calls what another call returned
    (``make(x)(y)``): the function under test would be a value, not a name."""
    function = call.child_by_field_name("function")
    if function is not None and unwrap(function).type == "call":
        raise NotIsolated(
            "cannot isolate the call under test: the call that should raise calls the value "
            f"`{excerpt(source.node_text(function))}` returns; arbitration computes truths "
            "for a function's own call"
        )


class _BlockBindings(Bindings):
    """Bindings that also read a literal the ``with`` block assigns before its call."""

    def __init__(
        self,
        source: SourceFile,
        module: PythonModule,
        fn: Function,
        indices: dict[str, int],
        row: int,
        frame_locals: dict[str, str] | None,
        block_literals: dict[str, Node],
    ) -> None:
        super().__init__(source, module, fn, indices, row, frame_locals)
        self.block_literals = block_literals

    def site(self, node: Node, what: str, *, argument: bool = False) -> Site:
        node = unwrap(node)
        value = self.block_literals.get(self.source.node_text(node))
        if node.type == "identifier" and value is not None:
            self._form("local")
            text = self.source.node_text(value)
            return Site(
                "assignment", value.start_byte, value.end_byte, text, value.start_point.row + 1
            )
        return super().site(node, what, argument=argument)


def _raises_node(source: SourceFile, fn: Function, line: int) -> Node | None:
    """The innermost ``with`` statement entering a raises assertion, or callable-form
    raises call, of ``fn`` whose lines hold ``line`` (1-based)."""
    return innermost_at(
        fn.body,
        line,
        lambda node: (
            (node.type == "with_statement" and _with_raises(source, node) is not None)
            or (node.type == "call" and raises_callable(source, node) is not None)
        ),
        skip=("function_definition", "class_definition", "lambda"),
    )


def _block_call(source: SourceFile, statement: Node) -> tuple[Node, dict[str, Node]]:
    """The one call of a ``with pytest.raises(E):`` block (``f(x)``, ``y = f(x)``,
    ``list(f(x))``), and the literals the block assigns to names before it (``n = -1``
    then ``f(n)``)."""
    body = statement.child_by_field_name("body")
    inner = statements(body) if body is not None else []
    literals: dict[str, Node] = {}
    for stmt in inner[:-1]:
        assigned = _literal_assignment(source, stmt)
        if assigned is None or assigned[0] in literals:
            raise NotIsolated(
                "cannot isolate the call under test: the block that should raise is not one "
                "call (a single `f(...)` statement in the `with` block, after literals "
                "assigned to names)"
            )
        literals[assigned[0]] = assigned[1]
    last = inner[-1] if inner else None
    call = None
    if last is not None and last.type == "expression_statement" and last.named_children:
        value = unwrap(last.named_children[0])
        if value.type == "assignment":
            value = unwrap(value.child_by_field_name("right") or value)
        call = value if value.type == "call" else None
    if call is None:
        what = _statement_kind(source, last)
        raise NotIsolated(
            "cannot isolate the call under test: the block that should raise is not one "
            f"call{what} (a single `f(...)` statement in the `with` block)"
        )
    return call, literals


def _literal_assignment(source: SourceFile, stmt: Node) -> tuple[str, Node] | None:
    """(name, literal) of a statement ``name = <literal>``, else None."""
    if stmt.type != "expression_statement" or not stmt.named_children:
        return None
    assign = unwrap(stmt.named_children[0])
    if assign.type != "assignment":
        return None
    left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    if left is None or right is None or left.type != "identifier":
        return None
    right = unwrap(right)
    return (source.node_text(left), right) if is_literal(source.node_text(right)) else None


def _statement_kind(source: SourceFile, stmt: Node | None) -> str:
    """What the block's statement is instead of a call, for the message."""
    if stmt is None:
        return ""
    text = excerpt(source.node_text(stmt), 60)
    if stmt.type == "with_statement":
        return f": it enters another context manager (`{text}`)"
    if stmt.type == "delete_statement":
        return f": it deletes (`{text}`)"
    if stmt.type == "raise_statement":
        return f": it raises itself (`{text}`)"
    value = unwrap(stmt.named_children[0]) if stmt.named_children else None
    if value is not None and value.type in ("assignment", "augmented_assignment"):
        return f": it assigns (`{text}`)"
    return f": `{text}`"


def _handed_call(source: SourceFile, found: Node) -> tuple[Node, Node | None]:
    """(the call a callable-form raises assertion makes — the lambda's call, or the
    callable handed over —, the assertion call whose arguments it is called with, None
    for a lambda)."""
    handed = raises_callable(source, found)
    assert handed is not None
    if handed.type == "lambda":
        body = handed.child_by_field_name("body")
        call = unwrap(body) if body is not None else None
        if call is None or call.type != "call":
            raise NotIsolated(
                "cannot isolate the call under test: the lambda handed to the raises "
                "assertion is not one call"
            )
        return call, None
    if handed.type in ("identifier", "attribute"):
        return handed, found
    raise NotIsolated(
        "cannot isolate the call under test: what the raises assertion calls is "
        "not a function name or a lambda"
    )


def _with_raises(source: SourceFile, node: Node) -> Node | None:
    """The ``pytest.raises(E)`` / ``self.assertRaises(E)`` call a ``with`` statement enters
    (its only context manager), or None."""
    clause = next((c for c in node.named_children if c.type == "with_clause"), None)
    items = [c for c in clause.named_children if c.type == "with_item"] if clause else []
    if len(items) != 1:
        return None
    value = items[0].child_by_field_name("value")
    value = unwrap(value) if value is not None else None
    if value is not None and value.type == "as_pattern":
        value = unwrap(value.named_children[0]) if value.named_children else None
    if value is None or _raises_name(source, value) is None:
        return None
    return value
