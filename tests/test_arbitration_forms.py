"""Calls as real tests write them, end to end through the engine: unittest's assertion
methods and bare assertion functions, boolean, identity and membership expectations,
arguments from a loop over a table of cases or a local variable, and methods.

Real pytest runs and the real sandbox; the truth is a doctest or a declared reference, so
no model is asked. Only the source is ever blamed for a boolean, identity or membership
assertion, and a value read from the test's locals is never edited.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
from red_team.fake_openai import FakeModel
from test_arbitration import BUGGY, CORRECT, GOOD_PATCH, ORACLE, project, run
from test_arbitration_oracles import body, cli_project

from referee.checks.arbitration.isolate import NotIsolated
from referee.checks.models import arbitration_schema

MODULE = '''def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains.

    >>> count_vowels("aeiou")
    5
    """
    return sum(1 for ch in text{skip}.lower() if ch in "aeiou")


def has_vowel(text: str) -> bool:
    """Whether TEXT holds a vowel.

    >>> has_vowel("ab")
    True
    """
    return any(ch in "aeiou" for ch in text{skip})


def vowels(text: str) -> list:
    """The vowels of TEXT, in order.

    >>> vowels("apple")
    ['a', 'e']
    """
    return [ch for ch in text{skip} if ch in "aeiou"]


def first_vowel(text: str):
    """The first vowel of TEXT, or None when it has none."""
    found = [ch for ch in text if ch in "aeiou"]
    return found[0] if found else {none}


class Counter:
    """Counts vowels."""

    def __init__(self, vowels: str = "aeiou") -> None:
        self.vowels = vowels

    def count(self, text: str) -> int:
        """How many of the counter's vowels TEXT holds.

        >>> Counter().count("aeiou")
        5
        """
        return sum(ch in self.vowels for ch in text{skip})

    @staticmethod
    def twice(n: int) -> int:
        """N times two.

        >>> Counter.twice(2)
        4
        """
        return n * 3

    @classmethod
    def thrice(cls, n: int) -> int:
        """N times three.

        >>> Counter.thrice(2)
        6
        """
        return n * 4
'''
RIGHT = MODULE.format(skip="", none="None")
WRONG = MODULE.format(skip="[1:]", none='""')
REFERENCE = '[arbitration]\nreferences = { "text:first_vowel" = "reference:first_vowel" }\n'


def arbitrated(tmp_path: Path, module: str, lines: str, *, head: str = "", unit: bool = False):
    """``lines`` as the test (a unittest method when ``unit``), arbitrated."""
    imports = (
        "import unittest\n\n"
        "from text import Counter, count_vowels, first_vowel, has_vowel, vowels\n"
    )
    if unit:
        tests = f"{imports}{head}\n\nclass TestText(unittest.TestCase):\n    def test_x(self):\n"
        tests += "".join(f"        {line}\n" for line in lines.splitlines())
        test_id = "tests/test_text.py::TestText::test_x"
    else:
        tests = f"{imports}{head}\n\ndef test_x():\n" + "".join(
            f"    {line}\n" for line in lines.splitlines()
        )
        test_id = "tests/test_text.py::test_x"
    root = project(tmp_path / "p", module, tests, REFERENCE)
    (root / "reference.py").write_text(
        "def first_vowel(text):\n    return next((c for c in text if c in 'aeiou'), None)\n",
        encoding="utf-8",
    )
    result = run(root, test_id, None)
    return result, (root / "tests" / "test_text.py").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("body", "unit", "forms", "produced", "asserted"),
    [
        ('assert has_vowel("ab")', False, ("boolean",), "False", "True"),
        ('self.assertTrue(has_vowel("ab"))', True, ("unittest-method", "boolean"), "False", "True"),
        ('assert "a" in vowels("apple")', False, ("membership",), "['e']", "'a'"),
        (
            'self.assertIn("a", vowels("apple"))',
            True,
            ("unittest-method", "membership"),
            "['e']",
            "'a'",
        ),
        (
            'self.assertIs(has_vowel("ab"), True)',
            True,
            ("unittest-method", "identity"),
            "False",
            "True",
        ),
        ('assert first_vowel("xyz") is None', False, ("identity",), "''", "None"),
        (
            'self.assertIsNone(first_vowel("xyz"))',
            True,
            ("unittest-method", "identity"),
            "''",
            "None",
        ),
    ],
)
def test_boolean_identity_and_membership_expectations_blame_a_wrong_source(
    tmp_path: Path, body: str, unit: bool, forms: tuple, produced: str, asserted: str
):
    result, _ = arbitrated(tmp_path, WRONG, body, unit=unit)
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.call_forms == forms
    assert (verdict.observation.produced, verdict.observation.asserted) == (produced, asserted)
    assert "meets the test's expectation" in verdict.reason
    assert result.new_text is None  # no model: a person gets the fix


@pytest.mark.parametrize(
    ("body", "call"),
    [
        ('self.assertSetEqual(set(vowels("apple")), {"a", "e"})', 'set(vowels("apple"))'),
        (
            'self.assertMultiLineEqual(str(count_vowels("aeiou")), "5")',
            'str(count_vowels("aeiou"))',
        ),
        # assertEqual hands two strings to assertMultiLineEqual: one failure, one comparison
        ('self.assertEqual(str(count_vowels("aeiou")), "5")', 'str(count_vowels("aeiou"))'),
        ('self.assertEqual(vowels("apple"), ["a", "e"])', 'vowels("apple")'),
    ],
    ids=["set-equal", "multi-line-equal", "equal-of-strings", "equal-of-lists"],
)
def test_unittests_typed_equalities_blame_a_wrong_source(tmp_path: Path, body: str, call: str):
    result, _ = arbitrated(tmp_path, WRONG, body, unit=True)
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.call == call and verdict.call_forms == ("unittest-method",)
    assert verdict.truth_source == "doctest"


@pytest.mark.parametrize(
    "body",
    [
        'assert not has_vowel("ab")',
        'self.assertFalse(has_vowel("ab"))',
        'self.assertNotIn("a", vowels("apple"))',
        'self.assertIsNotNone(first_vowel("xyz"))',
        'assert first_vowel("xyz") is not None',
    ],
)
def test_a_right_source_under_a_boolean_or_membership_assertion_is_left_to_a_person(
    tmp_path: Path, body: str
):
    """The truth agrees with the code, so the test looks wrong — but turning an assertion
    around is not replacing one value: UNCLEAR, never an edit of the test."""
    unit = body.startswith("self.")
    result, text = arbitrated(tmp_path, RIGHT, body, unit=unit)
    verdict = result.verdict
    assert verdict.verdict == "UNCLEAR", verdict.reason
    assert "does not meet the test's expectation" in verdict.reason
    assert "referee edits only the expected value of an equality" in verdict.reason
    assert verdict.fix is None and result.new_text is None and body in text


def test_a_comparison_that_failed_earlier_and_was_caught_is_not_the_failing_assertion(
    tmp_path: Path,
):
    lines = (
        "with pytest.raises(AssertionError):\n"
        '    assert count_vowels("xyz") == 9\n'
        'assert has_vowel("ab")'
    )
    result, _ = arbitrated(tmp_path, WRONG, lines, head="import pytest\n")
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.call == 'has_vowel("ab")' and verdict.call_forms == ("boolean",)


def test_an_assertion_error_the_call_raises_is_what_it_produced_not_a_falsy_value(tmp_path: Path):
    module = RIGHT.replace(
        '    return any(ch in "aeiou" for ch in text)',
        '    assert len(text) > 5, "too short"\n    return any(ch in "aeiou" for ch in text)',
    )
    result, _ = arbitrated(tmp_path, module, 'assert has_vowel("ab")')
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.produced == "AssertionError: too short"


def test_a_bare_assert_equal_bound_in_the_module_is_an_equality_a_test_fix_can_edit(
    tmp_path: Path,
):
    result, _ = arbitrated(
        tmp_path,
        RIGHT,
        'assertEqual(count_vowels("aeiou"), 4)',
        head="\nassertEqual = unittest.TestCase().assertEqual\n",
    )
    verdict = result.verdict
    assert verdict.verdict == "TEST_WRONG", verdict.reason
    assert verdict.call_forms == ("assert-function",)
    assert 'assertEqual(count_vowels("aeiou"), 5)' in result.new_text


@pytest.mark.parametrize(
    ("head", "body"),
    [
        (
            '\nCASES = [("xyz", 0), ("aeiou", 5)]\n',
            "for text, want in CASES:\n    assert count_vowels(text) == want",
        ),
        (
            '\nCASES = [{"in": "xyz", "out": 0}, {"in": "aeiou", "out": 5}]\n',
            'for case in CASES:\n    assert count_vowels(case["in"]) == case["out"]',
        ),
        (
            "",
            'for text, want in [("xyz", 0), ("aeiou", 5)]:\n'
            "    self.assertEqual(count_vowels(text), want)",
        ),
    ],
)
def test_a_loop_over_a_table_of_cases_blames_a_wrong_source(tmp_path: Path, head: str, body: str):
    unit = "self." in body
    result, _ = arbitrated(tmp_path, WRONG, body, head=head, unit=unit)
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.call == "count_vowels('aeiou')"
    assert (verdict.produced, verdict.asserted, verdict.truth) == ("4", "5", "5")
    assert "loop-table" in verdict.call_forms
    assert verdict.observation.expected_site == "local"


def test_parametrize_values_a_module_table_holds_are_read_as_the_case_ran(tmp_path: Path):
    """``@pytest.mark.parametrize("text, want", CASES)``: the values are not written in the
    decorator, so the failing case is read from the test frame (its arguments)."""
    tests = (
        "import pytest\n\nfrom text import count_vowels\n\n"
        'CASES = [("xyz", 0), ("aeiou", 5)]\n\n\n'
        '@pytest.mark.parametrize("text, want", CASES)\n'
        "def test_x(text, want):\n"
        "    assert count_vowels(text) == want\n"
    )
    root = project(tmp_path / "p", WRONG, tests)
    verdict = run(root, "tests/test_text.py::test_x", None).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.test_id == "tests/test_text.py::test_x[aeiou-5]"
    assert verdict.call == "count_vowels('aeiou')" and verdict.call_forms == ("parametrize",)
    assert verdict.observation.expected_site == "local"


def test_a_wrong_value_in_a_table_of_cases_is_found_but_not_edited(tmp_path: Path):
    body = "for text, want in CASES:\n    assert count_vowels(text) == want"
    result, text = arbitrated(tmp_path, RIGHT, body, head='\nCASES = [("xyz", 0), ("aeiou", 4)]\n')
    verdict = result.verdict
    assert verdict.verdict == "UNCLEAR", verdict.reason
    assert verdict.truth == "5" and "came from the test's locals" in verdict.reason
    assert result.new_text is None and '("aeiou", 4)' in text


def test_a_local_computed_before_the_call_is_read_from_the_failing_frame(tmp_path: Path):
    result, _ = arbitrated(tmp_path, WRONG, 'text = "ae" + "iou"\nassert count_vowels(text) == 5')
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.call == "count_vowels('aeiou')" and verdict.call_forms == ("local",)


def test_a_mutable_local_argument_is_not_taken_the_call_may_have_changed_it(tmp_path: Path):
    # sorted in place before the call: not the list the assignment built (read statically,
    # `list("aeiou")` is what the call was given when nothing else touches it)
    body = 'text = list("aeiou")\ntext.sort()\nassert count_vowels(text) == 5'
    result, _ = arbitrated(tmp_path, WRONG, body)
    verdict = result.verdict
    assert verdict.verdict == "UNCLEAR"
    assert "is a list the recorder saw after the call, which may have changed it" in verdict.reason


CHUNKS = '''def chunks(items: list, n: int) -> list:
    """Split ITEMS into lists of N items (the last may be shorter).

    >>> chunks([1, 2, 3], 2)
    [[1, 2], [3]]
    """
    {guard}return [items[i : i + max(n, 1)] for i in range(0, len(items), max(n, 1))]
'''
CHUNKS_RIGHT = CHUNKS.format(
    guard='if n < 1:\n        raise ValueError("n must be at least 1")\n    '
)
CHUNKS_WRONG = CHUNKS.format(guard="")
# oracles of the docstring that raise ValueError for n < 1, as the right code does
RAISING_ORACLE = (
    "def chunks(items, n):\n"
    "    if n < 1:\n"
    "        raise ValueError('n')\n"
    "    return [items[i : i + n] for i in range(0, len(items), n)]\n"
)
RETURNING_ORACLE = (
    "def chunks(items, n):\n"
    "    n = max(n, 1)\n"
    "    return [items[i : i + n] for i in range(0, len(items), n)]\n"
)


def _chunks_project(tmp_path: Path, module: str, body: str, url: str) -> Path:
    tests = (
        "import unittest\n\nimport pytest\n\nfrom text import chunks\n\n\n"
        "def test_x():\n" + "".join(f"    {line}\n" for line in body.splitlines())
    )
    return cli_project(tmp_path / "p", module, tests, url)


@pytest.mark.parametrize(
    "body",
    [
        "with pytest.raises(ValueError):\n    chunks([1, 2], 0)",
        "with pytest.raises(ValueError, match='at least'):\n    list(chunks([1, 2], 0))",
        "unittest.TestCase().assertRaises(ValueError, chunks, [1, 2], 0)",
        "unittest.TestCase().assertRaisesRegex(ValueError, 'n', lambda: chunks([1, 2], 0))",
    ],
)
def test_cli_blames_a_source_that_does_not_raise_what_the_test_expects(
    tmp_path: Path, referee, body: str
):
    with FakeModel(lambda kind: RAISING_ORACLE) as model:
        root = _chunks_project(tmp_path, CHUNKS_WRONG, body, model.url)
        before = (root / "text.py").read_text(encoding="utf-8")
        verdict = _cli(referee, root, "tests/test_text.py::test_x")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert "raises" in verdict["call_forms"] and verdict["observation"]["op"] == "raises"
    assert verdict["truth"] == verdict["asserted"] == "raises ValueError"
    assert verdict["produced"] == "returned instead of raising ValueError"
    assert verdict["fix"] is None and verdict["applied"] is False
    assert (root / "text.py").read_text(encoding="utf-8") == before  # no fix is tried


def test_cli_leaves_a_raises_test_the_truth_does_not_back_to_a_person(tmp_path: Path, referee):
    # the oracles return for n = 0: the test's expectation may be wrong, and it is a
    # raises assertion, which referee never edits
    body = "with pytest.raises(ValueError):\n    chunks([1, 2], 0)"
    with FakeModel(lambda kind: RETURNING_ORACLE) as model:
        root = _chunks_project(tmp_path, CHUNKS_WRONG, body, model.url)
        before = (root / "tests" / "test_text.py").read_text(encoding="utf-8")
        verdict = _cli(referee, root, "tests/test_text.py::test_x")
    assert verdict["verdict"] == "UNCLEAR", verdict["reason"]
    assert "does not edit what a test expects to raise" in verdict["reason"]
    assert verdict["truth"] == "[[1], [2]]"
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == before


def test_a_source_that_raises_another_exception_is_observed_as_such(tmp_path: Path, referee):
    module = CHUNKS_WRONG.replace("max(n, 1)", "n")  # range(0, 2, 0): ValueError… of range
    body = "with pytest.raises(TypeError):\n    chunks([1, 2], 0)"
    with FakeModel(lambda kind: RAISING_ORACLE) as model:
        root = _chunks_project(tmp_path, module, body, model.url)
        verdict = _cli(referee, root, "tests/test_text.py::test_x")
    # the code raised ValueError, the test expects TypeError, the oracles raise ValueError
    assert verdict["verdict"] == "UNCLEAR", verdict["reason"]
    assert verdict["produced"].startswith("raised ValueError")
    assert verdict["truth"] == "raises ValueError"


def test_a_call_assigned_once_then_compared_is_the_call_under_test(tmp_path: Path):
    result, _ = arbitrated(tmp_path, WRONG, 'n = count_vowels("aeiou")\nassert n == 5')
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.call == 'count_vowels("aeiou")' and "assigned-call" in verdict.call_forms


def test_an_assigned_call_mentioned_before_the_assertion_is_not_taken(tmp_path: Path):
    # ``n.append(…)``, ``print(n)``: whatever happened to n between, the test did it
    body = 'n = count_vowels("aeiou")\nprint(n)\nassert n == 5'
    result, _ = arbitrated(tmp_path, WRONG, body)
    assert result.verdict.verdict == "UNCLEAR"
    assert "neither side of the comparison is a function call" in result.verdict.reason


def test_a_name_assigned_again_is_read_from_the_assignment_before_the_assertion(tmp_path: Path):
    # ``r = f(a)``, ``assert r == …``, ``r = f(b)``, ``assert r == …``: as real tests write them
    body = 'n = count_vowels("xyz")\nassert n == 0\nn = count_vowels("aeiou")\nassert n == 5'
    result, _ = arbitrated(tmp_path, WRONG, body)
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.call == 'count_vowels("aeiou")' and "assigned-call" in verdict.call_forms


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ("", 'len("abcde")'),  # a built-in: no Python source, not the project's
        ("import statistics", "statistics.median([4, 5, 6])"),  # a library's Python function
    ],
)
def test_an_expected_value_the_test_computes_blames_a_wrong_source(
    tmp_path: Path, head: str, expected: str
):
    result, _ = arbitrated(
        tmp_path, WRONG, f'assert count_vowels("aeiou") == {expected}', head=head
    )
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.asserted == "5" and "computed-expected" in verdict.call_forms
    assert verdict.observation.expected_site == "computed"


@pytest.mark.parametrize(
    ("body", "text"),
    [
        ("want = date(2003, 9, 25)\n    assert f(1) == want", "date(2003, 9, 25)"),
        ("want = Version('1.0')\n    r = f(1)\n    assert r == want", "Version('1.0')"),
        ("want = [g(1), 2]\n    assert f(1) == want", "[g(1), 2]"),
    ],
    ids=["value-class", "project-class-and-assigned-call", "list-of-a-call"],
)
def test_an_expected_value_the_test_computes_on_a_line_of_its_own_is_computed(body, text):
    """``want = datetime.date(2003, 9, 25)``, then ``assert f(1) == want``: the name holds
    an expression the test evaluates (not the function under test): its value is the one
    the failing comparison records, and it is never edited. (A run that records ``want``
    as a literal reads that first: a ``local``.)"""
    isolated = _iso(body)
    assert (isolated.expected.kind, isolated.expected.text) == ("computed", text)
    assert "computed-expected" in isolated.forms


@pytest.mark.parametrize(
    "body",
    [
        "want = f(2)\n    assert f(1) == want",  # the function under test says nothing
        "want = [i for i in range(3)]\n    assert f(1) == want",
        "assert f(1) == want",  # assigned nowhere in the test
    ],
    ids=["the-function-itself", "comprehension", "unassigned"],
)
def test_an_expected_name_the_test_does_not_compute_independently_is_refused(body):
    with pytest.raises(NotIsolated, match="the expected value `want` is not a literal"):
        _iso(body)


def test_a_computed_expected_value_is_never_edited(tmp_path: Path):
    result, text = arbitrated(tmp_path, RIGHT, 'assert count_vowels("aeiou") == len("abcd")')
    verdict = result.verdict
    assert verdict.verdict == "UNCLEAR", verdict.reason
    assert verdict.truth == "5" and result.new_text is None
    assert 'len("abcd")' in text


def test_an_inherited_method_is_unclear_with_the_reason(tmp_path: Path):
    # (a method of an object the test builds from literals, and a class method, are
    # arbitrated: tests/test_arbitration_methods.py) The oracles of ``Counter.count``
    # would be told of Counter's constructor, not of the one the test calls.
    module = WRONG + "\n\nclass Sub(Counter):\n    pass\n"
    body = 'assert Sub().count("aeiou") == 5'
    result, _ = arbitrated(tmp_path, module, body, head="from text import Sub")
    verdict = result.verdict
    assert verdict.verdict == "UNCLEAR", verdict.reason
    assert "not a method the class `Sub` itself defines" in verdict.reason
    assert verdict.call_forms == ("method-of-literal-object",)


def test_a_static_method_is_arbitrated_as_a_function(tmp_path: Path):
    # its docstring's example, ``Counter.twice(2)`` -> 4, is the truth for ``twice(2)``
    result, _ = arbitrated(tmp_path, WRONG, "assert Counter.twice(2) == 4")
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert "staticmethod" in verdict.call_forms and verdict.truth_source == "doctest"
    assert (verdict.produced, verdict.asserted, verdict.truth) == ("6", "4", "4")


TWICE_PATCH = "def twice(n: int) -> int:\n    return n + n\n"  # the fake server fences it


@pytest.mark.model
def test_cli_with_the_real_model_a_unittest_table_of_cases_never_blames_the_test(
    tmp_path: Path, referee, small_model: Path
):
    """The real 0.5B model writes the oracles (and a patch) for a case a unittest method
    reads from a table in a loop: the code is wrong, so the only wrong blame is a test
    edit — and a value read from the table is never edited anyway."""
    tests = (
        "import unittest\n\nfrom text import count_vowels\n\n"
        'CASES = [("xyz", 0), ("apple", 2)]\n\n\n'
        "class TestText(unittest.TestCase):\n"
        "    def test_x(self):\n"
        "        for text, want in CASES:\n"
        "            self.assertEqual(count_vowels(text), want)\n"
    )
    root = project(
        tmp_path / "p", WRONG, tests, "[arbitration]\ncandidates = 1\ntime-budget = 60\n"
    )
    before = (root / "tests" / "test_text.py").read_text(encoding="utf-8")
    done = referee(
        "arbitrate",
        "tests/test_text.py::TestText::test_x",
        "--apply",
        "--format",
        "json",
        "--model",
        str(small_model),
        cwd=root,
    )
    verdict = json.loads(done.stdout)
    print(f"real model: {verdict['verdict']}: {verdict['reason']}")
    assert verdict["verdict"] in ("SOURCE_WRONG", "UNCLEAR"), verdict["reason"]
    assert verdict["call"] == "count_vowels('apple')"
    assert {"unittest-method", "loop-table"} <= set(verdict["call_forms"])
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == before


def test_cli_fixes_a_static_method_in_its_class(tmp_path: Path, referee):
    tests = "from text import Counter\n\n\ndef test_x():\n    assert Counter.twice(2) == 4\n"
    with FakeModel(lambda kind: TWICE_PATCH) as model:
        root = cli_project(tmp_path / "p", WRONG, tests, model.url)
        verdict = _cli(referee, root, "tests/test_text.py::test_x")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert "staticmethod" in verdict["call_forms"] and verdict["applied"] is True
    fixed = (root / "text.py").read_text(encoding="utf-8")
    # the body replaced inside the class, the decorator and the docstring kept
    assert "    @staticmethod\n    def twice(n: int) -> int:" in fixed
    assert "        return n + n" in fixed and "n * 3" not in fixed
    assert ">>> Counter.twice(2)" in fixed


# ------------------------------------------------------------ the command line, --apply


def _cli(referee, root: Path, test_id: str) -> dict:
    done = referee("arbitrate", test_id, "--format", "json", "--apply", cwd=root)
    assert done.stdout.strip(), (done.returncode, done.stderr)
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    return verdict


HAS_VOWEL = '''def has_vowel(text: str) -> bool:
    """Whether TEXT holds a vowel (a, e, i, o, u, in either case)."""
    return any(ch in "aeiou" for ch in text[1:].lower())
'''
HAS_VOWEL_ORACLE = 'def has_vowel(text):\n    return any(c in "aeiouAEIOU" for c in text)\n'
HAS_VOWEL_PATCH = (
    "def has_vowel(text: str) -> bool:\n"
    '    """Whether TEXT holds a vowel (a, e, i, o, u, in either case)."""\n'
    '    return any(ch in "aeiou" for ch in text.lower())\n'
)


def test_cli_fixes_the_source_under_a_unittest_assert_true(tmp_path: Path, referee):
    tests = (
        "import unittest\n\nfrom text import has_vowel\n\n\n"
        "class TestText(unittest.TestCase):\n"
        "    def test_x(self):\n"
        '        self.assertTrue(has_vowel("ab"))\n\n'
        "    def test_none(self):\n"
        '        self.assertFalse(has_vowel("xyz"))\n'
    )
    with FakeModel(lambda kind: HAS_VOWEL_ORACLE if kind == "oracle" else HAS_VOWEL_PATCH) as model:
        root = cli_project(tmp_path / "p", HAS_VOWEL, tests, model.url)
        verdict = _cli(referee, root, "tests/test_text.py::TestText::test_x")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call_forms"] == ["unittest-method", "boolean"]
    assert verdict["observation"]["op"] == "truthy"
    assert (verdict["produced"], verdict["asserted"], verdict["truth"]) == ("False", "True", "True")
    assert verdict["applied"] is True
    fixed = (root / "text.py").read_text(encoding="utf-8")
    assert "text[1:]" not in fixed and "in either case" in fixed  # the docstring stays


def test_cli_fixes_the_source_under_a_loop_over_a_table_of_cases(tmp_path: Path, referee):
    tests = (
        "from text import count_vowels\n\n"
        'CASES = [("xyz", 0), ("aeiou", 5), ("HELLO", 2)]\n\n\n'
        "def test_x():\n"
        "    for text, want in CASES:\n"
        "        assert count_vowels(text) == want\n"
    )
    with FakeModel(lambda kind: body(ORACLE) if kind == "oracle" else body(GOOD_PATCH)) as model:
        root = cli_project(tmp_path / "p", BUGGY, tests, model.url)
        verdict = _cli(referee, root, "tests/test_text.py::test_x")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call_forms"] == ["loop-table"]
    assert verdict["call"] == "count_vowels('aeiou')"
    assert verdict["observation"]["expected_site"] == "local"
    assert verdict["applied"] is True
    fixed = (root / "text.py").read_text(encoding="utf-8")
    assert "text[1:]" not in fixed and "in either case" in fixed  # the docstring stays
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests


def test_cli_never_edits_a_table_of_cases_even_when_the_code_is_right(tmp_path: Path, referee):
    tests = (
        "from text import count_vowels\n\n"
        'CASES = [("xyz", 0), ("aeiou", 4)]\n\n\n'
        "def test_x():\n"
        "    for text, want in CASES:\n"
        "        assert count_vowels(text) == want\n"
    )
    with FakeModel(lambda kind: body(ORACLE)) as model:
        root = cli_project(tmp_path / "p", CORRECT, tests, model.url)
        verdict = _cli(referee, root, "tests/test_text.py::test_x")
    assert verdict["verdict"] == "UNCLEAR", verdict["reason"]
    assert verdict["truth"] == "5" and verdict["applied"] is False
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests


# ------------------------------------------------------------ isolation alone


def _iso(
    body: str,
    frame_locals=None,
    *,
    failing: str | None = None,
    callees=None,
    classes: frozenset[str] = frozenset(),
):
    """``body`` isolated as the test, failing on its last line (or the first that holds
    ``failing``); ``callees``: the project's functions, as the run resolved them
    (``classes``: those that are classes)."""
    from referee.checks.arbitration.isolate import TestRef, isolate
    from referee.checks.source import SourceFile

    text = f"def test_x():\n    {body}\n"
    lines = text.splitlines()
    line = (
        len(lines) if failing is None else next(i for i, t in enumerate(lines, 1) if failing in t)
    )
    return isolate(
        SourceFile("tests/t.py", text),
        TestRef.parse("tests/t.py::test_x"),
        line,
        {},
        frame_locals,
        callees,
        classes,
    )


@pytest.mark.parametrize(
    ("callees", "why"),
    [
        (frozenset({"interleave"}), None),  # the project's side is the call under test
        (frozenset(), "neither side of the comparison calls one of the project's functions"),
        (
            frozenset({"interleave", "list"}),
            "both sides of the comparison are calls of the project's functions",
        ),
    ],
)
def test_with_a_call_on_each_side_the_projects_is_under_test(callees, why):
    from referee.checks.arbitration.isolate import NotIsolated

    body = 'assert list(interleave("ab", "cd")) == list("acbd")'
    if why is None:
        isolated = _iso(body, callees=callees)
        found = (isolated.callee, isolated.wrapper, isolated.call_side, isolated.expected.text)
        assert found == ("interleave", "list", "left", 'list("acbd")')
        return
    with pytest.raises(NotIsolated, match=re.escape(why)):
        _iso(body, callees=callees)


@pytest.mark.parametrize(
    ("body", "callee", "side", "expected"),
    [
        # a method of an object the test builds once from the project's class, against a
        # constructor of a library's class: the recorder resolved ``Span.shift``
        (
            "span = Span(2013, 5, 5)\n    assert span.shift(weeks=1) == datetime(2013, 5, 12)",
            "Span.shift",
            "left",
            "datetime(2013, 5, 12)",
        ),
        # the expected value built from the project's own class: that side only builds
        (
            "assert Span(2013, 5, 12) == Span(2013, 5, 5).shift(weeks=1)",
            "Span.shift",
            "right",
            "Span(2013, 5, 12)",
        ),
        (
            "assert sorted(Bag([3, 1]).items()) == Bag([1, 3]).as_list()",
            None,
            None,
            None,
        ),
    ],
)
def test_a_method_of_a_built_object_is_the_projects_side(body, callee, side, expected):
    from referee.checks.arbitration.isolate import NotIsolated

    names = frozenset({"Span", "Span.shift", "Bag", "Bag.items", "Bag.as_list"})
    classes = frozenset({"Span", "Bag"})
    if callee is None:
        # both sides call methods of the project's objects: which one is under test is
        # not guessed
        with pytest.raises(NotIsolated, match="both sides of the comparison are calls of"):
            _iso(body, callees=names, classes=classes)
        return
    isolated = _iso(body, callees=names, classes=classes)
    assert (isolated.callee, isolated.call_side, isolated.expected.text) == (
        callee,
        side,
        expected,
    )
    # without the classes' kinds, a constructor of the project's class is a call of it
    if side == "right":
        with pytest.raises(NotIsolated, match="both sides of the comparison are calls of"):
            _iso(body, callees=names)


@pytest.mark.parametrize(
    ("body", "op", "side", "expected", "forms"),
    [
        ("assert_equal(f(1), 2)", "==", "left", "2", ("assert-function",)),
        ("tools.assert_in(3, f(1))", "in", "right", "3", ("assert-function", "membership")),
        ("assert f(1) not in (1, 2)", "not in", "left", "(1, 2)", ("membership",)),
        ("assert f(1) != 2", "!=", "left", "2", ("inequality",)),
        ("assert 0 <= f(1)", "<=", "right", "0", ("ordering",)),
        ("self.assertGreater(f(1), 2)", ">", "left", "2", ("unittest-method", "ordering")),
        ("self.assertNotEqual(f(1), 2)", "!=", "left", "2", ("unittest-method", "inequality")),
        ("r = f(1)\n    assert r < 2", "<", "left", "2", ("ordering", "assigned-call")),
        ("assert not f(1)", "falsy", "left", "False", ("boolean",)),
        ("assert f(1) is not None", "is not", "left", "None", ("identity",)),
        (
            "self.assertIsNotNone(f(1), 'msg')",
            "is not",
            "left",
            "None",
            ("unittest-method", "identity"),
        ),
        (
            "r = f(1)\n    assert r.ok == 2\n    assert not r",
            "falsy",
            "left",
            "False",
            ("boolean", "assigned-call"),
        ),
        (
            "r = f(1)\n    self.assertTrue(r)",
            "truthy",
            "left",
            "True",
            ("unittest-method", "boolean", "assigned-call"),
        ),
        (
            "with pytest.raises(ValueError):\n        f(1)",
            "raises",
            "left",
            "ValueError",
            ("raises",),
        ),
        (
            "self.assertRaises(errors.Bad, f, 1)",
            "raises",
            "left",
            "errors.Bad",
            ("unittest-method", "raises"),
        ),
    ],
)
def test_each_form_is_taken_apart_with_its_expectation(body, op, side, expected, forms):
    isolated = _iso(body)
    assert (isolated.op, isolated.call_side, isolated.expected.text) == (op, side, expected)
    assert isolated.call == "f(1)" and isolated.forms == forms


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("assert f(1) is 3", "only with True, False or None"),
        ("assert 0 < f(1) < 3", "only comparisons of two values"),
        ("assert f(1) < pytest.approx(3)", "only `== pytest.approx"),
        ("assert f(1) and g(2)", "none of them"),
        ("assert not x", "is not a function call"),
        ("for c in CASES:\n        assert f(c) == 1", "argument `c` is not a literal"),
        # an expected value computed by the function under test says nothing independent
        ("assert f(1) == f(2) + 1", "the expected value `f\\(2\\) \\+ 1` is not a literal"),
        ("assert f(1) == g(2)", r"both sides of the comparison are function calls \(which one"),
        ("with pytest.raises(ValueError):\n        f(1)\n        f(2)", "is not one call"),
        ("with pytest.raises((KeyError, ValueError)):\n        f(1)", "not name one exception"),
    ],
)
def test_forms_that_say_nothing_about_one_call_are_refused(body, reason):
    from referee.checks.arbitration.isolate import NotIsolated

    with pytest.raises(NotIsolated, match=reason):
        _iso(body)


@pytest.mark.parametrize(
    ("body", "failing", "call", "expected"),
    [
        ("r = f(1)\n    assert r == 2\n    r = f(3)\n    assert r == 4", "== 4", "f(3)", "4"),
        ("r = f(1)\n    r = f(3)\n    assert r == 4\n    r = f(5)", "== 4", "f(3)", "4"),
        # the loop before has its own binding of r; the assignment after it holds
        ("for r in (1, 2):\n        pass\n    r = f(3)\n    assert r == 4", "== 4", "f(3)", "4"),
        ("x = 1\n    assert f(x) == 2\n    x = 3\n    assert f(x) == 4", "== 4", "f(3)", "4"),
        ("want = 1\n    want = 2\n    assert f(0) == want", "assert", "f(0)", "2"),
    ],
)
def test_a_name_the_test_assigns_again_is_read_where_the_assertion_reads_it(
    body: str, failing: str, call: str, expected: str
):
    isolated = _iso(body, failing=failing)
    assert (isolated.call, isolated.expected.text) == (call, expected)


@pytest.mark.parametrize(
    "body",
    [
        # a loop that holds the assertion goes round to the binding after it
        "r = f(1)\n    for i in (1, 2):\n        assert r == 2\n        r = f(i)",
        # a branch between may have bound it again
        "r = f(1)\n    if FLAG:\n        r = f(2)\n    assert r == 2",
        "r = f(1)\n    with ctx() as r:\n        pass\n    assert r == 2",
        # a nested function may bind it whenever it is called
        "r = f(1)\n    def g():\n        nonlocal r\n        r = 3\n    g()\n    assert r == 2",
        "global r\n    r = f(1)\n    assert r == 2",
        "r = f(1)\n    r += 1\n    assert r == 2",
        # a closure reads it: it may run between the assignment and the assertion
        "push = lambda: r.append(0)\n    r = f(1)\n    push()\n    assert r == 2",
    ],
)
def test_a_name_that_may_be_bound_between_its_assignment_and_the_assertion_is_refused(body: str):
    from referee.checks.arbitration.isolate import NotIsolated

    with pytest.raises(NotIsolated, match="neither side of the comparison is a function call"):
        _iso(body, failing="assert")


def test_recorded_locals_resolve_names_and_subscripts_and_refuse_mutable_arguments():
    body = 'for case in CASES:\n        assert f(case["in"]) == case["out"]'
    isolated = _iso(body, {"case": "{'in': 'ab', 'out': 1}"})
    assert (isolated.arguments, isolated.expected.text) == ("'ab'", "1")
    assert isolated.expected.kind == "local" and isolated.forms == ("loop-table",)
    from referee.checks.arbitration.isolate import NotIsolated

    with pytest.raises(NotIsolated, match="is a list the recorder saw after the call"):
        _iso("assert f(xs) == 1", {"xs": "[1, 2]"})
    with pytest.raises(NotIsolated, match="argument `xs` is not a literal"):
        _iso("assert f(xs) == 1", {"xs": "<object at 0x1>"})


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("class Bits:\n    pass\n", "`Bits` is a class: the call under test builds an object"),
        ("@frozen\nclass Bits:\n    pass\n", "`Bits` is a class"),
        ("BITS = 1\n", "no top-level function `Bits` in m.py"),
    ],
)
def test_a_class_under_test_is_named_as_one(text: str, reason: str):
    from referee.checks.arbitration.isolate import NotIsolated, function_spec

    with pytest.raises(NotIsolated, match=reason):
        function_spec(text, "m.py", "m", "Bits")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("r = f(1)\n{i}assert r == 2", 0),
        ("r = f(1)\n{i}r = f(2)\n{i}assert r == 2\n{i}r = f(3)", 1),
        ("for r in ():\n{i}    pass\n{i}r = f(1)  # a comment\n{i}x = 1; assert r == 2", 1),
        ("r: int = f(1)\n{i}assert r == 2", 0),
        ("r = f(1)\n{i}r = f(r)\n{i}assert r == 2", 1),
        ("r = f(1)\n{i}if r:\n{i}    r = 2\n{i}assert r == 2", None),
        ("g = lambda: r\n{i}r = f(1)\n{i}assert r == 2", None),
        ("r = f(r := 1)\n{i}assert r == 2", None),
    ],
)
@pytest.mark.parametrize("where", ["module", "class"])
def test_the_failing_calls_reader_and_the_suites_read_a_reassigned_name_by_one_rule(
    body: str, expected: int | None, where: str
):
    """The failing call's reader (tree-sitter) reads a test's text with ast to ask the one
    rule of ``reaching``: at a function's indentation and a method's, it names the same
    statement the suite's reader (ast) does, or refuses where that does."""
    import ast

    from referee.checks.arbitration.reaching import reaching
    from referee.checks.arbitration.sites import reaching_assignment
    from referee.checks.pymodule import PythonModule
    from referee.checks.source import SourceFile

    indent = "        " if where == "class" else "    "
    head = "class TestX:\n    def test_x(self):\n" if where == "class" else "def test_x():\n"
    text = head + indent + body.format(i=indent) + "\n"
    source = SourceFile("tests/t.py", text)
    fn = next(f for f in PythonModule(source, is_test_file=True).functions if f.name == "test_x")
    at = text.index("assert r")
    found = reaching_assignment(source, fn, "r", at)
    tree = ast.parse(text)
    function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    position = next(i for i, s in enumerate(function.body) if s.lineno == text[:at].count("\n") + 1)
    index = reaching(function, "r", position)
    assert (found[0] if found else None) == index == expected
    if index is not None:
        assert source.node_text(found[1]) == ast.unparse(function.body[index].value)


@pytest.mark.parametrize(
    "looks",
    [
        "assert len(r) == 2",
        'assert r[0] == "a" and r.kind is None',
        "self.assertEqual(len(r), 2)\n    self.assertIsNotNone(r)",
    ],
)
def test_a_value_earlier_assertions_only_looked_at_is_read_as_the_call(looks: str):
    """``stmts = split(s)``, ``assert len(stmts) == 2``, then ``assert stmts[1] == …``: the
    assertions between only looked at the value, so the failing one reads it as the call
    left it (one rule with the suite's reader: ``reaching.readers``)."""
    isolated = _iso(f'r = f("a;b")\n    {looks}\n    assert r[1] == "b"', failing="r[1] ==")
    assert (isolated.call, isolated.projection, isolated.expected.text) == (
        'f("a;b")[1]',
        "[1]",
        '"b"',
    )
    assert "assigned-call" in isolated.forms


@pytest.mark.parametrize(
    "touches",
    [
        "assert r.pop() == 1",  # a method call may change it
        "assert check(r)",  # so may a function given it
        'assert "a" in r',  # the container is iterated
        "assert list(r) == [1]",  # so is a built-in's argument
        "n = len(r)",  # not an assertion
        "with ctx():\n        assert r[0] == 1",  # the same, inside a block
    ],
)
def test_a_value_an_earlier_statement_may_have_changed_is_refused(touches: str):
    from referee.checks.arbitration.isolate import NotIsolated

    with pytest.raises(NotIsolated, match="neither side of the comparison is a function call"):
        _iso(f'r = f("a;b")\n    {touches}\n    assert r[1] == "b"', failing="r[1] ==")


@pytest.mark.parametrize(
    ("body", "call"),
    [
        ("x = 1\n    r = f(x)\n    x = 3\n    assert r == 2", None),
        ("x = 1\n    r = f(x)\n    for x in (3,):\n        pass\n    assert r == 2", None),
        ("x = 1\n    t = T(x)\n    x = 3\n    assert t.m() == 2", None),
        ("x = 1\n    r = f(x)\n    assert r == 2\n    x = 3", "f(1)"),
    ],
)
def test_a_call_whose_arguments_are_bound_again_before_the_assertion_is_not_read_as_written(
    body: str, call: str | None
):
    """``x = 1``, ``r = f(x)``, ``x = 3``, ``assert r == 2``: reading the call as written
    at the assertion would arbitrate ``f(3)``, a call the test never made."""
    from referee.checks.arbitration.isolate import NotIsolated

    if call is None:
        with pytest.raises(NotIsolated, match=r"is a function call|does not build"):
            _iso(body, failing="assert")
    else:
        assert _iso(body, failing="assert").call == call
