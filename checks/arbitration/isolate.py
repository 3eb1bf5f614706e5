"""Finding, in a failing test's text, the call under test and where its expected value is
written — or saying exactly why that cannot be done. Never a guess.

Supported: ``assert f(args) == expected`` (either side, ``pytest.approx(expected)`` too),
unittest's ``assertEqual`` family (``self.assertEqual``, a bare ``assertEqual`` or nose's
``assert_equal``); boolean (``assert f(x)``, ``assert not f(x)``, ``assertTrue/False``),
identity with True/False/None (``is``, ``assertIsNone``, ``assertIs``) and membership
(``in``, ``assertIn``) expectations; arguments and expected values that are literals,
parametrize cases, a literal assigned once in the test, or — read from what the recorder
saw in the failing frame — a loop's current case or a local variable. Only a literal in
the assertion, a parametrize case or an assignment is a site a test fix can replace.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Node

from referee.checks.nodes import (
    binding_counts,
    call_arguments,
    excerpt,
    is_docstring,
    keyword_argument,
    statements,
    unwrap,
)
from referee.checks.pymodule import Function, PythonModule
from referee.checks.source import SourceFile

_EQUALITY_METHODS = {
    "assertEqual": "==",
    "assertEquals": "==",
    "assertListEqual": "==",
    "assertTupleEqual": "==",
    "assertDictEqual": "==",
    "assertAlmostEqual": "approx",
}
# unittest's other assertions about one call's value: (operator, how many positional
# arguments hold the compared values). The operators are the expectation the truth is
# checked against: truthy/falsy (boolean), is/is not (True, False, None), in/not in.
_ONE_VALUE_METHODS = {
    "assertTrue": ("truthy", 1),
    "assert_": ("truthy", 1),
    "failUnless": ("truthy", 1),
    "assertFalse": ("falsy", 1),
    "failIf": ("falsy", 1),
    "assertIsNone": ("is", 1),
    "assertIsNotNone": ("is not", 1),
    "assertIs": ("is", 2),
    "assertIsNot": ("is not", 2),
    "assertIn": ("in", 2),
    "assertNotIn": ("not in", 2),
}
_METHODS = {
    **{name: (op, 2) for name, op in _EQUALITY_METHODS.items()},
    **_ONE_VALUE_METHODS,
}
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
}
# What the expected value must be for an identity assertion to be arbitrated.
_SINGLETONS = ("True", "False", "None")
# Operators that compare the call's value with an expected value a test fix can replace;
# the others (boolean, identity, membership) only ever blame the source.
EQUALITY_OPS = frozenset({"==", "approx"})


# Built-ins a test wraps the call under test in to look at its value (a generator's items,
# an order-free result): the call is isolated through the wrapper, and every source of
# truth's value is wrapped the same way.
WRAPPERS = frozenset({"list", "tuple", "set", "sorted", "dict", "str", "len", "next"})


class NotIsolated(Exception):
    """The failing assertion is not one arbitration can take apart; the message says why."""


@dataclass(frozen=True)
class TestRef:
    """A pytest node id taken apart: ``tests/test_x.py::TestA::test_b[1-2]``."""

    __test__ = False  # not a pytest test class

    path: str
    cls: str | None
    name: str
    param_id: str | None

    @classmethod
    def parse(cls, nodeid: str) -> TestRef:
        path, sep, rest = nodeid.partition("::")
        if not sep or not rest:
            raise ValueError(f"{nodeid!r} is not a test id like tests/test_x.py::test_name")
        param_id = None
        if rest.endswith("]") and "[" in rest:
            rest, _, param_id = rest[:-1].partition("[")
        parts = rest.split("::")
        if len(parts) > 2 or not all(parts):
            raise ValueError(f"{nodeid!r}: only tests in a module or in one class are supported")
        return cls(path, parts[0] if len(parts) == 2 else None, parts[-1], param_id)

    @property
    def function_id(self) -> str:
        """The id without the parametrize part: the guard's id for the test."""
        middle = f"{self.cls}::" if self.cls else ""
        return f"{self.path}::{middle}{self.name}"


@dataclass(frozen=True)
class Site:
    """Where the expected value is written: the bytes a test fix replaces."""

    # assertion, parametrize, assignment: a literal a test fix can replace. local: a value
    # the failing test frame held (a loop over a table of cases, a local variable), read
    # from what the recorder saw — evidence, not a place to edit. implicit: an
    # assertion's own expectation (assertTrue's True, assertIsNone's None).
    kind: Literal["assertion", "parametrize", "assignment", "local", "implicit", "computed"]
    start_byte: int
    end_byte: int
    text: str
    line: int  # 1-based
    case: tuple[int, int] | None = None  # a parametrize case's byte range: what the guard reads


@dataclass(frozen=True)
class Isolated:
    """The failing assertion taken apart."""

    assertion: str
    line: int  # 1-based first line of the assertion
    end_line: int
    assertion_start: int  # byte offsets of the assertion statement
    assertion_end: int
    # "==" or "approx"; or an expectation that is not an equality: "truthy", "falsy",
    # "is", "is not" (the expected value is True, False or None), "in", "not in"
    op: str
    call_side: Literal["left", "right"]  # which compared value the call produced
    callee: str  # as written: count_vowels, text.count_vowels
    arguments: str  # the call's arguments, names replaced by their literal values
    expected: Site
    wrapper: str | None = None  # list, sorted...: the built-in the call is wrapped in
    # how the test wrote it: unittest-method, assert-function, boolean, identity,
    # membership, parametrize, local, loop-table (see docs/arbitration.md)
    forms: tuple[str, ...] = ()
    # a method of an object the test builds from literals (``Table([[]]).to_text()``):
    # the class as written (``Table``, ``strutils.MultiReplace``) and the constructor's
    # arguments, each a literal or ``name=literal``; ``callee`` is then ``Table.to_text``
    constructor: str | None = None
    constructor_arguments: tuple[str, ...] = ()

    @property
    def call(self) -> str:
        if self.constructor is not None:
            built = f"{self.constructor}({', '.join(self.constructor_arguments)})"
            return wrapped(self.wrapper, f"{built}.{self.function_name}({self.arguments})")
        return wrapped(self.wrapper, f"{self.callee}({self.arguments})")

    @property
    def oracle_arguments(self) -> str:
        """The arguments every source of truth is called with. For a method of an object
        the test builds, the oracle contract: the constructor's positional arguments as
        a tuple and its keyword arguments as a dict, then the method's own arguments —
        ``to_text(([[]],), {}, sep)`` for ``Table([[]]).to_text(sep)``."""
        if self.constructor is None:
            return self.arguments
        return ", ".join(
            filter(None, [constructor_literals(self.constructor_arguments), self.arguments])
        )

    @property
    def function_name(self) -> str:
        return self.callee.rsplit(".", 1)[-1]


def find_test(module: PythonModule, test: TestRef) -> Function:
    for fn in module.functions:
        if fn.name != test.name or fn.is_nested:
            continue
        owner = fn.class_.name if fn.class_ is not None else None
        if owner == test.cls:
            return fn
    raise NotIsolated(f"no test function {test.function_id} in {test.path}")


def callee_names(source: SourceFile, test: TestRef) -> list[str]:
    """Dotted names of every plain call in the test (what the plugin should resolve)."""
    module = PythonModule(source, is_test_file=True)
    try:
        fn = find_test(module, test)
    except NotIsolated:
        return []
    names: list[str] = []
    stack = [fn.body]
    while stack:
        node = stack.pop()
        stack.extend(node.named_children)
        if node.type == "call":
            name = _dotted(source, node.child_by_field_name("function"))
            if name and name not in names and not name.startswith("self."):
                names.append(name)
            method = _built_method(source, fn, node)
            if method and method not in names:
                names.append(method)
            handed = _raises_callable(source, node)
            if handed is not None and handed.type in ("identifier", "attribute"):
                name = _dotted(source, handed)
                if name and name not in names and not name.startswith("self."):
                    names.append(name)
    return names


def _built_method(source: SourceFile, fn: Function, call: Node) -> str | None:
    """``Table.to_text`` for a call ``Table(...).to_text(...)``, or ``t.to_text(...)``
    where the test assigns ``t = Table(...)``: what the recorder resolves."""
    function = call.child_by_field_name("function")
    if function is None or function.type != "attribute":
        return None
    obj = function.child_by_field_name("object")
    attribute = function.child_by_field_name("attribute")
    if obj is None or attribute is None:
        return None
    obj = unwrap(obj)
    built: Node | None = obj if obj.type == "call" else None
    if obj.type == "identifier":
        body = statements(fn.body)
        values = [v for _, v in _assignments(source, body, source.node_text(obj))]
        built = values[0] if len(values) == 1 and values[0].type == "call" else None
    constructor = (
        _dotted(source, built.child_by_field_name("function")) if built is not None else None
    )
    if not constructor or constructor.startswith("self."):
        return None
    return f"{constructor}.{source.node_text(attribute)}"


def _dotted(source: SourceFile, node: Node | None) -> str | None:
    if node is None:
        return None
    if node.type == "identifier":
        return source.node_text(node)
    if node.type == "attribute":
        obj = node.child_by_field_name("object")
        attr = node.child_by_field_name("attribute")
        head = _dotted(source, obj)
        return f"{head}.{source.node_text(attr)}" if head and attr is not None else None
    return None


def _literal(text: str) -> bool:
    try:
        ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def _is_approx(source: SourceFile, node: Node) -> bool:
    node = unwrap(node)
    if node.type != "call":
        return False
    name = _dotted(source, node.child_by_field_name("function")) or ""
    return name in ("approx", "pytest.approx")


def assertion_at(source: SourceFile, fn: Function, line: int) -> Node:
    """The innermost assertion of ``fn`` (an ``assert`` or a ``self.assert*`` call) whose
    lines hold ``line`` (1-based)."""
    row = line - 1
    found: Node | None = None
    stack = [fn.body]
    while stack:
        node = stack.pop()
        if not (node.start_point.row <= row <= node.end_point.row):
            continue
        if node.type in ("function_definition", "class_definition"):
            continue  # a nested helper's assertion is not the test's
        if node.type == "assert_statement" or (node.type == "call" and _method(source, node)):
            found = node
        stack.extend(node.named_children)
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
}


def isolate(
    source: SourceFile,
    test: TestRef,
    line: int,
    indices: dict[str, int] | None = None,
    frame_locals: dict[str, str] | None = None,
    project_callees: frozenset[str] | None = None,
) -> Isolated:
    """Take apart the assertion on ``line`` of ``test``. ``indices``: the case of each
    parametrized argument (pytest's ``callspec.indices``); ``frame_locals``: the ``repr``
    of the failing test frame's locals, as the recorder saw them (a loop's current case, a
    local variable); ``project_callees``: the dotted names the run resolved to Python
    functions of the project itself — where both sides of a comparison are calls, the one
    call of the project's is the call under test (``parse(s) == datetime(2003, 9, 25)``).
    Raises :class:`NotIsolated`."""
    module = PythonModule(source, is_test_file=True)
    fn = find_test(module, test)
    try:
        raising = _raises_at(source, module, fn, line, indices or {}, frame_locals)
    except NotIsolated as exc:
        try:  # an ``assert`` inside the ``with pytest.raises`` block is an assertion
            node = assertion_at(source, fn, line)
        except NotIsolated:
            raise exc from None
    else:
        if raising is not None:
            return raising
        node = assertion_at(source, fn, line)
    forms: list[str] = []
    implicit: str | None = None  # the expectation an assertion states by its form
    if node.type == "assert_statement":
        cond = unwrap(node.named_children[0]) if node.named_children else None
        if cond is not None and cond.type == "not_operator":
            inner = cond.child_by_field_name("argument")
            left, right, op, implicit = (unwrap(inner) if inner else cond), None, "falsy", "False"
        elif cond is not None and cond.type == "call":
            left, right, op, implicit = cond, None, "truthy", "True"
        elif cond is None or cond.type != "comparison_operator" or cond.named_child_count != 2:
            raise NotIsolated(
                "only `==`, `in`, `is` comparisons and `assert f(x)` / `assert not f(x)` can "
                "be arbitrated; this assertion is none of them"
            )
        else:
            operators = " ".join(source.node_text(c) for c in cond.children if not c.is_named)
            if operators not in ("==", "in", "not in", "is", "is not"):
                raise NotIsolated(
                    f"only `==`, `in` and `is` comparisons can be arbitrated; this one is "
                    f"`{operators}`"
                )
            left, right = cond.named_children
            op = operators
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
        if right is None:
            implicit = {"truthy": "True", "falsy": "False"}.get(op, "None")
    if op in _FORM_OF_OP:
        forms.append(_FORM_OF_OP[op])

    sides = (
        {"left": unwrap(left)} if right is None else {"left": unwrap(left), "right": unwrap(right)}
    )
    approx = [side for side, n in sides.items() if _is_approx(source, n)]
    calls = [
        side
        for side, n in sides.items()
        if n.type == "call" and side not in approx and not _literal(source.node_text(n))
    ]
    if right is None and not calls:
        raise NotIsolated(
            "cannot isolate the call under test: the value asserted "
            f"{'true' if op == 'truthy' else 'false' if op == 'falsy' else 'about'} is not a "
            "function call"
        )
    if len(calls) == 2 and project_callees is not None:
        # Both sides are calls: the project's function is the call under test, the other
        # side (a constructor of literals, a library's function) what the test expects.
        ours = [side for side in calls if _callee_of(source, sides[side]) in project_callees]
        if len(ours) == 1:
            calls = ours
    assigned: Node | None = None
    if not calls and right is not None:
        # ``result = f(x)`` once, then ``assert result == 3``: the call is the local's.
        for side, n in sides.items():
            if n.type == "identifier" and side not in approx:
                assigned = _assigned_call(source, fn, source.node_text(n), node)
                if assigned is not None:
                    calls = [side]
                    forms.append("assigned-call")
                    break
    if len(calls) != 1:
        raise NotIsolated(
            "cannot isolate the call under test: "
            + ("neither side" if not calls else "both sides")
            + " of the comparison is a function call"
            + (" of the project's" if len(calls) == 2 and project_callees is not None else "")
        )
    call_side = calls[0]
    call_node = assigned if assigned is not None else sides[call_side]
    wrapper = None
    outer = _dotted(source, call_node.child_by_field_name("function"))
    inner = _wrapped_call(call_node)
    if outer in WRAPPERS and inner is not None:
        wrapper, call_node = outer, inner
    bindings = _Bindings(source, module, fn, indices or {}, node.start_point.row, frame_locals)
    callee, built = _callee_and_object(source, fn, call_node, node)
    constructor: str | None = None
    constructor_arguments: tuple[str, ...] = ()
    if built is not None:
        constructor, constructor_call, form = built
        constructor_arguments = tuple(bindings.argument_parts(constructor_call))
        forms.append(form)
    arguments = bindings.arguments(call_node)
    if implicit is not None:
        expected = Site(
            "implicit", node.start_byte, node.end_byte, implicit, node.start_point.row + 1
        )
    else:
        expected_node = sides["right" if call_side == "left" else "left"]
        if _is_approx(source, expected_node):
            approx_args = call_arguments(unwrap(expected_node))
            if not approx_args:
                raise NotIsolated("pytest.approx() without a value")
            expected_node = unwrap(approx_args[0])
            op = "approx"
        try:
            expected = bindings.site(expected_node, "the expected value")
        except NotIsolated:
            expected = _computed(source, expected_node, callee)
            if expected is None:
                raise
            forms.append("computed-expected")
    if op in ("is", "is not") and expected.text.strip() not in _SINGLETONS:
        raise NotIsolated(
            f"cannot isolate the call under test: `{op}` compares identity; only with True, "
            f"False or None is that a value to check (here `{excerpt(expected.text)}`)"
        )
    forms.extend(f for f in bindings.forms if f not in forms)
    return Isolated(
        assertion=source.node_text(node),
        line=node.start_point.row + 1,
        end_line=node.end_point.row + 1,
        assertion_start=node.start_byte,
        assertion_end=node.end_byte,
        op=op,
        call_side=call_side,  # type: ignore[arg-type]
        callee=callee,
        arguments=arguments,
        expected=expected,
        wrapper=wrapper,
        forms=tuple(forms),
        constructor=constructor,
        constructor_arguments=constructor_arguments,
    )


def _callee_and_object(
    source: SourceFile, fn: Function, call: Node, assertion: Node
) -> tuple[str, tuple[str, Node, str] | None]:
    """The dotted name ``call`` calls, and — for a method of an object the test builds
    from a constructor call (``Table([[]]).to_text()``, or ``table = Table([[]])`` once
    then ``table.to_text()``) — (the class as written, the constructor call, the call
    form). The callee of a method is ``Class.method``. Raises :class:`NotIsolated`."""
    function_node = call.child_by_field_name("function")
    obj = function_node.child_by_field_name("object") if function_node is not None else None
    attribute = function_node.child_by_field_name("attribute") if function_node else None
    if function_node is not None and function_node.type == "attribute" and obj is not None:
        obj = unwrap(obj)
        built, form = None, "method-of-literal-object"
        if obj.type == "call":
            built = obj
        elif obj.type == "identifier" and source.node_text(obj) not in ("self", "cls"):
            name = source.node_text(obj)
            built = _assigned_call(source, fn, name, assertion)
            form = "method-of-assigned-object"
            if built is None and binding_counts(source, fn.node, [name])[name]:
                raise NotIsolated(
                    f"cannot isolate the call under test: `{excerpt(name)}` is an object the "
                    "test does not build once, from a class and literals, and leave alone "
                    "before the assertion"
                )
        constructor = (
            _dotted(source, built.child_by_field_name("function")) if built is not None else None
        )
        if built is not None and constructor and not constructor.startswith("self."):
            method = source.node_text(attribute) if attribute is not None else ""
            return f"{constructor}.{method}", (constructor, built, form)
    callee = _dotted(source, function_node)
    if callee is None and function_node is not None and function_node.type == "attribute":
        raise NotIsolated(
            "cannot isolate the call under test: "
            f"`{excerpt(source.node_text(function_node))}` is a method of an object the test "
            "does not build from a class and literals; arbitration computes truths for "
            "functions, static and class methods, and methods of objects built from literals"
        )
    if callee is None or callee.startswith("self."):
        raise NotIsolated(
            "cannot isolate the call under test: "
            f"`{excerpt(source.node_text(function_node))}` "
            "is not a plain function name"
        )
    return callee, None


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
    name = _dotted(source, function) or ""
    if not name and function is not None and function.type == "attribute":
        attribute = function.child_by_field_name("attribute")  # ``TestCase().assertRaises``
        name = "." + source.node_text(attribute) if attribute is not None else ""
    last = name.rsplit(".", 1)[-1]
    if last not in _RAISES:
        return None
    if last == "raises" and name not in ("raises", "pytest.raises"):
        return None
    return last


def _raises_callable(source: SourceFile, call: Node) -> Node | None:
    """The callable a callable-form raises assertion hands over (``f`` of
    ``self.assertRaises(E, f, 1)``), or None."""
    name = _raises_name(source, call)
    if name is None:
        return None
    args = [a for a in call_arguments(call) if a.type != "keyword_argument"]
    position = _RAISES[name]
    return unwrap(args[position]) if len(args) > position else None


def _raises_at(
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
    row = line - 1
    found: Node | None = None
    stack = [fn.body]
    while stack:
        node = stack.pop()
        if not (node.start_point.row <= row <= node.end_point.row):
            continue
        if node.type in ("function_definition", "class_definition", "lambda"):
            continue
        if (node.type == "with_statement" and _with_raises(source, node) is not None) or (
            node.type == "call" and _raises_callable(source, node) is not None
        ):
            found = node
        stack.extend(node.named_children)
    if found is None:
        return None
    forms = ["raises"]
    if found.type == "with_statement":
        manager = _with_raises(source, found)
        assert manager is not None
        body = found.child_by_field_name("body")
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
        arguments_of: Node | None = None
    else:
        manager = found
        handed = _raises_callable(source, found)
        assert handed is not None
        arguments_of = found
        if handed.type == "lambda":
            body = handed.child_by_field_name("body")
            call = unwrap(body) if body is not None else None
            arguments_of = None
            if call is None or call.type != "call":
                raise NotIsolated(
                    "cannot isolate the call under test: the lambda handed to the raises "
                    "assertion is not one call"
                )
        elif handed.type in ("identifier", "attribute"):
            call = handed
        else:
            raise NotIsolated(
                "cannot isolate the call under test: what the raises assertion calls is "
                "not a function name or a lambda"
            )
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
    bindings = _Bindings(source, module, fn, indices, found.start_point.row, frame_locals)
    wrapper = None
    if call.type == "call":
        outer = _dotted(source, call.child_by_field_name("function"))
        wrapped_call = _wrapped_call(call)
        if outer in WRAPPERS and wrapped_call is not None:
            wrapper, call = outer, wrapped_call
        callee = _dotted(source, call.child_by_field_name("function"))
        arguments = bindings.arguments(call)
    else:
        callee = _dotted(source, call)
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
    return Isolated(
        assertion=source.node_text(found),
        line=found.start_point.row + 1,
        end_line=found.end_point.row + 1,
        assertion_start=found.start_byte,
        assertion_end=found.end_byte,
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


def _callee_of(source: SourceFile, call: Node) -> str | None:
    """The dotted name a call calls, through a wrapper (``sorted(f(x))``: ``f``)."""
    outer = _dotted(source, call.child_by_field_name("function"))
    inner = _wrapped_call(call)
    if outer in WRAPPERS and inner is not None:
        return _dotted(source, inner.child_by_field_name("function"))
    return outer


def _assigned_call(source: SourceFile, fn: Function, name: str, assertion: Node) -> Node | None:
    """The call of the one ``name = f(...)`` statement in the test's body before the
    assertion, when nothing between them mentions ``name`` (a method call on it, an
    append, could have changed the value the assertion sees) and nothing else in the test
    binds it; else None."""
    body = statements(fn.body)
    position = next(
        (
            i
            for i, stmt in enumerate(body)
            if stmt.start_byte <= assertion.start_byte < stmt.end_byte
        ),
        None,
    )
    if position is None:
        return None
    found = [(i, value) for i, value in _assignments(source, body, name) if i < position]
    if len(found) != 1 or found[0][1].type != "call":
        return None
    if binding_counts(source, fn.node, [name])[name] != 1:
        return None
    index, call = found[0]
    if any(name in _identifiers(source, stmt) for stmt in body[index + 1 : position]):
        return None
    return call


def _assignments(source: SourceFile, body: list[Node], name: str) -> list[tuple[int, Node]]:
    """(index in ``body``, assigned value) of each ``name = value`` statement of a block."""
    found = []
    for index, stmt in enumerate(body):
        if stmt.type != "expression_statement" or not stmt.named_children:
            continue
        assign = stmt.named_children[0]
        if assign.type != "assignment":
            continue
        left = assign.child_by_field_name("left")
        right = assign.child_by_field_name("right")
        if left is not None and source.node_text(left) == name and right is not None:
            found.append((index, unwrap(right)))
    return found


def _computed(source: SourceFile, node: Node, callee: str) -> Site | None:
    """The expected value as an expression the test evaluates — a constructor of literals
    (``datetime(2003, 9, 25)``), another function's value — when it does not call the
    function under test itself: its value is the one the failing comparison recorded, and
    it is never edited (there is no literal to replace)."""
    node = unwrap(node)
    if node.type in ("identifier", "attribute", "subscript"):
        return None  # a name: where its value came from is not read here
    name = callee.rsplit(".", 1)[-1]
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("lambda", "generator_expression", "list_comprehension",
                            "set_comprehension", "dictionary_comprehension", "await"):  # fmt: skip
            return None
        if current.type == "call":
            called = _dotted(source, current.child_by_field_name("function")) or ""
            if called == callee or called.rsplit(".", 1)[-1] == name:
                return None
        stack.extend(current.named_children)
    return Site(
        "computed", node.start_byte, node.end_byte, source.node_text(node), node.start_point.row + 1
    )


def _identifiers(source: SourceFile, node: Node) -> set[str]:
    found = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            found.add(source.node_text(current))
        stack.extend(current.named_children)
    return found


def _immutable(value: object) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return all(_immutable(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, complex, str, bytes))


def wrapped(wrapper: str | None, call: str) -> str:
    """``call`` inside ``wrapper`` (``list(f(x))``), or ``call`` itself."""
    return f"{wrapper}({call})" if wrapper else call


def constructor_literals(arguments: Sequence[str]) -> str:
    """``(a, b), {'k': v}``: a constructor's arguments (``a``, ``b``, ``k=v``) as the
    tuple and the dict an oracle of a method takes first."""
    positional = [a for a in arguments if not _keyword(a)]
    keywords = [_keyword(a) for a in arguments if _keyword(a)]
    items = ", ".join(f"{name!r}: {value}" for name, value in keywords)  # type: ignore[misc]
    return "(" + "".join(f"{a}, " for a in positional) + "), {" + items + "}"


def _keyword(argument: str) -> tuple[str, str] | None:
    """(name, value) of a ``name=value`` argument, None for a positional one."""
    match = re.match(r"^([A-Za-z_]\w*)=(?!=)", argument)
    return (match.group(1), argument[match.end() :]) if match else None


def _wrapped_call(node: Node) -> Node | None:
    """The one call a wrapper call holds as its only argument (``list(f(x))``: ``f(x)``)."""
    args = node.child_by_field_name("arguments")
    if args is None or args.type != "argument_list":
        return None
    items = [a for a in args.named_children if a.type != "comment"]
    if len(items) != 1:
        return None
    inner = unwrap(items[0])
    return inner if inner.type == "call" else None


class _Bindings:
    """What the names in an assertion stand for: a parametrize case's values, or a literal
    assigned once in the test before the assertion."""

    def __init__(
        self,
        source: SourceFile,
        module: PythonModule,
        fn: Function,
        indices: dict[str, int],
        row: int,
        frame_locals: dict[str, str] | None = None,
    ) -> None:
        self.source = source
        self.module = module
        self.fn = fn
        self.indices = indices
        self.row = row
        self.frame_locals = frame_locals or {}
        self.forms: list[str] = []  # how the names were bound: parametrize, local, loop-table

    def arguments(self, call: Node) -> str:
        return ", ".join(self.argument_parts(call))

    def argument_parts(self, call: Node) -> list[str]:
        """Each argument of ``call`` as its literal (``name=literal`` for a keyword)."""
        args = call.child_by_field_name("arguments")
        parts = []
        for arg in args.named_children if args is not None else []:
            if arg.type == "comment":
                continue
            if arg.type == "keyword_argument":
                name = arg.child_by_field_name("name")
                value = arg.child_by_field_name("value")
                if name is None or value is None:
                    raise NotIsolated("cannot read a keyword argument of the call")
                site = self.site(value, f"argument `{self.source.node_text(name)}`")
                parts.append(f"{self.source.node_text(name)}={site.text}")
            elif arg.type in ("list_splat", "dictionary_splat", "generator_expression"):
                raise NotIsolated(
                    f"cannot isolate the call under test: `{excerpt(self.source.node_text(arg))}` "
                    "is not a literal argument"
                )
            else:
                parts.append(self.site(arg, "an argument", argument=True).text)
        return parts

    def site(self, node: Node, what: str, *, argument: bool = False) -> Site:
        node = unwrap(node)
        text = self.source.node_text(node)
        if _literal(text):
            return Site("assertion", node.start_byte, node.end_byte, text, node.start_point.row + 1)
        unreadable: NotIsolated | None = None  # parametrize values written as a name...
        if node.type == "identifier":
            try:
                found = self._parametrized(text)
            except NotIsolated as exc:
                found, unreadable = None, exc
            if found is not None:
                self._form("parametrize")
                return found
            found = self._assigned(text)
            if found is not None:
                self._form("local")
                return found
        if node.type in ("identifier", "subscript"):
            found = self._recorded(node, what, argument)
            if found is not None:
                return found
        if unreadable is not None:
            raise unreadable
        raise NotIsolated(
            f"cannot isolate the call under test: {what} `{excerpt(text)}` is not a literal, a "
            "parametrized value, a literal assigned in the test or a local whose value the "
            "failing run recorded as a literal"
        )

    def _form(self, form: str) -> None:
        if form not in self.forms:
            self.forms.append(form)

    def _recorded(self, node: Node, what: str, argument: bool) -> Site | None:
        """A name (``inp``) or a subscript of one with a literal key (``case["in"]``,
        ``case[0]``) whose value the recorder saw in the failing test frame — the current
        case of a loop over a table, a local variable — when that value reads back as a
        literal. An argument must also be immutable: the call may have changed a list it
        was given, and the recorded value is the one after the call."""
        base = node
        keys: list[object] = []
        while base.type == "subscript":
            index = base.child_by_field_name("subscript")
            inner = base.child_by_field_name("value")
            if index is None or inner is None or not _literal(self.source.node_text(index)):
                return None
            keys.insert(0, ast.literal_eval(self.source.node_text(index)))
            base = unwrap(inner)
        if base.type != "identifier":
            return None
        name = self.source.node_text(base)
        recorded = self.frame_locals.get(name)
        if recorded is None:
            return None
        try:
            value = ast.literal_eval(recorded)
            for key in keys:
                value = value[key]  # type: ignore[index]
        except (
            ValueError,
            SyntaxError,
            TypeError,
            KeyError,
            IndexError,
            MemoryError,
            RecursionError,
        ):
            return None
        text = repr(value)
        if not _literal(text):
            return None
        if argument and not _immutable(value):
            raise NotIsolated(
                f"cannot isolate the call under test: {what} "
                f"`{excerpt(self.source.node_text(node))}` is a {type(value).__name__} the "
                "recorder saw after the call, which may have changed it"
            )
        if name in self.indices:
            self._form("parametrize")  # a case of a table the decorator names: read as it ran
        else:
            self._form("loop-table" if self._loop_target(name) else "local")
        return Site("local", node.start_byte, node.end_byte, text, node.start_point.row + 1)

    def _loop_target(self, name: str) -> bool:
        """Whether ``name`` is bound by a ``for`` loop of the test that holds the assertion."""
        stack = [self.fn.body]
        while stack:
            current = stack.pop()
            if current.type in ("function_definition", "class_definition", "lambda"):
                continue
            if current.type == "for_statement" and (
                current.start_point.row <= self.row <= current.end_point.row
            ):
                left = current.child_by_field_name("left")
                if left is not None and name in _identifiers(self.source, left):
                    return True
            stack.extend(current.named_children)
        return False

    def _assigned(self, name: str) -> Site | None:
        """The literal of the one ``name = <literal>`` statement in the test's body before
        the assertion (none if the name is bound anywhere else in the test: a second
        assignment, ``+=``, a loop or ``with`` target, ``:=``, a parameter…)."""
        body = statements(self.fn.body)
        found = [
            value
            for i, value in _assignments(self.source, body, name)
            if body[i].start_point.row < self.row
        ]
        if len(found) != 1 or not _literal(self.source.node_text(found[0])):
            return None
        if binding_counts(self.source, self.fn.node, [name])[name] != 1:
            return None
        value = found[0]
        return Site(
            "assignment",
            value.start_byte,
            value.end_byte,
            self.source.node_text(value),
            value.start_point.row + 1,
        )

    def _parametrized(self, name: str) -> Site | None:
        if name not in self.indices:
            return None
        for decorator in self._parametrize_decorators():
            names, values = self._parametrize_arguments(decorator)
            if names is None or name not in names:
                continue
            if values is None or values.type not in ("list", "tuple"):
                raise NotIsolated(
                    f"cannot isolate the call under test: the values of `{name}` are not "
                    "written as a list in the parametrize decorator"
                )
            cases = [c for c in values.named_children if c.type != "comment"]
            index = self.indices[name]
            if index >= len(cases):
                return None
            case = unwrap(cases[index])
            if case.type == "call" and (
                _dotted(self.source, case.child_by_field_name("function")) or ""
            ).endswith("param"):
                items = call_arguments(case)
            elif len(names) == 1:
                items = [case]
            elif case.type in ("tuple", "list"):
                items = [c for c in case.named_children if c.type != "comment"]
            else:
                return None
            position = names.index(name)
            if position >= len(items):
                return None
            value = unwrap(items[position])
            text = self.source.node_text(value)
            if not _literal(text):
                return None
            return Site(
                "parametrize",
                value.start_byte,
                value.end_byte,
                text,
                value.start_point.row + 1,
                case=(cases[index].start_byte, cases[index].end_byte),
            )
        return None

    def _parametrize_decorators(self) -> list[Node]:
        holders = [self.fn.node]
        if self.fn.class_ is not None:
            holders.append(self.fn.class_.node)
        found = []
        for holder in holders:
            parent = holder.parent
            if parent is None or parent.type != "decorated_definition":
                continue
            for child in parent.named_children:
                if child.type != "decorator" or not child.named_children:
                    continue
                expr = child.named_children[0]
                if expr.type != "call":
                    continue
                name = _dotted(self.source, expr.child_by_field_name("function")) or ""
                if name.endswith("parametrize"):
                    found.append(expr)
        return found

    def _parametrize_arguments(self, call: Node) -> tuple[list[str] | None, Node | None]:
        args = call_arguments(call)
        names_node = args[0] if args else keyword_argument(self.source, call, "argnames")
        values = args[1] if len(args) > 1 else keyword_argument(self.source, call, "argvalues")
        if names_node is None:
            return None, None
        try:
            raw = ast.literal_eval(self.source.node_text(names_node))
        except (ValueError, SyntaxError):
            return None, None
        if isinstance(raw, str):
            names = [n.strip() for n in raw.split(",") if n.strip()]
        elif isinstance(raw, (list, tuple)) and all(isinstance(n, str) for n in raw):
            names = list(raw)
        else:
            return None, None
        return names, unwrap(values) if values is not None else None


# ------------------------------------------------------------------ the function under test


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

    @property
    def owner(self) -> str:
        """The class of a method (``Table`` of ``Table.to_text``), else ``""``."""
        return self.qualname.rpartition(".")[0]

    @property
    def definition(self) -> str:
        return self.text.encode("utf-8")[self.start_byte : self.end_byte].decode("utf-8")


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
        if value is not None and owner:
            # ``Owner.name(2)`` in a static method's examples is the call ``name(2)``
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
            signature=header,
            docstring=docstring,
            docstring_value=value,
            form="staticmethod" if owner else "function",
        )
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
