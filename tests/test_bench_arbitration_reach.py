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


def test_a_call_through_a_name_imported_from_the_project_decides_which_side_is_under_test(
    tmp_path: Path, monkeypatch
):
    project = tmp_path / "seqs-project"
    (project / "src" / "seqs").mkdir(parents=True)
    (project / "src" / "seqs" / "__init__.py").write_text("", encoding="utf-8")
    (project / "tests").mkdir()
    (project / "tests" / "test_seqs.py").write_text(
        "import os\n"
        "import seqs.more as sm\n"
        "from seqs import *\n"
        "from os.path import join\n\n\n"
        "def test_star():\n"
        '    assert list(interleave("ab", "cd")) == list("acbd")\n\n\n'
        "def test_alias():\n"
        "    assert sm.chunked([1, 2], 1) == list(([1], [2]))\n\n\n"
        "def test_neither_is_ours():\n"
        '    assert join("a", "b") == os.path.join("a", "b")\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("REFEREE_BENCH_RECORD", "0")
    text = (project / "tests" / "test_seqs.py").read_text(encoding="utf-8")
    modules = arbitration_reach._project_modules(project)
    assert modules == {"seqs"}
    assert arbitration_reach.project_callees(text, modules) == {"interleave", "sm.chunked"}

    def tally(*flags: str) -> dict[str, int]:
        out = tmp_path / f"reach{len(flags)}.json"
        assert arbitration_reach.main([str(project), "--json", str(out), *flags]) == 0
        return json.loads(out.read_text(encoding="utf-8"))["projects"]["seqs-project"]

    with_imports = tally()
    # the other side is what the test expects: a value it computes (never edited)
    assert with_imports["isolated: computed-expected"] == 2, with_imports
    refused = {k: v for k, v in with_imports.items() if not k.startswith("isolated")}
    assert refused == {"neither side of the comparison calls one of the project's functions": 1}
    syntax_alone = tally("--no-imports")
    assert not any(k.startswith("isolated") for k in syntax_alone), syntax_alone
