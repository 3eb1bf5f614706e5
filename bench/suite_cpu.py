#!/usr/bin/env python3
"""Where referee's own test suite spends its CPU: each test's wall time and CPU time (its
own and its finished subprocesses'), by file, by xdist worker, and for the real model's
tests, which run one after another on one worker.

The suite is CPU-bound on a 2-core machine (issue 41's CI target is 15 minutes), so only
less CPU shortens it: this says where it goes. Usage (from the repository root)::

    python bench/suite_cpu.py                      # the whole suite, as the README runs it
    python bench/suite_cpu.py -- tests/test_sandbox.py -n 0
    python bench/suite_cpu.py --from DIR           # the tables of a kept run again
    python bench/suite_cpu.py --accounting         # and by kind of process (root, `acct`)

CPU time is read with getrusage around each test (tests/conftest.py, when
``REFEREE_TESTS_CPU_OUT`` is set): a process the test does not wait for, or one that
outlives it, is not counted there; the run's total (every process pytest reaped, the
controller's included) is measured around the whole run.

``--accounting`` also switches Linux process accounting on for the run (``accton``, as
root; Debian's ``acct`` package) and sorts every process that ended meanwhile into kinds
by its command name and CPU time: the suite's own processes (the controller and its xdist
workers), the ones referee names (``referee`` commands, ``referee-model``,
``referee-sandbox``, the servers), the unnamed interpreters (the pytest runs referee
starts in a test's project, a test's own helpers) and the rest. Accounting is
machine-wide: run nothing else meanwhile.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shutil
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


# Process kinds, by command name (the interpreter's file name, as the kernel keeps it)
# and CPU time: heuristic bounds, read off a whole run (docs/benchmarks.md).
LONG_S = 5.0  # a venv process this busy is the model's, or a suite's own
COMMAND_S = 0.2  # a `referee` command or a project's pytest run costs more than this
SANDBOXED_RUN_S = 0.1  # a sandboxed pytest run costs more; a sandboxed program less


def read_accounting(text: str) -> tuple[list[dict[str, Any]], int]:
    """``dump-acct``'s lines as records (command, CPU and elapsed in ticks, pid, ppid),
    and how many lines were not records."""
    records, bad = [], 0
    for line in text.splitlines():
        fields = [f.strip() for f in line.split("|")]
        try:
            records.append(
                {
                    "command": fields[0],
                    "cpu": float(fields[2]) + float(fields[3]),
                    "elapsed": float(fields[4]),
                    "pid": int(fields[9]),
                    "ppid": int(fields[10]),
                }
            )
        except (IndexError, ValueError):
            bad += 1
    return records, bad


# The names referee gives its own processes (checks/process.py's name_process).
NAMED = {
    "referee": "referee commands (`referee`)",
    "referee-model": "the model's processes (`referee-model`)",
    "referee-lsp": "referee's servers (`referee-lsp`, `-mcp`, `-hookd`)",
    "referee-mcp": "referee's servers (`referee-lsp`, `-mcp`, `-hookd`)",
    "referee-hookd": "referee's servers (`referee-lsp`, `-mcp`, `-hookd`)",
}


def _kind(name: str, cpu: float, venv_name: str, base_name: str) -> str:
    """A process's kind by its command name, and by its CPU time where the name alone does
    not tell (an unnamed interpreter: a run before referee named its processes, the pytest
    runs referee starts in a test's project, a test's own helpers)."""
    if name in NAMED:
        return NAMED[name]
    if name == "referee-sandbox":
        if cpu >= SANDBOXED_RUN_S:
            return (
                f"sandboxed runs of {SANDBOXED_RUN_S:g} CPU-s and more (pytest: patches, mutants)"
            )
        return f"sandboxed runs under {SANDBOXED_RUN_S:g} CPU-s (oracles, references, inputs)"
    if name == venv_name and cpu >= LONG_S:
        return f"unnamed venv Python, >= {LONG_S:g} CPU-s each (a model process, before names)"
    if name == venv_name and cpu >= COMMAND_S:
        return (
            f"unnamed venv Python, {COMMAND_S:g}-{LONG_S:g} CPU-s each "
            "(project pytest runs; referee commands, before names)"
        )
    if name == venv_name:
        return f"unnamed venv Python, < {COMMAND_S:g} CPU-s each"
    if name == base_name and cpu >= SANDBOXED_RUN_S:
        return f"unnamed base interpreter, >= {SANDBOXED_RUN_S:g} CPU-s each"
    if name == base_name:
        return f"unnamed base interpreter, < {SANDBOXED_RUN_S:g} CPU-s each"
    return "everything else (git, bubblewrap, editors, shells)"


def process_kinds(
    records: list[dict[str, Any]],
    controller: int,
    wall_s: float,
    venv_name: str,
    base_name: str,
) -> dict[str, Any]:
    """CPU seconds and process counts by kind (:func:`_kind`). Ticks are converted with
    the controller's own record (its elapsed ticks over the run's wall time: 100 a second
    on Linux's version-3 records, 50 on some others)."""
    own = [r for r in records if r["pid"] == controller]
    ticks = 100.0
    if own and wall_s > 0:
        measured = own[-1]["elapsed"] / wall_s
        ticks = min((50.0, 64.0, 100.0, 1000.0), key=lambda t: abs(t - measured))
    suite = {controller} | {
        r["pid"]
        for r in records
        if r["ppid"] == controller and r["elapsed"] >= 0.5 * wall_s * ticks
    }
    kinds: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0])
    for record in records:
        cpu = record["cpu"] / ticks
        kind = (
            "the suite's own processes (controller, xdist workers)"
            if record["pid"] in suite
            else _kind(record["command"], cpu, venv_name, base_name)
        )
        kinds[kind][0] += cpu
        kinds[kind][1] += 1
    return {
        "ticks_per_s": ticks,
        "processes": len(records),
        "cpu_s": round(sum(c for c, _ in kinds.values()), 1),
        "kinds": [
            {"kind": kind, "processes": n, "cpu_s": round(c, 1)}
            for kind, (c, n) in sorted(kinds.items(), key=lambda kv: -kv[1][0])
        ],
    }


def report_kinds(kinds: dict[str, Any]) -> str:
    total = kinds["cpu_s"] or 1.0
    lines = [
        f"By kind of process (process accounting): {kinds['processes']} processes, "
        f"{kinds['cpu_s']:.0f} CPU-s",
        "",
        "| processes | how many | CPU s | share |",
        "|---|---:|---:|---:|",
    ]
    for entry in kinds["kinds"]:
        lines.append(
            f"| {entry['kind']} | {entry['processes']} | {entry['cpu_s']:.1f} | "
            f"{100 * entry['cpu_s'] / total:.0f} % |"
        )
    return "\n".join(lines)


def accounting_problem() -> str | None:
    """Why ``--accounting`` cannot run here, or None."""
    if not sys.platform.startswith("linux"):
        return "process accounting is Linux's"
    if os.geteuid() != 0:
        return "process accounting needs root (accton)"
    missing = [tool for tool in ("accton", "dump-acct") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not found: install Debian's `acct` package"
    return None


def interpreter_names() -> tuple[str, str]:
    """The command names the kernel records for the venv's interpreter and the base one
    (15 characters at most)."""
    venv = Path(sys.executable).name[:15]
    base = Path(os.path.realpath(getattr(sys, "_base_executable", sys.executable))).name[:15]
    return venv, base


def run_suite(pytest_args: list[str], directory: Path, accounting: bool = False) -> dict[str, Any]:
    """Run pytest from the repository root with the per-test recording on; the run's
    status, wall time and the CPU time of every process it reaped (with ``accounting``,
    every process that ended meanwhile is in ``DIRECTORY/pacct``)."""
    # the suite needs its plugins (xdist, pytest-asyncio, pytest-lsp) whatever the caller's
    # environment says (the suite itself switches their autoload off for its subprocesses)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    env[OUT_ENV] = str(directory / "rows")
    pacct = directory / "pacct"
    if accounting:
        pacct.touch()
        subprocess.run(["accton", str(pacct)], check=True, capture_output=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, env=env
        )
        status = process.wait()
    finally:
        if accounting:
            subprocess.run(["accton", "off"], check=False, capture_output=True)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    run = {
        "pytest_args": pytest_args,
        "status": status,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
    }
    if accounting:
        run["controller_pid"] = process.pid
        (directory / "run.json").write_text(json.dumps(run), encoding="utf-8")
    return run


def kinds_of(directory: Path, run: dict[str, Any]) -> dict[str, Any] | None:
    """The process kinds of a run kept in ``directory`` (None without its accounting)."""
    pacct = directory / "pacct"
    if not pacct.is_file() or "controller_pid" not in run:
        return None
    text = subprocess.run(
        ["dump-acct", str(pacct)], capture_output=True, text=True, check=True
    ).stdout
    records, _ = read_accounting(text)
    return process_kinds(records, run["controller_pid"], run["wall_s"], *interpreter_names())


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
    parser.add_argument(
        "--accounting",
        action="store_true",
        help="also sort every process of the run by kind, with Linux process accounting "
        "(root; Debian's acct package); machine-wide: run nothing else meanwhile",
    )
    args = parser.parse_args(ours)
    if args.source is not None:
        rows = load_rows(args.source)
        if not rows:
            parser.error(f"{args.source} holds no rows.*.json of a run")
        print(report(summarize(rows, args.top)))
        kept = args.source / "run.json"
        if kept.is_file() and shutil.which("dump-acct") is not None:
            kinds = kinds_of(args.source, json.loads(kept.read_text(encoding="utf-8")))
            if kinds is not None:
                print("\n" + report_kinds(kinds))
        return 0
    if args.accounting and (problem := accounting_problem()) is not None:
        parser.error(f"--accounting: {problem}")
    with tempfile.TemporaryDirectory(prefix="referee-suite-cpu-") as scratch:
        directory = args.out or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        run = run_suite(pytest_args, directory, args.accounting)
        rows = load_rows(directory)
        if not rows:
            print(f"no test recorded its CPU (pytest exit status {run['status']})", file=sys.stderr)
            return 1
        figures = summarize(rows, args.top)
        kinds = kinds_of(directory, run) if args.accounting else None
    print(report(figures, run))
    if kinds is not None:
        print("\n" + report_kinds(kinds))
        figures["processes"] = kinds
    recorded = {k: v for k, v in run.items() if k != "controller_pid"}
    _results.record("suite-cpu", {**recorded, **figures}, argv)
    return 0 if run["status"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
