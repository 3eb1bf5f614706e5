"""The failing assertion as the test's other cases ran it: the suite's examples that no
static reading finds.

A parametrized test whose values come from a fixture (``output`` built from the case's
``branch_name``), a helper or a computation passes for its other cases, and each of them
is an assertion about the function its author committed to — as ``assert f(1) == 2``
written out is. They are read from a second run of the test's cases with the recorder
watching the failing assertion's line (:data:`~referee.checks.arbitration.WATCH_ENV`): the
test frame's locals there, each time a case reached it, are taken apart as the failing
assertion was (:func:`~referee.checks.arbitration.isolate.isolate`, with those locals as
the recorded ones), and each call of the same function with a literal expected value is
one example. Likewise the iterations of a loop that reached the assertion before the
failing one, in the failing test itself.

Kept only as the suite's other examples are (:mod:`~referee.checks.arbitration.suite`):
the lines they are written on — the assertion, the case's rows in the parametrize lists,
a fixture the test takes, from the test module or the nearest ``conftest.py`` that
defines it — not changed in the working diff;
never the failing call's arguments; and only those the current code passes, run again in
the sandbox.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from referee.checks.arbitration.bindings import Bindings
from referee.checks.arbitration.isolate import isolate
from referee.checks.arbitration.observe import TestRecord, TestRun, same_test
from referee.checks.arbitration.sites import Isolated, NotIsolated, TestRef, find_test, is_literal
from referee.checks.arbitration.suite_reading import Found
from referee.checks.pymodule import Function, PythonModule
from referee.checks.source import SourceFile

MAX_PER_CASE = 20  # iterations of one case read
MAX_FOUND = 36  # examples read in all (the suite keeps 12): a table of hundreds of cases
_OPS = frozenset({"==", "is"})  # what an example states: the call's value
_BOOLEAN = frozenset({"truthy", "falsy"})  # ... or its truth
# a test that collects its failures and goes on (unittest's subTest, pytest-subtests)
_COLLECTS = ("subTest", "subtests")


@dataclass
class Cases:
    """What the test's cases gave: the examples, and how many times a passing case
    reached the line without giving one (another call, a value that is no literal)."""

    found: list[Found] = field(default_factory=list)
    no_example: int = 0


def sibling_examples(
    source: SourceFile,
    test: TestRef,
    failing_id: str,
    isolated: Isolated,
    name: str,
    run: TestRun,
    project_callees: frozenset[str] | None = None,
    root: Path | None = None,
    project_classes: frozenset[str] = frozenset(),
) -> Cases:
    """The examples the cases in ``run`` (a run of ``test``'s cases watching
    ``isolated.line``) give ``name``, the function under test: see the module's
    docstring. The failing case gives those of its iterations before the failing one."""
    module = PythonModule(source, is_test_file=True)
    # the test module's own top-level functions: the fixtures it defines itself
    own = {
        f.name: (f.node.start_point.row + 1, f.node.end_point.row + 1)
        for f in module.functions
        if f.parent is None and f.class_ is None
    }
    cases = Cases()
    for record in run.records:
        if record.when != "call" or not record.watched:
            continue
        try:
            ref = TestRef.parse(record.nodeid)
            fn = find_test(module, ref)
        except (ValueError, NotIsolated):
            continue
        if any(word in source.node_text(fn.node) for word in _COLLECTS):
            continue  # its failures are collected and it goes on: no hit is told passing
        hits = _passing_hits(record, failing_id, isolated.line)
        # the fixtures the case took: the module's own, or a conftest.py's
        taken = _fixture_names(source, fn, record.indices)
        spans = [
            (isolated.line, isolated.end_line),
            *Bindings(source, module, fn, record.indices, isolated.line - 1).case_lines(),
            *(own[name] for name in sorted(taken & own.keys())),
        ]
        elsewhere = _conftest_fixtures(root, test.path, taken - own.keys())
        for hit in hits[:MAX_PER_CASE]:
            try:
                other = isolate(
                    source,
                    ref,
                    isolated.line,
                    record.indices,
                    hit,
                    project_callees,
                    project_classes,
                )
            except NotIsolated:
                other = None
            example = (
                _example(other, isolated, name, test.path, spans, record, failing_id)
                if other is not None
                else None
            )
            if example is None:
                cases.no_example += 1
                continue
            cases.found.append(replace(example, elsewhere=elsewhere))
            if len(cases.found) >= MAX_FOUND:
                return cases
    return cases


def worth_running(source: SourceFile, test: TestRef, line: int) -> bool:
    """Whether the test's cases can give the assertion on ``line`` other values: the
    test is a case of a parametrized one, or the assertion is in a loop of the test."""
    if test.param_id is not None:
        return True
    try:
        fn = find_test(PythonModule(source, is_test_file=True), test)
    except NotIsolated:
        return False
    row = line - 1
    stack = [fn.body]
    while stack:
        node = stack.pop()
        if not (node.start_point.row <= row <= node.end_point.row):
            continue
        if node.type in ("for_statement", "while_statement"):
            return True
        if node.type not in ("function_definition", "class_definition", "lambda"):
            stack.extend(node.named_children)
    return False


def _passing_hits(record: TestRecord, failing_id: str, line: int) -> list[dict[str, str]]:
    """The locals of the times ``record``'s test reached the watched line and went on: a
    passing test's every one; a failing test's all but the last. None where a comparison
    failed there and the test went on (a failure something caught)."""
    failures = [c for c in record.comparisons if c.get("line") == line]
    if record.outcome == "passed":
        return [] if failures else list(record.watched)
    if record.outcome != "failed" or not same_test(record.nodeid, failing_id):
        return []
    return [] if len(failures) > 1 else list(record.watched[:-1])


def _example(
    other: Isolated,
    failing: Isolated,
    name: str,
    path: str,
    spans: list[tuple[int, int]],
    record: TestRecord,
    failing_id: str,
) -> Found | None:
    """``other`` as an example of ``name``: a call of the same function, or the same
    method on an object built from the same class (written in the oracle contract:
    ``m((args,), {kwargs}, ...)``), with no projection, compared with a literal, else
    None. A case that asserts its value true (``assert f(x)``, ``assertFalse(f(x))``) is
    the example ``bool(f(x)) == True`` (``False``), as the suite's are."""
    boolean = other.op in _BOOLEAN and other.wrapper in (None, "bool")
    if (
        other.callee != failing.callee
        or other.constructor != failing.constructor
        or other.projection
        or (other.op not in _OPS and not boolean)
        or (other.op == "is" and other.expected.text.strip() not in ("None", "True", "False"))
        or not is_literal(other.expected.text)
    ):
        return None
    call = f"{name}({other.oracle_arguments})"
    if boolean:
        call = f"bool({call})"
    elif other.wrapper:
        call = f"{other.wrapper}({call})"
    case = record.nodeid.partition("[")[2].rstrip("]")
    where = "this case's earlier iteration" if same_test(record.nodeid, failing_id) else case
    return Found(
        call=call,
        arguments=other.oracle_arguments,
        want=other.expected.text.strip(),
        path=path,
        line=other.line,
        spans=tuple(spans),
        text=f"{other.assertion.splitlines()[0].strip()}  [{where}]",
        in_failing_test=True,
        definitions=other.definitions,
        known=bool(other.definitions),
    )


def _fixture_names(source: SourceFile, fn: Function, indices: dict[str, int]) -> set[str]:
    """The parameters the test takes that no parametrize list gives: fixtures."""
    parameters = fn.node.child_by_field_name("parameters")
    if parameters is None:
        return set()
    return (
        {
            source.node_text(p if p.type == "identifier" else p.named_children[0])
            for p in parameters.named_children
            if p.type == "identifier" or p.named_children
        }
        - set(indices)
        - {"self"}
    )


def _conftest_fixtures(
    root: Path | None, test_path: str, names: set[str]
) -> tuple[tuple[str, int, int], ...]:
    """(conftest path, first line, last line) of each of ``names`` a ``conftest.py`` from
    the test's directory up to the project's root defines at its top level — the nearest
    one, as pytest finds it."""
    if root is None or not names:
        return ()
    found: list[tuple[str, int, int]] = []
    left = set(names)
    directory = PurePosixPath(test_path).parent
    while left:
        relpath = str(directory / "conftest.py") if str(directory) != "." else "conftest.py"
        try:
            tree = ast.parse((root / relpath).read_bytes())
        except (OSError, SyntaxError, ValueError):
            tree = None
        for node in tree.body if tree is not None else []:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in left:
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                found.append((relpath, first, node.end_lineno or node.lineno))
                left.discard(node.name)
        if str(directory) in (".", "", "/"):
            break
        directory = directory.parent
    return tuple(found)
