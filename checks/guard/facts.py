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

from referee.checks.guard.asserted import (
    Assertion,
    assertion_of,
    assigned_literals,
    fold_message_checks,
    silenced_by,
    try_fail_checks,
)
from referee.checks.guard.feeds import (
    Statement,
    bound_names,
    feeds_of,
    in_nested_function,
    local_renamer,
    parameters_of,
    setup_statements,
)
from referee.checks.guard.markers import (
    canonical_condition,
    check_condition,
    class_marks,
    enclosing_condition,
    marker,
    marks_of,
    module_marks,
    pytestmark_of,
    string_literal,
)
from referee.checks.guard.normal import (
    canonical,
    parse_expression,
    squash,
    squash_lines,
    unparse,
)
from referee.checks.nodes import (
    call_arguments,
    keyword_argument,
    unwrap,
)
from referee.checks.pymodule import Class, Function, PythonModule, callee_parts
from referee.checks.source import SourceFile

__all__ = [
    "Relaxation",
    "TestFacts",
    "canonical",
    "squash",
    "squash_lines",
    "test_facts",
]


def _case(text: str) -> str:
    """A parametrize case, canonical; ``pytest.param(a, b, id=..., marks=...)`` reads as
    ``(a, b)``: renaming a case changes nothing it asserts, and its skip and xfail marks
    are counted with the test's."""
    values = case_values(text)
    if values is None:
        return canonical(text)
    if len(values) == 1:
        return values[0]
    return canonical("(" + ", ".join(values) + ",)")


def case_values(text: str) -> list[str] | None:
    found = _case_values(text)
    return list(found) if found is not None else None


@functools.lru_cache(maxsize=16384)
def _case_values(text: str) -> tuple[str, ...] | None:
    """A parametrize case's values, each canonical: ``pytest.param(a, b, id=...)`` and
    ``(a, b)`` and ``[a, b]`` give ``[a, b]``; a single value gives ``[value]``. None when
    the case is not written out (``*rows``)."""
    node = parse_expression(text)
    if node is None:
        return None
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Call)
        and ".mark." in f".{unparse(node.func.func)}"
        and len(node.args) == 1
    ):
        node = node.args[0]  # pytest < 4: pytest.mark.skipif(...)((a, b)) marks a case
    if (
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "param")
            or (isinstance(node.func, ast.Name) and node.func.id == "param")
        )
        and not any(isinstance(a, ast.Starred) for a in node.args)
    ):
        items = node.args
        if len(items) != 1:
            return tuple(canonical(unparse(i)) for i in items)
        node = items[0]
        return (canonical(unparse(node)),)
    return (canonical(unparse(node)),)


def row_values(text: str, width: int) -> list[str] | None:
    """A case's values for ``width`` argnames: a tuple or list row is spread over them
    (pytest does not care which of the two it is); None when it cannot be."""
    values = case_values(text)
    if values is None:
        return None
    if width == 1:
        if len(values) == 1:
            return values
        return [canonical("(" + ", ".join(values) + ",)")]
    if len(values) == width:
        return values
    if len(values) == 1:
        node = parse_expression(values[0])
        if (
            isinstance(node, (ast.Tuple, ast.List))
            and len(node.elts) == width
            and not any(isinstance(e, ast.Starred) for e in node.elts)
        ):
            return [canonical(unparse(e)) for e in node.elts]
    return None


@dataclass(frozen=True)
class Relaxation:
    """A skip or an xfail that applies only sometimes: ``skipif(cond)``, ``xfail(cond)``,
    ``pytest.importorskip("x")``, a ``pytest.skip()`` inside an ``if``. ``condition`` is
    canonical (what is compared); ``text`` is how it is written (what is quoted)."""

    kind: str  # "skip" or "xfail"
    condition: str
    text: str
    line: int


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
    # The parametrize tables as written out: the argnames, and one row of canonical
    # values per case (several decorators multiply); None when a table is not literal.
    argnames: tuple[str, ...] = ()
    rows: list[tuple[str, ...]] | None = None
    relaxations: list[Relaxation] = field(default_factory=list)  # conditional skip/xfail
    params: tuple[str, ...] = ()  # the test function's parameters (fixtures)
    names: frozenset[str] = frozenset()  # every name the test's text mentions
    local_names: frozenset[str] = frozenset()  # names the test binds (parameters included)

    @property
    def fingerprint(self) -> frozenset[tuple[str, str, str | None]]:
        return frozenset(a.key for a in self.assertions)


def test_facts(source: SourceFile, relpath: str) -> dict[str, TestFacts]:
    """Facts for every top-level function and method of a top-level class (a test renamed
    out of collection is still found by its body); ``collected`` tells the tests."""
    module = PythonModule(source, is_test_file=True)
    return facts_of(module, module.functions, relpath, module_marks(source))


def module_relaxations(source: SourceFile) -> list[Relaxation]:
    """Conditional skips and xfails that apply to a whole module or class: a
    conditional marker in ``pytestmark`` or on a top-level class, a module-level
    ``pytest.importorskip()``, a module-level ``pytest.skip(..., allow_module_level=True)``
    under an ``if``. Each one's ``text`` starts with its scope ("" for the module, else
    the class name) and a NUL."""
    out: list[Relaxation] = []
    root = source.tree.root_node
    text = source.text
    if not any(word in text for word in ("skip", "xfail", "importorskip", "expectedFailure")):
        return out

    def add(scope: str, exprs: list[Node]) -> None:
        for expr in exprs:
            found = marker(source, expr)
            if found is not None and found[1] is not None:
                out.append(
                    Relaxation(
                        found[0],
                        canonical_condition(found[1]),
                        f"{scope}\0{found[1]}",
                        expr.start_point.row + 1,
                    )
                )

    add("", pytestmark_of(source, root))
    for stmt in root.named_children:
        node = stmt
        if stmt.type == "decorated_definition":
            node = stmt.child_by_field_name("definition") or stmt
            if node.type == "class_definition":
                name = node.child_by_field_name("name")
                add(
                    source.node_text(name) if name is not None else "?",
                    [
                        c.named_children[0]
                        for c in stmt.named_children
                        if c.type == "decorator" and c.named_children
                    ],
                )
        if node.type == "class_definition":
            body = node.child_by_field_name("body")
            name = node.child_by_field_name("name")
            if body is not None:
                add(
                    source.node_text(name) if name is not None else "?", pytestmark_of(source, body)
                )
            continue
        if stmt.type in ("function_definition", "decorated_definition"):
            continue
        statement = source.node_text(stmt)
        if "importorskip" in statement:
            for match in re.finditer(r"importorskip\(\s*([^,)]+)", statement):
                module_name = string_literal(match.group(1).strip())
                out.append(
                    Relaxation(
                        "skip",
                        f"import {module_name} fails",
                        f"\0import {module_name} fails",
                        stmt.start_point.row + 1,
                    )
                )
        elif stmt.type == "if_statement" and re.search(r"\bskip\(", statement):
            condition = stmt.child_by_field_name("condition")
            if condition is not None:
                written = " ".join(source.node_text(condition).split())
                out.append(
                    Relaxation(
                        "skip",
                        canonical_condition(written),
                        f"\0{written}",
                        stmt.start_point.row + 1,
                    )
                )
    return out


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
            class_skips, class_xfails = class_marks(source, fn.class_.node)
            skips, xfails = skips + class_skips, xfails + class_xfails
        facts[test_id].skips[:0] = skips
        facts[test_id].xfails[:0] = xfails
    return facts


def _collected_class(cls: Class) -> bool:
    """Whether pytest collects a class's methods: a ``Test*`` class, or one with a base
    class (it may be a ``unittest.TestCase``, collected whatever its name)."""
    return cls.name.startswith("Test") or any(b not in ("object", "") for b in cls.bases)


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
    literals = assigned_literals(source, fn)
    setup: list[Statement] | None = None
    renamed: Callable[[str], str] = str
    for node in module.assertion_nodes(fn):
        if node.type == "raise_statement" and in_nested_function(node, fn.node):
            continue  # a callback that raises is behaviour the test sets up, not a check
        assertion = assertion_of(source, node, literals)
        if assertion is None:
            continue
        why = silenced_by(source, node, fn.node, early_return)
        if setup is None:
            checks = {n.start_byte for n in module.assertion_nodes(fn)}
            setup = setup_statements(source, fn.body, checks)
            renamed = local_renamer(setup, parameters_of(source, fn.node))
        # A local holding a literal that the assertion reads as that literal (its key
        # holds the value) is no input: renaming it, or inlining it, changes nothing.
        written = set(re.findall(r"[A-Za-z_]\w*", f"{assertion.subject} {assertion.expected}"))
        inlined = {name for name in literals if name not in written}
        changes: dict[str, object] = {
            "feeds": feeds_of(source, node, setup, renamed, inlined),
            "condition": check_condition(source, node, fn.body),
        }
        if why is not None:
            changes["silenced"] = why
        assertion = Assertion(**{**assertion.__dict__, **changes})
        facts.assertions.append(assertion)
    facts.assertions = fold_message_checks(try_fail_checks(source, fn.node, facts.assertions))
    _decorators(source, fn, facts, lookup)
    for stmt in fn.statements:
        text = squash(source.node_text(stmt))
        if re.match(r"^(pytest\.skip|self\.skipTest)\(|^raise(unittest\.)?SkipTest", text):
            facts.skips.append(source.node_text(stmt).strip())
        if re.match(r"^pytest\.xfail\(", text):
            facts.xfails.append(source.node_text(stmt).strip())
    facts.relaxations.extend(_imperative_relaxations(source, fn))
    facts.patched = _patched_names(source, fn)
    facts.params = parameters_of(source, fn.node) + facts.params  # and usefixtures
    facts.local_names = frozenset(facts.params) | bound_names(source, fn.body)
    facts.names = frozenset(re.findall(r"[A-Za-z_]\w*", source.node_text(fn.node)))
    return facts


_RELAXING_CALLS = frozenset({"skip", "xfail", "importorskip", "skipTest"})


def _imperative_relaxations(source: SourceFile, fn: Function) -> list[Relaxation]:
    """``pytest.skip()`` / ``pytest.xfail()`` / ``self.skipTest()`` under a condition of
    the test's body, and ``pytest.importorskip()`` anywhere in it."""
    found = []
    for name, call in fn.calls:
        if name not in _RELAXING_CALLS:
            continue
        callee = call.child_by_field_name("function")
        receiver = callee_parts(source, callee)[0] if callee is not None else ""
        if receiver not in ("pytest", "", "self", "cls"):
            continue
        kind = "xfail" if name == "xfail" else "skip"
        if name == "importorskip":
            args = call_arguments(call)
            module_name = source.node_text(args[0]) if args else "?"
            condition = f"import {string_literal(module_name)} fails"
            found.append(Relaxation(kind, condition, condition, call.start_point.row + 1))
            continue
        condition = enclosing_condition(source, call, fn.body)
        if condition is not None:
            found.append(
                Relaxation(
                    kind, canonical_condition(condition), condition, call.start_point.row + 1
                )
            )
    return found


_MAX_ROWS = 400  # parametrize rows expanded (several tables multiply)


def _decorators(
    source: SourceFile, fn: Function, facts: TestFacts, lookup: Callable[[str], Node | None]
) -> None:
    """What a test's decorators say: its skip and xfail marks, the fixtures it requests,
    and its parametrize tables (combined, one row per case)."""
    parent = fn.node.parent
    if parent is None or parent.type != "decorated_definition":
        return
    tables: list[_Table] = []
    for decorator in (c for c in parent.named_children if c.type == "decorator"):
        expr = decorator.named_children[0] if decorator.named_children else None
        if expr is None:
            continue
        call = expr if expr.type == "call" else None
        target = expr.child_by_field_name("function") if call is not None else expr
        name = source.node_text(target) if target is not None else ""
        found = marker(source, expr)
        if found is None and expr.type == "identifier":
            # `skip_py314 = pytest.mark.skipif(...)` at module level, `@skip_py314` here
            value = lookup(source.node_text(expr))
            if value is not None and value.type == "call":
                found = marker(source, value)
                call = value
        if found is not None:
            _add_mark(source, decorator, call, found, facts)
        elif name.endswith("usefixtures") and call is not None:
            for arg in call_arguments(call):  # a parametrized fixture it requests
                value = parse_expression(source.node_text(arg))
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    facts.params += (value.value,)
        elif name.endswith("parametrize") and call is not None:
            table = _parametrize_table(source, call, facts, lookup)
            if table is not None:
                tables.append(table)
    if tables:
        _combine_tables(tables, facts)


# A parametrize table: its argnames, and its rows (None when not read row by row).
_Table = tuple[tuple[str, ...], list[tuple[str, ...]] | None]


def _add_mark(
    source: SourceFile,
    decorator: Node,
    call: Node | None,
    found: tuple[str, str | None],
    facts: TestFacts,
) -> None:
    """A skip or xfail mark: unconditional, or a relaxation under its condition."""
    kind, condition = found
    strict = keyword_argument(source, call, "strict") if call is not None else None
    strict_false = strict is not None and source.node_text(strict) == "False"
    if condition is None:
        if kind == "skip":
            facts.skips.append(source.node_text(decorator))
        else:
            facts.xfails.append(source.node_text(decorator))
            if strict_false:
                facts.strict_false = True
        return
    condition = condition or ""
    facts.relaxations.append(
        Relaxation(kind, canonical_condition(condition), condition, decorator.start_point.row + 1)
    )
    if kind == "xfail" and strict_false:
        facts.strict_false = True


def _parametrize_table(
    source: SourceFile, call: Node, facts: TestFacts, lookup: Callable[[str], Node | None]
) -> _Table | None:
    """One ``parametrize`` decorator's table; its cases are counted in ``facts``. None
    when it has no values."""
    args = call_arguments(call)
    names_node = args[0] if args else keyword_argument(source, call, "argnames")
    values = args[1] if len(args) >= 2 else keyword_argument(source, call, "argvalues")
    if values is None:
        return None
    values = unwrap(values)
    if values.type == "identifier":  # a table kept in a module-level constant
        values = lookup(source.node_text(values)) or values
    argnames = _argnames(source, names_node) if names_node is not None else None
    if values.type not in ("list", "tuple", "set"):
        return argnames or (), None
    cases = [c for c in values.named_children if c.type != "comment"]
    facts.parametrize_cases = (facts.parametrize_cases or 0) + len(cases)
    facts.parametrize_values.extend(_case(source.node_text(c)) for c in cases)
    for case in cases:
        _case_marks(source, case, facts)
    rows: list[tuple[str, ...]] | None = None
    if argnames:
        rows = []
        for case in cases:
            row = row_values(source.node_text(case), len(argnames))
            if row is None:
                rows = None
                break
            rows.append(tuple(row))
    return argnames or (), rows


def _combine_tables(tables: list[_Table], facts: TestFacts) -> None:
    """Stacked parametrize decorators: every combination of their rows."""
    argnames: tuple[str, ...] = ()
    rows: list[tuple[str, ...]] | None = [()]
    for names, table in tables:
        argnames += names
        if rows is None or table is None or not names or len(rows) * len(table) > _MAX_ROWS:
            rows = None
            continue
        rows = [r + t for r in rows for t in table]
    facts.argnames = argnames
    facts.rows = rows


def _argnames(source: SourceFile, node: Node) -> tuple[str, ...] | None:
    """``"a, b"``, ``("a", "b")`` and ``["a", "b"]`` all give ``("a", "b")``."""
    expr = parse_expression(source.node_text(node))
    items: list[ast.expr]
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        names = tuple(n.strip() for n in expr.value.split(",") if n.strip())
        return names if all(n.isidentifier() for n in names) else None
    if isinstance(expr, (ast.Tuple, ast.List)):
        items = expr.elts
        if all(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items):
            return tuple(i.value.strip() for i in items)  # type: ignore[attr-defined]
    return None


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
    exprs = marks.named_children if marks.type in ("list", "tuple") else [marks]
    skips, xfails = marks_of(source, exprs)
    facts.skips.extend(skips)
    facts.xfails.extend(xfails)
    label = case_values(source.node_text(case))
    where = f" (case {', '.join(label)})" if label else ""
    for expr in exprs:
        found = marker(source, expr)
        if found is not None and found[1] is not None:
            facts.relaxations.append(
                Relaxation(
                    found[0],
                    canonical_condition(found[1]) + where,
                    found[1] + where,
                    expr.start_point.row + 1,
                )
            )


_PATCH = re.compile(
    r"(?:monkeypatch\.setattr|patch\.object|mock\.patch\.object)\(\s*[\w.]+\s*,\s*['\"](\w+)['\"]"
    r"|(?:monkeypatch\.setattr|patch|mock\.patch)\(\s*['\"][\w.]*?\.?(\w+)['\"]"
)


def _patched_names(source: SourceFile, fn: Function) -> list[str]:
    text = source.node_text(fn.node)
    return [a or b for a, b in _PATCH.findall(text)]
