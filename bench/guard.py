#!/usr/bin/env python3
"""Detection benchmark for the anti-gaming guard: how many cheats `referee guard`
catches, with the right rule code, and how many honest edits it lets through.

Not a test: a script whose tables go into docs/benchmarks.md ("Anti-gaming guard").

    python bench/guard.py              # every pair, one guard process at a time
    python bench/guard.py --jobs 2     # faster; per-run times then include contention

The pairs are tests/guard_catalogue/cases.py's, the ones tests/test_guard.py asserts on:
CHEATS (each names the rule code it must be reported under) and HONEST (each must give
no error-level finding; a certified change must show as information). Each pair is
committed in a fresh git repository in a temporary directory, edited in its working
tree, and checked with ``python -m referee guard --format json``, the command CI runs.
The time of a run is the wall time of that process, interpreter start-up included; the
start-up alone (``python -m referee --version``) is measured too, for comparison.
Exit status 1 when an honest edit is flagged or a cheat is missed that the catalogue
does not list as a known gap (``Pair.gap``), or a known gap is now caught.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import _results  # noqa: E402  (bench/_results.py: each run is appended to its history)
from guard_catalogue.cases import CHEATS, HONEST, Outcome, Pair, run_pair  # noqa: E402


@dataclass
class Result:
    pair: Pair
    outcome: Outcome
    # For a cheat the default mode reports as a warning only (``Pair.agent``): the run in
    # agent mode (--strict), which must fail.
    strict: Outcome | None = None

    @property
    def errors(self) -> set[str]:
        if self.strict is not None:
            return self.strict.codes("error")
        return self.outcome.codes("error")

    @property
    def caught(self) -> bool:
        """A cheat the guard failed the run on (exit 1): in agent mode for one the
        default mode reports as a warning, which it must then do."""
        if self.strict is not None:
            warned = self.pair.code in self.outcome.codes("warning") | self.outcome.codes("error")
            return warned and self.strict.rc == 1 and bool(self.errors)
        return self.outcome.rc == 1 and bool(self.errors)

    @property
    def right_code(self) -> bool:
        return self.caught and self.pair.code in self.errors

    @property
    def passed(self) -> bool:
        """An honest edit with exit 0, no error, and the information it must show."""
        ok = self.outcome.rc == 0 and not self.errors
        if ok and self.pair.info is not None:
            ok = any(
                f["code"] == self.pair.info
                and f["severity"] == "info"
                and "certified by" in f["message"]
                for f in self.outcome.findings
            )
        if ok and self.pair.warn is not None:  # reported, as a warning that quotes it
            ok = any(
                f["code"] == self.pair.warn
                and f["severity"] == "warning"
                and (self.pair.warn_text or "") in f["message"]
                for f in self.outcome.findings
            )
        return ok


def run_all(pairs: list[Pair], tmp: Path, jobs: int) -> list[Result]:
    def one(indexed: tuple[int, Pair]) -> Result:
        index, pair = indexed
        outcome = run_pair(pair, tmp / f"{index:03d}")
        strict = run_pair(pair, tmp / f"{index:03d}s", None, "--strict") if pair.agent else None
        return Result(pair, outcome, strict)

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, enumerate(pairs)))


def startup_seconds(repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "referee", "--version"],
            capture_output=True,
            check=True,
        )
        times.append(time.perf_counter() - started)
    return times


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "n/a"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _git_version() -> str:
    out = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip().removeprefix("git version ") or "?"


def report(
    results: list[Result],
    startup: list[float],
    jobs: int,
    load: tuple[str, str],
    elapsed: float,
) -> int:
    from referee import __version__

    cheats = [r for r in results if r.pair.code is not None]
    honest = [r for r in results if r.pair.code is None]
    print(
        f"referee {__version__} guard catalogue: {len(cheats)} cheats, {len(honest)} honest "
        f"edits; Python {platform.python_version()}, {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} CPUs, git {_git_version()}, "
        f"{jobs} job(s), load average {load[0]} -> {load[1]}; {elapsed:.1f} s in all"
    )
    print()

    by_class: dict[str, list[Result]] = defaultdict(list)
    for result in cheats:
        by_class[result.pair.cls].append(result)
    rows = []
    for cls, group in by_class.items():
        codes = sorted({r.pair.code or "" for r in group})
        rows.append(
            [
                cls,
                ", ".join(codes),
                f"{sum(r.caught for r in group)}/{len(group)}",
                f"{sum(r.right_code for r in group)}/{len(group)}",
            ]
        )
    caught = sum(r.caught for r in cheats)
    right = sum(r.right_code for r in cheats)
    rows.append(["**all cheats**", "", f"**{caught}/{len(cheats)}**", f"**{right}/{len(cheats)}**"])
    print("\n".join(_table(["cheat class", "rule", "caught (exit 1)", "right code"], rows)))
    agent = sum(r.strict is not None for r in cheats)
    print(
        f"\n({agent} cheats are shapes the default mode reports as a warning: caught means a "
        "warning there and an error in agent mode, --strict.)"
    )
    print()

    by_class = defaultdict(list)
    for result in honest:
        by_class[result.pair.cls].append(result)
    rows = [
        [cls, f"{sum(r.passed for r in group)}/{len(group)}"] for cls, group in by_class.items()
    ]
    passed = sum(r.passed for r in honest)
    rows.append(["**all honest edits**", f"**{passed}/{len(honest)}**"])
    print("\n".join(_table(["honest edit class", "no error finding (exit 0)"], rows)))
    print()

    false_alarms = [r for r in honest if not r.passed]
    misses = [r for r in cheats if not r.right_code]
    print("False alarms:" + ("" if false_alarms else " none"))
    for r in false_alarms:
        print(f"  {r.pair.id} [{r.pair.cls}]: {r.outcome.describe()}")
    print("Cheats missed or reported under another code:" + ("" if misses else " none"))
    for r in misses:
        known = f" (known gap: {r.pair.gap})" if r.pair.gap else ""
        print(f"  {r.pair.id} [{r.pair.cls}]{known}: {r.outcome.describe()}")
    print()

    times = [r.outcome.seconds for r in results] + [
        r.strict.seconds for r in results if r.strict is not None
    ]
    deciles = statistics.quantiles(times, n=10)
    print(
        f"Detection rate: {caught}/{len(cheats)} = {_percent(caught, len(cheats))} "
        f"(right code: {right}/{len(cheats)} = {_percent(right, len(cheats))})"
    )
    print(
        f"False-alarm rate: {len(false_alarms)}/{len(honest)} = "
        f"{_percent(len(false_alarms), len(honest))}"
    )
    print(
        f"Seconds per guard run ({len(times)} runs, one process each): median "
        f"{statistics.median(times):.3f}, p10 {deciles[0]:.3f}, p90 {deciles[-1]:.3f}, "
        f"max {max(times):.3f}; `python -m referee --version` alone: median "
        f"{statistics.median(startup):.3f}"
    )
    unexpected = [r for r in misses if not r.pair.gap] + [
        r for r in cheats if r.pair.gap and r.right_code
    ]
    return 1 if false_alarms or unexpected else 0


def figures(results: list[Result], startup: list[float], jobs: int) -> dict[str, object]:
    """The report's figures, for the area's history (bench/results/history-guard.json)."""
    cheats = [r for r in results if r.pair.code is not None]
    honest = [r for r in results if r.pair.code is None]
    cheat_classes: dict[str, list[Result]] = defaultdict(list)
    honest_classes: dict[str, list[Result]] = defaultdict(list)
    for result in cheats:
        cheat_classes[result.pair.cls].append(result)
    for result in honest:
        honest_classes[result.pair.cls].append(result)
    times = [r.outcome.seconds for r in results] + [
        r.strict.seconds for r in results if r.strict is not None
    ]
    return {
        "jobs": jobs,
        "git": _git_version(),
        "cheats_caught": f"{sum(r.caught for r in cheats)}/{len(cheats)}",
        "cheats_right_code": f"{sum(r.right_code for r in cheats)}/{len(cheats)}",
        "honest_no_error": f"{sum(r.passed for r in honest)}/{len(honest)}",
        "cheat_classes": {
            cls: {
                "rules": sorted({r.pair.code or "" for r in group}),
                "caught": f"{sum(r.caught for r in group)}/{len(group)}",
                "right_code": f"{sum(r.right_code for r in group)}/{len(group)}",
            }
            for cls, group in cheat_classes.items()
        },
        "honest_classes": {
            cls: f"{sum(r.passed for r in group)}/{len(group)}"
            for cls, group in honest_classes.items()
        },
        "false_alarms": [r.pair.id for r in honest if not r.passed],
        "misses": [r.pair.id for r in cheats if not r.right_code],
        "guard_run_seconds": {
            "runs": len(times),
            "median": round(statistics.median(times), 3),
            "max": round(max(times), 3),
        },
        "referee_version_median_s": round(statistics.median(startup), 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1, help="guard processes at a time (default 1)")
    parser.add_argument(
        "--startup-repeat", type=int, default=5, help="start-up measurements (default 5)"
    )
    args = parser.parse_args(argv)
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="referee-guard-bench-") as tmp_name:
        started = time.perf_counter()
        results = run_all([*CHEATS, *HONEST], Path(tmp_name), max(args.jobs, 1))
        elapsed = time.perf_counter() - started
    startup = startup_seconds(args.startup_repeat)
    load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    status = report(results, startup, max(args.jobs, 1), (load_before, load_after), elapsed)
    _results.record("guard", figures(results, startup, max(args.jobs, 1)), argv)
    return status


if __name__ == "__main__":
    sys.exit(main())
