"""Comparing, in the parent, what the function and its sources of truth gave on the same
inputs (each a :class:`~referee.checks.execution.running.Run`), input by input
(:func:`decide_input`); oracles that contradict the docstring's own examples are set
aside (:func:`contradicting_examples`), a docstring example every oracle contradicts is
in doubt (:func:`example_in_doubt`), and a generated counterexample is shrunk to a
simpler one (:func:`shrink`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from referee.checks import sandbox
from referee.checks.arbitration.truth import agreed_value
from referee.checks.execution.inputs import Input
from referee.checks.execution.running import Run
from referee.checks.models import OracleResult
from referee.checks.progress import Work

# ---------------------------------------------------------------------------- deciding


@dataclass
class Finding:
    index: int
    kind: Literal["reject", "unclear", "agree"]  # agree: compared, and the same
    truth: str | None
    truth_source: str
    answers: list[list[str]]


def shown(status: str, text: str) -> str:
    return f"raised {text}" if status == "error" else f"returned {text}"


def contradicting_examples(inputs: Sequence[Input], runs: Sequence[Run]) -> dict[str, str]:
    """The oracle programs that contradict the docstring's own examples (a different
    value, or an exception, where an example gives the value), each with why. Several
    programs that share one misreading of the words would otherwise outvote the example
    the docstring spells out."""
    found: dict[str, str] = {}
    examples = [(index, item) for index, item in enumerate(inputs) if item.expected is not None]
    for run in runs:
        if not run.source.startswith("oracle-") or run.values is None:
            continue
        for index, item in examples:
            status, value = run.values[index]
            if status != "ok" or not sandbox.values_equal(value, item.expected):
                found[run.source] = (
                    f"set aside: it {shown(status, value)} where the docstring's example "
                    f"says {item.expected} ({item.where or item.arguments})"
                )
                break
    return found


def decide_input(
    index: int,
    item: Input,
    produced: tuple[str, str],
    truths: list[Run],
    required: int,
    reference: bool,
) -> Finding | None:
    status, value = produced
    if item.origin == "generated" and status != "ok":
        # A generated input may lie outside the function's domain; raising there (an
        # assert, a ValueError guard) is no counterexample.
        return None
    if item.expected is not None:
        if status == "ok" and sandbox.values_equal(value, item.expected):
            return Finding(index, "agree", item.expected, "docstring", [])
        return Finding(index, "reject", item.expected, "docstring", [["docstring", item.expected]])
    results: list[OracleResult] = []
    answers: list[list[str]] = []
    for run in truths:
        if run.values is None:
            continue
        answer_status, text = run.values[index]
        ok = answer_status == "ok"
        results.append(
            OracleResult(
                source=run.source, status="ok" if ok else "error", value=text if ok else None
            )
        )
        answers.append([run.source, text if ok else shown("error", text)])
    if not results:
        return None
    if item.origin == "generated" and (
        len(results) < len(truths) or any(r.status != "ok" for r in results)
    ):
        # A source of truth that raises or fails on a generated input says the spec does
        # not cover it: no verdict from that input.
        return None
    if reference:
        ref = results[0]
        if ref.status != "ok" or ref.value is None:
            return None
        if status == "ok" and sandbox.values_equal(value, ref.value):
            return Finding(index, "agree", ref.value, "reference", answers)
        return Finding(index, "reject", ref.value, "reference", answers)
    truth = agreed_value(results, required)
    ok_values = [r.value for r in results if r.status == "ok" and r.value is not None]
    distinct: list[str] = []
    for v in ok_values:
        if not any(sandbox.values_equal(v, d) for d in distinct):
            distinct.append(v)
    if truth is not None and len(distinct) == 1:
        if status == "ok" and sandbox.values_equal(value, truth):
            return Finding(index, "agree", truth, "oracles", answers)
        return Finding(index, "reject", truth, "oracles", answers)
    if len(distinct) > 1:
        return Finding(index, "unclear", None, "oracles", answers)
    return None


def example_in_doubt(
    found: Finding, produced: tuple[str, str], written: Sequence[Run], required: int
) -> Finding:
    """A docstring example the function contradicts is a counterexample — unless every
    oracle program, written from the same docstring, gives the function's value there
    too (at least ``required`` of them, all of them running). Then the example is as
    likely the mistake (a docstring erratum: HumanEval's ``median`` example says 15.0
    where the median is 8.0): UNCLEAR, for a person, never a rejection of a function
    that agrees with every independent reading but one line of its docstring."""
    if found.kind != "reject" or found.truth_source != "docstring" or produced[0] != "ok":
        return found
    oracles = [r for r in written if r.source.startswith("oracle-")]
    if len(oracles) < max(1, required) or any(r.values is None for r in oracles):
        return found
    answers = [r.values[found.index] for r in oracles]  # type: ignore[index]
    if all(s == "ok" and sandbox.values_equal(v, produced[1]) for s, v in answers):
        return Finding(
            found.index,
            "unclear",
            None,
            "docstring",
            [
                ["docstring", found.truth or ""],
                *([r.source, v] for r, (_, v) in zip(oracles, answers, strict=True)),
            ],
        )
    return found


# ---------------------------------------------------------------------------- shrinking


def _simpler(value: Any) -> list[Any]:
    if isinstance(value, bool):
        return [False] if value else []
    if isinstance(value, int):
        return [
            v
            for v in dict.fromkeys([0, 1, -1, value // 2, value - 1 if value > 0 else value + 1])
            if abs(v) < abs(value) or (abs(v) == abs(value) and v > value)
        ]
    if isinstance(value, float):
        return [
            v
            for v in dict.fromkeys([0.0, 1.0, float(round(value)), value / 2])
            if abs(v) < abs(value) or (v == round(value) and v != value)
        ]
    if isinstance(value, str):
        return [
            v
            for v in dict.fromkeys(["", value[: len(value) // 2], value[1:], value[:-1]])
            if len(v) < len(value)
        ]
    if isinstance(value, (list, tuple)):
        kind = type(value)
        shorter = [kind(value[: len(value) // 2]), kind(value[1:]), kind(value[:-1])]
        if not value:
            return []
        deeper = []
        for i, item in enumerate(value):
            for simple in _simpler(item)[:2]:
                copy = list(value)
                copy[i] = simple
                deeper.append(kind(copy))
        return [*([kind()] if value else []), *shorter, *deeper]
    if isinstance(value, dict):
        keys = list(value)
        return [{}, *({k: value[k] for k in keys if k != key} for key in keys)] if value else []
    if isinstance(value, (set, frozenset)):
        items = list(value)
        return [type(value)(items[:i] + items[i + 1 :]) for i in range(len(items))]
    return []


def _shrink_candidates(arguments: str) -> list[str]:
    try:
        values = ast.literal_eval(f"({arguments},)")
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return []
    out: list[str] = []
    for i, value in enumerate(values):
        for simple in _simpler(value):
            copy = list(values)
            copy[i] = simple
            text = ", ".join(repr(v) for v in copy)
            if text != arguments and text not in out:
                out.append(text)
    return out[:40]


def shrink(
    item: Input,
    run_all: Callable[[Sequence[Input]], tuple[Run, list[Run]]],
    required: int,
    reference: bool,
    work: Work,
    inside: Callable[[str], bool] = lambda arguments: True,
    rounds: int = 6,
) -> Input:
    """A simpler input on which the function still differs from an agreed truth: simpler
    candidates are run in one batch per round, the shortest counterexample kept."""
    best = item
    for _ in range(rounds):
        if work.cancelled():
            break
        candidates = [
            Input(a, "generated") for a in _shrink_candidates(best.arguments) if inside(a)
        ]
        if not candidates:
            break
        function_run, truth_runs = run_all(candidates)
        if function_run.values is None:
            break
        still = [
            c
            for index, c in enumerate(candidates)
            if (
                f := decide_input(
                    index, c, function_run.values[index], truth_runs, required, reference
                )
            )
            is not None
            and f.kind == "reject"
        ]
        if not still:
            break
        best = min(still, key=lambda c: (len(c.arguments), c.arguments))
    return best
