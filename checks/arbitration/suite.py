"""The specification a function's own test suite gives it: the project's assertions about
the function that pass now and that nobody changed in the working diff.

Most real functions have no docstring; what their author committed to about them lives in
their tests. :func:`suite_examples` reads the project's test modules (the failing test's
first) for assertions that call the function by the name its module imported it under,
with literal arguments and a literal expected value::

    assert f(1, "a") == 3            assert 3 == f(1, "a")
    assert f(2) is None              self.assertEqual(f(2), [1])
    @pytest.mark.parametrize("x, want", [(1, 2), (3, 4)])  ... assert f(x) == want

It leaves out the assertions on lines the working diff changed (``git diff HEAD`` and
untracked files) and every assertion whose call has the failing call's arguments (never
the failing assertion or its expected value): a specification is what was committed
before the red test — the failing test's other assertions too (``assertEqual`` after
``assertEqual`` about one function is how many suites are written), unless there is no
git repository to say so, when the failing test is left out whole. :func:`passing_examples` then
keeps only those the current code satisfies, run in the sandbox: an assertion the code
fails is not committed truth (it may be another red test).

The examples come back in :func:`~referee.checks.arbitration.examples.example_calls`' shape —
(a call of the bare name, the expected value, where it was written) — so oracles written
from them are held to every one of them exactly as to a docstring's examples.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from referee.checks import sandbox
from referee.checks.arbitration.examples import (
    PROBE,
    dotted_name,
    identical,
    probe_cap,
    probe_values,
)
from referee.checks.arbitration.known import with_definitions
from referee.checks.arbitration.suite_reading import Example, Found, assertions, literal_of
from referee.checks.config import Settings, walk
from referee.checks.interpreter import Interpreter

MAX_FILES = 200  # test modules read, at most
MAX_BYTES = 4_000_000  # of test module text, at most
MAX_SECONDS = 2.0  # spent reading them
MAX_EXAMPLES = 12  # examples kept (the prompt's length)
# assertions run on the current code to find those that pass: a bug's own test module,
# read first, may hold a dozen that fail with the failing one before any that pass
MAX_CANDIDATES = 48
GIT_TIMEOUT = 10.0

_TEST_FILES = ("test_*.py", "*_test.py")


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


def test_files(root: Path, first: str, settings: Settings) -> Iterable[str]:
    """The project's test modules (``test_*.py``, ``*_test.py``), relative posix paths,
    ``first`` first, without the directories nobody checks (:func:`~referee.checks.config.walk`)."""
    yield first
    for relpath, path in walk(root, settings):
        if any(fnmatch.fnmatch(path.name, p) for p in _TEST_FILES) and relpath != first:
            yield relpath


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
    settings: Settings | None = None,
    signature: list[tuple[str, object]] | None = None,
    owner: tuple[str, str] | None = None,
    max_files: int = MAX_FILES,
    max_bytes: int = MAX_BYTES,
    seconds: float = MAX_SECONDS,
) -> SuiteScan:
    """The assertions the project's test modules make about ``module.name`` (see the
    module's docstring), the failing test's module read first, bounded by ``max_files``,
    ``max_bytes`` and ``seconds``; without the failing test, the failing call's
    arguments (matched by parameter with ``signature``: :func:`parameters`) and the
    lines the working diff changed. ``owner``: for a method, (its class, its form), whose
    calls are read in the oracle contract (``Table([1]).m(2)`` is ``m(([1],), {}, 2)``)."""
    scan = SuiteScan()
    candidates = _read_suite(
        scan,
        root,
        (name, module, owner),
        failing_path,
        failing_test,
        settings or Settings(root=root),
        max_files,
        max_bytes,
        seconds,
    )
    add_examples(scan, root, candidates, failing_arguments, signature)
    return scan


def add_examples(
    scan: SuiteScan,
    root: Path,
    candidates: list[Found],
    failing_arguments: str,
    signature: list[tuple[str, object]] | None = None,
) -> None:
    """Add to ``scan`` those of ``candidates`` the suite committed to: on lines the
    working diff did not change, not of the failing call's arguments, not a call the suite
    (``scan``'s assertions and these) gives two values; at most :data:`MAX_CANDIDATES`
    (:func:`passing_examples` keeps :data:`MAX_EXAMPLES` of those that pass)."""
    # the failing call's arguments: never the failing assertion, never its expected value
    kept: list[Found] = list(scan.found)
    for item in _committed(scan, root, candidates):
        if _same_arguments(item.arguments, failing_arguments, signature):
            scan.leave_out("the failing call's arguments")
        else:
            kept.append(item)
    # a call the suite gives two values for says nothing; repeats count once
    by_call: dict[str, list[Found]] = {}
    for item in kept:
        by_call.setdefault(item.call, []).append(item)
    scan.found = []
    for items in by_call.values():
        if any(not sandbox.values_equal(items[0].want, i.want) for i in items[1:]):
            for _ in items:
                scan.leave_out("the suite gives its call two values")
            continue
        scan.found.append(items[0])
    if len(scan.found) > MAX_CANDIDATES:
        scan.notes.append(f"read the first {MAX_CANDIDATES} of {len(scan.found)} assertions")
        del scan.found[MAX_CANDIDATES:]


def _read_suite(
    scan: SuiteScan,
    root: Path,
    subject: tuple[str, str, tuple[str, str] | None],
    failing_path: str,
    failing_test: tuple[str | None, str],
    settings: Settings,
    max_files: int,
    max_bytes: int,
    seconds: float,
) -> list[Found]:
    """The assertions about ``module.name`` in the project's test modules, the failing
    test's module first, within the bounds (what was left out is noted in ``scan``).
    ``subject``: (name, module, owner) as :func:`suite_examples` takes them."""
    name, module, owner = subject
    started = time.monotonic()
    total = 0
    candidates: list[Found] = []
    for relpath in test_files(root, failing_path, settings):
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
        found, _ = assertions(
            text,
            relpath,
            name,
            module,
            failing_test if relpath == failing_path else None,
            known=True,
            owner=owner,
        )
        candidates.extend(found)
    return candidates


def _committed(scan: SuiteScan, root: Path, found: list[Found]) -> list[Found]:
    """Of ``found``, the assertions on lines the working diff did not change. Without a
    git repository (noted in ``scan``) nothing tells them apart, and the failing test's
    own assertions are left out whole."""
    changed = changed_lines(root) if found else {}
    kept: list[Found] = []
    if changed is None:
        scan.notes.append(
            "no git repository: assertions changed in the working diff could not be told "
            "apart (only the failing test is left out)"
        )
        for item in found:
            if item.in_failing_test:
                scan.leave_out("in the failing test")
            else:
                kept.append(item)
        return kept
    for item in found:
        spans = [(item.path, first, last) for first, last in item.spans] + list(item.elsewhere)
        if any(_changed(changed, *span) for span in spans):
            scan.leave_out("changed in the working diff")
        else:
            kept.append(item)
    return kept


def _changed(changed: dict[str, set[int] | None], path: str, first: int, last: int) -> bool:
    """Whether the working diff changed a line from ``first`` to ``last`` of ``path``
    (None for a file git does not track: all of it)."""
    lines = changed.get(path, set())
    return lines is None or any(first <= n <= last for n in lines)


@dataclass(frozen=True)
class _Expression:
    """An argument that is no literal (``dt.timedelta(seconds=1)``), by its normalized
    tree with every dotted name read by its last part: ``datetime.timedelta(seconds=1)``
    is the same argument (a module's alias is not the value's business)."""

    tree: str


class _LastParts(ast.NodeTransformer):
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if dotted_name(node) is not None:
            return ast.Name(id=node.attr, ctx=ast.Load())
        return self.generic_visit(node)


def _argument(node: ast.expr) -> object:
    try:
        return literal_of(node)
    except ValueError:
        return _Expression(ast.dump(_LastParts().visit(node), annotate_fields=False))


def _call_parts(arguments: str) -> tuple[list[object], dict[str, object]] | None:
    """The values of a call's arguments (positional, keyword) — a literal's value, or an
    :class:`_Expression` for one that is no literal — or None when they do not read."""
    try:
        call = ast.parse(f"f({arguments})", mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    if not isinstance(call, ast.Call) or any(k.arg is None for k in call.keywords):
        return None
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    return (
        [_argument(a) for a in call.args],
        {str(k.arg): _argument(k.value) for k in call.keywords},
    )


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
            defaults.append(literal_of(node))
        except ValueError:
            defaults.append(_NO_DEFAULT)
    found = [(p.arg, d) for p, d in zip(params, defaults, strict=True)]
    for p, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
        try:
            found.append((p.arg, _NO_DEFAULT if d is None else literal_of(d)))
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
    2 is ``k``'s default) when the signature is known; an argument that is no literal
    (``dt.timedelta(seconds=1)``) by its normalized tree (:class:`_Expression`), and
    where the arguments do not read, the same text."""
    ours, theirs = _call_parts(arguments), _call_parts(failing)
    if theirs is None or ours is None:
        return arguments.replace(" ", "") == failing.replace(" ", "")
    if params is not None:
        a, b = _bound(ours, params), _bound(theirs, params)
        if a is not None and b is not None:
            return a.keys() == b.keys() and all(identical(a[k], b[k]) for k in a)
    return identical(ours[0], theirs[0]) and (
        ours[1].keys() == theirs[1].keys()
        and all(identical(ours[1][k], theirs[1][k]) for k in ours[1])
    )


# ---------------------------------------------------------------------------- running


def passing_examples(
    scan: SuiteScan,
    name: str,
    relpath: str,
    files: dict[str, str],
    limits: sandbox.Limits,
    failing: tuple[str, str] | None = None,
    owner: tuple[str, str] | None = None,
    python: Interpreter | None = None,
) -> list[Found]:
    """Of ``scan``'s assertions, those the current code satisfies, run in the sandbox with
    the project's files and interpreter ``python`` (its dependencies importable; None:
    referee's own) (as a probe: every call in one run, each caught on its own), each
    with its definitions (:func:`~referee.checks.arbitration.known.with_definitions`). An
    expected value written as a construction (``datetime(2019, 3, 29)``) is built there
    too, and compared — then and by the oracles — by the repr it gives (kept in
    ``Found.compared``); one whose repr names an address is no value. The others are left
    out (and counted in ``scan.excluded``); when the module does not run at all, none is
    kept. ``failing``: the failing call's (arguments, definitions) — an assertion whose
    known arguments build the same values there (``timedelta(minutes=1)`` for
    ``dt.timedelta(seconds=60)``, ``int("1")`` for ``1``) is left out too, as
    :func:`suite_examples` leaves out the same text. ``owner``: a method's (class, form),
    whose examples call the oracle contract, run on the class."""
    from referee.checks.execution.running import MODULE_IMPORT as _IMPORT
    from referee.checks.execution.running import module_of as _module_of

    if not scan.found:
        return []
    entry, module = _module_of(relpath)
    code = _IMPORT.format(entry=entry, module=module, relpath=relpath)
    if owner is None:
        code += f"{name} = _referee_m.{name}\n"
    elif owner[1] == "classmethod":
        code += f"{name} = _referee_m.{owner[0]}.{name}\n"
    else:  # the oracle contract: the object's building's arguments, then the call's
        code += (
            f"def {name}(_referee_args, _referee_kwargs, /, *args, **kwargs):\n"
            f"    made = _referee_m.{owner[0]}(*_referee_args, **_referee_kwargs)\n"
            f"    return made.{name}(*args, **kwargs)\n"
        )
    same = _same_values(scan.found, failing)
    probes = [] if same is None else [same[0]]
    for item in scan.found:
        probes.append(with_definitions(item.call, item.definitions))
        if item.want_built:
            probes.append(with_definitions(item.want, item.definitions))
        if same is not None and item.known:
            probes.append(with_definitions(_ARGUMENTS.format(item.arguments), item.definitions))
    cap = probe_cap(limits, len(probes))
    expression = "[" + ", ".join(f"_referee_probe(lambda: {p})" for p in probes) + "]"
    result = sandbox.evaluate(
        code + PROBE.format(cap=cap), expression, limits=limits, files=files, python=python
    )
    values = probe_values(result, len(probes), cap)
    if values is None:
        scan.notes.append(
            f"the current code did not run in the sandbox ({result.message or result.status})"
        )
        for _ in scan.found:
            scan.leave_out("could not be run on the current code")
        scan.found = []
        return []
    kept = _passing(scan, values, same is not None)
    if len(kept) > MAX_EXAMPLES:
        scan.notes.append(f"kept the first {MAX_EXAMPLES} of the {len(kept)} that pass")
        del kept[MAX_EXAMPLES:]
    scan.found = kept
    return kept


def _passing(scan: SuiteScan, values: list[tuple[str, str]], same: bool) -> list[Found]:
    """Of ``scan``'s assertions, those whose probed answers (``values``, in the order
    :func:`passing_examples` probed them: the failing call's arguments first where
    ``same``) pass; each other one left out, saying why."""
    kept = []
    answers = iter(values)
    theirs = next(answers) if same else None
    if theirs is not None and (theirs[0] != "ok" or " at 0x" in theirs[1]):
        theirs = None  # no value to compare: the text alone decided
    for item in scan.found:
        status, text = next(answers)
        built = next(answers) if item.want_built else None
        built_arguments = next(answers) if same and item.known else None
        if built is not None:
            if built[0] != "ok" or " at 0x" in built[1]:
                scan.leave_out("its expected value could not be built to compare")
                continue
            item = replace(item, compared=built[1])
        if theirs is not None and built_arguments == theirs:
            scan.leave_out("the failing call's arguments")
        elif status == "ok" and sandbox.values_equal(text, item.compared or item.want):
            kept.append(item)
        else:
            scan.leave_out("fails on the current code")
    return kept


# a call's arguments as the values they build: (positional, keyword)
_ARGUMENTS = "(lambda *a, **k: (a, k))({})"


def _same_values(found: list[Found], failing: tuple[str, str] | None) -> tuple[str] | None:
    """The probe of the failing call's arguments as values, when some assertion's
    arguments are known expressions (``int("1")`` builds the failing ``1`` too); else
    None."""
    if failing is None or not any(item.known for item in found):
        return None
    arguments, definitions = failing
    return (with_definitions(_ARGUMENTS.format(arguments), definitions),)


__all__ = [
    "Found",
    "SuiteScan",
    "add_examples",
    "assertions",
    "changed_lines",
    "passing_examples",
    "suite_examples",
]
