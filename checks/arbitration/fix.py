"""Fixing only the wrong side.

A wrong test gets its expected literal replaced by the certified value, written in the
style of the literal it replaces; nothing else in the file moves. A wrong source gets
candidate patches from the model; each replaces the function in its module, and then:

1. a patch that uses a capability the original function did not (files, processes,
   the network, native code, imports by name, strings run as code, frames — see
   :mod:`.capabilities`) is refused before anything runs it;
2. one that special-cases the failing input (the guard's REF330/REF331) is refused too;
3. referee takes the test module apart into asserted calls and expected values, runs the
   calls against the patched module in the sandbox, and compares the values itself
   (:mod:`.verify`): no verdict is read from the process that ran the patch;
4. pytest runs the whole test module against it in another sandbox run: a failure there
   refuses the patch, a pass certifies nothing (the patch shared that process).
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import math
import posixpath
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from referee.checks import interpreter, sandbox
from referee.checks.arbitration import verify
from referee.checks.arbitration.capabilities import added_capabilities
from referee.checks.arbitration.isolate import FunctionSpec
from referee.checks.arbitration.programs import extract_code
from referee.checks.arbitration.project_data import without_test_data
from referee.checks.arbitration.sites import Site
from referee.checks.arbitration.splice import Refused, splice
from referee.checks.arbitration.style import restyler
from referee.checks.arbitration.truth import (
    ProgramCache,
    docstring_copy,
    generate,
    prompts,
)
from referee.checks.config import Settings
from referee.checks.configuration import ArbitrationConfig
from referee.checks.execution.targets import laid_out
from referee.checks.guard.context import GuardContext
from referee.checks.guard.facts import _case as case_text
from referee.checks.guard.facts import squash_lines
from referee.checks.guard.pytestconfig import alone_args_of
from referee.checks.models import ArbitrationFix, Edit, Location, PatchResult, Span
from referee.checks.progress import IDLE, Work
from referee.checks.source import SourceFile

GUARD_CODES = frozenset({"REF330", "REF331"})


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _location(data: bytes, offset: int) -> Location:
    row = data.count(b"\n", 0, offset)
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", "replace")) + 1
    return Location(line=row + 1, column=column)


def replace_bytes(text: str, start: int, end: int, new: str) -> tuple[str, Edit]:
    """``text`` with the UTF-8 byte range [start, end) replaced by ``new``, and that edit."""
    data = text.encode("utf-8")
    edit = Edit(span=Span(start=_location(data, start), end=_location(data, end)), content=new)
    return (data[:start] + new.encode("utf-8") + data[end:]).decode("utf-8"), edit


def unified_diff(path: str, old: str, new: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )


# ---------------------------------------------------------------------------- the test


def format_value(value: str, old_text: str) -> str:
    """The certified value (a repr) written like the literal it replaces: a string keeps
    its double quotes, anything else is written as Python prints it."""
    if value.strip() in ("nan", "inf", "-inf"):
        return f"float({value.strip()!r})"
    try:
        parsed = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value.strip()
    text = repr(parsed)
    old = old_text.strip()
    if (
        isinstance(parsed, str)
        and old.startswith('"')
        and not old.startswith('"""')
        and text.startswith("'")
        and "'" not in parsed
    ):
        # Python's own escapes (a lone surrogate stays ``\ud800``, which UTF-8 cannot
        # hold raw), between the double quotes the old literal used.
        text = f'"{text[1:-1]}"'
    return text


_WRITABLE_NODES = (
    ast.Expression,
    ast.Constant,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.Dict,
    ast.UnaryOp,
    ast.USub,
    ast.UAdd,
    ast.BinOp,
    ast.Add,
    ast.Sub,
    ast.Call,
    ast.Name,
    ast.Attribute,
    ast.Load,
    ast.keyword,
)


def unsafe_literal(text: str) -> str | None:
    """Why ``text`` is not a value to write into a test, or None when it is: Python
    literals, ``-x``, ``a + bj``, and calls of plain names with such arguments
    (``Fraction(3, 2)``, ``float('nan')``, ``datetime.date(2024, 1, 1)``). Names that
    reach the system (``open``, ``eval``, ``__import__``...) and dunders never are."""
    from referee.checks.arbitration.capabilities import SYSTEM_NAMES

    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "not a Python expression"
    try:
        nodes = list(ast.walk(tree))
    except RecursionError:
        return "nested too deeply"
    for node in nodes:
        if not isinstance(node, _WRITABLE_NODES):
            return f"it holds {type(node).__name__.lower()} code"
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", None)
        if name is not None and (
            name.startswith("__") or name in SYSTEM_NAMES or name == "getattr"
        ):
            return f"it names `{name}`"
        if isinstance(node, ast.keyword) and node.arg is None:
            return "it unpacks keyword arguments"
        if isinstance(node, ast.BinOp) and not isinstance(node.op, (ast.Add, ast.Sub)):
            return "it computes"
    return None


def literal_mismatch(op: str, written: str, produced: str | None) -> str | None:
    """When both the value written into the test and the value the code produced are
    literals: why the test's comparison would still fail (``==`` is Python's, exact;
    ``approx`` is pytest.approx's), else None."""
    from referee.checks.arbitration.verify import _approx

    if produced is None:
        return None
    try:
        new, got = ast.literal_eval(written.strip()), ast.literal_eval(produced.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None  # not both literals: the corrected test's run decides
    try:
        same = _approx(got, new) if op == "approx" else bool(got == new)
    except (TypeError, ValueError, RecursionError):
        return None
    if same:
        return None
    relation = "!=" if op == "==" else "is not approx"
    return f"{excerpt_value(produced)} {relation} {excerpt_value(written)}"


def excerpt_value(text: str, limit: int = 40) -> str:
    return _short(text, limit)


@dataclass(frozen=True)
class TestFix:
    __test__ = False  # not a pytest test class
    fix: ArbitrationFix
    new_text: str
    bound_text: str  # what the certificate's test_sha256 hashes: the fixed assertion or case


def fix_test(
    text: str,
    relpath: str,
    site: Site,
    truth: str,
    assertion_range: tuple[int, int],
) -> TestFix:
    """Replace the expected literal at ``site`` by ``truth``. ``assertion_range``: the
    assertion statement's byte range. The certificate is bound to the text the guard
    compares: the fixed assertion, or the fixed parametrize case (canonical)."""
    new_literal = format_value(truth, site.text)
    new_text, edit = replace_bytes(text, site.start_byte, site.end_byte, new_literal)
    delta = len(new_literal.encode("utf-8")) - (site.end_byte - site.start_byte)

    def after(start: int, end: int) -> str:
        if site.end_byte <= start:  # a literal assigned above the assertion
            start, end = start + delta, end + delta
        elif start <= site.start_byte and site.end_byte <= end:
            end += delta
        return new_text.encode("utf-8")[start:end].decode("utf-8")

    bound = after(*site.case) if site.case is not None else after(*assertion_range)
    if site.kind == "parametrize":
        bound = case_text(bound)
    fix = ArbitrationFix(
        side="test",
        title=f"Fix test (certified: {_short(new_literal)})",
        path=relpath,
        edits=(edit,),
        diff=unified_diff(relpath, text, new_text),
        content_sha256=sha256_text(text),
        old_value=site.text,
        new_value=new_literal,
    )
    return TestFix(fix, new_text, bound)


def _short(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -------------------------------------------------------------------------- the source


def patch_messages(spec: FunctionSpec, call: str, produced: str, truth: str) -> list[dict]:
    p = prompts()
    return [
        {"role": "system", "content": p.patch_system},
        {
            "role": "user",
            "content": p.patch.format(
                function=spec.definition, call=call, produced=produced, truth=truth, name=spec.name
            ),
        },
    ]


def patched_module(spec: FunctionSpec, answer: str) -> tuple[str | None, str]:
    """(the module with the candidate's function body in place of the original's,
    problem): the signature, docstring and decorators stay; the helpers and imports the
    body uses come along (see :mod:`.splice`)."""
    try:
        return splice(spec.text, spec.name, extract_code(answer), spec.qualname), ""
    except Refused as exc:
        return None, str(exc)


_COUNT = re.compile(r"(\d+) (passed|failed|errors?)")


def pytest_run_limits(config: ArbitrationConfig) -> sandbox.Limits:
    """The limits of one pytest run in the sandbox (a candidate patch, a corrected test)."""
    return sandbox.Limits(
        timeout_s=config.test_timeout,
        cpu_s=max(1, math.ceil(config.test_timeout)),
        memory_mb=max(config.memory_mb, 1024),
    )


def pytest_counts(summary: str) -> tuple[int, int]:
    """(passed, run) from pytest's summary line."""
    passed = total = 0
    for number, word in _COUNT.findall(summary):
        total += int(number)
        if word == "passed":
            passed += int(number)
    return passed, total


@dataclass(frozen=True)
class SourceFix:
    fix: ArbitrationFix | None
    new_text: str | None
    patches: tuple[PatchResult, ...]


def module_functions(text: str) -> frozenset[str]:
    """Names of a module's top-level functions (what an asserted call may call)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return frozenset()
    return frozenset(
        node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    )


def source_fix(
    spec: FunctionSpec,
    module_relpath: str,
    test_relpath: str,
    files: dict[str, str],
    failing: verify.AssertedCall,
    produced: str,
    truth: str,
    backend: Any,
    config: ArbitrationConfig,
    settings: Settings,
    cache: ProgramCache,
    oracle_programs: Sequence[tuple[str, str]] = (),
    *,
    work: Work = IDLE,
    more_programs: Callable[[], Sequence[tuple[str, str]]] | None = None,
) -> SourceFix:
    """Up to N candidate patches from the model and the programs of the oracles that
    certified the truth (``(source, program)``: independent implementations of the same
    docstring). Each is refused when it adds capabilities or special-cases the input;
    otherwise referee checks the values it gives for every asserted call of the test
    module (``failing``, the call under arbitration, first) and then runs the module's
    tests against it in the sandbox. The first that passes both is the fix.

    With no oracle programs (the truth came from a doctest or a reference),
    ``more_programs`` is asked for some: oracles written only for the fix, which the
    caller keeps to those that give the truth on the failing call."""
    trial = _Trial.prepare(
        spec, module_relpath, test_relpath, files, failing, settings, config, work
    )
    answers = _candidates(
        spec,
        patch_messages(spec, failing.call, produced, truth),
        backend,
        config,
        cache,
        oracle_programs,
        more_programs,
        work,
    )
    patches: list[PatchResult] = []
    tried: set[str] = set()
    restyle = restyler(settings.root, module_relpath, spec.text)
    for index, (origin, answer) in enumerate(answers, start=1):
        new_text, problem = patched_module(spec, answer)
        if new_text is not None:
            new_text, _ = restyle(new_text)
        if new_text is None or new_text == spec.text or new_text in tried:
            why = problem or ("changes nothing" if new_text == spec.text else "tried already")
            patches.append(
                PatchResult(candidate=index, origin=origin, status="invalid", message=why)
            )
            continue
        tried.add(new_text)
        result, fix = trial.check(index, origin, new_text)
        patches.append(result)
        if fix is not None:
            return SourceFix(fix, new_text, tuple(patches))
    return SourceFix(None, None, tuple(patches))


def _candidates(
    spec: FunctionSpec,
    messages: list[dict],
    backend: Any,
    config: ArbitrationConfig,
    cache: ProgramCache,
    oracle_programs: Sequence[tuple[str, str]],
    more_programs: Callable[[], Sequence[tuple[str, str]]] | None,
    work: Work,
) -> Iterator[tuple[str, str]]:
    """(origin, answer) of each candidate: the oracles' programs first — independent
    implementations of the docstring that agreed on the truth, and cost no model call —
    then the model's patches (the first greedy, the others sampled)."""
    yield from oracle_programs
    if not oracle_programs and more_programs is not None:
        yield from more_programs()
    # A patch is about as long as the function it rewrites; a model that rambles on is cut.
    max_tokens = min(1024, max(256, len(spec.definition) // 2 + 128))
    for index in range(1, config.candidates + 1):
        work.raise_if_cancelled()
        work.say(f"writing candidate patch {index}/{config.candidates}")
        temperature = 0.0 if index == 1 else config.temperature
        answer, _ = generate(
            backend,
            messages,
            seed=index,
            temperature=temperature,
            cache=cache,
            max_tokens=max_tokens,
            forcing=docstring_copy(spec),
            draft=True,  # a patch rewrites the function it was shown
        )
        yield "model", answer


@dataclass(frozen=True)
class _Trial:
    """How a candidate module is judged: what it may not add, the test module's asserted
    calls it must give the right values for, and the test module it must pass."""

    spec: FunctionSpec
    module_relpath: str
    test_relpath: str
    files: dict[str, str]
    settings: Settings
    guard: GuardContext
    calls: list[verify.AssertedCall]  # the failing call first
    untaken: int
    code_files: dict[str, str]  # the project without its tests or conftest files
    limits: sandbox.Limits
    python: interpreter.Interpreter | None
    work: Work
    # the module's run against the unpatched code, once: {"run": (failed ids, tests run)}
    baseline: dict[str, tuple[frozenset[str], int] | None] = field(default_factory=dict)

    @classmethod
    def prepare(
        cls,
        spec: FunctionSpec,
        module_relpath: str,
        test_relpath: str,
        files: dict[str, str],
        failing: verify.AssertedCall,
        settings: Settings,
        config: ArbitrationConfig,
        work: Work,
    ) -> _Trial:
        test_text = "".join(
            squash_lines(text) for path, text in files.items() if _is_test(settings, path)
        )
        asserted, untaken = verify.asserted_calls(
            files.get(test_relpath, ""), test_relpath, spec.module, module_functions(spec.text)
        )
        calls = [failing] + [
            c
            for c in asserted
            if not (
                (c.function, c.arguments, c.wrapper, c.projection)
                == (failing.function, failing.arguments, failing.wrapper, failing.projection)
                and sandbox.values_equal(c.expected, failing.expected)
            )
        ]
        # The patched module runs with the project's code but without its tests or
        # conftest files: nothing there tells a patch what the tests expect.
        code_files = {
            path: text
            for path, text in without_test_data(files).items()
            if not _is_test(settings, path) and posixpath.basename(path) != "conftest.py"
        }
        return cls(
            spec=spec,
            module_relpath=module_relpath,
            test_relpath=test_relpath,
            files=files,
            settings=settings,
            guard=GuardContext(baseline=spec.text, test_text=test_text),
            calls=calls,
            untaken=untaken,
            code_files=code_files,
            limits=pytest_run_limits(config),
            python=interpreter.for_settings(settings),  # the project's: its tests, its imports
            work=work,
        )

    def check(
        self, index: int, origin: str, new_text: str
    ) -> tuple[PatchResult, ArbitrationFix | None]:
        """The candidate ``new_text``'s result, and the fix when it passed."""
        spec = self.spec

        def result(status: str, message: str, **more: Any) -> PatchResult:
            return PatchResult(
                candidate=index, origin=origin, status=status, message=message, **more
            )

        added = added_capabilities(spec.text, new_text, spec.qualname)
        if added:
            message = (
                "it adds what the original function did not use: "
                + ", ".join(added)
                + "; never run"
            )
            return result("refused", message, capabilities=tuple(added)), None
        # L0/L1 and every rule's module, imported once a candidate gets this far (an
        # UNCLEAR verdict never does)
        from referee.checks.engine import check_source

        cheats = check_source(
            SourceFile(self.module_relpath, new_text),
            self.settings,
            self.module_relpath,
            self.guard,
            GUARD_CODES,
        )
        if cheats:
            return result("invalid", f"{cheats[0].code}: {cheats[0].message}"), None
        self.work.raise_if_cancelled()
        self.work.say(f"checking candidate {index} ({origin}) on {len(self.calls)} asserted calls")
        checked = verify.verify(
            new_text,
            self.module_relpath,
            spec.module,
            self.calls,
            self.code_files,
            self.limits,
            self.untaken,
            self.python,
        )
        counts = {"calls_verified": checked.verified, "calls_total": checked.total}
        if not checked.passed:
            return result("failed", checked.message, **counts), None
        self.work.raise_if_cancelled()
        self.work.say(f"running {self.test_relpath} against candidate {index} ({origin})")
        run = self.module_run(new_text)
        passed, total = pytest_counts(run.message)
        # pytest ran in the patch's own process: its failure refuses the patch (a patch
        # that fakes its own failure only refuses itself), its pass proves nothing.
        if not (run.status == "ok" and total and passed == total):
            failing_anyway = self.failing_anyway(run)
            if failing_anyway is None:
                message = (
                    f"{checked.message}, but the test module does not pass against "
                    f"it in the sandbox ({run.message})"
                )
                return result("failed", message, pytest=run.message, **counts), None
            checked = replace(checked, message=f"{checked.message}; {failing_anyway}")
        fix = ArbitrationFix(
            side="source",
            title=f"Fix source (verified {checked.verified}/{checked.total} asserted calls)",
            path=self.module_relpath,
            edits=(_minimal_edit(spec.text, new_text),),
            diff=unified_diff(self.module_relpath, spec.text, new_text),
            content_sha256=sha256_text(spec.text),
            calls_verified=checked.verified,
            calls_total=checked.total,
        )
        return result("passed", checked.message, pytest=run.message, **counts), fix

    def module_run(self, module_text: str) -> sandbox.SandboxResult:
        """The test module run in the sandbox with ``module_text`` as the module under
        test, laid out as the project imports it, failures listed (``-rfE``)."""
        view, args = laid_out(
            {**self.files, self.module_relpath: module_text},
            [self.test_relpath, "-q", "-rfE"],
            self.module_relpath,
            self.spec.module,
        )
        args = [*args, *alone_args_of(view)]
        return sandbox.run_pytest(view, args, limits=self.limits, python=self.python)

    def failing_anyway(self, run: sandbox.SandboxResult) -> str | None:
        """Why a candidate whose module run has failures still passes it, or None: the
        run finished (pytest's status 1: tests failed), ran as many tests as the module
        run against the unpatched code, and every test that failed fails there too, while
        at least one that failed there passes now. Such tests fail in the sandbox for a
        reason of the sandbox (one that starts a process, say), not of the patch."""
        found = _failures(run)
        if found is None:
            return None
        if "run" not in self.baseline:
            self.work.say(f"running {self.test_relpath} against the unpatched code")
            self.baseline["run"] = _failures(self.module_run(self.spec.text))
        baseline = self.baseline["run"]
        failed, total = found
        if baseline is None or baseline[1] != total or not failed < baseline[0]:
            return None
        shown = ", ".join(sorted(failed)[:3]) + (", …" if len(failed) > 3 else "")
        return (
            f"the module's other {len(failed)} failure(s) in the sandbox fail against the "
            f"unpatched code there too ({shown})"
        )


_SHORT_SUMMARY = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", re.MULTILINE)


def _failures(run: sandbox.SandboxResult) -> tuple[frozenset[str], int] | None:
    """(the node ids a finished run's short summary, ``-rfE``, lists as failed or errored,
    how many tests ran); None unless pytest ended with tests failed (status 1) and the
    summary names exactly as many as its counts say."""
    passed, total = pytest_counts(run.message)
    if run.returncode != 1 or not total:
        return None
    found = frozenset(_SHORT_SUMMARY.findall(run.stdout or ""))
    return (found, total) if len(found) == total - passed else None


def changed_lines(old: str, new: str) -> tuple[int, int, str]:
    """(first line, line past the last, new text): the whole lines of ``old`` between its
    common prefix and suffix with ``new``, and what replaces them."""
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    head = 0
    while head < min(len(old_lines), len(new_lines)) and old_lines[head] == new_lines[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(old_lines), len(new_lines)) - head
        and old_lines[-1 - tail] == new_lines[-1 - tail]
    ):
        tail += 1
    return head, len(old_lines) - tail, "".join(new_lines[head : len(new_lines) - tail])


def _minimal_edit(old: str, new: str) -> Edit:
    """One edit turning ``old`` into ``new``: the span between their common prefix and
    suffix (whole lines)."""
    first, past, content = changed_lines(old, new)
    old_lines = old.splitlines(keepends=True)
    start = len("".join(old_lines[:first]).encode("utf-8"))
    end = len("".join(old_lines[:past]).encode("utf-8"))
    _, edit = replace_bytes(old, start, end, content)
    return edit


def _is_test(settings: Settings, path: str) -> bool:
    return settings.is_test_file(path)
