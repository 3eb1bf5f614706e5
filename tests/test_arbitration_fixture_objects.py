"""What a pytest fixture builds for the test: ``shell`` in ``def test_or(self, shell)``,
where the test's class or module defines ``@pytest.fixture def shell(self): return
Fish()`` — a method of an object built from a class and literals, as ``shell = Fish()``
in the test would be (form ``method-of-fixture-object``). Read only where each test gets
a fresh object that nothing touches before the assertion.

End to end through ``referee arbitrate --apply`` with the fake OpenAI-compatible model
server: a wrong method called on a fixture's object is fixed inside its class, and a
wrong expected value beside one is edited with a certificate the guard honours; the
fixture is never edited.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from test_arbitration_oracles import arbitrate_template, assert_tests_pass

from referee.checks.arbitration.isolate import NotIsolated, TestRef, isolate
from referee.checks.source import SourceFile

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

IN_CLASS = """\
import pytest
from mypkg import Fish


class TestFish:
    @pytest.fixture
    def shell(self):
        \"\"\"The shell under test.\"\"\"
        return Fish("fish", strict=True)

    def test_x(self, shell):
        assert shell.or_("a", "b") == "a; or b"
"""
IN_MODULE = """\
import pytest
from mypkg import Fish


@pytest.fixture()
def shell():
    yield Fish("fish")


def test_x(shell):
    assert shell.or_("a", "b") == "a; or b"
"""


def _isolated(text: str, test: str):
    line = text.rstrip("\n").count("\n") + 1
    return isolate(SourceFile("tests/t.py", text), TestRef.parse(f"tests/t.py::{test}"), line)


def test_a_method_of_the_object_a_class_fixture_returns_is_the_call_under_test():
    isolated = _isolated(IN_CLASS, "TestFish::test_x")
    assert isolated.callee == "Fish.or_"
    assert isolated.constructor == "Fish"
    assert isolated.constructor_arguments == ('"fish"', "strict=True")
    assert "method-of-fixture-object" in isolated.forms


def test_a_method_of_the_object_a_module_fixture_yields_is_the_call_under_test():
    isolated = _isolated(IN_MODULE, "test_x")
    assert (isolated.callee, isolated.constructor) == ("Fish.or_", "Fish")
    assert isolated.constructor_arguments == ('"fish"',)


@pytest.mark.parametrize(
    "before, after",
    [
        ("@pytest.fixture\n", '@pytest.fixture(scope="module")\n'),  # shared between tests
        ("@pytest.fixture\n", "@pytest.fixture(params=[1, 2])\n"),  # one per parameter
        ("    @pytest.fixture\n", ""),  # no fixture: a method of the class
        ("def shell(self):", "def shell(self, tmp_path):"),  # takes another fixture
        ('return Fish("fish", strict=True)', "return Fish(NAME)"),  # no literal
        (
            'return Fish("fish", strict=True)',
            'fish = Fish("fish")\n        fish.start()\n        return fish',
        ),  # more than the building
        ("assert shell.or_", "shell.reset()\n        assert shell.or_"),  # touched before
    ],
    ids=[
        "module-scope",
        "parametrized-fixture",
        "not-a-fixture",
        "other-fixture",
        "not-literal",
        "more-statements",
        "touched",
    ],
)
def test_an_object_a_fixture_may_not_build_fresh_and_untouched_is_refused(before, after):
    text = IN_CLASS.replace(before, after, 1)
    assert text != IN_CLASS
    with pytest.raises(NotIsolated, match=re.escape("`shell` is an object")):
        _isolated(text, "TestFish::test_x")


@pytest.mark.parametrize(
    "text, why",
    [
        (
            IN_CLASS.replace("    @pytest.fixture\n    def shell(self):", "    def other(self):"),
            "from a conftest.py or a plugin",
        ),
        (
            IN_CLASS.replace("def shell(self):", "def shell(self, tmp_path):"),
            "not a fresh one built from a class and literals",
        ),
        (
            IN_CLASS.replace("        assert shell", "        shell.reset()\n        assert shell"),
            "uses before the assertion",
        ),
    ],
    ids=["conftest", "other-fixture", "touched"],
)
def test_the_reason_a_fixtures_object_is_not_read_is_said_in_one_line(text: str, why: str):
    with pytest.raises(NotIsolated, match=re.escape(why)) as raised:
        _isolated(text, "TestFish::test_x")
    assert str(raised.value).startswith("cannot isolate the call under test: `shell` is an object")


def test_a_parametrize_of_the_same_name_overrides_the_fixture():
    text = IN_MODULE.replace(
        "def test_x(shell):", "@pytest.mark.parametrize('shell', [1])\ndef test_x(shell):"
    )
    with pytest.raises(NotIsolated):
        _isolated(text, "test_x")


# ------------------------------------------------------------------ end to end, --apply

MODULE = '''class Fish:
    """The fish shell: how it joins commands."""

    def __init__(self, name: str) -> None:
        self.name = name

    def or_(self, *commands: str) -> str:
        """Join COMMANDS so that each runs only when the one before failed: "a; or b"."""
        return "; {word} ".join(commands)
'''
RIGHT, WRONG = MODULE.format(word="or"), MODULE.format(word="and")
ORACLE = """def or_(init_args: tuple, init_kwargs: dict, *commands: str) -> str:
    return "; or ".join(commands)
"""
PATCH = 'def or_(self, *commands: str) -> str:\n    return "; or ".join(commands)\n'
TESTS = """import pytest

from text import Fish


class TestFish:
    @pytest.fixture
    def shell(self):
        return Fish("fish")

    def test_or(self, shell):
        assert shell.or_("a", "b") == {want}
"""
NODE = "tests/test_text.py::TestFish::test_or"


@needs_git
def test_cli_fixes_a_wrong_method_of_an_object_a_fixture_builds(tmp_path: Path, referee):
    root, tests, verdict = arbitrate_template(
        tmp_path, referee, WRONG, TESTS, '"a; or b"', NODE, ORACLE, PATCH
    )
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == 'Fish("fish").or_("a", "b")'
    assert "method-of-fixture-object" in verdict["call_forms"]
    assert (verdict["produced"], verdict["truth"]) == ("'a; and b'", "'a; or b'")
    assert verdict["applied"] is True
    assert 'return "; or ".join(commands)' in (root / "text.py").read_text(encoding="utf-8")
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    assert_tests_pass(root)


@needs_git
def test_cli_edits_the_expected_value_beside_a_fixtures_object_with_a_certificate(
    tmp_path: Path, referee
):
    root, tests, verdict = arbitrate_template(
        tmp_path, referee, RIGHT, TESTS, '"a || b"', NODE, ORACLE, PATCH
    )
    assert verdict["verdict"] == "TEST_WRONG", verdict["reason"]
    assert verdict["applied"] is True and verdict["certificate"] is not None
    fixed = (root / "tests" / "test_text.py").read_text(encoding="utf-8")
    assert fixed == tests.replace('"a || b"', '"a; or b"')  # the fixture as it was
    assert (root / "text.py").read_text(encoding="utf-8") == RIGHT
    assert_tests_pass(root)
    guard = referee("guard", cwd=root)
    assert guard.returncode == 0, guard.stdout + guard.stderr


# ------------------------------------------------------------------ the suite's examples


def test_the_suite_reads_calls_on_the_objects_its_fixtures_build():
    """A test that takes a fixture building the method's class gives examples in the
    oracle contract, the fixture's building among their lines; a class's fixture shadows
    the module's of the same name; a test that touches the object first, or whose
    parametrize gives the name, gives none."""
    from referee.checks.arbitration.suite import assertions

    text = """import pytest
from text import Fish


@pytest.fixture
def shell():
    return Fish("fish")


def test_a(shell):
    assert shell.or_("a", "b") == "a; or b"


def test_touched(shell):
    shell.reset()
    assert shell.or_("c", "d") == "c; or d"


@pytest.mark.parametrize("shell", [None])
def test_given(shell):
    assert shell.or_("e", "f") == "e; or f"


class TestOther:
    @pytest.fixture
    def shell(self):
        return Fish("other")

    def test_b(self, shell):
        assert shell.or_("x") == "x"
"""
    found, _ = assertions(text, "tests/t.py", "or_", "text", owner=("Fish", "method"))
    assert [(f.call, f.want, f.spans) for f in found] == [
        ("or_(('fish',), {}, 'a', 'b')", "'a; or b'", ((11, 11), (7, 7))),
        ("or_(('other',), {}, 'x')", "'x'", ((30, 30), (27, 27))),
    ]


@pytest.mark.parametrize(
    ("fixture", "plain"),
    [
        ('@pytest.fixture\ndef shell(self):\n    """Doc."""\n    return Fish("a")', True),
        ("@pytest.fixture()\ndef shell(self):\n    yield Fish('a', strict=True)", True),
        ('@fixture(scope="function", autouse=True)\ndef shell(cls):\n    return (Fish())', True),
        ('@pytest.fixture\ndef shell(self):\n    return Fish(\n        """x\ny"""\n    )', True),
        ('@pytest.fixture(scope="module")\ndef shell(self):\n    return Fish("a")', False),
        ("@pytest.fixture\ndef shell(self, tmp_path):\n    return Fish(tmp_path)", False),
        ("@pytest.fixture\ndef shell(self, *args):\n    return Fish()", False),
        ("@pytest.fixture\nasync def shell(self):\n    return Fish()", False),
        ("@pytest.fixture\ndef shell(self):\n    f = Fish()\n    return f", False),
        ("@pytest.fixture\n@other\ndef shell(self):\n    return Fish()", False),
        ("@pytest.fixture('a')\ndef shell(self):\n    return Fish()", False),
    ],
)
@pytest.mark.parametrize("indent", ["    ", "\t"])
def test_both_readers_of_a_fixture_apply_one_rule(fixture: str, plain: bool, indent: str):
    """The failing call's reader (tree-sitter) and the suite's (ast) take the same
    fixtures: the rule is one (fixture_rule), whatever the class's indentation."""
    import ast

    from referee.checks.arbitration.fixture_objects import fixture_call
    from referee.checks.arbitration.suite_methods import fixture_buildings
    from referee.checks.pymodule import PythonModule

    lines = fixture.splitlines()
    inside = "\n".join(
        indent + line if line and not line.startswith("y") else line for line in lines
    )
    text = (
        f"import pytest\nfrom mypkg import Fish\n\n\nclass TestFish:\n{inside}\n\n"
        f"{indent}def test_x(self, shell):\n{indent}{indent}assert shell.or_('a') == 'a'\n"
    )
    source = SourceFile("tests/t.py", text)
    fn = next(f for f in PythonModule(source, is_test_file=True).functions if f.name == "test_x")
    call = fixture_call(source, fn, "shell")
    cls = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef))
    built = fixture_buildings(cls.body, lambda node: ast.unparse(node) == "Fish")
    assert (call is not None, "shell" in built) == (plain, plain)
    if plain:  # the same call, found in each tree
        assert source.node_text(call) == ast.get_source_segment(text, built["shell"][0])
