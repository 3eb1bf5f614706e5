#!/usr/bin/env python3
"""Does a test module pass in the sandbox as it does in the project's own run?

Not a test. Arbitration certifies a corrected test, and verifies a candidate patch, by
running the test module in the sandbox (``sandbox.run_pytest``, the project's files as
``engine.project_files`` copies them, in the project's interpreter, with its installed
pytest plugins); mutation grading and the guard's execution check do the same. Each such
run must pass or fail for the tests' own reasons. For every project checkout given (with
its own environment: ``.venv/`` or another that ``referee.checks.interpreter.find``
finds), this runs a sample of its test modules twice, unchanged:

* **own**: ``python -m pytest -q -p no:cacheprovider MODULE`` in the checkout, in that
  interpreter — the project's own run;
* **sandbox**: the run a candidate patch gets, laid out as arbitration lays it out
  (``execution.targets.laid_out``, ``pytestconfig.alone_args_of``), within arbitration's
  limits for a test run;

and compares what passed and what did not. A module that passes in its own run and not in
the sandbox is a run referee would misread; the table names why.

    python bench/sandbox_fidelity.py /tmp/hist-bench/attrs /tmp/hist-bench/click
    python bench/sandbox_fidelity.py --modules 4 --json out.json PROJECT...

Set up each project first, e.g. ``python -m venv P/.venv && P/.venv/bin/pip install -e
'P[tests]' pytest``. ``$PYTEST_DISABLE_PLUGIN_AUTOLOAD`` is removed from both runs'
environment unless ``--no-plugins``: a user's runs load the installed plugins.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _results  # bench/_results.py: each run is appended to its area's history

from referee.checks import interpreter, sandbox
from referee.checks.arbitration.engine import project_files
from referee.checks.arbitration.fix import pytest_counts, pytest_run_limits
from referee.checks.config import discover
from referee.checks.configuration import ArbitrationConfig
from referee.checks.execution.targets import laid_out
from referee.checks.guard.pytestconfig import alone_args_of

_SKIPPED_DIRS = {".venv", "venv", "env", ".tox", ".nox", "build", "dist", "node_modules", ".git"}
_SUMMARY = re.compile(r"(\d+) (passed|failed|errors?)")


def test_modules(root: Path, count: int) -> list[str]:
    """``count`` test modules of the project, spread evenly over them in path order."""
    found = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS and "." not in d[:1])
        for name in sorted(filenames):
            if name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")):
                found.append(Path(directory, name).relative_to(root).as_posix())
    if len(found) <= count:
        return found
    step = len(found) / count
    return [found[int(i * step)] for i in range(count)]


def package_module(files: dict[str, Any]) -> tuple[str, str] | None:
    """(relpath, dotted name) of one package of the project: what arbitration's patched
    module would be, which decides how the run is laid out (``src/`` first, say)."""
    inits = sorted(
        (p.count("/"), p)
        for p in files
        if p.endswith("/__init__.py") and not any(part.startswith("test") for part in p.split("/"))
    )
    for _, relpath in inits:
        parts = relpath.split("/")[:-1]
        if parts and parts[0] in ("src", "lib"):
            parts = parts[1:]
        if parts:
            return relpath, ".".join(parts)
    return None


def own_run(python: str, root: Path, module: str, extra: list[str], timeout: float, env):
    command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", module, *extra]
    started = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return (0, 0), "timed out", time.monotonic() - started
    lines = [line for line in done.stdout.splitlines() if _SUMMARY.search(line)]
    summary = lines[-1].strip("= ") if lines else (done.stdout + done.stderr).strip()[-300:]
    return pytest_counts(summary), summary, time.monotonic() - started


def sandbox_run(root: Path, module: str, python, limits, files, target):
    args = [module, "-q"]
    view = files
    if target is not None:
        view, args = laid_out(files, args, *target)
    args += alone_args_of(view)
    started = time.monotonic()
    result = sandbox.run_pytest(view, args, limits=limits, python=python)
    elapsed = time.monotonic() - started
    counts = pytest_counts(result.message)
    why = result.message
    if result.status != "ok" and counts[1] == 0:
        tail = [line for line in (result.stdout or "").splitlines() if line.strip()][-3:]
        why = f"{result.message} | {' / '.join(tail)}"[:400]
    return counts, why, elapsed


def bench_project(root: Path, count: int, env: dict[str, str]) -> dict[str, Any]:
    settings = discover(root)
    python = interpreter.find(root, settings.config.python)
    if python.is_own:
        return {"project": root.name, "error": "no environment of its own (.venv/ or another)"}
    files = project_files(root, settings)
    target = package_module(files)
    limits = pytest_run_limits(ArbitrationConfig())
    rows = []
    for module in test_modules(root, count):
        own, own_summary, own_s = own_run(
            python.path, root, module, alone_args_of(files), limits.timeout_s * 2, env
        )
        if own[1] == 0:
            rows.append({"module": module, "own": own_summary, "outcome": "not run (own)"})
            continue
        inside, why, inside_s = sandbox_run(root, module, python, limits, files, target)
        outcome = "same" if inside == own else "differs"
        rows.append(
            {
                "module": module,
                "own": list(own),
                "sandbox": list(inside),
                "outcome": outcome,
                "why": "" if outcome == "same" else why,
                "own_s": round(own_s, 2),
                "sandbox_s": round(inside_s, 2),
            }
        )
        print(f"  {module}: own {own} sandbox {inside} {outcome}", file=sys.stderr)
    return {"project": root.name, "python": python.found, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("projects", nargs="+", type=Path, help="project checkouts")
    parser.add_argument("--modules", type=int, default=6, help="test modules per project")
    parser.add_argument("--json", type=Path, help="write every row here")
    parser.add_argument(
        "--no-plugins", action="store_true", help="set PYTEST_DISABLE_PLUGIN_AUTOLOAD=1"
    )
    args = parser.parse_args(argv)
    if args.no_plugins:
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    else:
        os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    env = dict(os.environ)
    projects = []
    for root in args.projects:
        print(f"{root.name}:", file=sys.stderr)
        projects.append(bench_project(root.resolve(), args.modules, env))
    print("| project | modules run | same | differs | why it differs |")
    print("|---|---:|---:|---:|---|")
    totals = {"run": 0, "same": 0, "differs": 0}
    for project in projects:
        rows = [r for r in project.get("rows", []) if r["outcome"] in ("same", "differs")]
        same = sum(r["outcome"] == "same" for r in rows)
        whys = "; ".join(
            f"{r['module']}: {r['why'][:120]}" for r in rows if r["outcome"] == "differs"
        )
        print(
            f"| {project['project']} | {len(rows)} | {same} | {len(rows) - same} | "
            f"{project.get('error') or whys} |"
        )
        totals["run"] += len(rows)
        totals["same"] += same
        totals["differs"] += len(rows) - same
    print(f"| all | {totals['run']} | {totals['same']} | {totals['differs']} | |")
    figures = {"totals": totals, "plugins": not args.no_plugins, "projects": projects}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    _results.record("sandbox-fidelity", figures, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
