"""The failing assertion as the test's other cases ran it (issue 40): a parametrized test
whose values come from a fixture passes for its other cases, and each of them is an
example of the function its author committed to — read by running the cases again with
the recorder watching the failing assertion's line (``siblings.py``).

The recorder against a real pytest run; the examples kept only where the working diff did
not change their lines; end to end through ``referee arbitrate --apply`` with the fake
OpenAI-compatible model server: the oracles are written from those examples (never the
failing case's expected value) and the wrong function is fixed.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from guard_catalogue.cases import commit_repo
from red_team.fake_openai import FakeModel
from test_arbitration_methods import (
    CHAINED,
    ONE_PASS,
    ONE_PASS_ORACLE,
    PLAIN_REPLACER,
    REPLACER_PATCH,
)
from test_arbitration_oracles import arbitrate_json, assert_tests_pass, cli_project

from referee.checks.arbitration.isolate import isolate
from referee.checks.arbitration.observe import run_tests
from referee.checks.arbitration.project_objects import ProjectView, viewing
from referee.checks.arbitration.siblings import sibling_examples, worth_running
from referee.checks.arbitration.sites import TestRef
from referee.checks.source import SourceFile

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

MODULE = '''class Command:
    """A shell command and what it printed."""

    def __init__(self, script: str, output: str) -> None:
        self.script = script
        self.output = output


def get_new_command(command):
    branch = command.output.split()[-1]{bug}
    return command.script + " --set-upstream origin " + branch
'''
RIGHT, WRONG = MODULE.format(bug=""), MODULE.format(bug=".lower()")
TESTS = """import pytest

from text import Command, get_new_command


@pytest.fixture
def output(branch):
    return "fatal: no upstream branch\\n    git push --set-upstream origin " + branch + "\\n"


@pytest.mark.parametrize(
    "script, branch, want",
    [
        ("git push", "main", "git push --set-upstream origin main"),
        ("git push -q", "dev", "git push -q --set-upstream origin dev"),
        ("git push", "Feature", "git push --set-upstream origin Feature"),
    ],
)
def test_get_new_command(output, script, branch, want):
    assert get_new_command(Command(script, output)) == want
"""
NODE = (
    "tests/test_text.py::test_get_new_command"
    "[git push-Feature-git push --set-upstream origin Feature]"
)
LINE = TESTS.count("\n")  # the assertion, the module's last line
ORACLE = """def get_new_command(command):
    return command.script + " --set-upstream origin " + command.output.split()[-1]
"""
PATCH = """def get_new_command(command):
    branch = command.output.split()[-1]
    return command.script + " --set-upstream origin " + branch
"""


def _project(root: Path, module: str = WRONG, tests: str = TESTS) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "text.py").write_text(module, encoding="utf-8")
    (root / "tests" / "test_text.py").write_text(tests, encoding="utf-8")
    return root


def _watched_run(root: Path, target: str = NODE.partition("[")[0], line: int = LINE):
    """The test module's ``target`` run with the recorder watching ``line``."""
    return run_tests(
        root, [target], python=None, watch=((root / "tests" / "test_text.py").resolve(), line)
    )


# ------------------------------------------------------------------ the recorder


def test_the_recorder_keeps_each_cases_locals_at_the_watched_line(tmp_path: Path):
    root = _project(tmp_path / "p")
    run = _watched_run(root)
    calls = {r.nodeid.partition("[")[2]: r for r in run.records if r.when == "call"}
    assert [r.outcome for r in calls.values()] == ["passed", "passed", "failed"], run.tail()
    main = calls["git push-main-git push --set-upstream origin main]"].watched
    assert len(main) == 1
    # the fixture's value as the case had it, before the assertion ran
    assert main[0]["output"] == repr(
        "fatal: no upstream branch\n    git push --set-upstream origin main\n"
    )
    assert main[0]["want"] == repr("git push --set-upstream origin main")


def test_without_a_watched_line_nothing_is_recorded(tmp_path: Path):
    root = _project(tmp_path / "p")
    run = run_tests(root, [NODE.partition("[")[0]], python=None)
    assert run.records and all(r.watched == [] for r in run.records)


def test_a_tracer_already_installed_is_left_alone(tmp_path: Path):
    # coverage's tracer (here: a conftest's own) is the user's: the line goes unwatched
    root = _project(tmp_path / "p")
    (root / "tests" / "conftest.py").write_text(
        "import sys\n\ndef _t(frame, event, arg):\n    return None\n\n"
        "def pytest_runtest_call(item):\n    sys.settrace(_t)\n",
        encoding="utf-8",
    )
    run = _watched_run(root)
    assert [r.outcome for r in run.records if r.when == "call"].count("passed") == 2
    assert all(r.watched == [] for r in run.records)
    assert any("another tracer is installed" in note for note in run.recorder_notes)


# ------------------------------------------------------------------ the examples


def _examples(root: Path, target: str = NODE.partition("[")[0], node: str = NODE):
    source = SourceFile("tests/test_text.py", (root / "tests" / "test_text.py").read_text())
    test = TestRef.parse(node)
    run = _watched_run(root, target)
    failing = next(r for r in run.records if r.outcome == "failed")
    # the project's classes are read as arbitration reads them, with the project in view
    with viewing(ProjectView(root, dict, lambda: None)):
        isolated = isolate(source, test, LINE, failing.indices, failing.crash["locals"])
        found = sibling_examples(source, test, node, isolated, "get_new_command", run).found
    return isolated, found


def test_the_other_cases_are_examples_of_the_function(tmp_path: Path):
    isolated, found = _examples(_project(tmp_path / "p"))
    assert "project-object-argument" in isolated.forms
    # as the parametrize rows write them
    assert [f.want for f in found] == [
        '"git push --set-upstream origin main"',
        '"git push -q --set-upstream origin dev"',
    ]
    assert found[0].call.startswith('get_new_command(Command("git push", \'fatal: no upstream')
    assert "from text import Command" in found[0].definitions
    # written on: the assertion, the case's row, the fixture the case used
    assert (LINE, LINE) in found[0].spans
    row = TESTS.splitlines().index(
        '        ("git push", "main", "git push --set-upstream origin main"),'
    )
    assert (row + 1, row + 1) in found[0].spans
    assert (7, 8) in found[0].spans  # def output(branch): ...
    assert all(f.in_failing_test for f in found)


def test_the_iterations_a_loop_passed_before_the_failing_one_are_examples(tmp_path: Path):
    tests = TESTS.replace(
        "def test_get_new_command(output, script, branch, want):\n"
        "    assert get_new_command(Command(script, output)) == want\n",
        "def test_get_new_command(output, script, branch, want):\n"
        "    assert get_new_command(Command(script, output)) == want\n\n\n"
        "def test_loop():\n"
        "    for branch in ['main', 'dev', 'Feature']:\n"
        "        out = 'fatal: no upstream branch\\n    git push --set-upstream origin ' + branch\n"
        "        want = 'git push --set-upstream origin ' + branch\n"
        "        assert get_new_command(Command('git push', out)) == want\n",
    )
    root = _project(tmp_path / "p", tests=tests)
    loop_line = tests.count("\n")
    source = SourceFile("tests/test_text.py", tests)
    test = TestRef.parse("tests/test_text.py::test_loop")
    run = _watched_run(root, test.function_id, loop_line)
    (failing,) = [r for r in run.records if r.when == "call"]
    assert failing.outcome == "failed" and len(failing.watched) == 3
    with viewing(ProjectView(root, dict, lambda: None)):
        isolated = isolate(source, test, loop_line, {}, failing.crash["locals"])
        cases = sibling_examples(source, test, test.function_id, isolated, "get_new_command", run)
        found = cases.found
    # the two iterations before the failing one; the failing one never
    assert [f.want for f in found] == [
        "'git push --set-upstream origin main'",
        "'git push --set-upstream origin dev'",
    ]
    assert cases.no_example == 0


def test_an_iteration_that_compares_no_literal_is_counted_not_kept(tmp_path: Path):
    tests = TESTS + (
        "\n\ndef test_loop():\n"
        "    for branch in ['main', 'dev', 'Feature']:\n"
        "        out = 'origin ' + branch\n"
        "        assert get_new_command(Command('git push', out)) == (\n"
        "            'git push --set-upstream ' + out\n"
        "        )\n"
    )
    root = _project(tmp_path / "p", tests=tests)
    loop_line = tests.count("\n") - 2  # the assertion's first line, of three
    source = SourceFile("tests/test_text.py", tests)
    test = TestRef.parse("tests/test_text.py::test_loop")
    run = run_tests(
        root,
        [test.function_id],
        python=None,
        watch=((root / "tests" / "test_text.py").resolve(), loop_line, loop_line + 2),
    )
    (failing,) = [r for r in run.records if r.when == "call"]
    # the statement is reached once an iteration, though its evaluation goes from line to line
    assert len(failing.watched) == 3
    with viewing(ProjectView(root, dict, lambda: None)):
        isolated = isolate(source, test, loop_line, {}, failing.crash["locals"])
        cases = sibling_examples(source, test, test.function_id, isolated, "get_new_command", run)
    # the expected value is computed in the assertion: no case says what the call gives
    assert (cases.found, cases.no_example) == ([], 2)


def test_a_test_whose_failures_are_collected_gives_no_iteration(tmp_path: Path):
    tests = (
        "import unittest\n\nfrom text import Command, get_new_command\n\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_x(self):\n"
        "        for branch in ['Main', 'dev', 'Feature']:\n"
        "            with self.subTest(branch=branch):\n"
        "                out = 'origin ' + branch\n"
        "                want = 'git push --set-upstream origin ' + branch\n"
        "                self.assertEqual(get_new_command(Command('git push', out)), want)\n"
    )
    root = _project(tmp_path / "p", tests=tests)
    line = tests.count("\n")
    source = SourceFile("tests/test_text.py", tests)
    test = TestRef.parse("tests/test_text.py::T::test_x")
    run = _watched_run(root, test.function_id, line)
    failing = [r for r in run.records if r.when == "call" and r.outcome == "failed"]
    assert failing and max(len(r.watched) for r in failing) == 3, run.tail()
    with viewing(ProjectView(root, dict, lambda: None)):
        isolated = isolate(
            source,
            test,
            line,
            {},
            {
                "branch": "'Feature'",
                "out": "'origin Feature'",
                "want": "'git push --set-upstream origin Feature'",
            },
        )
        cases = sibling_examples(source, test, test.function_id, isolated, "get_new_command", run)
        found = cases.found
    # 'dev' passed between two failures: subTest went on after the first, so no
    # iteration can be told passing
    assert found == []


# ------------------------------------------------------------------ end to end, --apply


def _arbitrate(tmp_path: Path, referee, module: str, *, commit: bool = True, after=None):
    with FakeModel(lambda kind: ORACLE if kind == "oracle" else PATCH) as model:
        root = cli_project(tmp_path / "p", module, TESTS, model.url)
        if commit:
            commit_repo(root, {})
        if after is not None:
            after(root)
        verdict = arbitrate_json(referee, root, "--apply", node=NODE)
        prompts = [json.dumps(r["messages"]) for r in model.requests]
    return root, verdict, prompts


@needs_git
def test_cli_fixes_the_function_from_what_the_other_cases_gave(tmp_path: Path, referee):
    root, verdict, prompts = _arbitrate(tmp_path, referee, WRONG)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert (verdict["produced"], verdict["truth"]) == (
        "'git push --set-upstream origin feature'",
        "'git push --set-upstream origin Feature'",
    )
    assert len(verdict["spec_examples"]) == 2
    assert all("[git push-" in e or "[git push -q-" in e for e in verdict["spec_examples"])
    assert verdict["applied"] is True
    assert ".lower()" not in (root / "text.py").read_text(encoding="utf-8")
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == TESTS
    assert_tests_pass(root)
    oracle_prompts = [p for p in prompts if "origin dev" in p]
    assert oracle_prompts  # written from the other cases' examples...
    for prompt in oracle_prompts:  # ...never from the failing case's expected value or a body
        assert "origin Feature" not in prompt and ".lower()" not in prompt


@needs_git
def test_a_fixture_changed_in_the_working_diff_gives_no_example(tmp_path: Path, referee):
    def change_the_fixture(root: Path) -> None:
        tests = root / "tests" / "test_text.py"
        tests.write_text(
            tests.read_text(encoding="utf-8").replace("\\n    git push", "\\n  git push"),
            encoding="utf-8",
        )

    _, verdict, _ = _arbitrate(tmp_path, referee, WRONG, after=change_the_fixture)
    assert verdict["verdict"] == "UNCLEAR"
    assert "changed in the working diff" in verdict["reason"], verdict["reason"]


# The fixture in tests/conftest.py, as most suites keep them; the test module without it.
FIXTURE = TESTS[TESTS.index("@pytest.fixture") : TESTS.index("@pytest.mark.parametrize")]
CONFTEST = "import pytest\n\n\n" + FIXTURE
TESTS_BESIDE = TESTS.replace(FIXTURE, "")


@needs_git
@pytest.mark.parametrize("changed", [False, True], ids=["committed", "changed"])
def test_a_conftest_fixture_the_cases_took_is_part_of_their_examples(
    tmp_path: Path, referee, changed: bool
):
    """The fixture the cases took from ``tests/conftest.py`` is what their examples rest
    on: committed, the other cases are the spec; changed in the working diff, they are
    not the suite's word."""
    with FakeModel(lambda kind: ORACLE if kind == "oracle" else PATCH) as model:
        root = cli_project(tmp_path / "p", WRONG, TESTS_BESIDE, model.url)
        (root / "tests" / "conftest.py").write_text(CONFTEST, encoding="utf-8")
        commit_repo(root, {})
        if changed:
            conftest = root / "tests" / "conftest.py"
            conftest.write_text(
                CONFTEST.replace("\\n    git push", "\\n  git push"), encoding="utf-8"
            )
        verdict = arbitrate_json(referee, root, "--apply", node=NODE)
    if changed:
        assert verdict["verdict"] == "UNCLEAR"
        assert "2 changed in the working diff" in verdict["reason"], verdict["reason"]
    else:
        assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
        assert len(verdict["spec_examples"]) == 2


# A method with no docstrings, tested through a fixture: its other cases are its spec.
METHOD_TESTS = """import pytest

from text import Replacer


@pytest.fixture
def text(first, second):
    return first + " " + second


@pytest.mark.parametrize(
    "first, second, want",
    [("a", "c", "b d"), ("c", "a", "d b"), ("x", "y", "y z")],
)
def test_sub(text, first, second, want):
    assert Replacer({"a": "b", "c": "d", "x": "y", "y": "z"}).sub(text) == want
"""
METHOD_NODE = "tests/test_text.py::test_sub[x-y-y z]"


@needs_git
def test_cli_a_methods_other_cases_are_its_spec(tmp_path: Path, referee):
    """``Replacer({...}).sub(text)`` with ``text`` from a fixture: no static reading
    follows it, the cases as they ran are examples in the oracle contract, and the
    chained replacement (wrong only where a replacement is replaced again: "x y" gives
    "z z") is fixed from them."""

    def answer(kind: str, seed: int | None) -> str:
        return ONE_PASS_ORACLE if kind == "oracle" else REPLACER_PATCH

    with FakeModel(answer=lambda kind: "", seeded=answer) as model:
        root = cli_project(
            tmp_path / "p", PLAIN_REPLACER.replace("{body}", CHAINED), METHOD_TESTS, model.url
        )
        commit_repo(root, {})
        verdict = arbitrate_json(referee, root, "--apply", node=METHOD_NODE)
        prompts = [json.dumps(r["messages"]) for r in model.requests]
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["truth_source"] == "oracles (spec from suite: 2 examples)"
    assert verdict["applied"] is True
    assert ONE_PASS in (root / "text.py").read_text(encoding="utf-8")
    oracle_prompts = [p for p in prompts if "init_args" in p]
    assert oracle_prompts
    for prompt in oracle_prompts:
        # the other cases, in the contract: sub(({...}, ), {}, 'a c') == "b d"
        assert "'a c')" in prompt and "'c a')" in prompt
        assert "'x y')" not in prompt and "y z" not in prompt


def test_without_git_the_failing_tests_own_cases_are_not_the_suites_word(tmp_path: Path, referee):
    _, verdict, _ = _arbitrate(tmp_path, referee, WRONG, commit=False)
    assert verdict["verdict"] == "UNCLEAR"
    assert "no passing assertion about it in the suite" in verdict["reason"], verdict["reason"]
    assert "in the failing test" in verdict["reason"]


def test_the_recorder_runs_in_the_projects_interpreter_without_referee(tmp_path: Path):
    # the plugin is loaded by path into the project's pytest: referee need not be importable
    root = _project(tmp_path / "p")
    assert sys.executable  # the suite's interpreter stands in for the project's here
    run = _watched_run(root)
    assert not run.recorder_notes, run.recorder_notes


@pytest.mark.parametrize(
    ("node", "body", "worth"),
    [
        ("tests/t.py::test_x[1-2]", "    assert f(x) == y\n", True),  # a parametrized case
        ("tests/t.py::test_x", "    for x in XS:\n        assert f(x) == 1\n", True),
        ("tests/t.py::test_x", "    while XS:\n        assert f(XS.pop()) == 1\n", True),
        ("tests/t.py::test_x", "    x = g()\n    assert f(x) == 1\n", False),  # once
        # a loop in a helper the test defines is not the test's own loop
        (
            "tests/t.py::test_x",
            "    def h():\n        for _ in XS:\n            pass\n    assert f(h()) == 1\n",
            False,
        ),
    ],
    ids=["parametrized", "for", "while", "once", "nested-definition"],
)
def test_the_cases_are_run_again_only_where_they_can_give_other_values(node, body, worth):
    text = "from m import f\n\n\ndef test_x(x=1, y=2):\n" + body
    line = text.rstrip("\n").count("\n") + 1
    assert worth_running(SourceFile("tests/t.py", text), TestRef.parse(node), line) is worth
