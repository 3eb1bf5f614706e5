"""Finding, in a failing test's text, the call under test and where its expected value is
written — or saying exactly why that cannot be done. Never a guess.

Supported: ``assert f(args) == expected`` (either side, ``pytest.approx(expected)`` too),
unittest's ``assertEqual`` family (``self.assertEqual``, a bare ``assertEqual`` or nose's
``assert_equal``); boolean (``assert f(x)``, ``assert not f(x)``, ``assertTrue/False``),
identity with True/False/None (``is``, ``assertIsNone``, ``assertIs``), membership
(``in``, ``assertIn``), inequality (``!=``, ``assertNotEqual``) and ordering (``<``,
``assertGreater``…) expectations; the call's value compared as it is or through a
projection (``parse(s).year``, ``f(x)[0]``: :mod:`~referee.checks.arbitration.projection`);
arguments and expected values that are literals,
parametrize cases, a literal assigned in the test (the assignment the assertion reads),
or — read from what the recorder
saw in the failing frame — a loop's current case or a local variable. Only a literal in
the assertion, a parametrize case or an assignment is a site a test fix can replace.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from dataclasses import dataclass
from typing import Any

from tree_sitter import Node

from referee.checks.arbitration.assertion_methods import ALIASES, METHODS
from referee.checks.arbitration.bindings import Bindings
from referee.checks.arbitration.computed import computed_expected
from referee.checks.arbitration.helpers import (
    HelperAssertion,
    RaisedBefore,
    failed_statement,
    helper_assertion,
    helper_callees,
    raised_before,
    reached_code,
)
from referee.checks.arbitration.objects import boolean_op, object_methods, wrapped_local
from referee.checks.arbitration.projection import peeled
from referee.checks.arbitration.raises import raises_at, raises_callable
from referee.checks.arbitration.receivers import (
    assigned_call,
    built_method,
    callee_and_object,
    projected_call,
)
from referee.checks.arbitration.sites import (
    COMPARISON_IN_BOOLEAN,
    WRAPPERS,
    Isolated,
    NotIsolated,
    Site,
    TestRef,
    comparison,
    dotted,
    find_test,
    is_literal,
    unpacked_call,
    wrapped_call,
)
from referee.checks.nodes import (
    call_arguments,
    excerpt,
    innermost_at,
    is_docstring,
    statements,
    unwrap,
)
from referee.checks.pymodule import Function, PythonModule
from referee.checks.source import SourceFile

# ``total, rest = f(x)``, then ``assert rest == …``: the item the name unpacks
UNPACKED_CALL = "unpacked-call"
# unittest's assertion methods (:mod:`~referee.checks.arbitration.assertion_methods`),
# with their deprecated spellings
_METHODS = {**METHODS, **{alias: METHODS[name] for alias, name in ALIASES.items()}}
# nose.tools and friends: assert_equal, assert_true... (bound methods of a TestCase)
_SNAKE = {
    "assert_equal": "assertEqual",
    "assert_equals": "assertEquals",
    "assert_list_equal": "assertListEqual",
    "assert_tuple_equal": "assertTupleEqual",
    "assert_dict_equal": "assertDictEqual",
    "assert_almost_equal": "assertAlmostEqual",
    "assert_true": "assertTrue",
    "assert_false": "assertFalse",
    "assert_is_none": "assertIsNone",
    "assert_is_not_none": "assertIsNotNone",
    "assert_is": "assertIs",
    "assert_is_not": "assertIsNot",
    "assert_in": "assertIn",
    "assert_not_in": "assertNotIn",
    "assert_not_equal": "assertNotEqual",
    "assert_greater": "assertGreater",
    "assert_greater_equal": "assertGreaterEqual",
    "assert_less": "assertLess",
    "assert_less_equal": "assertLessEqual",
}
# Dunder attributes that name a value (``f.__name__``): not a part of it, and no oracle's
# own choice of them is a truth.
_NAMING_DUNDERS = ("__name__", "__qualname__", "__doc__", "__module__")
# What the expected value must be for an identity assertion to be arbitrated.
_SINGLETONS = ("True", "False", "None")


def callee_names(source: SourceFile, test: TestRef) -> list[str]:
    """Dotted names of every plain call in the test (what the plugin should resolve)."""
    module = PythonModule(source, is_test_file=True)
    try:
        fn = find_test(module, test)
    except NotIsolated:
        return []
    names: list[str] = []
    stack = [fn.body, *(h.body for h in helper_callees(source, module, fn))]
    while stack:
        node = stack.pop()
        stack.extend(node.named_children)
        if node.type == "call":
            name = dotted(source, node.child_by_field_name("function"))
            if name and name not in names and not name.startswith("self."):
                names.append(name)
            for name in built_method(source, fn, node):
                if name not in names:
                    names.append(name)
            for name in object_methods(source, fn, node):
                if name not in names:
                    names.append(name)
            handed = raises_callable(source, node)
            if handed is not None and handed.type in ("identifier", "attribute"):
                name = dotted(source, handed)
                if name and name not in names and not name.startswith("self."):
                    names.append(name)
    return names


def _is_approx(source: SourceFile, node: Node) -> bool:
    node = unwrap(node)
    if node.type != "call":
        return False
    name = dotted(source, node.child_by_field_name("function")) or ""
    return name in ("approx", "pytest.approx")


def assertion_at(source: SourceFile, fn: Function, line: int) -> Node:
    """The innermost assertion of ``fn`` (an ``assert`` or a ``self.assert*`` call) whose
    lines hold ``line`` (1-based)."""
    found = innermost_at(
        fn.body,
        line,
        lambda node: (
            node.type == "assert_statement" or (node.type == "call" and bool(_method(source, node)))
        ),
        # a nested helper's assertion is not the test's
        skip=("function_definition", "class_definition"),
    )
    if found is None:
        raise NotIsolated(
            f"cannot isolate the call under test: line {line} of {fn.name} is not an "
            "assertion of the test itself (a helper's, or a fixture's?)"
        )
    return found


def _method(source: SourceFile, call: Node) -> str | None:
    """The unittest assertion ``call`` makes (``self.assertEqual(...)``, a bare
    ``assertEqual(...)`` or ``assert_equal(...)`` a module imported or bound), by its
    camel-case name."""
    callee = call.child_by_field_name("function")
    if callee is None:
        return None
    if callee.type == "attribute":
        attr = callee.child_by_field_name("attribute")
        name = source.node_text(attr) if attr is not None else ""
    elif callee.type == "identifier":
        name = source.node_text(callee)
    else:
        return None
    name = _SNAKE.get(name, name)
    return name if name in _METHODS else None


def _form_of_method(source: SourceFile, call: Node) -> str:
    callee = call.child_by_field_name("function")
    if callee is not None and callee.type == "attribute":
        obj = callee.child_by_field_name("object")
        if obj is not None and source.node_text(obj) in ("self", "cls"):
            return "unittest-method"
    return "assert-function"


_FORM_OF_OP = {
    "truthy": "boolean",
    "falsy": "boolean",
    "is": "identity",
    "is not": "identity",
    "in": "membership",
    "not in": "membership",
    "!=": "inequality",
    "<": "ordering",
    "<=": "ordering",
    ">": "ordering",
    ">=": "ordering",
}


def isolate(
    source: SourceFile,
    test: TestRef,
    line: int,
    indices: dict[str, int] | None = None,
    frame_locals: dict[str, str] | None = None,
    project_callees: frozenset[str] | None = None,
    project_classes: frozenset[str] = frozenset(),
) -> Isolated:
    """Take apart the assertion on ``line`` of ``test``. ``indices``: the case of each
    parametrized argument (pytest's ``callspec.indices``); ``frame_locals``: the ``repr``
    of the failing test frame's locals, as the recorder saw them (a loop's current case, a
    local variable); ``project_callees``: the dotted names the run resolved to Python
    functions of the project itself — where both sides of a comparison are calls, the one
    call of the project's is the call under test (``parse(s) == datetime(2003, 9, 25)``);
    ``project_classes``: those of them that are classes — where both sides call the
    project, a side that only builds one of its objects (``Span(2013, 5, 12)``) is the
    expected value. Raises :class:`NotIsolated`."""
    module = PythonModule(source, is_test_file=True)
    fn = find_test(module, test)
    located = _located(source, module, fn, line, indices, frame_locals)
    if isinstance(located, Isolated):
        return located
    helper = located if isinstance(located, HelperAssertion) else None
    raised = located if isinstance(located, RaisedBefore) else None
    if helper is not None:  # the assertion is a helper's: taken apart there
        fn, node = helper.helper, helper.node
    else:
        node = raised.node if raised is not None else located  # type: ignore[assignment]
    forms: list[str] = []
    left, right, op, implicit = _compared(source, node, forms)
    if op in _FORM_OF_OP:
        forms.append(_FORM_OF_OP[op])
    sides = (
        {"left": unwrap(left)} if right is None else {"left": unwrap(left), "right": unwrap(right)}
    )
    call_side, call_node, wrapper, projection = _call_under_test(
        source, fn, node, sides, op, (project_callees, project_classes), forms
    )
    bindings = (
        helper.bindings
        if helper is not None
        else Bindings(source, module, fn, indices or {}, node.start_point.row, frame_locals)
    )
    callee, built = callee_and_object(source, fn, call_node, node)
    constructor, constructor_arguments = bindings.built_object(built, forms)
    arguments = bindings.arguments(call_node)
    expected, op, known = _expected(
        source, bindings, node, sides, call_side, implicit, op, callee, forms
    )
    if op != boolean_op(op, wrapper, expected.text):  # ``bool(f(x)) == False``
        op = boolean_op(op, wrapper, expected.text)
        forms.append("boolean")
    if op in ("is", "is not") and expected.text.strip() not in _SINGLETONS:
        raise NotIsolated(
            f"cannot isolate the call under test: `{op}` compares identity; only with True, "
            f"False or None is that a value to check (here `{excerpt(expected.text)}`)"
        )
    forms.extend(f for f in bindings.forms if f not in forms)
    if raised is not None:
        raised.check(forms, fn)
    return Isolated.at(
        source,
        node,
        op=op,
        call_side=call_side,
        callee=callee,
        arguments=arguments,
        expected=expected,
        wrapper=wrapper,
        forms=tuple(forms),
        constructor=constructor,
        constructor_arguments=constructor_arguments,
        projection=projection,
        definitions=bindings.definitions,
        expected_known=known[0] if known is not None else None,
        expected_definitions=known[1] if known is not None else "",
    )


def _located(
    source: SourceFile,
    module: PythonModule,
    fn: Function,
    line: int,
    indices: dict[str, int] | None,
    frame_locals: dict[str, str] | None,
) -> Isolated | HelperAssertion | RaisedBefore | Node:
    """The assertion on ``line``: taken apart already when it expects a call to raise,
    the assertion of a helper the test calls, else its node."""
    try:
        raising = raises_at(
            source, module, fn, line, indices or {}, frame_locals, callee_and_object
        )
    except NotIsolated as exc:
        try:  # an ``assert`` inside the ``with pytest.raises`` block is an assertion
            node = assertion_at(source, fn, line)
        except NotIsolated:
            raise exc from None
    else:
        if raising is not None:
            return raising
        try:
            node = assertion_at(source, fn, line)
        except NotIsolated as exc:
            found = helper_assertion(
                source, module, fn, line, indices or {}, frame_locals, assertion_at
            ) or raised_before(source, fn, line, assertion_at)
            if found is None:
                raise (
                    failed_statement(source, fn, line) or reached_code(module, fn, line) or exc
                ) from None
            return found
    return node


def _compared(
    source: SourceFile, node: Node, forms: list[str]
) -> tuple[Node, Node | None, str, str | None]:
    """(left, right — None for a one-value assertion —, operator, the expectation the
    assertion states by its form: ``True`` for ``assert f(x)``...) of an assertion; the
    forms it is written in are added to ``forms``."""
    implicit: str | None = None  # the expectation an assertion states by its form
    if node.type == "assert_statement":
        # comments and ``\`` line continuations are named nodes too: never a side
        parts = [c for c in node.named_children if not c.is_extra]
        cond = unwrap(parts[0]) if parts else None
        sides = [c for c in cond.named_children if not c.is_extra] if cond is not None else []
        if cond is not None and cond.type == "not_operator":
            inner = cond.child_by_field_name("argument")
            left, right, op, implicit = (unwrap(inner) if inner else cond), None, "falsy", "False"
        elif cond is not None and peeled(source, cond)[0].type in ("call", "identifier"):
            # ``assert f(x)``, or a projection of its value: ``assert f(x).ok``; or of a
            # name the test assigned from the call (``r = f(x)``, ``assert r.ok``)
            left, right, op, implicit = cond, None, "truthy", "True"
        elif cond is None or cond.type != "comparison_operator" or len(sides) != 2:
            raise NotIsolated(
                "only comparisons of two values (`==`, `!=`, `<`, `in`, `is`…) and `assert "
                "f(x)` / `assert not f(x)` can be arbitrated; this assertion is none of them"
            )
        else:
            left, right, op = comparison(source, cond)
    else:
        method = _method(source, node) or ""
        forms.append(_form_of_method(source, node))
        op, arity = _METHODS[method]
        args = call_arguments(node)
        if len(args) < arity:
            raise NotIsolated(
                f"`{method}` needs {arity} positional argument{'s' * (arity > 1)} to be arbitrated"
            )
        left, right = args[0], (args[1] if arity == 2 else None)
        inner = unwrap(left)
        if right is None and op in ("truthy", "falsy") and inner.type == "comparison_operator":
            # ``self.assertTrue(f(x) == 3)``: the comparison, as ``assert f(x) == 3`` says
            # it (``assertFalse(x in f(y))``: ``not in``). unittest records only ``False``
            # of it: the engine observes the call by running it (COMPARISON_IN_BOOLEAN).
            left, right, op = comparison(source, inner, negated=op == "falsy")
            forms.append(COMPARISON_IN_BOOLEAN)
        elif right is None:
            implicit = {"truthy": "True", "falsy": "False"}.get(op, "None")
    return left, right, op, implicit


def _call_under_test(
    source: SourceFile,
    fn: Function,
    node: Node,
    sides: dict[str, Node],
    op: str,
    project: tuple[frozenset[str] | None, frozenset[str]],
    forms: list[str],
) -> tuple[str, Node, str | None, str]:
    """(the side the call under test is on, its call node, the wrapper it is in, the
    projection the test reads from its value — ``.year`` of ``parse(s).year``) of an
    assertion's compared values ``sides``."""
    one_value = "right" not in sides
    approx = [side for side, n in sides.items() if _is_approx(source, n)]
    # a compared value may read attributes and items of a call's value: parse(s).year
    peels = {side: peeled(source, n) for side, n in sides.items()}
    bases = {side: peel[0] for side, peel in peels.items()}
    calls = [
        side
        for side, n in bases.items()
        if n.type == "call" and side not in approx and not is_literal(source.node_text(n))
    ]
    ours: list[str] | None = None
    project_callees, project_classes = project
    if len(calls) == 2 and project_callees is not None:
        # Both sides are calls: the project's function is the call under test, the other
        # side (a constructor of literals, a library's function) what the test expects.
        ours = [side for side in calls if _calls_ours(source, fn, bases[side], project_callees)]
        if len(ours) == 2:
            # ``span.shift(weeks=1) == Span(2013, 5, 12)``: one side builds the expected
            # object from one of the project's classes; the other is under test
            ours = [s for s in ours if _callee_of(source, bases[s]) not in project_classes]
        if len(ours) == 1:
            calls = ours
    assigned: Node | None = None
    unpacked: int | None = None  # the place of the name in ``a, b = f(x)``
    prefix = ""  # the projection the name was assigned: ``p = parse(s)[0]``
    if not calls and (named := _named_call(source, fn, node, bases, approx)) is not None:
        side, assigned, unpacked, prefix = named
        calls = [side]
        forms.append("assigned-call" if unpacked is None else UNPACKED_CALL)
    if one_value and not calls:
        raise NotIsolated(
            "cannot isolate the call under test: the value asserted "
            f"{'true' if op == 'truthy' else 'false' if op == 'falsy' else 'about'} is not a "
            "function call, nor a name assigned from one that the assertion reads"
        )
    if len(calls) != 1:
        if not calls:
            which = "neither side of the comparison is a function call"
        elif ours == []:
            which = "neither side of the comparison calls one of the project's functions"
        elif ours is not None:
            which = (
                "both sides of the comparison are calls of the project's functions "
                "(which one is under test?)"
            )
        else:
            which = "both sides of the comparison are function calls (which one is under test?)"
        raise NotIsolated(f"cannot isolate the call under test: {which}")
    call_side = calls[0]
    call_node = assigned if assigned is not None else bases[call_side]
    projection = _projection(source, sides[call_side], peels[call_side], forms)
    if prefix:
        projection = prefix + projection
        if "projection" not in forms:
            forms.append("projection")
    if unpacked is not None:
        # unpacking iterates the value, as ``tuple`` does: ``tuple(f(x))[1]``
        return call_side, call_node, "tuple", f"[{unpacked}]{projection}"
    wrapper = None
    outer = dotted(source, call_node.child_by_field_name("function"))
    inner = wrapped_call(call_node)
    if outer in WRAPPERS and inner is None and assigned is None:
        # ``value = f(x)`` once, then ``assert str(value) == "..."``
        inner = wrapped_local(source, call_node, lambda name: assigned_call(source, fn, name, node))
        forms.append("assigned-call")
    if outer in WRAPPERS and inner is not None:
        wrapper, call_node = outer, inner
    return call_side, call_node, wrapper, projection


def _named_call(
    source: SourceFile, fn: Function, node: Node, bases: dict[str, Node], approx: list[str]
) -> tuple[str, Node, int | None, str] | None:
    """(the side, the call, the place the name takes in ``a, b = f(x)`` or None, the
    projection it was assigned) of a compared value that is a name the test assigned from
    the call under test: ``result = f(x)``, then ``assert result == 3`` (``assert not
    result``); ``total, rest = f(x)``: the item it unpacks; ``first = parse(s)[0]``: that
    item of the call's value. None when neither side is one."""
    for side, n in bases.items():
        if n.type != "identifier" or side in approx:
            continue
        name = source.node_text(n)
        if (assigned := assigned_call(source, fn, name, node)) is not None:
            return side, assigned, None, ""
        if (unpacked := unpacked_call(source, fn, name, node)) is not None:
            return side, unpacked[0], unpacked[1], ""
        if (projected := projected_call(source, fn, name, node)) is not None:
            return side, projected[0], None, projected[1]
    return None


def _projection(
    source: SourceFile, compared: Node, peel: tuple[Node, str, str | None], forms: list[str]
) -> str:
    """The projection of the call's value the compared value ``compared`` is (``""`` when
    it is the value itself), recorded in ``forms``. Raises :class:`NotIsolated` for one
    referee does not apply."""
    _, projection, problem = peel
    if problem is not None and any(f"`{name}`" in problem for name in _NAMING_DUNDERS):
        # the name a definition was given is an implementation's own choice: k oracles
        # may share one (``wrapper``) and outvote the name the test asks for
        raise NotIsolated(
            f"cannot isolate the call under test: `{excerpt(source.node_text(compared))}` "
            f"reads {problem} of the call's value: the name or text its maker gave it, "
            "which independent implementations choose each their own way — no truth for it"
        )
    if problem is not None:
        raise NotIsolated(
            f"cannot isolate the call under test: `{excerpt(source.node_text(compared))}` "
            f"reads the call's value through {problem}; a projection of it takes plain "
            "attribute names (no dunder names) and literal keys, indices or slices only"
        )
    if projection:
        forms.append("projection")
    return projection


def _expected(
    source: SourceFile,
    bindings: Bindings,
    node: Node,
    sides: dict[str, Node],
    call_side: str,
    implicit: str | None,
    op: str,
    callee: str,
    forms: list[str],
) -> tuple[Site, str, tuple[str, str] | None]:
    """(where the expected value is, the operator — ``approx`` for a
    ``pytest.approx(value)``, a computed one written out where it is known without
    running the test: :meth:`Bindings.known_expected`)."""
    known = None
    if implicit is not None:
        expected = Site(
            "implicit", node.start_byte, node.end_byte, implicit, node.start_point.row + 1
        )
    else:
        expected_node = sides["right" if call_side == "left" else "left"]
        if _is_approx(source, expected_node):
            if op != "==":
                raise NotIsolated(
                    f"cannot isolate the call under test: `{op}` with `pytest.approx`; only "
                    "`== pytest.approx(value)` is read as a tolerance"
                )
            approx_args = call_arguments(unwrap(expected_node))
            if not approx_args:
                raise NotIsolated("pytest.approx() without a value")
            expected_node = unwrap(approx_args[0])
            op = "approx"
        try:
            expected = bindings.site(expected_node, "the expected value")
        except NotIsolated:
            found = computed_expected(source, bindings, expected_node, callee, forms)
            if found is None:
                raise
            expected, known = found
    return expected, op, known


def _calls_ours(source: SourceFile, fn: Function, call: Node, ours: frozenset[str]) -> bool:
    """Whether ``call`` calls one of the project's functions ``ours``: by its dotted name
    (``parse(s)``, ``sorted(f(x))``), or a method of an object the test builds from one of
    the project's classes (``span.shift(weeks=1)`` where ``span = Span(2013, 5, 5)``:
    ``Span.shift``, as the recorder resolved it)."""
    call = _unwrapped(source, call)
    if dotted(source, call.child_by_field_name("function")) in ours:
        return True
    method = built_method(source, fn, call)
    return bool(method) and method[-1] in ours


def _unwrapped(source: SourceFile, call: Node) -> Node:
    """The call a wrapper holds (``sorted(f(x))``: ``f(x)``), or ``call`` itself."""
    inner = wrapped_call(call)
    outer = dotted(source, call.child_by_field_name("function"))
    return inner if outer in WRAPPERS and inner is not None else call


def _callee_of(source: SourceFile, call: Node) -> str | None:
    """The dotted name a call calls, through a wrapper (``sorted(f(x))``: ``f``)."""
    return dotted(source, _unwrapped(source, call).child_by_field_name("function"))


# ------------------------------------------------------------------ the function under test


_FORM_DECORATORS = frozenset({"staticmethod", "classmethod", "property", "abstractmethod"})


@dataclass(frozen=True)
class FunctionSpec:
    """A function under test, read from its file."""

    name: str
    module: str
    qualname: str
    text: str  # the whole file
    start_byte: int  # of the ``def`` (decorators excluded)
    end_byte: int
    outer_start_byte: int  # of the first decorator, or of the ``def``
    line: int
    signature: str  # "def count_vowels(text: str) -> int:"
    docstring: str | None  # as written: indented like the body, quotes included
    docstring_value: str | None  # cleaned text
    # "function", "staticmethod"; or, for a method that takes the object or its class,
    # "method" / "classmethod": then ``signature`` is the oracle's function (see
    # :func:`method_spec`), ``class_stub`` the class as the oracles see it (signatures and
    # docstrings, no body) and ``oracle_call`` what the oracle's function returns
    form: str = "function"
    class_stub: str | None = None
    oracle_call: str | None = None

    @functools.cached_property
    def decorators(self) -> tuple[str, ...]:
        """The decorators written above the ``def`` (``for_app("git")``), each unparsed on
        one line; the method forms' (``staticmethod``...) left out. Read once per spec:
        every oracle program of a round asks."""
        raw = self.text.encode("utf-8")[self.outer_start_byte : self.start_byte]
        try:
            lines = [line.strip() for line in raw.decode("utf-8").splitlines()]
            tree = ast.parse("\n".join([*lines, "def _(): pass\n"]))
            written = tree.body[0].decorator_list  # type: ignore[attr-defined]
        except (SyntaxError, ValueError, UnicodeDecodeError, IndexError, AttributeError):
            return ()
        shown = [ast.unparse(d) for d in written]
        return tuple(d for d in shown if d not in _FORM_DECORATORS)

    @property
    def owner(self) -> str:
        """The class of a method (``Table`` of ``Table.to_text``), else ``""``."""
        return self.qualname.rpartition(".")[0]

    @property
    def definition(self) -> str:
        return self.text.encode("utf-8")[self.start_byte : self.end_byte].decode("utf-8")


def located_spec(
    module: str,
    qualname: str,
    text: str,
    at: tuple[Node, Node],
    parts: tuple[str, str | None, str | None],
    form: str,
    **rest: Any,
) -> FunctionSpec:
    """The spec of a definition of a module's text: ``at`` is the definition with its
    decorators and the definition; ``parts`` its signature, docstring as written and
    docstring's text; ``rest``, the fields only a method that takes the object has."""
    node, definition = at
    signature, docstring, value = parts
    owner, _, name = qualname.rpartition(".")
    if value is not None and form in ("staticmethod", "classmethod"):
        # ``Owner.name(2)`` in a static or class method's examples is the call ``name(2)``
        value = re.sub(rf"\b{re.escape(owner)}\.{re.escape(name)}\(", f"{name}(", value)
    return FunctionSpec(
        name=name,
        module=module,
        qualname=qualname,
        text=text,
        start_byte=definition.start_byte,
        end_byte=definition.end_byte,
        outer_start_byte=node.start_byte,
        line=definition.start_point.row + 1,
        signature=signature,
        docstring=docstring,
        docstring_value=value,
        form=form,
        **rest,
    )


def function_spec(text: str, path: str, module: str, qualname: str) -> FunctionSpec:
    """The top-level function ``qualname`` of a module's text. Raises
    :class:`NotIsolated` for methods, nested functions and missing definitions."""
    if "<" in qualname:
        raise NotIsolated(
            f"`{qualname}` is a nested function; arbitration handles top-level functions"
        )
    source = SourceFile(path, text)
    owner, _, name = qualname.rpartition(".")
    nodes = source.tree.root_node.named_children
    if owner:
        # A static method of a top-level class is a function in a namespace: its truth is
        # computed as the function's (the oracles write ``def name``, run ``name(args)``).
        # A method that takes ``self`` or ``cls`` needs the object, which no oracle sees:
        # it has a spec of its own, with an oracle contract (methods.method_spec), when the
        # test builds the object from literals or calls a class method.
        nodes = _static_methods(source, owner, name)
        if not nodes:
            raise NotIsolated(
                f"`{qualname}` is a method (`{name}` of class `{owner}`) that takes the "
                "object or its class; arbitration computes truths (doctest, reference, "
                "oracles) for top-level functions and static methods only"
            )
    for node in nodes:
        definition = node
        if node.type == "decorated_definition":
            definition = node.child_by_field_name("definition") or node.named_children[-1]
        if definition.type != "function_definition":
            continue
        name_node = definition.child_by_field_name("name")
        if name_node is None or source.node_text(name_node) != name:
            continue
        definition, header, docstring, value = definition_parts(source, node)
        parts = (header, docstring, value)
        form = "staticmethod" if owner else "function"
        return located_spec(module, qualname, text, (node, definition), parts, form)
    for node in source.tree.root_node.named_children:
        definition = (
            node.child_by_field_name("definition") if node.type == "decorated_definition" else node
        )
        name_node = definition.child_by_field_name("name") if definition is not None else None
        if (
            definition is not None
            and definition.type == "class_definition"
            and name_node is not None
            and source.node_text(name_node) == qualname
        ):
            raise NotIsolated(
                f"`{qualname}` is a class: the call under test builds an object, and "
                "arbitration computes truths for functions and static methods"
            )
    raise NotIsolated(f"no top-level function `{qualname}` in {path}")


def definition_parts(source: SourceFile, node: Node) -> tuple[Node, str, str | None, str | None]:
    """(the ``def`` node, its header, its docstring as written — indented like the body,
    quotes included —, the docstring's cleaned text) of a function definition node,
    decorated or not."""
    definition = node
    if node.type == "decorated_definition":
        definition = node.child_by_field_name("definition") or node.named_children[-1]
    body = definition.child_by_field_name("body")
    assert body is not None
    header = source.data[definition.start_byte : body.start_byte].decode("utf-8").rstrip()
    first = statements(body)[0] if statements(body) else None
    docstring = value = None
    if first is not None and is_docstring(first):
        docstring = " " * first.start_point.column + source.node_text(first)
        try:
            literal = ast.literal_eval(source.node_text(first))
            value = inspect.cleandoc(literal) if isinstance(literal, str) else None
        except (ValueError, SyntaxError):
            value = None
    return definition, header, docstring, value


def _static_methods(source: SourceFile, owner: str, name: str) -> list[Node]:
    """The ``@staticmethod``-decorated definitions named ``name`` in the top-level class
    ``owner`` (the decorated definition nodes)."""
    found = []
    for node in source.tree.root_node.named_children:
        cls = node
        if node.type == "decorated_definition":
            cls = node.child_by_field_name("definition")
        if cls is None or cls.type != "class_definition":
            continue
        cls_name = cls.child_by_field_name("name")
        body = cls.child_by_field_name("body")
        if cls_name is None or body is None or source.node_text(cls_name) != owner:
            continue
        for member in statements(body):
            if member.type != "decorated_definition":
                continue
            decorators = [
                source.node_text(d).lstrip("@").strip()
                for d in member.named_children
                if d.type == "decorator"
            ]
            definition = member.child_by_field_name("definition")
            if (
                "staticmethod" in decorators
                and definition is not None
                and definition.type == "function_definition"
                and source.node_text(definition.child_by_field_name("name")) == name
            ):
                found.append(member)
    return found
