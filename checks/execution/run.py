"""L2's execution checks for one file, after L0/L1 and before the reading judge.

:func:`check_file` picks what changed since the baseline (as the judge does): each changed
test is graded by mutation (REF410), each changed top-level function with a docstring or
a declared reference is run beside its spec's implementations (REF411, REF412). It
returns the findings, filtered by the project's rule selection and ``# referee: ignore``
comments, the functions execution decided (the reading judge skips them: execution
overrides reading, never the reverse) and the supporting evidence for the others.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from referee.checks import interpreter, review, sandbox
from referee.checks.config import ConfigError, Settings
from referee.checks.execution.differential import Differential, DifferentialCache, check_function
from referee.checks.execution.mutation import Grade, GradeCache, grade_test
from referee.checks.models import Finding, Layer, Location, Severity, Span
from referee.checks.progress import IDLE, Cancelled, Work
from referee.checks.source import SourceFile

_C = TypeVar("_C")


@dataclass
class FileExecution:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    decided: set[str] = field(default_factory=set)  # functions rejected by a counterexample
    support: dict[str, str] = field(default_factory=dict)  # function -> supporting evidence
    grades: list[Grade] = field(default_factory=list)
    differentials: list[Differential] = field(default_factory=list)
    review_ids: dict[str, str] = field(default_factory=dict)  # function -> its REF412 item
    cancelled: bool = False  # the work was asked to stop: what is here is partial


class ProjectFiles:
    """The project's files as the sandbox gets them, read once per check, with the
    buffers being checked in place of their files on disk."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._files: dict[str, str] | None = None

    def get(self, overrides: dict[str, str] | None = None) -> dict[str, str]:
        if self._files is None:
            from referee.checks.arbitration.engine import project_files

            self._files = project_files(self.settings.root.resolve(), self.settings)
        return {**self._files, **(overrides or {})}


def _module_name(relpath: str) -> str:
    rest = relpath[4:] if relpath.startswith("src/") else relpath
    parts = rest.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _finding(
    settings: Settings, code: str, path: str, line: int, message: str, evidence: str | None
) -> Finding:
    from referee.checks.registry import BY_CODE

    rule = BY_CODE[code]
    return Finding(
        code=code,
        name=rule.name,
        layer=rule.layer,
        severity=settings.severity(rule, rule.severity),
        message=message,
        path=path,
        span=Span(start=Location(line=line, column=1), end=Location(line=line, column=2)),
        evidence=evidence or None,
        url=rule.url,
    )


def _first_line(span: Span) -> int:
    return span.start.line


def check_file(
    source: SourceFile,
    settings: Settings,
    relpath: str,
    findings: list[Finding],
    *,
    baseline: str | None = None,
    files: ProjectFiles | None = None,
    model: Any = None,
    cache_dir: Path | None = None,
    work: Work = IDLE,
    queue: bool = True,
) -> FileExecution:
    """The execution checks of one file (see the module's docstring). ``model`` is the
    oracles' model (a LazyModel: opened only for programs the cache lacks)."""
    from referee.checks.engine import _is_suppressed, suppressions

    out = FileExecution()
    config = settings.config.execution
    if source.kind != "python" or not (config.mutation or config.differential):
        return out
    tests, functions = _changed(source, settings, relpath, findings, baseline)
    if not tests and not functions:
        return out
    python = _sandboxed_interpreter(settings, out)
    if python is None:
        return out
    if tests and (no_pytest := interpreter.pytest_problem(python)) is not None:
        # one line for the file, not one per test: none of them can be graded
        out.notes.append(f"tests not graded by mutation: {no_pytest}")
        tests = []
    files = files or ProjectFiles(settings)
    check = _FileCheck(
        source,
        settings,
        relpath,
        files.get({relpath: source.text}),
        python,
        cache_dir,
        work,
        out,
    )
    check.grade_tests(tests)
    if functions:
        check.check_functions(functions, model, queue)
    out.cancelled = work.cancelled()
    table = suppressions(source.text)
    out.findings = [
        f for f in check.raw if settings.reports(f.code, relpath) and not _is_suppressed(f, table)
    ]
    return out


def _changed(
    source: SourceFile,
    settings: Settings,
    relpath: str,
    findings: list[Finding],
    baseline: str | None,
) -> tuple[list[Any], list[Any]]:
    """The changed tests (to grade by mutation) and top-level functions (to run beside
    their spec's implementations), as the judge picks its subjects."""
    from referee.checks.judge.core import subjects

    config = settings.config.execution
    is_test = settings.is_test_file(relpath)
    blocked = [
        f for f in findings if f.severity == Severity.ERROR and f.layer in (Layer.L0, Layer.L1)
    ]
    found, _ = subjects(source, task=None, is_test_file=is_test, blocked=blocked, baseline=baseline)
    tests = [s for s in found if s.kind == "test"] if config.mutation else []
    functions = (
        [s for s in found if s.kind == "function" and "." not in s.name]
        if config.differential and not is_test
        else []
    )
    return tests, functions


def _sandboxed_interpreter(settings: Settings, out: FileExecution) -> Any:
    """The project's interpreter, when the sandbox can run it; else None, and a note why."""
    try:
        python = interpreter.for_settings(settings)
    except ConfigError as exc:
        out.notes.append(f"execution checks not run: {exc}")
        return None
    refused = sandbox.boundary_problem(python=python)
    if refused is not None:
        out.notes.append(f"execution checks not run: {refused}")
        return None
    return python


@dataclass
class _FileCheck:
    """What the execution checks of one file run with, and the findings they raise
    (``raw``: before the project's rule selection and suppressions)."""

    source: SourceFile
    settings: Settings
    relpath: str
    project: dict[str, str]
    python: Any
    cache_root: Path | None
    work: Work
    out: FileExecution
    raw: list[Finding] = field(default_factory=list)

    def add(self, code: str, line: int, message: str, evidence: str | None) -> None:
        self.raw.append(_finding(self.settings, code, self.source.path, line, message, evidence))

    def _cache(self, kind: Callable[[Path | None, int], _C], name: str) -> _C:
        """The cache ``kind`` kept in the folder ``name`` of the cache root (in memory
        only when there is none), of the project's size."""
        folder = self.cache_root / name if self.cache_root else None
        return kind(folder, self.settings.config.cache_size)

    # --- tests, by mutation

    def grade_tests(self, tests: list[Any]) -> None:
        config = self.settings.config.execution
        deadline = time.monotonic() + config.mutation_budget
        for subject in tests:
            if self.work.cancelled():
                break
            try:
                grade = grade_test(
                    self.relpath,
                    subject.name,
                    self.project,
                    operators=config.mutation_operators,
                    max_mutants=config.max_mutants,
                    deadline=deadline,
                    timeout=config.mutation_timeout,
                    cache=self._cache(GradeCache, "mutation"),
                    work=self.work,
                    python=self.python,
                )
            except Cancelled:
                break
            self.out.grades.append(grade)
            if grade.status == "survived" and grade.survivors:
                message, evidence = _survivors_said(subject.name, grade)
                self.add("REF410", _first_line(subject.span), message, evidence)
            elif grade.status == "not-graded":
                self.out.notes.append(f"{subject.name}: not graded by mutation: {grade.reason}")

    # --- functions, against their spec's implementations

    def check_functions(self, functions: list[Any], model: Any, queue: bool) -> None:
        from referee.checks.arbitration.isolate import NotIsolated, function_spec
        from referee.checks.arbitration.project_data import without_test_data
        from referee.checks.arbitration.truth import (
            ArbitrationError,
            ProgramCache,
            reference_for,
        )

        settings, relpath, project, source = self.settings, self.relpath, self.project, self.source
        arbitration = settings.config.arbitration
        module = _module_name(relpath)
        tests_text = {p: t for p, t in project.items() if settings.is_test_file(p)}
        queue_state = review.read(settings.root) if queue else review.Queue()
        for subject in functions:
            if self.work.cancelled():
                break
            try:
                spec = function_spec(source.text, source.path, module, subject.name)
            except NotIsolated:
                continue
            reference = reference_for(
                arbitration, [f"{module}:{subject.name}", f"{relpath}:{subject.name}"]
            )
            if not spec.docstring_value and reference is None:
                continue
            try:
                result = check_function(
                    spec,
                    relpath,
                    without_test_data(project),  # oracles run beside it: not what tests expect
                    tests_text,
                    settings.config.execution,
                    arbitration,
                    model=model,
                    reference=reference,
                    program_cache=self._cache(ProgramCache, "arbitration"),
                    cache=self._cache(DifferentialCache, "differential"),
                    work=self.work,
                    python=self.python,
                )
            except Cancelled:
                break
            except ArbitrationError as exc:  # no model, or the model process died
                self.out.notes.append(f"{subject.name}: differential check not run: {exc}")
                continue
            self.report(subject, result, queue_state, queue)

    def report(
        self, subject: Any, result: Differential, queue_state: review.Queue, queue: bool
    ) -> None:
        """What one function's differential check says: a finding, a review item, the
        reading judge's supporting evidence, or a note."""
        out = self.out
        out.differentials.append(result)
        out.notes.extend(f"{subject.name}: {note}" for note in result.notes)
        line = _first_line(subject.span)
        if result.status == "REJECT":
            out.decided.add(subject.name)
            self.add("REF411", line, f"{subject.name}: {result.reason}", result.evidence)
        elif result.status == "UNCLEAR":
            self.review(subject, result, line, queue_state, queue)
        elif result.status == "PASS":
            out.support[subject.name] = f"execution: {result.reason}"
        elif result.reason:
            out.notes.append(f"{subject.name}: differential check skipped: {result.reason}")

    def review(
        self,
        subject: Any,
        result: Differential,
        line: int,
        queue_state: review.Queue,
        queue: bool,
    ) -> None:
        """An UNCLEAR outcome goes to human review (REF412), unless a person decided it."""
        item = review.new_item(
            kind="execution",
            path=self.relpath,
            line=line,
            subject=subject.name,
            content_sha256=subject.content_sha256,
            title=f"{subject.name}: the oracles disagree on {result.call}",
            reasons=[result.reason],
            evidence=[f"{s}: {v}" for s, v in result.answers] + [f"the function {result.produced}"],
        )
        self.out.review_ids[subject.name] = item.id
        known = queue_state.items.get(item.id)
        if known is not None and known.decision == "accepted":
            return
        if known is not None and known.decision == "rejected":
            self.add(
                "REF403",
                line,
                f"{subject.name}: rejected in human review ({known.decided_by or 'a reviewer'})",
                result.evidence,
            )
            return
        if queue and known is None:
            with contextlib.suppress(OSError):
                review.submit(self.settings.root, item)
        self.add(
            "REF412", line, f"{subject.name}: needs human review: {result.reason}", result.evidence
        )


def _survivors_said(name: str, grade: Grade) -> tuple[str, str]:
    """REF410's message and evidence: the mutants the test let pass."""
    first = grade.survivors[0]
    change = f"`{first['before']}` becomes `{first['after']}`"
    where = ", ".join(grade.targets)
    message = f"{name} kills none of {grade.tried} mutants of {where}: still passes when {change}"
    if grade.crashed:
        message = (
            f"{name} fails only where the code crashes or returns None "
            f"({len(grade.crashed)} of "
            f"{grade.tried} mutants of {where}), never on a wrong value: still passes "
            f"when {change}"
        )
    evidence = "\n".join(
        f"{m['operator']}: {m['path']}:{m['line']} `{m['before']}` -> `{m['after']}`"
        for m in grade.survivors[:8]
    )
    return message, evidence


__all__ = ["FileExecution", "ProjectFiles", "check_file"]
