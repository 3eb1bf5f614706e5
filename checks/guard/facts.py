"""What a test module asserts, in a form that survives reformatting and moves.

The guard compares these facts between a baseline (git) and the working text; it never
diffs text. Each assertion becomes ``(subject, op, expected)`` in canonical form (as
``ast.unparse`` prints it), so ``assert  f('a')==2`` and ``self.assertEqual(f("a"), 2)``
are the same fact. An equality's expected side that names a local the test binds once, to
a literal, is that literal: ``expected = 4`` then ``assert f(x) == expected`` reads ``== 4``.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tree_sitter import Node

from referee.checks.nodes import (
    binding_counts,
    call_arguments,
    handler_swallows,
    keyword_argument,
    literal_truth,
    statements,
    unwrap,
)
from referee.checks.pymodule import Class, Function, PythonModule, callee_parts
from referee.checks.source import SourceFile

# unittest methods: name -> (op, which argument is the subject, which the expected)
_METHODS: dict[str, tuple[str, int, int | None]] = {
    "assertEqual": ("==", 0, 1),
    "assertEquals": ("==", 0, 1),
    "assertListEqual": ("==", 0, 1),
    "assertDictEqual": ("==", 0, 1),
    "assertTupleEqual": ("==", 0, 1),
    "assertSetEqual": ("==", 0, 1),
    "assertSequenceEqual": ("==", 0, 1),
    "assertMultiLineEqual": ("==", 0, 1),
    "assertCountEqual": ("==", 0, 1),
    "assertAlmostEqual": ("approx", 0, 1),
    "assertNotEqual": ("!=", 0, 1),
    "assertNotAlmostEqual": ("!=", 0, 1),
    "assertIs": ("is", 0, 1),
    "assertIsNot": ("is not", 0, 1),
    "assertIsNone": ("is", 0, None),
    "assertIsNotNone": ("is not", 0, None),
    "assertIn": ("in", 0, 1),
    "assertNotIn": ("not in", 0, 1),
    "assertGreater": (">", 0, 1),
    "assertGreaterEqual": (">=", 0, 1),
    "assertLess": ("<", 0, 1),
    "assertLessEqual": ("<=", 0, 1),
    "assertTrue": ("truthy", 0, None),
    "assertFalse": ("falsy", 0, None),
    "assertIsInstance": ("isinstance", 0, 1),
    "assertRegex": ("matches", 0, 1),
}
_RAISES = frozenset(
    {"raises", "assertRaises", "assertRaisesRegex", "warns", "assertWarns", "assertWarnsRegex"}
)

# How much an operator pins the value down. An edit that moves an assertion to a lower
# rank proves less than before: `==` -> `in` is a weakening, `>` -> `==` is not.
STRENGTH = {
    "==": 4,
    "is": 4,
    "approx": 3,
    "isinstance": 2,
    "matches": 2,
    "in": 2,
    "<": 2,
    ">": 2,
    "<=": 2,
    ">=": 2,
    "not in": 1,
    "!=": 1,
    "is not": 1,
    "truthy": 0,
    "falsy": 0,
}

_SKIP_DECORATOR = re.compile(r"(^|\.)(skip|skipIf|skipUnless|skipif)$")
_XFAIL_DECORATOR = re.compile(r"(^|\.)(xfail|expectedFailure)$")


def squash(text: str) -> str:
    """Source text with all whitespace removed: a comparison key that ignores layout."""
    return "".join(text.split())


@functools.lru_cache(maxsize=8192)
def canonical(text: str) -> str:
    """An expression as Python itself would print it: layout, quote style, redundant
    parentheses and numeric spelling (``1_000``, ``.5``) no longer matter. Text that does
    not parse on its own keeps its whitespace-free form."""
    text = text.strip().removeprefix("@").strip()
    try:
        return ast.unparse(ast.parse(text, mode="eval"))
    except (SyntaxError, ValueError, RecursionError):
        return squash(text)


def _case(text: str) -> str:
    """A parametrize case, canonical; ``pytest.param(a, b, id=..., marks=...)`` reads as
    ``(a, b)``: renaming a case changes nothing it asserts, and its skip and xfail marks
    are counted with the test's."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return squash(text)
    node = tree.body
    if (
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "param")
            or (isinstance(node.func, ast.Name) and node.func.id == "param")
        )
        and not any(isinstance(a, ast.Starred) for a in node.args)
    ):
        if len(node.args) == 1:
            return ast.unparse(node.args[0])
        return ast.unparse(ast.Tuple(elts=node.args, ctx=ast.Load()))
    return ast.unparse(tree)


@dataclass(frozen=True)
class Assertion:
    subject: str
    op: str
    expected: str | None
    line: int  # 1-based
    text: str
    silenced: str | None = None  # why it can no longer fail, if it cannot
    tolerance: tuple[float | None, float | None] | None = None  # approx (rel, abs)
    raises: tuple[str, ...] = ()  # exception names for raises-style assertions
    match: str | None = None  # raises(..., match=) pattern

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.subject, self.op, self.expected)


@dataclass
class TestFacts:
    id: str  # relpath::Class::name
    name: str
    line: int
    collected: bool
    assertions: list[Assertion] = field(default_factory=list)
    skips: list[str] = field(default_factory=list)  # unconditional skip markers/calls
    xfails: list[str] = field(default_factory=list)
    strict_false: bool = False
    parametrize_cases: int | None = None
    parametrize_values: list[str] = field(default_factory=list)  # canonical cases
    body_hash: str = ""
    patched: list[str] = field(default_factory=list)  # names monkeypatched in the test
    calls: frozenset[str] = frozenset()  # names the test calls

    @property
    def live_assertions(self) -> list[Assertion]:
        return [a for a in self.assertions if a.silenced is None]

    @property
    def fingerprint(self) -> frozenset[tuple[str, str, str | None]]:
        return frozenset(a.key for a in self.assertions)


def test_facts(source: SourceFile, relpath: str) -> dict[str, TestFacts]:
    """Facts for every top-level function and method of a top-level class (a test renamed
    out of collection is still found by its body); ``collected`` tells the tests."""
    module = PythonModule(source, is_test_file=True)
    return facts_of(module, module.functions, relpath, module_marks(source))


def module_marks(source: SourceFile) -> tuple[list[str], list[str]]:
    """(skips, xfails) that the module's ``pytestmark`` gives every test in it."""
    return _marks(source, _pytestmark(source, source.tree.root_node))


def facts_of(
    module: PythonModule,
    functions: Iterable[Function],
    relpath: str,
    marks: tuple[list[str], list[str]],
    lookup: Callable[[str], Node | None] | None = None,
) -> dict[str, TestFacts]:
    """:func:`test_facts` for some of ``module``'s functions (a module collected over some
    top-level statements only: see checks/guard/live.py), ``marks`` being the module's
    :func:`module_marks`. ``lookup``: how a parametrize table named by a module constant
    is found (default: :func:`module_value`)."""
    source = module.source
    find = lookup if lookup is not None else functools.partial(module_value, source)
    facts: dict[str, TestFacts] = {}
    for fn in functions:
        if fn.is_nested or (fn.class_ is not None and fn.class_.nested):
            continue
        test_id = (
            f"{relpath}::{fn.class_.name}::{fn.name}" if fn.class_ else f"{relpath}::{fn.name}"
        )
        runs = fn.is_test and (fn.class_ is None or _collected_class(fn.class_))
        facts[test_id] = _facts_of(module, fn, test_id, runs, find)
        skips, xfails = marks
        if fn.class_ is not None:
            class_skips, class_xfails = _class_marks(source, fn.class_.node)
            skips, xfails = skips + class_skips, xfails + class_xfails
        facts[test_id].skips[:0] = skips
        facts[test_id].xfails[:0] = xfails
    return facts


def _collected_class(cls: Class) -> bool:
    """Whether pytest collects a class's methods: a ``Test*`` class, or one with a base
    class (it may be a ``unittest.TestCase``, collected whatever its name)."""
    return cls.name.startswith("Test") or any(b not in ("object", "") for b in cls.bases)


def _pytestmark(source: SourceFile, scope: Node) -> list[Node]:
    """The marker expressions of a ``pytestmark = ...`` statement directly in ``scope``
    (a module, or a class body)."""
    marks: list[Node] = []
    for stmt in scope.named_children:
        if stmt.type != "expression_statement" or not stmt.named_children:
            continue
        assign = stmt.named_children[0]
        if assign.type != "assignment":
            continue
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        if left is None or right is None or source.node_text(left) != "pytestmark":
            continue
        right = unwrap(right)
        marks.extend(right.named_children if right.type in ("list", "tuple") else [right])
    return marks


def _marks(source: SourceFile, exprs: list[Node]) -> tuple[list[str], list[str]]:
    """(skips, xfails) among marker expressions that apply to every test in a scope."""
    skips: list[str] = []
    xfails: list[str] = []
    for expr in exprs:
        kind = _marker_kind(source, expr)
        if kind == "skip":
            skips.append(source.node_text(expr))
        elif kind == "xfail":
            xfails.append(source.node_text(expr))
    return skips, xfails


def _class_marks(source: SourceFile, class_node: Node) -> tuple[list[str], list[str]]:
    """(skips, xfails) a class's decorators and ``pytestmark`` give each of its tests."""
    exprs: list[Node] = []
    parent = class_node.parent
    if parent is not None and parent.type == "decorated_definition":
        exprs.extend(
            c.named_children[0]
            for c in parent.named_children
            if c.type == "decorator" and c.named_children
        )
    body = class_node.child_by_field_name("body")
    if body is not None:
        exprs.extend(_pytestmark(source, body))
    return _marks(source, exprs)


def _marker_kind(source: SourceFile, expr: Node) -> str | None:
    """What a marker does to every test it applies to: "skip" when it skips them
    unconditionally (``skip``, or ``skipif`` on a constant true condition), "xfail" when
    it expects them to fail, else None."""
    call = expr if expr.type == "call" else None
    target = expr.child_by_field_name("function") if call is not None else expr
    name = source.node_text(target) if target is not None else ""
    if _XFAIL_DECORATOR.search(name):
        return "xfail"
    if not _SKIP_DECORATOR.search(name):
        return None
    if not name.endswith(("skipIf", "skipUnless", "skipif")):
        return "skip"
    args = call_arguments(call) if call is not None else []
    if not args:
        return None
    truth = literal_truth(source, args[0])
    if truth is None or unwrap(args[0]).type in ("string", "concatenated_string"):
        return None  # a real condition (pytest evaluates a string condition)
    skips = not truth if name.endswith("skipUnless") else truth
    return "skip" if skips else None


def _facts_of(
    module: PythonModule,
    fn: Function,
    test_id: str,
    collected: bool,
    lookup: Callable[[str], Node | None],
) -> TestFacts:
    source = module.source
    facts = TestFacts(
        id=test_id,
        name=fn.name,
        line=fn.node.start_point.row + 1,
        collected=collected,
        body_hash=hashlib.sha1(squash(source.node_text(fn.body)).encode()).hexdigest(),
        calls=frozenset(name for name, _ in fn.calls),
    )
    early_return = next((s for s in fn.statements if s.type == "return_statement"), None)
    literals = _assigned_literals(source, fn)
    for node in module.assertion_nodes(fn):
        assertion = _assertion(source, node, literals)
        if assertion is None:
            continue
        why = _silenced(source, node, fn.node, early_return)
        if why is not None:
            assertion = Assertion(**{**assertion.__dict__, "silenced": why})
        facts.assertions.append(assertion)
    _decorators(source, fn, facts, lookup)
    for stmt in fn.statements:
        text = squash(source.node_text(stmt))
        if re.match(r"^(pytest\.skip|self\.skipTest)\(|^raise(unittest\.)?SkipTest", text):
            facts.skips.append(source.node_text(stmt).strip())
        if re.match(r"^pytest\.xfail\(", text):
            facts.xfails.append(source.node_text(stmt).strip())
    facts.patched = _patched_names(source, fn)
    return facts


def _assertion(
    source: SourceFile, node: Node, literals: dict[str, tuple[str, int]] | None = None
) -> Assertion | None:
    """``node`` as a fact. ``literals`` (see :func:`_assigned_literals`): the expected
    side of an equality that names one reads as the literal, as if written in place."""
    line = node.start_point.row + 1
    text = source.node_text(node)

    def expected_of(value: Node) -> str:
        value = unwrap(value)
        if value.type == "identifier" and literals:
            found = literals.get(source.node_text(value))
            if found is not None and found[1] <= node.start_byte:
                return found[0]
        return canonical(source.node_text(value))

    if node.type == "assert_statement":
        cond = unwrap(node.named_children[0]) if node.named_children else None
        if cond is None:
            return None
        if cond.type == "comparison_operator" and cond.named_child_count == 2:
            left, right = cond.named_children
            op = " ".join(source.node_text(c) for c in cond.children if not c.is_named)
            tolerance = _approx(source, right) or _approx(source, left)
            if tolerance is not None:
                return Assertion(
                    canonical(source.node_text(left)),
                    "approx",
                    expected_of(_approx_value(right)),
                    line,
                    text,
                    tolerance=tolerance,
                )
            return Assertion(
                canonical(source.node_text(left)),
                op,
                expected_of(right) if op == "==" else canonical(source.node_text(right)),
                line,
                text,
            )
        if cond.type == "not_operator":
            inner = cond.child_by_field_name("argument")
            return Assertion(canonical(source.node_text(inner or cond)), "falsy", None, line, text)
        if cond.type == "call":
            callee = cond.child_by_field_name("function")
            if callee is not None and source.node_text(callee) == "isinstance":
                args = call_arguments(cond)
                if len(args) == 2:
                    return Assertion(
                        canonical(source.node_text(args[0])),
                        "isinstance",
                        canonical(source.node_text(args[1])),
                        line,
                        text,
                    )
        return Assertion(canonical(source.node_text(cond)), "truthy", None, line, text)
    if node.type == "call":
        callee = node.child_by_field_name("function")
        if callee is None:
            return None
        _, method = callee_parts(source, callee)
        args = call_arguments(node)
        if method in _RAISES:
            names = _exception_names(source, args[0]) if args else ()
            pattern = keyword_argument(source, node, "match")
            if pattern is None and method.endswith("Regex") and len(args) > 1:
                pattern = args[1]
            # assertRaisesRegex is assertRaises with a pattern: the same assertion.
            return Assertion(
                f"raises:{method.removesuffix('Regex')}",
                "raises",
                ",".join(names),
                line,
                text,
                raises=names,
                match=source.node_text(pattern) if pattern is not None else None,
            )
        if method in _METHODS and args:
            op, subject_index, expected_index = _METHODS[method]
            if subject_index >= len(args):
                return None
            expected = None
            if expected_index is not None and expected_index < len(args):
                value = args[expected_index]
                if op in ("==", "approx"):
                    expected = expected_of(value)
                else:
                    expected = canonical(source.node_text(value))
            elif method in ("assertIsNone", "assertIsNotNone"):
                expected = "None"
            return Assertion(
                canonical(source.node_text(args[subject_index])),
                op,
                expected,
                line,
                text,
                tolerance=_almost_equal(source, node, args) if op == "approx" else None,
            )
        return Assertion(canonical(text), "call", None, line, text)
    if node.type == "raise_statement":
        return Assertion(squash(text), "raise", None, line, text)
    return None


def _assigned_literals(source: SourceFile, fn: Function) -> dict[str, tuple[str, int]]:
    """The test's locals bound exactly once, by a ``name = <literal>`` statement of its
    body: name -> (the literal, canonical; the byte where that statement ends). An
    equality's expected side that names one is that literal (arbitration fixes the
    literal there: checks/arbitration/isolate.py)."""
    candidates: dict[str, tuple[str, int]] = {}
    for stmt in statements(fn.body):
        assign = stmt.named_children[0] if stmt.type == "expression_statement" else None
        if assign is None or assign.type != "assignment":
            continue
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier":
            continue
        value = source.node_text(unwrap(right))
        try:
            ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        candidates[source.node_text(left)] = (canonical(value), stmt.end_byte)
    if not candidates:
        return {}
    bindings = binding_counts(source, fn.node, candidates)
    return {name: found for name, found in candidates.items() if bindings[name] == 1}


def _exception_names(source: SourceFile, node: Node) -> tuple[str, ...]:
    node = unwrap(node)
    items = node.named_children if node.type == "tuple" else [node]
    return tuple(sorted(source.node_text(i).rsplit(".", 1)[-1] for i in items))


def _approx(source: SourceFile, node: Node) -> tuple[float | None, float | None] | None:
    node = unwrap(node)
    if node.type != "call":
        return None
    callee = node.child_by_field_name("function")
    if callee is None or callee_parts(source, callee)[1] != "approx":
        return None
    return (
        _number(source, keyword_argument(source, node, "rel")),
        _number(source, keyword_argument(source, node, "abs")),
    )


def _almost_equal(source: SourceFile, call: Node, args: list[Node]) -> tuple[None, float | None]:
    """``assertAlmostEqual``'s tolerance as an absolute one: ``delta``, or ``10**-places``
    (``places`` defaults to 7)."""
    delta = _number(source, keyword_argument(source, call, "delta"))
    if delta is not None:
        return None, delta
    places_node = keyword_argument(source, call, "places")
    if places_node is None and len(args) > 2:
        places_node = args[2]
    places = _number(source, places_node) if places_node is not None else 7.0
    return None, (10.0**-places if places is not None else None)


def _approx_value(node: Node) -> Node:
    node = unwrap(node)
    args = call_arguments(node) if node.type == "call" else []
    return args[0] if args else node


def _number(source: SourceFile, node: Node | None) -> float | None:
    if node is None:
        return None
    try:
        return float(source.node_text(node).replace("_", ""))
    except ValueError:
        return None


def _silenced(source: SourceFile, node: Node, fn: Node, early: Node | None) -> str | None:
    """Why an assertion can no longer fail: swallowed, unreachable or under a false
    condition; None when it can."""
    if early is not None and node.start_byte > early.end_byte:
        return f"after the unconditional `return` on line {early.start_point.row + 1}"
    raised = _raises_itself(source, node)
    if raised is not None:
        return raised
    child, parent = node, node.parent
    while parent is not None and parent != fn:
        if parent.type == "function_definition" and not _referenced(source, parent, fn):
            name = parent.child_by_field_name("name")
            return (
                f"in the nested function `{source.node_text(name) if name else '?'}` on line "
                f"{parent.start_point.row + 1}, which the test never calls or passes on"
            )
        if parent.type == "try_statement" and parent.child_by_field_name("body") == child:
            for handler in parent.named_children:
                if handler.type == "except_clause" and handler_swallows(
                    source, handler, _keeps_failure
                ):
                    return (
                        f"inside the `try` on line {parent.start_point.row + 1}, whose "
                        "`except` swallows failures"
                    )
        if parent.type == "if_statement" and parent.child_by_field_name("consequence") == child:
            condition = parent.child_by_field_name("condition")
            if condition is not None and source.node_text(condition).strip() in (
                "False",
                "0",
                "None",
                "''",
                '""',
            ):
                return (
                    f"under `if {source.node_text(condition)}:` on line "
                    f"{parent.start_point.row + 1}, which never runs"
                )
        if parent.type == "with_statement" and "suppress(" in source.node_text(
            parent.named_children[0]
        ):
            return f"inside `contextlib.suppress` on line {parent.start_point.row + 1}"
        child, parent = parent, parent.parent
    return None


def _raises_itself(source: SourceFile, node: Node) -> str | None:
    """``with pytest.raises(E): raise E(...)``: the block raises the exception itself,
    so the assertion passes whatever the code does."""
    item = node.parent
    if node.type != "call" or item is None or item.type != "with_item":
        return None
    statement = item.parent.parent if item.parent is not None else None
    body = statement.child_by_field_name("body") if statement is not None else None
    if statement is None or statement.type != "with_statement" or body is None:
        return None
    stmts = [c for c in body.named_children if c.type != "comment"]
    if stmts and all(c.type == "raise_statement" for c in stmts):
        return (
            f"satisfied by the `raise` in its own `with` block on line "
            f"{stmts[0].start_point.row + 1}, not by the code under test"
        )
    return None


def _referenced(source: SourceFile, nested: Node, fn: Node) -> bool:
    """Whether the test uses a function nested in it (calls it, passes it on): its name
    appears in the test outside its own definition, or a decorator registers it."""
    if nested.parent is not None and nested.parent.type == "decorated_definition":
        return True
    name = nested.child_by_field_name("name")
    if name is None:
        return True
    data = source.data
    outside = data[fn.start_byte : nested.start_byte] + data[nested.end_byte : fn.end_byte]
    pattern = rf"\b{re.escape(source.node_text(name))}\b".encode()
    return re.search(pattern, outside) is not None


def _keeps_failure(name: str) -> bool:
    """A call in an ``except`` body that fails the test again."""
    return name.startswith("assert") or name == "fail"


def _decorators(
    source: SourceFile, fn: Function, facts: TestFacts, lookup: Callable[[str], Node | None]
) -> None:
    parent = fn.node.parent
    if parent is None or parent.type != "decorated_definition":
        return
    for decorator in (c for c in parent.named_children if c.type == "decorator"):
        expr = decorator.named_children[0] if decorator.named_children else None
        if expr is None:
            continue
        call = expr if expr.type == "call" else None
        target = expr.child_by_field_name("function") if call is not None else expr
        name = source.node_text(target) if target is not None else ""
        text = source.node_text(decorator)
        kind = _marker_kind(source, expr)
        if kind == "skip":
            facts.skips.append(text)
        elif kind == "xfail":
            facts.xfails.append(text)
            strict = keyword_argument(source, call, "strict") if call is not None else None
            if strict is not None and source.node_text(strict) == "False":
                facts.strict_false = True
        elif name.endswith("parametrize") and call is not None:
            args = call_arguments(call)
            if len(args) >= 2:
                values = unwrap(args[1])
                if values.type == "identifier":  # a table kept in a module-level constant
                    values = lookup(source.node_text(values)) or values
                if values.type in ("list", "tuple", "set"):
                    cases = [c for c in values.named_children if c.type != "comment"]
                    facts.parametrize_cases = (facts.parametrize_cases or 0) + len(cases)
                    facts.parametrize_values.extend(_case(source.node_text(c)) for c in cases)
                    for case in cases:
                        _case_marks(source, case, facts)


def module_value(source: SourceFile, name: str) -> Node | None:
    """The value last assigned to ``name`` at module level (``CASES = [...]``)."""
    value = None
    for stmt in source.tree.root_node.named_children:
        assign = stmt.named_children[0] if stmt.type == "expression_statement" else None
        if assign is None or assign.type != "assignment":
            continue
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        if left is not None and right is not None and source.node_text(left) == name:
            value = unwrap(right)
    return value


def _case_marks(source: SourceFile, case: Node, facts: TestFacts) -> None:
    """A ``pytest.param(..., marks=...)`` case's skip and xfail marks."""
    if case.type != "call":
        return
    marks = keyword_argument(source, case, "marks")
    if marks is None:
        return
    marks = unwrap(marks)
    skips, xfails = _marks(
        source, marks.named_children if marks.type in ("list", "tuple") else [marks]
    )
    facts.skips.extend(skips)
    facts.xfails.extend(xfails)


_PATCH = re.compile(
    r"(?:monkeypatch\.setattr|patch\.object|mock\.patch\.object)\(\s*[\w.]+\s*,\s*['\"](\w+)['\"]"
    r"|(?:monkeypatch\.setattr|patch|mock\.patch)\(\s*['\"][\w.]*?\.?(\w+)['\"]"
)


def _patched_names(source: SourceFile, fn: Function) -> list[str]:
    text = source.node_text(fn.node)
    return [a or b for a, b in _PATCH.findall(text)]
