"""Arbitration decides more, never wrongly (issue 23): oracles that fail to run are
replaced, a source fix changes only the function's body (and what it needs), calls
wrapped in ``list()``/``sorted()``/... are arbitrated through the wrapper, and a test that
hangs is a red test too.

The engine tests script the model (tests/test_arbitration.py's helpers); the command-line
tests run ``referee arbitrate`` in a fresh interpreter against a fake OpenAI-compatible
server (tests/red_team/fake_openai.py) that answers by the request's kind and seed. The
sandbox, pytest and the verdict are the real thing.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from red_team.fake_openai import FakeModel
from test_arbitration import BUGGY, GOOD_PATCH, ORACLE, TESTS, project, run, scripted

from referee.checks.arbitration.truth import failed_to_run
from referee.checks.models import OracleResult, arbitration_schema

NODE = "tests/test_text.py::test_vowels"
BROKEN = "```python\ndef count_vowels(text:\n    return [ch for ch in text\n```"
RAISES = "```python\ndef count_vowels(text):\n    return [] + range(3)\n```"
LOOPS = "```python\ndef count_vowels(text):\n    while True:\n        pass\n```"
MISNAMED = "```python\ndef vowels(text):\n    return 5\n```"


def body(answer: str) -> str:
    """The program inside a scripted answer's fence (the fake server adds its own)."""
    return answer.split("```python\n", 1)[1].rsplit("```", 1)[0]


def cli_project(root: Path, module: str, tests: str, url: str, extra: str = "") -> Path:
    config = (
        f'[arbitration]\nbackend = "openai"\nurl = "{url}"\nmodel = "fake"\n'
        f"candidates = 1\ntimeout = 5\ntest-timeout = 20\n{extra}"
    )
    return project(root, module, tests, config)


def arbitrate_json(referee, root: Path, *args: str) -> dict:
    done = referee("arbitrate", NODE, "--format", "json", *args, cwd=root)
    assert done.stdout.strip(), (done.returncode, done.stderr)
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    return verdict


# ------------------------------------------------------------ 1. oracles that do not run


def test_an_oracle_that_does_not_parse_is_replaced_before_agreement_is_counted(tmp_path: Path):
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    result = run(root, NODE, scripted([BROKEN, ORACLE, ORACLE, ORACLE], [GOOD_PATCH]))
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert [(o.source, o.value) for o in verdict.oracles] == [
        ("oracle-101", "5"),
        ("oracle-2", "5"),
        ("oracle-3", "5"),
    ]
    assert verdict.oracles_replaced == 1
    (gone,) = verdict.replaced_oracles
    assert (gone.source, gone.status, gone.replaced_by) == ("oracle-1", "error", "oracle-101")
    assert "not valid Python" in gone.detail


def test_crashing_looping_and_misnamed_oracles_are_replaced_too(tmp_path: Path):
    root = project(
        tmp_path / "p", BUGGY, TESTS.format(expected="5"), "[arbitration]\ntimeout = 2\n"
    )
    answers = [RAISES, LOOPS, MISNAMED, ORACLE, ORACLE, ORACLE]
    verdict = run(root, NODE, scripted(answers, [GOOD_PATCH])).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert [o.source for o in verdict.oracles] == ["oracle-101", "oracle-102", "oracle-103"]
    why = {o.source: (o.status, o.detail) for o in verdict.replaced_oracles}
    assert why["oracle-1"][0] == "error" and "TypeError" in why["oracle-1"][1]
    assert why["oracle-2"][0] == "timeout"
    assert "does not define `count_vowels`" in why["oracle-3"][1]


def test_the_replacement_budget_is_a_limit_and_failed_oracles_never_count(tmp_path: Path):
    config = "[arbitration]\noracle-replacements = 1\n"
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"), config)
    verdict = run(root, NODE, scripted([BROKEN, ORACLE, ORACLE, BROKEN])).verdict
    assert verdict.verdict == "UNCLEAR"
    assert verdict.oracles_replaced == 1
    assert [(o.source, o.status) for o in verdict.oracles] == [
        ("oracle-101", "error"),
        ("oracle-2", "ok"),
        ("oracle-3", "ok"),
    ]
    assert "do not agree" in verdict.reason


def test_an_oracle_with_another_value_is_an_opinion_never_replaced_never_outvoted(
    tmp_path: Path,
):
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    wrong = "```python\ndef count_vowels(text):\n    return 4\n```"
    verdict = run(root, NODE, scripted([ORACLE, ORACLE, wrong, ORACLE])).verdict
    assert verdict.verdict == "UNCLEAR" and verdict.oracles_replaced == 0


def test_an_exception_the_docstring_names_is_an_opinion_not_a_crash():
    def result(status: str, detail: str) -> OracleResult:
        return OracleResult(source="oracle-1", status=status, detail=detail)  # type: ignore[arg-type]

    doc = "Return the root of X.\n\nRaises ValueError when X is negative."
    assert not failed_to_run(result("error", "ValueError: negative"), doc)
    assert failed_to_run(result("error", "TypeError: unsupported operand"), doc)
    assert failed_to_run(result("error", "the model's program not valid Python: x"), doc)
    assert failed_to_run(result("timeout", "timed out after 10 s"), doc)
    assert failed_to_run(result("memory", "MemoryError"), doc)
    assert not failed_to_run(result("refused", "no kernel boundary"), doc)
    assert not failed_to_run(OracleResult(source="oracle-1", status="ok", value="1"), doc)


def test_cli_replaces_an_oracle_that_does_not_parse_and_says_so_in_json(tmp_path: Path, referee):
    def answer(kind: str, seed: int | None) -> str:
        if kind == "oracle":
            return body(BROKEN) if seed == 1 else body(ORACLE)
        return body(GOOD_PATCH)

    with FakeModel(lambda kind: "", seeded=answer) as model:
        root = cli_project(tmp_path / "p", BUGGY, TESTS.format(expected="5"), model.url)
        verdict = arbitrate_json(referee, root, "--apply")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["oracles_replaced"] == 1
    assert verdict["replaced_oracles"][0]["source"] == "oracle-1"
    assert verdict["replaced_oracles"][0]["replaced_by"] == "oracle-101"
    assert "not valid Python" in verdict["replaced_oracles"][0]["detail"]
    assert verdict["applied"] is True
    assert "ch in 'aeiouAEIOU'" in (root / "text.py").read_text(encoding="utf-8")
