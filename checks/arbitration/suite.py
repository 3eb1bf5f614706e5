"""The specification a function's own test suite gives it: the project's assertions about
the function that pass now and that nobody changed in the working diff.

Most real functions have no docstring; what their author committed to about them lives in
their tests. :func:`suite_examples` reads the project's test modules (the failing test's
first) for assertions that call the function by the name its module imported it under,
with literal arguments and a literal expected value::

    assert f(1, "a") == 3            assert 3 == f(1, "a")
    assert f(2) is None              self.assertEqual(f(2), [1])
    @pytest.mark.parametrize("x, want", [(1, 2), (3, 4)])  ... assert f(x) == want

It leaves out the failing test (its whole function), every assertion whose call has the
failing call's arguments (never the failing assertion or its expected value), and the
assertions on lines the working diff changed (``git diff HEAD`` and untracked files): a
specification is what was committed before the red test. :func:`passing_examples` then
keeps only those the current code satisfies, run in the sandbox: an assertion the code
fails is not committed truth (it may be another red test).

The examples come back in :func:`~referee.checks.arbitration.truth.example_calls`' shape —
(a call of the bare name, the expected value, where it was written) — so oracles written
from them are held to every one of them exactly as to a docstring's examples.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from referee.checks import sandbox
from referee.checks.arbitration.isolate import WRAPPERS
from referee.checks.arbitration.truth import _dotted

MAX_FILES = 200  # test modules read, at most
MAX_BYTES = 4_000_000  # of test module text, at most
MAX_SECONDS = 2.0  # spent reading them
MAX_EXAMPLES = 12  # examples kept (the prompt's length)
GIT_TIMEOUT = 10.0

_TEST_FILES = ("test_*.py", "*_test.py")
_SKIP_DIRS = {"node_modules", "__pycache__", "site-packages", "build", "dist"}
_EQUAL_METHODS = {"assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual",
                  "assertDictEqual", "assertSetEqual", "assertIs"}  # fmt: skip
_NONE_METHODS = {"assertIsNone"}

Example = tuple[str, str, str]  # (call, want, where)


@dataclass(frozen=True)
class Found:
    """One assertion about the function: its call of the bare name (``f(1, 'a')``, or
    ``sorted(f(1))`` through a wrapper), the literal arguments, the expected value's repr,
    where it is written and the lines it spans."""

    call: str
    arguments: str
    want: str
    path: str
    line: int
    spans: tuple[tuple[int, int], ...]  # (first, last) lines: the assertion, a row
    text: str  # the assertion as written (one line of it), for the evidence

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"

    @property
    def example(self) -> Example:
        return (self.call, self.want, self.where)


@dataclass
class SuiteScan:
    """What the suite says about a function: the assertions kept, and how many were left
    out and why (for the verdict's evidence and the UNCLEAR line)."""

    found: list[Found] = field(default_factory=list)
    excluded: dict[str, int] = field(default_factory=dict)  # why -> how many
    notes: list[str] = field(default_factory=list)
    files_read: int = 0

    def leave_out(self, why: str) -> None:
        self.excluded[why] = self.excluded.get(why, 0) + 1

    @property
    def examples(self) -> list[Example]:
        return [f.example for f in self.found]


# ---------------------------------------------------------------------------- reading


def local_names(tree: ast.Module, name: str, module: str) -> tuple[set[str], set[str]]:
    """The names a test module calls ``module.name`` by: (the function's own local names —
    ``from pkg.mod import f`` / ``... import f as g`` —, the local names of its module —
    ``import pkg.mod as m`` / ``from pkg import mod``). A module given by its last part
    only (``from mod import f`` where the project runs tests from its package dir) counts."""
    last = module.rsplit(".", 1)[-1]
    functions: set[str] = set()
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            same = node.module == module or node.module.rsplit(".", 1)[-1] == last
            for alias in node.names:
                if same and alias.name == name:
                    functions.add(alias.asname or alias.name)
                if f"{node.module}.{alias.name}" == module:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == module or (alias.asname and alias.name.endswith("." + last)):
                    modules.add(alias.asname or alias.name)
                elif alias.name == last:
                    modules.add(alias.name)
    return functions, modules


def _literal(node: ast.expr) -> object:
    """The value of a literal node; raises ValueError for anything else."""
    try:
        return ast.literal_eval(node)
    except (SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise ValueError(str(exc)) from None


class _Reader:
    def __init__(self, name: str, functions: set[str], modules: set[str]) -> None:
        self.name, self.functions, self.modules = name, functions, modules

    def ours(self, func: ast.expr) -> bool:
        if isinstance(func, ast.Name):
            return func.id in self.functions
        if isinstance(func, ast.Attribute) and func.attr == self.name:
            return _dotted(func.value) in self.modules
        return False

    def call_of(self, node: ast.expr, env: dict[str, object]) -> tuple[str, str] | None:
        """(call of the bare name, its arguments) when ``node`` calls the function with
        literal arguments (names bound by ``env``: a parametrize row), perhaps under one
        wrapper (``sorted(f(x))``)."""
        wrapper = None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in WRAPPERS
            and node.func.id not in self.functions
            and len(node.args) == 1
            and not node.keywords
        ):
            wrapper, node = node.func.id, node.args[0]
        if not isinstance(node, ast.Call) or not self.ours(node.func):
            return None
        try:
            args = [self.value(a, env) for a in node.args]
            kwargs = []
            for keyword in node.keywords:
                if keyword.arg is None:
                    return None
                kwargs.append(f"{keyword.arg}={self.value(keyword.value, env)!r}")
        except ValueError:
            return None
        arguments = ", ".join([*(repr(a) for a in args), *kwargs])
        call = f"{self.name}({arguments})"
        return (f"{wrapper}({call})" if wrapper else call), arguments

    def value(self, node: ast.expr, env: dict[str, object]) -> object:
        if isinstance(node, ast.Starred):
            raise ValueError("starred")
        if isinstance(node, ast.Name) and node.id in env:
            return env[node.id]
        value = _literal(node)
        if not _round_trips(value):
            raise ValueError("not a literal that reads back")
        return value

    def want(self, node: ast.expr, env: dict[str, object]) -> str | None:
        try:
            return repr(self.value(node, env))
        except ValueError:
            return None


def _round_trips(value: object) -> bool:
    try:
        return ast.literal_eval(repr(value)) == value or value != value  # nan
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _checks(
    statement: ast.stmt, reader: _Reader, env: dict[str, object]
) -> Iterable[tuple[str, str, str, ast.AST]]:
    """(call, arguments, want, node) of an assertion about the function."""
    if isinstance(statement, ast.Assert):
        test = statement.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, left, right = test.ops[0], test.left, test.comparators[0]
            if isinstance(op, ast.Eq):
                for call_side, value_side in ((left, right), (right, left)):
                    call = reader.call_of(call_side, env)
                    want = reader.want(value_side, env) if call else None
                    if call and want is not None:
                        yield call[0], call[1], want, statement
                        return
            elif (
                isinstance(op, ast.Is)
                and isinstance(right, ast.Constant)
                and (right.value is None or isinstance(right.value, bool))
            ):
                call = reader.call_of(left, env)
                if call:
                    yield call[0], call[1], repr(right.value), statement
        return
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return
    method = statement.value
    name = method.func.attr if isinstance(method.func, ast.Attribute) else None
    if name in _EQUAL_METHODS and len(method.args) >= 2:
        first, second = method.args[0], method.args[1]
        for call_side, value_side in ((first, second), (second, first)):
            call = reader.call_of(call_side, env)
            want = reader.want(value_side, env) if call else None
            if call and want is not None:
                if name == "assertIs" and want not in ("None", "True", "False"):
                    return
                yield call[0], call[1], want, statement
                return
    elif name in _NONE_METHODS and len(method.args) >= 1:
        call = reader.call_of(method.args[0], env)
        if call:
            yield call[0], call[1], "None", statement


def _parametrize_rows(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
) -> list[tuple[dict[str, object], int, int]] | None:
    """The rows of a ``@pytest.mark.parametrize`` with literal values, each as (names →
    values, its first line, its last line); None when the function has none, [] when it
    has one this cannot read (then its assertions are not read either)."""
    rows: list[tuple[dict[str, object], int, int]] | None = None
    for decorator in function.decorator_list:
        if not (
            isinstance(decorator, ast.Call)
            and (_dotted(decorator.func) or "").endswith("parametrize")
            and len(decorator.args) >= 2
        ):
            continue
        if rows is not None:
            return []  # stacked parametrize: a product, not read here
        try:
            names_value = _literal(decorator.args[0])
        except ValueError:
            return []
        if isinstance(names_value, str):
            names = [n.strip() for n in names_value.split(",") if n.strip()]
        elif isinstance(names_value, (list, tuple)) and all(
            isinstance(n, str) for n in names_value
        ):
            names = list(names_value)
        else:
            return []
        table = decorator.args[1]
        if not isinstance(table, (ast.List, ast.Tuple)):
            return []
        rows = []
        for row in table.elts:
            try:
                value = _literal(row)
            except ValueError:
                continue  # pytest.param(...), a computed row: not read
            values = [value] if len(names) == 1 else value
            if not isinstance(values, (list, tuple)) or len(values) != len(names):
                continue
            end = getattr(row, "end_lineno", None) or row.lineno
            rows.append((dict(zip(names, values, strict=True)), row.lineno, end))
    return rows


def assertions(
    text: str, path: str, name: str, module: str, skip: tuple[str | None, str] | None = None
) -> tuple[list[Found], int]:
    """The assertions about ``module.name`` in one test module's text, and how many were
    in the skipped test function ``skip`` = (class or None, name)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return [], 0
    functions, modules = local_names(tree, name, module)
    if not functions and not modules:
        return [], 0
    reader = _Reader(name, functions, modules)
    lines = text.splitlines()
    found: list[Found] = []
    skipped = 0

    def shown(node: ast.AST) -> str:
        number = getattr(node, "lineno", 0)
        line = lines[number - 1].strip() if 0 < number <= len(lines) else ""
        return line if len(line) <= 160 else line[:157] + "..."

    def read(
        body: Sequence[ast.stmt], rows: list[tuple[dict[str, object], int, int]] | None, mine: bool
    ) -> None:
        nonlocal skipped
        for statement in body:
            for node in ast.walk(statement):
                if not isinstance(node, ast.stmt):
                    continue
                for env, first, last in rows if rows is not None else [({}, 0, 0)]:
                    for call, arguments, want, at in _checks(node, reader, env):
                        if mine:
                            skipped += 1
                            continue
                        start = at.lineno  # type: ignore[attr-defined]
                        end = getattr(at, "end_lineno", None) or start
                        spans = ((start, end),)
                        text = shown(at)
                        if first:
                            # a parametrized case: its row, and the assertion it feeds
                            spans = ((first, last), (start, end))
                            text = f"{lines[first - 1].strip()[:100]} -> {text}"
                        found.append(Found(call, arguments, want, path, spans[0][0], spans, text))

    def visit(body: Sequence[ast.stmt], cls: str | None) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and cls is None:
                visit(node.body, node.name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                mine = skip is not None and skip == (cls, node.name)
                rows = _parametrize_rows(node)
                if rows == []:
                    continue
                read(node.body, rows, mine)

    visit(tree.body, None)
    return found, skipped


def test_files(root: Path, first: str, exclude: Sequence[str] = ()) -> Iterable[str]:
    """The project's test modules (``test_*.py``, ``*_test.py``), relative posix paths,
    ``first`` first, without hidden or excluded directories."""
    yield first
    for directory, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(directory, root)
        rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in _SKIP_DIRS
            and not d.endswith(".egg-info")
            and not any(fnmatch.fnmatch(f"{rel}{d}/", p) for p in exclude)
        )
        for name in sorted(filenames):
            if any(fnmatch.fnmatch(name, p) for p in _TEST_FILES) and f"{rel}{name}" != first:
                yield f"{rel}{name}"


# ---------------------------------------------------------------------------- the diff


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def changed_lines(root: Path) -> dict[str, set[int] | None] | None:
    """The lines the working diff changed, by file (``git diff HEAD``: staged and not),
    None for a whole file (untracked); None when there is no git or no repository."""

    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, timeout=GIT_TIMEOUT, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None

    if git("rev-parse", "--show-prefix") is None:
        return None  # no git, or not a repository
    changed: dict[str, set[int] | None] = {}
    diff = git("diff", "HEAD", "--no-color", "--no-ext-diff", "-U0", "--relative", "--", ".")
    if diff is None:
        # no commit yet: every file is new
        diff = ""
        listed = git("ls-files", "--cached", "--", ".")
        for path in (listed or "").splitlines():
            changed[path] = None
    current: str | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            target = line[4:].strip()
            current = target[2:] if target.startswith("b/") else None
        elif current is not None and (match := _HUNK.match(line)):
            start, count = int(match.group(1)), int(match.group(2) or 1)
            lines = changed.setdefault(current, set())
            if lines is not None:
                lines.update(range(start, start + count) if count else {start, max(1, start - 1)})
    untracked = git("ls-files", "--others", "--exclude-standard", "--", ".")
    for path in (untracked or "").splitlines():
        changed[path] = None
    return changed


# ---------------------------------------------------------------------------- scanning


def suite_examples(
    root: Path,
    name: str,
    module: str,
    failing_path: str,
    failing_test: tuple[str | None, str],
    failing_arguments: str,
    *,
    exclude: Sequence[str] = (),
    signature: list[tuple[str, object]] | None = None,
    max_files: int = MAX_FILES,
    max_bytes: int = MAX_BYTES,
    seconds: float = MAX_SECONDS,
) -> SuiteScan:
    """The assertions the project's test modules make about ``module.name`` (see the
    module's docstring), the failing test's module read first, bounded by ``max_files``,
    ``max_bytes`` and ``seconds``; without the failing test, the failing call's
    arguments (matched by parameter with ``signature``: :func:`parameters`) and the
    lines the working diff changed."""
    scan = SuiteScan()
    started = time.monotonic()
    total = 0
    candidates: list[Found] = []
    for relpath in test_files(root, failing_path, exclude):
        if scan.files_read >= max_files or total >= max_bytes:
            scan.notes.append(f"read the first {scan.files_read} test modules only")
            break
        if time.monotonic() - started > seconds:
            scan.notes.append(f"read {scan.files_read} test modules in the {seconds:g} s allowed")
            break
        path = root / relpath
        try:
            size = path.stat().st_size
            if size > max_bytes - total:
                continue
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        total += size
        scan.files_read += 1
        found, skipped = assertions(
            text, relpath, name, module, failing_test if relpath == failing_path else None
        )
        for _ in range(skipped):
            scan.leave_out("in the failing test")
        candidates.extend(found)
    # the failing call's arguments: never the failing assertion, never its expected value
    kept: list[Found] = []
    for item in candidates:
        if _same_arguments(item.arguments, failing_arguments, signature):
            scan.leave_out("the failing call's arguments")
        else:
            kept.append(item)
    changed = changed_lines(root) if kept else {}
    if changed is None:
        scan.notes.append(
            "no git repository: assertions changed in the working diff could not be told "
            "apart (only the failing test is left out)"
        )
    else:
        fresh: list[Found] = []
        for item in kept:
            lines = changed.get(item.path, set())
            span = {n for first, last in item.spans for n in range(first, last + 1)}
            if lines is None or span & lines:
                scan.leave_out("changed in the working diff")
            else:
                fresh.append(item)
        kept = fresh
    # a call the suite gives two values for says nothing; repeats count once
    by_call: dict[str, list[Found]] = {}
    for item in kept:
        by_call.setdefault(item.call, []).append(item)
    for items in by_call.values():
        if any(not sandbox.values_equal(items[0].want, i.want) for i in items[1:]):
            for _ in items:
                scan.leave_out("the suite gives its call two values")
            continue
        scan.found.append(items[0])
    if len(scan.found) > MAX_EXAMPLES:
        scan.notes.append(f"kept the first {MAX_EXAMPLES} of {len(scan.found)} assertions")
        del scan.found[MAX_EXAMPLES:]
    return scan


def _call_parts(arguments: str) -> tuple[list[object], dict[str, object]] | None:
    """The literal values of a call's arguments (positional, keyword), or None."""
    try:
        call = ast.parse(f"f({arguments})", mode="eval").body
        assert isinstance(call, ast.Call)
        if any(k.arg is None for k in call.keywords):
            return None
        return (
            [_literal(a) for a in call.args],
            {str(k.arg): _literal(k.value) for k in call.keywords},
        )
    except (ValueError, SyntaxError, AssertionError):
        return None


def parameters(signature: str) -> list[tuple[str, object]] | None:
    """The positional-or-keyword parameters of a ``def`` line, each with its literal
    default (or :data:`_NO_DEFAULT`), or None when the line does not read."""
    try:
        fn = ast.parse(signature.rstrip().rstrip(":") + ":\n    pass\n").body[0]
    except (SyntaxError, IndexError):
        return None
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    params = [*fn.args.posonlyargs, *fn.args.args]
    defaults: list[object] = [_NO_DEFAULT] * (len(params) - len(fn.args.defaults))
    for node in fn.args.defaults:
        try:
            defaults.append(_literal(node))
        except ValueError:
            defaults.append(_NO_DEFAULT)
    found = [(p.arg, d) for p, d in zip(params, defaults, strict=True)]
    for p, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
        try:
            found.append((p.arg, _NO_DEFAULT if d is None else _literal(d)))
        except ValueError:
            found.append((p.arg, _NO_DEFAULT))
    return found


_NO_DEFAULT = object()


def _bound(
    parts: tuple[list[object], dict[str, object]], params: list[tuple[str, object]]
) -> dict[str, object] | None:
    """A call's arguments by parameter name, the literal defaults filled in."""
    args, kwargs = parts
    if len(args) > len(params):
        return None
    bound = {name: value for (name, _), value in zip(params, args, strict=False)}
    for name, value in kwargs.items():
        if name in bound or name not in {n for n, _ in params}:
            return None
        bound[name] = value
    for name, default in params:
        if name not in bound and default is not _NO_DEFAULT:
            bound[name] = default
    return bound


def _same_arguments(
    arguments: str, failing: str, params: list[tuple[str, object]] | None = None
) -> bool:
    """Whether an assertion's call has the failing call's arguments: the same values of
    the same types, matched by parameter (``f(1)`` is ``f(x=1)`` and ``f(1, k=2)`` where
    2 is ``k``'s default) when the signature is known; the same text where the failing
    call's arguments are no literals."""
    ours, theirs = _call_parts(arguments), _call_parts(failing)
    if theirs is None or ours is None:
        return arguments.replace(" ", "") == failing.replace(" ", "")
    if params is not None:
        a, b = _bound(ours, params), _bound(theirs, params)
        if a is not None and b is not None:
            return a.keys() == b.keys() and all(_identical(a[k], b[k]) for k in a)
    return _identical(ours[0], theirs[0]) and (
        ours[1].keys() == theirs[1].keys()
        and all(_identical(ours[1][k], theirs[1][k]) for k in ours[1])
    )


def _identical(a: object, b: object) -> bool:
    from referee.checks.arbitration.truth import _identical as identical

    return identical(a, b)


# ---------------------------------------------------------------------------- running


def passing_examples(
    scan: SuiteScan,
    name: str,
    relpath: str,
    files: dict[str, str],
    limits: sandbox.Limits,
) -> list[Found]:
    """Of ``scan``'s assertions, those the current code satisfies, run in the sandbox with
    the project's files (as a probe: every call in one run, each caught on its own). The
    others are left out (and counted in ``scan.excluded``); when the module does not run
    at all, none is kept."""
    from referee.checks.arbitration.truth import PROBE, probe_cap, probe_values
    from referee.checks.execution.running import MODULE_IMPORT as _IMPORT
    from referee.checks.execution.running import module_of as _module_of

    if not scan.found:
        return []
    entry, module = _module_of(relpath)
    code = _IMPORT.format(entry=entry, module=module, relpath=relpath)
    code += f"{name} = _referee_m.{name}\n"
    cap = probe_cap(limits, len(scan.found))
    expression = "[" + ", ".join(f"_referee_probe(lambda: {f.call})" for f in scan.found) + "]"
    result = sandbox.evaluate(code + PROBE.format(cap=cap), expression, limits=limits, files=files)
    values = probe_values(result, len(scan.found), cap)
    if values is None:
        scan.notes.append(
            f"the current code did not run in the sandbox ({result.message or result.status})"
        )
        for _ in scan.found:
            scan.leave_out("could not be run on the current code")
        scan.found = []
        return []
    kept = []
    for item, (status, text) in zip(scan.found, values, strict=True):
        if status == "ok" and sandbox.values_equal(text, item.want):
            kept.append(item)
        else:
            scan.leave_out("fails on the current code")
    scan.found = kept
    return kept


def static_examples(name: str, module: str, tests: dict[str, str]) -> list[Found]:
    """Every assertion about ``module.name`` in ``tests`` (path → text), unfiltered: the
    inputs the differential check takes from the suite."""
    found: list[Found] = []
    for path, text in sorted(tests.items()):
        found.extend(assertions(text, path, name, module)[0])
    return found


__all__ = [
    "Found",
    "SuiteScan",
    "assertions",
    "changed_lines",
    "passing_examples",
    "static_examples",
    "suite_examples",
]
