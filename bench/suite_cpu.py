#!/usr/bin/env python3
"""Where referee's own test suite spends its CPU: each test's wall time and CPU time (its
own and its finished subprocesses'), by file, by xdist worker, and for the real model's
tests, which run one after another on one worker.

The suite is CPU-bound on a 2-core machine (issue 41's CI target is 15 minutes), so only
less CPU shortens it: this says where it goes. Usage (from the repository root)::

    python bench/suite_cpu.py                      # the whole suite, as the README runs it
    python bench/suite_cpu.py -- tests/test_sandbox.py -n 0
    python bench/suite_cpu.py --from DIR           # the tables of a kept run again

CPU time is read with getrusage around each test (tests/conftest.py, when
``REFEREE_TESTS_CPU_OUT`` is set): a process the test does not wait for, or one that
outlives it, is not counted there; the run's total (every process pytest reaped, the
controller's included) is measured around the whole run.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _results  # bench/_results.py: each run is appended to its area's history

ROOT = Path(__file__).resolve().parent.parent
OUT_ENV = "REFEREE_TESTS_CPU_OUT"  # read by tests/conftest.py


def load_rows(directory: Path) -> dict[str, list[dict[str, Any]]]:
    """Each process's rows, by its name (``gw0``, ``main``…), from a run's directory."""
    rows = {}
    for path in sorted(directory.glob("rows.*.json")):
        rows[path.name.removeprefix("rows.").removesuffix(".json")] = json.loads(
            path.read_text(encoding="utf-8")
        )
    return rows


def summarize(rows: dict[str, list[dict[str, Any]]], top: int = 15) -> dict[str, Any]:
    """The figures of a run: totals, each worker's, the model's tests', the costliest files."""

    def cpu(row: dict[str, Any]) -> float:
        return row["own_s"] + row["children_s"]

    everything = [row for worker in rows.values() for row in worker]
    files: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for row in everything:
        entry = files[row["test"].split("::")[0]]
        entry[0] += cpu(row)
        entry[1] += row["wall_s"]
        entry[2] += 1

    def totals(group: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "tests": len(group),
            "wall_s": round(sum(r["wall_s"] for r in group), 1),
            "cpu_s": round(sum(map(cpu, group)), 1),
        }

    return {
        "tests": len(everything),
        "cpu_s": round(sum(map(cpu, everything)), 1),
        "workers": {name: totals(worker) for name, worker in rows.items()},
        "model_tests": totals([row for row in everything if row.get("model")]),
        "files": [
            {"file": name, "cpu_s": round(c, 1), "wall_s": round(w, 1), "tests": n}
            for name, (c, w, n) in sorted(files.items(), key=lambda kv: -kv[1][0])[:top]
        ],
    }


def report(figures: dict[str, Any], run: dict[str, Any] | None = None) -> str:
    lines = []
    if run is not None:
        lines.append(
            f"`pytest {' '.join(run['pytest_args'])}`: exit status {run['status']}, "
            f"{run['wall_s']:.0f} s wall, {run['cpu_s']:.0f} CPU-s in all "
            f"({run['cpu_s'] / max(run['wall_s'], 1e-9):.2f} cores busy on average); "
            f"{_results.describe_machine()}"
        )
        lines.append("")
    lines.append(
        f"{figures['tests']} tests, {figures['cpu_s']:.0f} CPU-s inside them; the real "
        f"model's {figures['model_tests']['tests']}: {figures['model_tests']['cpu_s']:.0f} "
        f"CPU-s, {figures['model_tests']['wall_s']:.0f} s one after another"
    )
    lines += ["", "| process | tests | wall s | CPU s |", "|---|---|---|---|"]
    for name, worker in figures["workers"].items():
        lines.append(
            f"| {name} | {worker['tests']} | {worker['wall_s']:.1f} | {worker['cpu_s']:.1f} |"
        )
    lines += ["", "| file | tests | CPU s | share | wall s |", "|---|---|---|---|---|"]
    total = figures["cpu_s"] or 1.0
    for entry in figures["files"]:
        lines.append(
            f"| {entry['file']} | {entry['tests']} | {entry['cpu_s']:.1f} | "
            f"{100 * entry['cpu_s'] / total:.0f} % | {entry['wall_s']:.1f} |"
        )
    return "\n".join(lines)


def run_suite(pytest_args: list[str], directory: Path) -> dict[str, Any]:
    """Run pytest from the repository root with the per-test recording on; the run's
    status, wall time and the CPU time of every process it reaped."""
    # the suite needs its plugins (xdist, pytest-asyncio, pytest-lsp) whatever the caller's
    # environment says (the suite itself switches their autoload off for its subprocesses)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    env[OUT_ENV] = str(directory / "rows")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    status = subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, env=env
    ).returncode
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "pytest_args": pytest_args,
        "status": status,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    ours, pytest_args = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Arguments after -- go to pytest (default: none, the whole suite).",
    )
    parser.add_argument(
        "--out", type=Path, help="keep each process's rows here (default: a temporary directory)"
    )
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="print the tables of the rows kept in this directory; run nothing",
    )
    parser.add_argument("--top", type=int, default=15, help="files shown (default 15)")
    args = parser.parse_args(ours)
    if args.source is not None:
        rows = load_rows(args.source)
        if not rows:
            parser.error(f"{args.source} holds no rows.*.json of a run")
        print(report(summarize(rows, args.top)))
        return 0
    with tempfile.TemporaryDirectory(prefix="referee-suite-cpu-") as scratch:
        directory = args.out or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        run = run_suite(pytest_args, directory)
        rows = load_rows(directory)
        if not rows:
            print(f"no test recorded its CPU (pytest exit status {run['status']})", file=sys.stderr)
            return 1
        figures = summarize(rows, args.top)
    print(report(figures, run))
    _results.record("suite-cpu", {**run, **figures}, argv)
    return 0 if run["status"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
