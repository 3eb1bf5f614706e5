"""The benchmarks' run history: every bench/results/history-*.json is a list of runs that
say when, at which commit and by which command they were measured, and a script's run is
appended to its area's file (bench/_results.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import _results  # noqa: E402

HISTORIES = sorted((ROOT / "bench" / "results").glob("history-*.json"))


def test_there_is_a_history_for_each_area_of_the_benchmarks_page() -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert len(HISTORIES) >= 12
    for path in HISTORIES:
        assert path.name in page, f"docs/benchmarks.md does not name {path.name}"


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.name)
def test_a_history_is_a_list_of_dated_runs_with_their_command(path: Path) -> None:
    runs = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(runs, list) and runs
    for run in runs:
        assert {"date", "commit", "command", "figures"} <= set(run), run.get("subject")
        assert run["command"] and isinstance(run["figures"], dict)
        for table in run["figures"].get("tables", []):
            # as the page printed them: a row may be shorter than the header, never empty
            assert table["columns"] and all(table["rows"]), table


def test_record_appends_a_run_with_its_date_commit_and_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_results, "RESULTS", tmp_path)
    monkeypatch.delenv("REFEREE_BENCH_RECORD", raising=False)
    first = _results.record("speed", {"median_s": 1.5}, ["--repeat", "3"])
    second = _results.record("speed", {"median_s": 1.4}, [])
    assert first == second == tmp_path / "history-speed.json"
    runs = json.loads(first.read_text(encoding="utf-8"))
    assert [r["figures"] for r in runs] == [{"median_s": 1.5}, {"median_s": 1.4}]
    assert runs[0]["command"].endswith("--repeat 3")
    assert runs[0]["date"].endswith("Z") and "commit" in runs[0]  # None outside a checkout
    # the machine, since timings compare only between runs on the same kind of CPU
    assert runs[0]["machine"] == _results.machine()
    assert runs[0]["machine"]["cores"] >= 1 and runs[0]["machine"]["cpu"]


def test_the_machine_says_whether_the_cpu_has_amx() -> None:
    with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        has_amx = " amx_tile" in cpuinfo.read()
    info = _results.machine()
    assert info["amx"] is has_amx
    assert ("AMX" in _results.describe_machine(info)) is has_amx


def test_record_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_results, "RESULTS", tmp_path)
    monkeypatch.setenv("REFEREE_BENCH_RECORD", "0")
    assert _results.record("speed", {"median_s": 1.5}) is None
    assert not list(tmp_path.iterdir())


def test_a_path_beside_the_checkout_is_recorded_as_a_placeholder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """.ci/run refuses any file naming a path up out of the checkout (a clone has nothing
    beside it), so the history says PATH where the run was given one."""
    monkeypatch.chdir(_results.ROOT)
    outside = "../" * (len(_results.ROOT.parts) + 1) + "data/recipe"
    line = _results.command_line(["--recipe", outside, "--into", "../" + _results.ROOT.name])
    assert line.endswith("--recipe PATH --into ../" + _results.ROOT.name)
