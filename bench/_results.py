"""Where a benchmark's run is kept: appended to ``bench/results/history-AREA.json``.

docs/benchmarks.md shows the latest figures of each area; every run, that one included,
is a JSON list entry here — the date, referee's commit, the command line, the machine (its
CPU, whether it has AMX, its cores: timings compare only on the same kind) and the
script's own figures — so that a table on the page can always be traced to the run that
printed it.
Set ``REFEREE_BENCH_RECORD=0`` to leave the history alone (a trial run, a test).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import _tools

from referee.checks.judge.runtime import this_cpu

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def history_path(area: str) -> Path:
    return RESULTS / f"history-{area}.json"


def _git(*args: str) -> str:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=False, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def referee_commit() -> str | None:
    """The short commit of the checkout the bench runs from, "+" when referee's own
    sources (checks/, server/) differ from it; None outside a git checkout."""
    commit = _git("rev-parse", "--short", "HEAD")
    if not commit:
        return None
    return commit + ("+" if _git("status", "--porcelain", "--", "checks", "server") else "")


def command_line(argv: list[str] | None = None) -> str:
    """How the run was started: the script's path from the repository root, then its
    arguments as given (``argv`` when main() was called with a list, else sys.argv)."""
    script = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if script is not None and script.is_relative_to(ROOT):
        script_name = script.relative_to(ROOT).as_posix()
    else:
        script_name = sys.argv[0] if sys.argv else "?"
    args = sys.argv[1:] if argv is None else argv
    return shlex.join(["python", script_name, *map(_outside_as_placeholder, args)])


def _outside_as_placeholder(arg: str) -> str:
    """``PATH`` for an argument that climbs out of the checkout (``../data/x``): where it
    leads is this machine's layout, and a clone has nothing beside it (.ci/run refuses
    files that name such paths)."""
    parts = Path(arg).parts
    if ".." in parts and not (Path.cwd() / arg).resolve().is_relative_to(ROOT):
        return "PATH"
    return arg


def machine() -> dict[str, Any]:
    """What ran the bench: the CPU's model name, whether it has AMX (its matrix units speed
    up the model several times), the cores this process may use. Timings are comparable
    only between runs on the same kind of machine, and the machines here differ."""
    cpu = this_cpu()  # as the judge reads it to choose its runtime mode
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 0
    return {"cpu": cpu.model, "amx": bool(cpu.amx), "cores": cores}


def describe_machine(info: dict[str, Any] | None = None) -> str:
    """``machine()`` in words: "AMD EPYC, 2 cores" or "Intel Xeon …, AMX, 2 cores"."""
    info = info or machine()
    return f"{info['cpu']}{', AMX' if info['amx'] else ''}, {info['cores']} cores"


def record(
    area: str, figures: dict[str, Any], argv: list[str] | None = None, note: str = ""
) -> Path | None:
    """Append one run of ``area`` to its history file; returns the file, or None when
    ``REFEREE_BENCH_RECORD=0``. ``figures`` is whatever the script measured, as JSON."""
    if os.environ.get("REFEREE_BENCH_RECORD", "1") == "0":
        return None
    entry: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "commit": referee_commit(),
        "command": command_line(argv),
        "sources": _tools.source_fingerprint(),
        "machine": machine(),
        "figures": figures,
    }
    if note:
        entry["note"] = note
    path = history_path(area)
    runs = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
    runs.append(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(runs, indent=1, ensure_ascii=False, default=str) + "\n", "utf-8")
    os.replace(tmp, path)
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    print(f"run recorded in {shown}", file=sys.stderr)
    return path
