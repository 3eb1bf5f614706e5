"""Suite examples whose arguments are the project's objects (``get_new_command(Command(
"git push", "origin main"))`` in a parametrize row): every oracle is held to them in a run
with the project's files, as it runs on the failing call — they once ran in the
standard-library-only sandbox, where every oracle "contradicted" them (``No module named
'text'``) and the verdict was UNCLEAR. End to end through ``referee arbitrate --apply``
with the fake OpenAI-compatible model server."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from guard_catalogue.cases import commit_repo
from red_team.fake_openai import FakeModel
from test_arbitration_oracles import arbitrate_json, assert_tests_pass, cli_project

MODULE = '''class Command:
    """A shell command and what it printed."""

    def __init__(self, script: str, output: str) -> None:
        self.script = script
        self.output = output


def get_new_command(command):
    branch = command.output.split()[-1].lower()
    return command.script + " --set-upstream origin " + branch
'''
ORACLE = """def get_new_command(command):
    return command.script + " --set-upstream origin " + command.output.split()[-1]
"""
PATCH = """def get_new_command(command):
    return command.script + " --set-upstream origin " + command.output.split()[-1]
"""

STATIC_TESTS = """import pytest

from text import Command, get_new_command


@pytest.mark.parametrize(
    "command, want",
    [
        (Command("git push", "origin main"), "git push --set-upstream origin main"),
        (Command("git push -q", "origin dev"), "git push -q --set-upstream origin dev"),
        (Command("git push", "origin Feature"), "git push --set-upstream origin Feature"),
    ],
)
def test_get_new_command(command, want):
    assert get_new_command(command) == want
"""


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_cli_holds_every_oracle_to_rows_that_build_the_projects_objects(tmp_path: Path, referee):
    with FakeModel(lambda kind: ORACLE if kind == "oracle" else PATCH) as model:
        root = cli_project(tmp_path / "p", MODULE, STATIC_TESTS, model.url)
        commit_repo(root, {})
        verdict = arbitrate_json(
            referee,
            root,
            "--apply",
            node="tests/test_text.py::test_get_new_command[command2-"
            "git push --set-upstream origin Feature]",
        )
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["truth_source"] == "oracles (spec from suite: 2 examples)"
    assert verdict["applied"] is True
    assert_tests_pass(root)
