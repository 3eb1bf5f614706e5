"""`referee mcp` end to end: a real `mcp.Client` launches the server over stdio, lists its
tools and calls them on a temporary git repository with a weakened test."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from guard_catalogue.cases import BASIC, PROJECT, T, commit_repo

pytest.importorskip("mcp", reason="referee mcp needs the mcp package")
from mcp import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the guard needs git")

WEAKENED = BASIC.replace("assert total([10, 20]) == 30", "assert total([10, 20]) > 0")


def _session(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list]:
    async def go() -> tuple[list[str], list]:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "referee", "mcp", "--root", str(root)],
            # the stdio client passes only a few variables by default: without the test's
            # own, the server's hook wrote to the user's cache and left a warm process
            env=dict(os.environ),
        )
        async with Client(params, read_timeout_seconds=120) as client:
            listed = await client.list_tools()
            results = [await client.call_tool(name, args) for name, args in calls]
            return [t.name for t in listed.tools], results

    return asyncio.run(go())


def test_the_tools_are_listed_and_the_guard_runs_on_a_weakened_test(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    commit_repo(root, {**PROJECT, T: BASIC})
    (root / T).write_text(WEAKENED)
    names, (guard, edit, rule, queue) = _session(
        root,
        [
            ("guard", {"strict": True}),
            (
                "check_edit",
                {
                    "path": T,
                    "content": WEAKENED + "\n\ndef test_more():\n    assert add(2, 2) == 4\n",
                },
            ),
            ("explain_rule", {"code": "expected-value-changed"}),
            ("review_queue", {}),
        ],
    )
    assert {"check", "guard", "check_edit", "arbitrate", "explain_rule", "review_queue"} <= set(
        names
    )
    report = guard.structured_content
    assert report["exit_status"] == 1
    assert [f["code"] for f in report["report"]["findings"]] == ["REF303"]
    # an edit is judged by what it adds: the weakening already on disk is the guard's to
    # report (above), not a reason to refuse a new test
    assert edit.structured_content["allowed"] is True
    assert rule.structured_content["code"] == "REF302"
    assert "## What it does" in rule.structured_content["page"]
    assert queue.structured_content["exit_status"] == 0


def test_check_edit_refuses_an_edit_that_weakens_a_test(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    commit_repo(root, {**PROJECT, T: BASIC})
    _, (edit, unknown) = _session(
        root,
        [("check_edit", {"path": T, "content": WEAKENED}), ("explain_rule", {"code": "REF999"})],
    )
    assert edit.structured_content["allowed"] is False
    assert "REF303" in edit.structured_content["reason"]
    assert "no rule" in unknown.structured_content["error"]
