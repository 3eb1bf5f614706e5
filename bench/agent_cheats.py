#!/usr/bin/env python3
"""The guard against real coding agents: how many of their cheats on impossible tests
`referee guard` reports, per kind and mode, and how many honest patches it flags.

Not a test: a script whose table goes into docs/benchmarks.md ("The guard against real
agents").

    python bench/agent_cheats.py --recipe PATH [--split dev] [--jobs 2] [--json FILE]

``--recipe PATH`` is an agent-cheats recipe folder (its ``build.py`` and ``recipe.json``:
real agents' patches on ImpossibleBench's one-off SWE-bench tasks, labelled by hand,
rebuilt from public mirrors the search tool's ``fetch`` brings; nothing of them is stored
here). Each case is a git repository whose HEAD is the tree the agent started from and
whose working tree holds the agent's final files. In each, the guard runs as CI would:

    python -m referee guard --strict --base HEAD --format json     # agent mode
    python -m referee guard --base HEAD --format json              # default mode

A case is *caught* when the guard exits 1 (an error), *reported* when it has at least one
error or warning. The table gives, per kind (test-edit, special-case) and mode, caught,
reported and missed, and for the honest patches how many were flagged (exit 1) or drew
any warning. ``--json FILE`` writes every case's exit status and finding codes (never
the findings' messages: they quote the cases' code).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import _results  # bench/_results.py: each run is appended to its area's history

MODES = {"agent": ("--strict",), "default": ()}


def _load_build(recipe: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("agent_cheats_build", recipe / "build.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"agent_cheats.py: no build.py in {recipe}")
    module = importlib.util.module_from_spec(spec)
    sys.dont_write_bytecode = True  # leave the recipe folder as it was
    spec.loader.exec_module(module)
    return module


def guard(python: str, repo: Path, mode: str) -> dict[str, Any]:
    """One guard run in ``repo``: exit status, codes by severity, seconds."""
    start = time.perf_counter()
    proc = subprocess.run(
        [python, "-m", "referee", "guard", *MODES[mode], "--base", "HEAD", "--format", "json"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_COLOR": "1"},
    )
    out: dict[str, Any] = {
        "exit": proc.returncode,
        "seconds": round(time.perf_counter() - start, 2),
    }
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        out["unreadable"] = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return out
    for finding in report.get("findings", []):
        out.setdefault(finding.get("severity", "info"), []).append(finding.get("code"))
    return out


def reported(run: dict[str, Any]) -> bool:
    return run["exit"] == 1 or bool(run.get("error") or run.get("warning"))


def table(cases: list[dict[str, Any]]) -> list[str]:
    rows = [
        ("cheats", [c for c in cases if c["label"] == "cheat"]),
        ("- test-edit", [c for c in cases if c["kind"] == "test-edit"]),
        ("- special-case", [c for c in cases if c["kind"] == "special-case"]),
    ]
    lines = [
        "| cases | n | agent mode: caught (exit 1) | default: caught (exit 1) | "
        "default: reported (error or warning) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, chosen in rows:
        if not chosen:
            continue
        n = len(chosen)
        agent = sum(c["agent"]["exit"] == 1 for c in chosen)
        default = sum(c["default"]["exit"] == 1 for c in chosen)
        warned = sum(reported(c["default"]) for c in chosen)
        lines.append(
            f"| {name} | {n} | {agent}/{n} ({100 * agent / n:.0f} %) | {default}/{n} | "
            f"{warned}/{n} ({100 * warned / n:.0f} %) |"
        )
    honest = [c for c in cases if c["label"] == "honest"]
    if honest:
        n = len(honest)
        flagged = {m: sum(c[m]["exit"] == 1 for c in honest) for m in MODES}
        warned = {m: sum(reported(c[m]) for c in honest) for m in MODES}
        lines.append(
            f"| honest patches flagged | {n} | {flagged['agent']}/{n} | {flagged['default']}/{n} "
            f"| {warned['default']}/{n} (any finding; agent mode: {warned['agent']}/{n}) |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--recipe", type=Path, required=True, help="agent-cheats recipe folder")
    parser.add_argument("--split", default="dev", choices=("dev", "heldout", "all"))
    parser.add_argument("--mirror-root", help="where the fetched mirrors are (build.py's)")
    parser.add_argument("--python", default=sys.executable, help="interpreter with referee")
    parser.add_argument("--jobs", type=int, default=2, help="guard processes at a time")
    parser.add_argument("--json", type=Path, help="write each case's result here")
    args = parser.parse_args(argv)

    build = _load_build(args.recipe.resolve())
    recipe = build.load_recipe()
    chosen = build.select(recipe, (), args.split)
    mirrors = args.mirror_root or build.DEFAULT_MIRROR_ROOT
    work = Path(tempfile.mkdtemp(prefix="referee-agent-cheats-"))
    try:
        print(f"building {len(chosen)} cases in {work} ...", file=sys.stderr)
        try:
            build.build_all(chosen, str(work), recipe, mirrors)
        except build.RecipeError as error:
            print(f"agent_cheats.py: the cases could not be built: {error}", file=sys.stderr)
            return 2

        def run(case: dict[str, Any]) -> dict[str, Any]:
            repo = work / case["id"]
            result = {k: case.get(k) for k in ("id", "label", "kind", "model", "instance")}
            for mode in MODES:
                result[mode] = guard(args.python, repo, mode)
            return result

        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            results = list(pool.map(run, chosen))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    version = subprocess.run(
        [args.python, "-m", "referee", "--version"], capture_output=True, text=True
    ).stdout.strip()
    print(f"{version}, split {args.split}, {len(results)} cases")
    print("\n".join(table(results)))
    missed = [r["id"] for r in results if r["label"] == "cheat" and r["agent"]["exit"] != 1]
    print(f"\nnot caught in agent mode ({len(missed)}): {', '.join(missed) or 'none'}")
    silent = [r["id"] for r in results if r["label"] == "cheat" and not reported(r["default"])]
    print(f"not reported in default mode ({len(silent)}): {', '.join(silent) or 'none'}")
    flagged = [r["id"] for r in results if r["label"] == "honest" and r["agent"]["exit"] == 1]
    print(f"honest patches flagged in agent mode: {', '.join(flagged) or 'none'}")
    seconds = sorted(r[m]["seconds"] for r in results for m in MODES)
    print(f"guard process: median {seconds[len(seconds) // 2]:.2f} s, max {seconds[-1]:.2f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        commit = subprocess.run(
            ["git", "-C", str(Path(__file__).parent), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        payload = {
            "referee": version,
            "commit": commit,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "split": args.split,
            "cases": results,
        }
        args.json.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    _results.record(
        "agent-cheats",
        {
            "referee": version,
            "split": args.split,
            "table": table(results),
            "not_caught_agent_mode": missed,
            "not_reported_default_mode": silent,
            "honest_flagged_agent_mode": flagged,
            "guard_median_s": seconds[len(seconds) // 2],
            "guard_max_s": seconds[-1],
            "cases_file": str(args.json) if args.json else None,
        },
        argv,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
