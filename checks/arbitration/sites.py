"""What a failing assertion is taken apart into — the test's id, the site of its expected
value, the isolated call — and the tree readings the parts of
:mod:`referee.checks.arbitration.isolate` share (dotted names, literals, a test body's
assignments)."""

from __future__ import annotations

import ast
import keyword
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from tree_sitter import Node

from referee.checks.arbitration.projection import checked
from referee.checks.arbitration.reaching import (
    FunctionAst,
    only_looked_at,
    reaching,
    readers,
    rebound,
    unpacked_position,
)
from referee.checks.models import SiteKind
from referee.checks.nodes import statements, unwrap
from referee.checks.pymodule import Function, PythonModule
from referee.checks.source import SourceFile

# Operators that compare the call's value with an expected value a test fix can replace;
# the others (boolean, identity, membership, inequality, ordering) only ever blame the
# source.
EQUALITY_OPS = frozenset({"==", "approx"})


# Built-ins a test wraps the call under test in to look at its value (a generator's items,
# an order-free result, its text): the call is isolated through the wrapper, and every
# source of truth's value is wrapped the same way. Each is pure and deterministic on the
# values it is given (no I/O, no state, no hash order: ``sorted`` and ``set``, not ``iter``
# or ``id``).
WRAPPERS = frozenset(
    {
        *("list", "tuple", "set", "frozenset", "sorted", "dict", "next"),
        *("str", "repr", "len", "bool", "abs", "sum", "min", "max", "any", "all"),
    }
)


# How a test reads an object's own text (the call ``str(Bits(5))`` is ``Bits.__str__``).
_TEXT_OF = {"__str__": "str({})", "__repr__": "repr({})"}


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
    # assertion's own expectation (assertTrue's True, assertIsNone's None). A helper's
    # assertion (helpers.py): call-site, a literal the test's one call of the helper
    # passes (``case``: that call, what a certificate binds); helper, a literal written in
    # the helper, and shared, one at a call the test makes in a loop — each written once
    # for several cases, so never replaced.
    kind: SiteKind
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
    # "is", "is not" (the expected value is True, False or None), "in", "not in", "!=",
    # "<", "<=", ">", ">="
    op: str
    call_side: Literal["left", "right"]  # which compared value the call produced
    callee: str  # as written: count_vowels, text.count_vowels
    arguments: str  # the call's arguments, names replaced by their literal values
    expected: Site
    wrapper: str | None = None  # list, sorted...: the built-in the call is wrapped in
    # how the test wrote it: unittest-method, assert-function, boolean, identity,
    # membership, inequality, ordering, parametrize, local, loop-table (see docs/arbitration.md)
    forms: tuple[str, ...] = ()
    # a method of an object the test builds from literals (``Table([[]]).to_text()``):
    # the class as written (``Table``, ``strutils.MultiReplace``) and the constructor's
    # arguments, each a literal or ``name=literal``; ``callee`` is then ``Table.to_text``
    constructor: str | None = None
    constructor_arguments: tuple[str, ...] = ()
    # the attributes and literal subscripts the test reads from the call's value
    # (``parse(s).year``: ``.year``), as :mod:`~referee.checks.arbitration.projection`
    # writes them; every source of truth's value is projected the same way
    projection: str = ""
    # what known arguments (``dt.timedelta(seconds=1)``, ``inc``, ``lambda x: x``) need to
    # be evaluated where the test module is not — its imports of the names they use, the
    # definitions they name (:func:`~referee.checks.arbitration.known.with_definitions`)
    definitions: str = ""
    # a raises assertion's message pattern as written (``match="at least"``), or None
    match: str | None = None
    # a computed expected value that can be evaluated on its own (``datetime(2003, 9,
    # 25)``, ``datetime.datetime(2007, 6, 23, tzinfo=iso8601.UTC).year``), written out to
    # be evaluated with ``definitions`` and ``expected_definitions`` (the test module's
    # imports it needs besides, the project's among them: evaluated with the project's
    # files) where the failing run recorded no comparison (the call raised); else None
    expected_known: str | None = None
    expected_definitions: str = ""

    @classmethod
    def at(cls, source: SourceFile, node: Node, **rest: Any) -> Isolated:
        """The assertion statement ``node`` of ``source`` taken apart into ``rest``."""
        return cls(
            assertion=source.node_text(node),
            line=node.start_point.row + 1,
            end_line=node.end_point.row + 1,
            assertion_start=node.start_byte,
            assertion_end=node.end_byte,
            **rest,
        )

    @property
    def call(self) -> str:
        if self.constructor is not None:
            built = f"{self.constructor}({', '.join(self.constructor_arguments)})"
            method = self.callee.rsplit(".", 1)[-1]
            # the object built (``Bits(4, 2)``), its text (``str(Bits(5))``), a method's value
            call = (
                built
                if method == "__init__"
                else _TEXT_OF.get(method, "{}.{}({})").format(built, method, self.arguments)
            )
            return wrapped(self.wrapper, call, self.projection)
        return wrapped(self.wrapper, f"{self.callee}({self.arguments})", self.projection)

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


def find_test(module: PythonModule, test: TestRef) -> Function:
    for fn in module.functions:
        if fn.name != test.name or fn.is_nested:
            continue
        owner = fn.class_.name if fn.class_ is not None else None
        if owner == test.cls:
            return fn
    raise NotIsolated(f"no test function {test.function_id} in {test.path}")


def dotted(source: SourceFile, node: Node | None) -> str | None:
    if node is None:
        return None
    if node.type == "identifier":
        return source.node_text(node)
    if node.type == "attribute":
        obj = node.child_by_field_name("object")
        attr = node.child_by_field_name("attribute")
        head = dotted(source, obj)
        return f"{head}.{source.node_text(attr)}" if head and attr is not None else None
    return None


def is_literal(text: str) -> bool:
    try:
        ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def literal_text(text: str) -> str | None:
    """A literal's text on one line: ``text`` itself when it is one, the value's repr when
    it is one only inside its parentheses — strings concatenated over lines, as real tests
    write a long expected output (``"a\\n"`` on one line, ``"b\\n"`` on the next) —
    else None."""
    if is_literal(text):
        return text
    if "\n" in text and is_literal(f"({text})"):
        return repr(ast.literal_eval(f"({text})"))
    return None


def immutable_literal(text: str) -> str | None:
    """:func:`literal_text` of ``text`` when its value is immutable (a number, a string, a
    tuple of them...: nothing a test can have changed since it was written), else None."""
    literal = literal_text(text)
    if literal is None:
        return None
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return literal if immutable(value) else None


def assignments(source: SourceFile, body: list[Node], name: str) -> list[tuple[int, Node]]:
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


def reaching_assignment(
    source: SourceFile, fn: Function, name: str, at: int
) -> tuple[int, Node] | None:
    """(index among the test's own statements, value) of the ``name = value`` statement
    whose value ``name`` holds at the byte ``at`` of the test ``fn``, by the one rule of
    :mod:`~referee.checks.arbitration.reaching` (the suite's reader applies it too): the
    test's text is read with ``ast`` at its own indentation, and the statement found
    again among tree-sitter's. None where that rule gives no answer, or where the two
    trees do not list the same statements (a text ``ast`` cannot read)."""
    both = _both_trees(source, fn, at)
    if both is None:
        return None
    function, body, position = both
    index = reaching(function, name, position)
    found = dict(assignments(source, body, name))
    if index is None or index not in found:
        return None
    return index, found[index]


def unpacked_call(
    source: SourceFile, fn: Function, name: str, assertion: Node
) -> tuple[Node, int] | None:
    """(the call, the place of ``name`` among the names) where the statement whose value
    ``assertion`` reads ``name`` from unpacks a call into plain names (``a, name =
    f(x)``: :func:`~referee.checks.arbitration.reaching.unpacked_position`), by the rules
    an assigned call is read by (:func:`reaching_assignment`, :func:`assertion_reads`);
    else None."""
    both = _both_trees(source, fn, assertion.start_byte)
    if both is None:
        return None
    function, body, position = both
    index = reaching(function, name, position)
    place = unpacked_position(function.body[index], name) if index is not None else None
    if index is None or place is None:
        return None
    if not assertion_reads(source, fn, name, index, assertion):
        return None
    target = function.body[index].targets[0]  # type: ignore[attr-defined]
    others = [t.id for t in target.elts if t.id != name]
    if not only_looked_at(function, others, index, position):
        return None
    stmt = body[index]
    assign = stmt.named_children[0] if stmt.type == "expression_statement" else None
    left = assign.child_by_field_name("left") if assign is not None else None
    right = assign.child_by_field_name("right") if assign is not None else None
    if assign is None or assign.type != "assignment" or left is None or right is None:
        return None
    right = unwrap(right)
    targets = [c for c in left.named_children if not c.is_extra]
    if right.type != "call" or len(targets) != place[1]:
        return None
    if source.node_text(targets[place[0]]) != name:
        return None
    return right, place[0]


def assertion_reads(
    source: SourceFile, fn: Function, name: str, index: int, assertion: Node
) -> bool:
    """Whether ``assertion`` takes the value the assignment ``index`` of ``name`` left as
    built, by the rule of :func:`~referee.checks.arbitration.reaching.readers`: its
    statement is one of the assignment's readers, and the assertion itself holds that
    statement's first read of the name (nothing before it in a ``with`` or ``for`` that
    holds it mentions the name)."""
    both = _both_trees(source, fn, assertion.start_byte)
    if both is None:
        return False
    function, _, position = both
    shift = 1 if source.lines[fn.node.start_point.row][: fn.node.start_point.column] else 0
    line = assertion.start_point.row - fn.node.start_point.row + 1 + shift
    start = (line, assertion.start_point.column)
    return any(
        held == position and (read_line, column) >= start
        for held, read_line, column in readers(function, name, index)
    )


def rebound_after(source: SourceFile, fn: Function, names: set[str], index: int, at: int) -> bool:
    """Whether a statement of the test after its statement ``index``, up to the one that
    holds the byte ``at``, binds one of ``names`` again (True where the test cannot be
    read so)."""
    both = _both_trees(source, fn, at)
    if both is None:
        return True
    function, _, position = both
    return rebound(function, names, index, position)


def _both_trees(
    source: SourceFile, fn: Function, at: int
) -> tuple[FunctionAst, list[Node], int] | None:
    """The test ``fn`` as ``ast`` reads it, its statements in tree-sitter's tree, and the
    index of the one that holds the byte ``at`` — the same in both, as both list the
    same statements; None where they do not (a text ``ast`` cannot read) or no statement
    holds ``at``."""
    function = _parsed_function(source, fn)
    body = statements(fn.body)
    position = next((i for i, s in enumerate(body) if s.start_byte <= at < s.end_byte), None)
    if function is None or position is None or len(function.body) != len(body):
        return None
    return function, body, position


def _parsed_function(source: SourceFile, fn: Function) -> FunctionAst | None:
    """The test ``fn`` as ``ast`` reads it (its text at its own indentation, under an
    ``if`` when it has one), or None where ``ast`` cannot read it."""
    node = fn.node
    row, column = node.start_point
    indent = source.lines[row][:column].decode("utf-8", "replace")
    return _parsed(indent, source.node_text(node))


@lru_cache(maxsize=64)
def _parsed(indent: str, text: str) -> FunctionAst | None:
    head = "if 1:\n" if indent else ""
    try:
        tree = ast.parse(head + indent + text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    body = tree.body[0].body if head and isinstance(tree.body[0], ast.If) else tree.body
    found = body[0] if len(body) == 1 else None
    return found if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def identifiers(source: SourceFile, node: Node) -> set[str]:
    found = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            found.add(source.node_text(current))
        stack.extend(current.named_children)
    return found


def mentioned_between(source: SourceFile, root: Node, name: str, start: int, end: int) -> bool:
    """Whether the name or dotted name ``name`` (``t``, ``self.t``) is written under
    ``root`` between the bytes ``start`` and ``end`` — at any depth: a statement inside
    the ``with`` or ``for`` that holds an assertion comes before it too."""
    kind = "attribute" if "." in name else "identifier"
    stack = [root]
    while stack:
        node = stack.pop()
        if node.end_byte <= start or node.start_byte >= end:
            continue
        if node.type == kind and start <= node.start_byte and source.node_text(node) == name:
            return True
        stack.extend(node.named_children)
    return False


def round_trips(value: object) -> bool:
    """Whether ``repr(value)`` reads back as the literal ``value`` (not ``inf``, an
    object's repr); NaN counts, as it never equals itself."""
    try:
        return ast.literal_eval(repr(value)) == value or value != value  # nan
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def parameter_names(value: object) -> bool:
    """Whether ``value`` is a dict whose keys could name parameters (``f(**value)``)."""
    return isinstance(value, dict) and all(
        isinstance(k, str) and k.isidentifier() and not keyword.iskeyword(k) for k in value
    )


def immutable(value: object) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return all(immutable(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, complex, str, bytes))


def wrapped(wrapper: str | None, call: str, projection: str = "") -> str:
    """``call`` inside ``wrapper`` (``list(f(x))``), or ``call`` itself; then projected
    (``f(x).year``) — the projection read again before it is written after a call, which
    a sandbox may run (raises ValueError for one referee would not write)."""
    return (f"{wrapper}({call})" if wrapper else call) + checked(projection)


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


def wrapped_call(node: Node) -> Node | None:
    """The one call a wrapper call holds as its only argument (``list(f(x))``: ``f(x)``)."""
    args = node.child_by_field_name("arguments")
    if args is None or args.type != "argument_list":
        return None
    items = [a for a in args.named_children if a.type != "comment"]
    if len(items) != 1:
        return None
    inner = unwrap(items[0])
    return inner if inner.type == "call" else None


COMPARISON_IN_BOOLEAN = "comparison-in-boolean"
# The comparisons arbitration reads: the truth is checked against the test's expectation
# (``==`` and ``approx`` against the expected value itself, the others by whether the
# truth meets them: :func:`~referee.checks.arbitration.outcomes.meets`).
OPERATORS = ("==", "!=", "<", "<=", ">", ">=", "in", "not in", "is", "is not")
# An operator and the one that says the opposite (``assertFalse(a in b)`` is ``not in``).
# An ordering has none: ``not a < b`` is not ``a >= b`` for sets (subsets), nor for NaN.
_OPPOSITE = {
    "==": "!=",
    "!=": "==",
    "in": "not in",
    "not in": "in",
    "is": "is not",
    "is not": "is",
}


def comparison(source: SourceFile, cond: Node, *, negated: bool = False) -> tuple[Node, Node, str]:
    """(left, right, operator) of a comparison of two values with one of
    :data:`OPERATORS` — the operator turned around when ``negated``; raises
    :class:`NotIsolated` for any other (a chain, ``a < b < c``, is no one comparison)."""
    sides = [c for c in cond.named_children if not c.is_extra]
    operators = " ".join(source.node_text(c) for c in cond.children if not c.is_named)
    if len(sides) != 2 or operators not in OPERATORS:
        raise NotIsolated(
            "only comparisons of two values with `==`, `!=`, `<`, `<=`, `>`, `>=`, `in` or "
            f"`is` can be arbitrated; this one is `{operators}`"
        )
    if negated:
        if operators not in _OPPOSITE:
            raise NotIsolated(
                f"`assertFalse(a {operators} b)` is not the opposite ordering for every value "
                "(a set's subsets, NaN): only `==`, `!=`, `in` and `is` are turned around"
            )
        operators = _OPPOSITE[operators]
    return sides[0], sides[1], operators
