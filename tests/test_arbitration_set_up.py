"""What unittest suites build in ``setUp``: ``self.start = 5`` read as an argument
(``set-up-attribute``), ``START = 5`` in the class body read through ``self.START``
(``class-attribute``), and ``self.scale = Scale(10)`` then ``self.scale.shift(...)`` — a
method of an object the test's class builds once from a class and literals
(``method-of-set-up-object``). Each is read only where nothing else can have bound the name
by the time the assertion ran, and is never edited (other tests read it too).

End to end through ``referee arbitrate --apply`` with the fake OpenAI-compatible model
server: a wrong method called on a set-up object is fixed inside its class, and a wrong
expected value beside one is edited with a certificate the guard honours.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from test_arbitration_oracles import arbitrate_template, assert_tests_pass

from referee.checks.arbitration.isolate import NotIsolated, TestRef, isolate
from referee.checks.source import SourceFile


def _isolated(set_up: str, lines: str, *, head: str = "", base: str = "unittest.TestCase"):
    """A unittest class whose setUp is ``set_up`` and whose test's body is ``lines``, the
    test's last line isolated."""
    text = "import unittest\nfrom mypkg import Parser, f\n" + head + "\n\n"
    text += f"class T({base}):\n"
    text += "".join(f"    {line}\n" for line in set_up.splitlines()) + "\n"
    text += "    def test_x(self):\n" + "".join(f"        {line}\n" for line in lines.splitlines())
    line = text.rstrip("\n").count("\n") + 1
    return isolate(SourceFile("tests/t.py", text), TestRef.parse("tests/t.py::T::test_x"), line)


SET_UP = "def setUp(self):\n    super().setUp()\n    self.big = 1000000\n    self.p = Parser('en')"


def test_a_literal_set_up_binds_once_is_an_argument_as_written():
    isolated = _isolated(SET_UP, 'self.assertEqual(f(self.big), "1.0M")')
    assert isolated.call == "f(1000000)"
    assert "set-up-attribute" in isolated.forms
    assert isolated.expected.kind == "assertion"  # only the expected literal may be edited


def test_a_class_attribute_read_through_self_is_an_argument_as_written():
    isolated = _isolated("BIG = (1, 2)", 'self.assertEqual(f(self.BIG), "x")')
    assert isolated.call == "f((1, 2))"
    assert "class-attribute" in isolated.forms


def test_a_method_of_an_object_set_up_builds_from_literals_is_the_call_under_test():
    isolated = _isolated(SET_UP, 'self.assertEqual(self.p.parse("2013-05-05", fmt="Y"), 2013)')
    assert isolated.callee == "Parser.parse"
    assert isolated.constructor == "Parser"
    assert isolated.constructor_arguments == ("'en'",)
    assert isolated.call == 'Parser(\'en\').parse("2013-05-05", fmt="Y")'
    assert "method-of-set-up-object" in isolated.forms


@pytest.mark.parametrize(
    "lines",
    [
        'p = self.parser_class("en")\nself.assertEqual(p.parse("x"), 1)',
        'self.assertEqual(self.parser_class("en").parse("x"), 1)',
    ],
)
def test_a_class_the_test_class_names_in_an_attribute_builds_the_object(lines: str):
    # ``parser_class = Parser`` in the class body, as werkzeug's and scrapy's suites write it
    isolated = _isolated("parser_class = Parser", lines)
    assert (isolated.callee, isolated.constructor) == ("Parser.parse", "Parser")
    assert isolated.constructor_arguments == ('"en"',) and "class-attribute" in isolated.forms


@pytest.mark.parametrize(
    ("set_up", "base"),
    [
        # setUp may bind it on the instance; a base class's setUp too; bound twice
        ("def setUp(self):\n    self.parser_class = Parser", "unittest.TestCase"),
        ("parser_class = Parser", "BaseCase"),
        ("parser_class = Parser\nparser_class = Other", "unittest.TestCase"),
        ("parser_class = make_parser()", "unittest.TestCase"),
    ],
)
def test_a_class_named_through_an_attribute_the_class_may_bind_otherwise_is_not_read(
    set_up: str, base: str
):
    # no class: the call stays a method of an unknown object, which the run's names refuse
    lines = 'p = self.parser_class("en")\nself.assertEqual(p.parse("x"), 1)'
    isolated = _isolated(set_up, lines, base=base)
    assert isolated.constructor is None and "class-attribute" not in isolated.forms


@pytest.mark.parametrize(
    ("set_up", "lines"),
    [
        (SET_UP, "self.big = 2\nself.assertEqual(f(self.big), 3)"),  # the test binds it again
        ("def setUp(self):\n    self.big = [1, 2]", "self.assertEqual(f(self.big), 3)"),
        (
            "def setUp(self):\n    if True:\n        self.big = 1",
            "self.assertEqual(f(self.big), 3)",
        ),
        (
            "def setUp(self):\n    self.big = 1\n    super().setUp()",  # a base may bind it
            "self.assertEqual(f(self.big), 3)",
        ),
        (
            "def setUp(self):\n    self.big = 1\n\ndef helper(self):\n    self.big += 1",
            "self.assertEqual(f(self.big), 3)",
        ),
        (
            "def setUp(self):\n    self.big = 1\n    setattr(self, 'big', 2)",
            "self.assertEqual(f(self.big), 3)",
        ),
        ("def setUp(self):\n    self.big = g()", "self.assertEqual(f(self.big), 3)"),
        ("def other(self):\n    self.big = 1", "self.assertEqual(f(self.big), 3)"),
        ("def setUp(self):\n    pass", "self.assertEqual(f(self.big), 3)"),  # bound nowhere
    ],
    ids=[
        "bound-in-the-test",
        "mutable",
        "conditional",
        "super-after",
        "augmented-elsewhere",
        "setattr",
        "not-a-literal",
        "not-set-up",
        "unbound",
    ],
)
def test_an_attribute_the_class_does_not_bind_once_to_a_literal_is_refused(set_up, lines):
    with pytest.raises(NotIsolated, match=re.escape("an argument `self.big` is not a literal")):
        _isolated(set_up, lines)


def test_a_class_attribute_beside_a_base_that_may_set_it_is_refused():
    with pytest.raises(NotIsolated, match=re.escape("an argument `self.BIG` is not a literal")):
        _isolated("BIG = 1", "self.assertEqual(f(self.BIG), 3)", base="BaseCase")


@pytest.mark.parametrize(
    ("set_up", "lines"),
    [
        # touched before the assertion: the object may no longer be what setUp built
        (SET_UP, 'self.p.reset()\nself.assertEqual(self.p.parse("x"), 1)'),
        (SET_UP, 'if True:\n    self.p.reset()\n    self.assertEqual(self.p.parse("x"), 1)'),
        (
            "def setUp(self):\n    self.p = Parser('en')\n    self.p.load()",
            'self.assertEqual(self.p.parse("x"), 1)',
        ),
        # built from a name of setUp's own: not read there
        (
            "def setUp(self):\n    lang = 'en'\n    self.p = Parser(lang)",
            'self.assertEqual(self.p.parse("x"), 1)',
        ),
        (
            "def setUp(self):\n    self.p = Parser('en')\n\n"
            "def test_y(self):\n    self.p = Parser('fr')",
            'self.assertEqual(self.p.parse("x"), 1)',
        ),
    ],
    ids=[
        "touched-in-the-test",
        "touched-in-the-block",
        "touched-in-set-up",
        "built-from-a-local",
        "bound-twice",
    ],
)
def test_an_object_set_up_does_not_build_once_and_leave_alone_is_refused(set_up, lines):
    with pytest.raises(
        NotIsolated, match=re.escape("`self.p` is an object the test's class does not build")
    ):
        _isolated(set_up, lines)


# ------------------------------------------------------------------ end to end, --apply

MODULE = '''class Scale:
    """A scale whose readings are offset by a fixed amount."""

    def __init__(self, offset: int) -> None:
        self.offset = offset

    def shift(self, value: int) -> int:
        """VALUE read on this scale: VALUE plus the scale's offset."""
        return value {op} self.offset
'''
RIGHT, WRONG = MODULE.format(op="+"), MODULE.format(op="-")
ORACLE = """def shift(init_args: tuple, init_kwargs: dict, value: int) -> int:
    (offset,) = init_args
    return value + offset
"""
PATCH = "def shift(self, value: int) -> int:\n    return value + self.offset\n"
TESTS = """import unittest

from text import Scale


class TestScale(unittest.TestCase):
    def setUp(self):
        super().setUp()
        self.scale = Scale(10)
        self.start = 5

    def test_x(self):
        self.assertEqual(self.scale.shift(self.start), {want})
"""
NODE = "tests/test_text.py::TestScale::test_x"


def _arbitrate(tmp_path: Path, referee, module: str, want: str) -> tuple[Path, str, dict]:
    return arbitrate_template(tmp_path, referee, module, TESTS, want, NODE, ORACLE, PATCH)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_cli_fixes_a_wrong_method_of_an_object_set_up_builds(tmp_path: Path, referee):
    root, tests, verdict = _arbitrate(tmp_path, referee, WRONG, "15")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == "Scale(10).shift(5)"
    assert verdict["call_forms"] == [
        "unittest-method",
        "method-of-set-up-object",
        "set-up-attribute",
    ]
    assert (verdict["produced"], verdict["truth"]) == ("-5", "15")
    assert verdict["applied"] is True
    assert "        return value + self.offset\n" in (root / "text.py").read_text(encoding="utf-8")
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    assert_tests_pass(root)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_cli_edits_the_expected_value_beside_set_up_values_with_a_certificate(
    tmp_path: Path, referee
):
    root, tests, verdict = _arbitrate(tmp_path, referee, RIGHT, "16")
    assert verdict["verdict"] == "TEST_WRONG", verdict["reason"]
    assert verdict["applied"] is True and verdict["certificate"] is not None
    fixed = (root / "tests" / "test_text.py").read_text(encoding="utf-8")
    # the expected value only: setUp, which other tests read, is as it was
    assert fixed == tests.replace("self.start), 16)", "self.start), 15)")
    assert (root / "text.py").read_text(encoding="utf-8") == RIGHT
    assert_tests_pass(root)
    guard = referee("guard", cwd=root)
    assert guard.returncode == 0, guard.stdout + guard.stderr
