#!/usr/bin/env python3
"""The anti-gaming guard over real, reviewed history: how often `referee guard` fails a
commit that touches a test, and whether it reports the relaxations a project really made.

Not a test: a script whose tables go into docs/benchmarks.md ("The guard on real history").

    python bench/guard_history.py /tmp/hist/click /tmp/hist/flask ...
    python bench/guard_history.py --commits 150 --jobs 2 --out runs.jsonl PATH...
    python bench/guard_history.py --strict PATH...            # agent mode
    python bench/guard_history.py --relaxations bench/data/guard_relaxations.json PATH...
    python bench/guard_history.py --candidates PATH...        # list possible relaxations

Each PATH is a git repository with history (a clone of a public project: the search
tool's ``fetch`` gives a bare mirror; clone it anywhere outside referee's repository).
Its last ``--commits`` non-merge commits that change a test file are checked as a pull
request would be: in a scratch clone (``git clone --shared``; PATH itself is never
touched) the commit C is checked out, the tree cleaned, and
``python -m referee guard --base C^ --format json`` run there. Per project the script
prints: commits, failed (exit 1), warned (exit 0 with a warning), errors (exit 2, the
guard could not run), findings by code and severity, and the median / p90 wall time of
a guard process (interpreter start-up included).

A test file here is what a reviewer would call one, whatever the project's pytest
settings: a ``.py`` file named ``test_*.py`` / ``*_test.py`` / ``conftest.py``, or under a
``test``, ``tests`` or ``testing`` directory.

``--relaxations FILE`` reads a JSON list of ``{"repo": NAME, "commit": SHA, "what": TEXT}``
(commits found in these histories whose change really relaxes a test: a new skip,
xfail, a widened condition, a deselected test) and prints, for each, whether the guard
reported it (a warning or an error on that commit). Exit status 0 unless a guard run
failed to start.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import _results  # bench/_results.py: each run is appended to its area's history

_TEST_DIRS = frozenset({"test", "tests", "testing"})
# Words a commit message uses when it announces that a test is relaxed.
_RELAXING = re.compile(
    r"\b(skip\w*|xfail\w*|flaky|relax\w*|disabl\w*|ignor\w*|deselect\w*|"
    r"importorskip|known.fail\w*|expected.fail\w*)\b",
    re.IGNORECASE,
)


def is_test_path(path: str) -> bool:
    pure = PurePosixPath(path)
    if pure.suffix != ".py":
        return False
    name = pure.name
    if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return True
    return any(part in _TEST_DIRS for part in pure.parts[:-1])


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        errors="surrogateescape",
    ).stdout


def test_commits(repo: Path, count: int) -> list[tuple[str, str]]:
    """(sha, subject) of the last ``count`` non-merge commits (from HEAD) that change a
    test file and have a parent."""
    out = _git(repo, "log", "--no-merges", "--format=%x00%H %P%x01%s", "--name-only", "-n", "20000")
    found: list[tuple[str, str]] = []
    for record in out.split("\0")[1:]:
        head, _, files = record.partition("\n")
        ids, _, subject = head.partition("\x01")
        sha, *parents = ids.split()
        if not parents:
            continue
        if any(is_test_path(f) for f in files.splitlines() if f):
            found.append((sha, subject))
            if len(found) == count:
                break
    return found


@dataclass
class Run:
    repo: str
    commit: str
    subject: str
    rc: int
    seconds: float
    findings: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""

    @property
    def severities(self) -> set[str]:
        return {f["severity"] for f in self.findings}

    @property
    def warned(self) -> bool:
        return self.rc == 0 and "warning" in self.severities

    @property
    def reported(self) -> bool:
        return bool(self.severities & {"warning", "error"})


def _guard(
    clone: Path, repo_name: str, sha: str, subject: str, python: str, extra: list[str]
) -> Run:
    _git(clone, "checkout", "-q", "-f", sha)
    _git(clone, "clean", "-fdxq")
    # PYTHONSAFEPATH: `python -m` would put the checkout first on sys.path, and a project
    # that is itself a dependency of referee (pydantic, click, rich) would shadow it.
    env = dict(os.environ, NO_COLOR="1", COLUMNS="200", PYTHONSAFEPATH="1")
    env.pop("FORCE_COLOR", None)
    started = time.perf_counter()
    proc = subprocess.run(
        [python, "-m", "referee", "guard", "--base", f"{sha}^", "--format", "json", *extra],
        cwd=clone,
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )
    seconds = time.perf_counter() - started
    findings: list[dict[str, Any]] = []
    rc = proc.returncode
    try:
        findings = json.loads(proc.stdout).get("findings", [])
    except json.JSONDecodeError:
        if rc in (0, 1):
            rc = 3  # no report at all: the guard crashed (Python exits 1 on a traceback)
    return Run(repo_name, sha, subject, rc, seconds, findings, proc.stderr[-2000:])


def run_repo(
    repo: Path, count: int, python: str, extra: list[str], jobs: int, scratch: Path
) -> list[Run]:
    commits = test_commits(repo, count)
    name = repo.resolve().name
    clones = []
    for index in range(max(1, jobs)):
        clone = scratch / f"{name}-{index}"
        if not clone.exists():
            _git(
                scratch, "clone", "-q", "--shared", "--no-checkout", str(repo.resolve()), str(clone)
            )
        clones.append(clone)
    chunks = [commits[i :: len(clones)] for i in range(len(clones))]

    def work(index: int) -> list[Run]:
        return [
            _guard(clones[index], name, sha, subject, python, extra)
            for sha, subject in chunks[index]
        ]

    with ThreadPoolExecutor(max_workers=len(clones)) as pool:
        runs = [r for part in pool.map(work, range(len(clones))) for r in part]
    order = {sha: i for i, (sha, _) in enumerate(commits)}
    return sorted(runs, key=lambda r: order[r.commit])


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(runs: list[Run]) -> dict[str, Any]:
    codes: Counter[str] = Counter()
    for run in runs:
        for f in run.findings:
            codes[f"{f['code']} {f['severity']}"] += 1
    times = [r.seconds for r in runs]
    return {
        "commits": len(runs),
        "failed": sum(r.rc == 1 for r in runs),
        "warned": sum(r.warned for r in runs),
        "errors": sum(r.rc not in (0, 1) for r in runs),  # exit 2, or no report
        "codes": codes,
        "median": statistics.median(times) if times else 0.0,
        "p90": _percentile(times, 0.9),
    }


def _codes_text(codes: Counter[str]) -> str:
    by_code: dict[str, Counter[str]] = {}
    for key, n in codes.items():
        code, severity = key.split(" ")
        by_code.setdefault(code, Counter())[severity] += n
    parts = []
    for code, counts in sorted(by_code.items(), key=lambda kv: -sum(kv[1].values())):
        detail = "/".join(f"{n}{s[0].upper()}" for s, n in sorted(counts.items()))
        parts.append(f"{code} {detail}")
    return ", ".join(parts) or "-"


def print_table(per_repo: dict[str, list[Run]]) -> None:
    print(
        "| project (HEAD) | commits | failed (exit 1) | warned | exit 2 | findings by code "
        "(E error, W warning, I info) | median s | p90 s |"
    )
    print("|---|---:|---:|---:|---:|---|---:|---:|")
    total: list[Run] = []
    for name, runs in per_repo.items():
        total.extend(runs)
        s = summary(runs)
        share = 100 * s["failed"] / max(1, s["commits"])
        print(
            f"| {name} | {s['commits']} | {s['failed']} ({share:.1f} %) "
            f"| {s['warned']} | {s['errors']} | {_codes_text(s['codes'])} | {s['median']:.2f} "
            f"| {s['p90']:.2f} |"
        )
    s = summary(total)
    share = 100 * s["failed"] / max(1, s["commits"])
    print(
        f"| **all** | **{s['commits']}** | **{s['failed']} ({share:.1f} %)** "
        f"| **{s['warned']}** | **{s['errors']}** | {_codes_text(s['codes'])} | {s['median']:.2f} "
        f"| {s['p90']:.2f} |"
    )


def print_relaxations(path: Path, per_repo: dict[str, list[Run]]) -> tuple[int, int]:
    """Prints the relaxations' table; returns (reported, found)."""
    wanted = json.loads(path.read_text(encoding="utf-8"))
    by_commit = {(r.repo, r.commit[:10]): r for runs in per_repo.values() for r in runs}
    found = reported = 0
    print()
    print("| project | commit | the relaxation | guard |")
    print("|---|---|---|---|")
    for item in wanted:
        run = by_commit.get((item["repo"], item["commit"][:10]))
        if run is None:
            continue  # not in the commits measured this time
        found += 1
        codes = sorted(
            {
                f"{f['code']} {f['severity']}"
                for f in run.findings
                if f["severity"] in ("warning", "error")
            }
        )
        reported += run.reported
        print(
            f"| {item['repo']} | {item['commit'][:10]} | {item['what']} | "
            f"{'reported: ' + ', '.join(codes) if run.reported else '**missed**'} |"
        )
    if found:
        print(f"\nRelaxation commits reported: {reported}/{found} = {100 * reported / found:.1f} %")
    return reported, found


def print_candidates(per_repo: dict[str, list[Run]], scratch: Path) -> None:
    """Commits whose message announces a relaxation, or whose diff adds a skip or
    xfail marker: what to read by hand to build the --relaxations list."""
    marker = re.compile(
        r"^\+.*(pytest\.(mark\.)?(skip|skipif|xfail)\b|importorskip|skipIf|skipUnless|"
        r"unittest\.skip|expectedFailure|pytest\.skip\(|pytest\.xfail\()"
    )
    print()
    for name, runs in per_repo.items():
        clone = scratch / f"{name}-0"
        for run in runs:
            diff = _git(
                clone,
                "show",
                "--format=",
                "--unified=0",
                run.commit,
                "--",
                "*.py",
                "*.ini",
                "*.cfg",
                "*.toml",
            )
            added = [ln for ln in diff.splitlines() if marker.search(ln)]
            if _RELAXING.search(run.subject) or added:
                codes = sorted({f"{f['code']}{f['severity'][0].upper()}" for f in run.findings})
                print(
                    f"{name} {run.commit[:10]} rc={run.rc} {','.join(codes) or '-'} :: "
                    f"{run.subject[:90]}"
                )
                for ln in added[:4]:
                    print(f"      {ln[:150]}")


def history_figures(per_repo: dict[str, list[Run]], strict: bool, seconds: float) -> dict[str, Any]:
    """The table's figures, for bench/results/history-guard-history.json."""

    def row(runs: list[Run]) -> dict[str, Any]:
        s = summary(runs)
        return {
            "commits": s["commits"],
            "failed": s["failed"],
            "warned": s["warned"],
            "exit_2": s["errors"],
            "findings": _codes_text(s["codes"]),
            "median_s": round(s["median"], 2),
            "p90_s": round(s["p90"], 2),
        }

    every = [run for runs in per_repo.values() for run in runs]
    return {
        "mode": "agent (--strict)" if strict else "default",
        "wall_s": round(seconds),
        "projects": {name: row(runs) for name, runs in per_repo.items()},
        "all": row(every),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path, help="git repositories with history")
    parser.add_argument("--commits", type=int, default=150, help="per project (default 150)")
    parser.add_argument("--jobs", type=int, default=1, help="guard processes at a time")
    parser.add_argument("--python", default=sys.executable, help="interpreter with referee")
    parser.add_argument("--strict", action="store_true", help="run the guard in agent mode")
    parser.add_argument("--out", type=Path, help="write every run as JSON lines here")
    parser.add_argument("--relaxations", type=Path, help="JSON list of relaxation commits")
    parser.add_argument(
        "--candidates",
        action="store_true",
        help="list commits that may relax a test, to read by hand",
    )
    parser.add_argument("--keep", type=Path, help="scratch directory to keep (default: temp)")
    args = parser.parse_args(argv)
    extra = ["--strict"] if args.strict else []
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="guard-history-"))
    scratch.mkdir(parents=True, exist_ok=True)
    per_repo: dict[str, list[Run]] = {}
    started = time.perf_counter()
    try:
        for path in args.paths:
            head = _git(path, "rev-parse", "--short=9", "HEAD").strip()
            runs = run_repo(path, args.commits, args.python, extra, args.jobs, scratch)
            per_repo[f"{path.resolve().name} {head}"] = runs
            for run in runs:
                run.repo = path.resolve().name
            if args.out:
                with args.out.open("a", encoding="utf-8") as out:
                    for run in runs:
                        out.write(json.dumps(run.__dict__) + "\n")
            s = summary(runs)
            print(
                f"{path.resolve().name}: {s['commits']} commits, {s['failed']} failed, "
                f"{s['warned']} warned, {s['errors']} exit 2",
                file=sys.stderr,
                flush=True,
            )
        print(
            f"guard {'--strict ' if args.strict else ''}over real history, "
            f"{time.perf_counter() - started:.0f} s in all\n"
        )
        print_table(per_repo)
        for runs in per_repo.values():
            for run in runs:
                if run.rc not in (0, 1):
                    print(
                        f"exit {run.rc}: {run.repo} {run.commit[:10]}: {run.stderr.strip()[-300:]}"
                    )
        figures = history_figures(per_repo, args.strict, time.perf_counter() - started)
        if args.relaxations:
            reported, found = print_relaxations(
                args.relaxations, {k.split(" ")[0]: v for k, v in per_repo.items()}
            )
            figures["relaxations_reported"] = f"{reported}/{found}"
        if not args.candidates:
            _results.record("guard-history", figures, argv)
        if args.candidates:
            print_candidates({k.split(" ")[0]: v for k, v in per_repo.items()}, scratch)
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
