"""The real-history arbitration bench: the miner finds both kinds of case in a repository
built here with real git, and the scorer reads verdict JSON as the docs say."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import arbitration_real  # noqa: E402
import mine_arbitration  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid",
         "-c", "commit.gpgsign=false", *args],
        cwd=repo, check=True, capture_output=True,
    )  # fmt: skip


def _commit(repo: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)


BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
FIXED = BUGGY.replace("a - b", "a + b")
TESTS = "from calc import add, mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 5\n"
TESTS_ADD = TESTS + "\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.mark.slow
def test_the_miner_finds_a_real_bug_and_a_wrong_test(tmp_path: Path) -> None:
    repo = tmp_path / "calc"
    repo.mkdir()
    _git(repo, "init", "-q")
    _commit(repo, {"calc.py": BUGGY, "tests/test_calc.py": TESTS, "CHANGES.txt": "1.0\n"}, "start")
    # fixes the bug and adds the test that shows it; the changelog tells the fix
    _commit(
        repo,
        {"calc.py": FIXED, "tests/test_calc.py": TESTS_ADD, "CHANGES.txt": "1.1: add adds\n"},
        "add adds",
    )
    # test-only: the expected value of test_mul was wrong
    _commit(repo, {"tests/test_calc.py": TESTS_ADD.replace("== 5\n\n", "== 6\n\n", 1)}, "6")
    out = tmp_path / "corpus"
    assert (
        mine_arbitration.main(
            [str(repo), "--out", str(out), "--commits", "10", "--python", sys.executable]
        )
        == 0
    )

    cases = {c["kind"]: c for c in (json.loads(p.read_text()) for p in out.glob("*/case.json"))}
    assert set(cases) == {"real-bug", "wrong-test"}
    bug, wrong = cases["real-bug"], cases["wrong-test"]
    assert (bug["node"], bug["expected"]) == ("tests/test_calc.py::test_add", "SOURCE_WRONG")
    assert bug["source_files"] == ["calc.py"] and bug["test_files"] == ["tests/test_calc.py"]
    tree = out / bug["id"] / "tree"
    assert (tree / "calc.py").read_text() == BUGGY  # the parent's source
    assert (tree / "tests/test_calc.py").read_text() == TESTS_ADD  # the commit's tests
    assert (tree / "CHANGES.txt").read_text() == "1.0\n"  # the fix is not told
    assert (wrong["node"], wrong["expected"]) == ("tests/test_calc.py::test_mul", "TEST_WRONG")
    assert wrong["literals"] == [
        {"test": "tests/test_calc.py::test_mul", "line": 5, "old": "5", "new": "6"}
    ]
    assert (out / wrong["id"] / "tree" / "tests/test_calc.py").read_text() == TESTS_ADD
    report = json.loads((out / "mining-report.json").read_text())
    assert report["calc"]["real-bug"]["cases"] == report["calc"]["wrong-test"]["cases"] == 1


def test_a_literal_change_outside_an_assertion_is_not_a_wrong_test() -> None:
    import ast

    def changed(old: str, new: str) -> list:
        return mine_arbitration.literal_only_change(ast.parse(old).body[0], ast.parse(new).body[0])

    assert changed("def t():\n    assert f(1) == 2\n", "def t():\n    assert f(1) == 3\n")
    assert changed(
        "def t(self):\n    self.assertEqual(f(), 'a')\n",
        "def t(self):\n    self.assertEqual(f(), 'b')\n",
    )
    assert changed(
        "def t():\n    expected = 1\n    assert f() == expected\n",
        "def t():\n    expected = 2\n    assert f() == expected\n",
    )
    assert not changed(
        "def t():\n    x = 1\n    assert f(x) == 2\n", "def t():\n    x = 4\n    assert f(x) == 2\n"
    )
    assert not changed("def t():\n    assert f(1) == 2\n", "def t():\n    assert g(1) == 2\n")


def _verdict(name: str, reason: str = "") -> dict:
    return {"verdict": name, "reason": reason}


def test_the_scorer_classifies_verdicts() -> None:
    classify = arbitration_real.classify
    right = classify("real-bug", _verdict("SOURCE_WRONG"), ["src/pkg/mod.py"], True)
    assert (
        right["outcome"] == "right" and right["fix_passes"] and not right["test_edit_on_real_bug"]
    )
    # decided right, but the fix leaves the test red: not a passing fix
    assert not classify("real-bug", _verdict("SOURCE_WRONG"), ["pkg/mod.py"], False)["fix_passes"]
    blamed = classify("real-bug", _verdict("TEST_WRONG"), ["tests/test_mod.py"], True)
    assert blamed["outcome"] == "wrong-blame" and blamed["test_edit_on_real_bug"]
    assert not blamed["fix_passes"]
    unclear = classify("real-bug", _verdict("UNCLEAR", "the oracles disagree"), [], None)
    assert (unclear["outcome"], unclear["reason"]) == ("unclear", "the oracles disagree")
    # referee's own files (its config, a certificate) are not an edit of either side
    own = classify("wrong-test", _verdict("TEST_WRONG"), ["referee.toml", "tests/test_m.py"], True)
    assert own["outcome"] == "right" and own["test_fix_passes"] and own["source_edits"] == []
    assert (
        classify("wrong-test", _verdict("SOURCE_WRONG"), ["m.py"], True)["outcome"] == "wrong-blame"
    )
    failure = {"ok": False, "error": "no such test", "exit_status": 2}
    assert classify("real-bug", failure, [], None)["outcome"] == "error"
    assert (
        classify("real-bug", None, [], None, "timed out after 300 s")["error"]
        == "timed out after 300 s"
    )


def test_totals_and_percentiles() -> None:
    rows = [
        {"kind": "real-bug", "seconds": float(s), **arbitration_real.classify("real-bug", v, c, p)}
        for s, v, c, p in [
            (10, _verdict("SOURCE_WRONG"), ["m.py"], True),
            (20, _verdict("UNCLEAR", "no call to isolate in this test"), [], None),
            (30, _verdict("TEST_WRONG"), ["tests/test_m.py"], False),
            (40, None, [], None),
        ]
    ]
    totals = arbitration_real.totals(rows)
    real = totals["real-bug"]
    assert (real["cases"], real["right"], real["unclear"], real["wrong_blame"], real["errors"]) == (
        4,
        1,
        1,
        1,
        1,
    )
    assert (real["test_edits_on_real_bugs"], real["source_fixes_passing"]) == (1, 1)
    assert (real["p50_s"], real["p90_s"]) == (20.0, 28.0)  # errors are not timed
    assert totals["wrong-test"]["cases"] == 0
    assert arbitration_real.grouped(rows, "reason", "unclear") == [
        ("no call to isolate in this test", 1)
    ]
    same = [
        {"outcome": "unclear", "reason": "cannot isolate: line 76 of test_negative is not"},
        {"outcome": "unclear", "reason": "cannot isolate: line 101 of test_sized is not"},
    ]
    assert arbitration_real.grouped(same, "reason", "unclear") == [
        ("cannot isolate: line N of test_… is not", 2)
    ]
    table = arbitration_real.render({"totals": totals, "cases": rows})
    assert "| real-bug | 4 | 1 | 1 | 1 | 1 | 1 | 1 | 20.0 | 28.0 |" in table


def test_a_src_layout_case_imports_its_own_package_first(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    conftest = tmp_path / "conftest.py"
    conftest.write_text('"""Doc."""\nfrom __future__ import annotations\n\nX = 1\n')
    arbitration_real.src_first(tmp_path)
    lines = conftest.read_text().splitlines()
    assert lines[:2] == ['"""Doc."""', "from __future__ import annotations"]
    assert any("sys.path.insert(0" in line for line in lines[2:6]) and lines[-1] == "X = 1"
    compile(conftest.read_text(), "conftest.py", "exec")  # the future import stays first


def test_a_case_of_a_package_pytest_imports_itself_is_left_out(tmp_path: Path) -> None:
    # pytest has imported `packaging` before any conftest.py can put the case's copy first
    for name, package in (("pk-1-real-bug", "src/packaging"), ("calc-1-real-bug", "src/calc")):
        case = tmp_path / name
        (case / "tree" / package).mkdir(parents=True)
        (case / "tree" / package / "__init__.py").write_text("", encoding="utf-8")
        case_json = {"id": name, "kind": "real-bug", "node": "tests/test_x.py::test_x"}
        (case / "case.json").write_text(json.dumps(case_json), encoding="utf-8")
    assert [c["id"] for c in arbitration_real.load_cases(tmp_path, [], None)] == ["calc-1-real-bug"]


def test_a_case_runs_in_its_projects_own_environment_when_one_is_given(tmp_path: Path) -> None:
    # --venvs DIR: DIR/<repo>/.venv/bin/python is the case's interpreter, named in the
    # case's referee.toml; the project's pytest plugins load (no autoload switch) there.
    venvs = tmp_path / "checkouts"
    python = venvs / "calc" / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    case = {"id": "calc-1-real-bug", "repo": "calc", "dir": str(tmp_path / "case")}
    (tmp_path / "case" / "tree").mkdir(parents=True)
    (tmp_path / "case" / "tree" / "calc.py").write_text(BUGGY, encoding="utf-8")
    assert arbitration_real.case_python(case, venvs) == python
    assert arbitration_real.case_python({**case, "repo": "other"}, venvs) is None
    assert arbitration_real.case_python(case, None) is None

    work = tmp_path / "work"
    arbitration_real.prepare(case, work, 5.0, python)
    config = (work / "referee.toml").read_text(encoding="utf-8")
    assert config.splitlines()[0] == f"python = {json.dumps(str(python))}"
    assert "time-budget = 5.0" in config
    from referee.checks.config import discover

    assert discover(work).config.python == str(python)  # the setting referee reads

    own = arbitration_real.referee_env(tmp_path / "cache", own_environment=True)
    assert "PYTEST_DISABLE_PLUGIN_AUTOLOAD" not in own and "VIRTUAL_ENV" not in own
    assert arbitration_real.referee_env(tmp_path / "cache")["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
