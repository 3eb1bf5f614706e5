"""bench/suite_cpu.py: where the suite's CPU goes, from a real (small) run of the suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "suite_cpu.py"
sys.path.insert(0, str(ROOT / "bench"))

import suite_cpu as bench  # noqa: E402


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


def _acct_line(command: str, cpu_ticks: float, elapsed_ticks: float, pid: int, ppid: int) -> str:
    """One line as Debian's dump-acct prints a version-3 record."""
    return (
        f"{command:<16}|v3|{cpu_ticks:9.2f}|     0.00|{elapsed_ticks:9.2f}|     0|     0|"
        f"  2476.00|     0.00|{pid:8d}|{ppid:8d}|     |       0|__      |Mon Dec  7 17:21:49 2026"
    )


def test_processes_are_sorted_into_kinds_by_command_name_and_cpu() -> None:
    wall = 100.0  # seconds: 100 ticks a second, read off the controller's own record
    lines = [
        _acct_line("python", 1000, 100 * wall, 10, 1),  # the controller
        _acct_line("python", 20000, 99 * wall, 11, 10),  # an xdist worker: the whole run
        _acct_line("referee-model", 3000, 60 * 100, 12, 13),  # 30 CPU-s
        _acct_line("referee", 60, 100, 13, 11),  # 0.6 CPU-s: a referee command
        _acct_line("python", 40, 100, 14, 13),  # 0.4 CPU-s: its project's pytest run
        _acct_line("python", 8, 10, 15, 11),  # 0.08 CPU-s
        _acct_line("python", 700, 900, 19, 11),  # 7 CPU-s, unnamed: a run before names
        _acct_line("referee-sandbox", 30, 50, 16, 13),  # 0.3 CPU-s: a sandboxed pytest run
        _acct_line("referee-sandbox", 1, 2, 17, 13),  # 0.01 CPU-s: a sandboxed program
        _acct_line("python3.11", 20, 30, 20, 11),  # 0.2 CPU-s, unnamed base interpreter
        _acct_line("referee-lsp", 200, 3000, 21, 11),  # 2 CPU-s: a language server
        _acct_line("git", 2, 3, 18, 11),
        "not a record",
    ]
    records, bad = bench.read_accounting("\n".join(lines))
    assert len(records) == 12 and bad == 1
    kinds = bench.process_kinds(records, 10, wall, "python", "python3.11")
    assert kinds["ticks_per_s"] == 100.0 and kinds["processes"] == 12
    by_kind = {k["kind"]: (k["processes"], k["cpu_s"]) for k in kinds["kinds"]}
    assert by_kind == {
        "the suite's own processes (controller, xdist workers)": (2, 210.0),
        "the model's processes (`referee-model`)": (1, 30.0),
        "referee commands (`referee`)": (1, 0.6),
        "unnamed venv Python, 0.2-5 CPU-s each (project pytest runs; referee commands, "
        "before names)": (1, 0.4),
        "unnamed venv Python, < 0.2 CPU-s each": (1, 0.1),
        "unnamed venv Python, >= 5 CPU-s each (a model process, before names)": (1, 7.0),
        "sandboxed runs of 0.1 CPU-s and more (pytest: patches, mutants)": (1, 0.3),
        "sandboxed runs under 0.1 CPU-s (oracles, references, inputs)": (1, 0.0),
        "unnamed base interpreter, >= 0.1 CPU-s each": (1, 0.2),
        "referee's servers (`referee-lsp`, `-mcp`, `-hookd`)": (1, 2.0),
        "everything else (git, bubblewrap, editors, shells)": (1, 0.0),
    }
    assert kinds["kinds"][0]["kind"].startswith("the suite's own")  # costliest first
    table = bench.report_kinds(kinds)
    assert "| the model's processes (`referee-model`) | 1 | 30.0 | 12 % |" in table


def test_ticks_of_50_a_second_are_read_off_the_controllers_record() -> None:
    records, _ = bench.read_accounting(
        "\n".join([_acct_line("python", 500, 50 * 20, 10, 1), _acct_line("git", 50, 60, 11, 10)])
    )
    kinds = bench.process_kinds(records, 10, 20.0, "python", "python3.11")
    assert kinds["ticks_per_s"] == 50.0 and kinds["cpu_s"] == 11.0


def test_accounting_without_its_tools_is_a_clear_error_before_anything_runs(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--accounting", "--out", str(tmp_path / "kept")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": str(tmp_path), "HOME": str(tmp_path)},  # no accton, no dump-acct here
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "--accounting: " in done.stderr
    assert ("not found" in done.stderr) or ("needs root" in done.stderr)
    assert not (tmp_path / "kept").exists()  # nothing ran
