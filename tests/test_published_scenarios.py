"""The published layered-verification scenarios (tests/data, source in tests/data/README.md)
as a test set for L0/L1.

The contracts are docs/examples/published-contracts.toml, the documented reproduction of
the prototype's task contracts. Targets (from the article): P1 stops 4/4 garbage at L0/L1
with no correct output stopped; P4 stops at least 8/10 garbage and no correct output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.checks.config import Settings, load_file
from referee.checks.engine import check_source
from referee.checks.models import Layer, Severity
from referee.checks.source import SourceFile

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "layered-verification-scenarios.json"
CONTRACTS = ROOT / "docs" / "examples" / "published-contracts.toml"

# The data names each task in words; these words pick the prototype's task type.
TASK_TYPES = {
    "研究简报": "research_brief",
    "初稿": "draft",
    "章节": "chapter",
    "测试": "test_pass",
    "Python": "code",
    "总结": "summary",
    "邮件": "email",
    "解析": "parse",
    "表格": "table",
    "翻译": "translate",
}


def task_type(task: str) -> str:
    return next(kind for word, kind in TASK_TYPES.items() if word in task)


def _data() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def stopping_layer(sample: dict, settings: Settings) -> Layer | None:
    """The layer whose error-level finding stops the sample, or None (it goes on to L2)."""
    relpath = f"scenarios/{task_type(sample['task'])}/{sample['id']}.md"
    findings = check_source(SourceFile(relpath, sample["output"]), settings, relpath)
    errors = [f for f in findings if f.severity is Severity.ERROR]
    if not errors:
        return None
    return min((f.layer for f in errors), key=lambda layer: layer.value)


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(load_file(CONTRACTS).config, tmp_path_factory.mktemp("scenarios"))


def test_contracts_cover_every_task_type_in_the_data() -> None:
    published = _data()["task_contracts_used_by_the_prototype"]
    config = load_file(CONTRACTS).config
    assert {c.task for c in config.contract} == set(published)
    for contract in config.contract:
        prototype = published[contract.task]
        assert contract.min_chars == prototype["min_len"]
        assert contract.required_keywords == prototype["keywords"]
        assert contract.expect_heading == prototype["expect_heading"]
        # "at least a third must match"
        assert contract.keywords_needed() == -(-len(prototype["keywords"]) // 3)


def test_p1_garbage_is_stopped_at_l0_l1_and_nothing_correct_is(settings: Settings) -> None:
    samples = _data()["P1"]
    stopped = {s["id"]: stopping_layer(s, settings) for s in samples}
    garbage = [s["id"] for s in samples if not s["correct"]]
    correct = [s["id"] for s in samples if s["correct"]]
    assert [i for i in garbage if stopped[i] is None] == []
    assert [i for i in correct if stopped[i] is not None] == []
    # The two cheapest tells are shape, not contract: "。" and a bare placeholder word.
    assert stopped["G2"] is Layer.L0 and stopped["G3"] is Layer.L0
    assert stopped["G4"] is Layer.L0  # "0 passed (no tests collected)"


def test_p4_stops_most_garbage_and_no_correct_output(settings: Settings) -> None:
    samples = _data()["P4"]
    stopped = {s["id"]: stopping_layer(s, settings) for s in samples}
    garbage = [s["id"] for s in samples if s["label"] == "garbage"]
    correct = [s["id"] for s in samples if s["label"] == "correct"]
    caught = [i for i in garbage if stopped[i] is not None]
    assert len(caught) >= 8, f"only {caught} of {garbage} stopped at L0/L1"
    assert [i for i in correct if stopped[i] is not None] == []


def test_p4_acceptable_edge_cases_are_not_stopped(settings: Settings) -> None:
    samples = _data()["P4"]
    acceptable = [s for s in samples if s["label"] == "edge" and s.get("correctish")]
    assert acceptable, "the data set has acceptable edge cases"
    wrongly_stopped = [s["id"] for s in acceptable if stopping_layer(s, settings) is not None]
    assert wrongly_stopped == []


def test_p4_failing_test_log_is_stopped_by_the_tests_pass_contract(settings: Settings) -> None:
    """The one key referee adds to the prototype's contracts: a log that shows a failing
    run does not meet "make sure the tests pass", and plain code can read that."""
    samples = {s["id"]: s for s in _data()["P4"]}
    failing = samples["E04"]
    assert "1 failed" in failing["output"] and failing.get("correctish") is False
    assert stopping_layer(failing, settings) is Layer.L1
    assert stopping_layer(samples["C04"], settings) is None  # "42 passed, 0 failed"
