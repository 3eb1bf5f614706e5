"""A failing assertion that lives in a helper the test calls: ``def check(text, want):
assert count_vowels(text) == want`` (a function of the test module, a method of the
test's class, a function nested in the test), called from the test as ``check("ae", 2)``.

The recorder saw the failure where it happened, in the helper: its line, its comparison,
and the helper frame's locals (the values its parameters held). The assertion is taken
apart in the helper; each of its parameters is bound to the argument the test's one call
of it (:func:`call_site`) passes — a literal written there, a parametrize case — or, where
that cannot be read, to the value the failing frame recorded. Only a literal written at
that call, once, for this case alone is a site a test fix may replace (``call-site``): a
literal in the helper's body or signature is shared by every call of the helper, and one
at a call inside a loop by every iteration — the verdict is given, the test never edited
(``helper``, ``shared``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, replace

from tree_sitter import Node

from referee.checks.arbitration.bindings import Bindings
from referee.checks.arbitration.sites import NotIsolated, Site, identifiers, immutable, is_literal
from referee.checks.nodes import binding_counts, excerpt, unwrap
from referee.checks.pymodule import Function, PythonModule
from referee.checks.source import SourceFile

FORM = "helper-assertion"
# Nodes a call of the helper may stand inside and still be the test's one case: a call
# under one of these runs once per item, so a literal written there is every item's.
_REPEATING = (
    "for_statement",
    "while_statement",
    "list_comprehension",
    "set_comprehension",
    "dictionary_comprehension",
    "generator_expression",
    "lambda",
    "function_definition",
)
_PARAMETERS_WITH_DEFAULT = ("default_parameter", "typed_default_parameter")


@dataclass(frozen=True)
class HelperAssertion:
    """Where a failing line in a helper leads: the helper, its assertion on that line,
    and the bindings of the names in it."""

    helper: Function
    node: Node
    bindings: Bindings


def helper_called_at(
    source: SourceFile, module: PythonModule, fn: Function, line: int
) -> Function | None:
    """The helper whose body holds ``line`` (1-based), when the test ``fn`` calls it by
    name: a function of the module, a function nested in the test, or a method of the
    test's class (``self.check(...)``). None for anything else (a fixture, a class's
    method the test does not call itself, the test's own line)."""
    helper = _innermost_other(module, fn, line)
    if helper is None:
        return None
    if helper.is_fixture or helper.is_test:
        return None
    if helper.parent is not None and helper.parent is not fn:
        return None  # nested in another function
    if helper.class_ is not None and not _method_of_test(helper, fn):
        return None
    return helper if call_sites(source, fn, helper) else None


def helper_callees(source: SourceFile, module: PythonModule, fn: Function) -> list[Function]:
    """The functions of the module (not nested in another) and the methods of the test's
    class that the test ``fn`` calls by name: the helpers whose calls the recorder
    should resolve too."""
    called = set()
    stack = [fn.body]
    while stack:
        node = stack.pop()
        if node.type == "call":
            callee = node.child_by_field_name("function")
            if callee is not None:
                called.add(source.node_text(callee))
        stack.extend(node.named_children)
    found = []
    for other in module.functions:
        if other is fn or other.is_nested or other.is_fixture or other.is_test:
            continue
        if other.class_ is not None and not _method_of_test(other, fn):
            continue
        if _names(other) & called:
            found.append(other)
    return found


def _method_of_test(helper: Function, fn: Function) -> bool:
    """Whether the method ``helper`` is the test's own: of the test's class, or of a
    class of the module the test's class names as a base (``class TestX(Base)``)."""
    owner, cls = helper.class_, fn.class_
    if owner is None or cls is None:
        return False
    return owner is cls or (not owner.nested and owner.name in cls.bases)


def _names(helper: Function) -> set[str]:
    """How a test calls ``helper``: by its name, or as a method of its class."""
    if helper.class_ is None:
        return {helper.name}
    return {f"self.{helper.name}", f"cls.{helper.name}", f"{helper.class_.name}.{helper.name}"}


def call_sites(source: SourceFile, fn: Function, helper: Function) -> list[Node]:
    """The calls of ``helper`` in the test ``fn``'s body (not inside the helper)."""
    names = _names(helper)
    found: list[Node] = []
    stack = [fn.body]
    while stack:
        node = stack.pop()
        if node == helper.node:
            continue
        if node.type == "call":
            callee = node.child_by_field_name("function")
            if callee is not None and source.node_text(callee) in names:
                found.append(node)
        stack.extend(node.named_children)
    return sorted(found, key=lambda n: n.start_byte)


def parameters(source: SourceFile, helper: Function) -> list[tuple[str, Node | None, str]]:
    """(name, default value node, kind) of each parameter: kind ``positional``,
    ``keyword`` (after ``*``), ``star`` (``*args``/``**kwargs``)."""
    found: list[tuple[str, Node | None, str]] = []
    params = helper.node.child_by_field_name("parameters")
    kind = "positional"
    for param in params.named_children if params is not None else ():
        if param.type in ("list_splat_pattern", "dictionary_splat_pattern"):
            found.append((source.node_text(param).lstrip("*"), None, "star"))
            kind = "keyword"
            continue
        if param.type == "keyword_separator":
            kind = "keyword"
            continue
        if param.type == "positional_separator":
            continue
        default = (
            param.child_by_field_name("value") if param.type in _PARAMETERS_WITH_DEFAULT else None
        )
        name_node = (
            param.child_by_field_name("name") if param.type in _PARAMETERS_WITH_DEFAULT else param
        )
        if name_node is not None and name_node.type == "typed_parameter":
            name_node = name_node.named_children[0] if name_node.named_children else None
        if param.type == "typed_parameter":
            name_node = param.named_children[0] if param.named_children else None
        if name_node is None or name_node.type != "identifier":
            continue
        found.append((source.node_text(name_node), default, kind))
    if helper.class_ is not None and found and found[0][0] in ("self", "cls"):
        found = found[1:]  # bound by the call ``self.check(...)``
    return found


def argument_of(
    source: SourceFile, call: Node, params: list[tuple[str, Node | None, str]], name: str
) -> tuple[Node | None, str]:
    """(the node the call passes for parameter ``name`` — the argument, or the
    parameter's default value —, where it is: ``call`` or ``default``); (None, "") when
    the call does not pass it readably (``*args``, ``**kw``)."""
    args = call.child_by_field_name("arguments")
    items = [a for a in (args.named_children if args is not None else []) if a.type != "comment"]
    if any(a.type in ("list_splat", "dictionary_splat") for a in items):
        return None, ""
    positional = [a for a in items if a.type != "keyword_argument"]
    for arg in items:
        if arg.type == "keyword_argument":
            key = arg.child_by_field_name("name")
            if key is not None and source.node_text(key) == name:
                return arg.child_by_field_name("value"), "call"
    index = next((i for i, (n, _, _) in enumerate(params) if n == name), None)
    if index is None or params[index][2] == "star":
        return None, ""
    if params[index][2] == "positional" and index < len(positional):
        if any(k == "star" for _, _, k in params[:index]):
            return None, ""
        return positional[index], "call"
    default = params[index][1]
    return (default, "default") if default is not None else (None, "")


def repeats(call: Node, fn: Function) -> bool:
    """Whether ``call`` stands under a loop, a comprehension or a nested function of the
    test ``fn``: run once per item, it is not one case."""
    node = call.parent
    while node is not None and node != fn.body:
        if node.type in _REPEATING:
            return True
        node = node.parent
    return False


class HelperBindings(Bindings):
    """The names of a helper's assertion: each parameter bound to what the test's call
    passes (:func:`argument_of`), read with the test's own bindings (a literal, a
    parametrize case); else the value the failing helper frame recorded. A literal
    written in the helper is shared by every call of it: kind ``helper``."""

    def __init__(
        self,
        source: SourceFile,
        module: PythonModule,
        helper: Function,
        row: int,
        frame_locals: dict[str, str] | None,
        test: Bindings,
        call: Node | None,
        repeated: bool,
    ) -> None:
        super().__init__(source, module, helper, {}, row, frame_locals)
        self.test = test
        self.call = call
        self.repeated = repeated
        self.params = parameters(source, helper)
        self.forms.append(FORM)
        self.inputs: set[tuple[int, int]] = set()  # literals the call reads, where written

    def site(self, node: Node, what: str, *, argument: bool = False) -> Site:
        node = unwrap(node)
        name = self.source.node_text(node)
        if node.type == "identifier" and self._passed(name):
            found = self._from_call(name, what, argument)
            if found is not None and found.kind in ("call-site", "parametrize"):
                span = (found.start_byte, found.end_byte)
                if argument:
                    self.inputs.add(span)
                elif span in self.inputs:  # the expected value is the call's input too
                    return replace(found, kind="shared", case=None)
            if found is not None:
                return found
        found = super().site(node, what, argument=argument)
        if found.kind in ("assertion", "assignment"):
            return replace(found, kind="helper")  # written in the helper: every call's
        return found

    def _passed(self, name: str) -> bool:
        """Whether ``name`` is a parameter the helper never binds again."""
        if not any(n == name and kind != "star" for n, _, kind in self.params):
            return False
        return binding_counts(self.source, self.fn.node, [name])[name] == 1

    def _from_call(self, name: str, what: str, argument: bool) -> Site | None:
        if self.call is None:
            return None
        value, where = argument_of(self.source, self.call, self.params, name)
        if value is None:
            return None
        if where == "default":
            text = self.source.node_text(value)
            if not is_literal(text):
                return None
            return Site("helper", value.start_byte, value.end_byte, text, value.start_point.row + 1)
        try:
            found = self.test.site(value, what, argument=argument)
        except NotIsolated:
            return None
        for form in self.test.forms:
            self._form(form)
        if found.kind == "input":  # the test passes it to the call as well: shared
            return replace(found, kind="shared", case=None)
        if found.kind == "assertion":
            if self.repeated:
                return replace(found, kind="shared")
            return replace(found, kind="call-site", case=(self.call.start_byte, self.call.end_byte))
        if found.kind == "parametrize":
            return found
        # a literal the test assigned and handed over: read, not a place to edit here
        return replace(found, kind="local")


def _matches(bindings: HelperBindings, recorded: dict[str, str]) -> bool | None:
    """Whether the call of ``bindings`` passes, for every parameter it writes as a
    literal, the immutable value the failing frame recorded; None when none compares."""
    compared = False
    for name, _, kind in bindings.params:
        if kind == "star" or name not in recorded:
            continue
        value, where = argument_of(bindings.source, bindings.call, bindings.params, name)  # type: ignore[arg-type]
        if value is None or where != "call":
            continue
        try:
            written = bindings.test.site(value, "an argument")
            seen = ast.literal_eval(recorded[name])
            if not immutable(seen):
                continue
            if ast.literal_eval(written.text) != seen:
                return False
        except (NotIsolated, ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        compared = True
    return True if compared else None


def helper_assertion(
    source: SourceFile,
    module: PythonModule,
    fn: Function,
    line: int,
    indices: dict[str, int],
    frame_locals: dict[str, str] | None,
    assertion_at: Callable[[SourceFile, Function, int], Node],
) -> HelperAssertion | None:
    """The assertion on ``line`` of a helper the test ``fn`` calls, with the bindings of
    its names; None when ``line`` is in no such helper. ``assertion_at`` finds an
    assertion of a function at a line (:func:`referee.checks.arbitration.isolate.
    assertion_at`). Raises :class:`NotIsolated` when the line in the helper is no
    assertion."""
    helper = helper_called_at(source, module, fn, line)
    if helper is None:
        return None
    try:
        node = assertion_at(source, helper, line)
    except NotIsolated:
        raise NotIsolated(
            f"cannot isolate the call under test: line {line} of `{helper.name}`, a helper "
            f"{fn.name} calls, is not an assertion (it raised, or called what did)"
        ) from None
    sites = call_sites(source, fn, helper)
    recorded = frame_locals or {}
    candidates = []
    for call in sites:
        test = Bindings(source, module, fn, indices, call.start_point.row)
        bindings = HelperBindings(
            source, module, helper, node.start_point.row, recorded, test, call, repeats(call, fn)
        )
        candidates.append(bindings)
    if len(candidates) > 1:
        # several calls: the one whose literal arguments are what the helper's frame held
        candidates = [b for b in candidates if _matches(b, recorded)]
    if len(candidates) == 1:
        return HelperAssertion(helper, node, candidates[0])
    test = Bindings(source, module, fn, indices, node.start_point.row)
    unbound = HelperBindings(
        source, module, helper, node.start_point.row, recorded, test, None, True
    )
    return HelperAssertion(helper, node, unbound)


@dataclass(frozen=True)
class RaisedBefore:
    """A failing line that is the test's own ``name = f(...)`` statement — the call raised
    before any assertion ran — and the assertion after it that compares ``name``: the
    call under test is that assignment's call (``assigned-call``), observed as what it
    raised."""

    node: Node  # the assertion
    name: str
    line: int  # of the statement that raised

    def check(self, forms: list[str], fn: Function) -> None:
        """Raises :class:`NotIsolated` unless the assertion's call under test is the
        assigned call itself (not a method of the value it built, say)."""
        if "assigned-call" not in forms:
            raise NotIsolated(
                f"cannot isolate the call under test: line {self.line} of {fn.name} "
                f"(`{self.name} = …`) raised before any assertion ran, and the assertion "
                f"that follows it compares something else than the value `{self.name}` "
                "would have held"
            )


def raised_before(
    source: SourceFile,
    fn: Function,
    line: int,
    assertion_at: Callable[[SourceFile, Function, int], Node],
) -> RaisedBefore | None:
    """When ``line`` is a statement ``name = f(...)`` of the test's own body, the first
    assertion after it, in the same block, that reads ``name``; else None."""
    row = line - 1
    statement = next(
        (s for s in fn.statements if s.start_point.row <= row <= s.end_point.row), None
    )
    if statement is None or statement.type != "expression_statement":
        return None
    assign = unwrap(statement.named_children[0]) if statement.named_children else None
    if assign is None or assign.type != "assignment":
        return None
    left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
    if left is None or right is None or left.type != "identifier" or unwrap(right).type != "call":
        return None
    name = source.node_text(left)
    body = fn.statements
    for later in body[body.index(statement) + 1 :]:
        if name not in identifiers(source, later):
            continue
        try:
            node = assertion_at(source, fn, later.start_point.row + 1)
        except NotIsolated:
            return None  # the name is used before any assertion reads it
        return RaisedBefore(node, name, line)
    return None


def failed_statement(source: SourceFile, fn: Function, line: int) -> NotIsolated | None:
    """Why a failing line that is a statement of the test itself, not an assertion, is
    not arbitrated — the code it calls failed before anything checked its value — or
    None when ``line`` is not the test's own statement (a fixture's, say)."""
    row = line - 1
    stack = list(fn.statements)
    while stack:
        node = stack.pop()
        if not node.start_point.row <= row <= node.end_point.row:
            continue
        if node.type in ("function_definition", "class_definition", "decorated_definition"):
            what = "a definition the test makes (a decorator or a class body ran code)"
            return NotIsolated(
                f"cannot isolate the call under test: line {line} of {fn.name} is in {what} "
                "that failed before any assertion ran; no assertion says what it should give"
            )
        block = node.child_by_field_name("body") or node.child_by_field_name("consequence")
        if block is not None and node.type not in ("expression_statement",):
            inner = [s for s in block.named_children if s.start_point.row <= row <= s.end_point.row]
            if inner and node.start_point.row != row:
                stack.extend(inner)
                continue
        return NotIsolated(
            f"cannot isolate the call under test: line {line} of {fn.name} is "
            f"`{excerpt(source.node_text(node), 60)}`, a statement of the test that failed "
            "before any assertion ran; no assertion says what it should give"
        )
    return None


def reached_code(module: PythonModule, fn: Function, line: int) -> NotIsolated | None:
    """Why a failing line in a function of the test module the test does not call itself
    (a method of a helper class, a function its call reached) is not arbitrated; None
    when ``line`` is in no function but the test."""
    inner = _innermost_other(module, fn, line)
    if inner is None:
        return None
    name = f"{inner.class_.name}.{inner.name}" if inner.class_ is not None else inner.name
    kind = "a fixture" if inner.is_fixture else "code of the test module"
    return NotIsolated(
        f"cannot isolate the call under test: line {line} is in `{name}`, {kind} that the "
        f"test's calls reached, not an assertion of {fn.name} or of a helper it calls"
    )


def _innermost_other(module: PythonModule, fn: Function, line: int) -> Function | None:
    """The innermost function of the module, other than the test ``fn``, whose lines hold
    ``line`` (1-based); None when there is none."""
    row = line - 1
    holding = [
        f
        for f in module.functions
        if f is not fn and f.node.start_point.row <= row <= f.node.end_point.row
    ]
    return max(holding, key=lambda f: f.node.start_byte) if holding else None
