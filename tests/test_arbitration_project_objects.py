"""Arguments that are objects of the project's own classes built from known arguments
(``match(Command("git push", ""))``, a parametrize case ``Command("git push", "")``,
``Command(script, output)`` with both parametrized): the form ``project-object-argument``.

The class is read statically from the project's files; a function, or a name the
project's files do not define as a class, stays refused in one line. The oracles of such
a call run with the project's files, never calling the code under test: a program that
imports it is refused before it runs (and replaced), and in the sandbox the function under
test is a stub that raises, however it is reached.

End to end through ``referee arbitrate --apply`` with the fake model server: a wrong
function called on a project object is SOURCE_WRONG, and its fix passes the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from red_team.fake_openai import FakeModel
from test_arbitration_oracles import assert_tests_pass, cli_project

from referee.checks import sandbox
from referee.checks.arbitration import project_objects
from referee.checks.arbitration.isolate import NotIsolated, TestRef, isolate
from referee.checks.arbitration.known import with_definitions
from referee.checks.arbitration.project_objects import (
    ProjectView,
    class_outline,
    guard,
    project_class,
    reads_code_under_test,
)
from referee.checks.models import arbitration_schema
from referee.checks.source import SourceFile

TYPES = '''class Command:
    """A shell command and what it printed."""

    def __init__(self, script, output):
        self.script = script
        self.output = self._clean(output)

    def _clean(self, text):
        return text.strip()

    @property
    def parts(self):
        """The script's words."""
        return self.script.split()

    @property
    def text(self):
        """What it printed."""
        return self.output

    def matched(self):
        from mypkg.rules import match
        return match(self)


def make_command(script):
    return Command(script, "")
'''
RULES = """def match(command):
    return "no upstream" in command.output
"""
HELPERS = """from mypkg.rules import match as seen


def through(command):
    return seen(command)
"""


def _package(root: Path) -> Path:
    (root / "mypkg").mkdir(parents=True)
    (root / "mypkg" / "__init__.py").write_text(
        "from .types import Command, make_command\n", encoding="utf-8"
    )
    (root / "mypkg" / "types.py").write_text(TYPES, encoding="utf-8")
    (root / "mypkg" / "rules.py").write_text(RULES, encoding="utf-8")
    (root / "mypkg" / "helpers.py").write_text(HELPERS, encoding="utf-8")
    return root


def _files(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in root.rglob("*.py")
    }


HEAD = """import pytest
from mypkg import Command, make_command
from mypkg.rules import match
from elsewhere import Other

"""


def _isolated(root: Path, body: str, params: str = "", indices: dict[str, int] | None = None):
    text = HEAD + (params + "\n" if params else "") + "def test_x(" + ", ".join(indices or {})
    text += "):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    line = text.rstrip("\n").count("\n") + 1
    view = ProjectView(root, lambda: _files(root), lambda: None)
    with project_objects.viewing(view):
        return isolate(
            SourceFile("tests/t.py", text), TestRef.parse("tests/t.py::test_x"), line, indices
        )


# ---------------------------------------------------------------------- accept / refuse


@pytest.mark.parametrize(
    ("body", "params", "indices", "call"),
    [
        (
            'assert match(Command("git push", "fatal: no upstream"))',
            "",
            None,
            "match(Command('git push', 'fatal: no upstream'))",
        ),
        (
            "assert not match(command)",
            '@pytest.mark.parametrize("command", [Command("git push", "")])',
            {"command": 0},
            "match(Command('git push', ''))",
        ),
        (
            'assert match(Command(script, output)) == "x"',
            '@pytest.mark.parametrize(("script", "output"), [("git push", "no upstream")])',
            {"script": 0, "output": 0},
            "match(Command('git push', 'no upstream'))",
        ),
    ],
    ids=["literal", "parametrized-object", "parametrized-arguments"],
)
def test_a_project_class_built_from_known_arguments_is_isolated(
    tmp_path: Path, body, params, indices, call
):
    isolated = _isolated(_package(tmp_path), body, params, indices)
    assert "project-object-argument" in isolated.forms
    assert isolated.call.replace('"', "'") == call
    assert isolated.definitions == "from mypkg import Command\n"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            'assert match(make_command("git push")) == 1',
            "uses `make_command`, which the test module imports from `mypkg`",
        ),
        (
            'assert match(Other("git push")) == 1',
            "uses `Other`, which the test module imports from `elsewhere`",
        ),
        (
            "assert match(Command(object(), 1)) == 1",
            "`object()`",
        ),
    ],
    ids=["a-function", "not-in-the-project", "unknown-argument"],
)
def test_what_is_no_project_class_built_from_known_arguments_stays_refused(
    tmp_path: Path, body, reason
):
    with pytest.raises(NotIsolated) as caught:
        _isolated(_package(tmp_path), body)
    assert reason in str(caught.value) and "\n" not in str(caught.value)


def test_a_project_class_is_refused_without_the_project_view(tmp_path: Path):
    text = HEAD + 'def test_x():\n    assert match(Command("a", "b")) == 1\n'
    with pytest.raises(NotIsolated, match="holds the standard library only"):
        isolate(SourceFile("tests/t.py", text), TestRef.parse("tests/t.py::test_x"), 7)


def test_the_class_is_read_statically_never_a_function_or_a_missing_name(tmp_path: Path):
    root = _package(tmp_path)
    assert project_class(root, "mypkg", "Command") is not None  # through the re-export
    assert project_class(root, "mypkg.types", "Command") is not None
    assert project_class(root, "mypkg", "make_command") is None
    assert project_class(root, "mypkg.rules", "match") is None
    assert project_class(root, "mypkg", "Missing") is None
    assert project_class(root, "nowhere", "Command") is None


@pytest.mark.parametrize(
    ("init", "found"),
    [
        # one class re-exported twice (a package that imports it from two modules)
        ("from .types import Command\nfrom .types import Command as Command\n", True),
        ("from .alias import Cmd as Command\n", True),  # renamed on the way: read as Cmd
        ("from .types import Command\nfrom .other import Command\n", False),  # two classes
        ("from .types import Command\nCommand = None\n", False),  # bound by something else
    ],
    ids=["twice", "renamed", "two-classes", "rebound"],
)
def test_a_re_exported_class_is_followed_under_the_name_it_has_there(
    tmp_path: Path, init: str, found: bool
):
    root = _package(tmp_path)
    package = root / "mypkg"
    (package / "alias.py").write_text("from .types import Command as Cmd\n", encoding="utf-8")
    (package / "other.py").write_text("class Command:\n    pass\n", encoding="utf-8")
    (package / "__init__.py").write_text(init, encoding="utf-8")
    cls = project_class(root, "mypkg", "Command")
    assert (cls is not None and cls.name == "Command") is found


def test_the_oracles_see_the_class_without_its_bodies(tmp_path: Path):
    cls = project_class(_package(tmp_path), "mypkg", "Command")
    assert cls is not None
    outline = class_outline(cls)
    assert "def __init__(self, script, output):" in outline
    assert "A shell command and what it printed." in outline and "sets: output, script" in outline
    # the data, not the behaviour: no body, no method
    assert "self.script = script" not in outline and "import match" not in outline
    assert "parts" not in outline and "matched" not in outline
    # a plain accessor (`return self.output`) is the object's data under another name
    assert "def text(self):" in outline and "What it printed." in outline


# ------------------------------------------------------------- never the code under test


@pytest.mark.parametrize(
    ("program", "why"),
    [
        ("from mypkg.rules import match as m\ndef match(c):\n    return m(c)\n", "mypkg.rules"),
        ("import mypkg\ndef match(c):\n    return 1\n", "mypkg"),
        ("from . import rules\n", "."),
        ("import importlib\n", "importlib"),
        ("import sys\ndef match(c):\n    return sys.modules['x']\n", "sys"),
        ("def match(c):\n    return __import__('mypkg.rules')\n", "__import__"),
        ("def match(c):\n    return eval('1')\n", "eval"),
        ("def match(c):\n    return exec('1')\n", "exec"),
        ("def match(c):\n    return open('mypkg/rules.py').read()\n", "open"),
        ("def match(c):\n    return c.matched.__globals__\n", "__globals__"),
    ],
)
def test_a_program_that_reads_the_code_under_test_is_refused_before_it_runs(program, why):
    found = reads_code_under_test(program, "mypkg.rules", frozenset({"mypkg"}))
    assert found is not None and why in found


def test_an_honest_program_is_not_refused():
    program = "import re\n\ndef match(command):\n    return 'no upstream' in command.output\n"
    assert reads_code_under_test(program, "mypkg.rules", frozenset({"mypkg"})) is None


def test_the_modules_own_imports_put_in_front_of_a_program_are_not_the_models():
    preamble = "import sys\n"
    program = preamble + "def match(command):\n    return len(command.output)\n"
    assert reads_code_under_test(program, "mypkg.rules", frozenset({"mypkg"}), preamble) is None
    cheat = preamble + "def match(command):\n    return sys.modules['mypkg.rules']\n"
    found = reads_code_under_test(cheat, "mypkg.rules", frozenset({"mypkg"}), preamble)
    assert found == "uses `.modules`"


@pytest.mark.parametrize(
    "program",
    [
        # through another module of the project that imported it before the guard ran
        "import mypkg.helpers\n\ndef match(c):\n    return mypkg.helpers.through(c)\n",
    ],
    ids=["another-module"],
)
def test_in_the_sandbox_the_function_under_test_is_a_stub_that_raises(tmp_path: Path, program):
    root = _package(tmp_path)
    call = with_definitions(
        "match(Command('git push', 'no upstream'))", "from mypkg import Command\n"
    )
    unguarded = sandbox.evaluate(program, call, files=_files(root))
    assert unguarded.status == "error"  # without the guard, the project is not importable
    guarded = sandbox.evaluate(guard("mypkg.rules", "match") + program, call, files=_files(root))
    assert guarded.status == "error", guarded
    assert "the oracle called the function under test" in guarded.message
    honest = "def match(c):\n    return 'no upstream' in c.output\n"
    ok = sandbox.evaluate(guard("mypkg.rules", "match") + honest, call, files=_files(root))
    assert (ok.status, ok.value) == ("ok", "True")


# ------------------------------------------------------------------------ end to end

WRONG = '''def get_new_command(command):
    """The command to run instead of ``command`` when git says the branch has no
    upstream: the same script with ``--set-upstream origin master`` appended."""
    return command.script + " --set-upstream origin main"
'''
TYPES_MODULE = '''class Command:
    """A shell command (``script``) and what it printed (``output``)."""

    def __init__(self, script, output):
        self.script = script
        self.output = output

    @property
    def fixed(self):
        return self.script + " --set-upstream origin master"
'''
ORACLE = """def get_new_command(command):
    return command.script + " --set-upstream origin master"
"""
BORROWS = """def get_new_command(command):
    return command.fixed
"""
CHEAT = """from text import get_new_command as real


def get_new_command(command):
    return real(command)
"""
PATCH = '''def get_new_command(command):
    """The command to run instead of ``command`` when git says the branch has no
    upstream: the same script with ``--set-upstream origin master`` appended."""
    return command.script + " --set-upstream origin master"
'''
TESTS = """import pytest

from cmdtypes import Command
from text import get_new_command


@pytest.mark.parametrize(("script", "output"), [("git push", "fatal: no upstream")])
def test_x(script, output):
    assert get_new_command(Command(script, output)) == "git push --set-upstream origin master"
"""


def test_cli_fixes_a_wrong_function_called_on_a_project_object(tmp_path: Path, referee):
    def answer(kind: str, seed: int | None) -> str:
        if kind != "oracle":
            return PATCH
        return {1: CHEAT, 2: BORROWS}.get(seed or 0, ORACLE)

    with FakeModel(lambda kind: "", seeded=answer) as model:
        root = cli_project(tmp_path / "p", WRONG, TESTS, model.url)
        (root / "cmdtypes.py").write_text(TYPES_MODULE, encoding="utf-8")
        done = referee(
            "arbitrate", "tests/test_text.py::test_x[git push-fatal: no upstream]",
            "--format", "json", "--apply", cwd=root,
        )  # fmt: skip
        prompts = [
            body["messages"][-1]["content"]
            for body in model.requests
            if "class Command" in body["messages"][-1]["content"]
        ]
    assert done.stdout.strip(), (done.returncode, done.stderr)
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert "project-object-argument" in verdict["call_forms"]
    assert verdict["truth"] == "'git push --set-upstream origin master'"
    # the oracle that imported the function under test was refused and replaced
    refused = [o for o in verdict["replaced_oracles"] if o["source"] == "oracle-1"]
    assert refused and "reads the code under test" in refused[0]["detail"]
    # the one that borrowed the class's behaviour (a property) failed to run, replaced
    borrowed = [o for o in verdict["replaced_oracles"] if o["source"] == "oracle-2"]
    assert borrowed and "a method of the project's class" in borrowed[0]["detail"]
    # the oracles were shown the class, not its bodies
    assert prompts and all("self.script = script" not in p for p in prompts)
    assert verdict["applied"] is True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == TESTS
    assert_tests_pass(root)


def test_cli_edits_only_the_expected_literal_of_a_test_on_a_project_object(tmp_path: Path, referee):
    tests = TESTS.replace("origin master", "origin main")
    with FakeModel(lambda kind: ORACLE if kind == "oracle" else PATCH) as model:
        root = cli_project(tmp_path / "p", PATCH, tests, model.url)
        (root / "cmdtypes.py").write_text(TYPES_MODULE, encoding="utf-8")
        done = referee(
            "arbitrate", "tests/test_text.py::test_x[git push-fatal: no upstream]",
            "--format", "json", "--apply", cwd=root,
        )  # fmt: skip
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    assert verdict["verdict"] == "TEST_WRONG", verdict["reason"]
    assert "project-object-argument" in verdict["call_forms"]
    assert verdict["applied"] is True and verdict["certificate"] is not None
    # the argument `Command(script, output)` stays as written; only the expected literal
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == TESTS
    assert (root / "text.py").read_text(encoding="utf-8") == PATCH


def test_a_plain_literal_call_keeps_the_standard_library_only_sandbox(tmp_path: Path):
    view = ProjectView(_package(tmp_path), lambda: _files(tmp_path), lambda: None)
    with project_objects.viewing(view):
        assert project_objects.project_run("mypkg.rules", "match", "") is None
        assert project_objects.project_run("mypkg.rules", "match", "import datetime\n") is None
        run = project_objects.project_run("mypkg.rules", "match", "from mypkg import Command\n")
    assert (
        run is not None and run.packages == frozenset({"mypkg"}) and "mypkg/rules.py" in run.files
    )
    assert (
        project_objects.project_run("mypkg.rules", "match", "from mypkg import Command\n") is None
    )


@pytest.mark.parametrize(
    "program",
    [
        # a method of the argument's class (which calls the function under test)
        "def match(c):\n    return c.matched()\n",
        # a property of it: the class's behaviour is the project's code too
        "def match(c):\n    return len(c.parts) > 1\n",
    ],
    ids=["method", "property"],
)
def test_the_arguments_methods_are_sealed_once_they_are_built(tmp_path: Path, program):
    root = _package(tmp_path)
    definitions = "from mypkg import Command\n"
    call = with_definitions("match(Command('git push', ' no upstream '))", definitions)
    run = project_objects.seal("match", [("mypkg", "Command")], {"mypkg:Command": ["text"]})
    code = guard("mypkg.rules", "match") + program + run
    sealed = sandbox.evaluate(code, call, files=_files(root))
    assert sealed.status == "error", sealed
    assert "the oracle called a method of the project's class" in sealed.message
    # the construction ran the class's own method (`_clean`) before the seal
    honest = "def match(c):\n    return c.output + c.text\n"
    code = guard("mypkg.rules", "match") + honest + run
    ok = sandbox.evaluate(code, call, files=_files(root))
    assert (ok.status, ok.value) == ("ok", "'no upstreamno upstream'")
