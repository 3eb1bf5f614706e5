"""Guarded arbitration, start to end: observe, isolate, compute the truth, decide, fix.

:func:`arbitrate` decides and prepares the fix without writing anything; :func:`apply`
writes the prepared fix atomically (refusing a file that changed since it was read) and,
for a test fix, the certificate. UNCLEAR verdicts, and wrong sources without a verified
fix, go to the review queue.
"""

from __future__ import annotations

import ast
import datetime as dt
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from referee import __version__
from referee.checks import interpreter, ledger, review, sandbox
from referee.checks.arbitration.fix import (
    SourceFix,
    TestFix,
    fix_test,
    literal_mismatch,
    pytest_counts,
    pytest_run_limits,
    sha256_text,
    source_fix,
    unsafe_literal,
)
from referee.checks.arbitration.isolate import (
    EQUALITY_OPS,
    FunctionSpec,
    Isolated,
    NotIsolated,
    TestRef,
    assertion_at,
    callee_names,
    find_test,
    function_spec,
    isolate,
)
from referee.checks.arbitration.methods import method_spec
from referee.checks.arbitration.observe import (
    TestRecord,
    TestRun,
    node_id,
    run_tests,
    same_test,
)
from referee.checks.arbitration.suite import (
    SuiteScan,
    parameters,
    passing_examples,
    suite_examples,
)
from referee.checks.arbitration.truth import (
    ArbitrationError,
    Cancelled,
    LazyModel,
    ModelCrashed,
    ProgramCache,
    Progress,
    Replacements,
    agreed_value,
    doctest_evidence,
    oracle_evidence,
    reference_evidence,
    reference_for,
)
from referee.checks.arbitration.verify import AssertedCall
from referee.checks.config import DEFAULT_EXCLUDE, Settings, glob_match
from referee.checks.models import (
    ArbitrationConfig,
    ArbitrationVerdict,
    Certificate,
    Observation,
    OracleEvidence,
    OracleResult,
)
from referee.checks.nodes import excerpt
from referee.checks.pymodule import PythonModule
from referee.checks.source import SourceFile

__all__ = ["Arbitration", "ArbitrationError", "Cancelled", "LazyModel", "apply", "arbitrate"]

_PROJECT_FILES = ("pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini", "conftest.py")
_MAX_PROJECT_BYTES = 20_000_000
_MAX_FILE_BYTES = 1_000_000


@dataclass(frozen=True)
class Arbitration:
    """A verdict and what applying its fix would write."""

    verdict: ArbitrationVerdict
    root: Path
    new_text: str | None = None  # the fixed file's text
    certificate: dict[str, Any] | None = None  # fields of the certificate a test fix needs


BackendFactory = Callable[[], Any]


def arbitrate(
    test_id: str,
    settings: Settings,
    *,
    backend: BackendFactory | None = None,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    queue: bool = True,
    cache_dir: Path | None = None,
) -> Arbitration:
    """Decide which side of the failing test ``test_id`` (a pytest node id relative to the
    project root) is wrong, and prepare the fix of that side. ``backend`` opens the model
    (only called when the oracles or the patches need it). Raises
    :class:`ArbitrationError` when there is nothing to decide, :class:`Cancelled` when
    ``cancelled()`` turns true."""
    started = time.monotonic()
    root = settings.root.resolve()
    try:
        test = TestRef.parse(node_id(test_id))  # ./tests/../tests/t.py is tests/t.py
    except ValueError as exc:
        raise ArbitrationError(str(exc)) from None
    test_path = root / test.path
    try:
        test_text = test_path.read_bytes().decode("utf-8")  # no newline translation
    except FileNotFoundError:
        raise ArbitrationError(f"{test.path}: no such file under {root}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ArbitrationError(f"{test.path}: cannot read: {exc}") from None
    source = SourceFile(test.path, test_text)

    def say(message: str) -> None:
        if progress is not None:
            progress(message)

    def asked_to_stop() -> bool:
        return cancelled is not None and cancelled()

    def stop_if_cancelled() -> None:
        if asked_to_stop():
            raise Cancelled

    # the project's interpreter (a bad `python` setting is a ConfigError), with pytest
    python = interpreter.for_settings(settings)
    problem = interpreter.pytest_problem(python)
    if problem is not None:
        raise ArbitrationError(problem)
    say(f"running {test_id}")
    test_timeout = settings.config.arbitration.test_timeout
    run = run_tests(
        root,
        [test_id],
        names=callee_names(source, test),
        # the test's call may run test-timeout seconds; collection and the rest get a grace
        timeout=test_timeout + max(10.0, test_timeout / 2),
        hang_after=test_timeout,
        python=python,
    )
    stop_if_cancelled()
    record = _failing_record(run, test_id, root / test.path)
    context = _Context(
        test_id=record.nodeid,
        test=test,
        source=source,
        root=root,
        settings=settings,
        record=record,
        started=started,
        queue=queue,
    )

    def stopped() -> bool:
        """The caller asked to stop, or the time budget is spent."""
        return asked_to_stop() or context.out_of_time()

    try:
        return context.decide(backend, say, stopped, cache_dir)
    except Cancelled:
        if asked_to_stop() or not context.out_of_time():
            raise
        # Nothing was certified in time: what the oracles said so far goes to a person.
        return context.unclear(
            f"ran out of its time budget ({context.config.time_budget:g} s, "
            "arbitration.time-budget) before a truth was certified"
            + (
                ": " + "; ".join(_evidence_line(r) for r in context.oracles)
                if context.oracles
                else ""
            )
        )
    except NotIsolated as exc:
        return context.unclear(str(exc))
    except ModelCrashed as exc:
        # No truth was computed: the oracles' or patches' model died. A person decides.
        return context.unclear(str(exc))


def _failing_record(run: TestRun, test_id: str, test_path: Path) -> TestRecord:
    # pytest's node id may be spelled differently from the one asked for (an escaped
    # parameter id, ``./`` or ``tests/../`` in the path): matched as pytest spells ids
    matching = [r for r in run.records if same_test(r.nodeid, test_id)]
    if not any(r.failed for r in matching) and run.hung is not None:
        hung = run.hung
        if same_test(hung.nodeid, test_id):
            # A call that never returns is a red test too: observed as what it did not do,
            # at the innermost line of the test module on its stack.
            test_file = str(test_path.resolve())
            line = next((n for f, n in run.hung_frames if _same_file(f, test_file)), None)
            return replace(
                hung,
                when="call",
                outcome="failed",
                crash={
                    "type": "Timeout",
                    "message": f"did not return within {_seconds(run.hung_after or 0)} s",
                    "assertion": False,
                    "file": test_file,
                    "line": line,
                    "hung": run.hung_after,
                },
            )
    if run.timed_out:
        raise ArbitrationError(f"{test_id} did not finish in time (arbitration.test-timeout)")
    failed = [r for r in matching if r.failed]
    reported = run.reported(test_id)
    if reported and not failed:
        # pytest's own summary is the authority on what failed: never "ran no test"
        noted = "; ".join(run.recorder_notes) or (
            "it wrote no record of it (a fixture that replaced what the recorder uses, or a "
            "plugin that ended the run?)"
            if not matching
            else f"it recorded the test as {matching[0].outcome or 'not failed'}"
        )
        raise ArbitrationError(
            f"pytest reports {reported[0]} failed but referee's recorder saw nothing: "
            f"{noted}\n{run.tail()}"
        )
    if not matching:
        raise ArbitrationError(
            f"pytest ran no test {test_id} (exit status {run.returncode}):\n{run.tail()}"
        )
    if not failed:
        raise ArbitrationError(f"{test_id} passes: there is nothing to arbitrate")
    return failed[0]


@dataclass
class _Context:
    test_id: str
    test: TestRef
    source: SourceFile
    root: Path
    settings: Settings
    record: TestRecord
    started: float
    queue: bool
    observation: Observation | None = None
    oracles: tuple[OracleResult, ...] = ()
    spec: FunctionSpec | None = None
    replacements: Replacements | None = None
    # the suite's assertions the oracles are written from (a function with no docstring)
    suite: tuple[tuple[str, str, str], ...] | None = None
    suite_evidence: tuple[str, ...] = ()

    @property
    def config(self) -> ArbitrationConfig:
        return self.settings.config.arbitration

    def out_of_time(self) -> bool:
        """Whether the arbitration has run past ``time-budget`` (0: no limit)."""
        budget = self.config.time_budget
        return bool(budget) and time.monotonic() > self.started + budget

    # ------------------------------------------------------------------ the verdicts

    def verdict(self, **fields: Any) -> ArbitrationVerdict:
        obs = self.observation
        base = {
            "version": __version__,
            "test_id": self.test_id,
            "call": obs.call if obs else None,
            "produced": (obs.produced or obs.produced_error) if obs else None,
            "asserted": obs.asserted if obs else None,
            "oracles": self.oracles,
            "oracles_replaced": len(self.replacements.replaced) if self.replacements else 0,
            "replaced_oracles": tuple(self.replacements.replaced) if self.replacements else (),
            "observation": obs,
            "spec_examples": self.suite_evidence,
            "call_forms": obs.call_forms if obs else (),
            "duration_s": round(time.monotonic() - self.started, 3),
        }
        return ArbitrationVerdict(**{**base, **fields})

    def unclear(self, reason: str, **fields: Any) -> Arbitration:
        verdict = self.verdict(verdict="UNCLEAR", reason=reason, **fields)
        return Arbitration(self._queued(verdict, f"Arbitration UNCLEAR: {reason}"), self.root)

    def _queued(self, verdict: ArbitrationVerdict, title: str) -> ArbitrationVerdict:
        if not self.queue:
            return verdict
        obs = self.observation
        content = "\0".join(
            [
                obs.assertion if obs else self.test_id,
                self.spec.definition if self.spec else "",
            ]
        )
        item = review.new_item(
            kind="arbitration",
            path=self.test.path,
            line=obs.line if obs else 1,
            subject=self.test_id,
            content_sha256=sha256_text(content),
            title=title,
            reasons=[verdict.reason],
            evidence=[_evidence_line(r) for r in verdict.oracles]
            # where the suite's assertions the oracles were written from are
            + [f"suite: {e}" for e in verdict.spec_examples]
            + ([f"produced {verdict.produced}", f"asserted {verdict.asserted}"] if obs else [])
            # why each candidate patch was not offered: refused (and what it added), or
            # the value referee found wrong
            + [
                f"patch {p.candidate} ({p.origin}): {p.status}: {p.message}"
                for p in verdict.patches
            ],
        )
        try:
            queued, _ = review.submit(self.root, item)
        except OSError:
            return verdict  # the verdict stands; the queue is a convenience
        return verdict.model_copy(update={"review_item": queued.id})

    # ------------------------------------------------------------------ the procedure

    def decide(
        self,
        backend: BackendFactory | None,
        say: Progress,
        cancelled: Callable[[], bool] | None,
        cache_dir: Path | None,
    ) -> Arbitration:
        record = self.record
        if record.when != "call":
            crash = record.crash or {}
            return self.unclear(
                f"the test failed in {record.when}, before its assertion ran: "
                f"{crash.get('type', 'error')}: {crash.get('message', '')}".rstrip(": ")
            )
        line, comparison = self._failing_line()
        isolated = isolate(
            self.source,
            self.test,
            line,
            record.indices,
            (record.crash or {}).get("locals"),
            self._project_callees(),
        )
        resolved = record.names.get(isolated.callee)
        if not resolved or not resolved.get("file") or not resolved.get("qualname"):
            raise NotIsolated(
                f"cannot isolate the call under test: `{isolated.callee}` does not resolve to "
                "a Python function the test module imports"
            )
        self.observation = self._observation(isolated, comparison, resolved)
        obs = self.observation
        function_file = Path(resolved["file"])
        try:
            function_text = function_file.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise NotIsolated(f"cannot read {function_file}: {exc}") from None
        self.spec = spec = _subject_spec(
            isolated, resolved, record.names, function_text, str(function_file)
        )
        function_relpath = self._relative(function_file)
        files = _LazyFiles(self.root, self.settings)

        # Every way on from here runs code in the sandbox (a reference, oracles, the test
        # module with a fix); where the sandbox has no kernel boundary, none of it runs.
        refused = sandbox.boundary_problem(
            pytest_run_limits(self.config), interpreter.for_settings(self.settings)
        )
        if refused is not None:
            return self.unclear(refused)

        # --- the truth, from sources that saw neither the body nor the test
        sources: list[OracleResult] = []
        model: Any = None
        arguments = isolated.oracle_arguments  # a method's: the constructor's too
        doctest = doctest_evidence(spec, arguments, isolated.wrapper)
        if doctest is not None:
            sources.append(doctest)
        reference = reference_for(
            self.config,
            [
                f"{spec.module}:{spec.qualname}",
                f"{function_relpath or function_file}:{spec.qualname}",
            ],
        )
        if reference is not None:
            say(f"running the reference {reference}")
            sources.append(
                reference_evidence(
                    reference,
                    arguments,
                    self.config,
                    files.get(),
                    isolated.wrapper,
                    python=interpreter.for_settings(self.settings),
                )
            )
        if sources:
            if isolated.op == "raises":
                sources = [_outcome(r) for r in sources]
            self.oracles = tuple(sources)
            values = [s.value for s in sources if s.status == "ok" and s.value is not None]
            if len(values) != len(sources) or not all(
                sandbox.values_equal(values[0], v) for v in values
            ):
                return self.unclear(
                    "the explicit sources do not agree: "
                    + "; ".join(_evidence_line(s) for s in sources)
                )
            truth, truth_source = values[0], "+".join(s.source for s in sources)
        else:
            if not spec.docstring_value and spec.class_stub is not None:
                return self.unclear(_no_method_truth(spec, function_relpath))
            if not spec.docstring_value:
                # The specification its author committed to: the suite's passing
                # assertions about it (never the failing one, nor one changed now).
                scan = self._suite_scan(spec, arguments, function_relpath, files, say)
                needed = self.config.suite_examples
                if not needed or len(scan.found) < needed:
                    return self.unclear(_no_truth(spec, arguments, scan, needed, function_relpath))
                self.suite = tuple(scan.examples)
            if backend is None:
                raise ArbitrationError("arbitration needs a model for the oracles; none is set up")
            model = backend()
            self.replacements = Replacements(self.config.oracle_replacements)
            self.oracles = tuple(
                oracle_evidence(
                    spec,
                    arguments,
                    model,
                    self.config,
                    ProgramCache(cache_dir),
                    say,
                    cancelled,
                    replacements=self.replacements,
                    wrapper=isolated.wrapper,
                    suite=self.suite,
                    raises=_exception_name(isolated) if isolated.op == "raises" else None,
                )
            )
            if isolated.op == "raises":
                self.oracles = tuple(_outcome(r) for r in self.oracles)
            truth = agreed_value(self.oracles, self.config.required_agreement)
            truth_source = "oracles"
            if self.suite:
                truth_source = f"oracles (spec from suite: {len(self.suite)} examples)"
            if truth is None:
                replaced = len(self.replacements.replaced)
                return self.unclear(
                    f"the {self.config.oracles} oracles do not agree "
                    f"(certifying needs {self.config.required_agreement}): "
                    + "; ".join(_evidence_line(r) for r in self.oracles)
                    + (f" ({replaced} that did not run replaced)" if replaced else "")
                )

        # --- the verdict
        history = _history(self.root, self.test.path, isolated.expected.line)
        if isolated.op == "raises":
            return self._raises_verdict(isolated, truth, truth_source, history)
        if isolated.op not in EQUALITY_OPS:
            return self._expectation_verdict(
                isolated,
                truth,
                truth_source,
                history,
                function_relpath,
                files,
                backend,
                say,
                cancelled,
                cache_dir,
            )
        produced_ok = obs.produced is not None and sandbox.values_equal(truth, obs.produced)
        asserted_ok = obs.asserted is not None and sandbox.values_equal(truth, obs.asserted)
        if (
            produced_ok
            and not asserted_ok
            and isolated.expected.kind
            in (
                "local",
                "implicit",
                "computed",
            )
        ):
            # The expected value was read from the failing frame (a loop's case, a local):
            # there is no literal that holds it to replace, so the test is not edited.
            return self.unclear(
                f"the truth ({truth}, from {truth_source}) equals what the code produced; the "
                f"test's expected value `{excerpt(isolated.expected.text)}` came from the "
                "test's locals as it ran (a loop over a table, a local), not from a literal "
                "referee can replace: the test is not edited",
                truth=truth,
                truth_source=truth_source,
                history=history,
            )
        if produced_ok and not asserted_ok:
            if truth_source.startswith("oracles"):
                refused = self._confirm_test_edit(
                    model, arguments, truth, say, cancelled, cache_dir, isolated.wrapper
                )
                if refused is not None:
                    return refused
            return self._test_wrong(isolated, truth, truth_source, history, files, say)
        if asserted_ok and not produced_ok:
            return self._source_wrong(
                isolated,
                truth,
                truth_source,
                history,
                function_relpath,
                files,
                backend,
                say,
                cancelled,
                cache_dir,
            )
        if produced_ok and asserted_ok:
            reason = f"the truth ({truth}) equals both the produced and the asserted value"
        else:
            reason = (
                f"the truth ({truth}, from {truth_source}) equals neither the produced value "
                f"({obs.produced or obs.produced_error}) nor the asserted one ({obs.asserted})"
            )
        return self.unclear(reason, truth=truth, truth_source=truth_source, history=history)

    def _raises_verdict(
        self, isolated: Isolated, truth: str, truth_source: str, history: str | None
    ) -> Arbitration:
        """The test expects the call to raise: when the truth is that it raises that
        exception and the code did not, the source is wrong. No fix is tried — a patch
        would be held to a value, and this truth is an exception. When the truth returns,
        or raises another exception, the test may be wrong, but what a test expects to
        raise is not an expected value referee edits: a person decides."""
        assert self.observation is not None
        obs = self.observation
        expected = _raised(isolated.expected.text)
        common = {"truth": truth, "truth_source": truth_source, "history": history}
        if not sandbox.values_equal(truth, expected):
            return self.unclear(
                f"the truth ({truth}, from {truth_source}) is not what the test expects "
                f"({isolated.call} {expected}): the test may be wrong, but referee does not "
                "edit what a test expects to raise",
                **common,
            )
        reason = (
            f"the truth ({truth}, from {truth_source}) is what the test expects; the code "
            f"{obs.produced_error}; no fix is tried for an expected exception"
        )
        verdict = self.verdict(verdict="SOURCE_WRONG", reason=reason, **common)
        return Arbitration(self._queued(verdict, "Source is wrong; no verified fix"), self.root)

    def _expectation_verdict(
        self,
        isolated: Isolated,
        truth: str,
        truth_source: str,
        history: str | None,
        function_relpath: str | None,
        files: _LazyFiles,
        backend: BackendFactory | None,
        say: Progress,
        cancelled: Callable[[], bool] | None,
        cache_dir: Path | None,
    ) -> Arbitration:
        """A boolean, identity or membership assertion: the truth decides by whether it
        meets the test's expectation. Only the source is ever blamed and fixed. When the
        truth does not meet it, the test looks wrong, but the fix would be to turn the
        assertion around (assertTrue into assertFalse, drop a ``not``, a member for
        another) — an edit of what the test means, not of one value, that no certificate
        covers; a person decides."""
        assert self.observation is not None
        obs = self.observation
        expectation = _expectation(isolated)
        meets = _meets(isolated.op, isolated.call_side, truth, isolated.expected.text)
        if meets is None:
            return self.unclear(
                f"the truth ({excerpt(truth)}, from {truth_source}) is not a literal value "
                f"referee can check the test's expectation ({expectation}) against",
                truth=truth,
                truth_source=truth_source,
                history=history,
            )
        if not meets:
            return self.unclear(
                f"the truth ({truth}, from {truth_source}) does not meet the test's "
                f"expectation ({expectation}), as what the code produced "
                f"({obs.produced or obs.produced_error}) does not: the test may be wrong, but "
                "referee edits only the expected value of an equality, not a "
                f"{isolated.op} assertion",
                truth=truth,
                truth_source=truth_source,
                history=history,
            )
        if obs.produced is not None and _meets(
            isolated.op, isolated.call_side, obs.produced, isolated.expected.text
        ):
            return self.unclear(
                f"the truth ({truth}, from {truth_source}) and what the code produced "
                f"({obs.produced}) both meet the test's expectation ({expectation}), yet it "
                "failed",
                truth=truth,
                truth_source=truth_source,
                history=history,
            )
        # The source is wrong: a fixed source must give the truth itself on this call.
        return self._source_wrong(
            replace(isolated, op="=="),
            truth,
            truth_source,
            history,
            function_relpath,
            files,
            backend,
            say,
            cancelled,
            cache_dir,
            agrees=f"meets the test's expectation ({expectation})",
        )

    def _fix_programs(
        self,
        isolated: Isolated,
        truth: str,
        backend: BackendFactory,
        say: Progress,
        cancelled: Callable[[], bool] | None,
        cache_dir: Path | None,
    ) -> list[tuple[str, str]]:
        """Oracle programs written only as candidate fixes, when the truth came from a
        doctest or a reference and no oracle was needed for it: independent
        implementations of the docstring, kept when they give the truth on the failing
        call (and, as every oracle, the docstring's own examples). They decide nothing."""
        assert self.spec is not None
        written = oracle_evidence(
            self.spec,
            isolated.oracle_arguments,
            backend(),
            self.config,
            ProgramCache(cache_dir),
            say,
            cancelled,
            replacements=Replacements(self.config.oracle_replacements),
            wrapper=isolated.wrapper,
        )
        return [
            (r.source, r.program)
            for r in written
            if r.program and r.value is not None and sandbox.values_equal(truth, r.value)
        ]

    def _confirm_test_edit(
        self,
        model: Any,
        arguments: str,
        truth: str,
        say: Progress,
        cancelled: Callable[[], bool] | None,
        cache_dir: Path | None,
        wrapper: str | None = None,
    ) -> Arbitration | None:
        """A test edit is the one move the guard exists to stop, and k oracles of one model
        can share one misreading of the docstring. So before oracles alone certify it,
        more are written (``test_edit_oracles``) and they must agree as well; None when
        they do, else the UNCLEAR verdict that says they do not."""
        config = self.config
        total, needed = config.test_edit_total, config.test_edit_agreement
        if total <= config.oracles:
            return None
        assert self.spec is not None
        # Candidates written in place of failed oracles that ran but were not needed are
        # oracles of this same call already: the first of the extra ones, in the order
        # they were written, whatever their values.
        spares: list[OracleResult] = []
        if self.replacements is not None:
            spares = self.replacements.spares[: total - config.oracles]
            del self.replacements.spares[: len(spares)]
        seeds = range(config.oracles + 1, total + 1 - len(spares))
        extra = spares + (
            oracle_evidence(
                self.spec,
                arguments,
                model,
                config,
                ProgramCache(cache_dir),
                say,
                cancelled,
                seeds=seeds,
                replacements=self.replacements,
                wrapper=wrapper,
                suite=self.suite,
            )
            if seeds
            else []
        )
        self.oracles = (*self.oracles, *extra)
        confirmed = agreed_value(self.oracles, needed)
        if confirmed is not None and sandbox.values_equal(confirmed, truth):
            return None
        return self.unclear(
            f"the {config.oracles} oracles agree with what the code produced ({truth}), but "
            f"editing the test needs {needed} of {total} oracles to agree and the "
            f"{total - config.oracles} more do not: " + "; ".join(_evidence_line(r) for r in extra)
        )

    def _suite_scan(
        self,
        spec: FunctionSpec,
        arguments: str,
        function_relpath: str | None,
        files: _LazyFiles,
        say: Progress,
    ) -> SuiteScan:
        """The project's passing assertions about ``spec``'s function that the working
        diff did not change, the failing test and the failing call's arguments left out
        (:mod:`referee.checks.arbitration.suite`); recorded as the verdict's evidence."""
        needed = self.config.suite_examples
        if not needed:
            return SuiteScan()
        say(f"reading the suite's assertions about {spec.name}")
        scan = suite_examples(
            self.root,
            spec.name,
            spec.module,
            self.test.path,
            (self.test.cls, self.test.name),
            arguments,
            exclude=self.settings.config.exclude,
            signature=parameters(spec.signature),
        )
        if function_relpath is None:
            scan.notes.append(f"{spec.name} is outside the project: its assertions were not run")
            scan.found = []
        elif len(scan.found) >= needed:
            say(f"running {len(scan.found)} of the suite's assertions on the current code")
            passing_examples(
                scan, spec.name, function_relpath, files.get(), pytest_run_limits(self.config)
            )
        left_out = ", ".join(f"{n} {why}" for why, n in scan.excluded.items())
        self.suite_evidence = (
            *(f.where for f in scan.found),
            *([f"left out: {left_out}"] if left_out else []),
            *scan.notes,
        )
        return scan

    def _failing_line(self) -> tuple[int, dict[str, Any] | None]:
        """The line of the failing assertion in the test file, and its comparison."""
        test_file = str((self.root / self.test.path).resolve())
        record = self.record
        mine = [c for c in record.comparisons if _same_file(c.get("file"), test_file)]
        crash = record.crash or {}
        crash_line = (
            int(crash["line"])
            if crash.get("line") and _same_file(crash.get("file"), test_file)
            else None
        )
        if mine:
            line = int(mine[-1]["line"])
            if crash_line is None or self._same_assertion(line, crash_line):
                return line, mine[-1]
            # a comparison that failed earlier and was caught (pytest.raises, a try), and
            # an assertion that compares nothing (assert f(x)) failing where the test did
        if crash_line is not None:
            return crash_line, None
        raise NotIsolated(
            "cannot isolate the call under test: the failure did not happen in the test "
            f"module ({crash.get('type', 'error')}: {crash.get('message', '')})"
        )

    def _same_assertion(self, line: int, other: int) -> bool:
        """Whether two lines of the test file belong to one assertion of the test (true
        when that cannot be told: the comparison's line is kept, as it always was)."""
        if line == other:
            return True
        try:
            fn = find_test(PythonModule(self.source, is_test_file=True), self.test)
            node = assertion_at(self.source, fn, line)
        except NotIsolated:
            return True
        return node.start_point.row + 1 <= other <= node.end_point.row + 1

    def _project_callees(self) -> frozenset[str]:
        """The dotted names the run resolved to Python functions in the project's own
        files (not a virtual environment's, not the standard library's)."""
        names = set()
        for dotted, where in self.record.names.items():
            path = where.get("file")
            relative = self._relative(Path(path)) if path else None
            if relative is None or any(
                part in (".venv", "venv", "site-packages", ".tox", ".nox")
                for part in relative.split("/")
            ):
                continue
            names.add(dotted)
        return frozenset(names)

    def _observation(
        self, isolated: Isolated, comparison: dict[str, Any] | None, resolved: dict[str, Any]
    ) -> Observation:
        produced = asserted = produced_error = timeout_s = None
        crash = self.record.crash or {}
        if isolated.op == "raises":
            produced_error = _raises_observed(isolated, crash)
            asserted = _raised(isolated.expected.text)
        elif comparison is not None:
            produced = comparison["left"] if isolated.call_side == "left" else comparison["right"]
            asserted = comparison["right"] if isolated.call_side == "left" else comparison["left"]
            if isolated.expected.kind == "implicit":
                asserted = isolated.expected.text  # assertTrue's True, assertIsNone's None
        elif (
            crash.get("assertion")
            and crash.get("raised_here")
            and isolated.op
            in (
                "truthy",
                "falsy",
            )
        ):
            # ``assert f(x)`` / ``assert not f(x)`` compares nothing: what the call gave is
            # what pytest's rewritten assertion shows ("assert []\n +  where [] = f(3)")
            produced = _shown_value(str(crash.get("message", "")), isolated.op)
            asserted = isolated.expected.text
        elif isolated.expected.kind == "computed":
            raise NotIsolated(
                "cannot isolate the call under test: the expected value "
                f"`{excerpt(isolated.expected.text)}` is computed by the test, and the failure "
                "recorded no comparison that shows its value"
            )
        else:
            # An AssertionError is what the call raised only when the function's own file
            # raised it — not the test's line, not an assertion helper elsewhere.
            if crash.get("assertion") and not _same_file(crash.get("raised_in"), resolved["file"]):
                raise NotIsolated(
                    "cannot isolate the call under test: the assertion failed without a "
                    "comparison pytest could report"
                )
            if crash.get("hung"):
                timeout_s = float(crash["hung"])
                produced_error = str(crash.get("message", ""))
            else:
                produced_error = f"{crash.get('type', 'Exception')}: {crash.get('message', '')}"
            try:
                asserted = repr(ast.literal_eval(isolated.expected.text))
            except (ValueError, SyntaxError):
                asserted = isolated.expected.text
        kind = resolved.get("kind")
        forms = isolated.forms + (
            (kind,)
            if kind in ("method", "staticmethod", "classmethod") and isolated.constructor is None
            else ()
        )
        return Observation(
            test_id=self.test_id,
            path=self.test.path,
            line=isolated.line,
            assertion=isolated.assertion,
            op=isolated.op,
            call=isolated.call,
            function=f"{resolved.get('module')}:{resolved.get('qualname')}",
            function_path=self._relative(Path(resolved["file"])) or resolved["file"],
            produced=produced,
            produced_error=produced_error,
            timeout_s=timeout_s,
            asserted=asserted,
            expected_text=isolated.expected.text,
            expected_site=isolated.expected.kind,
            call_forms=forms,
        )

    def _relative(self, path: Path) -> str | None:
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None

    # ------------------------------------------------------------------ the fixes

    def _test_wrong(
        self,
        isolated: Isolated,
        truth: str,
        truth_source: str,
        history: str | None,
        files: _LazyFiles,
        say: Progress,
    ) -> Arbitration:
        assert self.spec is not None and self.observation is not None
        fixed: TestFix = fix_test(
            self.source.text,
            self.test.path,
            isolated.expected,
            truth,
            (isolated.assertion_start, isolated.assertion_end),
        )
        # The value comes from programs (oracles a model wrote, a reference): data, and
        # data is what gets written — a literal, or a call of a plain name with literal
        # arguments (Fraction(3, 2)) — never code that does something when the test runs.
        problem = unsafe_literal(fixed.fix.new_value or "")
        if problem is not None:
            return self.unclear(
                f"the truth ({excerpt(truth)}, from {truth_source}) equals what the code "
                f"produced, but it is not a value referee writes into a test ({problem}); "
                "nothing is certified",
                truth=truth,
                truth_source=truth_source,
                history=history,
            )

        def still_fails(detail: str) -> Arbitration:
            return self.unclear(
                f"the truth ({truth}, from {truth_source}) equals what the code produced, but "
                f"the test with `{excerpt(fixed.fix.new_value or '')}` written in still does "
                f"not pass ({detail}); nothing is certified",
                truth=truth,
                truth_source=truth_source,
                history=history,
            )

        # The certificate says the corrected test is right, so the corrected test must pass:
        # a value compared within a tolerance but written exactly (0.3 for
        # 0.30000000000000004), or one whose repr names what the module never imported
        # (Fraction(3, 2)), would otherwise be written, certified, and still fail. Where
        # both are literals referee compares them itself, with the test's operator; then
        # the corrected test runs in the sandbox — the user's test and the user's code, no
        # model-written code — which must pass too.
        mismatch = literal_mismatch(
            isolated.op, fixed.fix.new_value or "", self.observation.produced
        )
        if mismatch is not None:
            return still_fails(mismatch)
        say(f"running {self.test_id} with the corrected assertion")
        run = sandbox.run_pytest(
            {**files.get(), self.test.path: fixed.new_text},
            [self.test_id, "-q", "-p", "no:cacheprovider"],
            limits=pytest_run_limits(self.config),
            python=interpreter.for_settings(self.settings),
        )
        passed, total = pytest_counts(run.message)
        if not (run.status == "ok" and total and passed == total):
            return still_fails(run.message or run.status)
        certificate = {
            "test_id": self.test_id,
            "call": isolated.call,
            "old_value": isolated.expected.text,
            "new_value": fixed.fix.new_value,
            "evidence": [
                OracleEvidence(source=r.source, value=r.value or "", detail=r.detail or None)
                for r in self.oracles
                if r.status == "ok" and r.value is not None and sandbox.values_equal(truth, r.value)
            ],
            "source_sha256": sha256_text(self.spec.definition),
            "test_sha256": ledger.normalized_text_hash(fixed.bound_text),
            "created": _now(),
        }
        verdict = self.verdict(
            verdict="TEST_WRONG",
            truth=truth,
            truth_source=truth_source,
            fix=fixed.fix,
            history=history,
            reason=(
                f"the truth ({truth}, from {truth_source}) equals what the code produced; "
                f"the test asserted {self.observation.asserted}"
            ),
        )
        return Arbitration(verdict, self.root, fixed.new_text, certificate)

    def _source_wrong(
        self,
        isolated: Isolated,
        truth: str,
        truth_source: str,
        history: str | None,
        function_relpath: str | None,
        files: _LazyFiles,
        backend: BackendFactory | None,
        say: Progress,
        cancelled: Callable[[], bool] | None,
        cache_dir: Path | None,
        agrees: str = "equals what the test asserted",
    ) -> Arbitration:
        assert self.spec is not None and self.observation is not None
        obs = self.observation
        reason = f"the truth ({truth}, from {truth_source}) {agrees}; " + (
            f"the call {obs.produced_error}"
            if obs.timeout_s
            else f"the code produced {obs.produced or obs.produced_error}"
        )
        common = {
            "verdict": "SOURCE_WRONG",
            "truth": truth,
            "truth_source": truth_source,
            "history": history,
        }
        why_not = None
        if function_relpath is None:
            why_not = f"{obs.function_path} is outside the project"
        elif self.config.candidates == 0:
            why_not = "arbitration.candidates is 0"
        elif backend is None:
            why_not = "no model to write candidate patches"
        if why_not is not None:
            verdict = self.verdict(**common, reason=f"{reason}; no verified fix ({why_not})")
            return Arbitration(self._queued(verdict, "Source is wrong; no verified fix"), self.root)
        assert function_relpath is not None and backend is not None
        try:
            result = self._source_fix(
                isolated, truth, function_relpath, files, backend, say, cancelled, cache_dir
            )
        except Cancelled:
            if not self.out_of_time():
                raise
            budget = self.config.time_budget
            verdict = self.verdict(
                **common,
                reason=f"{reason}; no verified fix (the time budget, {budget:g} s, "
                "ran out while candidates were tried)",
            )
            return Arbitration(self._queued(verdict, "Source is wrong; no verified fix"), self.root)
        if result.fix is None:
            verdict = self.verdict(
                **common,
                patches=result.patches,
                reason=f"{reason}; source is wrong; no verified fix "
                f"({len(result.patches)} candidate(s) tried)",
            )
            return Arbitration(self._queued(verdict, "Source is wrong; no verified fix"), self.root)
        verdict = self.verdict(**common, patches=result.patches, fix=result.fix, reason=reason)
        return Arbitration(verdict, self.root, result.new_text)

    def _source_fix(
        self,
        isolated: Isolated,
        truth: str,
        function_relpath: str,
        files: _LazyFiles,
        backend: BackendFactory,
        say: Progress,
        cancelled: Callable[[], bool] | None,
        cache_dir: Path | None,
    ) -> SourceFix:
        """Candidate patches (the oracles' programs that give the truth first), each kept
        only when the test module's asserted calls give the right values and it passes."""
        assert self.spec is not None and self.observation is not None
        obs = self.observation
        spec = self.spec
        function = spec.qualname  # Owner.name for a static or class method
        if isolated.constructor is not None:  # a method of an object built from literals
            function = f"{spec.owner}({', '.join(isolated.constructor_arguments)}).{spec.name}"
        # An oracle of a method or class method is a function of another signature (the
        # constructor's arguments, no ``self`` or ``cls``): not a body for the method.
        as_fixes = spec.class_stub is None
        return source_fix(
            spec,
            function_relpath,
            self.test.path,
            files.get(),
            AssertedCall(
                where=f"{self.test.path}:{isolated.line} ({self.test.name})",
                function=function,
                arguments=isolated.arguments,
                expected=truth,
                op=isolated.op,
                wrapper=isolated.wrapper,
            ),
            obs.produced
            or (obs.produced_error if obs.timeout_s else f"raises {obs.produced_error}"),
            truth,
            backend(),
            self.config,
            self.settings,
            ProgramCache(cache_dir),
            [
                (r.source, r.program)
                for r in self.oracles
                if as_fixes
                and r.program
                and r.value is not None
                and sandbox.values_equal(truth, r.value)
            ],
            say,
            cancelled,
            more_programs=(
                lambda: self._fix_programs(isolated, truth, backend, say, cancelled, cache_dir)
            )
            if as_fixes
            else None,
        )


# ---------------------------------------------------------------------------- applying


def apply(result: Arbitration) -> Arbitration:
    """Write the prepared fix atomically (refused if the file changed since arbitration
    read it) and, for a test fix, append its certificate. Returns the applied verdict."""
    from referee.checks.atomic import write_text_atomic

    verdict = result.verdict
    fix = verdict.fix
    if fix is None or result.new_text is None:
        raise ArbitrationError(f"{verdict.verdict}: there is no fix to apply")
    path = result.root / fix.path
    old_bytes = path.read_bytes()
    write_text_atomic(path, result.new_text, expected_sha256=fix.content_sha256)
    certificate: Certificate | None = None
    if fix.side == "test" and result.certificate is not None:
        try:
            certificate = ledger.append(result.root, result.certificate)
        except OSError:
            # Without its certificate the edit is an uncertified change: take it back.
            write_text_atomic(path, old_bytes.decode("utf-8"))
            raise
    applied = verdict.model_copy(update={"applied": True, "certificate": certificate})
    return replace(result, verdict=applied)


# ---------------------------------------------------------------------------- helpers


class _LazyFiles:
    """The project's Python and pytest configuration files, read once when needed: what
    the sandbox must hold for a reference or the test module to import what they import."""

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = root
        self.settings = settings
        self._files: dict[str, str] | None = None

    def get(self) -> dict[str, str]:
        if self._files is None:
            self._files = project_files(self.root, self.settings)
        return self._files


def walk(root: Path, settings: Settings) -> Iterator[tuple[str, Path]]:
    """(relative posix path, path) of the project's files, in a stable order, without
    the directories nobody checks (``.git``, virtual environments, ``exclude``)."""
    for directory, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(directory, root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        dirnames[:] = sorted(
            d
            for d in dirnames
            if not d.startswith(".")
            and not any(glob_match(f"{rel_dir}{d}/", p) for p in DEFAULT_EXCLUDE)
            and not settings.is_excluded(f"{rel_dir}{d}/")
        )
        for name in sorted(filenames):
            yield f"{rel_dir}{name}", Path(directory, name)


def project_files(root: Path, settings: Settings) -> dict[str, str]:
    """The project's Python files and pytest configuration, what the sandbox needs for a
    reference or a test module to import what they import (size-capped)."""
    files: dict[str, str] = {}
    total = 0
    for relpath, path in walk(root, settings):
        if not (relpath.endswith(".py") or path.name in _PROJECT_FILES):
            continue
        try:
            size = path.stat().st_size
            if size > _MAX_FILE_BYTES or total + size > _MAX_PROJECT_BYTES:
                continue
            files[relpath] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        total += size
    return files


def _same_file(a: Any, b: str) -> bool:
    if not a:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(str(a)) == b


def _no_truth(
    spec: FunctionSpec,
    arguments: str,
    scan: SuiteScan,
    needed: int,
    function_relpath: str | None,
) -> str:
    """One line: what truth was missing for an UNCLEAR verdict, and what the user can add."""
    count = len(scan.found)
    if not needed:
        suite = "and the suite's assertions are not used (arbitration.suite-examples = 0)"
    else:
        noun = "assertion" if count == 1 else "assertions"
        suite = f"and only {count} passing {noun} about it in the suite ({needed} needed)"
        if count == 0:
            suite = f"and no passing assertion about it in the suite ({needed} needed)"
        if scan.excluded:
            suite += " — left out: " + ", ".join(f"{n} {w}" for w, n in scan.excluded.items())
    key = f"{spec.module}:{spec.name}" if spec.module else f"{function_relpath}:{spec.name}"
    return (
        f"no independent truth for `{spec.name}`: no docstring, no doctest for this call, no "
        f"reference, {suite} — add a docstring example (`>>> {spec.name}({arguments})`), a "
        f'reference (`[arbitration.references]` "{key}" = ...), or a literal case '
        f"(`assert {spec.name}(...) == value`) to a committed test"
    )


def _no_method_truth(spec: FunctionSpec, function_relpath: str | None) -> str:
    """One line: why a method (or class method) with no docstring has no truth."""
    key = f"{spec.module}:{spec.qualname}" if spec.module else f"{function_relpath}:{spec.qualname}"
    return (
        f"no independent truth for `{spec.qualname}`: neither the method nor its class "
        "has a docstring, no reference, and the suite's assertions are read for functions "
        f"only — add a docstring example (`>>> {spec.owner}(...).{spec.name}(...)`) or a "
        f'reference (`[arbitration.references]` "{key}" = ..., a function of '
        f"{spec.signature.removeprefix('def ').rstrip(':')})"
    )


def _subject_spec(
    isolated: Isolated,
    resolved: dict[str, Any],
    names: dict[str, dict[str, Any]],
    text: str,
    path: str,
) -> FunctionSpec:
    """The function (or static method) the call under test calls; a method of an object
    the test builds from literals, or a class method, with its oracle contract."""
    module, qualname = resolved.get("module") or "", resolved["qualname"]
    if isolated.constructor is not None:
        built = names.get(isolated.constructor) or {}
        owner = qualname.rpartition(".")[0]
        if (built.get("qualname"), built.get("file")) != (owner, resolved.get("file")):
            # an inherited method, or an object a factory function builds: the oracles
            # would be told of another constructor than the one the test calls
            raise NotIsolated(
                f"cannot isolate the call under test: `{isolated.callee}` is "
                f"`{qualname}`, not a method the class `{isolated.constructor}` itself defines"
            )
        return method_spec(text, path, module, qualname, "method")
    if resolved.get("kind") == "classmethod":
        return method_spec(text, path, module, qualname, "classmethod")
    return function_spec(text, path, module, qualname)


def _evidence_line(result: OracleResult) -> str:
    if result.status == "ok":
        return f"{result.source}: {result.value}"
    return f"{result.source}: {result.status} ({result.detail})"


def _history(root: Path, path: str, line: int) -> str | None:
    """Who last changed the line holding the expected value (git blame): evidence shown
    beside the verdict, never a reason for it."""
    try:
        proc = subprocess.run(
            ["git", "blame", "--porcelain", "-L", f"{line},{line}", "--", path],
            cwd=root,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    fields: dict[str, str] = {}
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    commit = lines[0].split()[0] if lines else ""
    for entry in lines[1:]:
        key, _, value = entry.partition(" ")
        fields.setdefault(key, value)
    if not commit or set(commit) == {"0"}:
        return "the expected value's line is not committed yet"
    when = fields.get("author-time")
    date = dt.datetime.fromtimestamp(int(when), dt.timezone.utc).date() if when else "?"
    return (
        f"the expected value's line was last changed in {commit[:10]} "
        f"({fields.get('author', '?')}, {date}): {fields.get('summary', '')}"
    )


def _seconds(value: float) -> str:
    return f"{value:g}"


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


_RAISED = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")


def _exception_name(isolated: Isolated) -> str:
    """The class name of the exception a raises assertion expects (``errors.ParseError``:
    ``ParseError``)."""
    return isolated.expected.text.strip().rsplit(".", 1)[-1]


def _raised(name: str) -> str:
    """The outcome "raises NAME", as the truth of a call that raises is written."""
    return f"raises {name.strip().rsplit('.', 1)[-1]}"


def _outcome(result: OracleResult) -> OracleResult:
    """A source's result read as the call's outcome: an exception it raised is the
    value "raises NAME" (the class name only: messages differ between programs)."""
    if result.status != "error":
        return result
    match = _RAISED.match(result.detail or "")
    if match is None:
        return result
    return result.model_copy(update={"status": "ok", "value": _raised(match.group(1))})


def _raises_observed(isolated: Isolated, crash: dict[str, Any]) -> str:
    """What the code did instead of raising the expected exception: returned (pytest's
    ``DID NOT RAISE``, unittest's ``E not raised``), or raised another exception."""
    kind, message = str(crash.get("type", "")), str(crash.get("message", ""))
    name = _exception_name(isolated)
    if (kind == "Failed" and message.startswith("DID NOT RAISE")) or (
        kind == "AssertionError" and " not raised" in message
    ):
        return f"returned instead of raising {name}"
    if not kind or kind == name or kind in ("Failed", "AssertionError"):
        raise NotIsolated(
            "cannot isolate the call under test: the raises assertion failed in a way "
            f"referee does not read ({kind}: {excerpt(message)})"
        )
    return f"raised {kind}: {excerpt(message)} instead of {name}"


def _expectation(isolated: Isolated) -> str:
    """The test's expectation in words: ``count_vowels('a') is truthy``."""
    call, value = isolated.call, isolated.expected.text
    if isolated.op in ("truthy", "falsy"):
        return f"{call} is {isolated.op}"
    if isolated.op in ("in", "not in") and isolated.call_side == "right":
        return f"{value} {isolated.op} {call}"
    return f"{call} {isolated.op} {value}"


def _meets(op: str, call_side: str, value: str, expected: str) -> bool | None:
    """Whether the call's value (a repr) meets a boolean, identity or membership
    expectation; None when either is not a literal that can be checked."""
    try:
        got = ast.literal_eval(value)
        want = None if op in ("truthy", "falsy") else ast.literal_eval(expected)
        if op == "truthy":
            return bool(got)
        if op == "falsy":
            return not got
        if op in ("is", "is not"):
            if not (want is None or isinstance(want, bool)):
                return None
            return (got is want) == (op == "is")
        if op in ("in", "not in"):
            container, member = (got, want) if call_side == "right" else (want, got)
            return (member in container) == (op == "in")
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return None


def _shown_value(message: str, op: str) -> str | None:
    """The value pytest's rewritten ``assert f(x)`` (``assert not f(x)``) shows on its
    first line; None when that line is not one."""
    first = message.split("\n", 1)[0].strip()
    prefix = "assert not " if op == "falsy" else "assert "
    if not first.startswith(prefix):
        return None
    return first[len(prefix) :].strip() or None
