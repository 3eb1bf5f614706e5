"""Failing tests and their arbitration in the real language server, over stdio.

Tests on save turn a failing assertion into a diagnostic; the code action "Arbitrate this
failure" runs ``referee.arbitrate``, which offers the certified fix through
window/showMessageRequest and applies it with workspace/applyEdit. A doctest decides the
truth here, so no model is needed; the real model is tested in test_arbitration_cli.py.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsp.harness import Doc, RefereeClient, Setup, make_client, start
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from referee.checks import ledger

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.checks.LspSpecificationWarning")

MODULE = '''def count_vowels(text: str) -> int:
    """Return how many vowels TEXT contains.

    >>> count_vowels("aeiou")
    5
    """
    return sum(1 for ch in text.lower() if ch in "aeiou")
'''
TESTS = """from text import count_vowels


def test_vowels():
    assert count_vowels("aeiou") == 4


def test_empty():
    assert count_vowels("") == 0
"""
FAILING_LINE = 4  # 0-based: the assertion of test_vowels

ON_SAVE = Setup(
    files={"referee.toml": "", "text.py": MODULE, "tests/test_text.py": TESTS},
    init_options={"debounceMs": 0, "tests": {"runOnSave": True}},
    refresh=True,
)


@pytest_asyncio.fixture(params=["visual-studio-code", "neovim"])
async def client(request: pytest.FixtureRequest, tmp_path: Path):
    config = ClientServerConfig(server_command=list(ON_SAVE.server), client_factory=make_client)
    lsp_client = await config.start(devtools=request.config.getoption("devtools"))
    assert isinstance(lsp_client, RefereeClient)
    lsp_client.profile = request.param
    lsp_client.message_requests = []  # type: ignore[attr-defined]
    lsp_client.applied_edits = []  # type: ignore[attr-defined]

    @lsp_client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def _ask(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        lsp_client.message_requests.append(params)  # type: ignore[attr-defined]
        lsp_client.wake()
        return params.actions[0] if params.actions else None  # the user picks the fix

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def _apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        lsp_client.applied_edits.append(params)  # type: ignore[attr-defined]
        return types.ApplyWorkspaceEditResult(applied=True)

    try:
        await start(lsp_client, request.param, tmp_path, ON_SAVE)
        yield lsp_client
        await lsp_client.shutdown_session()
    finally:
        await lsp_client.stop()


def failing(client: RefereeClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if d.code == "test-failed"]


async def saved_failures(client: RefereeClient, doc: Doc) -> list[types.Diagnostic]:
    """Save ``doc`` and wait until its failing tests show, however the client gets them."""
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    if client.mode == "push":
        return await client.until(lambda: failing(client, doc.uri), "failing-test diagnostics")
    # Other layers that run on save (the execution checks) refresh too: pull until the
    # failures are there.
    while True:
        seen = client.diagnostic_refresh_count
        report = await client.pull(doc.uri)
        found = [d for d in report.items if d.code == "test-failed"]
        if found:
            return found
        await client.until(
            lambda seen=seen: client.diagnostic_refresh_count > seen, "a diagnostic refresh"
        )


def command_of(action: types.CodeAction | types.Command) -> types.Command:
    """The command a code action runs. pytest-lsp's client (lsprotocol) reads a CodeAction
    that carries a command as a Command whose ``command`` is the repr of the whole object;
    read it back."""
    if isinstance(action, types.CodeAction):
        assert action.command is not None
        return action.command
    if action.command.startswith("{"):
        raw = ast.literal_eval(action.command)
        return types.Command(raw["title"], raw["command"], arguments=raw.get("arguments"))
    return action


def edits_of(edit: types.WorkspaceEdit, uri: str) -> list[types.TextEdit]:
    if edit.document_changes:
        (change,) = edit.document_changes
        assert isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri
        return list(change.edits)
    assert edit.changes is not None
    return list(edit.changes[uri])


async def test_saved_failing_test_is_a_diagnostic_and_arbitration_fixes_it_with_a_certificate(
    client: RefereeClient,
):
    doc = Doc(client, client.uri("tests/test_text.py"), TESTS).open()
    (failure,) = await saved_failures(client, doc)
    assert failure.range.start.line == FAILING_LINE
    assert failure.message == "test_vowels failed: 5 == 4 is false"
    assert failure.severity == types.DiagnosticSeverity.Error
    assert failure.data["layer"] == "arbitration"
    assert failure.data["testId"] == "tests/test_text.py::test_vowels"

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=doc.identifier,
            range=types.Range(
                start=types.Position(line=FAILING_LINE, character=0),
                end=types.Position(line=FAILING_LINE, character=0),
            ),
            context=types.CodeActionContext(diagnostics=[failure]),
        )
    )
    (action,) = [a for a in actions or [] if a.title == "Arbitrate this failure"]
    command = command_of(action)
    assert command.command == "referee.arbitrate"
    assert command.arguments == [{"uri": doc.uri, "line": FAILING_LINE}]

    result: Any = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    assert result["ok"] and result["applied"], result
    assert result["verdict"]["verdict"] == "TEST_WRONG"
    assert result["verdict"]["truth"] == "5"
    (question,) = client.message_requests  # type: ignore[attr-defined]
    assert question.actions[0].title == "Fix test (certified: 5)"
    assert "TEST_WRONG" in question.message

    (applied,) = client.applied_edits  # type: ignore[attr-defined]
    (edit,) = edits_of(applied.edit, doc.uri)
    assert edit.new_text == "5"
    assert (edit.range.start.line, edit.range.end.line) == (FAILING_LINE, FAILING_LINE)
    line = TESTS.split("\n")[FAILING_LINE]
    assert line[edit.range.start.character : edit.range.end.character] == "4"

    (certificate,) = ledger.read(client.root).certificates
    assert certificate.id == result["certificate"]
    assert (certificate.old_value, certificate.new_value) == ("4", "5")


async def test_arbitrate_refuses_a_line_without_a_test_and_unsaved_text(client: RefereeClient):
    doc = Doc(client, client.uri("tests/test_text.py"), TESTS).open()
    result: Any = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="referee.arbitrate", arguments=[{"uri": doc.uri, "line": 0}]
        )
    )
    assert result == {"ok": False, "message": "no test at line 1 of test_text.py"}

    doc.replace("== 4", "== 44")  # typed, not saved
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="referee.arbitrate", arguments=[{"uri": doc.uri, "line": FAILING_LINE}]
        )
    )
    assert not result["ok"] and "save test_text.py first" in result["message"]

    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="referee.arbitrate", arguments=["nonsense"])
    )
    assert not result["ok"] and "takes" in result["message"]
    assert not (client.root / ledger.LEDGER).exists()


@pytest.mark.parametrize("client", ["visual-studio-code"], indirect=True)  # push diagnostics
async def test_saving_a_module_runs_the_tests_that_import_it(client: RefereeClient):
    module = Doc(client, client.uri("text.py"), MODULE).open()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=module.identifier))
    tests_uri = client.uri("tests/test_text.py")
    (failure,) = await client.until(lambda: failing(client, tests_uri), "the importer's failures")
    assert failure.range.start.line == FAILING_LINE
    assert failing(client, module.uri) == []


@pytest.mark.parametrize(
    "args",
    [(), ([],), ({"uri": "file:///x.py"},), ({"uri": "file:///x.py", "line": True},), ("x",)],
    ids=["nothing", "empty-list", "no-line", "line-is-a-bool", "not-an-object"],
)
async def test_arbitrate_command_refuses_malformed_arguments(args: tuple):
    from referee.server.lsp import RefereeServer
    from referee.server.lsp_arbitration import arbitrate_command

    answer = await arbitrate_command(RefereeServer(), args)
    assert answer == {
        "ok": False,
        "message": 'referee.arbitrate takes [{"uri": str, "line": int}]',
    }
