"""The judge's development set (bench/data/task-dev.json) is well-formed and held apart
from the published scenarios the judge is measured on."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "bench" / "data" / "task-dev.json"
PUBLISHED = ROOT / "tests" / "data" / "layered-verification-scenarios.json"


def _dev() -> list[dict]:
    return json.loads(DEV.read_text(encoding="utf-8"))


def test_items_are_complete_unique_and_balanced() -> None:
    items = _dev()
    assert len(items) >= 40
    assert len({item["id"] for item in items}) == len(items)
    for item in items:
        assert set(item) >= {"id", "task", "output", "good", "kind", "note"}, item["id"]
        assert isinstance(item["good"], bool), item["id"]
        assert item["task"].strip() and item["output"].strip(), item["id"]
    good = sum(item["good"] for item in items)
    assert good == len(items) - good


def _shingles(text: str, size: int = 24) -> set[str]:
    # 24 characters: longer than the tool-log format both sets use ("→exit_code=0,stdout:'")
    text = "".join(text.split())
    return {text[i : i + size] for i in range(len(text) - size + 1)}


def test_no_output_is_taken_from_the_published_scenarios() -> None:
    data = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    published = set()
    for item in [*data["P1"], *data["P4"]]:
        published |= _shingles(item["output"]) | _shingles(item["task"])
    for item in _dev():
        shared = (_shingles(item["output"]) | _shingles(item["task"])) & published
        assert not shared, f"{item['id']} shares text with the published data: {sorted(shared)[:3]}"
