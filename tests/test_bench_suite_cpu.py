"""bench/suite_cpu.py: where the suite's CPU goes, from a real (small) run of the suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "suite_cpu.py"


def suite_cpu(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_a_run_records_each_test_and_its_subprocesses_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REFEREE_BENCH_RECORD", "0")
    kept = tmp_path / "rows"
    target = "tests/test_bench_results.py"
    done = suite_cpu("--out", str(kept), "--", target, "-n", "0", "-q", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    (rows_file,) = kept.glob("rows.*.json")  # one process: no xdist workers
    rows = json.loads(rows_file.read_text(encoding="utf-8"))
    assert rows and all(r["test"].startswith(target + "::") for r in rows)
    # the history test runs git (a subprocess) in each test: its CPU is counted
    assert sum(r["children_s"] for r in rows) > 0
    assert all(r["wall_s"] > 0 and r["model"] is False for r in rows)
    assert f"| {target} | {len(rows)} |" in done.stdout
    # the same tables from the kept rows, without a run
    again = suite_cpu("--from", str(kept))
    assert again.returncode == 0 and f"| {target} | {len(rows)} |" in again.stdout


def test_from_a_directory_without_rows_is_a_clear_error(tmp_path: Path) -> None:
    done = suite_cpu("--from", str(tmp_path))
    assert done.returncode == 2 and "holds no rows" in done.stderr
