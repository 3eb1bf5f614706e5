"""Arguments as real tests write them, beyond a literal in the call:

- computed from literals and names with operators only: ``"a" * 511``, ``1024 ** 2 - 1``,
  ``f"a{sep}b"``, ``"http://[" + host + "]"``, ``[first, 2]`` (form
  ``expression-argument``). Each name is read as any argument's name is; the expression
  is written out with the values in place and evaluated in the sandbox with the call,
  never in referee's process;
- a name assigned a value known without running the test (``day = date(2020, 1, 1)``,
  ``key = lambda w: w.lower()``, ``word = "ae" * 3``) that nothing but the call under
  test mentions afterwards (an object may be changed by whatever is handed it);
- a mutable literal handed to the call in an earlier statement (``xs = [1]``, ``r =
  f(xs)``, ``assert r == …``): the call's own mention is the one that reads it.

And an expected value written where the call's argument is (``assert f(xs) == xs``) is
the call's input, never edited.

End to end through ``referee arbitrate --apply`` with the fake OpenAI-compatible model
server: a wrong function is fixed, the test left as written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_arbitration import BUGGY
from test_arbitration_forms import _iso
from test_arbitration_oracles import arbitrate_with, assert_tests_pass
from test_arbitration_orderings import VOWELS_ORACLE

from referee.checks.arbitration.isolate import NotIsolated, TestRef, isolate
from referee.checks.source import SourceFile


@pytest.mark.parametrize(
    ("body", "call", "forms"),
    [
        ('assert f("a" * 511) == 1', "f('a' * 511)", ("expression-argument",)),
        ("assert f(1024 ** 2 - 1) == 1", "f(1024 ** 2 - 1)", ("expression-argument",)),
        ("x = 1\n    assert f([x, 2]) == 1", "f([1, 2])", ("local", "expression-argument")),
        # the value goes inside the f-string with quotes of its own
        (
            "sep = '-'\n    assert f(f'a{sep}b') == 1",
            "f(f\"a{'-'}b\")",
            ("local", "expression-argument"),
        ),
        (
            'h = "::1"\n    assert f("http://[" + h + "]") == 1',
            "f('http://[' + '::1' + ']')",
            ("local", "expression-argument"),
        ),
        (
            "assert f(n=-(2 ** 3)) == 1",
            "f(n=-2 ** 3)",
            ("expression-argument",),
        ),
    ],
    ids=["repeat", "power", "list-of-a-local", "f-string", "concatenation", "keyword"],
)
def test_an_argument_of_literals_and_known_names_with_operators_is_written_out(body, call, forms):
    isolated = _iso(body)
    assert isolated.call == call and isolated.forms == forms


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("assert f([g(1), 2]) == 1", "`[g(1), 2]`"),  # a call inside: not read
        ("assert f(x.y + 1) == 1", "`x.y + 1`"),  # an attribute inside
        ("assert f([i for i in range(3)]) == 1", "`[i for i in range(3)]`"),
        ("assert f(-x) == 1", "`x`"),  # a name no one binds: named itself
        ("xs = [1]\n    xs.append(2)\n    assert f([xs, 2]) == 1", "`xs`"),  # changed
        ('assert f({"a": 1, **d}) == 1', '`{"a": 1, **d}`'),
    ],
    ids=["call", "attribute", "comprehension", "unbound", "changed-list", "dict-splat"],
)
def test_an_expression_with_a_part_that_is_no_known_value_is_refused_naming_it(body, named):
    with pytest.raises(NotIsolated) as caught:
        _iso(body)
    assert f"argument {named} is not a literal" in str(caught.value)


@pytest.mark.parametrize(
    ("body", "call", "forms"),
    [
        (
            "xs = [1]\n    r = f(xs)\n    assert r == 2",
            "f([1])",
            ("assigned-call", "local"),
        ),
        (
            "d = datetime.date(2020, 1, 1)\n    assert f(d) == 2",
            "f(datetime.date(2020, 1, 1))",
            ("constructed-argument", "local"),
        ),
        (
            "q = deque([1, 2])\n    r = f(q)\n    assert r == 2",
            "f(deque([1, 2]))",
            ("assigned-call", "constructed-argument", "local"),
        ),
        ("g = lambda x: x\n    assert f(g) == 2", "f(lambda x: x)", ("function-argument", "local")),
        ("n = 2 ** 10\n    assert f(n) == 2", "f(2 ** 10)", ("expression-argument", "local")),
    ],
    ids=["list-read-by-an-earlier-call", "date", "deque", "lambda", "expression"],
)
def test_a_name_assigned_a_known_value_is_read_as_that_value(body, call, forms):
    isolated = _with_imports(body)
    assert isolated.call == call and isolated.forms == forms


@pytest.mark.parametrize(
    "body",
    [
        "q = deque([1])\n    q.append(3)\n    assert f(q) == 2",  # changed before the call
        "xs = [1]\n    r = f(xs)\n    xs.append(2)\n    assert r == 2",  # r may be xs
        "d = datetime.date(2020, 1, 1)\n    g(d)\n    assert f(d) == 2",  # handed to g
        "d = make()\n    assert f(d) == 2",  # what make() gives is not read
        # a name the value reads, bound again before the assertion: the call got 1 + 1
        "x = 1\n    y = x + 1\n    x = 5\n    assert f(y) == 2",
        "x = 1\n    d = datetime.date(2020, 1, x)\n    x = 5\n    assert f(d) == 2",
        "a = 1\n    a = a + 1\n    assert f(a) == 2",  # its own earlier value
        "a = 1\n    b = a + 1\n    a = b + 1\n    assert f(a) == 2",
    ],
    ids=[
        "mutated",
        "mutated-after-the-call",
        "handed-to-another-call",
        "unknown-call",
        "read-name-bound-again",
        "constructor-argument-bound-again",
        "self-reference",
        "cycle-through-another-name",
    ],
)
def test_a_name_whose_value_may_have_changed_or_is_unknown_is_refused(body):
    with pytest.raises(NotIsolated, match="is not a literal"):
        _with_imports(body)


def _with_imports(body: str):
    """``body`` as a test of a module that imports ``datetime`` and ``deque``, isolated at
    its last line."""
    text = f"import datetime\nfrom collections import deque\n\n\ndef test_x():\n    {body}\n"
    return isolate(
        SourceFile("tests/t.py", text), TestRef.parse("tests/t.py::test_x"), text.count("\n")
    )


@pytest.mark.parametrize(
    ("body", "call", "forms", "not_forms"),
    [
        (
            'word = "ae"\n    assert count_vowels(word * 3 + "x") == 6',
            "count_vowels('ae' * 3 + 'x')",
            {"local", "expression-argument"},
            set(),
        ),
        # the failing frame recorded ``word`` as a literal, and that is what the call is
        # read with (the text's own reading is for a run that recorded none, or recorded a
        # list the call may have changed)
        (
            'word = "ae" * 3 + "x"\n    n = count_vowels(word)\n    assert n == 6',
            "count_vowels('aeaeaex')",
            {"assigned-call", "local"},
            {"expression-argument"},
        ),
    ],
    ids=["computed-in-the-call", "computed-local-recorded"],
)
def test_cli_fixes_a_function_called_with_an_argument_the_test_computes(
    tmp_path: Path, referee, body: str, call: str, forms: set, not_forms: set
):
    tests = f"from text import count_vowels\n\n\ndef test_vowels():\n    {body}\n"
    root, verdict = arbitrate_with(
        tmp_path, referee, BUGGY, tests, "tests/test_text.py::test_vowels", VOWELS_ORACLE, ""
    )
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == call
    assert forms <= set(verdict["call_forms"]) and not not_forms & set(verdict["call_forms"])
    assert (verdict["produced"], verdict["truth"]) == ("5", "6")
    assert verdict["applied"] is True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    assert (root / "text.py").read_text(encoding="utf-8") != BUGGY
    assert_tests_pass(root)


# ------------------------------------------ an expected value the call is given too

LOWER = '''def lower_all(words: list) -> list:
    """Each of words in lower case, in order: lower_all(["A", "b"]) is ["a", "b"]."""
    return [w.lower() for w in words]
'''
LOWER_ORACLE = "def lower_all(words):\n    return [w.lower() for w in words]\n"


def test_an_expected_value_the_call_is_given_too_is_an_input_never_edited():
    isolated = _iso('xs = ["A"]\n    assert f(xs) == xs')
    assert isolated.call == 'f(["A"])'
    assert (isolated.expected.kind, isolated.expected.text) == ("input", '["A"]')


def test_cli_does_not_edit_an_expected_value_that_is_the_calls_own_argument(
    tmp_path: Path, referee
):
    """``words = ["A", "b"]``, then ``assert lower_all(words) == words``: the test is wrong
    (the code is right), but its expected value is the call's argument too. Replacing it
    with the truth, ``["a", "b"]``, would make the test pass by changing what it calls:
    TEST_WRONG, and the test is left as written."""
    tests = (
        "from text import lower_all\n\n\ndef test_lower():\n"
        '    words = ["A", "b"]\n    assert lower_all(words) == words\n'
    )
    root, verdict = arbitrate_with(
        tmp_path, referee, LOWER, tests, "tests/test_text.py::test_lower", LOWER_ORACLE, LOWER
    )
    assert verdict["verdict"] == "TEST_WRONG", verdict["reason"]
    assert verdict["observation"]["expected_site"] == "input"
    assert "is also what the call under test is given" in verdict["reason"]
    assert verdict["applied"] is not True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests


def test_cli_reads_a_computed_local_as_the_failing_run_recorded_it(tmp_path: Path, referee):
    """``word = "ae" * 3 + "x"``, ``n = count_vowels(word)``, ``assert n == 6``: the
    failing frame recorded ``word`` as a literal, and that is what the call is read with
    (the text's own reading, ``"ae" * 3 + "x"``, is for a run that recorded none, or
    recorded a list the call may have changed)."""
    tests = (
        "from text import count_vowels\n\n\ndef test_vowels():\n"
        '    word = "ae" * 3 + "x"\n    n = count_vowels(word)\n    assert n == 6\n'
    )
    root, verdict = arbitrate_with(
        tmp_path, referee, BUGGY, tests, "tests/test_text.py::test_vowels", VOWELS_ORACLE, ""
    )
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == "count_vowels('aeaeaex')"
    assert {"assigned-call", "local"} <= set(verdict["call_forms"])
    assert "expression-argument" not in verdict["call_forms"]
    assert verdict["applied"] is True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    assert_tests_pass(root)
