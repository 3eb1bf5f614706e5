#!/usr/bin/env python3
"""Wall-time benchmark: referee against ruff and flake8 on a large test suite.

Not a test: a script whose table goes into docs/benchmarks.md.

    python bench/check_speed.py                 # CPython's own test suite, 5 repeats
    python bench/check_speed.py --repeat 3 PATH # another corpus, fewer repeats

What it runs (each tool's stdout and stderr go to /dev/null, so terminal printing is not
timed; every command runs in the corpus's parent directory with the corpus's name, DIR,
as its argument, so that referee sees the files as lying under a test directory, as it
does when given the corpus's path):

* referee cold   ``referee check --no-cache --exit-zero DIR``
* referee warm   ``referee check --exit-zero DIR`` with REFEREE_CACHE_DIR in a temporary
                 directory that one untimed run filled first
* ruff cold      ``ruff check --no-cache --exit-zero --select PT,B011,B015,PLW0129 DIR``
* ruff warm      ``ruff check --cache-dir TMP --exit-zero --select ... DIR`` (primed the same way)
* flake8         ``flake8 -j 2 --exit-zero DIR`` (default plugins; flake8 has no cache)
* referee, empty ``referee check --no-cache --exit-zero EMPTY`` on an empty temporary
                 directory: start-up alone (imports, configuration), target <= 0.15 s
* tree-sitter parse + query  ``python bench/_parse_floor.py DIR``: every file parsed and
                 referee's capture query run, on every core, nothing else — the floor of
                 any cold check that parses with tree-sitter

and, unless ``--no-concise``, ruff cold and warm once more with ``--output-format
concise``. Ruff's default ("full") output renders a source snippet and a fix for every
diagnostic; on a unittest suite PT009/PT027 fire on every ``self.assert*`` call, so the
default output format can cost ruff more than its analysis does. The concise rows show
ruff's time when it prints one line per finding, as referee does.

The runs are interleaved (one of each per round) so that a noisy neighbour slows every
tool alike rather than one of them; medians and ratios are the numbers to quote.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import _results  # bench/_results.py: each run is appended to its area's history
import _tools  # bench/_tools.py: the scripts run from bench/

RUFF_SELECT = "PT,B011,B015,PLW0129"
INSTALL_HINT = "pip install 'referee[bench]'"


def find_tool(name: str) -> str:
    return _tools.find_tool(
        name, "check_speed", INSTALL_HINT if name in ("ruff", "flake8") else "pip install referee"
    )


def version_of(exe: str) -> str:
    proc = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    text = (proc.stdout or proc.stderr).strip()
    # "referee, version 0.1.0", "ruff 0.6.9", "7.1.1 (mccabe: 0.7.0, ...) CPython 3.12 on"
    match = re.search(r"\d+\.\d+(?:\.\d+)?\S*(?:\s*\([^)]*\))?", text)
    return match.group(0) if match else (text.splitlines()[0] if text else "?")


def source_fingerprint() -> str:
    return _tools.source_fingerprint()


def finding_counts(cases: list[Case], cwd: Path) -> dict[str, str]:
    """How many findings referee and ruff report (one untimed run each): the cost of
    printing them is part of what the table measures."""
    counts = {}
    for case in cases:
        if case.key == "referee-cold":
            argv = [*case.argv[:-1], "--format", "json", case.argv[-1]]
            proc = subprocess.run(
                argv, cwd=cwd, env=case.env, capture_output=True, text=True, check=False
            )
            try:
                counts["referee"] = str(json.loads(proc.stdout)["summary"]["findings"])
            except (ValueError, KeyError):
                counts["referee"] = "?"
        elif case.key == "ruff-cold":
            argv = [*case.argv[:-1], "--output-format", "concise", case.argv[-1]]
            proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
            match = re.search(r"^Found (\d+) errors?", proc.stdout, re.MULTILINE)
            counts["ruff"] = match.group(1) if match else "0"
    return counts


def corpus_size(root: Path) -> tuple[int, int]:
    """(.py files, lines) under root, skipping caches and VCS directories."""
    paths = _tools.python_files(root)
    lines = 0
    for path in paths:
        with open(path, "rb") as handle:
            lines += handle.read().count(b"\n")
    return len(paths), lines


@dataclass
class Case:
    key: str
    label: str
    argv: list[str]
    env: dict[str, str] | None = None
    prime: bool = False  # run once, untimed, before the timed rounds (fills the cache)
    times: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def best(self) -> float:
        return min(self.times)


def run_once(case: Case, cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        case.argv,
        cwd=cwd,
        env=case.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        # Every command carries --exit-zero, so a non-zero status is a crash or a usage
        # error: run it again with stderr visible to say what went wrong.
        again = subprocess.run(
            case.argv, cwd=cwd, env=case.env, capture_output=True, text=True, check=False
        )
        sys.exit(
            f"check_speed: {case.label} exited {proc.returncode}: {' '.join(case.argv)}\n"
            f"{again.stderr.strip()[-2000:]}"
        )
    return elapsed


def compile_package(executable: str, package: str) -> None:
    """Write the bytecode of ``package`` (and of its sub-packages, an editable install's
    folders included) for the interpreter that runs ``executable``."""
    python = Path(executable).with_name("python")
    if not python.exists():
        return
    # an editable install maps referee.checks and referee.server to folders of their own
    script = (
        "import compileall, importlib, sys\n"
        f"names = [{package!r}, {package + '.checks'!r}, {package + '.server'!r}]\n"
        "folders = set()\n"
        "for name in names:\n"
        "    try:\n"
        "        folders.update(importlib.import_module(name).__path__)\n"
        "    except ImportError:\n"
        "        pass\n"
        "ok = all(compileall.compile_dir(f, quiet=2) for f in sorted(folders))\n"
        "sys.exit(0 if ok else 1)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([str(python), "-c", script], env=env, capture_output=True, check=False)


def build_cases(tmp: Path, target: str, concise: bool, flake8_jobs: int) -> list[Case]:
    referee, ruff, flake8 = find_tool("referee"), find_tool("ruff"), find_tool("flake8")
    ref_cache = tmp / "referee-cache"
    ruff_cache = tmp / "ruff-cache"
    warm_env = {**os.environ, "REFEREE_CACHE_DIR": str(ref_cache)}
    # The cold run gets a cache directory too, though --no-cache means it never touches
    # it: a stray user cache can then not matter either way.
    cold_env = {**os.environ, "REFEREE_CACHE_DIR": str(tmp / "referee-unused")}
    ruff_base = [ruff, "check", "--exit-zero", "--select", RUFF_SELECT]
    cases = [
        Case(
            "referee-cold",
            "referee cold",
            [referee, "check", "--no-cache", "--exit-zero", target],
            env=cold_env,
        ),
        Case(
            "referee-warm",
            "referee warm",
            [referee, "check", "--exit-zero", target],
            env=warm_env,
            prime=True,
        ),
        Case("ruff-cold", "ruff cold", [*ruff_base, "--no-cache", target]),
        Case(
            "ruff-warm",
            "ruff warm",
            [*ruff_base, "--cache-dir", str(ruff_cache), target],
            prime=True,
        ),
    ]
    if concise:
        concise_cache = tmp / "ruff-cache-concise"
        cases += [
            Case(
                "ruff-cold-concise",
                "ruff cold, concise",
                [*ruff_base, "--output-format", "concise", "--no-cache", target],
            ),
            Case(
                "ruff-warm-concise",
                "ruff warm, concise",
                [
                    *ruff_base,
                    "--output-format",
                    "concise",
                    "--cache-dir",
                    str(concise_cache),
                    target,
                ],
                prime=True,
            ),
        ]
    python = Path(referee).with_name("python")
    if python.exists():
        cases.append(
            Case(
                "parse-floor",
                "tree-sitter parse + query",  # bench/_parse_floor.py: no rule, no output
                [str(python), str(Path(__file__).with_name("_parse_floor.py")), target],
            )
        )
    empty = tmp / "empty"
    empty.mkdir(exist_ok=True)
    cases.append(
        Case(
            "referee-empty",
            "referee, empty dir",  # start-up alone: the target is <= 0.15 s
            [referee, "check", "--no-cache", "--exit-zero", str(empty)],
            env=cold_env,
        )
    )
    cases.append(
        Case(
            "flake8",
            f"flake8 -j {flake8_jobs}",
            [flake8, "-j", str(flake8_jobs), "--exit-zero", target],
        )
    )
    return cases


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "-"


def verdict_lines(by: dict[str, Case]) -> list[str]:
    rc, rw = by["referee-cold"].median, by["referee-warm"].median
    fl = by["flake8"].median
    lines = []

    def speed(factor: float) -> str:
        return f"{factor:.1f}x faster" if factor >= 1 else f"{1 / factor:.1f}x slower"

    lines.append(
        f"target >=5x faster than flake8: {'MET' if fl / rc >= 5 else 'NOT MET'} "
        f"(referee cold {speed(fl / rc)} than flake8; referee warm {speed(fl / rw)})"
    )

    def within(ref: float, other: float) -> str:
        factor = ref / other
        status = "MET" if factor <= 2 else "NOT MET"
        way = "slower" if factor >= 1 else "faster"
        shown = factor if factor >= 1 else 1 / factor
        return f"{status} ({shown:.2f}x {way})"

    parts = [
        f"cold vs cold {within(rc, by['ruff-cold'].median)}",
        f"warm vs warm {within(rw, by['ruff-warm'].median)}",
    ]
    lines.append("target within 2x of ruff (ruff's default output): " + "; ".join(parts))
    if "ruff-cold-concise" in by:
        parts = [
            f"cold vs cold {within(rc, by['ruff-cold-concise'].median)}",
            f"warm vs warm {within(rw, by['ruff-warm-concise'].median)}",
        ]
        lines.append("target within 2x of ruff (--output-format concise): " + "; ".join(parts))
    if "parse-floor" in by and "ruff-cold-concise" in by:
        floor = by["parse-floor"].median / by["ruff-cold-concise"].median
        lines.append(
            f"floor: tree-sitter's parse and referee's query alone, on every core, take "
            f"{floor:.1f}x ruff cold, concise: what a cold check that parses with tree-sitter "
            f"cannot go below here (issue 41's target is 3x)"
        )
    if "referee-empty" in by:
        empty = by["referee-empty"].median
        met = "MET" if empty <= 0.15 else "not met"
        lines.append(f"target referee on an empty directory <= 0.15 s: {met} ({empty:.2f} s)")
    return lines


def print_report(
    cases: list[Case],
    corpus: Path,
    files: int,
    lines: int,
    versions: dict[str, str],
    repeat: int,
    load: tuple[str, str],
    counts: dict[str, str],
) -> None:
    by = {c.key: c for c in cases}
    base_cold, base_warm = by["ruff-cold"].median, by["ruff-warm"].median
    base_flake8 = by["flake8"].median
    header = ["tool", "median s", "min s", "/ ruff cold", "/ ruff warm", "/ flake8"]
    rows = [
        [
            c.label,
            f"{c.median:.2f}",
            f"{c.best:.2f}",
            ratio(c.median, base_cold),
            ratio(c.median, base_warm),
            ratio(c.median, base_flake8),
        ]
        for c in cases
    ]
    cores = os.cpu_count() or 0
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = cores
    info = [
        f"corpus: {corpus} ({files} .py files, {lines:,} lines)",
        f"machine: {cores} cores ({usable} usable), {platform.machine()}, "
        f"{platform.system()} {platform.release()}; Python {platform.python_version()}",
        "versions: "
        + "; ".join(f"{k} {v}" for k, v in versions.items())
        + f" (referee sources {source_fingerprint()})",
        "findings reported: " + "; ".join(f"{k} {v}" for k, v in counts.items()),
        f"date: {dt.datetime.now().astimezone().isoformat(timespec='seconds')}; "
        f"repeats: {repeat} (interleaved); load average before/after: {load[0]} / {load[1]}",
        f"ruff selection: --select {RUFF_SELECT}",
        "ratios: this row's median / that row's median (below 1.00x: faster)",
    ]
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, ["-" * w for w in widths], *rows]:
            print(
                "  ".join(
                    cell.ljust(w) if i == 0 else cell.rjust(w)
                    for i, (cell, w) in enumerate(zip(row, widths, strict=True))
                )
            )
        print()
        print("\n".join(info))
        print()
        print("\n".join(verdict_lines(by)))
        return
    console = Console(highlight=False)
    table = Table(title="wall time, seconds")
    for i, name in enumerate(header):
        table.add_column(name, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    for line in info:
        console.print(line, soft_wrap=True)
    console.print()
    for line in verdict_lines(by):
        console.print(line, soft_wrap=True)
    # A Markdown copy of the table, for docs/benchmarks.md.
    console.print()
    console.print("| " + " | ".join(header) + " |", soft_wrap=True)
    console.print("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|", soft_wrap=True)
    for row in rows:
        console.print("| " + " | ".join(row) + " |", soft_wrap=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, help="corpus (default: CPython's test/)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per tool (default 5)")
    parser.add_argument("--flake8-jobs", type=int, default=2, help="flake8 -j (default 2)")
    parser.add_argument(
        "--no-concise",
        dest="concise",
        action="store_false",
        help="leave out the ruff --output-format concise rows",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    corpus = (args.path or _tools.default_corpus()).resolve()
    if not corpus.is_dir():
        parser.error(f"{corpus} is not a directory")

    files, lines = corpus_size(corpus)
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="referee-bench-") as tmp_name:
        tmp = Path(tmp_name)
        cases = build_cases(tmp, corpus.name, args.concise, args.flake8_jobs)
        names = {"referee": cases[0].argv[0], "ruff": cases[2].argv[0], "flake8": cases[-1].argv[0]}
        versions = {name: version_of(exe) for name, exe in names.items()}
        # As a user's install has them: the bytecode of referee's modules (and of
        # flake8's). PYTHONDONTWRITEBYTECODE in this shell would otherwise make every
        # run compile referee from source, a start-up cost no user pays.
        for name in ("referee", "flake8"):
            compile_package(names[name], name)
        for case in cases:
            if case.prime:
                print(f"priming {case.label} ...", file=sys.stderr, flush=True)
                run_once(case, corpus.parent)
        for round_ in range(1, args.repeat + 1):
            for case in cases:
                case.times.append(run_once(case, corpus.parent))
            summary = ", ".join(f"{c.key} {c.times[-1]:.2f}" for c in cases)
            print(f"round {round_}/{args.repeat}: {summary}", file=sys.stderr, flush=True)
        load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
        counts = finding_counts(cases, corpus.parent)
    print_report(
        cases, corpus, files, lines, versions, args.repeat, (load_before, load_after), counts
    )
    _results.record(
        "check-speed",
        {
            "corpus": str(corpus),
            "files": files,
            "lines": lines,
            "versions": versions,
            "load_before_after": [load_before, load_after],
            "findings": counts,
            "seconds": {
                c.label: {"median": round(c.median, 3), "min": round(c.best, 3), "runs": c.times}
                for c in cases
            },
        },
        argv,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
