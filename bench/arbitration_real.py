#!/usr/bin/env python3
"""Arbitration on real projects' red tests: the corpus ``bench/mine_arbitration.py``
mines from git history, arbitrated through the command line.

Run as ``python bench/arbitration.py --corpus DIR`` (or this file directly):

    python bench/arbitration.py --corpus /tmp/arb-corpus --model qwen2.5-coder-0.5b \\
        --time-budget 120 --jobs 1                      # writes bench/results/arbitration-real.json
    python bench/arbitration.py --corpus /tmp/arb-corpus --only wrong-test --limit 3
    python bench/arbitration.py --corpus /tmp/arb-corpus \\
        --table-from bench/results/arbitration-real.json

Each case's ``tree/`` is copied to a scratch directory, made a git repository of one
commit (arbitration reads blame and diffs), given a ``referee.toml`` with the time budget,
and arbitrated with ``referee arbitrate NODE --apply --format json --no-queue``. Then the
case's node is run again with pytest. Scored: decided right (SOURCE_WRONG on a real bug,
TEST_WRONG on a wrong test), wrong blame (the other side), test files edited on a real bug,
source fixes after which the failing test passes, UNCLEAR with its reason, errors, and
seconds per arbitration (p50, p90).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import _results  # noqa: E402  (bench/_results.py: each run is appended to its history)
from _tools import source_fingerprint  # noqa: E402
from mine_arbitration import is_test_path, run_pytest  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "arbitration-real.json"
EXPECTED = {"real-bug": "SOURCE_WRONG", "wrong-test": "TEST_WRONG"}
OTHER = {"SOURCE_WRONG": "TEST_WRONG", "TEST_WRONG": "SOURCE_WRONG"}
# What arbitration writes besides the fix: not an edit of either side.
OWN_FILES = ("referee.toml", ".referee/", ".referee-")


# ------------------------------------------------------------------ scoring


def classify(
    kind: str,
    verdict: dict[str, Any] | None,
    changed: list[str],
    test_passes: bool | None,
    error: str = "",
) -> dict[str, Any]:
    """One case's score from the verdict JSON ``referee arbitrate`` printed (None: none
    printed), the files changed after ``--apply`` and whether the case's test passes after.

    outcome: ``right`` | ``wrong-blame`` | ``unclear`` | ``error``."""
    expected = EXPECTED[kind]
    edited = [p for p in changed if not p.startswith(OWN_FILES)]
    test_edits = [p for p in edited if is_test_path(p)]
    source_edits = [p for p in edited if p not in test_edits]
    name = (verdict or {}).get("verdict")
    if not name:
        outcome = "error"
        error = error or (verdict or {}).get("error") or "no verdict"
        reason = ""
    else:
        outcome = (
            "right" if name == expected
            else "wrong-blame" if name == OTHER.get(expected)
            else "unclear"
        )  # fmt: skip
        reason = str((verdict or {}).get("reason") or "")
    return {
        "expected": expected,
        "verdict": name,
        "outcome": outcome,
        "reason": reason[:300],
        "error": error[:300],
        "test_edits": test_edits,
        "source_edits": source_edits,
        "test_edit_on_real_bug": kind == "real-bug" and bool(test_edits),
        "fix_passes": bool(
            name == "SOURCE_WRONG" and source_edits and not test_edits and test_passes
        ),
        "test_fix_passes": bool(name == "TEST_WRONG" and test_edits and test_passes),
        "test_passes_after": test_passes,
    }


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return round(ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo), 1)


def totals(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = {"all": results}
    for kind in EXPECTED:
        groups[kind] = [r for r in results if r["kind"] == kind]
    out = {}
    for name, rows in groups.items():
        seconds = [r["seconds"] for r in rows if r["outcome"] != "error"]
        out[name] = {
            "cases": len(rows),
            "right": sum(r["outcome"] == "right" for r in rows),
            "wrong_blame": sum(r["outcome"] == "wrong-blame" for r in rows),
            "unclear": sum(r["outcome"] == "unclear" for r in rows),
            "errors": sum(r["outcome"] == "error" for r in rows),
            "test_edits_on_real_bugs": sum(r["test_edit_on_real_bug"] for r in rows),
            "source_fixes_passing": sum(r["fix_passes"] for r in rows),
            "test_fixes_passing": sum(r["test_fix_passes"] for r in rows),
            "p50_s": percentile(seconds, 0.5),
            "p90_s": percentile(seconds, 0.9),
        }
    return out


def grouped(
    results: list[dict[str, Any]], key: str, outcome: str, top: int = 10
) -> list[tuple[str, int]]:
    """The commonest reasons of the ``outcome`` cases: their first 60 characters once
    numbers, `quoted` names and test names are written alike, so that "line 76 of
    test_negative" and "line 101 of test_sized_negative" are one reason."""
    counts = Counter(_shape(r[key])[:60] or "(none)" for r in results if r["outcome"] == outcome)
    return counts.most_common(top)


def _shape(text: str) -> str:
    text = " ".join(text.split())
    text = re.sub(r"`[^`\s]*\w[^`\s]*`", "`…`", text)  # `type`, `doc.as_string`; not `==`
    text = re.sub(r"\btest_\w+", "test_…", text)
    return re.sub(r"\d+", "N", text)


def render(data: dict[str, Any]) -> str:
    """The tables, as Markdown (what goes into docs/benchmarks.md)."""
    rows = [
        "| kind | cases | decided right | wrong blame | UNCLEAR | errors | test edits on real bugs "
        "| fixes passing the test | s p50 | s p90 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("real-bug", "wrong-test", "all"):
        t = data["totals"][name]
        fixes = t["source_fixes_passing"] if name == "real-bug" else (
            t["test_fixes_passing"] if name == "wrong-test"
            else t["source_fixes_passing"] + t["test_fixes_passing"]
        )  # fmt: skip
        rows.append(
            f"| {name} | {t['cases']} | {t['right']} | {t['wrong_blame']} | {t['unclear']} "
            f"| {t['errors']} | {t['test_edits_on_real_bugs']} | {fixes} "
            f"| {_or_dash(t['p50_s'])} | {_or_dash(t['p90_s'])} |"
        )
    results = data["cases"]
    for title, key, outcome in (
        ("UNCLEAR reasons (first 60 characters)", "reason", "unclear"),
        ("errors", "error", "error"),
    ):
        top = grouped(results, key, outcome)
        if top:
            rows += ["", f"| {title} | cases |", "|---|---|"]
            rows += [f"| {text.replace('|', '/')} | {n} |" for text, n in top]
    return "\n".join(rows)


def _or_dash(value: object) -> str:
    return "—" if value is None else str(value)


def print_tables(data: dict[str, Any]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        print(render(data))
        return
    console = Console(width=150)
    table = Table(
        title=f"Arbitration on real projects' red tests ({data['date']}, {data['referee_commit']})"
    )
    for column in ("kind", "cases", "right", "wrong blame", "UNCLEAR", "errors",
                   "test edits (real bug)", "fixes passing", "p50 s", "p90 s"):  # fmt: skip
        table.add_column(column, justify="left" if column == "kind" else "right")
    for name in ("real-bug", "wrong-test", "all"):
        t = data["totals"][name]
        fixes = t["source_fixes_passing"] + t["test_fixes_passing"]
        table.add_row(
            name, *(str(t[k]) for k in ("cases", "right", "wrong_blame", "unclear", "errors",
                                        "test_edits_on_real_bugs")),
            str(fixes), _or_dash(t["p50_s"]), _or_dash(t["p90_s"]),
        )  # fmt: skip
    console.print(table)
    for title, key, outcome in (
        ("UNCLEAR reasons", "reason", "unclear"),
        ("errors", "error", "error"),
    ):
        top = grouped(data["cases"], key, outcome)
        if top:
            reasons = Table(title=title)
            reasons.add_column("first 60 characters")
            reasons.add_column("cases", justify="right")
            for text, n in top:
                reasons.add_row(text, str(n))
            console.print(reasons)


# ------------------------------------------------------------------ running


# Packages pytest imports itself before any conftest.py runs: a case of one of these
# projects would test the copy in this venv, not the case's (``src_first`` comes too late).
PYTEST_OWN = ("packaging", "pluggy", "iniconfig", "_pytest", "pytest")


def shadowed_by_pytest(tree: Path) -> str | None:
    """The package of the project in ``tree`` that pytest has imported before the case's
    tests can put the case's copy first, or None."""
    for name in PYTEST_OWN:
        for folder in (tree / name, tree / "src" / name):
            if (folder / "__init__.py").is_file():
                return name
    return None


def load_cases(corpus: Path, only: list[str], limit: int | None) -> list[dict[str, Any]]:
    cases = []
    for path in sorted(corpus.glob("*/case.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        case["dir"] = str(path.parent)
        if only and case["kind"] not in only:
            continue
        if (name := shadowed_by_pytest(path.parent / "tree")) is not None:
            print(
                f"skipped {case['id']}: pytest imports `{name}` itself, so the run would "
                "test this venv's copy, not the case's",
                file=sys.stderr,
            )
            continue
        cases.append(case)
    if limit is not None:
        kept, seen = [], Counter()
        for case in cases:
            if seen[case["kind"]] < limit:
                seen[case["kind"]] += 1
                kept.append(case)
        cases = kept
    return cases


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
         "-c", "commit.gpgsign=false", *args],
        cwd=cwd, capture_output=True, text=True, check=True, timeout=120,
    ).stdout  # fmt: skip


SRC_FIRST = (
    "# bench/arbitration_real.py: the project's src/ first on sys.path, as an editable\n"
    "# install would put it (not PYTHONPATH: referee itself imports click, rich, attrs...)\n"
    "import os as _os, sys as _sys  # noqa: E401\n"
    "_sys.path.insert(0, _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), 'src'))\n"
)


def src_first(work: Path) -> None:
    """A src/ layout's package importable by the tests referee runs: a root conftest.py
    (its own lines after any ``from __future__`` import of one already there)."""
    if not (work / "src").is_dir():
        return
    conftest = work / "conftest.py"
    lines = (
        conftest.read_text(encoding="utf-8").splitlines(keepends=True) if conftest.exists() else []
    )
    at = max(
        (i + 1 for i, line in enumerate(lines) if line.startswith("from __future__")), default=0
    )
    conftest.write_text("".join(lines[:at]) + SRC_FIRST + "".join(lines[at:]), encoding="utf-8")


def referee_env(cache: Path, own_environment: bool = False) -> dict[str, str]:
    """referee's own environment: no PYTHONPATH into the case (a click case's old click
    would be the click referee's command line imports). In this venv (no
    ``own_environment``), no plugin autoload either (as its sandbox and the miner run
    pytest: this venv's pytest-asyncio warns at start-up); in the project's own
    environment, its plugins load, as they do for its developers."""
    drop = {"PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "VIRTUAL_ENV"}
    env = {k: v for k, v in os.environ.items() if k not in drop | {"CONDA_PREFIX"}}
    env.update(REFEREE_CACHE_DIR=str(cache), NO_COLOR="1", PYTHONDONTWRITEBYTECODE="1")
    if not own_environment:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def case_python(case: dict[str, Any], venvs: Path | None) -> Path | None:
    """The project's own interpreter for ``case``: ``VENVS/<repo>/.venv/bin/python`` (a
    checkout of the project with its test dependencies installed), or None."""
    if venvs is None:
        return None
    python = venvs / case["repo"] / ".venv" / "bin" / "python"
    return python if python.is_file() else None


def prepare(
    case: dict[str, Any], work: Path, time_budget: float, python: Path | None = None
) -> None:
    shutil.copytree(Path(case["dir"]) / "tree", work, symlinks=True)
    src_first(work)
    setting = f"python = {json.dumps(str(python))}\n" if python is not None else ""
    (work / "referee.toml").write_text(
        f"{setting}[arbitration]\ntime-budget = {time_budget}\n", encoding="utf-8"
    )
    _git(work, "init", "-q")
    _git(work, "add", "-A", "-f")
    _git(work, "commit", "-q", "--no-verify", "-m", f"case {case['id']}")


def changed_files(work: Path) -> list[str]:
    out = _git(work, "status", "--porcelain", "--untracked-files=all")
    return sorted(line[3:].strip().strip('"') for line in out.splitlines() if line.strip())


def arbitrate_case(case: dict[str, Any], scratch: Path, args: argparse.Namespace) -> dict[str, Any]:
    from arbitration import run_group

    work = scratch / case["id"]
    result: dict[str, Any] = {
        "id": case["id"], "repo": case["repo"], "kind": case["kind"], "node": case["node"],
        "commit": case["commit"],
    }  # fmt: skip
    python = case_python(case, args.venvs)
    result["environment"] = "project" if python is not None else "referee"
    try:
        prepare(case, work, args.time_budget, python)
    except (OSError, subprocess.SubprocessError) as exc:
        return {
            **result,
            **classify(case["kind"], None, [], None, f"prepare: {exc}"),
            "seconds": 0.0,
        }
    command = [args.referee, "arbitrate", case["node"], "--format", "json", "--apply", "--no-queue"]
    if args.model:
        command += ["--model", args.model]
    env = referee_env(args.cache, own_environment=python is not None)
    started = time.perf_counter()
    rc, stdout, stderr = run_group(command, work, env, args.timeout)
    seconds = round(time.perf_counter() - started, 1)
    verdict: dict[str, Any] | None = None
    error = ""
    try:
        verdict = json.loads(stdout)
    except ValueError:
        error = (stderr.strip().splitlines() or ["no output"])[-1] if rc is not None else stderr
    changed = changed_files(work)
    passes = None
    if verdict and verdict.get("verdict") in ("SOURCE_WRONG", "TEST_WRONG") and changed:
        after = run_pytest(str(python or args.python), work, [case["node"]], args.pytest_timeout)
        passes = case["node"] in after.passed and not after.failed
    scored = classify(case["kind"], verdict, changed, passes, error)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return {**result, **scored, "rc": rc, "seconds": seconds}


def referee_commit() -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return "?"
    return head + ("-dirty" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--corpus", type=Path, required=True, help="a mine_arbitration.py --out DIR"
    )
    default_referee = ROOT / ".venv" / "bin" / "referee"
    parser.add_argument(
        "--referee",
        default=str(default_referee)
        if default_referee.exists()
        else shutil.which("referee") or "referee",
        help="the referee executable (default: this repository's .venv)",
    )
    parser.add_argument(
        "--model", default=None, help="model id or GGUF path (default: the config's)"
    )
    parser.add_argument("--time-budget", type=float, default=120, help="arbitration time-budget, s")
    parser.add_argument(
        "--timeout", type=float, default=None, help="hard limit per case (budget + 180 s)"
    )
    parser.add_argument("--pytest-timeout", type=float, default=60)
    parser.add_argument("--jobs", type=int, default=1, help="arbitrations at once")
    parser.add_argument(
        "--only", action="append", default=[], choices=sorted(EXPECTED), help="kind"
    )
    parser.add_argument("--limit", type=int, default=None, help="cases of each kind")
    parser.add_argument(
        "--case", action="append", default=[], help="only this case id (repeatable)"
    )
    parser.add_argument(
        "--json", type=Path, default=RESULTS, help=f"results (default {RESULTS.relative_to(ROOT)})"
    )
    parser.add_argument(
        "--cache", type=Path, default=None, help="oracle cache (default: a fresh one)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the cases the --json file already has (a stopped run, or new cases mined "
        "since) and arbitrate only the others",
    )
    parser.add_argument("--table-from", type=Path, default=None, help="print a saved run's tables")
    default_python = ROOT / ".venv" / "bin" / "python"
    parser.add_argument(
        "--python", default=str(default_python) if default_python.exists() else sys.executable
    )
    parser.add_argument(
        "--venvs",
        type=Path,
        default=None,
        help="a directory of the projects' checkouts, each with its .venv (its test "
        "dependencies installed): a case of project P runs with VENVS/P/.venv/bin/python as "
        "the project's interpreter, its pytest plugins loading (default: this venv, plugins "
        "off)",
    )
    args = parser.parse_args(argv)
    if args.table_from:
        data = json.loads(args.table_from.read_text(encoding="utf-8"))
        print_tables(data)
        print(render(data))
        return 0
    args.timeout = args.timeout or args.time_budget + 180
    cases = load_cases(args.corpus, args.only, args.limit)
    if args.case:
        cases = [c for c in cases if c["id"] in set(args.case)]
    if not cases:
        parser.error(f"no case in {args.corpus}")
    print(f"{len(cases)} cases: {dict(Counter(c['kind'] for c in cases))}", file=sys.stderr)
    results: list[dict[str, Any] | None] = [None] * len(cases)
    if args.resume and args.json.exists():
        before = {r["id"]: r for r in json.loads(args.json.read_text(encoding="utf-8"))["cases"]}
        results = [before.get(c["id"]) for c in cases]
        print(f"{sum(r is not None for r in results)} cases kept from {args.json}", file=sys.stderr)
    todo = [i for i, r in enumerate(results) if r is None]
    lock = threading.Lock()
    started = time.time()
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "referee_commit": referee_commit(),
        "referee_sources": source_fingerprint(),  # what the venv's referee imports
        "model": args.model or "(config default)",
        "time_budget_s": args.time_budget,
        "jobs": args.jobs,
        "corpus": str(args.corpus),
        "venvs": str(args.venvs) if args.venvs else None,
        "cpu_count": os.cpu_count(),
    }

    def save(final: bool) -> dict[str, Any]:
        done = [r for r in results if r is not None]
        data = {**meta, "complete": final, "wall_s": round(time.time() - started),
                "totals": totals(done), "cases": done}  # fmt: skip
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        return data

    with tempfile.TemporaryDirectory(prefix="referee-arb-real-") as scratch:
        args.cache = args.cache or Path(scratch) / "cache"

        def one(index: int) -> None:
            case = cases[index]
            result = arbitrate_case(case, Path(scratch), args)
            with lock:
                results[index] = result
                save(False)  # after every case: a stopped run still has its table
            said = result["reason"] or result["error"]
            line = (
                f"{case['kind']:<10} {case['id']:<40} {result['verdict'] or 'error':<12} "
                f"{result['outcome']:<11} {result['seconds']:6.1f} s  {said}"
            )
            print(line[:220], file=sys.stderr)

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(one, todo))
    data = save(True)
    print_tables(data)
    print("\n" + render(data))  # the same, as Markdown for docs/benchmarks.md
    _results.record(
        "arbitration-real",
        {
            **{k: v for k, v in data.items() if k not in ("cases", "date", "referee_commit")},
            "cases_file": str(args.json),
        },
        argv,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
