"""With `suite-beside-docstring = true` (off by default), a documented function whose
docstring gives fewer examples than `suite-examples`: the
project's own passing assertions about it follow the docstring in the oracles' prompt, and
an oracle counts only when it reproduces them too (checks/arbitration/engine.py,
``_suite_beside``). Real pytest and the real sandbox; the model is scripted (the engine)
or a fake OpenAI-compatible server (the command line).
"""

from __future__ import annotations

import json
from pathlib import Path

from red_team.fake_openai import FakeModel
from test_arbitration import project, run
from test_arbitration_oracles import arbitrate_json, cli_project
from test_arbitration_suite import (
    NODE,
    ORACLE,
    PATCH,
    SUITE,
    Recorder,
    _never_the_failing_case,
    misread_first,
)

from referee.checks.arbitration.truth import prompts

DOCSTRING = '''    """The number of words in ``text``: runs of characters between whitespace."""
'''
BUGGY = (
    "def count_words(text: str) -> int:\n"
    + DOCSTRING
    + '    return len(text.split(" "))  # BODY-MARKER\n'
)
CORRECT = "def count_words(text: str) -> int:\n" + DOCSTRING + "    return len(text.split())\n"
# counts comma-separated fields: gives 1 for "" (the buggy code's value) and contradicts the suite's
# "one two three" == 3; the docstring alone has no example to set it aside
MISREAD = "```python\ndef count_words(text):\n    return text.count(',') + 1\n```"


def test_the_suites_assertions_set_aside_an_oracle_the_docstring_alone_would_keep(
    tmp_path: Path,
):
    root = project(tmp_path / "p", BUGGY, SUITE, suite_beside=True)
    model = Recorder([MISREAD, ORACLE, ORACLE, ORACLE, ORACLE], [PATCH])
    result = run(root, NODE, model.backend())
    verdict = result.verdict
    # without the suite, oracle-1's 1 would stand against the others' 0: UNCLEAR
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.truth == "0" and verdict.produced == "1"
    assert verdict.truth_source == "oracles (spec from docstring and suite: 3 examples)"
    (gone,) = verdict.replaced_oracles
    assert gone.source == "oracle-1"
    assert gone.detail == (
        "contradicts the suite's example: count_words('one two three') returned 1, the suite says 3"
    )
    assert (
        verdict.spec_examples[0] == 'tests/test_text.py:5: assert count_words("one two three") == 3'
    )
    assert "split()" in (result.new_text or "")
    # the prompt: the docstring, then the suite's assertions; never the failing case
    text = model.oracle_text()
    assert "runs of characters between whitespace" in text
    assert "These assertions from the project's own tests pass today" in text
    assert "assert count_words('hello') == 1" in text
    _never_the_failing_case(text)


def test_a_docstring_with_examples_enough_is_the_whole_spec(tmp_path: Path):
    documented = BUGGY.replace(
        DOCSTRING,
        '    """The number of words in ``text``.\n\n'
        '    >>> count_words("a b")\n    2\n    >>> count_words("x")\n    1\n    """\n',
    )
    root = project(tmp_path / "p", documented, SUITE, suite_beside=True)
    model = Recorder([ORACLE], [PATCH])
    verdict = run(root, NODE, model.backend()).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.truth_source == "oracles"
    assert verdict.spec_examples == ()
    assert "count_words('hello')" not in model.oracle_text()


def test_too_few_suite_assertions_leave_the_docstring_alone(tmp_path: Path):
    tests = (
        "from text import count_words\n\n\n"
        'def test_one():\n    assert count_words("hello") == 1\n\n\n'
        'def test_vowels():\n    assert count_words("") == 0\n'
    )
    root = project(tmp_path / "p", BUGGY, tests, suite_beside=True)
    model = Recorder([MISREAD, ORACLE, ORACLE], [PATCH])
    verdict = run(root, NODE, model.backend()).verdict
    # one assertion is not suite-examples (2): the docstring is the spec, as before, and
    # the misreading oracle stands against the others
    assert verdict.verdict == "UNCLEAR", verdict.reason
    assert verdict.reason.startswith("the 3 oracles do not agree")
    assert "count_words('hello')" not in model.oracle_text()


def test_a_right_documented_function_gets_a_test_edit_certified_by_both(tmp_path: Path):
    root = project(tmp_path / "p", CORRECT, SUITE.replace("== 0", "== 5"), suite_beside=True)
    model = Recorder([ORACLE])
    verdict = run(root, NODE, model.backend()).verdict
    assert verdict.verdict == "TEST_WRONG", verdict.reason
    assert verdict.truth == "0" and len(verdict.oracles) == 5  # 3, then 2 to edit a test
    assert verdict.truth_source == "oracles (spec from docstring and suite: 3 examples)"
    assert "== 5" not in model.oracle_text()


def test_cli_apply_fixes_a_documented_function_from_docstring_and_suite(tmp_path: Path, referee):
    with FakeModel(lambda kind: "", answer_for=misread_first(ORACLE, MISREAD, PATCH)) as model:
        root = cli_project(tmp_path / "p", BUGGY, SUITE, model.url, suite_beside=True)
        verdict = arbitrate_json(referee, root, "--apply")
        seen = [r["messages"] for r in model.requests]
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["truth_source"] == "oracles (spec from docstring and suite: 3 examples)"
    assert verdict["applied"] and verdict["fix"]["side"] == "source"
    assert "text.split()" in (root / "text.py").read_text(encoding="utf-8")
    assert [o["source"] for o in verdict["replaced_oracles"]] == ["oracle-1"]
    oracle_text = json.dumps([p for p in seen if p[0]["content"] == prompts().oracle_system])
    assert "between whitespace" in oracle_text and "count_words('hello') == 1" in oracle_text
    _never_the_failing_case(oracle_text)


def test_off_by_default_the_docstring_is_the_whole_spec(tmp_path: Path):
    # the default configuration: the suite is not read for a documented function, and the
    # misreading oracle stands against the others
    root = project(tmp_path / "p", BUGGY, SUITE)
    model = Recorder([MISREAD, ORACLE, ORACLE], [PATCH])
    verdict = run(root, NODE, model.backend()).verdict
    assert verdict.verdict == "UNCLEAR", verdict.reason
    assert verdict.reason.startswith("the 3 oracles do not agree")
    assert verdict.spec_examples == ()
    assert "count_words('hello')" not in model.oracle_text()
