"""The differential check: a changed function against independent implementations of its spec.

For one function with a docstring (or a declared reference), :func:`check_function`

1. gathers inputs, in this order: the docstring's examples (with the values they give),
   the literal arguments the project's tests pass to the function (read from the tests'
   calls, not guessed), and inputs generated from the signature's annotations with
   hypothesis (bounded in number and time);
2. runs the function on all of them in one sandbox run, and each source of truth — the
   declared reference, or the k oracle programs arbitration writes from the signature and
   docstring (its prompt, its program cache) — in a sandbox run of its own;
3. compares the values here, in the parent, input by input:

   - the docstring's own example, the reference, or every oracle (``agreement``) gives a
     value and the function returns another (or raises) → **REJECT** with that input as
     a counterexample; a generated one is first shrunk (simpler candidates, run in
     batches), and the counterexample is run once more, alone, before it is reported;
   - oracles that disagree among themselves on an input → **UNCLEAR** (the docstring can
     be read two ways there), with the input and the competing answers;
   - no disagreement on any input → supporting evidence beside the reading judge's verdict.

No verdict is read from a process that ran the function or an oracle: each run returns a
list of ``[status, repr]`` pairs, checked for shape, and compared here.

The inputs come from :mod:`~referee.checks.execution.inputs`, the runs from
:mod:`~referee.checks.execution.running`, the comparing and shrinking from
:mod:`~referee.checks.execution.compare`; this module holds the check, phase by phase.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from referee import __version__
from referee.checks import sandbox
from referee.checks.arbitration.isolate import FunctionSpec
from referee.checks.arbitration.programs import oracle_preamble, program_from
from referee.checks.arbitration.truth import (
    ProgramCache,
    generate_many,
    oracle_messages,
    prompts,
)
from referee.checks.configuration import ArbitrationConfig, ExecutionConfig
from referee.checks.execution.cache import JsonCache
from referee.checks.execution.compare import (
    Finding,
    contradicting_examples,
    decide_input,
    example_in_doubt,
    shown,
    shrink,
)
from referee.checks.execution.inputs import (
    Input,
    Precondition,
    definition,
    docstring_inputs,
    generated_inputs,
    observed_inputs,
    parameter_values,
    parse_proposals,
    preconditions,
    proposal_messages,
    suite_inputs,
)
from referee.checks.execution.running import MODULE_IMPORT, Run, module_of, run_code
from referee.checks.interpreter import Interpreter
from referee.checks.progress import IDLE, Work

# Part of every cached result's key: raised when the way results are decided changes, so
# that a result cached by an older rule is not reused (2: oracles contradicting the
# docstring's examples are set aside).
DECISION_VERSION = 4

Program = tuple[str, str | None, str, bool]  # (source, program, problem, cached)


@dataclass
class Differential:
    """What running a function beside its spec's implementations showed."""

    function: str
    path: str
    line: int
    status: Literal["REJECT", "UNCLEAR", "PASS", "SKIPPED"]
    reason: str
    call: str | None = None
    produced: str | None = None
    truth: str | None = None
    truth_source: str | None = None  # "docstring", "reference", "oracles"
    answers: list[list[str]] = field(default_factory=list)  # [[source, value], ...]
    inputs: dict[str, int] = field(default_factory=dict)  # origin -> count
    sources: list[dict[str, Any]] = field(default_factory=list)  # each oracle/reference
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False

    @property
    def evidence(self) -> str:
        lines = [f"{source}: {value}" for source, value in self.answers]
        counted = ", ".join(f"{n} {origin}" for origin, n in self.inputs.items() if n)
        if counted:
            lines.append(f"inputs: {counted}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------- the check


class DifferentialCache(JsonCache[Differential]):
    """Outcomes by (function's module, inputs, the sources' programs, settings)."""

    kind = Differential


def check_function(
    spec: FunctionSpec,
    relpath: str,
    files: dict[str, str],
    tests: dict[str, str],
    execution: ExecutionConfig,
    arbitration: ArbitrationConfig,
    *,
    model: Any = None,
    reference: str | None = None,
    program_cache: ProgramCache | None = None,
    cache: DifferentialCache | None = None,
    work: Work = IDLE,
    python: Interpreter | None = None,
) -> Differential:
    """Run ``spec``'s function beside the independent implementations of its spec (see
    the module's docstring). ``files`` is the project as the sandbox gets it (the
    function's module at ``relpath`` among them), ``tests`` the project's test modules
    (where the arguments the tests pass are read), ``model`` the oracles' model (a
    :class:`~referee.checks.arbitration.truth.LazyModel`; asked only for programs the
    cache lacks), ``reference`` a declared ``module:function`` or ``path.py:function``.
    ``python``: the project's interpreter, which runs the function and the reference (the
    project's code, with its site-packages); the model's programs run in referee's own."""
    started = time.monotonic()
    result = Differential(spec.name, relpath, spec.line, "SKIPPED", "")
    if not spec.docstring_value and reference is None:
        result.reason = "no docstring and no declared reference: no spec to run it against"
        return result
    inputs = _gather(spec, tests, execution)
    result.notes = inputs.notes
    result.inputs = _counted(inputs.items)
    if not inputs.items:
        result.reason = (
            "no input to run it on: no docstring example, no test call with "
            "literal arguments, no annotations to generate from"
        )
        return result
    check = _Check(
        spec,
        relpath,
        files,
        execution,
        arbitration,
        sandbox.Limits(
            timeout_s=arbitration.timeout,
            cpu_s=max(1, int(arbitration.timeout)),
            memory_mb=arbitration.memory_mb,
        ),
        model,
        reference,
        program_cache,
        work,
        python,
    )
    programs = check.sources_of_truth(inputs, result)
    if programs is None:
        return result
    key = check.key(inputs.items, programs)
    if cache is not None and (known := cache.get(key)) is not None:
        known.seconds = round(time.monotonic() - started, 3)
        return known
    check.compare(inputs, programs, result)
    result.seconds = round(time.monotonic() - started, 3)
    if cache is not None and result.status in ("REJECT", "UNCLEAR", "PASS"):
        cache.put(key, result)
    return result


# ---------------------------------------------------------------------------- gathering


@dataclass
class _Inputs:
    """One check's inputs (``items``), in order of trust, without repeats (``seen``), the
    notes on how they were gathered, and the conditions the docstring states, which a
    generated or proposed input must meet."""

    items: list[Input]
    seen: set[str]
    notes: list[str]
    fn: Any  # the function's definition (ast.FunctionDef), None when it does not parse
    conditions: list[Precondition]

    def inside(self, arguments: str) -> bool:
        """Whether a generated input meets the docstring's stated conditions (or they
        cannot be checked on it)."""
        values = parameter_values(self.fn, arguments) if self.conditions and self.fn else None
        return values is None or all(c.holds(values) is not False for c in self.conditions)

    def add_generated(self, generated: Sequence[Input], room: int) -> None:
        outside = 0
        for item in generated:
            if item.arguments in self.seen or room <= 0:
                continue
            if not self.inside(item.arguments):
                outside += 1  # outside what the docstring says the function takes
                continue
            self.seen.add(item.arguments)
            self.items.append(item)
            room -= 1
        if outside:
            said = ", ".join(c.text for c in self.conditions)
            self.notes.append(f"{outside} generated inputs left out: the docstring asks for {said}")

    def add_proposed(self, proposed: Sequence[Input]) -> None:
        for item in proposed:
            self.seen.add(item.arguments)
            # before the generated ones: what the docstring names comes first
            first_generated = next(
                (n for n, g in enumerate(self.items) if g.origin == "generated"), len(self.items)
            )
            self.items.insert(first_generated, item)


def _gather(spec: FunctionSpec, tests: dict[str, str], execution: ExecutionConfig) -> _Inputs:
    """The docstring's examples, the suite's and the tests' calls, then generated inputs
    inside the docstring's conditions, up to the budget."""
    gathered: list[Input] = []
    seen: set[str] = set()
    notes: list[str] = []
    budget = execution.inputs
    doc = docstring_inputs(spec) if spec.docstring_value else []
    observed = observed_inputs(spec.name, spec.module, tests)
    suite = suite_inputs(spec.name, spec.module, tests)
    for item in [*doc, *suite, *observed]:
        if item.arguments not in seen and len(gathered) < budget:
            seen.add(item.arguments)
            gathered.append(item)
    room = min(execution.generated_inputs, budget - len(gathered))
    conditions = preconditions(spec) if room > 0 else []
    generated, note = generated_inputs(
        spec, (room * 3 if conditions else room) + 5, execution.generation_time, gathered
    )
    if note:
        notes.append(note)
    inputs = _Inputs(gathered, seen, notes, definition(spec), conditions)
    inputs.add_generated(generated, room)
    return inputs


# ---------------------------------------------------------------------------- one check


@dataclass
class _Check:
    """What one check of one function runs with; its phases are the methods."""

    spec: FunctionSpec
    relpath: str
    files: dict[str, str]
    execution: ExecutionConfig
    arbitration: ArbitrationConfig
    limits: sandbox.Limits
    model: Any
    reference: str | None
    program_cache: ProgramCache | None
    work: Work
    python: Interpreter | None

    def say(self, message: str) -> None:
        """Progress, named after the function checked."""
        self.work.say(f"{self.spec.name}: {message}")

    @property
    def project(self) -> dict[str, str]:
        """The project as the sandbox gets it, the function's module among it."""
        return {**self.files, self.relpath: self.files.get(self.relpath, self.spec.text)}

    @property
    def function_code(self) -> str:
        entry, module = module_of(self.relpath)
        return MODULE_IMPORT.format(entry=entry, module=module, relpath=self.relpath)

    # --- the sources of truth: a reference, else the k oracles (programs cached)

    def sources_of_truth(self, inputs: _Inputs, result: Differential) -> list[Program] | None:
        """The oracle programs (none when a reference is declared, or the docstring's
        examples alone decide); None, with ``result.reason`` said, when the oracles are
        needed and cannot be written."""
        needs_oracles = self.reference is None and any(i.expected is None for i in inputs.items)
        # inputs beyond the docstring's examples: the oracles will be asked for values anyway
        beyond_examples = needs_oracles
        if (
            not needs_oracles
            and self.reference is None
            and self.model is not None
            and self.spec.docstring_value
        ):
            needs_oracles = self._examples_contradicted(inputs.items)
        if not needs_oracles:
            return []
        if not self.spec.docstring_value:
            result.reason = "no docstring to write oracles from"
            return None
        if self.model is None:
            result.reason = "the oracles need a model; none is set up"
            return None
        programs = self._write_oracles()
        # The cases the docstring names, proposed by the model in one more request:
        # random inputs seldom hold the mixed case, the punctuation, the empty list it
        # speaks of. Asked only when oracles are written (they give the values).
        wanted = min(
            self.execution.proposed_inputs, max(0, self.execution.inputs - len(inputs.items))
        )
        if wanted and beyond_examples:
            self._propose_inputs(inputs, wanted)
            result.inputs = _counted(inputs.items)
        return programs

    def _examples_contradicted(self, items: Sequence[Input]) -> bool:
        """Only the docstring's examples: the oracles are written only when the function
        contradicts one of them, to tell a wrong function from a wrong example (REF412)."""
        alone = run_code(
            "function",
            self.function_code,
            f"_referee_m.{self.spec.name}",
            items,
            self.limits,
            self.project,
            self.python,
        )
        return alone.values is not None and any(
            status != "ok" or not sandbox.values_equal(value, item.expected or "")
            for (status, value), item in zip(alone.values, items, strict=True)
        )

    def _write_oracles(self) -> list[Program]:
        arbitration = self.arbitration
        self.say(f"oracles ({arbitration.oracles}) from the signature and docstring")
        answers = generate_many(
            self.model,
            oracle_messages(self.spec),
            seeds=list(range(1, arbitration.oracles + 1)),
            temperature=arbitration.temperature,
            cache=self.program_cache or ProgramCache(None),
            work=self.work,
        )
        preamble = oracle_preamble(self.spec.text, self.spec.signature, self.spec.module)
        programs: list[Program] = []
        for seed, (answer, was_cached) in enumerate(answers, start=1):
            program, problem = program_from(answer, self.spec.name, preamble)
            programs.append((f"oracle-{seed}", program, problem, was_cached))
        return programs

    def _propose_inputs(self, inputs: _Inputs, wanted: int) -> None:
        self.say(f"asking for up to {wanted} inputs from the docstring")
        (reply, _), *_ = generate_many(
            self.model,
            proposal_messages(self.spec, wanted),
            seeds=[1],
            temperature=self.arbitration.temperature,
            cache=self.program_cache or ProgramCache(None),
            work=self.work,
            max_tokens=512,
        )
        proposed = [
            i
            for i in parse_proposals(reply, inputs.fn, wanted)
            if i.arguments not in inputs.seen and inputs.inside(i.arguments)
        ]
        if not proposed:
            inputs.notes.append("the model proposed no input that fits the signature")
        inputs.add_proposed(proposed)

    def key(self, items: Sequence[Input], programs: Sequence[Program]) -> str:
        """The cached result's key: everything the outcome depends on."""
        reference, files = self.reference, self.files
        return hashlib.sha256(
            json.dumps(
                [
                    __version__,
                    DECISION_VERSION,
                    prompts().version,
                    self.relpath,
                    files.get(self.relpath, self.spec.text),
                    self.spec.name,
                    [asdict(i) for i in items],
                    [(s, p) for s, p, _, _ in programs],
                    reference,
                    files.get(reference.rpartition(":")[0], "") if reference else "",
                    self.arbitration.required_agreement,
                    self.python.path if self.python is not None else None,
                ]
            ).encode("utf-8")
        ).hexdigest()

    # --- running and deciding

    def compare(self, inputs: _Inputs, programs: list[Program], result: Differential) -> None:
        """Run the function and every source of truth on the inputs, and decide."""
        gathered = inputs.items
        runner = _Runner(self, programs)
        self.say(f"running it and its spec's implementations on {len(gathered)} inputs")
        function_run, truth_runs = runner(gathered)
        written_runs = list(truth_runs)  # before any is set aside for contradicting an example
        if programs:
            runner.disqualified.update(contradicting_examples(gathered, truth_runs))
            truth_runs = runner.set_aside(truth_runs)
        result.sources = [
            {
                "source": r.source,
                "status": r.status,
                "detail": r.detail,
                **({"program": p} if (p := _program(programs, r.source)) else {}),
            }
            for r in truth_runs
        ]
        if function_run.status == "refused" or any(r.status == "refused" for r in truth_runs):
            result.reason = (
                function_run.detail
                if function_run.status == "refused"
                else next(r.detail for r in truth_runs if r.status == "refused")
            )
            return
        if function_run.values is None:
            result.status = "SKIPPED"
            result.reason = (
                f"the function's module did not run in the sandbox: {function_run.detail}"
            )
            return
        findings = self._findings(gathered, function_run.values, truth_runs, written_runs, programs)
        rejects = [f for f in findings if f.kind == "reject"]
        unclear = [f for f in findings if f.kind == "unclear"]
        rejected = bool(rejects) and self._confirm_reject(
            gathered[rejects[0].index], runner, inputs, len(programs), result
        )
        if rejected:
            return
        if unclear:
            _report_unclear(result, unclear[0], gathered[unclear[0].index], function_run.values)
        elif not any(f.kind == "agree" for f in findings):
            # Nothing was compared: every source of truth raised or did not run (an oracle
            # that calls a helper the docstring names, say), or the function raised on every
            # generated input. That is no evidence either way.
            result.status = "SKIPPED"
            result.reason = (
                f"no input of {len(gathered)} was compared: the sources of truth gave no value "
                "the function could be held to (they raised or did not run), or the function "
                "raised on every generated input"
            )
        else:
            _report_pass(result, findings, truth_runs, programs, self.reference, len(gathered))

    def _findings(
        self,
        gathered: Sequence[Input],
        produced: list[tuple[str, str]],
        truth_runs: list[Run],
        written_runs: list[Run],
        programs: Sequence[Program],
    ) -> list[Finding]:
        required = self.arbitration.required_agreement
        reference = self.reference is not None
        findings = [
            f
            for index, item in enumerate(gathered)
            if (f := decide_input(index, item, produced[index], truth_runs, required, reference))
            is not None
        ]
        if programs and not reference:
            findings = [
                example_in_doubt(f, produced[f.index], written_runs, required) for f in findings
            ]
        return findings

    def _confirm_reject(
        self, item: Input, runner: _Runner, inputs: _Inputs, k: int, result: Differential
    ) -> bool:
        """Whether the first counterexample (shrunk, when generated) still holds when run
        once more, alone, before it is shown; ``result`` says it when it does."""
        required = self.arbitration.required_agreement
        reference = self.reference is not None
        name = self.spec.name
        if item.origin == "generated":
            self.say("shrinking the counterexample")
            item = shrink(item, runner, required, reference, self.work, inputs.inside)
        # Run once more, alone, before it is shown.
        self.say(f"re-running {name}({item.arguments})")
        again_function, again_truths = runner([item])
        confirm = (
            decide_input(0, item, again_function.values[0], again_truths, required, reference)
            if again_function.values is not None
            else None
        )
        if confirm is None or confirm.kind != "reject":
            result.notes.append(
                f"{name}({item.arguments}) differed once and not when run again: not reported"
            )
            return False
        produced = again_function.values[0]  # type: ignore[index]
        result.status = "REJECT"
        result.call = f"{name}({item.arguments})"
        result.produced = shown(*produced)
        result.truth = confirm.truth
        result.truth_source = confirm.truth_source
        result.answers = confirm.answers
        result.reason = _reject_reason(result, confirm, k, item)
        return True


class _Runner:
    """Runs the function and each source of truth on a batch of inputs (two sandbox runs
    at a time). An oracle that contradicts the docstring's own examples misread the
    docstring: it is no source of truth on any input (``disqualified``: source -> why),
    in the run that found it and in every later one."""

    def __init__(self, check: _Check, programs: Sequence[Program]) -> None:
        self.check = check
        self.programs = programs
        self.function_code = check.function_code
        self.project = check.project
        self.disqualified: dict[str, str] = {}

    def __call__(self, inputs: Sequence[Input]) -> tuple[Run, list[Run]]:
        check, project, limits = self.check, self.project, self.check.limits
        jobs: list[Callable[[], Run]] = [
            lambda: run_code(
                "function",
                self.function_code,
                f"_referee_m.{check.spec.name}",
                inputs,
                limits,
                project,
                check.python,
            )
        ]
        if check.reference is not None:
            code, callee = _reference_code(check.reference, project)
            jobs.append(
                lambda: run_code("reference", code, callee, inputs, limits, project, check.python)
            )
        for source, program, problem, _ in self.programs:
            if program is None:
                jobs.append(
                    lambda s=source, p=problem: Run(s, "error", f"the model's program {p}", None)
                )
            else:
                jobs.append(
                    lambda s=source, p=program: run_code(s, p, check.spec.name, inputs, limits)
                )
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = self.set_aside(list(pool.map(lambda job: job(), jobs)))
        return runs[0], runs[1:]

    def set_aside(self, runs: list[Run]) -> list[Run]:
        return [
            Run(r.source, "error", self.disqualified[r.source], None)
            if r.source in self.disqualified
            else r
            for r in runs
        ]


def _reference_code(reference: str, project: dict[str, str]) -> tuple[str, str]:
    """The code that defines a declared reference, and the name to call it by."""
    target, _, name = reference.rpartition(":")
    if target.endswith(".py"):
        return project.get(target, ""), name
    code = (
        "import os, sys\nsys.path.insert(0, os.getcwd())\n"
        f"from {target} import {name} as __referee_reference__\n"
    )
    return code, "__referee_reference__"


# ---------------------------------------------------------------------------- reporting


def _report_unclear(
    result: Differential, first: Finding, item: Input, produced: list[tuple[str, str]]
) -> None:
    result.status = "UNCLEAR"
    result.call = f"{result.function}({item.arguments})"
    result.produced = shown(*produced[first.index])
    result.answers = first.answers
    competing = ", ".join(f"{s} {v}" for s, v in first.answers)
    if first.truth_source == "docstring":
        result.reason = (
            f"{result.call}: the docstring's example says {item.expected}, but the "
            f"function and {len(first.answers) - 1} independent implementations of the "
            f"docstring all {result.produced}: the example itself may be wrong"
        )
    else:
        result.reason = (
            f"{result.call}: the oracles disagree ({competing}); the function "
            f"{result.produced}: the docstring can be read more than one way here"
        )


def _report_pass(
    result: Differential,
    findings: Sequence[Finding],
    truth_runs: Sequence[Run],
    programs: Sequence[Program],
    reference: str | None,
    total: int,
) -> None:
    result.status = "PASS"
    agreed = sum(f.kind == "agree" for f in findings)
    usable = sum(1 for r in truth_runs if r.values is not None and r.source != "reference")
    sources = (
        "the declared reference"
        if reference is not None
        else f"{usable} of {len(programs)} oracles"
        if usable < len(programs)
        else f"{len(programs)} oracles"
        if programs
        else "the docstring's examples"
    )
    if not usable and reference is None:
        sources = "the docstring's examples"
    counted = ", ".join(f"{n} {o}" for o, n in result.inputs.items() if n)
    result.reason = f"agrees with {sources} on {agreed} inputs ({counted})"
    if agreed < total:
        result.reason = (
            f"agrees with {sources} on {agreed} of {total} inputs ({counted}); "
            f"no verdict on {total - agreed} (the function or a source raised)"
        )


def _counted(gathered: Sequence[Input]) -> dict[str, int]:
    """How many inputs of each origin (proposed ones only when there are some)."""
    counts = {
        origin: sum(i.origin == origin for i in gathered)
        for origin in ("docstring", "test", "proposed", "generated")
    }
    if not counts["proposed"]:
        del counts["proposed"]
    return counts


def _program(programs: list[tuple[str, str | None, str, bool]], source: str) -> str | None:
    return next((p for s, p, _, _ in programs if s == source), None)


def _reject_reason(result: Differential, found: Finding, k: int, item: Input) -> str:
    if found.truth_source == "docstring":
        said = f"the docstring says {found.truth} ({item.where.strip()})"
    elif found.truth_source == "reference":
        said = f"the declared reference returns {found.truth}"
    else:
        agreeing = sum(1 for _, v in found.answers if sandbox.values_equal(v, found.truth or ""))
        said = f"{agreeing} independent implementations of the docstring return {found.truth}"
    origin = {
        "docstring": "a docstring example",
        "test": "an input the tests use",
        "proposed": "an input the model proposed from the docstring",
        "generated": "a generated input",
    }[item.origin]
    return f"{result.call} {result.produced}; {said} ({origin})"


__all__ = [
    "Differential",
    "DifferentialCache",
    "check_function",
]
