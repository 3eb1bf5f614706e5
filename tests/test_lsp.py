"""``referee serve`` end to end: the real server over stdio, driven with pytest-lsp.

Every test runs once as VS Code 1.65 (push diagnostics) and once as Neovim 0.11 (pull
diagnostics, UTF-8 positions), from pytest-lsp's stored capability profiles. pytest-lsp's
LSP specification warnings are errors here. Nothing sleeps: tests wait for what the
server sends (tests/lsp/harness.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest
import pytest_asyncio
from lsp.harness import (
    PROFILES,
    SAFE_FIXES_SERVER,
    Doc,
    RefereeClient,
    Setup,
    expected_range,
    make_client,
    position,
    start,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import ClientServerConfig

from referee import __version__
from referee.checks.config import Settings, discover
from referee.checks.engine import check_text
from referee.checks.models import Finding, Severity

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.checks.LspSpecificationWarning")

SAMPLE = '''"""Sample module under test."""


def helper():
    pass  # é𝄞 TODO: write it


def test_helper_runs():
    helper()


def test_tuple():
    label = "é𝄞"; assert (label == "é𝄞", "label")


def test_mock(sender):
    sender.send.called_once_with("hello")
'''
SAMPLE_CODES = ["REF101", "REF102", "REF110", "REF112", "REF110", "REF115"]
PLACEHOLDER = "pass  # é𝄞 TODO: write it"
SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}
FIX_ALL = "source.fixAll.referee"

PUSH = pytest.param(Setup(mode="push"), id="push")
PULL = pytest.param(Setup(mode="pull"), id="pull")


@pytest.fixture
def lsp_setup() -> Setup:
    """The session's set-up; tests override it with ``parametrize("lsp_setup", ...)``."""
    return Setup()


@pytest_asyncio.fixture(params=PROFILES)
async def client(request: pytest.FixtureRequest, tmp_path: Path, lsp_setup: Setup):
    config = ClientServerConfig(server_command=list(lsp_setup.server), client_factory=make_client)
    lsp_client = await config.start(devtools=request.config.getoption("devtools"))
    assert isinstance(lsp_client, RefereeClient)
    lsp_client.profile = request.param
    try:
        await start(lsp_client, request.param, tmp_path, lsp_setup)
        yield lsp_client
        await lsp_client.shutdown_session()
    finally:
        await lsp_client.stop()


def sample(client: RefereeClient, name: str = "test_sample.py", text: str = SAMPLE) -> Doc:
    return Doc(client, client.uri(name), text).open()


def expected(doc: Doc, settings: Settings | None = None) -> list[Finding]:
    """What the engine finds in the document's current text."""
    return check_text(doc.text, Path(doc.uri).name, settings)


def codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return [str(d.code) for d in diagnostics]


def assert_match(client: RefereeClient, doc: Doc, diagnostics, findings: list[Finding]) -> None:
    """The diagnostics say exactly what the findings say, in the session's encoding."""
    encoding = client.encoding
    assert [(d.code, d.severity, d.message, d.range, d.source) for d in diagnostics] == [
        (f.code, SEVERITY[f.severity], f.message, expected_range(doc.text, f, encoding), "referee")
        for f in findings
    ]


def whole(doc: Doc) -> types.Range:
    end = position(doc.text, len(doc.text), doc.client.encoding)
    return types.Range(start=types.Position(line=0, character=0), end=end)


async def code_actions(
    client: RefereeClient,
    doc: Doc,
    where: types.Range,
    diagnostics: list[types.Diagnostic],
    only: list[str] | None = None,
) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=doc.identifier,
            range=where,
            context=types.CodeActionContext(diagnostics=diagnostics, only=only),
        )
    )
    assert all(isinstance(a, types.CodeAction) for a in result or [])
    return list(result or [])  # type: ignore[arg-type]


async def resolved(client: RefereeClient, action: types.CodeAction) -> types.CodeAction:
    """The action with its edit, resolving it if the server left the edit to resolve."""
    if action.edit is None:
        assert action.data is not None, "a lazy action must carry data to resolve it"
        action = await client.code_action_resolve_async(action)
    return action


def text_edits(client: RefereeClient, doc: Doc, edit: types.WorkspaceEdit | None):
    """The TextEdits a WorkspaceEdit makes to ``doc``, in the form the client supports."""
    assert edit is not None
    workspace = client.capabilities_sent.workspace
    document_changes = bool(
        workspace and workspace.workspace_edit and workspace.workspace_edit.document_changes
    )
    if document_changes:
        assert edit.changes is None
        (change,) = edit.document_changes
        assert isinstance(change, types.TextDocumentEdit)
        assert change.text_document.uri == doc.uri
        assert change.text_document.version == doc.version
        return list(change.edits)
    assert edit.document_changes is None, "the client did not declare documentChanges"
    assert set(edit.changes) == {doc.uri}
    return list(edit.changes[doc.uri])


def diagnostic(diagnostics: list[types.Diagnostic], code: str) -> types.Diagnostic:
    return next(d for d in diagnostics if d.code == code)


# ---------------------------------------------------------------------- diagnostics


@pytest.mark.parametrize("lsp_setup", [PUSH, PULL])
async def test_did_open_reports_findings_with_codes_severities_links_and_ranges(
    client: RefereeClient,
):
    doc = sample(client)
    diagnostics = await client.diagnostics_for(doc)

    findings = expected(doc)
    assert codes(diagnostics) == SAMPLE_CODES == [f.code for f in findings]
    assert_match(client, doc, diagnostics, findings)
    for d, f in zip(diagnostics, findings, strict=True):
        assert d.code_description is not None
        assert d.code_description.href.endswith(f"/docs/rules/{f.name}.md")
    assert diagnostic(diagnostics, "REF101").severity == types.DiagnosticSeverity.Error
    assert diagnostic(diagnostics, "REF102").severity == types.DiagnosticSeverity.Information
    assert diagnostic(diagnostics, "REF110").severity == types.DiagnosticSeverity.Warning

    # Positions on lines with "é𝄞" (é: 1 UTF-16 unit, 2 UTF-8 bytes; 𝄞: 2 units, 4 bytes).
    if client.profile == "visual-studio-code":
        assert client.encoding == "utf-16"  # VS Code 1.65 predates positionEncodings
    columns = {  # (REF102 end, REF112 start, REF112 end) on their lines
        "utf-16": (30, 19, 51),
        "utf-8": (33, 22, 57),
        "utf-32": (29, 18, 49),
    }[client.encoding]
    marker, tuple_assert = diagnostic(diagnostics, "REF102"), diagnostic(diagnostics, "REF112")
    assert (marker.range.start.line, marker.range.start.character) == (4, 10)
    assert (marker.range.end.line, marker.range.end.character) == (4, columns[0])
    assert (tuple_assert.range.start.line, tuple_assert.range.start.character) == (12, columns[1])
    assert (tuple_assert.range.end.line, tuple_assert.range.end.character) == (12, columns[2])


@pytest.mark.parametrize("client", ["neovim"], indirect=True)  # VS Code 1.65: UTF-16 only
@pytest.mark.parametrize(
    "lsp_setup",
    [pytest.param(Setup(encodings=[e]), id=e) for e in ("utf-8", "utf-16", "utf-32")],
)
async def test_positions_in_edits_and_diagnostics_use_the_negotiated_encoding(
    client: RefereeClient, lsp_setup: Setup
):
    assert client.encoding == lsp_setup.encodings[0]
    doc = sample(client)
    await client.diagnostics_for(doc)
    # An edit whose range starts after the non-ASCII characters of its line, then one
    # that adds more of them before a new finding.
    doc.replace('(label == "é𝄞", "label")', 'label == "é𝄞", "label"')
    doc.replace("def test_mock(sender):", "def test_mock(sender):  # 𝄞é TODO")
    diagnostics = await client.diagnostics_for(doc)
    assert "REF112" not in codes(diagnostics)
    assert codes(diagnostics).count("REF102") == 2
    assert_match(client, doc, diagnostics, expected(doc))


@pytest.mark.parametrize("lsp_setup", [PULL])
async def test_pull_diagnostics_report_unchanged_for_the_previous_result_id(
    client: RefereeClient,
):
    doc = sample(client)
    first = await client.pull(doc.uri)
    assert first.kind == "full"
    assert first.result_id
    assert codes(first.items) == SAMPLE_CODES

    again = await client.pull(doc.uri, previous=first.result_id)
    assert again.kind == "unchanged"
    assert again.result_id == first.result_id

    unknown = await client.pull(doc.uri, previous="no-such-result")
    assert unknown.kind == "full"
    assert unknown.result_id == first.result_id

    doc.replace(PLACEHOLDER, "return 42")
    changed = await client.pull(doc.uri, previous=first.result_id)
    assert changed.kind == "full"
    assert changed.result_id != first.result_id
    assert "REF101" not in codes(changed.items)


@pytest.mark.parametrize("lsp_setup", [PULL])
async def test_workspace_diagnostic_reports_every_open_document_with_its_version(
    client: RefereeClient,
):
    one = sample(client)
    two = sample(client, "test_two.py", "def test_two():\n    assert True\n")
    one.replace(PLACEHOLDER, "return 42")

    report = await client.workspace_diagnostic_async(
        types.WorkspaceDiagnosticParams(previous_result_ids=[])
    )
    items = {item.uri: item for item in report.items}
    assert set(items) == {one.uri, two.uri}
    for doc in (one, two):
        item = items[doc.uri]
        assert item.kind == "full"
        assert item.version == doc.version
        assert item.result_id
        assert_match(client, doc, item.items, expected(doc))

    previous = [types.PreviousResultId(uri=u, value=i.result_id) for u, i in items.items()]
    again = await client.workspace_diagnostic_async(
        types.WorkspaceDiagnosticParams(previous_result_ids=previous)
    )
    assert {(i.uri, i.kind, i.version) for i in again.items} == {
        (one.uri, "unchanged", one.version),
        (two.uri, "unchanged", two.version),
    }


async def test_editing_the_placeholder_into_a_body_clears_its_findings(client: RefereeClient):
    doc = sample(client)
    assert {"REF101", "REF102"} <= set(codes(await client.diagnostics_for(doc)))

    doc.replace(PLACEHOLDER, "return 42")
    assert doc.version == 2
    diagnostics = await client.diagnostics_for(doc)
    assert codes(diagnostics) == ["REF110", "REF112", "REF110", "REF115"]
    assert_match(client, doc, diagnostics, expected(doc))
    if client.mode == "push":
        assert client.publications(doc.uri)[-1].version == 2


def _typing(doc: Doc, count: int) -> None:
    """``count`` small incremental edits: a new test typed character by character at the
    end of the document, with a typo typed and deleted now and then."""
    snippet = '\n\ndef test_typed_{n}():\n    word = "é𝄞"; assert (word, "w")  # é TODO\n'
    typed, n, sent = "", 0, 0
    while sent < count:
        if not typed:
            typed, n = snippet.format(n=n), n + 1
        end = position(doc.text, len(doc.text), doc.client.encoding)
        at_end = types.Range(start=end, end=end)
        if sent % 10 == 9 and sent + 2 <= count:  # a typo and its deletion
            doc.edit([types.TextEdit(range=at_end, new_text="𝄞")])
            start = position(doc.text, len(doc.text) - 1, doc.client.encoding)
            end = position(doc.text, len(doc.text), doc.client.encoding)
            doc.edit([types.TextEdit(range=types.Range(start=start, end=end), new_text="")])
            sent += 2
            continue
        ch, typed = typed[0], typed[1:]
        doc.edit([types.TextEdit(range=at_end, new_text=ch)])
        sent += 1


async def test_after_1000_rapid_changes_diagnostics_match_the_final_text(client: RefereeClient):
    doc = sample(client)
    await client.diagnostics_for(doc)

    _typing(doc, 1000)
    assert doc.version == 1001
    diagnostics = await client.diagnostics_for(doc)

    findings = expected(doc)
    assert codes(diagnostics).count("REF112") > 10
    assert_match(client, doc, diagnostics, findings)
    versions = [p.version for p in client.publications(doc.uri)]
    assert versions == sorted(versions), "a published version went backwards"
    if client.mode == "push":
        assert versions[-1] == 1001
        assert list(client.diagnostics[doc.uri]) == diagnostics
    else:
        assert versions == []  # a pull client is never pushed to


async def test_did_close_clears_diagnostics(client: RefereeClient):
    doc = sample(client)
    assert await client.diagnostics_for(doc)

    doc.close()
    if client.mode == "push":
        await client.until(
            lambda: list(client.publications(doc.uri)[-1].diagnostics) == [],
            "diagnostics cleared",
        )
    else:
        report = await client.pull(doc.uri)
        assert report.kind == "full"
        assert list(report.items) == []


async def test_change_to_an_unopened_document_or_an_older_version_is_ignored(
    client: RefereeClient,
):
    ghost = Doc(client, client.uri("test_ghost.py"), "def test_ghost():\n    pass\n")
    ghost.replace("pass", "assert (1, 2)")  # never opened

    doc = sample(client)
    assert await client.diagnostics_for(doc)
    doc.replace("def test_mock(sender):", "def test_mock(sender):  # note")  # version 2
    await client.diagnostics_for(doc)

    text, version = doc.text, doc.version
    doc.edit(  # going back to version 1
        [types.TextEdit(range=whole(doc), new_text="def test_nothing():\n    pass\n")], version=1
    )
    doc.text, doc.version = text, version  # what the server must still hold

    await client.until(
        lambda: any("went back" in m.message for m in client.log_messages),
        "the server's warning about the older version",
    )
    await client.until(
        lambda: any("not open" in m.message for m in client.log_messages),
        "the server's warning about the unopened document",
    )
    assert not [m for m in client.messages if m.type == types.MessageType.Error]

    # The server still answers, and still holds the text of version 2.
    doc.replace(PLACEHOLDER, "return 42")
    diagnostics = await client.diagnostics_for(doc)
    assert_match(client, doc, diagnostics, expected(doc))
    report = await client.pull(ghost.uri)
    assert list(report.items) == []


# ---------------------------------------------------------------------- code actions


async def test_quick_fixes_apply_the_rules_unsafe_fixes(client: RefereeClient):
    doc = sample(client)
    diagnostics = await client.diagnostics_for(doc)
    for code, title, fixed in (
        (
            "REF112",
            "Remove the parentheses so the condition is checked (REF112)",
            'label = "é𝄞"; assert label == "é𝄞", "label"',
        ),
        (
            "REF115",
            "Call `assert_called_once_with` (REF115)",
            'sender.send.assert_called_once_with("hello")',
        ),
    ):
        target = diagnostic(diagnostics, code)
        actions = await code_actions(client, doc, target.range, [target])
        assert [a.title for a in actions] == [title, f"Ignore {code} on this line"]
        fix = actions[0]
        assert fix.kind == types.CodeActionKind.QuickFix
        assert not fix.is_preferred  # unsafe: the test may start failing
        assert list(fix.diagnostics or []) == [target]
        assert fix.edit is None  # both profiles resolve edits lazily

        doc.edit(text_edits(client, doc, (await resolved(client, fix)).edit))
        assert fixed in doc.text
        diagnostics = await client.diagnostics_for(doc)
        assert code not in codes(diagnostics)
        assert_match(client, doc, diagnostics, expected(doc))

    # Fix-all takes safe fixes only, and these were unsafe.
    for only in (None, ["source.fixAll"], [FIX_ALL], ["source"]):
        actions = await code_actions(client, doc, whole(doc), diagnostics, only)
        assert FIX_ALL not in {a.kind for a in actions}, only


async def test_ignore_action_adds_or_extends_a_suppression_comment(client: RefereeClient):
    doc = sample(
        client, text=SAMPLE.replace("def helper():", "def helper():  # referee: ignore[REF120]")
    )
    diagnostics = await client.diagnostics_for(doc)
    for code, line in (
        ("REF112", '    label = "é𝄞"; assert (label == "é𝄞", "label")  # referee: ignore[REF112]'),
        ("REF101", "def helper():  # referee: ignore[REF120, REF101]"),
    ):
        target = diagnostic(diagnostics, code)
        actions = await code_actions(client, doc, target.range, [target])
        ignore = next(a for a in actions if a.title == f"Ignore {code} on this line")
        assert ignore.kind == types.CodeActionKind.QuickFix
        assert list(ignore.diagnostics or []) == [target]

        doc.edit(text_edits(client, doc, (await resolved(client, ignore)).edit))
        assert doc.text.split("\n")[target.range.start.line] == line
        diagnostics = await client.diagnostics_for(doc)
        assert code not in codes(diagnostics)
        assert_match(client, doc, diagnostics, expected(doc))
    assert codes(diagnostics) == ["REF102", "REF110", "REF110", "REF115"]


@pytest.mark.parametrize("lsp_setup", [Setup(server=tuple(SAFE_FIXES_SERVER))], ids=["safe-fixes"])
async def test_fix_all_is_offered_only_when_context_only_asks_for_it(client: RefereeClient):
    doc = sample(client)
    diagnostics = await client.diagnostics_for(doc)

    unasked = await code_actions(client, doc, whole(doc), diagnostics)
    assert unasked
    assert {a.kind for a in unasked} == {types.CodeActionKind.QuickFix}
    quickfix_only = await code_actions(client, doc, whole(doc), diagnostics, ["quickfix"])
    assert {a.kind for a in quickfix_only} == {types.CodeActionKind.QuickFix}

    for only in (["source.fixAll"], [FIX_ALL], ["source"]):
        actions = await code_actions(client, doc, whole(doc), diagnostics, only)
        assert [a.kind for a in actions] == [FIX_ALL], only

    (fix_all,) = await code_actions(client, doc, whole(doc), diagnostics, ["source.fixAll"])
    doc.edit(text_edits(client, doc, (await resolved(client, fix_all)).edit))
    assert 'assert label == "é𝄞", "label"' in doc.text
    assert "sender.send.assert_called_once_with" in doc.text
    assert codes(await client.diagnostics_for(doc)) == ["REF101", "REF102", "REF110"]


@pytest.mark.parametrize("lsp_setup", [pytest.param(Setup(lazy=False), id="eager")])
async def test_code_action_edits_are_eager_when_the_client_cannot_resolve_them(
    client: RefereeClient,
):
    """Both stored profiles resolve edits lazily (the other tests); without resolveSupport
    for "edit" the edit comes with the action."""
    doc = sample(client)
    target = diagnostic(await client.diagnostics_for(doc), "REF112")
    actions = await code_actions(client, doc, target.range, [target])
    assert len(actions) == 2  # the fix and the ignore comment
    for action in actions:
        assert text_edits(client, doc, action.edit)


@pytest.mark.parametrize("lsp_setup", [pytest.param(Setup(lazy=True), id="lazy")])
async def test_resolving_an_action_for_an_outdated_version_returns_no_edit(
    client: RefereeClient,
):
    doc = sample(client)
    target = diagnostic(await client.diagnostics_for(doc), "REF112")
    actions = await code_actions(client, doc, target.range, [target])
    assert actions

    doc.replace(PLACEHOLDER, "return 42")
    await client.diagnostics_for(doc)
    for action in actions:
        outdated = await client.code_action_resolve_async(action)
        assert outdated.edit is None


# ---------------------------------------------------------------------- saving


@pytest.mark.parametrize(
    "lsp_setup",
    [pytest.param(Setup(init_options={"debounceMs": 0, "run": "onSave"}), id="onSave")],
)
async def test_will_save_wait_until_returns_no_edits_and_reports_the_text_being_saved(
    client: RefereeClient,
):
    doc = sample(client)
    assert "REF101" in codes(await client.diagnostics_for(doc))

    doc.replace(PLACEHOLDER, "return 42")  # not checked: run is onSave
    assert all(p.version == 1 for p in client.publications(doc.uri))
    edits = await client.text_document_will_save_wait_until_async(
        types.WillSaveTextDocumentParams(
            text_document=doc.identifier, reason=types.TextDocumentSaveReason.Manual
        )
    )
    assert not edits  # null or []
    diagnostics = await client.diagnostics_for(doc)
    assert "REF101" not in codes(diagnostics)
    assert_match(client, doc, diagnostics, expected(doc))


# ---------------------------------------------------------------------- configuration

CONTRACT = '[[contract]]\nglob = "test_sample.py"\nmin-tests = 10\n'


@pytest.mark.parametrize(
    "lsp_setup",
    [
        pytest.param(
            Setup(
                files={"referee.toml": CONTRACT},
                init_options={
                    "select": ["REF1"],
                    "ignore": ["REF102"],
                    "debounceMs": 0,
                    "run": "onType",
                },
            ),
            id="init-options",
        )
    ],
)
async def test_initialization_options_select_and_ignore_rules(client: RefereeClient):
    doc = sample(client)
    diagnostics = await client.diagnostics_for(doc)

    project = discover(client.root)
    assert "REF208" in [f.code for f in expected(doc, project)]  # the contract fires...
    settings = project.with_overrides(["REF1"], [], ["REF102"])
    assert codes(diagnostics) == ["REF101", "REF110", "REF112", "REF110", "REF115"]
    assert_match(client, doc, diagnostics, expected(doc, settings))  # ...but is not selected


MULTI_ROOT = Setup(
    files={
        "alpha/referee.toml": 'ignore = ["REF110"]\n',
        "beta/pyproject.toml": '[tool.referee]\nseverity = { REF101 = "warning" }\n',
    },
    folders=("alpha", "beta"),
    init_options=None,
    settings={
        "": {"debounceMs": 0},
        "alpha": {"ignore": ["REF102"], "debounceMs": 0},
        "beta": {"select": ["REF10"], "debounceMs": 0},
    },
)


async def _assert_per_folder_settings(client: RefereeClient, alpha: Doc, beta: Doc) -> None:
    alpha_diagnostics = await client.diagnostics_for(alpha)
    alpha_settings = discover(client.root / "alpha").with_overrides(None, [], ["REF102"])
    assert codes(alpha_diagnostics) == ["REF101", "REF112", "REF115"]
    assert_match(client, alpha, alpha_diagnostics, expected(alpha, alpha_settings))

    beta_diagnostics = await client.diagnostics_for(beta)
    beta_settings = discover(client.root / "beta").with_overrides(["REF10"], [], [])
    assert codes(beta_diagnostics) == ["REF101", "REF102"]
    assert diagnostic(beta_diagnostics, "REF101").severity == types.DiagnosticSeverity.Warning
    assert_match(client, beta, beta_diagnostics, expected(beta, beta_settings))


@pytest.mark.parametrize("lsp_setup", [pytest.param(MULTI_ROOT, id="multi-root")])
async def test_each_workspace_folder_gets_its_own_project_and_client_settings(
    client: RefereeClient,
):
    await client.until(lambda: client.configuration_requests, "workspace/configuration")
    items = client.configuration_requests[0].items
    assert {(i.scope_uri, i.section) for i in items} >= {
        (client.uri("alpha"), "referee"),
        (client.uri("beta"), "referee"),
    }
    alpha = sample(client, "alpha/test_sample.py")
    beta = sample(client, "beta/test_sample.py")
    await _assert_per_folder_settings(client, alpha, beta)


@pytest.mark.parametrize(
    "lsp_setup",
    [
        pytest.param(
            Setup(
                folders=MULTI_ROOT.folders,
                files=MULTI_ROOT.files,
                settings=MULTI_ROOT.settings,
                init_options={"debounceMs": 0},
                hold_configuration=True,
                refresh=True,
            ),
            id="multi-root-late",
        )
    ],
)
async def test_documents_opened_before_the_configuration_arrives_get_their_folder_settings(
    client: RefereeClient,
):
    """Editors open documents right after `initialized`, while the server still waits for
    workspace/configuration: the settings that then arrive must apply to them."""
    await client.until(lambda: client.configuration_requests, "workspace/configuration")
    alpha = sample(client, "alpha/test_sample.py")
    beta = sample(client, "beta/test_sample.py")
    if client.mode == "pull":
        first = await client.pull(alpha.uri)  # computed with the settings of initialize
        assert "REF102" in codes(first.items)
    else:
        await client.publication(alpha.uri)
        await client.publication(beta.uri)
    refreshes = client.diagnostic_refresh_count
    client.configuration_gate.set()
    if client.mode == "pull":
        await client.until(lambda: client.diagnostic_refresh_count > refreshes, "a refresh")
    else:
        alpha.mark, beta.mark = client.mark(), client.mark()
    await _assert_per_folder_settings(client, alpha, beta)


@pytest.mark.parametrize("lsp_setup", [pytest.param(Setup(refresh=True), id="live")])
async def test_did_change_configuration_applies_new_settings_live(client: RefereeClient):
    workspace = client.capabilities_sent.workspace
    if workspace.did_change_configuration.dynamic_registration:
        await client.until(lambda: client.registrations, "client/registerCapability")
        assert types.WORKSPACE_DID_CHANGE_CONFIGURATION in [r.method for r in client.registrations]
    doc = sample(client)
    assert "REF102" in codes(await client.diagnostics_for(doc))

    section = {"ignore": ["REF102"], "debounceMs": 0}
    client.set_configuration(section, section="referee")
    doc.mark, refreshes = client.mark(), client.diagnostic_refresh_count
    # VS Code sends no settings and expects the server to ask; Neovim sends them along.
    settings = None if client.profile == "visual-studio-code" else {"referee": section}
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings))
    if client.mode == "pull":
        await client.until(lambda: client.diagnostic_refresh_count > refreshes, "a refresh")
    diagnostics = await client.diagnostics_for(doc)
    assert codes(diagnostics) == [c for c in SAMPLE_CODES if c != "REF102"]


@pytest.mark.parametrize(
    "lsp_setup",
    [pytest.param(Setup(init_options={"run": "off", "debounceMs": 0}, refresh=True), id="off")],
)
async def test_run_off_reports_nothing(client: RefereeClient):
    doc = sample(client)
    assert await code_actions(client, doc, whole(doc), []) == []
    assert not await client.text_document_will_save_wait_until_async(
        types.WillSaveTextDocumentParams(
            text_document=doc.identifier, reason=types.TextDocumentSaveReason.Manual
        )
    )
    report = await client.pull(doc.uri)
    assert list(report.items) == []
    workspace_report = await client.workspace_diagnostic_async(
        types.WorkspaceDiagnosticParams(previous_result_ids=[])
    )
    assert all(list(item.items) == [] for item in workspace_report.items)
    assert client.publications(doc.uri) == []

    # Turned on, the document is checked; turned off again, its diagnostics go away.
    for run, expect in (("onType", SAMPLE_CODES), ("off", [])):
        client.set_configuration({"run": run, "debounceMs": 0}, section="referee")
        doc.mark, refreshes = client.mark(), client.diagnostic_refresh_count
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(None))
        if client.mode == "pull":
            await client.until(lambda n=refreshes: client.diagnostic_refresh_count > n, "a refresh")
            assert codes((await client.pull(doc.uri)).items) == expect
        else:
            published = await client.publication(doc.uri, after=doc.mark)
            assert codes(published.diagnostics) == expect


@pytest.mark.parametrize(
    "lsp_setup",
    [
        pytest.param(
            Setup(
                files={"referee.toml": 'ignore = ["REF102", "REF199"]\n'},
                init_options={"run": "sometimes", "ignore": ["REF110"]},
            ),
            id="broken",
        )
    ],
)
async def test_broken_configuration_shows_an_error_and_defaults_apply(client: RefereeClient):
    settings_message = await client.until(
        lambda: next((m for m in client.messages if "run" in m.message), None),
        "window/showMessage about the client settings",
    )
    assert settings_message.type == types.MessageType.Error
    doc = sample(client)
    message = await client.until(
        lambda: next((m for m in client.messages if "REF199" in m.message), None),
        "window/showMessage about the project configuration",
    )
    assert message.type == types.MessageType.Error
    assert "referee.toml" in message.message
    diagnostics = await client.diagnostics_for(doc)
    # REF102 and REF110 too: neither the file's nor the settings' ignore applies
    assert codes(diagnostics) == SAMPLE_CODES
    assert_match(client, doc, diagnostics, expected(doc))

    doc.replace(PLACEHOLDER, "return 42")  # checked again: not shown again
    await client.diagnostics_for(doc)
    assert len([m for m in client.messages if "REF199" in m.message]) == 1


# ---------------------------------------------------------------------- commands

WORKSPACE = {
    "referee.toml": "",
    "test_one.py": SAMPLE,
    "pkg/test_two.py": "def test_two():\n    assert (1, 2)\n",
    "pkg/clean.py": "def add(a, b):\n    return a + b\n",
    # Walked without extend-include: only the whole-file rules (REF103 here, not REF102).
    "notes.md": "# Notes\n\nTODO\n",
}
WORKSPACE_FILES = 4


def _workspace_findings(root: Path) -> int:
    return 1 + sum(  # notes.md's REF103
        len(check_text((root / name).read_text("utf-8"), name))
        for name in WORKSPACE
        if name.endswith(".py")
    )


@pytest.mark.parametrize("lsp_setup", [pytest.param(Setup(files=WORKSPACE), id="workspace")])
async def test_check_workspace_reports_progress_and_returns_counts(client: RefereeClient):
    expected_counts = {"files": WORKSPACE_FILES, "findings": _workspace_findings(client.root)}
    for run in range(2):
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="referee.checkWorkspace")
        )
        assert result == expected_counts, run

        assert len(client.progress_reports) == run + 1  # a new token for every run
        reports = list(client.progress_reports.values())[-1]
        assert isinstance(reports[0], types.WorkDoneProgressBegin)
        assert reports[0].title == "referee: checking"
        assert any(isinstance(r, types.WorkDoneProgressReport) for r in reports[1:-1])
        assert isinstance(reports[-1], types.WorkDoneProgressEnd)
        assert reports[-1].message == (
            f"{WORKSPACE_FILES} files, {expected_counts['findings']} findings"
        )
    if client.mode == "push":
        two = client.uri("pkg/test_two.py")
        assert codes(client.diagnostics[two]) == ["REF112"]
        assert list(client.diagnostics[client.uri("pkg/clean.py")]) == []


@pytest.mark.parametrize(
    "lsp_setup", [pytest.param(Setup(files=WORKSPACE, progress=False), id="no-progress")]
)
async def test_check_workspace_without_progress_support_still_returns_counts(
    client: RefereeClient,
):
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="referee.checkWorkspace")
    )
    assert result == {"files": WORKSPACE_FILES, "findings": _workspace_findings(client.root)}
    assert client.progress_requests == []  # never asked to create what it cannot show


@pytest.mark.parametrize("lsp_setup", [pytest.param(Setup(files=WORKSPACE), id="workspace")])
async def test_cancelling_a_pending_request_leaves_the_server_working(client: RefereeClient):
    client.progress_gate.clear()  # the check waits for its progress token...
    pending = asyncio.wrap_future(
        client.protocol.send_request(  # sent now, answered later
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(command="referee.checkWorkspace"),
            msg_id="check-to-cancel",
        )
    )
    await client.until(lambda: client.progress_requests, "window/workDoneProgress/create")
    client.cancel_request(types.CancelParams(id="check-to-cancel"))  # ...when cancelled
    with pytest.raises(JsonRpcRequestCancelled):
        await pending
    client.progress_gate.set()
    # Whatever progress began ends.
    await client.until(
        lambda: all(
            reports and isinstance(reports[-1], types.WorkDoneProgressEnd)
            for reports in client.progress_reports.values()
        ),
        "the end of the cancelled check's progress",
    )

    doc = sample(client)
    assert codes(await client.diagnostics_for(doc)) == SAMPLE_CODES
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="referee.checkWorkspace")
    )
    assert result == {"files": WORKSPACE_FILES, "findings": _workspace_findings(client.root)}


BIG = SAMPLE + "".join(  # long enough that checking it takes a while
    SAMPLE.split("\n", 2)[2]
    .replace("def test_", f"def test_{n}_")
    .replace("def helper", f"def helper_{n}")
    for n in range(40)
)


@pytest.mark.parametrize("lsp_setup", [PUSH])
async def test_a_cancelled_code_action_does_not_cancel_the_check_it_waited_for(
    client: RefereeClient,
):
    doc = sample(client, text=BIG)
    await client.diagnostics_for(doc)
    doc.replace(PLACEHOLDER, "return 42")
    request = asyncio.wrap_future(
        client.protocol.send_request(
            types.TEXT_DOCUMENT_CODE_ACTION,
            types.CodeActionParams(
                text_document=doc.identifier,
                range=whole(doc),
                context=types.CodeActionContext(diagnostics=[]),
            ),
            msg_id="code-action-to-cancel",
        )
    )
    client.cancel_request(types.CancelParams(id="code-action-to-cancel"))
    with contextlib.suppress(JsonRpcRequestCancelled):  # or answered before the cancel
        await request
    diagnostics = await client.diagnostics_for(doc)  # published for version 2 all the same
    assert_match(client, doc, diagnostics, expected(doc))


@pytest.mark.parametrize("lsp_setup", [PULL])
async def test_concurrent_requests_for_one_document_all_get_its_diagnostics(
    client: RefereeClient,
):
    doc = sample(client, text=BIG)
    doc.replace(PLACEHOLDER, "return 42")
    document, workspace, actions = await asyncio.gather(
        client.pull(doc.uri),
        client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[])),
        code_actions(client, doc, whole(doc), []),
    )
    assert_match(client, doc, document.items, expected(doc))
    (item,) = workspace.items
    assert item.result_id == document.result_id
    assert actions


# ---------------------------------------------------------------------- logging


async def test_server_logs_its_startup_to_the_client(client: RefereeClient):
    startup = await client.until(
        lambda: next((m for m in client.log_messages if "position encoding" in m.message), None),
        "the startup line in window/logMessage",
    )
    assert startup.type == types.MessageType.Info
    assert f"referee {__version__}" in startup.message
    assert client.encoding in startup.message
    assert f"{client.mode} diagnostics" in startup.message


# ---------------------------------------------------------------------- live guard

GUARDED = """def count(s):
    return len(s)


def test_count():
    assert count("abc") == 3
"""


async def test_weakening_a_committed_assertion_is_flagged_while_typing(client: RefereeClient):
    """The guard runs live: the baseline is the file at HEAD, the text is the editor's."""
    import subprocess

    from pygls.uris import to_fs_path

    root = Path(to_fs_path(client.uri("test_guarded.py"))).parent
    (root / "test_guarded.py").write_text(GUARDED, encoding="utf-8")
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    for command in (["init", "-q"], ["add", "test_guarded.py"], ["commit", "-qm", "base"]):
        subprocess.run([*git, *command], cwd=root, check=True)
    doc = Doc(client, client.uri("test_guarded.py"), GUARDED).open()
    assert "REF303" not in codes(await client.diagnostics_for(doc))

    doc.replace('assert count("abc") == 3', 'assert count("abc") >= 1')
    flagged = diagnostic(await client.diagnostics_for(doc), "REF303")
    assert flagged.severity == types.DiagnosticSeverity.Error
    assert "`==` -> `>=`" in flagged.message and "(line 6 at HEAD)" in flagged.message

    doc.replace('assert count("abc") >= 1', 'assert count("abc") == 3')
    assert "REF303" not in codes(await client.diagnostics_for(doc))


async def test_a_config_file_changed_outside_the_editor_applies_live(client: RefereeClient):
    """didChangeWatchedFiles for referee.toml re-reads the project configuration."""
    from pygls.uris import to_fs_path

    doc = sample(client)
    assert "REF102" in codes(await client.diagnostics_for(doc))
    root = Path(to_fs_path(client.uri("referee.toml"))).parent
    (root / "referee.toml").write_text('ignore = ["REF102"]\n', encoding="utf-8")
    doc.mark, refreshes = client.mark(), client.diagnostic_refresh_count
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[
                types.FileEvent(uri=client.uri("referee.toml"), type=types.FileChangeType.Created)
            ]
        )
    )
    workspace = client.capabilities_sent.workspace
    if client.mode == "pull" and workspace.diagnostics and workspace.diagnostics.refresh_support:
        await client.until(lambda: client.diagnostic_refresh_count > refreshes, "a refresh")
    diagnostics = await client.diagnostics_for(doc)
    assert codes(diagnostics) == [c for c in SAMPLE_CODES if c != "REF102"]


CHECK_MODULE = {"referee.toml": "", "check_x.py": "def test_a():\n    run()\n"}


@pytest.mark.parametrize(
    "lsp_setup", [pytest.param(Setup(mode="push", files=CHECK_MODULE), id="push")]
)
async def test_a_pytest_configuration_changed_outside_the_editor_applies_live(
    client: RefereeClient,
):
    """pytest.ini says which files are test modules: created on disk, it makes
    check_x.py one, and its test without an assertion is flagged."""
    doc = sample(client, "check_x.py", CHECK_MODULE["check_x.py"])
    assert codes(await client.diagnostics_for(doc)) == []  # not a test module (yet)
    pytest_ini = on_disk(client, "pytest.ini", "[pytest]\npython_files = check_*.py\n")
    after = watched(client, pytest_ini)
    await published_codes(client, doc, ["REF110"], after)


def test_a_check_that_could_start_only_after_newer_edits_is_skipped(tmp_path: Path):
    """Versions typed while one check runs queue on the document's lock; checking each of
    them to the end put the diagnostics seconds behind the typing (2,000 lines, an edit
    every 30 ms: 3.8 s). A check whose version is no longer current does not run."""
    from referee.checks.config import Settings
    from referee.checks.document import Document
    from referee.server.lsp import RefereeServer

    server = RefereeServer()
    # no client here: no workspace to find settings in, no negotiated position encoding
    server.settings_for = lambda path: Settings(root=tmp_path)
    server.diagnostic = lambda finding, lines: finding
    path = tmp_path / "test_a.py"
    uri = path.as_uri()
    document = Document(str(path), "def test_a():\n    assert True\n", version=1)
    server.documents[uri] = document
    source, version = server._snapshot(document)
    document.version = 2  # an edit arrived before the check got the lock
    assert server._compute(uri, document, source, version, skip_superseded=True) is None
    current = server._compute(uri, document, *server._snapshot(document), skip_superseded=True)
    assert current is not None and [f.code for f in current.findings] == ["REF111"]
    # a check the caller needs now (a code action) runs whatever the version
    assert server._compute(uri, document, source, version) is not None


def test_a_deferred_code_action_edits_the_finding_it_was_offered_for_or_nothing():
    """Settings changed between offering and resolving, the version did not: the index
    into the findings named another finding (or none: IndexError sent to the client)."""
    from referee.checks.engine import check_text
    from referee.server.lsp import Result
    from referee.server.lsp_actions import _finding_key, _offered_finding

    text = "def test_a():\n    assert (x, 'msg')\n\n\ndef test_b():\n    pass\n"
    before = Result(1, check_text(text, "test_a.py"))
    codes = [f.code for f in before.findings]
    assert len(codes) >= 2
    offered = [{"index": i, "finding": _finding_key(f)} for i, f in enumerate(before.findings)]
    after = Result(1, before.findings[1:])  # the first finding's rule was ignored since
    assert _offered_finding(after, offered[0]) is None
    for data, finding in zip(offered[1:], before.findings[1:], strict=True):
        assert _offered_finding(after, data) is finding


SMALL_LIMIT = {"referee.toml": "max-file-size = 400\n"}


@pytest.mark.parametrize(
    "lsp_setup",
    [
        pytest.param(Setup(mode="push", files=SMALL_LIMIT), id="push"),
        pytest.param(Setup(mode="pull", files=SMALL_LIMIT), id="pull"),
    ],
)
async def test_a_document_over_max_file_size_is_not_checked_and_said_once(client: RefereeClient):
    """As `referee check` skips such a file; parsing and checking 67 MB in the editor took
    minutes and 7 GB and held up every other request."""
    doc = sample(client, text=SAMPLE + "#" * 500 + "\n")
    assert await client.diagnostics_for(doc) == []
    message = await client.until(
        lambda: next((m for m in client.messages if "max-file-size" in m.message), None),
        "window/showMessage about the size",
    )
    assert message.type == types.MessageType.Info
    assert "test_sample.py" in message.message and "(400)" in message.message
    doc.set_text(SAMPLE + "#" * 600 + "\n")  # still too large: not said again
    assert await client.diagnostics_for(doc) == []
    assert len([m for m in client.messages if "max-file-size" in m.message]) == 1
    doc.set_text(SAMPLE)  # small enough again: checked
    assert codes(await client.diagnostics_for(doc)) == SAMPLE_CODES


# ---------------------------------------------------------------------- project index


@pytest.mark.parametrize("lsp_setup", [PUSH])
async def test_saving_a_helper_updates_the_findings_of_a_test_that_calls_it(
    client: RefereeClient,
):
    """The test's REF110 depends on whether the helper it imports asserts: a saved edit
    of the helper re-checks the open test with the project index updated."""
    helpers = Doc(client, client.uri("helpers.py"), "def do_a():\n    assert 1\n").open()
    await client.diagnostics_for(helpers)
    test = sample(client, "test_x.py", "from helpers import do_a\n\n\ndef test_a():\n    do_a()\n")
    assert codes(await client.diagnostics_for(test)) == []

    helpers.set_text("def do_a():\n    return 1\n")
    await client.diagnostics_for(helpers)
    after = client.mark()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=helpers.identifier))

    def flagged() -> bool:
        return any(
            codes(p.diagnostics) == ["REF110"]
            for p in client.published[after:]
            if p.uri == test.uri
        )

    await client.until(flagged, "REF110 on the test once its helper stops asserting")


# Files changed on disk outside the editor (a checkout, a script, an agent): the server
# re-reads them when the client says so (workspace/didChangeWatchedFiles).

HELPER_ASSERTS = "def do_a():\n    assert 1\n"
HELPER_RETURNS = "def do_a():\n    return 1\n"
CALLS_HELPER = "from helpers import do_a\n\n\ndef test_a():\n    do_a()\n"
CALLS_TWO_HELPERS = (
    "from helpers import do_a\nfrom steps import do_b\n\n\n"
    "def test_a():\n    do_a()\n\n\ndef test_b():\n    do_b()\n"
)
ON_DISK = {"referee.toml": "", "helpers.py": HELPER_ASSERTS}


def on_disk(client: RefereeClient, relative: str, text: str | None) -> types.FileEvent:
    """Write (or, for None, delete) a file behind the editor's back; the event saying so."""
    path = client.root / relative
    if text is None:
        path.unlink()
        kind = types.FileChangeType.Deleted
    else:
        kind = types.FileChangeType.Changed if path.exists() else types.FileChangeType.Created
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return types.FileEvent(uri=client.uri(relative), type=kind)


def errors_shown(client: RefereeClient) -> list[str]:
    error = types.MessageType.Error
    return [m.message for m in [*client.messages, *client.log_messages] if m.type == error]


def watched(client: RefereeClient, *events: types.FileEvent) -> int:
    """Send the events as the client's file watcher would; the mark before them."""
    after = client.mark()
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(changes=list(events))
    )
    return after


async def published_codes(client: RefereeClient, doc: Doc, expect: list[str], after: int = 0):
    """Wait for a publishDiagnostics of ``doc`` after ``after`` with exactly ``expect``."""

    def found() -> bool:
        return any(
            codes(p.diagnostics) == expect for p in client.published[after:] if p.uri == doc.uri
        )

    await client.until(found, f"{expect} published for {doc.uri}")


@pytest.mark.parametrize("lsp_setup", [pytest.param(Setup(mode="push", files=ON_DISK), id="push")])
async def test_a_helper_rewritten_on_disk_updates_the_findings_of_an_open_test(
    client: RefereeClient,
):
    """helpers.py is never opened: the index has it from the workspace's indexing, and a
    change on disk that the client reports is read again."""
    test = sample(client, "test_x.py", CALLS_HELPER)
    await published_codes(client, test, [])  # once the workspace is indexed

    after = watched(client, on_disk(client, "helpers.py", HELPER_RETURNS))
    await published_codes(client, test, ["REF110"], after)

    after = watched(client, on_disk(client, "helpers.py", HELPER_ASSERTS))
    await published_codes(client, test, [], after)


@pytest.mark.parametrize("lsp_setup", [pytest.param(Setup(mode="push", files=ON_DISK), id="push")])
async def test_a_helper_module_deleted_on_disk_leaves_the_index(client: RefereeClient):
    """A call into a module the index does not have is a call to an unknown helper:
    REF110, as `referee check` says without the module. Created again, it counts again."""
    test = sample(client, "test_x.py", CALLS_HELPER)
    await published_codes(client, test, [])

    after = watched(client, on_disk(client, "helpers.py", None))
    await published_codes(client, test, ["REF110"], after)

    after = watched(client, on_disk(client, "helpers.py", HELPER_ASSERTS))
    await published_codes(client, test, [], after)


async def test_the_server_watches_python_files_where_the_client_registers_watchers(
    client: RefereeClient,
):
    """VS Code offers dynamic registration of file watchers; the Neovim profile does not,
    and is asked for nothing (nor shown an error)."""
    # `initialized` registers first, then asks for the configuration.
    await client.until(lambda: client.configuration_requests, "workspace/configuration")
    offered = client.capabilities_sent.workspace.did_change_watched_files
    registered = [
        r for r in client.registrations if r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    ]
    if not (offered and offered.dynamic_registration):
        assert registered == []
        assert not errors_shown(client)
        return
    (registration,) = registered
    options = registration.register_options
    watchers = options["watchers"] if isinstance(options, dict) else options.watchers
    globs = [w["globPattern"] if isinstance(w, dict) else w.glob_pattern for w in watchers]
    assert "**/*.py" in globs
    assert any("pyproject.toml" in str(g) for g in globs)  # the configuration, as before


OUTSIDE_FOLDER = {
    "referee.toml": "",  # the project's root is above the workspace folder `ws`
    "ws/steps.py": "def do_b():\n    assert 1\n",
    "other/helpers.py": HELPER_ASSERTS,  # in the project, outside the workspace folder
}


@pytest.mark.parametrize(
    "lsp_setup",
    [pytest.param(Setup(mode="push", files=OUTSIDE_FOLDER, folders=("ws",)), id="push")],
)
async def test_events_the_server_cannot_use_are_ignored_and_the_rest_applied(
    client: RefereeClient,
):
    """Other schemes, files outside the workspace folders, missing files, directories and
    garbage in one batch: none stops the server, or the batch's good event. A file outside
    the folder is not indexed even where the project's index would find it (other/
    helpers.py would answer `from helpers import do_a`)."""
    test = sample(client, "ws/test_x.py", CALLS_TWO_HELPERS)
    await published_codes(client, test, ["REF110"])  # test_a's, once ws/ is indexed
    assert client.diagnostics[test.uri][0].range.start.line == 4  # `def test_a`

    created = types.FileChangeType.Created
    bad = [
        types.FileEvent(uri="untitled:Untitled-1", type=created),
        types.FileEvent(uri="https://example.com/helpers.py", type=created),
        types.FileEvent(uri="file://", type=created),
        types.FileEvent(uri="not a uri at all", type=created),
        types.FileEvent(uri=client.uri("other/helpers.py"), type=created),
        types.FileEvent(uri=client.uri("ws/missing.py"), type=types.FileChangeType.Changed),
        types.FileEvent(uri=client.uri("ws/gone"), type=types.FileChangeType.Deleted),
        types.FileEvent(uri=client.uri("ws"), type=types.FileChangeType.Changed),
    ]
    (client.root / "ws" / "dir.py").mkdir()  # a directory named like a module
    bad.append(types.FileEvent(uri=client.uri("ws/dir.py"), type=created))
    good = on_disk(client, "ws/steps.py", "def do_b():\n    return 1\n")
    after = watched(client, *bad, good)
    # test_b's REF110 comes back (steps stopped asserting); test_a's stays (the helpers
    # outside the folder were not indexed).
    await published_codes(client, test, ["REF110", "REF110"], after)
    assert not errors_shown(client)
    assert await code_actions(client, test, whole(test), []) is not None  # still answering


@pytest.mark.parametrize("lsp_setup", [pytest.param(Setup(mode="push", files=ON_DISK), id="push")])
async def test_a_document_open_in_the_editor_keeps_its_text_over_the_file_on_disk(
    client: RefereeClient,
):
    """The editor's text wins: a change on disk to a document that is open (a save from
    elsewhere, a formatter) does not replace its entry; a closed file's change does."""
    helpers = Doc(client, client.uri("helpers.py"), HELPER_ASSERTS).open()
    (client.root / "steps.py").write_text("def do_b():\n    assert 1\n", encoding="utf-8")
    test = sample(client, "test_x.py", CALLS_TWO_HELPERS)
    await published_codes(client, test, [])

    after = watched(
        client,
        on_disk(client, "helpers.py", HELPER_RETURNS),  # open: the editor's text stays
        on_disk(client, "steps.py", "def do_b():\n    return 1\n"),  # not open: read again
    )
    await published_codes(client, test, ["REF110"], after)
    assert client.diagnostics[test.uri][0].range.start.line == 8  # `def test_b`
    assert helpers.text == HELPER_ASSERTS


@pytest.mark.parametrize("lsp_setup", [pytest.param(Setup(mode="push", files=ON_DISK), id="push")])
async def test_a_helper_closed_without_saving_is_indexed_from_the_file_on_disk_again(
    client: RefereeClient,
):
    """An open document's entry is the editor's text, which may differ from the file (an
    unsaved buffer restored at start-up); once closed without saving, the file counts."""
    test = sample(client, "test_x.py", CALLS_HELPER)
    await published_codes(client, test, [])  # helpers.py on disk asserts
    after = client.mark()
    helpers = Doc(client, client.uri("helpers.py"), HELPER_RETURNS).open()  # unsaved text
    await published_codes(client, test, ["REF110"], after)

    after = client.mark()
    helpers.close()
    await published_codes(client, test, [], after)


def test_entries_made_while_the_workspace_is_indexed_outlive_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A file changed (or deleted) on disk while the workspace's index is being built:
    the build read it before, so the newer entry is laid over the build's result."""
    from referee.checks import runner
    from referee.checks.project import summarize
    from referee.checks.source import SourceFile
    from referee.server.lsp_project import ProjectIndexes

    files = {
        "referee.toml": "",
        "helpers.py": HELPER_ASSERTS,
        "steps.py": "def do_b():\n    assert 1\n",
        "test_x.py": CALLS_TWO_HELPERS,
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    settings = discover(tmp_path)
    indexes = ProjectIndexes()
    build_index = runner.build_index

    def racing(targets, settings):
        index = build_index(targets, settings)  # helpers.py and steps.py as they were
        returns = SourceFile("helpers.py", HELPER_RETURNS, "python")
        assert indexes.put(settings, "helpers.py", summarize(returns, "helpers.py"))
        assert not indexes.put(settings, "steps.py", None)  # not in the old index
        return index

    monkeypatch.setattr(runner, "build_index", racing)
    assert indexes.begin(settings)
    indexes.build(tmp_path, settings, {})
    assert not indexes.begin(settings)  # built: not again
    view = indexes.view(settings, "test_x.py", tmp_path / "test_x.py")
    assert view.asserting == frozenset()  # neither do_a (changed) nor do_b (deleted)
