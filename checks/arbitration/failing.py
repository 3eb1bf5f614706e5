"""The failing test, read and run: its id taken apart and its module's text, one run of it
with the recorder in the project's interpreter, and the record of its failure — a test
that hung is a failure too; one pytest reports failed is never "ran no test"."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from referee.checks import interpreter
from referee.checks.arbitration import outcomes
from referee.checks.arbitration.isolate import callee_names
from referee.checks.arbitration.observe import (
    TestRecord,
    TestRun,
    node_id,
    run_tests,
    same_test,
)
from referee.checks.arbitration.sites import TestRef
from referee.checks.arbitration.truth import ArbitrationError
from referee.checks.config import Settings
from referee.checks.progress import Work
from referee.checks.source import SourceFile


def read_test(root: Path, test_id: str) -> tuple[TestRef, SourceFile]:
    """The test's id taken apart and its module's text."""
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
    return test, SourceFile(test.path, test_text)


def run_test(
    root: Path,
    test_id: str,
    test: TestRef,
    source: SourceFile,
    settings: Settings,
    work: Work,
) -> TestRun:
    """Run the test with the recorder, in the project's interpreter."""
    # the project's interpreter (a bad `python` setting is a ConfigError), with pytest
    python = interpreter.for_settings(settings)
    problem = interpreter.pytest_problem(python)
    if problem is not None:
        raise ArbitrationError(problem)
    work.say(f"running {test_id}")
    test_timeout = settings.config.arbitration.test_timeout
    return recorded_run(
        root,
        settings,
        test_id,
        names=callee_names(source, test),
        hang_after=test_timeout,
        python=python,
    )


def recorded_run(root: Path, settings: Settings, target: str, **options: Any) -> TestRun:
    """pytest on ``target`` with the recorder (``options``: :func:`run_tests`'), in the
    project's interpreter unless ``python`` says otherwise, within the test's time."""
    test_timeout = settings.config.arbitration.test_timeout
    options.setdefault("python", interpreter.for_settings(settings))
    # the test's call may run test-timeout seconds; collection and the rest get a grace
    return run_tests(root, [target], timeout=test_timeout + max(10.0, test_timeout / 2), **options)


def failing_record(run: TestRun, test_id: str, test_path: Path) -> TestRecord:
    # pytest's node id may be spelled differently from the one asked for (an escaped
    # parameter id, ``./`` or ``tests/../`` in the path): matched as pytest spells ids
    matching = [r for r in run.records if same_test(r.nodeid, test_id)]
    if not any(r.failed for r in matching) and run.hung is not None:
        hung = run.hung
        if same_test(hung.nodeid, test_id):
            # A call that never returns is a red test too: observed as what it did not do,
            # at the innermost line of the test module on its stack.
            test_file = str(test_path.resolve())
            line = next((n for f, n in run.hung_frames if outcomes.same_file(f, test_file)), None)
            return replace(
                hung,
                when="call",
                outcome="failed",
                crash={
                    "type": "Timeout",
                    "message": f"did not return within {seconds(run.hung_after or 0)} s",
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


def seconds(value: float) -> str:
    return f"{value:g}"
