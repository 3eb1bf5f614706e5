"""The reach bench: every assertion of a project's tests, taken apart or counted under the
reason it is not, as ``isolate`` says for each."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import arbitration_reach  # noqa: E402

TESTS = """import pytest
from calc import add, total


def test_plain():
    assert add(1, 2) == 3


@pytest.mark.parametrize("a, b, want", [(1, 2, 3), (2, 2, 4)])
def test_cases(a, b, want):
    assert add(a, b) == want


def test_state(thing):
    assert thing.count == 2


class TestTotal:
    def test_total(self):
        self.assertEqual(total([1, 2]), 3)
"""


def test_each_assertion_is_counted_once_under_its_forms_or_its_reason(tmp_path: Path, monkeypatch):
    project = tmp_path / "calc-project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_calc.py").write_text(TESTS, encoding="utf-8")
    (project / "tests" / "helpers.py").write_text("assert 1 == 1\n", encoding="utf-8")
    (project / ".venv" / "test_vendored.py").parent.mkdir()
    (project / ".venv" / "test_vendored.py").write_text(TESTS, encoding="utf-8")
    monkeypatch.setenv("REFEREE_BENCH_RECORD", "0")
    out = tmp_path / "reach.json"
    assert arbitration_reach.main([str(project), "--json", str(out)]) == 0
    figures = json.loads(out.read_text(encoding="utf-8"))
    tally = figures["projects"]["calc-project"]
    assert figures["assertions"] == sum(tally.values()) == 4
    assert figures["isolated"] == 3
    assert tally["isolated: plain"] == 1
    assert tally["isolated: parametrize"] == 1
    assert tally["isolated: unittest-method"] == 1
    (refused,) = [key for key in tally if not key.startswith("isolated")]
    assert refused == "neither side of the comparison is a function call"


def test_a_reason_is_counted_without_its_particulars():
    key = arbitration_reach.reason_key(
        "cannot isolate the call under test: an argument `inp` is not a literal, a "
        "parametrized value (a loop) — add a case"
    )
    assert key == "an argument `…` is not a literal, a parametrized value"
