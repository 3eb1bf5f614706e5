"""The demo project in examples/demo: every rule fires where it should and nowhere else."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from referee.checks.registry import GUARD_CODES, MODEL_CODES, RULES

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"

# (file, line, code): the complete list. A finding missing here is a false negative, an
# extra one a false positive; tests/test_vowels.py::test_count_vowels (a wrong expected
# value) is deliberately absent — deciding that needs arbitration, not a shape rule.
EXPECTED = {
    ("docs/changelog.md", 1, "REF103"),
    ("docs/faq.md", 9, "REF204"),
    ("docs/usage.md", 1, "REF201"),
    ("docs/usage.md", 1, "REF202"),
    ("docs/usage.md", 1, "REF203"),
    ("docs/usage.md", 1, "REF205"),
    ("docs/usage.md", 5, "REF102"),
    ("reports/empty.md", 1, "REF104"),
    ("reports/release-check.log", 3, "REF209"),
    ("reports/summary.txt", 1, "REF105"),
    ("reports/summary.txt", 1, "REF206"),
    ("reports/test-run.log", 3, "REF130"),
    ("tests/test_stats.py", 1, "REF208"),
    ("tests/test_vowels.py", 14, "REF110"),
    ("tests/test_vowels.py", 19, "REF111"),
    ("tests/test_vowels.py", 23, "REF112"),
    ("tests/test_vowels.py", 28, "REF113"),
    ("tests/test_vowels.py", 32, "REF114"),
    ("tests/test_vowels.py", 35, "REF110"),
    ("tests/test_vowels.py", 38, "REF115"),
    ("tests/test_vowels.py", 41, "REF120"),
    ("tests/test_vowels.py", 48, "REF121"),
    ("tests/test_vowels.py", 53, "REF101"),
    ("tests/test_vowels.py", 58, "REF116"),
    ("tests/test_vowels.py", 61, "REF117"),
    ("textkit/broken.py", 4, "REF001"),
    ("textkit/stats.py", 1, "REF207"),
    ("textkit/stats.py", 9, "REF101"),
    ("textkit/vowels.py", 13, "REF101"),
    ("textkit/vowels.py", 15, "REF102"),
}


def _check_demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "referee", "check", "--no-cache", str(DEMO), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_each_rule_fires_where_it_should_and_nowhere_else() -> None:
    proc = _check_demo("--format", "json")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    found = {
        (
            Path(f["path"]).resolve().relative_to(DEMO).as_posix(),
            f["span"]["start"]["line"],
            f["code"],
        )
        for f in report["findings"]
    }
    assert found - EXPECTED == set(), "false positives"
    assert EXPECTED - found == set(), "false negatives"


def test_demo_exercises_every_rule() -> None:
    """Every rule but the guard's, which needs a git baseline (tests/test_guard.py), and
    the model layers', which need a model (tests/test_judge_model.py)."""
    assert {code for _, _, code in EXPECTED} == {
        rule.code for rule in RULES if rule.code not in GUARD_CODES | MODEL_CODES
    }


def test_wrong_assertion_in_demo_is_not_a_shape_finding() -> None:
    proc = _check_demo("--format", "json")
    lines = {
        f["span"]["start"]["line"]
        for f in json.loads(proc.stdout)["findings"]
        if f["path"].endswith("test_vowels.py")
    }
    assert 11 not in lines  # assert count_vowels("aeiou") == 4
    assert 'count_vowels("aeiou") == 4' in (DEMO / "tests" / "test_vowels.py").read_text()


def test_text_output_is_ruff_like_and_exit_status_is_one() -> None:
    proc = _check_demo()
    assert proc.returncode == 1
    first = proc.stdout.splitlines()[0]
    path, line, column, rest = first.split(":", 3)
    assert path.endswith("docs/changelog.md")
    assert (line, column) == ("1", "1")
    assert rest.startswith(" REF103 ")
    summary, hint = proc.stdout.rstrip().splitlines()[-2:]
    assert summary.startswith("Found 31 findings")
    assert hint == "No safe fixes; 3 unsafe fixes can be applied with --fix --unsafe-fixes."
