"""The specification from the suite: a function with no docstring is arbitrated from the
project's own passing assertions about it (checks/arbitration/suite.py) — never the
failing test, never an assertion the working diff changed, never one the current code
fails. Real pytest, the real sandbox and real git; the model is scripted (the engine), a
fake OpenAI-compatible server (the command line), or the real small model (marked
``model``).
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest
from guard_catalogue.cases import commit_repo, git
from red_team.fake_openai import FakeModel
from test_arbitration import project, run
from test_arbitration_oracles import arbitrate_json, body, cli_project

from referee.checks.arbitration.suite import assertions, changed_lines, suite_examples
from referee.checks.arbitration.truth import prompts
from referee.checks.judge.backend import ScriptedBackend

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

BUGGY = """def count_words(text: str) -> int:
    return len(text.split(" "))  # BODY-MARKER
"""
CORRECT = """def count_words(text: str) -> int:
    return len(text.split())
"""
SUITE = """from text import count_words


def test_three():
    assert count_words("one two three") == 3


def test_one():
    assert count_words("hello") == 1


def test_four():
    assert count_words("a b c d") == 4


def test_vowels():
    assert count_words("") == 0
"""
NODE = "tests/test_text.py::test_vowels"  # the failing test (the helpers' node id)
ORACLE = "```python\ndef count_words(text: str) -> int:\n    return len(text.split())\n```"
# counts characters: contradicts every assertion of the suite
MISREAD = "```python\ndef count_words(text):\n    return len(text)\n```"
PATCH = "```python\ndef count_words(text: str) -> int:\n    return len(text.split())\n```"


class Recorder:
    """A scripted model that answers oracle prompts in turn and records every prompt."""

    def __init__(self, oracles: list[str], patches: list[str] = ()) -> None:
        self.oracles, self.patches = oracles, list(patches) or [""]
        self.prompts: list[list[dict[str, str]]] = []
        self.asked = {"oracle": 0, "patch": 0}
        self.lock = threading.Lock()

    def answer(self, messages, schema) -> str:
        kind = "oracle" if messages[0]["content"] == prompts().oracle_system else "patch"
        answers = self.oracles if kind == "oracle" else self.patches
        with self.lock:
            self.prompts.append(list(messages))
            index = self.asked[kind]
            self.asked[kind] += 1
        return answers[index % len(answers)]

    def backend(self) -> ScriptedBackend:
        return ScriptedBackend(answer=self.answer)

    def oracle_text(self) -> str:
        return "\n".join(
            m["content"]
            for p in self.prompts
            if p[0]["content"] == prompts().oracle_system
            for m in p
        )


def misread_first(oracle: str, misread: str, patch: str):
    """A fake model server's answers: ``patch`` to a patch prompt; to an oracle prompt,
    ``misread`` for seed 1 (oracle-1) and ``oracle`` for every other seed."""

    def answer_for(request: dict) -> str:
        if request["messages"][0]["content"] != prompts().oracle_system:
            return body(patch)
        return body(misread) if request.get("seed") == 1 else body(oracle)

    return answer_for


def _never_the_failing_case(text: str) -> None:
    assert 'count_words("")' not in text and "count_words('')" not in text
    assert "== 0" not in text
    assert "BODY-MARKER" not in text and "split(" not in text


# ------------------------------------------------------------------ reading the suite


def test_assertions_are_read_by_the_name_the_module_imported_and_the_failing_tests_marked():
    text = """import pytest
import pkg.text as tx
from pkg.text import count_words as cw
from other import count_words


class TestWords:
    def test_a(self):
        self.assertEqual(cw("a b"), 2)
        self.assertIsNone(tx.count_words(None))

    def test_failing(self):
        assert cw("x") == 9


@pytest.mark.parametrize("text, n", [("a", 1), ("a b c", 3), pytest.param("z", 1)])
def test_rows(text, n):
    assert tx.count_words(text) == n


def test_not_literal():
    value = "a"
    assert cw(value) == 1
    assert count_words("a b") == 99  # another module's function of the same name
    assert cw("a") is True or True
"""
    found, skipped = assertions(
        text, "tests/t.py", "count_words", "pkg.text", ("TestWords", "test_failing")
    )
    assert [(f.call, f.want, f.in_failing_test) for f in found] == [
        ("count_words('a b')", "2", False),
        ("count_words(None)", "None", False),
        ("count_words('x')", "9", True),
        ("count_words('a')", "1", False),
        ("count_words('a b c')", "3", False),
    ]
    assert skipped == 1
    assert found[3].spans[0][0] == found[3].line == 16 and found[3].spans[1] == (18, 18)


def test_a_value_the_test_assigns_from_the_call_is_an_example_at_its_next_read():
    """``n = cw("a b")`` then ``assert n == 2``: the call's example, its assignment's line
    among its lines; assigned again, each value at the read after it; not a value a branch
    may have assigned again, nor one read first by something else."""
    text = """import pytest
from pkg.text import count_words as cw


def test_values():
    n = cw("a b")
    assert n == 2
    n = cw("a b c")
    assert n == 3
    m = cw("x")
    print(m)
    assert m == 1


def test_branch(flag):
    k = cw("y")
    if flag:
        k = cw("y z")
    assert k == 1
"""
    found, _ = assertions(text, "tests/t.py", "count_words", "pkg.text")
    assert [(f.call, f.want, f.spans) for f in found] == [
        ("count_words('a b')", "2", ((7, 7), (6, 6))),
        ("count_words('a b c')", "3", ((9, 9), (8, 8))),
    ]


@needs_git
def test_a_rows_list_the_test_changes_before_the_assertion_is_no_example():
    text = """import pytest
from pkg.text import count_words


@pytest.mark.parametrize("words, n", [(["a b"], 2), (("c d e",), 3)])
def test_grown(words, n):
    words.append("f")
    assert count_words(words) == n


@pytest.mark.parametrize("words, n", [(["a b"], 2), (("c d e",), 3)])
def test_as_written(words, n):
    assert count_words(words) == n
"""
    found, _ = assertions(text, "tests/t.py", "count_words", "pkg.text")
    # test_grown's list row ran as ["a b", "f"]; its tuple row cannot have changed
    assert [(f.call, f.want, f.line) for f in found] == [
        ("count_words(('c d e',))", "3", 5),
        ("count_words(['a b'])", "2", 11),
        ("count_words(('c d e',))", "3", 11),
    ]


def test_an_assertion_changed_in_the_working_diff_is_not_the_suites_word(tmp_path: Path):
    root = tmp_path / "repo"
    commit_repo(root, {"referee.toml": "", "text.py": CORRECT, "tests/test_text.py": SUITE})
    edited = SUITE.replace('count_words("hello") == 1', 'count_words("hello") == 7')
    (root / "tests/test_text.py").write_text(edited, encoding="utf-8")
    (root / "tests/test_new.py").write_text(
        'from text import count_words\n\n\ndef test_new():\n    assert count_words("x y") == 2\n',
        encoding="utf-8",
    )
    changed = changed_lines(root)
    assert changed is not None and changed["tests/test_new.py"] is None
    assert changed["tests/test_text.py"] == {9}
    scan = suite_examples(root, "count_words", "text", "tests/test_text.py", (None, "x"), "''")
    calls = [f.call for f in scan.found]
    assert calls == ["count_words('one two three')", "count_words('a b c d')"]
    assert scan.excluded == {
        "the failing call's arguments": 1,
        "changed in the working diff": 2,
    }


@needs_git
def test_the_failing_tests_committed_assertions_are_the_suites_word_its_new_ones_are_not(
    tmp_path: Path,
):
    tests = (
        "from text import count_words\n\n\n"
        "def test_words():\n"
        '    assert count_words("one") == 1\n'
        '    assert count_words("a b") == 2\n'
        '    assert count_words("") == 7\n'
    )
    root = tmp_path / "repo"
    commit_repo(root, {"referee.toml": "", "text.py": CORRECT, "tests/test_text.py": tests})
    failing = ("tests/test_text.py", (None, "test_words"), '""')
    scan = suite_examples(root, "count_words", "text", failing[0], failing[1], failing[2])
    assert [f.call for f in scan.found] == ["count_words('one')", "count_words('a b')"]
    assert scan.excluded == {"the failing call's arguments": 1}
    # written with the red assertion, in the working diff: not what was committed before
    added = tests.replace('("") == 7\n', '("") == 7\n    assert count_words("x y z") == 3\n')
    (root / "tests/test_text.py").write_text(added, encoding="utf-8")
    scan = suite_examples(root, "count_words", "text", failing[0], failing[1], failing[2])
    assert [f.call for f in scan.found] == ["count_words('one')", "count_words('a b')"]
    assert scan.excluded == {"the failing call's arguments": 1, "changed in the working diff": 1}


def test_without_git_only_the_failing_test_is_left_out_and_the_scan_says_so(tmp_path: Path):
    root = project(tmp_path / "p", CORRECT, SUITE)
    scan = suite_examples(
        root, "count_words", "text", "tests/test_text.py", (None, "test_vowels"), '""'
    )
    assert len(scan.found) == 3
    assert scan.excluded == {"in the failing test": 1}
    assert any("no git" in note for note in scan.notes)


def test_the_failing_calls_arguments_are_matched_by_parameter_not_by_text(tmp_path: Path):
    from referee.checks.arbitration.suite import parameters

    root = project(tmp_path / "p", CORRECT, SUITE)
    signature = parameters("def count_words(text: str, sep: str = ' ') -> int:")
    # the failing call written with a keyword, and a default spelled out: the same call
    for failing in ("text='hello'", "'hello', sep=' '"):
        scan = suite_examples(
            root, "count_words", "text", "tests/test_text.py", (None, "x"), failing,
            signature=signature,
        )  # fmt: skip
        assert "count_words('hello')" not in [f.call for f in scan.found]
        assert scan.excluded["the failing call's arguments"] == 1


# ------------------------------------------------------------------ through the engine


def test_no_docstring_spec_from_suite_source_wrong_with_a_fix(tmp_path: Path):
    root = project(tmp_path / "p", BUGGY, SUITE)
    model = Recorder([MISREAD, ORACLE, ORACLE, ORACLE, ORACLE], [PATCH])
    result = run(root, NODE, model.backend())
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.truth == "0" and verdict.produced == "1"
    assert verdict.truth_source == "oracles (spec from suite: 3 examples)"
    # the oracle that counts characters contradicts the suite: set aside and replaced
    (gone,) = verdict.replaced_oracles
    assert gone.source == "oracle-1"
    assert gone.detail.startswith(
        "contradicts the suite's example: count_words('one two three') returned 13, "
        "the suite says 3"
    )
    assert all(o.value == "0" for o in verdict.oracles)
    assert verdict.spec_examples[:3] == (
        'tests/test_text.py:5: assert count_words("one two three") == 3',
        'tests/test_text.py:9: assert count_words("hello") == 1',
        'tests/test_text.py:13: assert count_words("a b c d") == 4',
    )
    assert verdict.fix is not None and verdict.fix.side == "source"
    assert "split()" in (result.new_text or "")
    # the oracles' prompt carried the suite's assertions, never the failing case or body
    text = model.oracle_text()
    assert "assert count_words('one two three') == 3" in text
    assert "assert count_words('a b c d') == 4" in text
    _never_the_failing_case(text)


def test_an_assertion_the_current_code_fails_is_not_the_suites_word(tmp_path: Path):
    # the current code gives 2 for "a  b" (two spaces): that assertion is another red
    # test, not committed truth; two passing ones are left — one fewer than asked for
    tests = SUITE.replace(
        'def test_one():\n    assert count_words("hello") == 1',
        'def test_one():\n    assert count_words("a  b") == 2',
    ).replace('def test_four():\n    assert count_words("a b c d") == 4', "")
    root = project(tmp_path / "p", BUGGY, tests, "[arbitration]\nsuite-examples = 2\n")
    model = Recorder([ORACLE])
    verdict = run(root, NODE, model.backend()).verdict
    assert verdict.verdict == "UNCLEAR"
    assert verdict.reason.startswith("no independent truth for `count_words`: no docstring")
    assert "only 1 passing assertion about it in the suite (2 needed)" in verdict.reason
    assert "1 fails on the current code" in verdict.reason
    assert '`>>> count_words("")`' in verdict.reason or ">>> count_words(" in verdict.reason
    assert "[arbitration.references]" in verdict.reason and "\n" not in verdict.reason
    assert model.prompts == []  # unclear before any model call


def test_passing_assertions_are_found_past_a_dozen_that_fail_with_the_failing_test(
    tmp_path: Path,
):
    """The bug's own test module, read first, holds fourteen more assertions the current
    code fails (double spaces); the passing ones are in another module. Running only the
    first twelve read, none passed and the case was UNCLEAR."""
    red = "".join(
        f'\n\ndef test_spaces_{n}():\n    assert count_words("a{" " * (n + 2)}b") == 2\n'
        for n in range(14)
    )
    tests = (
        'from text import count_words\n\n\ndef test_vowels():\n    assert count_words("") == 0\n'
    )
    root = project(tmp_path / "p", BUGGY, tests + red)
    (root / "tests" / "test_more.py").write_text(
        SUITE.split("\n\n\ndef test_vowels")[0] + "\n", encoding="utf-8"
    )
    model = Recorder([ORACLE])
    verdict = run(root, NODE, model.backend()).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.truth_source == "oracles (spec from suite: 3 examples)"
    assert [w.split(": ", 1)[0] for w in verdict.spec_examples[:3]] == [
        "tests/test_more.py:5",
        "tests/test_more.py:9",
        "tests/test_more.py:13",
    ]
    assert "14 fails on the current code" in verdict.spec_examples[3]


def test_too_few_assertions_is_unclear_in_one_line_without_asking_the_model(tmp_path: Path):
    tests = (
        'from text import count_words\n\n\ndef test_vowels():\n    assert count_words("") == 0\n'
    )
    root = project(tmp_path / "p", BUGGY, tests)
    model = Recorder([ORACLE])
    verdict = run(root, NODE, model.backend()).verdict
    assert verdict.verdict == "UNCLEAR" and model.prompts == []
    assert verdict.reason == (
        "no independent truth for `count_words`: no docstring, no doctest for this call, no "
        "reference, and no passing assertion about it in the suite (2 needed) — left out: "
        '1 in the failing test — add a docstring example (`>>> count_words("")`), a '
        'reference (`[arbitration.references]` "text:count_words" = ...), or a literal case '
        "(`assert count_words(...) == value`) to a committed test"
    )


def test_suite_examples_zero_turns_the_suite_off(tmp_path: Path):
    root = project(tmp_path / "p", BUGGY, SUITE, "[arbitration]\nsuite-examples = 0\n")
    model = Recorder([ORACLE])
    verdict = run(root, NODE, model.backend()).verdict
    assert verdict.verdict == "UNCLEAR" and model.prompts == []
    assert "arbitration.suite-examples = 0" in verdict.reason


def test_a_right_function_with_a_wrong_assertion_needs_the_test_edit_confirmation(
    tmp_path: Path,
):
    # the code is right, the failing test asserts 5 words for "" — the suite's oracles
    # certify 0 = produced: a test edit, confirmed by the extra oracles as always
    root = project(tmp_path / "p", CORRECT, SUITE.replace("== 0", "== 5"))
    model = Recorder([ORACLE])
    verdict = run(root, NODE, model.backend()).verdict
    assert verdict.verdict == "TEST_WRONG", verdict.reason
    assert verdict.truth == "0" and len(verdict.oracles) == 5  # 3, then 2 for a test edit
    assert verdict.truth_source == "oracles (spec from suite: 3 examples)"
    assert "== 5" not in model.oracle_text()


# ------------------------------------------------------------------ the command line


def test_cli_apply_fixes_the_source_from_the_suites_spec(tmp_path: Path, referee):
    with FakeModel(lambda kind: "", answer_for=misread_first(ORACLE, MISREAD, PATCH)) as model:
        root = cli_project(tmp_path / "p", BUGGY, SUITE, model.url)
        verdict = arbitrate_json(referee, root, "--apply")
        prompts_seen = [r["messages"] for r in model.requests]
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["truth_source"] == "oracles (spec from suite: 3 examples)"
    assert verdict["applied"] and verdict["fix"]["side"] == "source"
    assert "text.split()" in (root / "text.py").read_text(encoding="utf-8")
    assert [o["source"] for o in verdict["replaced_oracles"]] == ["oracle-1"]
    oracle_text = json.dumps(
        [p for p in prompts_seen if p[0]["content"] == prompts().oracle_system]
    )
    assert "count_words('hello') == 1" in oracle_text
    _never_the_failing_case(oracle_text)


# ------------------------------------------------------------------ the real model


@pytest.mark.model
def test_spec_from_suite_with_the_real_model_never_blames_the_wrong_side(
    tmp_path: Path, small_model: Path
):
    from referee.checks.arbitration.engine import arbitrate
    from referee.checks.arbitration.truth import LazyModel
    from referee.checks.config import discover

    root = project(
        tmp_path / "p", BUGGY, SUITE, "[arbitration]\ncandidates = 1\ntime-budget = 300\n"
    )
    model = LazyModel("llama-cpp", str(small_model), None, None)
    seen: list[list[dict[str, str]]] = []
    chat_batch = model.chat_batch

    def recording(requests, **kwargs):
        seen.extend(list(r.messages) for r in requests)
        return chat_batch(requests, **kwargs)

    model.chat_batch = recording  # type: ignore[method-assign]
    verdict = arbitrate(
        NODE, discover(root), backend=lambda: model, cache_dir=tmp_path / "cache"
    ).verdict
    print(f"real model: {verdict.verdict}: {verdict.reason}")
    # the code is wrong: the only wrong blame would be editing the test
    assert verdict.verdict in ("SOURCE_WRONG", "UNCLEAR"), verdict.reason
    assert verdict.verdict != "TEST_WRONG"
    text = json.dumps(seen)
    assert "count_words('one two three') == 3" in text
    _never_the_failing_case(
        json.dumps([m for m in seen if m[0]["content"] == prompts().oracle_system])
    )


@needs_git
def test_through_the_engine_an_assertion_edited_now_does_not_count(tmp_path: Path):
    # committed: two passing assertions and the red test; then one of them is edited (it
    # still passes): only one is the committed spec — one fewer than needed
    tests = SUITE.replace('def test_four():\n    assert count_words("a b c d") == 4', "")
    root = tmp_path / "repo"
    commit_repo(root, {"referee.toml": "", "text.py": BUGGY, "tests/test_text.py": tests})
    edited = tests.replace('count_words("hello") == 1', 'count_words("hi") == 1')
    (root / "tests/test_text.py").write_text(edited, encoding="utf-8")
    model = Recorder([ORACLE])
    verdict = run(root, NODE, model.backend()).verdict
    assert verdict.verdict == "UNCLEAR" and model.prompts == []
    assert "only 1 passing assertion about it in the suite (2 needed)" in verdict.reason
    assert "1 changed in the working diff" in verdict.reason
    assert verdict.spec_examples[0] == (
        'tests/test_text.py:5: assert count_words("one two three") == 3'
    )
    # committed, the same assertion is the suite's word again
    git(root, "commit", "-qam", "hi")
    model = Recorder([ORACLE], [PATCH])
    verdict = run(root, NODE, model.backend()).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.truth_source == "oracles (spec from suite: 2 examples)"


def test_the_suite_is_read_through_the_projects_one_walk(tmp_path: Path):
    """Test modules in virtual environments, build output and ``exclude`` are not the suite."""
    from referee.checks.arbitration.suite import test_files
    from referee.checks.config import Settings, validate

    skipped = ("venv", ".venv", "x.egg-info", "node_modules", "pkg/build", "__pycache__", "gen")
    for folder in ("tests", "pkg", *skipped):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "test_a.py").write_text("")
    settings = Settings(validate({"exclude": ["gen/"]}, None), tmp_path)
    found = list(test_files(tmp_path, "tests/test_a.py", settings))
    assert found == ["tests/test_a.py", "pkg/test_a.py"]


# ------------------------------------------- boolean expectations, module constants, decorators

PREDICATE = """import functools


def for_app(*apps):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(script):
            return script.split()[:1] == [apps[0]] and fn(script)
        return wrapper
    return decorate


@for_app("git")
def is_push(script):
    return script.split()[-1] == "push"  # BODY-MARKER
"""
PREDICATE_SUITE = """import unittest

from text import is_push

STATUS = "git status"


def test_push():
    assert is_push("git push")


def test_status():
    assert not is_push(STATUS)


class TestOther(unittest.TestCase):
    def test_ls(self):
        self.assertFalse(is_push("ls push"))


def test_origin():
    assert is_push("git push origin")
"""
PREDICATE_NODE = "tests/test_text.py::test_origin"
# the decorator the prompt shows, copied onto the program: dropped before it runs
PREDICATE_ORACLE = (
    '```python\n@for_app("git")\ndef is_push(script):\n'
    '    words = script.split()\n    return words[:1] == ["git"] and "push" in words[1:]\n```'
)
ALWAYS = "```python\ndef is_push(script):\n    return True\n```"


def test_boolean_expectations_and_module_constants_are_the_suites_examples():
    text = """import unittest
from text import f
NAME = "a b"
ROWS = ["x"]
MOVED = 1
MOVED = 2


def test_a():
    assert f(1)
    assert not f(NAME)
    assert bool(f(3))
    assert not len(f(4))
    assert f(ROWS) == 1
    assert f(MOVED) == 1


class T(unittest.TestCase):
    def test_b(self):
        self.assertTrue(f(5))
        self.assertFalse(f("c"), "message")
"""
    found, _ = assertions(text, "tests/t.py", "f", "text")
    assert [(a.call, a.want) for a in found] == [
        ("bool(f(1))", "True"),
        ("bool(f('a b'))", "False"),
        ("bool(f(3))", "True"),
        ("bool(f(5))", "True"),
        ("bool(f('c'))", "False"),
    ]
    # a constant's line is one the example is written on (the working diff may change it)
    assert found[1].spans == ((11, 11), (3, 3))


def test_a_value_the_test_assigns_then_asserts_true_or_false_is_a_truth_example():
    """``r = f(1)``, then ``assert r`` (``assert not r``, ``self.assertFalse(r)``): the truth
    of the value the name holds, as the failing call's reader reads it."""
    text = (
        "from text import f\n\n\ndef test_a(self):\n    r = f(1)\n    assert r\n"
        "    s = f(2)\n    assert len(s) == 1\n    assert not s\n"
        "    u = f(3)\n    self.assertFalse(u)\n    v = f(4)\n    v.clear()\n    assert v\n"
    )
    found, _ = assertions(text, "tests/t.py", "f", "text")
    assert [(a.call, a.want, a.spans) for a in found] == [
        ("bool(f(1))", "True", ((6, 6), (5, 5))),
        ("len(f(2))", "1", ((8, 8), (7, 7))),
        ("bool(f(2))", "False", ((9, 9), (7, 7))),
        ("bool(f(3))", "False", ((11, 11), (10, 10))),
    ]


@pytest.mark.parametrize(
    "elsewhere",
    ["def test_b():\n    LIMIT = 4\n", "from other import *\n", "def test_b(LIMIT):\n    pass\n"],
    ids=["a-test-binds-it", "star-import", "a-parameter"],
)
def test_a_name_the_module_binds_elsewhere_is_no_constant(elsewhere: str):
    text = "from text import f\nLIMIT = 3\n\n\ndef test_a():\n    assert f(LIMIT) == 1\n"
    found, _ = assertions(text, "tests/t.py", "f", "text")
    assert [(a.call, a.want) for a in found] == [("f(3)", "1")]
    found, _ = assertions(text + elsewhere, "tests/t.py", "f", "text")
    assert found == []


def test_a_predicate_decorated_without_docstring_is_arbitrated_from_its_truth_examples(
    tmp_path: Path,
):
    root = project(tmp_path / "p", PREDICATE, PREDICATE_SUITE)
    model = Recorder([ALWAYS, PREDICATE_ORACLE, PREDICATE_ORACLE, PREDICATE_ORACLE])
    result = run(root, PREDICATE_NODE, model.backend())
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert (verdict.truth, verdict.produced) == ("True", "False")
    assert verdict.spec_examples[:3] == (
        'tests/test_text.py:9: assert is_push("git push")',
        "tests/test_text.py:13: assert not is_push(STATUS)",
        'tests/test_text.py:18: self.assertFalse(is_push("ls push"))',
    )
    # the program that says True to everything contradicts `assert not`: replaced (each
    # time the scripted model gives it again)
    assert verdict.replaced_oracles and all(
        "bool(is_push('git status')) returned True, the suite says False" in gone.detail
        for gone in verdict.replaced_oracles
    )
    # each oracle ran with the decorator it copied dropped: it gave the value, no NameError
    assert [o.value for o in verdict.oracles] == ["True"] * 3
    text = model.oracle_text()
    assert "# decorated with @for_app('git')\ndef is_push(script):" in text
    assert "assert is_push('git push')\nassert not is_push('git status')" in text
    assert "assert not is_push('ls push')" in text
    assert "git push origin" not in text and "BODY-MARKER" not in text and "[-1]" not in text


@needs_git
def test_a_parametrized_predicates_other_cases_are_truth_examples_as_they_ran(tmp_path: Path):
    # the argument is computed (`value = n * 10`): no static reading; the cases that passed give
    # `bool(is_small(10)) == True` as they ran
    module = "def is_small(n):\n    return n < 25  # BODY-MARKER\n"
    tests = """import pytest

from text import is_small


@pytest.mark.parametrize("n", [1, 2, 3])
def test_small(n):
    value = n * 10
    assert is_small(value)


def test_large():
    assert not is_small(100)
"""
    oracle = "```python\ndef is_small(n):\n    return n <= 30\n```"
    root = tmp_path / "p"  # committed: the failing test's other cases are the suite's word
    commit_repo(root, {"referee.toml": "", "text.py": module, "tests/test_text.py": tests})
    model = Recorder([oracle])
    verdict = run(root, "tests/test_text.py::test_small[3]", model.backend()).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert (verdict.truth, verdict.produced) == ("True", "False")
    assert set(verdict.spec_examples[:3]) == {
        "tests/test_text.py:9: assert is_small(value)  [1]",
        "tests/test_text.py:9: assert is_small(value)  [2]",
        "tests/test_text.py:13: assert not is_small(100)",
    }
    text = model.oracle_text()
    assert "assert is_small(10)\nassert is_small(20)" in text or (
        "assert is_small(10)" in text and "assert is_small(20)" in text
    )
    assert "is_small(30)" not in text and "BODY-MARKER" not in text


def test_cli_reads_the_suite_of_a_function_its_package_re_exports_under_the_module_s_name(
    tmp_path: Path, referee
):
    """``count_words/__init__.py`` re-exports ``count_words`` from ``count_words/
    count_words.py``: the package's attribute ``count_words`` is the function, not the
    module, so the suite's assertions must be run on the module as the import system
    holds it (before, ``import count_words.count_words as m`` gave the function, every
    assertion "could not be run on the current code", and the case was UNCLEAR)."""
    with FakeModel(lambda kind: "", answer_for=misread_first(ORACLE, MISREAD, PATCH)) as model:
        root = cli_project(
            tmp_path / "p", BUGGY, SUITE.replace("from text", "from count_words"), model.url
        )
        (root / "text.py").unlink()
        package = root / "count_words"
        package.mkdir()
        (package / "__init__.py").write_text(
            "from .count_words import count_words\n", encoding="utf-8"
        )
        (package / "count_words.py").write_text(BUGGY, encoding="utf-8")
        verdict = arbitrate_json(referee, root, "--apply")
    assert verdict["verdict"] == "SOURCE_WRONG", (verdict["reason"], verdict["spec_examples"])
    assert verdict["truth_source"] == "oracles (spec from suite: 3 examples)"
    assert verdict["applied"] and verdict["fix"]["side"] == "source"
    assert "text.split()" in (package / "count_words.py").read_text(encoding="utf-8")
