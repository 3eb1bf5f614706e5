"""Guarded arbitration, start to end: observe, isolate, compute the truth, decide, fix.

:func:`arbitrate` decides and prepares the fix without writing anything; :func:`apply`
writes the prepared fix atomically (refusing a file that changed since it was read) and,
for a test fix, the certificate. UNCLEAR verdicts, and wrong sources without a verified
fix, go to the review queue.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from referee import __version__
from referee.checks import interpreter, ledger, review, sandbox
from referee.checks.arbitration import methods, objects, outcomes, project_objects
from referee.checks.arbitration.examples import doctest_evidence, example_calls
from referee.checks.arbitration.failing import (
    failing_record,
    read_test,
    recorded_run,
    run_test,
)
from referee.checks.arbitration.fix import (
    pytest_run_limits,
    sha256_text,
)
from referee.checks.arbitration.isolate import (
    FunctionSpec,
    assertion_at,
    isolate,
)
from referee.checks.arbitration.observe import (
    TestRecord,
)
from referee.checks.arbitration.project_data import data_file, without_test_data
from referee.checks.arbitration.siblings import Cases, sibling_examples, worth_running
from referee.checks.arbitration.sites import (
    EQUALITY_OPS,
    Isolated,
    NotIsolated,
    TestRef,
    find_test,
)
from referee.checks.arbitration.suite import (
    SuiteScan,
    add_examples,
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
    Replacements,
    agreed_value,
    oracle_evidence,
    reference_evidence,
    reference_for,
)
from referee.checks.arbitration.unedited import SHARED_SITES, shared_test_wrong
from referee.checks.arbitration.verdicts import (
    Arbitration,
    BackendFactory,
    Fixing,
    Truth,
    confirm_test_edit,
    expectation_verdict,
    raises_verdict,
    source_wrong,
    test_wrong,
)
from referee.checks.config import Settings, walk
from referee.checks.configuration import ArbitrationConfig
from referee.checks.models import ArbitrationVerdict, Certificate, Observation, OracleResult
from referee.checks.nodes import excerpt
from referee.checks.progress import IDLE, Work
from referee.checks.pymodule import PythonModule
from referee.checks.source import SourceFile

__all__ = ["Arbitration", "ArbitrationError", "Cancelled", "LazyModel", "apply", "arbitrate"]

# Sites of an expected value read from the failing frame or the assertion's form, or
# computed by the test: evidence, never a literal a test fix replaces.
READ_NOT_WRITTEN = ("local", "implicit", "computed")
_PROJECT_FILES = ("pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini", "conftest.py")
_MAX_PROJECT_BYTES = 20_000_000
_MAX_FILE_BYTES = 1_000_000
_MAX_DATA_BYTES = 5_000_000  # of test and package data (project_data)


def arbitrate(
    test_id: str,
    settings: Settings,
    *,
    backend: BackendFactory | None = None,
    work: Work = IDLE,
    queue: bool = True,
    cache_dir: Path | None = None,
) -> Arbitration:
    """Decide which side of the failing test ``test_id`` (a pytest node id relative to the
    project root) is wrong, and prepare the fix of that side. ``backend`` opens the model
    (only called when the oracles or the patches need it). Raises
    :class:`ArbitrationError` when there is nothing to decide, :class:`Cancelled` when
    ``work`` is asked to stop."""
    started = time.monotonic()
    root = settings.root.resolve()
    test, source = read_test(root, test_id)
    run = run_test(root, test_id, test, source, settings, work)
    work.raise_if_cancelled()
    record = failing_record(run, test_id, root / test.path)
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
        return work.cancelled() or context.out_of_time()

    try:
        with project_objects.viewing(_project_view(context)):
            return context.decide(backend, replace(work, is_cancelled=stopped), cache_dir)
    except Cancelled:
        if work.cancelled() or not context.out_of_time():
            raise
        # Nothing was certified in time: what the oracles said so far goes to a person.
        if not context.oracles and context.replacements is not None:
            context.oracles = tuple(context.replacements.standing)
        budget = f"{context.config.time_budget:g} s, arbitration.time-budget"
        if context.confirming is not None:
            return context.unclear(f"{context.confirming}, and the time budget ({budget}) ran out")
        return context.unclear(
            f"ran out of its time budget ({budget}) before a truth was certified"
            + (": " + outcomes.evidence_text(context.oracles) if context.oracles else "")
            + context.to_decide()
        )
    except (NotIsolated, ModelCrashed) as exc:
        # ModelCrashed: no truth was computed, the oracles' or patches' model died. A
        # person decides.
        return context.unclear(str(exc))


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
    # the call the oracles are asked about, and the function's file, once isolated
    oracle_arguments: str | None = None
    function_relpath: str | None = None
    # what was certified and is being confirmed when the time budget runs out (the k
    # oracles agreed with the code; a test edit needs more): the verdict says so
    confirming: str | None = None

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

    def to_decide(self) -> str:
        """:func:`outcomes.decisive_truth` for the function under test, once it is known
        (the call's arguments as the oracles were asked them; else ``...``)."""
        if self.spec is None:
            return ""
        return outcomes.decisive_truth(self.spec, self.oracle_arguments, self.function_relpath)

    def unclear(self, reason: str, **fields: Any) -> Arbitration:
        verdict = self.verdict(verdict="UNCLEAR", reason=reason, **fields)
        return Arbitration(self.queued(verdict, f"Arbitration UNCLEAR: {reason}"), self.root)

    def queued(self, verdict: ArbitrationVerdict, title: str) -> ArbitrationVerdict:
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
            evidence=outcomes.evidence_lines(verdict.oracles)
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
        work: Work,
        cache_dir: Path | None,
    ) -> Arbitration:
        """Take the failing assertion apart, compute the truth from the independent
        sources, and decide which side is wrong."""
        record = self.record
        if record.when != "call":
            crash = record.crash or {}
            return self.unclear(
                f"the test failed in {record.when}, before its assertion ran: "
                f"{crash.get('type', 'error')}: {crash.get('message', '')}".rstrip(": ")
            )
        isolated, function_file = self._subject()
        function_relpath = self._relative(function_file)
        self.oracle_arguments, self.function_relpath = isolated.oracle_arguments, function_relpath
        files = _LazyFiles(self.root, self.settings)

        # Every way on from here runs code in the sandbox (a reference, oracles, the test
        # module with a fix); where the sandbox has no kernel boundary, none of it runs.
        python, limits = interpreter.for_settings(self.settings), pytest_run_limits(self.config)
        refused = sandbox.boundary_problem(limits, python)
        if refused is not None:
            return self.unclear(refused)
        assert self.observation is not None and self.spec is not None
        observed = outcomes.completed(  # what the failing run could not record
            self.observation,
            isolated,
            self.spec.name,
            function_relpath,
            lambda code, call: sandbox.evaluate(
                code, call, limits=limits, files=files.get(), python=python
            ),
            work.say,
        )
        if isinstance(observed, str):
            return self.unclear(observed)
        self.observation = observed

        # --- the truth, from sources that saw neither the body nor the test
        model: Any = None
        fixing = Fixing(function_relpath, files, backend, work, cache_dir)
        sources = self._explicit_sources(isolated, function_file, function_relpath, files, work)
        if sources:
            found = self._explicit_truth(isolated, sources)
        else:
            found = self._oracle_truth(isolated, fixing)
        if isinstance(found, Arbitration):
            return found
        truth, truth_source, model = found
        return self._verdict(isolated, truth, truth_source, model, fixing)

    def _subject(self) -> tuple[Isolated, Path]:
        """The failing assertion taken apart, what the failing run observed of its call
        (``observation``), and the function under test (``spec``, and its file)."""
        record = self.record
        line, comparison = self._failing_line()
        isolated = isolate(
            self.source,
            self.test,
            line,
            record.indices,
            (record.crash or {}).get("locals"),
            *self._project_names(),
        )
        # ``str(Bits(5))``: the class's ``__str__``; ``Bits(4, 2)`` expected to raise
        isolated = objects.routed(isolated, record.names)
        resolved = record.names.get(isolated.callee)
        built = record.names.get(isolated.constructor or "") or {}
        if built.get("kind") == "function":
            # ``f(x).get("k").v``: a method of the value a function returned, not of an
            # object the test built from a class
            raise NotIsolated(
                f"cannot isolate the call under test: `{excerpt(isolated.call)}` calls a method "
                f"of the value `{isolated.constructor}` returns; arbitration computes truths "
                "for the function's value itself, or its attributes and literal items"
            )
        if not resolved or not resolved.get("file") or not resolved.get("qualname"):
            problem = objects.receiver_problem(isolated, record.names, self.source, self.test)
            if problem is not None:
                raise NotIsolated(problem)
            raise NotIsolated(
                f"cannot isolate the call under test: `{isolated.callee}` does not resolve to "
                "a Python function the test module imports"
            )
        self.observation = outcomes.observation(
            isolated,
            comparison,
            resolved,
            record.crash or {},
            self.test_id,
            self.test.path,
            self._relative(Path(resolved["file"])) or resolved["file"],
        )
        function_file = Path(resolved["file"])
        try:
            function_text = function_file.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise NotIsolated(f"cannot read {function_file}: {exc}") from None
        self.spec = methods.subject_spec(
            isolated, resolved, record.names, function_text, str(function_file)
        )
        return isolated, function_file

    def _explicit_sources(
        self,
        isolated: Isolated,
        function_file: Path,
        function_relpath: str | None,
        files: _LazyFiles,
        work: Work,
    ) -> list[OracleResult]:
        """The docstring's own example for the call, and the declared reference's value."""
        assert self.spec is not None
        spec = self.spec
        arguments = isolated.oracle_arguments  # a method's: the constructor's too
        sources: list[OracleResult] = []
        doctest = doctest_evidence(
            spec, arguments, isolated.wrapper, isolated.projection, isolated.definitions
        )
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
            work.say(f"running the reference {reference}")
            sources.append(
                reference_evidence(
                    reference,
                    arguments,
                    self.config,
                    files.get(),
                    isolated.wrapper,
                    python=interpreter.for_settings(self.settings),
                    projection=isolated.projection,
                    definitions=isolated.definitions,
                )
            )
        return sources

    def _explicit_truth(
        self, isolated: Isolated, sources: list[OracleResult]
    ) -> Arbitration | tuple[str, str, Any]:
        """(truth, its source, no model) when the explicit sources agree, else UNCLEAR."""
        if isolated.op == "raises":
            sources = [outcomes.outcome(r) for r in sources]
        self.oracles = tuple(sources)
        values = [s.value for s in sources if s.status == "ok" and s.value is not None]
        if len(values) != len(sources) or not all(
            sandbox.values_equal(values[0], v) for v in values
        ):
            return self.unclear(
                "the explicit sources do not agree: "
                + outcomes.evidence_text(sources)
                + " — one of them is wrong: correct the docstring's example or the "
                "reference (`[arbitration.references]`)"
            )
        return values[0], "+".join(s.source for s in sources), None

    def _oracle_truth(
        self,
        isolated: Isolated,
        fixing: Fixing,
    ) -> Arbitration | tuple[str, str, Any]:
        """(truth, its source, the model) the oracles agree on — written from the
        docstring (and the suite's assertions, where it gives too few examples), or
        from the suite's assertions for a function with none — else UNCLEAR."""
        assert self.spec is not None
        spec = self.spec
        function_relpath, backend = fixing.function_relpath, fixing.backend
        arguments = isolated.oracle_arguments
        if (
            not spec.docstring_value
            and spec.class_stub is not None
            and methods.suite_owner(spec) is None
        ):
            return self.unclear(outcomes.no_method_truth(spec, function_relpath))
        if not spec.docstring_value:
            # The specification its author committed to: the suite's passing
            # assertions about it (never the failing one, nor one changed now).
            scan = self._suite_scan(spec, isolated, function_relpath, fixing.files, fixing.work)
            needed = self.config.suite_examples
            if not needed or len(scan.found) < needed:
                return self.unclear(
                    outcomes.no_truth(spec, arguments, scan, needed, function_relpath)
                )
            self.suite = tuple(scan.examples)
        elif self._suite_beside(spec):  # the suite's assertions are its author's word too
            scan = self._suite_scan(spec, isolated, function_relpath, fixing.files, fixing.work)
            if len(scan.found) >= self.config.suite_examples:
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
                ProgramCache(fixing.cache_dir, self.settings.config.cache_size),
                work=fixing.work,
                replacements=self.replacements,
                wrapper=isolated.wrapper,
                projection=isolated.projection,
                suite=self.suite,
                raises=outcomes.exception_name(isolated) if isolated.op == "raises" else None,
                definitions=isolated.definitions,
            )
        )
        if isolated.op == "raises":
            self.oracles = tuple(outcomes.outcome(r) for r in self.oracles)
        truth = agreed_value(self.oracles, self.config.required_agreement)
        if truth is None:
            replaced = len(self.replacements.replaced)
            return self.unclear(
                f"the {self.config.oracles} oracles do not agree "
                f"(certifying needs {self.config.required_agreement}): "
                + outcomes.evidence_text(self.oracles)
                + (f" ({replaced} that did not run replaced)" if replaced else "")
                + outcomes.decisive_truth(spec, arguments, function_relpath)
            )
        truth_source = "oracles"
        if self.suite:
            where = "docstring and suite" if spec.docstring_value else "suite"
            truth_source = f"oracles (spec from {where}: {len(self.suite)} examples)"
        return truth, truth_source, model

    def _verdict(
        self,
        isolated: Isolated,
        truth: str,
        truth_source: str,
        model: Any,
        fixing: Fixing,
    ) -> Arbitration:
        """Which side the truth blames: the verdict of the case's kind."""
        assert self.observation is not None
        obs = self.observation
        history = outcomes.history(self.root, self.test.path, isolated.expected.line)
        found = Truth(truth, truth_source, history)
        if isolated.op == "raises":
            return raises_verdict(self, isolated, found)
        if isolated.op not in EQUALITY_OPS:
            return expectation_verdict(self, isolated, found, fixing)
        produced_ok = obs.produced is not None and sandbox.values_equal(truth, obs.produced)
        asserted_ok = obs.asserted is not None and sandbox.values_equal(truth, obs.asserted)
        if produced_ok and not asserted_ok and isolated.expected.kind in READ_NOT_WRITTEN:
            # The expected value was read from the failing frame (a loop's case, a local):
            # there is no literal that holds it to replace, so the test is not edited.
            return self.unclear(
                f"the truth ({truth}, from {truth_source}) equals what the code produced; the "
                f"test's expected value `{excerpt(isolated.expected.text)}` came from the "
                "test's locals as it ran (a loop over a table, a local), not from a literal "
                "referee can replace: the test is not edited",
                **found.fields(),
            )
        if produced_ok and not asserted_ok:
            if truth_source.startswith("oracles"):
                refused = confirm_test_edit(
                    self,
                    model,
                    isolated.oracle_arguments,
                    truth,
                    fixing.work,
                    fixing.cache_dir,
                    isolated.wrapper,
                    isolated.projection,
                    isolated.definitions,
                )
                if refused is not None:
                    return refused
            if isolated.expected.kind in SHARED_SITES:  # a helper's literal: not edited
                return shared_test_wrong(self, isolated, found)
            return test_wrong(self, isolated, found, fixing.files, fixing.work)
        if asserted_ok and not produced_ok:
            return source_wrong(self, isolated, found, fixing)
        if produced_ok and asserted_ok:
            reason = f"the truth ({truth}) equals both the produced and the asserted value"
        else:
            reason = (
                f"the truth ({truth}, from {truth_source}) equals neither the produced value "
                f"({obs.produced or obs.produced_error}) nor the asserted one ({obs.asserted})"
            )
        return self.unclear(reason, truth=truth, truth_source=truth_source, history=history)

    def _suite_beside(self, spec: FunctionSpec) -> bool:
        """Whether a documented function's docstring gives fewer examples than
        ``suite-examples`` (and the suite's calls can name it, a method): then its
        oracles must reproduce the suite's assertions too (``suite-beside-docstring``)."""
        needed = self.config.suite_examples
        fewer = self.config.suite_beside_docstring and len(example_calls(spec)) < needed
        return fewer and (spec.class_stub is None or methods.suite_owner(spec) is not None)

    def _suite_scan(
        self,
        spec: FunctionSpec,
        isolated: Isolated,
        function_relpath: str | None,
        files: _LazyFiles,
        work: Work,
    ) -> SuiteScan:
        """The project's passing assertions about ``spec``'s function that the working
        diff did not change, the failing test and the failing call's arguments left out
        (:mod:`referee.checks.arbitration.suite`) — and, when they are too few, what the
        test's other cases gave the failing assertion (:mod:`.siblings`); recorded as the
        verdict's evidence."""
        needed = self.config.suite_examples
        if not needed:
            return SuiteScan()
        arguments, definitions = isolated.oracle_arguments, isolated.definitions
        work.say(f"reading the suite's assertions about {spec.name}")
        signature = parameters(spec.signature)
        owner = methods.suite_owner(spec)
        scan = suite_examples(
            self.root,
            spec.name,
            spec.module,
            self.test.path,
            (self.test.cls, self.test.name),
            arguments,
            settings=self.settings,
            signature=signature,
            owner=owner,
        )
        if len(scan.found) < needed and function_relpath is not None:
            cases = self._sibling_cases(spec, isolated, work)
            for _ in range(cases.no_example):
                scan.leave_out("a case of the test that compares no literal with its value")
            add_examples(scan, self.root, cases.found, arguments, signature)
        if function_relpath is None:
            scan.notes.append(f"{spec.name} is outside the project: its assertions were not run")
            scan.found = []
        elif len(scan.found) >= needed:
            work.say(f"running {len(scan.found)} of the suite's assertions on the current code")
            passing_examples(
                scan,
                spec.name,
                function_relpath,
                files.get(),
                pytest_run_limits(self.config),
                failing=(arguments, definitions),
                owner=owner,
                python=interpreter.for_settings(self.settings),
            )
        left_out = ", ".join(f"{n} {why}" for why, n in scan.excluded.items())
        self.suite_evidence = (
            *(f.where for f in scan.found),
            *([f"left out: {left_out}"] if left_out else []),
            *scan.notes,
        )
        return scan

    def _sibling_cases(self, spec: FunctionSpec, isolated: Isolated, work: Work) -> Cases:
        """What the test's cases (all of a parametrized test's, or the failing test's
        earlier loop iterations) gave the failing assertion, run again with the recorder
        watching its line (:mod:`~referee.checks.arbitration.siblings`)."""
        if isolated.projection or (spec.class_stub is not None and not methods.suite_owner(spec)):
            return Cases()  # the suite's examples are of a function's or method's own values
        if not worth_running(self.source, self.test, isolated.line):
            return Cases()  # one case, reaching the line once: nothing else to read
        target = self.test.function_id if self.test.param_id else self.test_id
        work.say(f"running {target} to read what its cases gave line {isolated.line}")
        watched = ((self.root / self.test.path).resolve(), isolated.line, isolated.end_line)
        run = recorded_run(self.root, self.settings, target, watch=watched)
        callees, classes = self._project_names()
        return sibling_examples(
            self.source,
            self.test,
            self.test_id,
            isolated,
            spec.name,
            run,
            callees,
            self.root,
            classes,
        )

    def _failing_line(self) -> tuple[int, dict[str, Any] | None]:
        """The line of the failing assertion in the test file, and its comparison."""
        test_file = str((self.root / self.test.path).resolve())
        record = self.record
        mine = [c for c in record.comparisons if outcomes.same_file(c.get("file"), test_file)]
        crash = record.crash or {}
        crash_line = (
            int(crash["line"])
            if crash.get("line") and outcomes.same_file(crash.get("file"), test_file)
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

    def _project_names(self) -> tuple[frozenset[str], frozenset[str]]:
        """The dotted names the run resolved to Python functions and classes in the
        project's own files (not a virtual environment's, not the standard library's),
        and those of them that are classes."""
        names: dict[str, bool] = {}  # a name: whether it is a class
        for dotted, where in self.record.names.items():
            path = where.get("file")
            relative = self._relative(Path(path)) if path else None
            if relative is None or any(
                part in (".venv", "venv", "site-packages", ".tox", ".nox")
                for part in relative.split("/")
            ):
                continue
            names[dotted] = objects.is_class(where)  # a metaclass's kind too
        return frozenset(names), frozenset(n for n, is_class in names.items() if is_class)

    def _relative(self, path: Path) -> str | None:
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None

    # ------------------------------------------------------------------ the fixes


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


def _project_view(context: Any) -> project_objects.ProjectView:
    """The project as a call that builds its objects sees it: its root, files and
    interpreter (:mod:`~referee.checks.arbitration.project_objects`)."""
    files = _LazyFiles(context.root, context.settings)
    return project_objects.ProjectView(
        context.root,
        lambda: without_test_data(files.get()),
        lambda: interpreter.for_settings(context.settings),
    )


def project_files(root: Path, settings: Settings) -> dict[str, Any]:
    """The project's Python files and pytest configuration, what the sandbox needs for a
    reference or a test module to import what they import, and the text files its tests
    and packages read — data in a test directory, package data beside an
    ``__init__.py`` — without which a test that reads one fails in the sandbox, where it
    passed or failed for its own reasons in the project (size-capped). Python files are
    text; data files are text when they decode as UTF-8, else bytes."""
    walked = list(walk(root, settings))
    packages = {
        relpath.rpartition("/")[0] for relpath, _ in walked if relpath.endswith("__init__.py")
    }
    files: dict[str, Any] = {}
    total = data = 0
    for relpath, path in walked:
        code = relpath.endswith(".py") or path.name in _PROJECT_FILES
        if not code and not data_file(relpath, packages):
            continue
        try:
            size = path.stat().st_size
            if size > _MAX_FILE_BYTES or total + size > _MAX_PROJECT_BYTES:
                continue
            if not code and data + size > _MAX_DATA_BYTES:
                continue
            # data as it is on disk: a test may read its exact line endings (``\r\n``)
            # or bytes (an image, an archive: the sandbox writes them as they are)
            files[relpath] = path.read_text(encoding="utf-8") if code else _data(path)
        except (OSError, UnicodeDecodeError):
            continue
        total += size
        data += 0 if code else size
    return files


def _data(path: Path) -> str | bytes:
    """A data file's text as on disk, or its bytes where it is no UTF-8 text."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw
