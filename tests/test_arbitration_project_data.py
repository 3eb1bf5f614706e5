"""The files a project's tests and packages read travel into the sandbox with its code.

A test that reads ``tests/data/word.bin`` passed or failed for its own reasons in the
project, and met ``FileNotFoundError`` in the sandbox, where only Python files and pytest's
configuration were copied: a corrected assertion could never be certified, a source fix
never verified, a mutant never graded. Text data travels as it is on disk (its line
endings too), binary data as bytes. End to end through ``referee arbitrate --apply``,
with a declared reference as the truth.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from guard_catalogue.cases import commit_repo

from referee.checks import sandbox
from referee.checks.arbitration.engine import project_files
from referee.checks.arbitration.project_data import without_test_data
from referee.checks.config import discover

TEXT = '''def count_vowels(text):
    """The number of vowels (a, e, i, o, u) in ``text``."""
    return sum(1 for c in text.lower() if c in "aeiou")
'''
TESTS = """from pathlib import Path

from text import count_vowels

HERE = Path(__file__).parent


def test_vowels():
    word = (HERE / "data" / "word.bin").read_bytes()[1:].decode()  # after a marker byte
    assert count_vowels(word) == {}
"""
WORD = b"\xffbanana"  # no UTF-8 text: the file travels as bytes
CONFIG = '[arbitration]\nreferences = { "text:count_vowels" = "refs:count_vowels" }\n'


def test_the_sandbox_is_given_test_data_and_package_data_not_the_rest(tmp_path: Path):
    files = {
        "pkg/__init__.py": "",
        "pkg/templates/page.html": "<p>{{ x }}</p>\n",
        "pkg/schema.json": "{}\n",
        "tests/test_a.py": "",
        "tests/data/word.txt": "banana\n",
        "tests/files/q.sql": "select 1;\r\nselect 2;\r\n",
        "docs/notes.md": "# notes\n",
        "README.md": "# project\n",
        "pyproject.toml": "[tool.pytest.ini_options]\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(text.encode())
    (tmp_path / "tests" / "data" / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    given = project_files(tmp_path, discover(tmp_path))
    wanted = {*files, "tests/data/image.png"} - {"docs/notes.md", "README.md"}
    assert sorted(given) == sorted(wanted)
    assert given["tests/data/word.txt"] == "banana\n"
    assert given["tests/data/image.png"] == b"\x89PNG\r\n\x1a\n\xff\xfe"  # bytes, as they are
    assert given["tests/files/q.sql"] == "select 1;\r\nselect 2;\r\n"  # as on disk
    # what code a model wrote runs beside (a patch on the asserted calls, an oracle with
    # the project's objects): the package's data, never the tests' (it may hold what
    # they expect)
    assert sorted(without_test_data(given)) == [
        "pkg/__init__.py",
        "pkg/schema.json",
        "pkg/templates/page.html",
        "pyproject.toml",
        "tests/test_a.py",
    ]


def test_arbitrate_certifies_a_test_that_reads_its_binary_data_file(tmp_path: Path, referee):
    if (problem := sandbox.boundary_problem()) is not None:
        pytest.skip(problem)
    repo = tmp_path / "project"
    commit_repo(
        repo,
        {
            "referee.toml": CONFIG,
            "text.py": TEXT,
            "refs.py": TEXT,
            "tests/test_text.py": TESTS.format("4"),
        },
    )
    (repo / "tests" / "data").mkdir()
    (repo / "tests" / "data" / "word.bin").write_bytes(WORD)
    done = referee(
        "arbitrate", "tests/test_text.py::test_vowels", "--apply", "--format", "json", cwd=repo
    )
    verdict = json.loads(done.stdout)
    assert verdict["verdict"] == "TEST_WRONG", (verdict["reason"], done.stderr)
    assert (verdict["truth"], verdict["truth_source"]) == ("3", "reference"), verdict
    assert verdict["applied"], verdict["reason"]
    written = (repo / "tests" / "test_text.py").read_text(encoding="utf-8")
    assert written == TESTS.format("3")
