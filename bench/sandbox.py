#!/usr/bin/env python3
"""What the sandbox costs per run: a table for docs/sandbox.md.

Not a test. Two runs arbitration makes all the time — an oracle (``evaluate`` of a small
program on one call) and a candidate patch (``run_pytest`` of a module with three tests)
— are timed, interleaved round by round so that a noisy machine hurts every mode alike,
in each mode this machine offers:

* ``default``: what a run gets with no setting (bubblewrap where it works, else the
  child's own namespaces; Landlock and seccomp where the kernel has them);
* ``namespaces``: bubblewrap switched off (the child builds its own view);
* ``bwrap``: bubblewrap (only where it works for this user);
* ``landlock``: no namespaces, Landlock and seccomp only (only where the child is not
  root);
* ``weak (hook only)``: no kernel mechanism, the audit hook alone (``REFEREE_SANDBOX=weak``);
* ``before (git: main)``: the sandbox as it was before the kernel boundary (user, network
  and pid namespaces, rlimits, the audit hook), loaded from ``git show REV:checks/...``.

    python bench/sandbox.py                  # 20 rounds
    python bench/sandbox.py --rounds 40 --before main
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

import _results  # noqa: E402  (bench/_results.py: each run is appended to its history)

from referee.checks import sandbox  # noqa: E402

ORACLE = "def count_vowels(text):\n    return sum(ch in 'aeiouAEIOU' for ch in text)\n"
CALL = "count_vowels('Hello, World')"
MODULE = "def count_vowels(text):\n    return sum(ch in 'aeiouAEIOU' for ch in text)\n"
TESTS = (
    "from text import count_vowels\n\n\n"
    "def test_vowels():\n    assert count_vowels('aeiou') == 5\n\n\n"
    "def test_empty():\n    assert count_vowels('') == 0\n\n\n"
    "def test_upper():\n    assert count_vowels('HELLO') == 2\n"
)
MODES: dict[str, dict[str, str]] = {
    "default": {},
    "namespaces": {"REFEREE_SANDBOX_DISABLE": "bwrap"},
    "bwrap": {"REFEREE_SANDBOX_DISABLE": "userns"},
    "landlock": {"REFEREE_SANDBOX_DISABLE": "bwrap,userns"},
    "weak (hook only)": {
        "REFEREE_SANDBOX_DISABLE": "bwrap,userns,landlock,seccomp",
        "REFEREE_SANDBOX": "weak",
    },
}
PROOF = {"bwrap": "bwrap", "namespaces": "mountns", "landlock": "landlock"}


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    names = ("REFEREE_SANDBOX_DISABLE", "REFEREE_SANDBOX", "REFEREE_SANDBOX_NAMESPACES")
    saved = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ.pop(name, None)
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def load_before(rev: str) -> Any | None:
    """The sandbox module as it was at ``rev``, from git; None outside a git checkout."""
    target = Path(tempfile.mkdtemp(prefix="referee-bench-before-"))
    for name in ("sandbox.py", "_sandbox_boot.py"):
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:checks/{name}"],
            capture_output=True,
            check=False,
        )
        if shown.returncode != 0:
            return None
        (target / name).write_bytes(shown.stdout)
    spec = importlib.util.spec_from_file_location("referee_sandbox_before", target / "sandbox.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def runs(module: Any) -> dict[str, Callable[[], Any]]:
    limits = module.Limits(timeout_s=30, cpu_s=30)
    return {
        "oracle (evaluate)": lambda: module.evaluate(ORACLE, CALL, limits=limits),
        "patch (run_pytest, 3 tests)": lambda: module.run_pytest(
            {"text.py": MODULE, "test_text.py": TESTS}, ["-q", "test_text.py"], limits=limits
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--before", default="main", help="git revision of the old sandbox")
    args = parser.parse_args()

    modes: dict[str, tuple[Any, dict[str, str]]] = {}
    for name, values in MODES.items():
        with environment(values):
            probe = sandbox.evaluate(ORACLE, CALL)
        held = probe.status == "ok" and PROOF.get(name, "") in (*probe.containment, "")
        if name == "namespaces" and "bwrap" in probe.containment:
            held = False
        if held:
            modes[name] = (sandbox, values)
            print(f"{name}: {', '.join(probe.containment)}")
        else:
            print(f"{name}: not here ({probe.status}: {probe.message[:90]})")
    before = load_before(args.before)
    if before is not None:
        modes[f"before (git: {args.before})"] = (before, {})
        probe = before.evaluate(ORACLE, CALL)
        print(f"before (git: {args.before}): {', '.join(probe.containment)}")

    timings: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for name, (module, values) in modes.items():
            with environment(values):
                for what, run in runs(module).items():
                    started = time.perf_counter()
                    result = run()
                    elapsed = time.perf_counter() - started
                    if result.status != "ok":
                        sys.exit(f"{name} / {what}: {result.status}: {result.message}")
                    timings.setdefault((name, what), []).append(elapsed)

    whats = list(runs(sandbox))
    print()
    print(
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
        f"uid {os.getuid()}, {os.cpu_count()} CPUs, {args.rounds} rounds, median (p90) ms\n"
    )
    print("| mode | " + " | ".join(whats) + " |")
    print("|---|" + "---:|" * len(whats))
    figures: dict[str, dict[str, list[int]]] = {}
    for name in modes:
        cells = []
        for what in whats:
            values = sorted(timings[name, what])
            p90 = values[min(len(values) - 1, int(len(values) * 0.9))]
            cells.append(f"{statistics.median(values) * 1000:.0f} ({p90 * 1000:.0f})")
            figures.setdefault(name, {})[what] = [
                round(statistics.median(values) * 1000),
                round(p90 * 1000),
            ]
        print(f"| {name} | " + " | ".join(cells) + " |")
    _results.record("sandbox", {"rounds": args.rounds, "median_p90_ms": figures})


if __name__ == "__main__":
    main()
