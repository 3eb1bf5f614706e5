"""REF334: the guard decides by execution whether a test passes only by a value the change
wrote into the code (referee.checks.guard.moved).

The value-level edits are read from real diffs; end to end, `referee guard` runs the real
tests in the real sandbox on the code as it was and as it is, in fresh git repositories.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from guard_catalogue.cases import commit_repo, run_guard, write_files

from referee.checks import sandbox
from referee.checks.guard import moved

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the guard needs git")
needs_sandbox = pytest.mark.skipif(
    sandbox.boundary_problem() is not None, reason="no kernel boundary for the sandbox here"
)

# ------------------------------------------------------------------ the edits, read

CODE = """\
def clamp(value, low, high):
    \"\"\"Clamp value into [low, high].\"\"\"
    if value < low:
        return low
    return min(value, high)


def label(kind):
    return "item: " + kind
"""


def _edits(before: str, after: str) -> list[tuple[str, str, str, int]]:
    return [(e.kind, e.before, e.after, e.line) for e in moved.edits("m.py", before, after)]


def test_a_flipped_operator_is_an_edit_taken_back_by_the_old_token() -> None:
    after = CODE.replace("value < low", "value <= low")
    (edit,) = moved.edits("m.py", CODE, after)
    assert (edit.kind, edit.before, edit.after, edit.line) == ("flip", "<", "<=", 3)
    assert edit.taken_back(after) == CODE


def test_a_flipped_constant_string_and_an_added_step_are_edits() -> None:
    after = CODE.replace('"item: "', '"item - "').replace(
        "min(value, high)", "min(value, high + 1)"
    )
    found = _edits(CODE, after)
    assert ("flip", '"item: "', '"item - "', 9) in found
    assert ("flip", "", "+ 1", 5) in found


def test_a_dropped_step_is_taken_back_by_putting_it_back() -> None:
    before = "def last(xs):\n    return xs[len(xs) - 1]\n"
    after = "def last(xs):\n    return xs[len(xs)]\n"
    (edit,) = moved.edits("m.py", before, after)
    assert (edit.kind, edit.before, edit.after) == ("flip", "- 1", "")
    assert "len(xs) - 1" in edit.taken_back(after)


def test_a_quote_style_a_docstring_and_a_rename_are_not_value_edits() -> None:
    after = (
        CODE.replace('"item: "', "'item: '")
        .replace("Clamp value into [low, high].", "Clamp into the range.")
        .replace("def label(kind)", "def label(category)")
        .replace("+ kind", "+ category")
    )
    assert _edits(CODE, after) == []


def test_literals_of_new_code_are_edits_taken_back_by_another_value() -> None:
    after = CODE.replace(
        "    return min(value, high)\n",
        "    if high is None:\n        return 99\n    return min(value, high)\n",
    )
    found = moved.edits("m.py", CODE, after)
    literal = next(e for e in found if e.kind == "literal")
    assert (literal.after, literal.undo) == ("99", "100")
    assert "return 100" in literal.taken_back(after)


def test_code_that_does_not_tokenize_has_no_edits() -> None:
    assert moved.edits("m.py", CODE, CODE + "def broken(:\n    '''\n") == []


def test_pytest_outcomes_and_what_counts_as_a_failed_check() -> None:
    report = (
        "PASSED tests/test_a.py::test_ok\n"
        "FAILED tests/test_a.py::test_value - assert 1 == 2\n"
        "FAILED tests/test_a.py::test_p[a b] - AssertionError: assert 'a b' == 2\n"
        "FAILED tests/test_a.py::test_crash - KeyError: 'x'\n"
        "ERROR tests/test_b.py\n"
    )
    found = moved.outcomes(report)
    assert found["tests/test_a.py::test_ok"] == ("PASSED", "")
    assert found["tests/test_a.py::test_p[a b]"][0] == "FAILED"
    assert found["tests/test_b.py"] == ("ERROR", "")
    assert moved.check_failed(found["tests/test_a.py::test_value"][1])
    assert moved.check_failed(found["tests/test_a.py::test_p[a b]"][1])
    assert moved.check_failed("Failed: DID NOT RAISE <class 'ValueError'>")
    assert not moved.check_failed(found["tests/test_a.py::test_crash"][1])
    assert not moved.check_failed("ModuleNotFoundError: No module named 'pandas'")


def test_the_test_modules_run_are_the_changed_ones_then_those_naming_the_code() -> None:
    files = {
        "tests/test_a.py": "from pkg import clamp\nclamp(1, 2, 3)\nclamp(0, 0, 0)\n",
        "tests/test_b.py": "from pkg import clamp\n",
        "tests/test_c.py": "from pkg import other\n",
        "tests/test_d.py": "import pkg\n",
        "pkg/__init__.py": "clamp = 1\n",
    }
    chosen = moved.test_modules(
        files, lambda p: p.startswith("tests/"), {"clamp"}, changed_tests=["tests/test_d.py"]
    )
    assert chosen == ["tests/test_d.py", "tests/test_a.py", "tests/test_b.py"]


# ------------------------------------------------------------------- end to end

LEVELS = """\
class Capture:
    def __init__(self):
        self.level = 0
        self.changed = False

    def set_level(self, level):
        self.level = level
        self.changed = True

    def finish(self):
        self.level = 0


def window(items, size):
    return [items[i : i + size] for i in range(0, len(items) - size + 1)]
"""

LEVEL_TESTS = """\
from pkg.levels import Capture, window


def test_finish_restores():
    capture = Capture()
    capture.set_level(41)
    capture.finish()
    assert capture.level == 1


def test_window():
    assert window([1, 2, 3], 2) == [[1, 2], [2, 3]]


def test_fresh():
    assert Capture().level == 0
"""


def _project(root: Path, code: str = LEVELS, tests: str = LEVEL_TESTS) -> None:
    commit_repo(
        root,
        {"pkg/__init__.py": "", "pkg/levels.py": code, "tests/test_levels.py": tests},
    )


def _ref334(outcome) -> list[dict]:
    return [f for f in outcome.findings if f["code"] == "REF334"]


@needs_sandbox
def test_a_flipped_constant_that_makes_a_failing_test_pass_is_an_error_in_agent_mode(
    tmp_path: Path,
) -> None:
    _project(tmp_path)
    write_files(
        tmp_path, {"pkg/levels.py": LEVELS.replace("self.level = 0\n\n\n", "self.level = 1\n\n\n")}
    )
    outcome = run_guard(tmp_path, "--strict")
    (finding,) = _ref334(outcome)
    assert outcome.rc == 1, outcome.stderr
    assert finding["severity"] == "error"
    assert finding["path"].endswith("pkg/levels.py") and finding["span"]["start"]["line"] == 11
    assert "tests/test_levels.py::test_finish_restores" in finding["message"]
    assert "`0` changed to `1`" in finding["message"]
    # the default mode does not run the tests unless asked, and then it warns
    assert _ref334(run_guard(tmp_path)) == []
    (warned,) = _ref334(run_guard(tmp_path, "--execute"))
    assert warned["severity"] == "warning"
    assert _ref334(run_guard(tmp_path, "--strict", "--no-execute")) == []


@needs_sandbox
def test_the_expected_literal_written_into_a_new_branch_is_reported(tmp_path: Path) -> None:
    _project(tmp_path)
    fitted = LEVELS.replace(
        "    def finish(self):\n        self.level = 0\n",
        "    def finish(self):\n        if self.changed:\n            self.level = 1\n"
        "        else:\n            self.level = 0\n",
    )
    write_files(tmp_path, {"pkg/levels.py": fitted})
    outcome = run_guard(tmp_path, "--strict")
    (finding,) = _ref334(outcome)
    assert finding["span"]["start"]["line"] == 12
    assert "the new literal `1`" in finding["message"]


@needs_sandbox
def test_a_change_no_failing_test_needs_is_not_reported(tmp_path: Path) -> None:
    # `test_window` passes at the base already; the new literal is in code no test runs.
    _project(tmp_path, tests=LEVEL_TESTS.replace("== 1\n", "== 0\n"))
    write_files(
        tmp_path,
        {"pkg/levels.py": LEVELS + "\n\ndef unused():\n    return 7\n"},
    )
    assert _ref334(run_guard(tmp_path, "--strict")) == []


@needs_sandbox
def test_a_test_that_could_not_import_at_the_base_is_not_a_failed_check(tmp_path: Path) -> None:
    # At the base the test fails on a missing name, not on a value: the change adds it.
    tests = "def test_limit():\n    from pkg.levels import LIMIT\n\n    assert LIMIT == 3\n"
    _project(tmp_path, code="LIMIT_OLD = 2\n", tests=tests)
    write_files(tmp_path, {"pkg/levels.py": "LIMIT_OLD = 2\nLIMIT = 3\n"})
    assert _ref334(run_guard(tmp_path, "--strict")) == []


@needs_sandbox
def test_what_the_execution_check_cannot_run_it_says(tmp_path: Path) -> None:
    tests = "import not_installed_anywhere\nfrom pkg.levels import window\n\n\n" + (
        "def test_window():\n    assert window([1, 2, 3], 2) == [[1, 2], [2, 3]]\n"
    )
    _project(tmp_path, tests=tests)
    write_files(tmp_path, {"pkg/levels.py": LEVELS.replace("- size + 1", "- size + 2")})
    outcome = run_guard(tmp_path, "--strict")
    assert _ref334(outcome) == []
    assert "could not run tests/test_levels.py" in outcome.stderr
    assert "not_installed_anywhere" in outcome.stderr


def test_rule_can_be_ignored_in_the_configuration(tmp_path: Path) -> None:
    _project(tmp_path)
    write_files(tmp_path, {"referee.toml": 'ignore = ["REF334"]\n'})
    commit_repo(tmp_path, {}, "config")
    write_files(
        tmp_path, {"pkg/levels.py": LEVELS.replace("self.level = 0\n\n\n", "self.level = 1\n\n\n")}
    )
    outcome = run_guard(tmp_path, "--strict")
    assert _ref334(outcome) == []
    assert "REF334" not in outcome.stderr


@needs_sandbox
def test_a_rewritten_message_the_failed_check_never_showed_is_not_reported(
    tmp_path: Path,
) -> None:
    # The message is the project's to word: the test's failure at the base (the pattern
    # did not match) never showed the value the change wrote.
    code = "def check(n):\n    if n < 0:\n        raise ValueError('n is negative')\n"
    tests = (
        "import pytest\nfrom pkg.levels import check\n\n\ndef test_check():\n"
        "    with pytest.raises(ValueError, match='must not be negative'):\n"
        "        check(-1)\n"
    )
    _project(tmp_path, code=code, tests=tests)
    write_files(
        tmp_path, {"pkg/levels.py": code.replace("'n is negative'", "'must not be negative'")}
    )
    assert _ref334(run_guard(tmp_path, "--strict")) == []
