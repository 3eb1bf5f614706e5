"""Reading a failing test's run right in projects whose fixtures and tests get in the
recorder's way: a replaced ``os.environ``, a changed directory, a mocked ``open``,
``print``, ``time.time`` or ``os.path``, class-based parametrized tests with unicode and
spaces in their ids, and node ids spelled differently from pytest's.

Real pytest runs, the real sandbox; the truth is a doctest, so no model is needed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_arbitration import project, run

from referee.checks.arbitration import OUT_ENV
from referee.checks.arbitration.failing import ArbitrationError, failing_record
from referee.checks.arbitration.observe import (
    TestRun,
    node_id,
    run_tests,
    same_test,
    summary,
)

DOCTESTED = '''def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains.

    >>> count_vowels("aeiou")
    5
    """
    return sum(1 for ch in text.lower() if ch in "aeiou")
'''


def _decided(root: Path, test_id: str) -> None:
    verdict = run(root, test_id, None).verdict
    assert verdict.verdict == "TEST_WRONG", verdict.reason
    assert (verdict.produced, verdict.asserted, verdict.truth) == ("5", "4", "5")


def test_a_conftest_that_replaces_os_environ_and_moves_away_does_not_blind_the_recorder(
    tmp_path: Path,
):
    tests = (
        "from text import count_vowels\n\n\n"
        'def test_vowels():\n    assert count_vowels("aeiou") == 4\n'
    )
    root = project(tmp_path / "p", DOCTESTED, tests)
    (root / "tests" / "conftest.py").write_text(
        "import os\n\nimport pytest\n\n\n"
        "@pytest.fixture(autouse=True)\n"
        "def clean_env(monkeypatch, tmp_path):\n"
        '    monkeypatch.setattr("os.environ", {"HOME": "/nowhere"})\n'
        "    monkeypatch.chdir(tmp_path)\n",
        encoding="utf-8",
    )
    _decided(root, "tests/test_text.py::test_vowels")


@pytest.mark.parametrize(
    "patching",
    [
        # active until teardown, after the report hook ran
        'monkeypatch.setattr(builtins, "open", mock.Mock(side_effect=OSError("no files")))',
        'mock.patch("builtins.open", side_effect=OSError("no files")).start()',
        'monkeypatch.setattr(builtins, "print", mock.Mock(side_effect=RuntimeError))',
        'monkeypatch.setattr(time, "time", mock.Mock(side_effect=RuntimeError))',
        'mock.patch("os.path.exists", return_value=False).start()',
        'monkeypatch.setattr(json, "dumps", mock.Mock(side_effect=RuntimeError))',
    ],
)
def test_a_test_that_mocks_open_print_time_or_os_path_is_still_read(tmp_path: Path, patching: str):
    tests = (
        "import builtins, json, os, time\nfrom unittest import mock\n\n"
        "from text import count_vowels\n\n\n"
        "def test_vowels(monkeypatch):\n"
        f"    {patching}\n"
        '    assert count_vowels("aeiou") == 4\n'
    )
    root = project(tmp_path / "p", DOCTESTED, tests)
    _decided(root, "tests/test_text.py::test_vowels")
    assert "INTERNALERROR" not in run_tests(root, ["tests/test_text.py::test_vowels"]).output


def test_a_test_decorated_with_mock_patch_of_open_is_read(tmp_path: Path):
    tests = (
        "from unittest import mock\n\nfrom text import count_vowels\n\n\n"
        '@mock.patch("builtins.open", side_effect=OSError("no files"))\n'
        "def test_vowels(_open):\n"
        '    assert count_vowels("aeiou") == 4\n'
    )
    root = project(tmp_path / "p", DOCTESTED, tests)
    _decided(root, "tests/test_text.py::test_vowels")


def test_class_based_parametrized_cases_with_unicode_and_spaces_in_their_ids(tmp_path: Path):
    tests = (
        "import pytest\n\nfrom text import count_vowels\n\n\n"
        "class TestVowels:\n"
        "    @pytest.mark.parametrize(\n"
        '        "text, want",\n'
        '        [("xyz", 0), pytest.param("aeiou", 4, id="café au lait")],\n'
        "    )\n"
        "    def test_vowels(self, text, want):\n"
        "        assert count_vowels(text) == want\n"
    )
    root = project(tmp_path / "p", DOCTESTED, tests)
    # as a person writes it, as pytest spells it, and with the path said another way
    for test_id in (
        "tests/test_text.py::TestVowels::test_vowels[café au lait]",
        "tests/test_text.py::TestVowels::test_vowels[caf\\xe9 au lait]",
        "./tests/../tests/test_text.py::TestVowels::test_vowels[café au lait]",
    ):
        result = run(root, test_id, None)
        verdict = result.verdict
        assert verdict.verdict == "TEST_WRONG", (test_id, verdict.reason)
        assert verdict.test_id == "tests/test_text.py::TestVowels::test_vowels[caf\\xe9 au lait]"
        assert verdict.observation.expected_site == "parametrize"
        assert 'pytest.param("aeiou", 5, id="café au lait")' in result.new_text


def test_node_ids_are_compared_as_pytest_spells_them():
    assert node_id("./tests/../tests/t.py::T::test_x[é]") == "tests/t.py::T::test_x[\\xe9]"
    assert node_id("tests/t.py::test_x[a b]") == "tests/t.py::test_x[a b]"
    assert same_test("tests/t.py::test_x[\\xe9]", "tests/t.py::test_x[é]")
    assert same_test("tests/t.py::test_x[1-2]", "./tests/t.py::test_x")
    assert not same_test("tests/t.py::test_x[1-2]", "tests/t.py::test_x[1]")
    assert not same_test("tests/t.py::test_xy", "tests/t.py::test_x")


def test_a_failure_pytest_reports_is_never_ran_no_test(tmp_path: Path):
    """What pytest's summary says failed, with nothing recorded, is said as exactly that —
    with what the recorder noted — not as a test that did not run."""
    tests = "def test_x():\n    assert 1 == 2\n\n\ndef test_y():\n    pass\n"
    root = project(tmp_path / "p", DOCTESTED, tests)
    (tmp_path / "records").mkdir()  # the recorder's file is a directory: every write fails
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "referee.checks.arbitration.plugin",  # the installed module, run in place
            "-q",
            "-rfE",
            "-p",
            "no:cacheprovider",
            "tests/test_text.py",
        ],
        cwd=root,
        env={**os.environ, OUT_ENV: str(tmp_path / "records")},
        capture_output=True,
        text=True,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert "INTERNALERROR" not in output and "1 failed, 1 passed" in output
    reported, notes = summary(output)
    assert reported == ["tests/test_text.py::test_x - assert 1 == 2"]
    assert len(notes) == 2 and notes[0].startswith(
        "tests/test_text.py::test_x: recording the call report: IsADirectoryError"
    )
    ran = TestRun([], proc.returncode, output, reported_failed=reported, recorder_notes=notes)
    with pytest.raises(ArbitrationError) as raised:
        failing_record(ran, "./tests/test_text.py::test_x", root / "tests" / "test_text.py")
    message = str(raised.value)
    assert message.startswith(
        "pytest reports tests/test_text.py::test_x failed but referee's recorder saw nothing: "
        "tests/test_text.py::test_x: recording the call report: IsADirectoryError"
    ), message
    assert "ran no test" not in message


def test_a_summary_line_whose_parameter_id_holds_a_dash_is_matched():
    ran = TestRun([], 1, "", reported_failed=["tests/t.py::test_x[a - b] - assert 1 == 2"])
    assert ran.reported("tests/t.py::test_x[a - b]") == ["tests/t.py::test_x[a - b]"]
    assert ran.reported("tests/t.py::test_x") == ["tests/t.py::test_x[a - b]"]
    assert ran.reported("tests/t.py::test_y") == []


def test_one_failing_unittest_equality_is_one_comparison(tmp_path: Path):
    """assertEqual hands two strings to assertMultiLineEqual and two lists to
    assertListEqual, all three wrapped: the failure is recorded once, by the outermost."""
    root = tmp_path / "p"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_x.py").write_text(
        "import unittest\n\n\nclass T(unittest.TestCase):\n"
        "    def test_text(self):\n        self.assertEqual('a\\nb', 'a\\nc')\n\n"
        "    def test_list(self):\n        self.assertEqual([1], [2])\n\n"
        "    def test_direct(self):\n        self.assertMultiLineEqual('a', 'b')\n",
        encoding="utf-8",
    )
    ran = run_tests(root, ["tests/test_x.py"], python=None)
    calls = {r.nodeid.rsplit("::", 1)[1]: r for r in ran.records if r.when == "call"}
    assert {name: len(r.comparisons) for name, r in calls.items()} == {
        "test_text": 1,
        "test_list": 1,
        "test_direct": 1,
    }, ran.tail()
    text, listed = calls["test_text"].comparisons[0], calls["test_list"].comparisons[0]
    assert (text["op"], text["left"], text["right"]) == ("==", repr("a\nb"), repr("a\nc"))
    assert (listed["left"], listed["right"]) == ("[1]", "[2]")
