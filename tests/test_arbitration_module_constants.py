"""An argument that is a constant of the test module — ``INPUT = 9999`` at its top level,
bound there once and nowhere else, of an immutable literal value — is read as written
(form ``module-constant``) and never edited, since other tests may use it. And the suite's
``self.assertTrue(f(x) == y)`` is one of its examples, as ``assert f(x) == y`` is.

End to end through ``referee arbitrate --apply`` with the fake OpenAI-compatible model
server: a wrong function called on a constant is fixed, and a wrong expected value beside
one is edited with a certificate the guard honours; the constant is never edited.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_arbitration_boolean_comparisons import ORACLE, RIGHT, WRONG
from test_arbitration_oracles import arbitrate_template, assert_tests_pass

from referee.checks.arbitration.isolate import NotIsolated, TestRef, isolate
from referee.checks.arbitration.suite_reading import assertions
from referee.checks.source import SourceFile


def _isolated(lines: str, head: str = ""):
    """``lines`` as the body of a unittest method ``T.test_x``, its last line isolated."""
    text = "import unittest\nfrom mypkg import f\n" + head + "\n\nclass T(unittest.TestCase):\n"
    text += "    def test_x(self):\n" + "".join(f"        {line}\n" for line in lines.splitlines())
    line = text.rstrip("\n").count("\n") + 1
    return isolate(SourceFile("tests/t.py", text), TestRef.parse("tests/t.py::T::test_x"), line)


def test_an_immutable_module_constant_is_an_argument_as_written():
    isolated = _isolated(
        'self.assertEqual(f(INPUT, UNITS), "10.0k")', "INPUT = 9999\nUNITS = ('k', 'M')\n"
    )
    assert isolated.call == "f(9999, ('k', 'M'))"
    assert "module-constant" in isolated.forms
    assert isolated.expected.kind == "assertion"  # only the expected literal may be edited


@pytest.mark.parametrize(
    "head, lines",
    [
        ("INPUT = 1\nINPUT = 2\n", "self.assertEqual(f(INPUT), 3)"),  # bound twice
        ("INPUT = [1, 2]\n", "self.assertEqual(f(INPUT), 3)"),  # a list another test may change
        ("INPUT = g()\n", "self.assertEqual(f(INPUT), 3)"),  # not a literal
        ("INPUT = 1\n", "INPUT = g()\nself.assertEqual(f(INPUT), 3)"),  # the test's own
        (
            "INPUT = 1\ndef setup():\n    global INPUT\n    INPUT = 2\n",
            "self.assertEqual(f(INPUT), 3)",
        ),
        ("", "self.assertEqual(f(INPUT), 3)"),  # bound nowhere
        ("INPUT = 1\nfrom mypkg.constants import *\n", "self.assertEqual(f(INPUT), 3)"),
    ],
    ids=["bound-twice", "mutable", "not-a-literal", "local", "global", "unbound", "star-import"],
)
def test_a_module_name_that_is_no_constant_is_refused(head, lines):
    with pytest.raises(NotIsolated, match="an argument `INPUT` is not a literal"):
        _isolated(lines, head)


def test_the_suites_comparisons_in_assert_true_are_its_examples():
    text = """import unittest
from pkg.words import ordinal


class T(unittest.TestCase):
    def test_a(self):
        self.assertTrue(ordinal(1) == "1st")
        self.assertTrue(ordinal(2) > "1")  # not an equality
        self.assertTrue(ordinal(3))
"""
    found, _ = assertions(text, "tests/t.py", "ordinal", "pkg.words")
    # ``assertTrue(f(x))`` alone states the value's truth: ``bool(f(x))`` is True
    assert [(f.call, f.want) for f in found] == [
        ("ordinal(1)", "'1st'"),
        ("bool(ordinal(3))", "True"),
    ]


# ------------------------------------------------------------------ end to end, --apply

# the ordinal module (RIGHT, WRONG) and its ORACLE come from test_arbitration_boolean_comparisons
PATCH = RIGHT
TESTS = """import unittest

from text import ordinal

TWENTY_TWO = 22


class TestOrdinal(unittest.TestCase):
    def test_x(self):
        self.assertEqual(ordinal(TWENTY_TWO), {want})
"""
NODE = "tests/test_text.py::TestOrdinal::test_x"


def _arbitrate(tmp_path: Path, referee, module: str, want: str) -> tuple[Path, str, dict]:
    return arbitrate_template(tmp_path, referee, module, TESTS, want, NODE, ORACLE, PATCH)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_cli_fixes_a_wrong_function_called_on_a_module_constant(tmp_path: Path, referee):
    root, tests, verdict = _arbitrate(tmp_path, referee, WRONG, '"22nd"')
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == "ordinal(22)"
    assert "module-constant" in verdict["call_forms"], verdict["call_forms"]
    assert (verdict["produced"], verdict["truth"]) == ("'22th'", "'22nd'")
    assert verdict["applied"] is True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    assert_tests_pass(root)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_cli_edits_the_expected_value_beside_a_module_constant_with_a_certificate(
    tmp_path: Path, referee
):
    root, tests, verdict = _arbitrate(tmp_path, referee, RIGHT, '"22th"')
    assert verdict["verdict"] == "TEST_WRONG", verdict["reason"]
    assert verdict["applied"] is True and verdict["certificate"] is not None
    fixed = (root / "tests" / "test_text.py").read_text(encoding="utf-8")
    assert fixed == tests.replace('"22th")', '"22nd")')
    assert (root / "text.py").read_text(encoding="utf-8") == RIGHT
    guard = referee("guard", cwd=root)
    assert guard.returncode == 0, guard.stdout + guard.stderr
