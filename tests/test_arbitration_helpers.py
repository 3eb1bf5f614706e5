"""A failing assertion that lives in a helper the test calls (issue 40): ``def
check(text, want): assert count_vowels(text) == want`` called as ``check("aeiou", 4)``.

The assertion is taken apart in the helper, its parameters bound to what the test's one
call passes (or to what the failing helper frame recorded). A test fix replaces a literal
only at that call, written once for this case; a literal in the helper, or at a call in a
loop, is shared by other cases: the verdict is given and the test is not edited. End to
end through ``referee arbitrate --apply`` with the fake model server.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest
from red_team.fake_openai import FakeModel
from test_arbitration import BUGGY, CORRECT, commit_repo, run, scripted
from test_arbitration import ORACLE as ORACLE_FENCED
from test_arbitration_oracles import cli_project

from referee.checks import ledger
from referee.checks.arbitration.engine import apply
from referee.checks.arbitration.fix import fix_test
from referee.checks.arbitration.isolate import NotIsolated, TestRef, callee_names, isolate
from referee.checks.arbitration.raises_match import match_failed
from referee.checks.models import arbitration_schema
from referee.checks.source import SourceFile

TESTS = """from text import count

def check(word, want):
    assert count(word) == want

def test_x():
    check("aeiou", 4)

class TestA:
    def check(self, word, want=3):
        assert count(word) == want

    def test_default(self):
        self.check("abc")

    def test_loop(self):
        for w in ("a", "b"):
            self.check(w, 1)

    def test_two(self):
        self.check("ab", 2)
        self.check("abc", 7)

    def test_same(self):
        self.check("ab", 2)
        self.check("ab", 2)

def test_nested():
    def inner(x):
        assert count(x) == 0
    inner("q")

def test_kw():
    check(want=4, word="aeiou")

import pytest

@pytest.mark.parametrize("w, n", [("ab", 1), ("abc", 2)])
def test_param(w, n):
    check(w, n)

def noisy(x):
    y = count(x)
    return y

def test_noisy():
    noisy(1)
"""
SOURCE = SourceFile("tests/test_t.py", TESTS)
HELPER_LINE = 4  # assert count(word) == want
METHOD_LINE = 11
NESTED_LINE = 30


def _iso(test: str, line: int, recorded: dict[str, str], indices: dict[str, int] | None = None):
    return isolate(SOURCE, TestRef.parse(f"tests/test_t.py::{test}"), line, indices, recorded)


def test_a_module_helper_is_bound_to_the_literals_of_its_one_call():
    isolated = _iso("test_x", HELPER_LINE, {"word": "'aeiou'", "want": "4"})
    assert isolated.call == 'count("aeiou")'
    assert isolated.assertion == "assert count(word) == want"
    assert isolated.forms == ("helper-assertion",)
    site = isolated.expected
    assert (site.kind, site.text, site.line) == ("call-site", "4", 7)
    assert SOURCE.text.encode()[slice(*site.case)].decode() == 'check("aeiou", 4)'


def test_keyword_arguments_bind_by_name():
    isolated = _iso("test_kw", HELPER_LINE, {"word": "'aeiou'", "want": "4"})
    assert isolated.call == 'count("aeiou")'
    assert (isolated.expected.kind, isolated.expected.text) == ("call-site", "4")


def test_a_default_value_of_the_helper_is_shared_by_every_call():
    isolated = _iso("TestA::test_default", METHOD_LINE, {"word": "'abc'", "want": "3"})
    assert isolated.call == 'count("abc")'
    assert (isolated.expected.kind, isolated.expected.text) == ("helper", "3")


def test_a_literal_at_a_call_in_a_loop_is_shared_and_the_loop_value_recorded():
    isolated = _iso("TestA::test_loop", METHOD_LINE, {"word": "'a'", "want": "1"})
    assert isolated.call == "count('a')"  # read from the helper frame
    assert (isolated.expected.kind, isolated.expected.text) == ("shared", "1")
    assert isolated.forms == ("helper-assertion", "local")


def test_of_several_calls_the_one_the_frame_recorded_is_bound():
    isolated = _iso("TestA::test_two", METHOD_LINE, {"word": "'abc'", "want": "7"})
    assert isolated.call == 'count("abc")'
    assert (isolated.expected.kind, isolated.expected.text, isolated.expected.line) == (
        "call-site",
        "7",
        22,
    )


def test_two_calls_that_pass_the_same_values_are_not_told_apart():
    isolated = _iso("TestA::test_same", METHOD_LINE, {"word": "'ab'", "want": "2"})
    assert isolated.call == "count('ab')"
    assert isolated.expected.kind == "local"  # never a place to edit


def test_a_literal_in_a_nested_helper_is_the_helpers():
    isolated = _iso("test_nested", NESTED_LINE, {"x": "'q'"})
    assert isolated.call == 'count("q")'
    assert (isolated.expected.kind, isolated.expected.text) == ("helper", "0")


def test_a_parametrize_case_passed_to_the_helper_is_its_site():
    isolated = _iso("test_param", HELPER_LINE, {"word": "'abc'", "want": "2"}, {"w": 1, "n": 1})
    assert isolated.call == 'count("abc")'
    assert (isolated.expected.kind, isolated.expected.text) == ("parametrize", "2")
    assert isolated.forms == ("helper-assertion", "parametrize")


def test_a_helper_line_that_is_no_assertion_says_so_in_one_line():
    with pytest.raises(NotIsolated, match="line 44 of `noisy`, a helper test_noisy calls, is"):
        _iso("test_noisy", 44, {"x": "1"})


def test_a_line_in_a_function_the_test_does_not_call_is_not_its_helper():
    with pytest.raises(NotIsolated) as caught:
        _iso("test_noisy", HELPER_LINE, {})
    assert str(caught.value) == (
        "cannot isolate the call under test: line 4 is in `check`, code of the test module "
        "that the test's calls reached, not an assertion of test_noisy or of a helper it calls"
    )


def test_the_recorder_resolves_what_the_helpers_call():
    assert "count" in callee_names(SOURCE, TestRef.parse("tests/test_t.py::test_x"))
    assert "count" in callee_names(SOURCE, TestRef.parse("tests/test_t.py::TestA::test_two"))


def test_a_call_site_fix_is_certified_for_that_call():
    isolated = _iso("test_x", HELPER_LINE, {"word": "'aeiou'", "want": "4"})
    fixed = fix_test(
        SOURCE.text,
        SOURCE.path,
        isolated.expected,
        "5",
        (isolated.assertion_start, isolated.assertion_end),
    )
    assert 'check("aeiou", 5)' in fixed.new_text
    assert "assert count(word) == want" in fixed.new_text
    assert fixed.bound_text == 'check("aeiou", 5)'


# ------------------------------------------------------------------ end to end, --apply

MODULE_HELPER = """from text import count_vowels


def check(word, want):
    assert count_vowels(word) == want


def test_x():
    check("xyz", 0)
    check("aeiou", {want})
"""
METHOD_HELPER = """import unittest

from text import count_vowels


class TestText(unittest.TestCase):
    def check(self, word, want):
        self.assertEqual(count_vowels(word), want)

    def test_x(self):
        self.check("aeiou", {want})
"""
SHARED_HELPER = """from text import count_vowels


def check_five(word):
    assert count_vowels(word) == 4


def test_x():
    check_five("aeiou")
"""


ORACLE = 'def count_vowels(text: str) -> int:\n    return sum(ch in "aeiouAEIOU" for ch in text)\n'
PATCH = (
    "def count_vowels(text: str) -> int:\n"
    '    return sum(1 for ch in text.lower() if ch in "aeiou")\n'
)


def _answer(kind: str) -> str:
    return ORACLE if kind == "oracle" else PATCH


def _cli(referee, tmp_path: Path, module: str, tests: str, test_id: str, model) -> tuple:
    root = cli_project(tmp_path / "p", module, tests, model.url)
    done = referee("arbitrate", test_id, "--format", "json", "--apply", cwd=root)
    assert done.stdout.strip(), (done.returncode, done.stderr)
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    return verdict, root


@pytest.mark.parametrize(
    ("tests", "test_id", "forms"),
    [
        (MODULE_HELPER, "tests/test_text.py::test_x", ["helper-assertion"]),
        (
            METHOD_HELPER,
            "tests/test_text.py::TestText::test_x",
            ["unittest-method", "helper-assertion"],
        ),
    ],
    ids=["module-function", "method"],
)
def test_cli_fixes_a_wrong_function_a_helper_asserts_about(
    tmp_path: Path, referee, tests, test_id, forms
):
    written = tests.format(want="5")
    with FakeModel(_answer) as model:
        verdict, root = _cli(referee, tmp_path, BUGGY, written, test_id, model)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call_forms"] == forms
    assert verdict["call"] == 'count_vowels("aeiou")'
    assert (verdict["produced"], verdict["asserted"], verdict["truth"]) == ("4", "5", "5")
    assert verdict["applied"] is True and verdict["fix"]["side"] == "source"
    fixed = (root / "text.py").read_text(encoding="utf-8")
    assert "text[1:]" not in fixed
    # the fix passes the test, helper and all; the test is untouched
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == written
    namespace: dict = {}
    exec(compile(fixed, "text.py", "exec"), namespace)
    assert namespace["count_vowels"]("aeiou") == 5


def test_cli_fixes_a_wrong_literal_at_the_helpers_call_and_certifies_it(tmp_path: Path, referee):
    with FakeModel(_answer) as model:
        verdict, root = _cli(
            referee,
            tmp_path,
            CORRECT,
            MODULE_HELPER.format(want="4"),
            "tests/test_text.py::test_x",
            model,
        )
    assert verdict["verdict"] == "TEST_WRONG", verdict["reason"]
    assert verdict["call_forms"] == ["helper-assertion"]
    assert verdict["observation"]["expected_site"] == "call-site"
    assert verdict["applied"] is True and verdict["certificate"] is not None
    assert (verdict["fix"]["old_value"], verdict["fix"]["new_value"]) == ("4", "5")
    # the literal at the call is replaced; the helper, shared by the other call, is not
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == MODULE_HELPER.format(
        want="5"
    )
    assert (root / "text.py").read_text(encoding="utf-8") == CORRECT
    ledger = (root / ".referee" / "certificates.jsonl").read_text(encoding="utf-8")
    assert '"new_value": "5"' in ledger


def test_cli_blames_a_test_whose_expected_value_the_helper_shares_without_editing_it(
    tmp_path: Path, referee
):
    with FakeModel(_answer) as model:
        verdict, root = _cli(
            referee, tmp_path, CORRECT, SHARED_HELPER, "tests/test_text.py::test_x", model
        )
    assert verdict["verdict"] == "TEST_WRONG", verdict["reason"]
    assert "is written in the helper the test calls (line 5)" in verdict["reason"]
    assert "the test is not edited" in verdict["reason"] and "\n" not in verdict["reason"]
    assert verdict["fix"] is None and verdict["applied"] is False
    assert verdict["review_item"]
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == SHARED_HELPER
    assert not (root / ".referee" / "certificates.jsonl").exists()


def test_cli_never_edits_a_test_a_helper_blames_the_source_for(tmp_path: Path, referee):
    # the shared literal is right and the code wrong: the source is blamed and fixed
    tests = SHARED_HELPER.replace("== 4", "== 5")
    with FakeModel(_answer) as model:
        verdict, root = _cli(referee, tmp_path, BUGGY, tests, "tests/test_text.py::test_x", model)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests


# ------------------------------------------------------ raises, as real tests write them

CHUNKS = '''class Splitter:
    """Cuts lists into pieces of N items."""

    def __init__(self, n: int) -> None:
        self.n = n

    def split(self, items: list) -> list:
        """ITEMS in lists of N items (the last may be shorter); ValueError when N < 1."""
        return chunks(items, self.n)


def chunks(items: list, n: int) -> list:
    """Split ITEMS into lists of N items (the last may be shorter).

    Raises ValueError("n must be at least 1") when N is below 1.
    """
    {guard}return [items[i : i + max(n, 1)] for i in range(0, len(items), max(n, 1))]
'''
CHUNKS_WRONG = CHUNKS.format(guard="")
CHUNKS_OTHER_MESSAGE = CHUNKS.format(guard='if n < 1:\n        raise ValueError("bad")\n    ')


def _raising(message: str) -> str:
    return (
        "def chunks(items, n):\n"
        "    if n < 1:\n"
        f"        raise ValueError({message!r})\n"
        "    return [items[i : i + n] for i in range(0, len(items), n)]\n"
    )


# an oracle of the method: a function of the constructor's arguments and the call's
SPLIT_ORACLE = (
    "def split(init_args, init_kwargs, items):\n"
    "    n = init_args[0]\n"
    "    if n < 1:\n"
    "        raise ValueError('n')\n"
    "    return [items[i : i + n] for i in range(0, len(items), n)]\n"
)


def _raises_cli(referee, tmp_path: Path, module: str, body: str, answer) -> tuple:
    tests = "import pytest\n\nfrom text import Splitter, chunks\n\n\ndef test_x():\n" + "".join(
        f"    {line}\n" for line in body.splitlines()
    )
    with FakeModel(answer) as model:
        return _cli(referee, tmp_path, module, tests, "tests/test_text.py::test_x", model)


@pytest.mark.parametrize(
    ("body", "answer", "form"),
    [
        (
            "with pytest.raises(ValueError):\n    n = 0\n    chunks([1, 2], n)",
            _raising("n"),
            "local",
        ),
        (
            "splitter = Splitter(0)\nwith pytest.raises(ValueError):\n    splitter.split([1, 2])",
            SPLIT_ORACLE,
            "method-of-assigned-object",
        ),
        (
            "with pytest.raises(ValueError):\n    x = Splitter(0).split([1, 2])",
            SPLIT_ORACLE,
            "method-of-literal-object",
        ),
    ],
    ids=["literal-assigned-in-the-block", "method-of-assigned-object", "method-of-built-object"],
)
def test_cli_blames_a_source_a_raises_block_as_real_tests_write_it_expects_to_raise(
    tmp_path: Path, referee, body, answer, form
):
    verdict, _ = _raises_cli(referee, tmp_path, CHUNKS_WRONG, body, lambda kind: answer)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call_forms"][0] == "raises" and form in verdict["call_forms"]
    assert verdict["produced"] == "returned instead of raising ValueError"
    assert verdict["fix"] is None and verdict["applied"] is False


def test_cli_blames_a_message_the_pattern_misses_when_the_truth_says_it(tmp_path: Path, referee):
    body = 'with pytest.raises(ValueError, match="at least"):\n    chunks([1, 2], 0)'
    answer = _raising("n must be at least 1")
    verdict, _ = _raises_cli(referee, tmp_path, CHUNKS_OTHER_MESSAGE, body, lambda kind: answer)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert "raises-match" in verdict["call_forms"]
    assert (
        verdict["produced"] == "raised ValueError with a message its pattern does not find ('bad')"
    )
    assert "every source raised it with a message the pattern finds" in verdict["reason"]


def test_cli_leaves_a_message_the_truth_does_not_settle_to_a_person(tmp_path: Path, referee):
    body = 'with pytest.raises(ValueError, match="at least"):\n    chunks([1, 2], 0)'
    verdict, root = _raises_cli(
        referee, tmp_path, CHUNKS_OTHER_MESSAGE, body, lambda kind: _raising("n")
    )
    assert verdict["verdict"] == "UNCLEAR", verdict["reason"]
    assert "do not all match" in verdict["reason"] and "\n" not in verdict["reason"]
    assert (root / "text.py").read_text(encoding="utf-8") == CHUNKS_OTHER_MESSAGE


def _raising_iso(body: str):
    text = "def test_x():\n" + "".join(f"    {line}\n" for line in body.splitlines())
    return isolate(SourceFile("t.py", text), TestRef.parse("t.py::test_x"), text.count("\n"))


@pytest.mark.parametrize(
    ("body", "call", "forms", "constructor"),
    [
        (
            "with pytest.raises(ValueError, match='at least'):\n    n = -1\n    chunks([1], n)",
            "chunks([1], -1)",
            ("raises", "local", "raises-match"),
            None,
        ),
        (
            "with pytest.raises(ValueError):\n    x = next(chunks([1], 0))",
            "next(chunks([1], 0))",
            ("raises",),
            None,
        ),
        (
            "c = Splitter(0)\nwith pytest.raises(ValueError):\n    c.split([1])",
            "Splitter(0).split([1])",
            ("raises", "method-of-assigned-object"),
            "Splitter",
        ),
        (
            "with self.assertRaisesRegex(ValueError, 'n'):\n    Splitter(0).split([1])",
            "Splitter(0).split([1])",
            ("unittest-method", "raises", "method-of-literal-object", "raises-match"),
            "Splitter",
        ),
        (
            "with pytest.raises(ValueError):\n    text.chunks([1], 0)",
            "text.chunks([1], 0)",
            ("raises",),
            None,
        ),
    ],
)
def test_a_raises_block_as_real_tests_write_it_is_one_call(body, call, forms, constructor):
    isolated = _raising_iso(body)
    assert (isolated.call, isolated.forms, isolated.constructor) == (call, forms, constructor)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("with pytest.raises(ValueError):\n    make(1)(2)", "calls the value `make(1)` returns"),
        ("with pytest.raises(ValueError):\n    frozen.x = 2", "it assigns (`frozen.x = 2`)"),
        ("with pytest.raises(ValueError):\n    del frozen.x", "it deletes (`del frozen.x`)"),
        (
            "with pytest.raises(ValueError):\n    with ctx():\n        raise ValueError",
            "it enters another context manager",
        ),
        ("with pytest.raises(ValueError):\n    n = g()\n    f(n)", "after literals assigned"),
    ],
)
def test_a_raises_block_that_is_not_one_call_says_what_it_is(body, why):
    with pytest.raises(NotIsolated) as caught:
        _raising_iso(body)
    assert why in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "message",
    [
        "Regex pattern did not match.\n  Regex: 'at least'\n  Input: 'bad'",
        "Regex pattern did not match.\n  Expected regex: 'at least'\n  Actual message: 'bad'",
        '"at least" does not match "bad"',
    ],
)
def test_a_pattern_that_missed_the_message_is_read_from_pytest_and_unittest(message):
    isolated = _raising_iso("with pytest.raises(ValueError, match='at least'):\n    f(0)")
    produced = match_failed(isolated, "AssertionError", message)
    assert produced == "raised ValueError with a message its pattern does not find ('bad')"
    assert match_failed(isolated, "AssertionError", "DID NOT RAISE") is None


# ------------------------------------------------------------------ a statement that raised


@pytest.mark.parametrize(
    ("body", "line", "call", "forms"),
    [
        (
            'r = edit("a", x=1)\nassert r is None',
            2,
            'edit("a", x=1)',
            ("identity", "assigned-call"),
        ),
        (
            'r = parse("2020-01-02")\nprint(1)\nassert r.month == 1',
            2,
            'parse("2020-01-02").month',
            ("assigned-call", "projection"),
        ),
    ],
)
def test_a_call_assigned_that_raised_is_the_call_of_the_assertion_after_it(body, line, call, forms):
    text = "def test_x():\n" + "".join(f"    {b}\n" for b in body.splitlines())
    isolated = isolate(SourceFile("t.py", text), TestRef.parse("t.py::test_x"), line)
    assert (isolated.call, isolated.forms) == (call, forms)


@pytest.mark.parametrize(
    ("body", "line", "why"),
    [
        (
            't = env.from_string("x")\nassert t.render() == "13"',
            2,
            "line 2 of test_x (`t = …`) raised before any assertion ran, and the assertion",
        ),
        (
            "r = f(1)\nr.append(2)\nassert r == [1]",
            2,
            "line 2 of test_x is `r = f(1)`, a statement",
        ),
        ("g(1)", 2, "line 2 of test_x is `g(1)`, a statement of the test that failed"),
        ("@deco(1)\ndef h():\n    pass", 2, "line 2 of test_x is in a definition the test makes"),
        ("for i in (1, 2):\n    inc.invalidate(0)", 3, "is `inc.invalidate(0)`, a statement"),
    ],
)
def test_a_statement_of_the_test_that_failed_says_so_in_one_line(body, line, why):
    text = "def test_x():\n" + "".join(f"    {b}\n" for b in body.splitlines())
    with pytest.raises(NotIsolated) as caught:
        isolate(SourceFile("t.py", text), TestRef.parse("t.py::test_x"), line)
    assert why in str(caught.value) and "\n" not in str(caught.value)


RAISING = '''def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains."""
    return sum(1 for ch in text.lower() if ch in "aeiou") // len(text[5:])
'''


def test_cli_fixes_a_function_that_raised_where_its_value_was_assigned(tmp_path: Path, referee):
    tests = (
        "from text import count_vowels\n\n\n"
        'def test_x():\n    n = count_vowels("aeiou")\n    assert n == 5\n'
    )
    with FakeModel(_answer) as model:
        verdict, root = _cli(referee, tmp_path, RAISING, tests, "tests/test_text.py::test_x", model)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call_forms"] == ["assigned-call"]
    assert verdict["produced"].startswith("ZeroDivisionError")
    assert verdict["applied"] is True and "len(text[5:])" not in (root / "text.py").read_text()
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_guard_honours_a_certified_fix_at_the_helpers_call_and_not_one_by_hand(
    tmp_path: Path, referee
):
    root = tmp_path / "repo"
    before = MODULE_HELPER.format(want="4")
    commit_repo(root, {"referee.toml": "", "text.py": CORRECT, "tests/test_text.py": before})
    result = apply(run(root, "tests/test_text.py::test_x", scripted([ORACLE_FENCED])))
    assert result.verdict.verdict == "TEST_WRONG" and result.verdict.applied
    guard = referee("guard", "--format", "json", cwd=root)
    assert guard.returncode == 0, guard.stdout + guard.stderr
    findings = json.loads(guard.stdout)["findings"]
    assert [(f["code"], f["severity"]) for f in findings] == [("REF302", "info")], findings
    assert "certified by" in findings[0]["message"]
    # the same edit by hand, or another literal of the call changed: not honoured
    (root / ledger.LEDGER).unlink()
    assert referee("guard", cwd=root).returncode == 1


def test_a_literal_that_is_both_the_input_and_the_expected_value_is_shared():
    text = "def check(x):\n    assert norm(x) == x\n\ndef test_x():\n    check(5)\n"
    isolated = isolate(SourceFile("t.py", text), TestRef.parse("t.py::test_x"), 2, {}, {"x": "5"})
    assert isolated.call == "norm(5)"
    assert (isolated.expected.kind, isolated.expected.text) == ("shared", "5")


def test_a_parametrize_value_that_is_both_the_input_and_the_expected_value_is_shared():
    text = (
        "import pytest\n\ndef check(x, y):\n    assert norm(x) == y\n\n"
        "@pytest.mark.parametrize('w', [5])\ndef test_x(w):\n    check(w, w)\n"
    )
    isolated = isolate(
        SourceFile("t.py", text), TestRef.parse("t.py::test_x"), 4, {"w": 0}, {"x": "5", "y": "5"}
    )
    assert isolated.call == "norm(5)"
    assert (isolated.expected.kind, isolated.expected.text) == ("shared", "5")


def test_a_helper_method_of_the_test_classs_base_is_its_helper():
    text = (
        "import unittest\n\nclass Base(unittest.TestCase):\n"
        "    def check(self, word, want):\n        self.assertEqual(count(word), want)\n\n"
        "class TestX(Base):\n    def test_x(self):\n        self.check('ab', 3)\n"
    )
    source = SourceFile("t.py", text)
    isolated = isolate(source, TestRef.parse("t.py::TestX::test_x"), 5, {}, {"word": "'ab'"})
    assert isolated.call == "count('ab')"
    assert (isolated.expected.kind, isolated.expected.text) == ("call-site", "3")
    assert "count" in callee_names(source, TestRef.parse("t.py::TestX::test_x"))
