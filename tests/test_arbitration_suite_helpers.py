"""The suite's assertions made through a helper of the test module
(checks/arbitration/suite_helpers.py): ``def _check(self, inp, out):
self.assertEqual(strip(inp), out)`` called by tests with literals states one example per
call, read as a parametrize row is. Reading alone (nothing runs), then end to end through
``referee arbitrate --apply`` with a fake OpenAI-compatible model server.
"""

from __future__ import annotations

import json
from pathlib import Path

from guard_catalogue.cases import commit_repo
from red_team.fake_openai import FakeModel
from test_arbitration_oracles import arbitrate_json, cli_project
from test_arbitration_suite import misread_first

from referee.checks.arbitration.suite_reading import assertions
from referee.checks.arbitration.truth import prompts

TESTS = """import unittest

from text import strip_call


def check(inp, out="x"):
    assert strip_call(inp) == out


class TestStrip(unittest.TestCase):
    def _check(self, inp, out, *, twice=False):
        self.assertEqual(strip_call(inp), out)
        if twice:
            self.assertEqual(strip_call(strip_call(inp)), out)

    def setUp(self):
        self.assertEqual(strip_call("z"), "z")

    def test_a(self):
        self._check("cb(1)", "1")
        self._check(inp="cb(2);", out="2")
        value = "cb(3)"
        self._check(value, "3")  # no literal: no example
        self._check("cb(4)", "4", twice=True)

    def test_failing(self):
        self._check("cb(5) // (x)", "5")


def test_module_helper():
    check("cb(x)")
    check("cb(y)", out="y")
    check()  # not a call Python runs
"""


def test_each_literal_call_of_a_helper_is_an_example_of_its_assertion():
    found, skipped = assertions(
        TESTS, "tests/t.py", "strip_call", "text", ("TestStrip", "test_failing")
    )
    rows = [(f.call, f.want, f.in_failing_test, f.spans) for f in found]
    assert rows[:6] == [
        ("strip_call('cb(x)')", "'x'", False, ((31, 31), (7, 7))),  # the default's value
        ("strip_call('cb(y)')", "'y'", False, ((32, 32), (7, 7))),
        ("strip_call('cb(1)')", "'1'", False, ((20, 20), (12, 12))),
        ("strip_call('cb(2);')", "'2'", False, ((21, 21), (12, 12))),
        ("strip_call('cb(4)')", "'4'", False, ((24, 24), (12, 12))),
        ("strip_call('cb(5) // (x)')", "'5'", True, ((27, 27), (12, 12))),
    ]
    assert found[2].text == ('self._check("cb(1)", "1") -> self.assertEqual(strip_call(inp), out)')
    # a call with a name for an argument, one Python would refuse, and the nested call
    # (``strip_call(strip_call(inp))``) state nothing; the set-up hook's own assertion
    # is read as any test's
    assert [f.call for f in found[6:]] == ["strip_call('z')"]
    assert skipped == 1


BUGGY = """def strip_call(code: str) -> str:
    start, end = code.find("("), code.rfind(")")  # BODY-MARKER
    return code[start + 1 : end].strip()
"""
HELPER_TESTS = """import unittest

from text import strip_call


class TestStrip(unittest.TestCase):
    def _check(self, inp, out):
        self.assertEqual(strip_call(inp), out)

    def test_x(self):
        self._check("cb(1)", "1")
        self._check("cb(2);", "2")
        self._check("cb((3))", "(3)")
        self._check("cb(5) // (x)", "5")
"""
NODE = "tests/test_text.py::TestStrip::test_x"
ORACLE = (
    "```python\ndef strip_call(code):\n    depth = 0\n    for i, ch in enumerate(code):\n"
    "        if ch == '(':\n            depth += 1\n            if depth == 1:\n"
    "                start = i\n        elif ch == ')':\n            depth -= 1\n"
    "            if depth == 0:\n                return code[start + 1:i].strip()\n"
    "    return code\n```"
)
# the last parenthesis, as the code does: contradicts none of the suite's examples but
# gives the produced value; one that cuts at the first ")" contradicts cb((3))
MISREAD = (
    "```python\ndef strip_call(code):\n"
    "    return code[code.find('(') + 1:code.find(')')].strip()\n```"
)
PATCH = ORACLE.replace("strip_call(code)", "strip_call(code: str) -> str")


def test_cli_fixes_the_source_from_the_calls_of_a_helper(tmp_path: Path, referee):
    with FakeModel(lambda kind: "", answer_for=misread_first(ORACLE, MISREAD, PATCH)) as model:
        # committed: the failing test's other calls of the helper are its author's word
        root = cli_project(tmp_path / "p", BUGGY, HELPER_TESTS, model.url)
        files = ("referee.toml", "text.py", "tests/test_text.py")
        commit_repo(root, {f: (root / f).read_text(encoding="utf-8") for f in files})
        verdict = arbitrate_json(referee, root, "--apply", node=NODE)
        seen = [r["messages"] for r in model.requests]
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["truth_source"] == "oracles (spec from suite: 3 examples)"
    assert verdict["produced"] == "'5) // (x'" and verdict["truth"] == "'5'"
    assert verdict["spec_examples"][0] == (
        'tests/test_text.py:11: self._check("cb(1)", "1") -> self.assertEqual(strip_call(inp), out)'
    )
    gone = {o["source"]: o["detail"] for o in verdict["replaced_oracles"]}
    assert "contradicts the suite's example: strip_call('cb((3))')" in gone["oracle-1"]
    assert verdict["applied"] is True
    assert "depth" in (root / "text.py").read_text(encoding="utf-8")
    oracle_text = json.dumps([p for p in seen if p[0]["content"] == prompts().oracle_system])
    assert "assert strip_call('cb(2);') == '2'" in oracle_text
    assert "cb(5)" not in oracle_text and "BODY-MARKER" not in oracle_text
