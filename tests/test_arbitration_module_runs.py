"""Arbitration's runs of a project's tests, decided by the tests as the project's own run is.

A project whose pytest ``addopts`` hand the tests to workers: referee keeps the
project's ``addopts`` in the runs it makes (its ``--import-mode`` or ``-p`` can be what
makes the tests import), but a run of one test, or of one module in
the sandbox, must stay in one process and be decided by its tests alone: pytest-xdist's
``-n`` (whose workers the sandbox does not let start) and pytest-cov's
``--cov-fail-under`` (which fails a run of one module whose tests all passed) are turned
off there, in the runs referee makes and nowhere else.

A test module with a test that cannot pass in the sandbox (one that starts a process):
a candidate patch passes the module when every test that fails against it there fails
against the unpatched code there too, and one that failed there passes now.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from guard_catalogue.cases import commit_repo
from red_team.fake_openai import FakeModel

from referee.checks import sandbox
from referee.checks.guard.pytestconfig import alone_args, alone_args_of
from referee.checks.interpreter import find

pytest.importorskip("xdist", reason="the project's addopts name pytest-xdist's -n")

TEXT = '''def count_vowels(text):
    """The number of vowels (a, e, i, o, u) in ``text``.

    >>> count_vowels("banana")
    3
    """
    return sum(1 for c in text{slice}.lower() if c in "aeiou")
'''
TESTS = (
    "from text import count_vowels\n\n\n"
    'def test_vowels():\n    assert count_vowels("{word}") == {expected}\n\n\n'
    'def test_none():\n    assert count_vowels("xyz") == 0\n'
)
PYPROJECT = '[tool.pytest.ini_options]\naddopts = "-n 2 --dist loadfile"\n'


@pytest.mark.parametrize(
    ("addopts", "args"),
    [
        ("", []),
        ("-ra --import-mode=importlib", []),
        ("-n auto", ["-n", "0"]),
        ("-nauto --dist=loadscope", ["-n", "0"]),
        ("--numprocesses=4", ["-n", "0"]),
        ("--cov=pkg --cov-report=term-missing --cov-fail-under=95", ["--no-cov"]),
        ("-n 4 --cov pkg", ["-n", "0", "--no-cov"]),
        ("--no-header", []),  # a long option that starts with "n" is not xdist's
        ("-k 'not slow", []),  # unbalanced quotes: split on spaces
    ],
)
def test_the_options_that_keep_a_run_in_one_process(addopts: str, args: list[str]):
    assert alone_args(addopts) == args


def test_the_options_come_from_the_configuration_pytest_reads_and_the_environment():
    files = {
        "pytest.ini": "[pytest]\naddopts = -ra\n",  # pytest.ini wins over pyproject.toml
        "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-n auto"\n',
    }
    assert alone_args_of(files) == []
    assert alone_args_of(files, "--cov=pkg") == ["--no-cov"]
    del files["pytest.ini"]
    assert alone_args_of(files) == ["-n", "0"]
    assert alone_args_of({"setup.cfg": b"[tool:pytest]\naddopts = --cov pkg\n"}) == ["--no-cov"]


@pytest.fixture
def autoloading(monkeypatch: pytest.MonkeyPatch) -> None:
    """The project's run loads its installed plugins (xdist among referee's own)."""
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)


def _project(root: Path, files: dict[str, str]) -> None:
    commit_repo(root, {"pyproject.toml": PYPROJECT, **files})
    if (problem := sandbox.boundary_problem(python=find(root))) is not None:
        pytest.skip(problem)


def test_a_wrong_test_is_corrected_in_a_project_that_runs_its_tests_on_workers(
    tmp_path: Path, referee, autoloading: None
):
    """The doctest is the truth; the corrected test runs in the sandbox with ``-n 2``
    in the project's addopts. Before, xdist's workers could not start there and the
    correction was never certified."""
    root = tmp_path / "project"
    _project(
        root,
        {
            "referee.toml": "",
            "text.py": TEXT.format(slice=""),
            "tests/test_text.py": TESTS.format(word="banana", expected=2),
        },
    )
    done = referee(
        "arbitrate", "tests/test_text.py::test_vowels", "--apply", "--format", "json", cwd=root
    )
    verdict = json.loads(done.stdout)
    assert verdict["verdict"] == "TEST_WRONG", (verdict["reason"], done.stderr)
    assert verdict["truth_source"] == "doctest" and verdict["applied"], verdict["reason"]
    assert (root / "tests/test_text.py").read_text(encoding="utf-8") == TESTS.format(
        word="banana", expected=3
    )


def _source_wrong(
    root: Path, arbitrate_json, patch: str, tests: str, extra: dict[str, str] | None = None
) -> dict:
    """arbitrate (``--apply``) on a project whose ``count_vowels`` skips the first letter,
    the right one declared as the reference, the fake model answering ``patch``; the
    JSON verdict, SOURCE_WRONG. ``extra``: other files of the project."""
    with FakeModel(lambda kind: patch) as model:
        commit_repo(
            root,
            {
                "referee.toml": f'[arbitration]\nbackend = "openai"\nurl = "{model.url}"\n'
                'model = "fake"\ncandidates = 1\ntimeout = 5\n'
                'references = { "text:count_vowels" = "refs:count_vowels" }\n',
                "text.py": TEXT.format(slice="[1:]"),
                "refs.py": TEXT.format(slice=""),
                "tests/test_text.py": tests,
                **(extra or {}),
            },
        )
        verdict, done = arbitrate_json(root)
    assert verdict["verdict"] == "SOURCE_WRONG", (verdict["reason"], done.stderr)
    return verdict


def test_a_source_fix_is_verified_in_a_project_that_runs_its_tests_on_workers(
    tmp_path: Path, arbitrate_json, autoloading: None
):
    """The declared reference is the truth; the model's patch runs against the whole test
    module in the sandbox, ``-n 2`` in the addopts. Before, every right fix was refused:
    "the test module does not pass against it in the sandbox"."""
    fixed = TEXT.format(slice="")
    root = tmp_path / "project"
    tests = TESTS.format(word="apple", expected=2)
    verdict = _source_wrong(root, arbitrate_json, fixed, tests, {"pyproject.toml": PYPROJECT})
    assert verdict["fix"] is not None, verdict["patches"]
    assert verdict["applied"], verdict["reason"]
    assert (root / "text.py").read_text(encoding="utf-8") == fixed


SPAWNING_TESTS = (
    "import subprocess\nimport sys\n\nfrom text import count_vowels\n\n\n"
    'def test_vowels():\n    assert count_vowels("apple") == 2\n\n\n'
    "def test_the_interpreter_starts():\n"
    "    done = subprocess.run([sys.executable, '-c', 'print(1)'], capture_output=True)\n"
    "    assert done.stdout.strip() == b'1'\n"
)


def test_a_source_fix_passes_a_module_whose_other_test_starts_a_process(
    tmp_path: Path, arbitrate_json
):
    """``test_the_interpreter_starts`` passes in the project's run and cannot in the
    sandbox, which lets no process start; it fails there against the unpatched code
    too. Before, the right fix was refused: "the test module does not pass against it
    in the sandbox (1 failed, 1 passed)"."""
    fixed = TEXT.format(slice="")
    root = tmp_path / "project"
    verdict = _source_wrong(root, arbitrate_json, fixed, SPAWNING_TESTS)
    assert verdict["fix"] is not None, verdict["patches"]
    assert verdict["applied"], verdict["reason"]
    (passed,) = [p for p in verdict["patches"] if p["status"] == "passed"]
    assert "fail against the unpatched code there too" in passed["message"], passed
    assert "test_the_interpreter_starts" in passed["message"], passed
    assert (root / "text.py").read_text(encoding="utf-8") == fixed


def test_a_patch_that_breaks_another_test_of_the_module_is_still_refused(
    tmp_path: Path, arbitrate_json
):
    """The relaxation is only for tests that fail without the patch too: a patch that
    gives every asserted call the right value and breaks ``test_shouted`` is refused."""
    # right on every call the test module spells out, wrong on the one it computes
    breaking = TEXT.format(slice="").replace('in "aeiou")', 'in "aeiou") or int(text.isupper())')
    root = tmp_path / "project"
    tests = (
        SPAWNING_TESTS + "\n\ndef test_shouted():\n"
        '    for word in ["xyz", "rhythm"]:\n'
        "        assert count_vowels(word.upper()) == 0\n"
    )
    verdict = _source_wrong(root, arbitrate_json, breaking, tests)
    assert verdict["fix"] is None and not verdict["applied"], verdict["patches"]
    tried = [p for p in verdict["patches"] if p["status"] != "invalid"]
    assert tried and all(
        "does not pass against it in the sandbox" in p["message"] for p in tried
    ), verdict["patches"]
    assert (root / "text.py").read_text(encoding="utf-8") == TEXT.format(slice="[1:]")
