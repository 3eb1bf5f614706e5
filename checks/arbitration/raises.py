"""A failing assertion that expects one call to raise: ``with pytest.raises(E): f(x)``,
``with self.assertRaises(E): ...``, and the callable forms ``self.assertRaises(E, f, x)``,
``pytest.raises(E, f, x)``, ``self.assertRaisesRegex(E, "msg", lambda: f(x))``."""

from __future__ import annotations

from tree_sitter import Node

from referee.checks.arbitration.bindings import Bindings
from referee.checks.arbitration.sites import (
    WRAPPERS,
    Isolated,
    NotIsolated,
    Site,
    dotted,
    wrapped_call,
)
from referee.checks.nodes import call_arguments, innermost_at, statements, unwrap
from referee.checks.pymodule import Function, PythonModule
from referee.checks.source import SourceFile

# What expects a call to raise: ``with pytest.raises(E)``, ``with self.assertRaises(E)``,
# and their callable forms ``self.assertRaises(E, f, *args)``, ``pytest.raises(E, f, x)``;
# the value is how many positional arguments come before the callable.
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
) -> Isolated | None:
    """The assertion on ``line`` when it expects one call to raise: the call (the one
    statement of a ``with pytest.raises(E):`` / ``with self.assertRaises(E):`` block, or
    the callable and arguments of ``self.assertRaises(E, f, *args)``, a ``lambda: f(x)``
    too) and the exception (``op`` ``raises``, the expected value the exception's name).
    None when the line holds no such assertion; NotIsolated when it holds one that says
    nothing about one call."""
    found = _raises_node(source, fn, line)
    if found is None:
        return None
    forms = ["raises"]
    if found.type == "with_statement":
        manager = _with_raises(source, found)
        assert manager is not None
        call, arguments_of = _block_call(found), None
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
    bindings = Bindings(source, module, fn, indices, found.start_point.row, frame_locals)
    wrapper = None
    if call.type == "call":
        outer = dotted(source, call.child_by_field_name("function"))
        inner_call = wrapped_call(call)
        if outer in WRAPPERS and inner_call is not None:
            wrapper, call = outer, inner_call
        callee = dotted(source, call.child_by_field_name("function"))
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
    forms.extend(f for f in bindings.forms if f not in forms)
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
    )


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


def _block_call(statement: Node) -> Node:
    """The one call of a ``with pytest.raises(E):`` block (``f(x)``, ``y = f(x)``)."""
    body = statement.child_by_field_name("body")
    inner = statements(body) if body is not None else []
    call = None
    if len(inner) == 1 and inner[0].type == "expression_statement" and inner[0].named_children:
        value = unwrap(inner[0].named_children[0])
        if value.type == "assignment":
            value = unwrap(value.child_by_field_name("right") or value)
        call = value if value.type == "call" else None
    if call is None:
        raise NotIsolated(
            "cannot isolate the call under test: the block that should raise is not one "
            "call (a single `f(...)` statement in the `with` block)"
        )
    return call


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
