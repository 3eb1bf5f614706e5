"""The independent sources of truth for a call under test, in order of trust:

1. an explicit spec — a doctest or docstring example with the same call;
2. a reference implementation the user declared (``arbitration.references``);
3. k oracle programs the model writes from the signature and docstring only, each run in
   the sandbox on the call's arguments; they certify a value only when enough agree.

None of them sees the function's body or the test. Every execution goes through
:mod:`referee.checks.sandbox`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from referee.checks import sandbox
from referee.checks.arbitration.examples import contradicted_example, example_calls
from referee.checks.arbitration.isolate import FunctionSpec
from referee.checks.arbitration.known import with_definitions
from referee.checks.arbitration.oracle_prompts import (
    examples_messages,
    oracle_messages,
    prompts,
)
from referee.checks.arbitration.programs import (
    DocstringCopy,
    none_without_opinion,
    oracle_preamble,
    other_type,
    program_from,
    value_return,
)
from referee.checks.arbitration.project_objects import (
    ProjectRun,
    guarded,
    project_run,
    reads_code_under_test,
    with_outlines,
)
from referee.checks.arbitration.sites import wrapped
from referee.checks.cache import DiskCache
from referee.checks.configuration import ArbitrationConfig
from referee.checks.judge.backend import BatchCancelled, ChatRequest, chat_batch
from referee.checks.models import OracleResult
from referee.checks.progress import IDLE, Cancelled, Work

ORACLE_MAX_TOKENS = 768


class ArbitrationError(Exception):
    """Arbitration could not run at all (no such test, the test passes, no model): the
    message says what to do. Not a verdict."""


class ModelCrashed(ArbitrationError):
    """The model process died while writing oracles or patches: the arbitration is
    UNCLEAR with this reason, never a verdict."""


class LazyModel:
    """The model for oracles and patches, loaded on its first question: when every
    program comes from the cache, arbitration never loads it. ``identity`` (part of every
    cache key) names the weights without loading them: the backend, the model setting,
    and for a local file its size and modification time."""

    def __init__(
        self,
        backend: str,
        model: str,
        url: str | None,
        api_key_env: str | None,
        threads: int | None = None,
        runtime: str = "auto",
        timeout: float = 120.0,
    ):
        self.backend, self.model, self.url, self.api_key_env = backend, model, url, api_key_env
        self.threads, self.runtime, self.timeout = threads, runtime, timeout
        self._opened: Any = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, config: ArbitrationConfig, judge: Any) -> LazyModel:
        """The arbitration table's model, falling back on the judge's."""
        return cls(
            config.backend or judge.backend,
            config.model or judge.model,
            config.url or judge.url,
            judge.api_key_env,
            judge.threads,
            judge.runtime,
            judge.timeout,
        )

    @property
    def identity(self) -> str:
        parts = [self.backend, self.model, self.url or ""]
        if self.backend == "llama-cpp":
            with contextlib.suppress(OSError):
                path = Path(self.model).expanduser()
                if path.is_file():
                    stat = path.stat()
                    parts += [str(stat.st_size), str(stat.st_mtime_ns)]
        return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:16]

    def _open(self) -> Any:
        from referee.checks.judge.opening import backend_for

        with self._lock:
            if self._opened is None:
                # this model names its backend by the fields a JudgeConfig has
                self._opened = backend_for(self)
        return self._opened

    def chat(self, messages: Sequence[dict[str, str]], **kwargs: Any) -> Any:
        from referee.checks.judge.backend import BackendError
        from referee.checks.judge.worker import WorkerCrashed, WorkerUnavailable

        try:
            return self._open().chat(messages, **kwargs)
        except (WorkerCrashed, WorkerUnavailable) as exc:
            raise ModelCrashed(str(exc)) from None
        except BackendError as exc:
            raise ArbitrationError(f"arbitration needs its model: {exc}") from None

    def chat_batch(self, requests: Sequence[Any], **kwargs: Any) -> list[Any]:
        from referee.checks.judge.backend import BackendError, chat_batch
        from referee.checks.judge.worker import WorkerCrashed, WorkerUnavailable

        try:
            return chat_batch(self._open(), requests, **kwargs)
        except (WorkerCrashed, WorkerUnavailable) as exc:
            raise ModelCrashed(str(exc)) from None
        except BackendError as exc:
            raise ArbitrationError(f"arbitration needs its model: {exc}") from None


def limits(config: ArbitrationConfig) -> sandbox.Limits:
    """Sandbox limits for one oracle, reference or doctest run."""
    return sandbox.Limits(
        timeout_s=config.timeout,
        cpu_s=max(1, math.ceil(config.timeout)),
        memory_mb=config.memory_mb,
    )


# ----------------------------------------------------------------------- reference


def reference_for(config: ArbitrationConfig, keys: Sequence[str]) -> str | None:
    """The declared reference for the first of ``keys`` (``module:function``,
    ``path.py:function``) that has one."""
    for key in keys:
        if key in config.references:
            return config.references[key]
    return None


def reference_evidence(
    reference: str,
    arguments: str,
    config: ArbitrationConfig,
    files: dict[str, str],
    wrapper: str | None = None,
    python: sandbox.Interpreter | None = None,
    projection: str = "",
    definitions: str = "",
) -> OracleResult:
    """Run the declared reference implementation on the call's arguments, in the sandbox,
    with the project's files beside it (in ``python``, the project's interpreter); its
    value wrapped and projected as the test does (``list(...)``, ``.year``); the
    arguments evaluated after ``definitions`` (:attr:`Isolated.definitions`)."""
    target, sep, function = reference.rpartition(":")
    if not sep or not target or not function.isidentifier():
        return OracleResult(
            source="reference",
            status="error",
            detail=f"{reference!r} is not module:function or path.py:function",
        )
    if target.endswith(".py"):
        text = files.get(target.replace(os.sep, "/"))
        if text is None:
            return OracleResult(
                source="reference", status="error", detail=f"{target}: no such file in the project"
            )
        code, call = text, f"{function}({arguments})"
    else:
        code = (
            "import os, sys\nsys.path.insert(0, os.getcwd())\n"
            f"from {target} import {function} as __referee_reference__\n"
        )
        call = f"__referee_reference__({arguments})"
    call = with_definitions(wrapped(wrapper, call, projection), definitions)
    result = sandbox.evaluate(code, call, limits=limits(config), files=files, python=python)
    return OracleResult(
        source="reference",
        status=result.status,
        value=result.value if result.status == "ok" else None,
        detail=reference if result.status == "ok" else f"{reference}: {result.message}",
        duration_s=result.duration_s,
    )


# -------------------------------------------------------------------------- oracles


class ProgramCache:
    """Generated programs on disk, keyed by (prompt, model identity, seed, temperature):
    the same function arbitrated again, or another case of it, costs no model call."""

    def __init__(self, directory: Path | None, max_bytes: int | None = None) -> None:
        self.directory = directory
        self.store = DiskCache(directory, max_bytes)

    def key(
        self,
        messages: Sequence[dict[str, str]],
        identity: str,
        seed: int,
        temp: float,
        max_tokens: int,
    ) -> str:
        # the conversation itself, not the prompt file's version: a prompt added beside
        # the others leaves the programs of unchanged conversations where they are; v3:
        # answers that loop are cut (referee.checks.judge.batched.looping), and a copied
        # docstring is forced (programs.DocstringCopy)
        raw = json.dumps(["conversation-v3", list(messages), identity, seed, temp, max_tokens])
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()

    def get(self, key: str) -> str | None:
        data = self.store.get_json(key)
        text = data.get("answer") if isinstance(data, dict) else None
        return text if isinstance(text, str) else None

    def put(self, key: str, answer: str) -> None:
        self.store.put_json(key, {"answer": answer})


def generate(
    backend: Any,
    messages: Sequence[dict[str, str]],
    *,
    seed: int,
    temperature: float,
    cache: ProgramCache,
    max_tokens: int = ORACLE_MAX_TOKENS,
    forcing: Callable[[str], str | None] | None = None,
    draft: bool = False,
) -> tuple[str, bool]:
    """(answer, whether it came from the cache). ``draft``: the answer mostly copies its
    prompt (a patch), see :attr:`ChatRequest.draft`."""
    return generate_many(
        backend,
        messages,
        seeds=[seed],
        temperature=temperature,
        cache=cache,
        max_tokens=max_tokens,
        forcing=forcing,
        draft=draft,
    )[0]


def generate_many(
    backend: Any,
    messages: Sequence[dict[str, str]] | Sequence[Sequence[dict[str, str]]],
    *,
    seeds: Sequence[int],
    temperature: float,
    cache: ProgramCache,
    max_tokens: int = ORACLE_MAX_TOKENS,
    work: Work = IDLE,
    forcing: Callable[[str], str | None] | None = None,
    draft: bool = False,
) -> list[tuple[str, bool]]:
    """One answer per seed, (answer, whether it came from the cache): those not cached are
    decoded as one batch where the backend can (see :func:`chat_batch`). ``messages`` is
    one conversation for every seed, or one per seed. ``forcing``: text the in-process
    model appends without decoding it (:class:`~.programs.DocstringCopy`)."""
    if messages and isinstance(messages[0], dict):
        conversations = [messages] * len(seeds)
    else:
        conversations = list(messages)  # type: ignore[arg-type]
    keys = [
        cache.key(conversation, backend.identity, seed, temperature, max_tokens)  # type: ignore[arg-type]
        for conversation, seed in zip(conversations, seeds, strict=True)
    ]
    found = [cache.get(key) for key in keys]
    missing = [i for i, answer in enumerate(found) if answer is None]
    if missing:
        requests = [
            ChatRequest(
                conversations[i],  # type: ignore[arg-type]
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seeds[i],
                until_code_block=True,
                forcing=forcing,
                draft=draft,
            )
            for i in missing
        ]
        try:
            generations = chat_batch(backend, requests, work=work)
        except BatchCancelled:
            raise Cancelled from None
        for i, generation in zip(missing, generations, strict=True):
            found[i] = generation.text
            cache.put(keys[i], generation.text)
    return [(answer or "", i not in missing) for i, answer in enumerate(found)]


REPLACEMENT_SEEDS = 100  # replacement oracles are oracle-101, oracle-102, ...


@dataclass
class Replacements:
    """The budget of fresh oracles written in place of oracles that failed to run, shared
    by every round of one arbitration, and the oracles they replaced."""

    budget: int
    next_seed: int = REPLACEMENT_SEEDS + 1
    replaced: list[OracleResult] = field(default_factory=list)
    # The first half of the budget (rounded up) asks each fresh sample with the
    # docstring's examples written out as assertions; the second half asks it as the
    # first oracles were asked. Some docstrings lead the model astray the same way every
    # time it is shown the examples, and the plain question meets them; a function the
    # first half settles never reaches the second.
    with_examples: int = field(init=False)
    used: int = 0
    # candidates that ran but were not needed (a failed oracle's repair, when its fresh
    # sample ran too), in the order written: already paid for, the first oracles asked
    # when more are wanted for the same call (a test edit's extra ones), whatever they say
    spares: list[OracleResult] = field(default_factory=list)
    # the oracles standing now, failed ones not yet replaced included: what a verdict
    # can quote when the time budget runs out between rounds
    standing: list[OracleResult] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.with_examples = (self.budget + 1) // 2

    def next_round(self, wanted: int) -> tuple[int, bool]:
        """How many of ``wanted`` candidates the next round may write — a round never
        straddles the two halves — and whether its fresh samples are shown the examples;
        the budget is spent as they are."""
        examples = self.used < self.with_examples
        room = self.with_examples - self.used if examples else self.budget
        count = min(wanted, room, self.budget)
        self.used += count
        self.budget -= count
        return count, examples


_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)):")


def failed_to_run(result: OracleResult, docstring: str | None) -> bool:
    """Whether an oracle gave no opinion about the value: its program did not parse or
    define the function, it crashed, it timed out or ran out of memory, or it contradicts
    one of the docstring's examples (a misreading of the spec). An exception the
    docstring names (``Raises ValueError``) is an opinion — "this call raises" — and
    stays: it blocks certification as any disagreement does, it is never replaced by
    programs that happen to return."""
    if result.status == "ok" or result.status == "refused":
        return False
    if result.status != "error":
        return True  # timeout, memory, output-limit, killed
    match = _EXCEPTION.match(result.detail or "")
    if match is None:
        return True  # the program did not parse, did not define the function, ...
    name = match.group(1).rsplit(".", 1)[-1]
    return not (docstring and re.search(rf"\b{re.escape(name)}\b", docstring))


def oracle_evidence(
    spec: FunctionSpec,
    arguments: str,
    backend: Any,
    config: ArbitrationConfig,
    cache: ProgramCache,
    *,
    work: Work = IDLE,
    seeds: Sequence[int] | None = None,
    replacements: Replacements | None = None,
    wrapper: str | None = None,
    suite: Sequence[tuple[str, str, str]] | None = None,
    raises: str | None = None,
    projection: str = "",
    definitions: str = "",
) -> list[OracleResult]:
    """k oracle programs, written from the signature and docstring with different seeds,
    each run in the sandbox on the call's arguments. The k questions go to the model at
    once — the in-process model decodes them as one batch, the shared prompt evaluated
    once; a server gets them concurrently — then the programs run side by side.

    ``seeds`` (default 1..k) names the oracles: oracle-N is the one written with seed N,
    so more oracles for the same call extend the first k rather than repeat them. An
    oracle whose program contradicts one of the docstring's own examples
    (:func:`contradicted_example`) is set aside as if it had not run: it misread the spec.

    An oracle that failed to run (:func:`failed_to_run`) is no opinion about the value:
    while ``replacements`` has budget left, another one (seed 101, 102, ...) takes its
    place — the model shown the failed program and what went wrong with it
    (:func:`repair_messages`) — and the failed one is recorded in
    ``replacements.replaced``; a second candidate that ran too is kept in
    ``replacements.spares``, and takes the place of another failed oracle whose own
    candidates both failed. ``wrapper`` (``list``, ``sorted``...) is applied to the call's
    value, as the test applies it, then ``projection`` (``.year``, ``[0]``:
    :mod:`~referee.checks.arbitration.projection`), inside the oracle's sandboxed run.

    ``suite``: the project's passing assertions about the function (:func:`referee.checks.
    arbitration.suite.suite_examples`): the spec with the signature where it has no
    docstring (:func:`oracle_messages`), after its docstring otherwise; an oracle counts
    only when it gives every one's value.

    ``raises``: the exception class the test expects the call to raise: an oracle that
    raises it (or one the docstring names) gave an opinion, and is kept, not replaced.

    ``definitions``: what the call's known arguments need (the test module's imports of
    the names they use, the functions they name: :attr:`Isolated.definitions`), run in a
    copy of the program's namespace before the call is evaluated — the model's own
    names stay its own."""
    from_suite = bool(suite) and not spec.docstring_value
    examples = list(suite) if from_suite and suite else example_calls(spec)
    beside = list(suite) if suite and not from_suite else []  # after the docstring's
    inner = f"{spec.name}({arguments})"
    project = project_run(spec.module, spec.qualname, definitions, spec.name)
    writer = _OracleWriter(
        spec=spec,
        backend=backend,
        config=config,
        cache=cache,
        work=work,
        messages=with_outlines(oracle_messages(spec, suite), project),
        examples=examples,
        suite_examples=beside,
        origin="the suite" if from_suite else "the docstring",
        preamble=oracle_preamble(spec.text, spec.signature, spec.module),
        call=with_definitions(wrapped(wrapper, inner, projection), definitions),
        project=project,
        returns=value_return(spec.signature) if wrapper is None and not projection else None,
    )
    seeds = list(seeds) if seeds is not None else list(range(1, config.oracles + 1))
    more = "" if seeds[0] == 1 else " more"
    spec_words = f"{len(examples)} assertions of the tests" if from_suite else "docstring"
    spec_words += f" and {len(beside)} assertions of the tests" if beside else ""
    work.say(f"writing {len(seeds)}{more} oracles from the signature and {spec_words}")
    results = writer.round(seeds)
    if replacements is not None:
        replacements.standing = results  # replaced in place, round by round
        # the exceptions that are opinions, not failures to run (see failed_to_run)
        named = " ".join(filter(None, [spec.docstring_value, raises]))
        _replace_failed(writer, results, replacements, named)
    return results


def docstring_copy(spec: FunctionSpec) -> DocstringCopy | None:
    """The docstring a prompt shows under the function's own signature (the oracle
    prompt, the patch prompt), for the model to copy without decoding it; None for a
    method's oracle, whose prompt shows the class and asks for another function."""
    if spec.docstring is None or spec.class_stub is not None:
        return None
    return DocstringCopy(spec.name, spec.docstring)


@dataclass
class _OracleWriter:
    """Writes rounds of oracles for one call: asks the model (a batch), then runs each
    program in the sandbox on the call and on the examples of its specification."""

    spec: FunctionSpec
    backend: Any
    config: ArbitrationConfig
    cache: ProgramCache
    work: Work
    messages: list[dict[str, str]]  # the oracle prompt
    examples: list[tuple[str, str, str]]  # the docstring's, or the suite's
    origin: str  # where the examples come from, in the reasons: "the docstring"
    preamble: str  # the module's standard-library imports
    call: str  # the call every oracle program is run on
    # the suite's examples beside a docstring's (checked after them, "the suite")
    suite_examples: list[tuple[str, str, str]] = field(default_factory=list)
    written: dict[str, str] = field(default_factory=dict)  # oracle -> answer, for a repair
    project: ProjectRun | None = None  # the call builds the project's objects
    # the type the call's value must have by the signature (``int``), when it is a value
    # type and the call is the function's own value (no wrapper, no projection)
    returns: str | None = None

    def round(
        self, seeds: list[int], conversations: list[list[dict[str, str]]] | None = None
    ) -> list[OracleResult]:
        """One oracle per seed (``oracle-SEED``), written from ``conversations`` (one a
        seed; the oracle prompt when None), run side by side."""
        answers = generate_many(
            self.backend,
            conversations if conversations is not None else self.messages,
            seeds=seeds,
            temperature=self.config.temperature,
            cache=self.cache,
            work=self.work,
            forcing=docstring_copy(self.spec),
        )

        def oracle(position: int) -> OracleResult:
            answer, cached = answers[position]
            return self.run(f"oracle-{seeds[position]}", answer, cached)

        self.work.say(f"running {len(seeds)} oracle programs in the sandbox")
        with ThreadPoolExecutor(max_workers=len(seeds)) as pool:
            return list(pool.map(oracle, range(len(seeds))))

    def _misread(self, program: str, value: str | None) -> str | None:
        """Why the value an oracle's program gave is no opinion, or None: a None from a
        program that prints its answer, forgets to return it or runs a copied stub, or
        where the signature names a value type; a literal of a type the signature rules
        out (``b'x'`` where it says ``-> str``)."""
        if value == "None":
            why = none_without_opinion(program, self.spec.name)
            if self.returns is not None:
                why = f"returned None; the signature says {self.returns}"
            return why
        other = other_type(value, self.returns) if value and self.returns else None
        return None if other is None else f"returned {other}; the signature says {self.returns}"

    def run(self, source: str, answer: str, cached: bool) -> OracleResult:
        """The oracle ``source``'s value for the call: its program run in the sandbox,
        set aside when it contradicts one of the examples."""
        self.written[source] = answer
        program, problem = program_from(
            answer, self.spec.name, self.preamble, copied=self.spec.decorators
        )
        if program is None:
            return OracleResult(
                source=source,
                status="error",
                detail=f"the model's program {problem}",
                cached=cached,
            )
        runs: dict[str, Any] = {}  # how the program runs: the project's files, its python
        running = program
        if self.project is not None:
            why = reads_code_under_test(
                program, self.spec.module, self.project.packages, self.preamble
            )
            if why is not None:
                return OracleResult(
                    source=source,
                    status="error",
                    detail=f"the model's program reads the code under test: it {why}",
                    cached=cached,
                    program=program,
                )
            running = guarded(self.project.guard, program, self.project.seal)
            runs = {"files": self.project.files, "python": self.project.python}
        result = sandbox.evaluate(running, self.call, limits=limits(self.config), **runs)
        why = self._misread(program, result.value) if result.status == "ok" else None
        if why is not None:
            return OracleResult(
                source=source,
                status="error",
                detail=f"the model's program {why}",
                duration_s=result.duration_s,
                cached=cached,
                program=program,
            )
        if result.status == "ok":
            # the examples' arguments may build the project's objects too
            why = contradicted_example(
                running, self.examples, limits(self.config), self.origin, **runs
            )
            if why is None and self.suite_examples:
                why = contradicted_example(
                    running, self.suite_examples, limits(self.config), "the suite", **runs
                )
            if why is not None:
                return OracleResult(
                    source=source,
                    status="error",
                    detail=why,
                    duration_s=result.duration_s,
                    cached=cached,
                    program=program,
                )
        return OracleResult(
            source=source,
            status=result.status,
            value=result.value if result.status == "ok" else None,
            detail="" if result.status == "ok" else result.message,
            duration_s=result.duration_s,
            cached=cached,
            program=program,
        )


def _replace_failed(
    writer: _OracleWriter,
    results: list[OracleResult],
    replacements: Replacements,
    named: str,
) -> None:
    """Replace, in ``results``, the oracles that failed to run, while the budget lasts
    (see :func:`oracle_evidence`)."""
    spec, work = writer.spec, writer.work
    fresh_messages = with_outlines(
        examples_messages(spec, writer.examples, writer.suite_examples), writer.project
    )
    while replacements.budget > 0:
        failed = [i for i, r in enumerate(results) if failed_to_run(r, named)]
        if not failed:
            break
        work.raise_if_cancelled()
        work.say(f"{len(failed)} oracle(s) did not run; asking for new ones")
        # Each failed oracle gets two candidates, decoded in one batch: a fresh sample —
        # in the first half of the budget the prompt with the docstring's examples
        # written out as assertions (:func:`examples_messages`), another way of asking
        # than the one that failed; in the second half the first oracles' prompt again,
        # for a docstring whose examples, shown, lead the model astray every time — and
        # a repair — the model shown its own program and what went wrong with it. A
        # repair alone tends to stay with the mistake it was shown; a fresh sample alone
        # forgets what was learnt. Fresh samples come first while the budget is short.
        count, shown_examples = replacements.next_round(2 * len(failed))
        asked = fresh_messages if shown_examples else writer.messages
        jobs = [(i, asked) for i in failed] + [
            (
                i,
                repair_messages(
                    writer.messages,
                    writer.written.get(results[i].source, ""),
                    results[i],
                    spec.name,
                ),
            )
            for i in failed
        ]
        jobs = jobs[:count]
        fresh = list(range(replacements.next_seed, replacements.next_seed + len(jobs)))
        replacements.next_seed += len(jobs)
        candidates = writer.round(fresh, [conversation for _, conversation in jobs])
        _take_candidates(results, failed, jobs, candidates, replacements, named)


def _take_candidates(
    results: list[OracleResult],
    failed: list[int],
    jobs: list[tuple[int, list[dict[str, str]]]],
    candidates: list[OracleResult],
    replacements: Replacements,
    named: str,
) -> None:
    """Put one candidate in each failed oracle's place. The first candidate of the two
    (in that fixed order, whatever its value) that runs takes the place; when neither
    does, the fresh one stays, and the next round repairs that."""
    for index in failed:
        mine = [c for (i, _), c in zip(jobs, candidates, strict=True) if i == index]
        if not mine:
            continue
        ran = [c for c in mine if not failed_to_run(c, named)]
        chosen = ran[0] if ran else mine[0]
        replacements.spares.extend(ran[1:])
        # set aside: the oracle that failed, and the candidates that failed too (a
        # second candidate that also ran is kept as a spare)
        for candidate in (results[index], *(c for c in mine if c not in ran)):
            if candidate is not chosen:
                replacements.replaced.append(
                    candidate.model_copy(update={"replaced_by": chosen.source})
                )
        results[index] = chosen
    # A slot whose own candidates both failed takes a spare of another slot, the
    # first written, whatever its value: it ran, from the same prompt, for this call.
    for index in failed:
        if replacements.spares and failed_to_run(results[index], named):
            spare = replacements.spares.pop(0)
            replacements.replaced.append(
                results[index].model_copy(update={"replaced_by": spare.source})
            )
            results[index] = spare


def _problem(result: OracleResult, name: str) -> str:
    """What went wrong with an oracle's program, in the words of the repair prompt."""
    detail = result.detail.strip()
    for origin in ("the docstring", "the suite"):
        if detail.startswith(f"contradicts {origin}'s example: "):
            rest = detail.removeprefix(f"contradicts {origin}'s example: ")
            return rest.replace(f", {origin} says ", f", but {origin} says ")
        if detail.startswith(f"contradicts {origin}'s examples: "):
            return f"running {origin}'s examples with it " + detail.split(": ", 1)[1]
    if result.status == "timeout":
        return "it did not finish in time (an endless loop or far too slow)"
    if result.status == "memory":
        return "it used too much memory"
    if detail.startswith("the model's program "):
        return "the program " + detail.removeprefix("the model's program ")
    return f"calling `{name}` raised {detail}" if detail else f"`{name}` failed ({result.status})"


def repair_messages(
    messages: Sequence[dict[str, str]], answer: str, failed: OracleResult, name: str
) -> list[dict[str, str]]:
    """The oracle prompt, the failed oracle's own answer, and what went wrong with it: the
    next attempt sees its own mistake, never the function's body or the test. A failed
    program with no answer to show gets the plain prompt (a fresh sample)."""
    if not answer.strip():
        return list(messages)
    p = prompts()
    return [
        *messages,
        {"role": "assistant", "content": answer},
        {
            "role": "user",
            "content": p.oracle_repair.format(problem=_problem(failed, name), name=name),
        },
    ]


def agreed_value(results: Sequence[OracleResult], required: int) -> str | None:
    """The value at least ``required`` of the results agree on (and no other value as
    many do), or None."""
    groups: list[list[OracleResult]] = []
    for result in results:
        if result.status != "ok" or result.value is None:
            continue
        for group in groups:
            if sandbox.values_equal(group[0].value or "", result.value):
                group.append(result)
                break
        else:
            groups.append([result])
    groups.sort(key=len, reverse=True)
    if not groups or len(groups[0]) < required:
        return None
    if len(groups) > 1 and len(groups[1]) == len(groups[0]):
        return None
    return groups[0][0].value
