"""Test adequacy by mutation: does a changed test catch a bug in the code it calls?

For one test, :func:`grade_test`

1. finds its *targets*: the project's own functions (and classes) the test calls, through
   the test module's imports (``from mathx import is_even``, ``import mathx`` then
   ``mathx.is_even(...)``);
2. writes *mutants* of each target's body, one small change each (:data:`OPERATORS`):
   a comparison flipped, a boundary moved (``<`` ↔ ``<=``), an arithmetic operator
   swapped, an integer constant ±1, a condition negated, a ``return`` of a constant, a
   statement dropped. Each mutant is the module's text with only that change spliced in,
   checked by parsing it back;
3. runs the test as it is in the sandbox (it must pass there, or it is not graded), then
   against each mutant, two at a time, stopping at the first mutant it kills or when the
   time budget is spent.

A test that kills none of its target's mutants checks nothing about it; the surviving
mutants are the evidence. Results are cached by the contents of the test module, the
target modules and the settings.

Who decides: a mutant is killed when pytest, in the sandbox, fails on it (exit status 1,
a timeout, or an error). The mutants are referee's own edits of the user's code, and the
test and its ``conftest.py`` are the user's — trusted as pytest would trust them
(docs/sandbox.md, "who decides"); no model-written code runs here.

The targets, the project's layout and the trace are found by
:mod:`~referee.checks.execution.targets`, the mutants written by
:mod:`~referee.checks.execution.mutants`; this module grades.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Literal

from referee import __version__
from referee.checks import sandbox
from referee.checks.execution.cache import JsonCache
from referee.checks.execution.mutants import OPERATORS, Mutant, interleaved, mutants
from referee.checks.execution.targets import (
    TRACE_CODE,
    TRACE_PLUGIN,
    expected_to_fail,
    functions_run,
    layout_args,
    packaged_path,
    packaged_view,
    targets,
    traced_lines,
)
from referee.checks.interpreter import Interpreter
from referee.checks.progress import IDLE, Work

# Part of every cached grade's key; raised when grading changes (3: a kill by a crash, a
# hang or a `return None` alone is no kill; 7: the test's own unpacking is a check).
GRADING_VERSION = 7
_SHOWN_FIRST = ("comparison", "boundary", "arithmetic", "constant", "negation", "statement")

# ---------------------------------------------------------------------------- grading


@dataclass
class Grade:
    """What the mutants said about one test."""

    test_id: str
    status: Literal["killed", "survived", "not-graded"]
    reason: str = ""
    targets: list[str] = field(default_factory=list)  # "path:function"
    total: int = 0  # mutants written
    tried: int = 0  # mutants run
    killed_by: dict | None = None  # the first mutant it killed (asdict, without text)
    survivors: list[dict] = field(default_factory=list)
    # mutants it "killed" only because they crashed, hung (the test failed with an
    # exception other than an assertion's) or returned None: the test checks that the
    # code runs and returns something, nothing about the value
    crashed: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False


class GradeCache(JsonCache[Grade]):
    """One JSON file per (test module, target modules, settings)."""

    kind = Grade


_FAILED = re.compile(r"^(?:FAILED|ERROR) \S+(?: - (?P<why>.*))?$")
_CHECKS = ("assert", "AssertionError", "Failed", "DID NOT RAISE", "DID NOT WARN")


_UNPACKED = re.compile(r"ValueError: (?:too many|not enough) values to unpack\b")
_RAISED_AT = re.compile(r"^(?P<path>\S+?):\d+: ValueError$")


def crash_only(result: sandbox.SandboxResult, test_path: str | None = None) -> bool:
    """Whether a test failed on a mutant only because the mutant crashed or hung — an
    exception other than a failed assertion (``IndexError``, ``TypeError`` from a
    ``None``, ``RecursionError``) or a time limit — rather than because a check of the
    test saw a wrong value. ``pytest.raises`` that saw no exception is a check
    (``Failed: DID NOT RAISE``), and so is the test's own unpacking of a result
    (``(finding,) = check(...)`` says "exactly one"): a ``ValueError`` of unpacking raised
    on a line of ``test_path``, not inside the code under test."""
    if result.status == "timeout":
        return True
    lines = result.stdout.splitlines()
    reasons = [
        (match.group("why") or "").strip()
        for line in lines
        if (match := _FAILED.match(line.strip()))
    ]
    if not reasons:
        return False  # no summary to read: a failure of the test, as before
    if not all(why and not why.endswith("...") for why in reasons):
        # The summary cuts the reason to the terminal's width (`- A...`), or leaves it out
        # when the test's id fills it: read the first line of the failure's traceback that
        # names it (`E   ...`).
        reasons = [line[1:].strip() for line in lines if line.startswith("E ")][:1] or [""]
        if not reasons[0]:
            return False  # nothing to read: a failure of the test, as before
    raised_at = [m.group("path") for line in lines if (m := _RAISED_AT.match(line.strip()))]
    unpacked_by_test = bool(
        test_path and raised_at and raised_at[-1].replace("\\", "/").endswith(test_path)
    )
    return not any(
        why.startswith(_CHECKS)
        or "AssertionError" in why
        or (unpacked_by_test and _UNPACKED.search(why) is not None)
        for why in reasons
    )


def _public(mutant: Mutant) -> dict:
    data = asdict(mutant)
    data.pop("text")
    return data


def grade_test(
    test_path: str,
    qualname: str,
    files: dict[str, str],
    *,
    operators: Sequence[str] = OPERATORS,
    max_mutants: int = 40,
    deadline: float | None = None,
    timeout: float = 10.0,
    workers: int = 2,
    cache: GradeCache | None = None,
    work: Work = IDLE,
    python: Interpreter | None = None,
) -> Grade:
    """Grade the test ``qualname`` (``test_x`` or ``TestX.test_x``) of ``test_path`` by the
    mutants of its targets. ``files`` is the project (relative path → text) as the sandbox
    gets it, the test module among them; ``deadline`` a ``time.monotonic()`` past which no
    new mutant is started; ``python`` the project's interpreter (None: referee's own),
    which must have pytest (:func:`referee.checks.interpreter.pytest_problem`)."""
    started = time.monotonic()
    test_id = f"{test_path}::{qualname.replace('.', '::')}"
    test_text = files.get(test_path)
    if test_text is None:
        return Grade(test_id, "not-graded", f"{test_path} is not among the project's files")
    if expected_to_fail(test_text, qualname):
        return Grade(test_id, "not-graded", "it is marked xfail: it passes by failing")
    found = targets(test_text, test_path, qualname, files)
    target_names = [f"{path}:{name}" for path, names in found.items() for name in names]
    key = _grade_key(test_id, test_text, files, found, operators, max_mutants, timeout, python)
    if cache is not None and (known := cache.get(key)) is not None:
        return known
    if not found:
        return Grade(test_id, "not-graded", "it calls no function of the project's own modules", [])
    run = _TestRun(test_id, files, found, timeout, python)
    # The test as it is first, its lines traced: one that does not pass is not graded, and
    # no mutant of a large module is written for it.
    work.say(f"{test_id}: the test as it is")
    baseline = run.traced()
    if baseline.status != "ok":
        return Grade(
            test_id,
            "not-graded",
            f"the test does not pass in the sandbox as it is: {baseline.message}",
            target_names,
            seconds=time.monotonic() - started,
        )
    chosen, why = _chosen_mutants(files, found, operators, baseline, target_names)
    if not chosen:
        return Grade(test_id, "not-graded", why, target_names)
    chosen = chosen[:max_mutants]
    grade = Grade(test_id, "survived", "", target_names, total=len(chosen))
    _run_mutants(grade, chosen, run, test_path, workers, deadline, work)
    if grade.killed_by is None:
        work.raise_if_cancelled()
    grade.seconds = round(time.monotonic() - started, 3)
    if grade.status == "not-graded":
        return grade
    _sort_survivors(grade, chosen)
    if grade.killed_by is None and grade.crashed and not grade.survivors:
        grade.killed_by = grade.crashed[0]  # every mutant crashed: nothing passed unseen
    if grade.killed_by is not None:
        grade.status = "killed"
        grade.survivors = []
    elif grade.tried < len(chosen):
        grade.status = "not-graded"
        grade.reason = (
            f"the time budget ran out after {grade.tried} of {len(chosen)} mutants, none killed"
        )
        return grade  # not cached: the next run may finish it
    if cache is not None:
        cache.put(key, grade)
    return grade


def _grade_key(
    test_id: str,
    test_text: str,
    files: dict[str, str],
    found: dict[str, list[str]],
    operators: Sequence[str],
    max_mutants: int,
    timeout: float,
    python: Interpreter | None,
) -> str:
    """The cached grade's key: the test, its targets' modules and the settings."""
    key_data = json.dumps(
        [
            __version__,
            GRADING_VERSION,
            test_id,
            test_text,
            sorted((path, files[path], names) for path, names in found.items()),
            list(operators),
            max_mutants,
            timeout,
            # another interpreter may grade differently (its versions of the dependencies)
            *([python.path] if python is not None and not python.is_own else []),
        ]
    )
    return hashlib.sha256(key_data.encode("utf-8")).hexdigest()


class _TestRun:
    """Runs the one test in the sandbox on the project with some files replaced (a
    mutant), laid out as the project imports."""

    def __init__(
        self,
        test_id: str,
        files: dict[str, str],
        found: dict[str, list[str]],
        timeout: float,
        python: Interpreter | None,
    ) -> None:
        self.files = files
        self.found = found
        self.python = python
        self.limits = sandbox.Limits(timeout_s=timeout, cpu_s=max(1, int(timeout)))
        layout, self.mapping = layout_args(files, any(path.startswith("src/") for path in found))
        self.args = [test_id, "-q", "-x", "-rfE", "--no-header", "-o", "addopts=", "-p"]
        self.args += ["no:warnings", *layout]

    def __call__(
        self, text_by_path: dict[str, str], extra: list[str] | None = None
    ) -> sandbox.SandboxResult:
        view = {**self.files, **text_by_path}
        return sandbox.run_pytest(
            {**view, **packaged_view(view, self.mapping)},
            [*self.args, *(extra or [])],
            limits=self.limits,
            python=self.python,
        )

    def traced(self) -> sandbox.SandboxResult:
        """The test as it is, the lines of its targets' modules it runs recorded."""
        mapping = self.mapping
        wanted = {
            (packaged_path(path, mapping) if mapping else None) or path: path for path in self.found
        }
        return self(
            {
                f"{TRACE_PLUGIN}.py": TRACE_CODE,
                f"{TRACE_PLUGIN}.json": json.dumps(wanted),
            },
            ["-p", TRACE_PLUGIN],
        )


def _chosen_mutants(
    files: dict[str, str],
    found: dict[str, list[str]],
    operators: Sequence[str],
    baseline: sandbox.SandboxResult,
    target_names: list[str],
) -> tuple[list[Mutant], str]:
    """The mutants to run, in order (before the budget cuts them), or none and why."""
    every: list[Mutant] = []
    for path, names in found.items():
        every.extend(mutants(files[path], path, names, operators))
    if not every:
        return [], f"no mutant could be written for {', '.join(target_names)}"
    # Only mutants on lines the test ran. A module with no traced line at all is run some
    # other way (a subprocess, say): all of its mutants stay.
    executed = traced_lines(baseline.stdout or "", list(found)) or {}
    reached = [m for m in every if m.path not in executed or m.line in executed[m.path]]
    if not reached:
        return [], f"the test runs no line of {', '.join(target_names)} that a mutant changes"
    # Then the functions of the same module that the targets call by name, on the lines
    # the test ran (a helper such as `_check` that holds the logic a target only calls);
    # not deeper: a test of one rule runs all of an engine's plumbing, and is no weaker
    # for letting a change there pass.
    helpers: list[Mutant] = []
    for path, names in found.items():
        if lines := executed.get(path):
            extra = functions_run(files[path], lines, set(names))
            helpers.extend(
                m for m in mutants(files[path], path, extra, operators) if m.line in lines
            )
    return interleaved(reached, operators) + interleaved(helpers, operators), ""


def _run_mutants(
    grade: Grade,
    chosen: list[Mutant],
    run: _TestRun,
    test_path: str,
    workers: int,
    deadline: float | None,
    work: Work,
) -> None:
    """Run the test against the mutants, ``workers`` at a time, until one kills it, the
    deadline passes, the caller cancels or the sandbox refuses; ``grade`` counts them."""
    lock = threading.Lock()
    stop = threading.Event()

    def one(mutant: Mutant) -> tuple[Mutant, bool, bool, str]:
        result = run({mutant.path: mutant.text})
        if result.status == "refused":
            raise sandbox.SandboxError(result.message)
        survived = result.status == "ok"
        # a mutant that returns None is caught by any "it returned something" check
        trivial = mutant.after.strip() == "return None" or crash_only(result, test_path)
        return mutant, survived, not survived and trivial, result.message

    pending: set[Future] = set()
    queue = list(chosen)
    ran_out = False
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        while queue or pending:
            while queue and len(pending) < max(1, workers) and not stop.is_set():
                if work.cancelled():
                    stop.set()
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    ran_out = True
                    break
                pending.add(pool.submit(one, queue.pop(0)))
            if not pending:
                break
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                try:
                    mutant, survived, crashed, message = future.result()
                except sandbox.SandboxError as exc:
                    stop.set()
                    grade.status, grade.reason = "not-graded", str(exc)
                    continue
                with lock:
                    _count(grade, mutant, survived, crashed, message, stop)
                work.say(f"{grade.test_id}: mutant {grade.tried}/{len(chosen)}")
            if stop.is_set() or ran_out:
                queue.clear()


def _count(
    grade: Grade,
    mutant: Mutant,
    survived: bool,
    crashed: bool,
    message: str,
    stop: threading.Event,
) -> None:
    grade.tried += 1
    if survived:
        grade.survivors.append(_public(mutant))
    elif crashed:
        # no check of the test saw it: grading goes on
        grade.crashed.append({**_public(mutant), "message": message})
    elif grade.killed_by is None:
        grade.killed_by = {**_public(mutant), "message": message}
        stop.set()


def _sort_survivors(grade: Grade, chosen: list[Mutant]) -> None:
    """Shown in a stable order (runs finish in any order): the changes of a condition or a
    computation first, a `return` of a constant last (the least telling)."""
    position = {id(m): i for i, m in enumerate(chosen)}
    shown = {op: i for i, op in enumerate(_SHOWN_FIRST)}
    order = {(m.path, m.line, m.after, m.operator): position[id(m)] for m in chosen}
    grade.survivors.sort(
        key=lambda m: (
            shown.get(m["operator"], len(shown)),
            order.get((m["path"], m["line"], m["after"], m["operator"]), 0),
        )
    )


__all__ = [
    "Grade",
    "GradeCache",
    "crash_only",
    "grade_test",
]
