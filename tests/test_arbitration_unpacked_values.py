"""A value the test unpacks from the call: ``head, rest = split_first("a,b,c")``, then
``assert rest == "b,c"``. The call under test is the one the statement unpacks, read by
the rules an assigned call is read by (the assignment the assertion reads, nothing between
but assertions that only look at the names), and its value is the item the name takes:
``tuple(split_first("a,b,c"))[1]`` — ``tuple`` iterates the value as unpacking does (form
``unpacked-call``).

So is a name the test assigns an item or an attribute of the call's value: ``first =
parse(s)[0]``, then ``assert first.kind == …`` is ``parse(s)[0].kind`` (forms
``assigned-call``, ``projection``), by the same rules.

End to end through ``referee arbitrate --apply`` with the fake OpenAI-compatible model
server: a wrong function is fixed, the test left as written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_arbitration_forms import _iso
from test_arbitration_oracles import arbitrate_with, assert_tests_pass

from referee.checks.arbitration.isolate import NotIsolated


@pytest.mark.parametrize(
    ("body", "call", "forms"),
    [
        ("a, b = f(1)\n    assert b == 2", "tuple(f(1))[1]", ("unpacked-call",)),
        ("[a, b] = f(1)\n    assert a.x == 2", "tuple(f(1))[0].x", ("unpacked-call", "projection")),
        ("a, b = f(1)\n    assert not b", "tuple(f(1))[1]", ("boolean", "unpacked-call")),
        # the other name only looked at before: a, b may share an object, but nothing changed
        (
            "a, b = f(1)\n    assert len(b) == 1\n    assert a == 1",
            "tuple(f(1))[0]",
            ("unpacked-call",),
        ),
        (
            "a, b = f(1)\n    self.assertEqual(b, 2)",
            "tuple(f(1))[1]",
            ("unittest-method", "unpacked-call"),
        ),
    ],
)
def test_a_name_the_test_unpacks_from_the_call_is_read_as_that_item(body, call, forms):
    isolated = _iso(body)
    assert (isolated.call, isolated.forms) == (call, forms)
    assert isolated.wrapper == "tuple"


@pytest.mark.parametrize(
    "body",
    [
        "a, *b = f(1)\n    assert a == 1",  # starred: which items b takes is no place
        "(a, b), c = f(1)\n    assert a == 1",  # nested
        "a, b = f(1)\n    b.pop()\n    assert a == 1",  # a call on the other name
        "a, b = f(1)\n    a.reset()\n    assert a == 1",  # a call on the name
        "x = 1\n    a, b = f(x)\n    x = 2\n    assert a == 1",  # its argument bound again
        "a, b = f(1)\n    if a:\n        a = 3\n    assert a == 1",  # bound again in between
        "a, b = g\n    assert a == 1",  # no call
    ],
)
def test_an_unpacked_name_that_may_not_hold_the_item_is_refused(body):
    with pytest.raises(NotIsolated, match=r"is a function call|does not build"):
        _iso(body)


MODULE = '''def split_first(text: str) -> tuple[str, str]:
    """The text before the first comma and the text after it: split_first("a,b,c") is
    ("a", "b,c")."""
    head, _, rest = text.{method}(",")
    return head, rest
'''
ORACLE = 'def split_first(text):\n    head, _, rest = text.partition(",")\n    return head, rest\n'
TESTS = """from text import split_first


def test_split():
    head, rest = split_first("a,b,c")
    assert len(rest) > 0
    assert head == "a"
"""


def test_cli_fixes_a_wrong_function_whose_value_the_test_unpacks(tmp_path: Path, referee):
    wrong, right = MODULE.format(method="rpartition"), MODULE.format(method="partition")
    root, verdict = arbitrate_with(
        tmp_path, referee, wrong, TESTS, "tests/test_text.py::test_split", ORACLE, right
    )
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == 'tuple(split_first("a,b,c"))[0]'
    assert "unpacked-call" in verdict["call_forms"]
    assert (verdict["produced"], verdict["asserted"], verdict["truth"]) == ("'a,b'", "'a'", "'a'")
    assert verdict["applied"] is True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == TESTS
    assert_tests_pass(root)


@pytest.mark.parametrize(
    ("body", "call"),
    [
        ("p = f(1)[0]\n    assert p.kind == 2", "f(1)[0].kind"),
        ("p = f(1).tokens\n    assert len(p) == 1\n    assert p == [2]", "f(1).tokens"),
        ("p = list(f(1))[-1]\n    assert not p", "list(f(1))[-1]"),
        ("p = f(1)['k']\n    self.assertEqual(p, 2)", "f(1)['k']"),
    ],
    ids=["item-then-attribute", "attribute-looked-at-first", "wrapped", "unittest"],
)
def test_a_name_assigned_a_projection_of_the_call_is_read_as_that_projection(body, call):
    isolated = _iso(body)
    assert isolated.call == call
    assert {"assigned-call", "projection"} <= set(isolated.forms)


@pytest.mark.parametrize(
    "body",
    [
        "p = f(1)[0]\n    p.reset()\n    assert p.kind == 2",  # changed in between
        "p = f(1)[i]\n    assert p == 2",  # no literal key
        "p = f(1).__dict__\n    assert p == 2",  # a dunder
        "p = f(1)[0]\n    assert len(p.tokens) == 2",  # a built-in over a projection
    ],
    ids=["changed", "non-literal-key", "dunder", "built-in-over-the-projection"],
)
def test_a_name_assigned_a_projection_that_may_not_hold_it_is_refused(body):
    with pytest.raises(NotIsolated):
        _iso(body)


def test_cli_fixes_a_wrong_function_an_item_of_whose_value_the_test_assigns(
    tmp_path: Path, referee
):
    wrong, right = MODULE.format(method="rpartition"), MODULE.format(method="partition")
    tests = (
        TESTS.replace("head, rest = split_first", "head = split_first")
        .replace('("a,b,c")\n', '("a,b,c")[0]\n')
        .replace("    assert len(rest) > 0\n", "")
    )
    assert 'head = split_first("a,b,c")[0]' in tests
    root, verdict = arbitrate_with(
        tmp_path, referee, wrong, tests, "tests/test_text.py::test_split", ORACLE, right
    )
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == 'split_first("a,b,c")[0]'
    assert {"assigned-call", "projection"} <= set(verdict["call_forms"])
    assert (verdict["produced"], verdict["truth"]) == ("'a,b'", "'a'")
    assert verdict["applied"] is True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    assert_tests_pass(root)
