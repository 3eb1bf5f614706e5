"""An inequality or an ordering of the call's value: ``assert ordinal(22) != "22th"``,
``assert count_vowels("aeiou") >= 5``, ``assert 4 < count_vowels("aeiou")``,
``self.assertNotEqual`` / ``assertGreater`` / ``assertLessEqual`` (forms ``inequality`` and
``ordering``). As for a membership expectation, the truth decides by whether it meets the
comparison the test wrote: when it does and what the code produced does not, the source
is wrong and a fix must give the truth itself; when it does not, the test may be wrong,
but the fix would change what the test means, not one value: UNCLEAR, nothing edited.

End to end through ``referee arbitrate --apply`` with the fake OpenAI-compatible model
server.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_arbitration import BUGGY, CORRECT
from test_arbitration_boolean_comparisons import ORACLE as ORDINAL_ORACLE
from test_arbitration_boolean_comparisons import RIGHT, WRONG
from test_arbitration_oracles import arbitrate_with, assert_tests_pass

from referee.checks.arbitration.outcomes import meets

VOWELS_ORACLE = "def count_vowels(text):\n    return sum(ch in 'aeiou' for ch in text.lower())\n"


@pytest.mark.parametrize(
    ("op", "call_side", "value", "expected", "met"),
    [
        ("!=", "left", "'22nd'", "'22th'", True),
        ("!=", "left", "'22th'", "'22th'", False),
        ("!=", "left", "1", "1.0", False),  # as Python compares them
        (">=", "left", "5", "5", True),
        (">", "left", "5", "5", False),
        ("<", "right", "5", "4", True),  # 4 < value
        ("<", "left", "5", "4", False),  # value < 4
        ("<=", "right", "3", "4", False),
        # a set's ordering is by subset: neither {1} < {2} nor {1} >= {2}
        ("<", "left", "{1}", "{2}", False),
        (">=", "left", "{1}", "{2}", False),
    ],
)
def test_an_ordering_is_met_as_python_orders_the_two_values_in_the_tests_order(
    op, call_side, value, expected, met
):
    assert meets(op, call_side, value, expected) is met


@pytest.mark.parametrize(
    ("value", "expected"),
    [("'a'", "1"), ("None", "0"), ("f()", "1"), ("1", "x")],
    ids=["unorderable", "none", "not-a-literal", "bound-not-a-literal"],
)
def test_values_that_cannot_be_ordered_meet_nothing_and_say_so(value, expected):
    assert meets(">", "left", value, expected) is None


# ------------------------------------------------------------------ end to end, --apply

VOWEL_TESTS = """import unittest

from text import count_vowels


def test_vowels():
    assert {assertion}


class T(unittest.TestCase):
    def test_vowels(self):
        self.{method}
"""


@pytest.mark.parametrize(
    ("assertion", "method", "node"),
    [
        ('count_vowels("aeiou") >= 5', "assertEqual(1, 1)", "tests/test_text.py::test_vowels"),
        ('4 < count_vowels("aeiou")', "assertEqual(1, 1)", "tests/test_text.py::test_vowels"),
        # a bound the test computes: its value is the one the failing comparison recorded
        (
            'count_vowels("aeiou") >= len("abcde")',
            "assertEqual(1, 1)",
            "tests/test_text.py::test_vowels",
        ),
        (
            "True",
            'assertGreaterEqual(count_vowels("aeiou"), 5)',
            "tests/test_text.py::T::test_vowels",
        ),
    ],
    ids=["assert-ge", "bound-on-the-left", "computed-bound", "assert-greater-equal"],
)
def test_cli_fixes_a_function_whose_value_breaks_the_ordering_the_test_asserts(
    tmp_path: Path, referee, assertion: str, method: str, node: str
):
    tests = VOWEL_TESTS.format(assertion=assertion, method=method)
    root, verdict = arbitrate_with(tmp_path, referee, BUGGY, tests, node, VOWELS_ORACLE, CORRECT)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == 'count_vowels("aeiou")' and "ordering" in verdict["call_forms"]
    assert (verdict["produced"], verdict["truth"]) == ("4", "5")
    assert verdict["applied"] is True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    assert (root / "text.py").read_text(encoding="utf-8") != BUGGY
    assert_tests_pass(root)


def test_an_ordering_the_truth_does_not_meet_is_unclear_and_nothing_is_edited(
    tmp_path: Path, referee
):
    """The code is right (5 vowels) and the test's bound is wrong (``> 5``): the test
    looks wrong, but no one value of it is the fix — a person decides."""
    tests = VOWEL_TESTS.format(assertion='count_vowels("aeiou") > 5', method="assertTrue(1)")
    root, verdict = arbitrate_with(
        tmp_path, referee, CORRECT, tests, "tests/test_text.py::test_vowels", VOWELS_ORACLE, CORRECT
    )
    assert verdict["verdict"] == "UNCLEAR", verdict["reason"]
    assert "does not meet the test's expectation" in verdict["reason"]
    assert verdict["applied"] is not True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    assert (root / "text.py").read_text(encoding="utf-8") == CORRECT


ORDINAL_TESTS = """import unittest

from text import ordinal


class TestOrdinal(unittest.TestCase):
    def test_x(self):
        {line}
"""
ORDINAL_NODE = "tests/test_text.py::TestOrdinal::test_x"


@pytest.mark.parametrize(
    "line",
    ['assert ordinal(22) != "22th"', 'self.assertFalse(ordinal(22) == "22th")'],
    ids=["assert-not-equal", "assert-false-equal"],
)
def test_cli_fixes_a_function_that_gives_the_value_the_test_says_it_must_not(
    tmp_path: Path, referee, line: str
):
    tests = ORDINAL_TESTS.format(line=line)
    root, verdict = arbitrate_with(
        tmp_path, referee, WRONG, tests, ORDINAL_NODE, ORDINAL_ORACLE, RIGHT
    )
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == "ordinal(22)" and "inequality" in verdict["call_forms"]
    assert (verdict["produced"], verdict["truth"]) == ("'22th'", "'22nd'")
    assert verdict["applied"] is True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    assert_tests_pass(root)


def test_an_inequality_the_truth_breaks_is_unclear_and_nothing_is_edited(tmp_path: Path, referee):
    """``assertNotEqual(ordinal(22), "22nd")`` of the right code: the truth is the very value
    the test says it must not be. The test looks wrong; nothing is edited."""
    tests = ORDINAL_TESTS.format(line='self.assertNotEqual(ordinal(22), "22nd")')
    root, verdict = arbitrate_with(
        tmp_path, referee, RIGHT, tests, ORDINAL_NODE, ORDINAL_ORACLE, RIGHT
    )
    assert verdict["verdict"] == "UNCLEAR", verdict["reason"]
    assert "does not meet the test's expectation" in verdict["reason"]
    assert verdict["applied"] is not True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    assert (root / "text.py").read_text(encoding="utf-8") == RIGHT
