"""A comparison inside unittest's boolean assertion — ``self.assertTrue(f(x) == "1st")``,
``self.assertTrue("a" in f(x))``, ``self.assertFalse("a" in f(x))`` — is read as the
``assert`` it says (form ``comparison-in-boolean``). unittest records only ``False`` of it,
so what the call gives is observed by running the call on the current code in the
sandbox, with the project's files and interpreter. ``assertFalse(f(x) == y)`` is read as
``f(x) != y``; ``assertFalse(f(x) < y)`` is not turned around (``not a < b`` is not ``a >=
b`` for sets or NaN) and is refused in one line.

End to end through ``referee arbitrate --apply`` with the fake OpenAI-compatible model
server: a wrong function is fixed, and a wrong expected value inside ``assertTrue`` is
edited with a certificate the guard honours.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from test_arbitration_oracles import arbitrate_with, assert_tests_pass

from referee.checks.arbitration.isolate import NotIsolated, TestRef, isolate
from referee.checks.source import SourceFile


def _isolated(line: str):
    """``line`` as the body of a unittest method ``T.test_x``, isolated."""
    text = "import unittest\nfrom mypkg import f\n\n\nclass T(unittest.TestCase):\n"
    text += f"    def test_x(self):\n        {line}\n"
    return isolate(SourceFile("tests/t.py", text), TestRef.parse("tests/t.py::T::test_x"), 7)


@pytest.mark.parametrize(
    ("line", "op", "call_side", "expected"),
    [
        ('self.assertTrue(f(1) == "1st")', "==", "left", "1st"),
        ('self.assertTrue("1st" == f(1))', "==", "right", "1st"),
        ('self.assertTrue("a" in f(1))', "in", "right", "a"),
        ('self.assertFalse("a" in f(1))', "not in", "right", "a"),
        ("self.assertTrue(f(1) is None)", "is", "left", None),
        ("self.assertFalse(f(1) is None)", "is not", "left", None),
        ('self.assertFalse(f(1) == "1st")', "!=", "left", "1st"),
        ("self.assertTrue(f(1) > 2)", ">", "left", 2),
    ],
    ids=["equal", "equal-reversed", "in", "not-in", "is", "is-not", "not-equal", "greater"],
)
def test_a_comparison_in_a_boolean_assertion_is_read_as_the_assert_it_says(
    line, op, call_side, expected
):
    isolated = _isolated(line)
    assert (isolated.op, isolated.call_side, isolated.call) == (op, call_side, "f(1)")
    assert ast.literal_eval(isolated.expected.text) == expected
    assert isolated.expected.kind == "assertion"
    assert "comparison-in-boolean" in isolated.forms and "unittest-method" in isolated.forms


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("self.assertFalse(f(1) > 2)", "`assertFalse(a > b)` is not the opposite ordering"),
        ("self.assertTrue(0 < f(1) < 2)", "only comparisons of two values"),
    ],
    ids=["assert-false-greater", "chain"],
)
def test_a_comparison_no_truth_certifies_is_refused_in_one_line(line, reason):
    with pytest.raises(NotIsolated) as caught:
        _isolated(line)
    assert str(caught.value).startswith(reason) and "\n" not in str(caught.value)


# ------------------------------------------------------------------ end to end, --apply

MODULE = '''def ordinal(n: int) -> str:
    """N with its English ordinal suffix: ordinal(1) is "1st", ordinal(2) "2nd", ordinal(3)
    "3rd", ordinal(11) "11th", ordinal(22) "22nd"."""
    if n % 100 in (11, 12, 13):
        return f"{{n}}th"
    return f"{{n}}" + {suffixes}[n % 10]
'''
SUFFIXES = '["th", "st", "nd", "rd", "th", "th", "th", "th", "th", "th"]'
RIGHT = MODULE.format(suffixes=SUFFIXES)
WRONG = MODULE.format(suffixes=SUFFIXES.replace('"nd"', '"th"'))  # 2nd, 22nd wrong
ORACLE = """def ordinal(n):
    if n % 100 in (11, 12, 13):
        return f"{n}th"
    return f"{n}" + {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
"""
TESTS = """import unittest

from text import ordinal


class TestOrdinal(unittest.TestCase):
    def test_x(self):
        self.assertTrue(ordinal(22) == {want})
"""
NODE = "tests/test_text.py::TestOrdinal::test_x"


def test_cli_fixes_a_wrong_function_the_test_compares_inside_assert_true(tmp_path: Path, referee):
    tests = TESTS.format(want='"22nd"')
    root, verdict = arbitrate_with(tmp_path, referee, WRONG, tests, NODE, ORACLE, RIGHT)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == "ordinal(22)" and "comparison-in-boolean" in verdict["call_forms"]
    # observed by running the call: unittest itself recorded only False
    assert (verdict["produced"], verdict["asserted"], verdict["truth"]) == (
        "'22th'",
        "'22nd'",
        "'22nd'",
    )
    assert verdict["applied"] is True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    assert_tests_pass(root)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_cli_edits_the_expected_value_inside_assert_true_with_a_certificate(
    tmp_path: Path, referee
):
    tests = TESTS.format(want='"22th"')
    root, verdict = arbitrate_with(
        tmp_path, referee, RIGHT, tests, NODE, ORACLE, RIGHT, commit=True
    )
    assert verdict["verdict"] == "TEST_WRONG", verdict["reason"]
    assert verdict["applied"] is True and verdict["certificate"] is not None
    fixed = (root / "tests" / "test_text.py").read_text(encoding="utf-8")
    assert fixed == tests.replace('== "22th")', '== "22nd")')
    assert (root / "text.py").read_text(encoding="utf-8") == RIGHT
    guard = referee("guard", cwd=root)
    assert guard.returncode == 0, guard.stdout + guard.stderr


# ------------------------------- a boolean assertion of a value the test assigned first

PALINDROME = '''def is_palindrome(text: str) -> bool:
    """Whether text reads the same backwards, ignoring case: is_palindrome("Aba") is True,
    is_palindrome("ab") False."""
    return text == text[::-1]{fixed}
'''
PALINDROME_ORACLE = "def is_palindrome(text):\n    return text.lower() == text.lower()[::-1]\n"


@pytest.mark.parametrize(
    ("body", "node"),
    [
        (
            'def test_x():\n    r = is_palindrome("Aba")\n    assert len("Aba") == 3\n'
            "    assert r\n",
            "tests/test_text.py::test_x",
        ),
        (
            "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_x(self):\n"
            '        r = is_palindrome("Aba")\n        self.assertIsNotNone(r)\n'
            "        self.assertTrue(r)\n",
            "tests/test_text.py::T::test_x",
        ),
    ],
    ids=["assert-name", "assert-true-name"],
)
def test_cli_fixes_a_function_whose_assigned_value_the_test_asserts_true(
    tmp_path: Path, referee, body: str, node: str
):
    """``r = is_palindrome("Aba")``, then ``assert r`` (``self.assertTrue(r)``) after an
    assertion that only looked at ``r``: the call is the one ``r`` holds (forms
    ``boolean``, ``assigned-call``), blamed on the source and fixed."""
    tests = f"from text import is_palindrome\n\n\n{body}"
    wrong = PALINDROME.format(fixed="")
    right = PALINDROME.format(fixed="").replace(
        "return text == text[::-1]", "return text.lower() == text.lower()[::-1]"
    )
    root, verdict = arbitrate_with(tmp_path, referee, wrong, tests, node, PALINDROME_ORACLE, right)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == 'is_palindrome("Aba")'
    assert {"boolean", "assigned-call"} <= set(verdict["call_forms"])
    assert verdict["truth"] == "True" and verdict["applied"] is True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    assert_tests_pass(root)
