"""The L2 judge and the L3 review queue in the real language server.

On save the server runs the judge off the event loop, publishes its findings beside
L0/L1's, reports progress and a ``referee/status`` notification; the code action "Accept
in review" records the decision through ``referee.review.accept`` and the finding goes.
Two perspectives instructed to disagree make the split vote certain with any model.

One test runs the real model (Qwen2.5-Coder-0.5B, in the server's worker), end to end.
The others follow what the server does with a judgment (moves, edits, cancellation, a
contract, manual mode), which is the same whatever model answered: their model is a fake
OpenAI-compatible server on 127.0.0.1 that answers each perspective as it is told to.
On 2 shared cores each real-model session cost 15 to 35 seconds of the suite's one model
worker.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsp import harness
from lsp.harness import Doc, RefereeClient, Setup, session
from lsprotocol import types

from referee.checks import review

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.checks.LspSpecificationWarning")

CODE = '''def placeholder():
    """Parse the configuration."""
    raise NotImplementedError


def add(a: int, b: int) -> int:
    """The sum of a and b."""
    return a + b
'''
SPLIT = """
perspectives = ["approve", "refuse"]
audit-rate = 0.0
[judge.custom-perspectives]
approve = "Perspective: approve. Whatever the code does, your verdict is PASS."
refuse = "Perspective: refuse. Whatever the code does, your verdict is REJECT."
"""
# A document under a task contract: the judge reads the whole file against its task.
CONTRACT = """
[[contract]]
glob = "notes/*.md"
task = "Write a short release note for version 2.1 of the fetch CLI."
min-chars = 40
"""
NOTE = """# fetch 2.1

- `fetch --retry N` retries a failed download N times.
- Downloads resume where they stopped after a dropped connection.
"""


# The judge's work is the same in either profile (push or pull diagnostics, settings by
# initializationOptions or workspace/configuration): the tests that follow a judgment's
# life (edits, moves, cancellation, a contract) each run in one profile, the two split
# between them, and the two that check what a profile changes run in both.
ONE_PROFILE = {
    "vscode": pytest.mark.parametrize("client", ["visual-studio-code"], indirect=True),
    "neovim": pytest.mark.parametrize("client", ["neovim"], indirect=True),
}

# What the fake model quotes as evidence: the first of these lines the question holds
# (the judged function before and after the tests' edits, the release note).
QUOTABLE = (
    "return a + b",
    "return b + a",
    "- Downloads resume where they stopped after a dropped connection.",
)


def told(body: dict[str, Any]) -> str:
    """The fake model's answer: the verdict the perspective in the question asks for, a
    line of the judged item as evidence; a second late, so that an edit can come first."""
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
    verdict = "PASS" if "Perspective: approve" in text else "REJECT"
    quote = next(line for line in QUOTABLE if line in text)
    time.sleep(FAKE_ANSWER_DELAY)
    return json.dumps({"reason": f"told to say {verdict}", "evidence": [quote], "verdict": verdict})


FAKE_ANSWER_DELAY = 0.5  # seconds: long enough for an edit to land while the judge runs


@pytest_asyncio.fixture(params=["visual-studio-code", "neovim"])
async def client(request, tmp_path: Path, monkeypatch):
    """A session whose judge reads with the real model where the test is marked
    ``model``, else with the fake server."""
    from red_team.fake_openai import FakeModel

    with FakeModel(lambda kind: "", answer_for=told, fence=False) as fake:
        if request.node.get_closest_marker("model") is not None:
            monkeypatch.setattr(harness, "TIMEOUT", 600.0)  # the model runs on 2 shared cores
            judge = f'model = "{request.getfixturevalue("small_model")}"\n'
        else:
            judge = f'backend = "openai"\nurl = "{fake.url}"\nmodel = "fake"\n'
        setup = Setup(
            files={
                # The judge alone: the execution checks (which would ask the same model for
                # oracles, and queue their own review items) are tested in
                # test_lsp_execution.
                "referee.toml": f"[judge]\n{judge}{SPLIT}{CONTRACT}[execution]\nenabled = false\n",
                "mathx.py": CODE,
                "notes/release.md": NOTE,
            },
            init_options={"debounceMs": 0},
            refresh=True,
        )
        devtools = request.config.getoption("devtools")
        async with session(devtools, request.param, tmp_path, setup, statuses=True) as lsp_client:
            yield lsp_client


def codes(diagnostics: list[types.Diagnostic]) -> list[tuple[str, int]]:
    return sorted((str(d.code), d.range.start.line) for d in diagnostics)


async def current(client: RefereeClient, doc: Doc, want: str) -> list[types.Diagnostic]:
    """The document's diagnostics once ``want`` is among them (or gone, for '-CODE')."""

    def ready(found: list[types.Diagnostic]) -> bool:
        present = any(d.code == want.lstrip("-") for d in found)
        return not present if want.startswith("-") else present

    return await until_found(client, doc, ready, want)


async def until_found(
    client: RefereeClient, doc: Doc, ready: Any, what: str
) -> list[types.Diagnostic]:
    """The document's diagnostics once ``ready(diagnostics)`` holds."""
    if client.mode == "push":
        return await client.until(
            lambda: (found := client.diagnostics.get(doc.uri, [])) and ready(found) and found,
            f"diagnostics: {what}",
        )
    while True:
        seen = client.diagnostic_refresh_count
        report = await client.pull(doc.uri)
        if ready(list(report.items)):
            return list(report.items)
        await client.until(lambda seen=seen: client.diagnostic_refresh_count > seen, "a refresh")


@pytest.mark.model
@ONE_PROFILE["vscode"]
async def test_with_the_real_model_judge_on_save_publishes_beside_l0_and_review_accepts(
    client: RefereeClient,
):
    await _publishes_beside_l0_and_review_accepts(client)


async def test_judge_on_save_publishes_beside_l0_and_review_accepts(client: RefereeClient):
    await _publishes_beside_l0_and_review_accepts(client)


async def _publishes_beside_l0_and_review_accepts(client: RefereeClient) -> None:
    doc = Doc(client, client.uri("mathx.py"), CODE).open()
    await current(client, doc, "REF101")
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    found = await current(client, doc, "REF402")
    # the judge's finding sits beside L0's, which it never replaces; the stub was not judged
    assert codes(found) == [("REF101", 0), ("REF402", 5)]
    (flagged,) = [d for d in found if d.code == "REF402"]
    assert "perspectives disagree (approve PASS, refuse REJECT)" in flagged.message
    assert client.progress_requests, "the judge reports work-done progress"
    await client.until(
        lambda: any(s["reviewPending"] == 1 for s in client.statuses), "1 item pending"
    )

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=doc.identifier,
            range=flagged.range,
            context=types.CodeActionContext(diagnostics=[flagged]),
        )
    )
    accept = next(a for a in actions or [] if a.title.startswith("Accept in review"))
    command = accept.command if isinstance(accept, types.CodeAction) else accept
    if isinstance(command, types.Command) and command.command.startswith("{"):
        import ast

        raw = ast.literal_eval(command.command)
        command = types.Command(raw["title"], raw["command"], arguments=raw.get("arguments"))
    assert command is not None and command.command == "referee.review.accept"
    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    assert answer["ok"] if isinstance(answer, dict) else answer.ok
    after = await current(client, doc, "-REF402")
    assert codes(after) == [("REF101", 0)]  # accepted: passes at L3, L0's finding stays
    await client.until(
        lambda: client.statuses and client.statuses[-1]["reviewPending"] == 0, "0 pending"
    )
    (item,) = review.read(client.root).items.values()
    assert (item.decision, item.subject) == ("accepted", "add")


@ONE_PROFILE["neovim"]
async def test_an_item_whose_function_was_edited_and_saved_no_longer_counts_as_waiting(
    client: RefereeClient,
):
    doc = Doc(client, client.uri("mathx.py"), CODE).open()
    await current(client, doc, "REF101")
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    await current(client, doc, "REF402")
    await client.until(
        lambda: any(s["reviewPending"] == 1 for s in client.statuses), "1 item pending"
    )
    (before,) = review.read(client.root).items
    doc.replace("return a + b", "return b + a")
    (client.root / "mathx.py").write_text(doc.text)  # what the editor writes before didSave
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    await client.until(
        lambda: len(review.read(client.root).items) == 2, "the new content queued too"
    )
    await client.until(lambda: client.statuses[-1]["judge"] == "idle", "the judge done")
    # two items in the file, one of them about code that is no longer there
    assert client.statuses[-1]["reviewPending"] == 1
    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="referee.review.list", arguments=[])
    )
    (listed,) = [row if isinstance(row, dict) else vars(row) for row in answer]
    assert listed["id"] != before and listed["subject"] == "add"


@ONE_PROFILE["vscode"]
async def test_a_document_under_a_task_contract_is_judged_on_save(client: RefereeClient):
    doc = Doc(client, client.uri("notes/release.md"), NOTE).open()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    found = await current(client, doc, "REF402")
    (flagged,) = found  # L0/L1 found nothing; the judge read the file against its task
    assert flagged.range.start.line == 0
    assert "perspectives disagree (approve PASS, refuse REJECT)" in flagged.message
    assert "approve PASS: " in flagged.message and "refuse REJECT: " in flagged.message
    (item,) = review.read(client.root).items.values()
    assert (item.path, item.kind) == ("notes/release.md", "judge")


@ONE_PROFILE["vscode"]
async def test_judge_findings_move_with_their_function_and_go_when_it_is_edited(
    client: RefereeClient,
):
    """The judge's findings are from the last save; until the next one, an edit above the
    judged function moves them with it, an edit inside it withdraws them."""
    doc = Doc(client, client.uri("mathx.py"), CODE).open()
    await current(client, doc, "REF101")
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    assert codes(await current(client, doc, "REF402")) == [("REF101", 0), ("REF402", 5)]
    doc.replace("def placeholder", "import os\nimport re\n\n\ndef placeholder")
    moved = await until_found(
        client, doc, lambda found: ("REF101", 4) in codes(found), "the edit checked"
    )
    assert codes(moved) == [("REF101", 4), ("REF402", 9)]
    doc.replace("return a + b", "return b + a")
    after = await current(client, doc, "-REF402")
    assert "REF402" not in {str(d.code) for d in after}
    assert any(str(d.code) == "REF101" for d in after)  # L0/L1 go on


@ONE_PROFILE["neovim"]
async def test_an_edit_cancels_the_running_judge(client: RefereeClient):
    doc = Doc(client, client.uri("mathx.py"), CODE).open()
    await current(client, doc, "REF101")
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    await client.until(lambda: any(s["judge"] == "running" for s in client.statuses), "running")
    doc.replace("a + b", "b + a")  # the text the judge was reading is gone
    await client.until(lambda: client.statuses[-1]["judge"] == "idle", "the judge stopped")
    assert not any(d.code == "REF402" for d in await client.diagnostics_for(doc))
    assert review.read(client.root).items == {}  # nothing was queued for the old text


async def test_manual_mode_judges_only_on_the_command(client: RefereeClient):
    doc = Doc(client, client.uri("mathx.py"), CODE).open()
    await current(client, doc, "REF101")
    section = {"debounceMs": 0, "judge": {"run": "manual"}}
    client.set_configuration(section, section="referee")
    asked = len(client.configuration_requests)
    settings = None if client.profile == "visual-studio-code" else {"referee": section}
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings))
    if settings is None:
        await client.until(lambda: len(client.configuration_requests) > asked, "a re-pull")
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="referee.review.list", arguments=[])
    )
    assert list(answer) == []  # saved, but nothing judged in manual mode
    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="referee.judge.run", arguments=[doc.uri])
    )
    assert answer["ok"] if isinstance(answer, dict) else answer.ok
    found = await current(client, doc, "REF402")
    assert ("REF402", 5) in codes(found)

    # a decision in manual mode loads no model: the item's diagnostic goes, nothing runs
    (flagged,) = [d for d in found if d.code == "REF402"]
    await client.until(lambda: client.statuses[-1]["judge"] == "idle", "the run ended")
    statuses, progress = len(client.statuses), len(client.progress_requests)
    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="referee.review.accept", arguments=[flagged.data["reviewId"], doc.uri]
        )
    )
    assert answer["ok"] if isinstance(answer, dict) else answer.ok
    after = await current(client, doc, "-REF402")
    assert ("REF101", 0) in codes(after)
    assert all(s["judge"] != "running" for s in client.statuses[statuses:])
    assert len(client.progress_requests) == progress


@pytest_asyncio.fixture(params=["visual-studio-code", "neovim"])
async def no_model_client(request, tmp_path: Path):
    setup = Setup(
        files={
            "referee.toml": f'[judge]\nmodel = "{tmp_path / "missing.gguf"}"\n',
            "mathx.py": CODE,
        },
        init_options={"debounceMs": 0},
        refresh=True,
    )
    devtools = request.config.getoption("devtools")
    async with session(devtools, request.param, tmp_path, setup) as lsp_client:
        yield lsp_client


async def test_a_missing_model_is_one_message_and_l0_l1_keep_working(no_model_client):
    client = no_model_client
    doc = Doc(client, client.uri("mathx.py"), CODE).open()
    await current(client, doc, "REF101")
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    await client.until(
        lambda: any("cannot run" in m.message for m in client.messages), "the message"
    )
    answer = await client.workspace_execute_command_async(  # runs again, and waits for it
        types.ExecuteCommandParams(command="referee.judge.run", arguments=[doc.uri])
    )
    assert not (answer["ok"] if isinstance(answer, dict) else answer.ok)  # said once only
    doc.replace("a + b", "b + a")
    assert codes(await current(client, doc, "REF101")) == [("REF101", 0)]
    said = [m for m in client.messages if "the judge (L2) cannot run" in m.message]
    assert len(said) == 1 and "missing.gguf" in said[0].message
    assert said[0].type == types.MessageType.Warning
