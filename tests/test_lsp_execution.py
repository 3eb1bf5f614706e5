"""L2's execution checks in the real language server, over stdio (pytest-lsp).

On save the server grades the saved tests by the mutants of their targets (the real
sandbox, real pytest, no model) and runs the saved functions beside oracle programs (the
fake OpenAI-compatible model server writes them), off the event loop, with work-done
progress, a newer save cancelling the older run. The counterexample of a REF411 becomes a
new test through the code action "Add … as a test", certified in the ledger.
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

from referee.checks import ledger, sandbox

pytestmark = [
    pytest.mark.filterwarnings("error::pytest_lsp.checks.LspSpecificationWarning"),
    pytest.mark.skipif(
        sandbox.boundary_problem() is not None, reason="no kernel boundary for the sandbox here"
    ),
]

EVEN = '''def is_even(n: int) -> bool:
    """Whether n is even."""
    return n % 2 == 0
'''
WEAK = """from mathx import is_even


def test_weak():
    assert is_even(4) is not None
"""
WEAK_LINE = 3  # 0-based: `def test_weak():`
# Slow on purpose: each mutant's run takes a while, so a second save lands mid-run.
SLOW = """import time

from mathx import is_even


def test_weak():
    time.sleep(0.4)
    assert is_even(4) is not None
"""
GOOD = """from mathx import is_even


def test_good():
    assert is_even(4)
    assert not is_even(3)
"""
NO_MODEL = '[judge]\nmodel = "missing.gguf"\n'  # the reading judge says once it cannot run


async def _client(request: pytest.FixtureRequest, tmp_path: Path, setup: Setup) -> RefereeClient:
    config = ClientServerConfig(server_command=list(setup.server), client_factory=make_client)
    lsp_client = await config.start(devtools=request.config.getoption("devtools"))
    assert isinstance(lsp_client, RefereeClient)
    lsp_client.profile = request.param
    statuses: list[dict[str, Any]] = []
    lsp_client.statuses = statuses  # type: ignore[attr-defined]
    lsp_client.applied_edits = []  # type: ignore[attr-defined]

    @lsp_client.feature("referee/status")
    def _status(params: Any) -> None:
        statuses.append(params if isinstance(params, dict) else params._asdict())
        lsp_client.wake()

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def _apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        lsp_client.applied_edits.append(params)  # type: ignore[attr-defined]
        lsp_client.wake()
        return types.ApplyWorkspaceEditResult(applied=True)

    await start(lsp_client, request.param, tmp_path, setup)
    return lsp_client


@pytest_asyncio.fixture(params=["visual-studio-code", "neovim"])
async def client(request: pytest.FixtureRequest, tmp_path: Path):
    setup = Setup(
        files={
            "referee.toml": NO_MODEL + "[execution]\ndifferential = false\n",
            "mathx.py": EVEN,
            "tests/test_m.py": WEAK,
        },
        init_options={"debounceMs": 0},
        refresh=True,
    )
    lsp_client = await _client(request, tmp_path, setup)
    try:
        yield lsp_client
        await lsp_client.shutdown_session()
    finally:
        await lsp_client.stop()


async def diagnostics(client: RefereeClient, doc: Doc, ready: Any) -> list[types.Diagnostic]:
    """The document's diagnostics once ``ready(diagnostics)`` holds, pushed or pulled."""
    if client.mode == "push":
        (found,) = await client.until(
            lambda: ready(found := list(client.diagnostics.get(doc.uri, []))) and (found,),
            "diagnostics",
        )
        return found
    while True:
        seen = client.diagnostic_refresh_count
        report = await client.pull(doc.uri)
        if ready(list(report.items)):
            return list(report.items)
        await client.until(lambda seen=seen: client.diagnostic_refresh_count > seen, "a refresh")


def has(code: str):
    return lambda found: any(d.code == code for d in found)


def save(client: RefereeClient, doc: Doc) -> None:
    (client.root / Path(doc.uri.removeprefix(client.root.as_uri() + "/"))).write_text(doc.text)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))


def execution_idle(client: RefereeClient) -> bool:
    statuses = client.statuses  # type: ignore[attr-defined]
    return bool(statuses) and statuses[-1].get("execution") == "idle"


async def test_a_saved_test_that_kills_no_mutant_is_a_diagnostic_with_progress(
    client: RefereeClient,
):
    doc = Doc(client, client.uri("tests/test_m.py"), WEAK).open()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    found = await diagnostics(client, doc, has("REF410"))
    (weak,) = [d for d in found if d.code == "REF410"]
    assert weak.range.start.line == WEAK_LINE
    assert weak.severity == types.DiagnosticSeverity.Warning
    assert "test_weak kills none of" in weak.message
    assert "`return n % 2 == 0` becomes `return n % 2 != 0`" in weak.message
    assert weak.data["layer"] == "execution"
    assert client.progress_requests, "the execution checks report work-done progress"
    messages = [
        getattr(p, "message", None) for reports in client.progress_reports.values() for p in reports
    ]
    assert any(m and "mutant" in m for m in messages), messages
    assert any(s.get("execution") == "running" for s in client.statuses)  # type: ignore[attr-defined]

    # An edit above the test moves the finding with it; an edit inside it withdraws it.
    doc.replace("from mathx import is_even\n", "from mathx import is_even\nimport os\n")
    moved = await diagnostics(
        client, doc, lambda f: any(d.code == "REF410" and d.range.start.line == 4 for d in f)
    )
    assert [d.range.start.line for d in moved if d.code == "REF410"] == [4]
    doc.replace("is not None", "is True")
    await diagnostics(client, doc, lambda f: not has("REF410")(f))
    # saved, the stronger test kills a mutant: nothing to report
    save(client, doc)
    await client.until(lambda: execution_idle(client), "the run done")
    after = await diagnostics(client, doc, lambda f: True)
    assert not has("REF410")(after)


def execution_reports(client: RefereeClient) -> list[list[Any]]:
    """Each execution run's work-done progress, in the order the runs began."""
    tokens = [
        p.token for p in client.progress_requests if str(p.token).startswith("referee-execution")
    ]
    return [list(client.progress_reports.get(token, [])) for token in tokens]


def ended(reports: list[Any]) -> bool:
    return any(
        isinstance(p, types.WorkDoneProgressEnd) or getattr(p, "kind", "") == "end" for p in reports
    )


@pytest.mark.parametrize("client", ["visual-studio-code"], indirect=True)  # push diagnostics
async def test_a_newer_save_cancels_the_older_run(client: RefereeClient):
    doc = Doc(client, client.uri("tests/test_m.py"), WEAK).open()
    doc.set_text(SLOW)
    save(client, doc)

    def mutants(reports: list[Any]) -> list[str]:
        return [m for p in reports if "mutant" in (m := getattr(p, "message", None) or "")]

    await client.until(
        lambda: (runs := execution_reports(client)) and mutants(runs[0]), "the first mutants"
    )
    doc.set_text(GOOD)
    save(client, doc)
    await client.until(
        lambda: len(runs := execution_reports(client)) == 2 and all(ended(r) for r in runs),
        "both runs done",
    )
    first, second = execution_reports(client)
    # the first run stopped mid-way: its last mutant is not its last one
    done, total = map(int, mutants(first)[-1].rsplit(" ", 1)[-1].split("/"))
    assert done < total, mutants(first)
    assert mutants(second)  # the second ran, on the stronger test
    await client.until(lambda: execution_idle(client), "idle")
    assert not has("REF410")(list(client.diagnostics.get(doc.uri, [])))


@pytest.mark.parametrize("client", ["visual-studio-code"], indirect=True)
async def test_the_switches_turn_it_off(client: RefereeClient):
    (client.root / "referee.toml").write_text(NO_MODEL + "[execution]\nenabled = false\n")
    config = Doc(client, client.uri("referee.toml"), "", language="toml").open()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=config.identifier))
    doc = Doc(client, client.uri("tests/test_m.py"), WEAK).open()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    # a request answered after the save was handled
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="referee.review.list", arguments=[])
    )
    assert not any(s.get("execution") == "running" for s in client.statuses)  # type: ignore[attr-defined]

    # on in the project, off in the editor
    (client.root / "referee.toml").write_text(NO_MODEL + "[execution]\ndifferential = false\n")
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=config.identifier))
    section = {"debounceMs": 0, "execution": {"run": "off"}}
    client.set_configuration(section, section="referee")
    asked = len(client.configuration_requests)
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(None))
    await client.until(lambda: len(client.configuration_requests) > asked, "a re-pull")
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="referee.review.list", arguments=[])
    )
    assert not any(s.get("execution") == "running" for s in client.statuses)  # type: ignore[attr-defined]


# ------------------------------------------------------------------ the differential check

CLAMP_WRONG = '''def clamp(x: int, lo: int, hi: int) -> int:
    """x limited to the range [lo, hi]."""
    return max(lo, x)
'''
CLAMP_TESTS = """from mathx import clamp


def test_clamp():
    assert clamp(15, 0, 10) >= 0
"""
ORACLE = "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n"


@pytest_asyncio.fixture(params=["visual-studio-code", "neovim"])
async def oracle_client(request: pytest.FixtureRequest, tmp_path: Path):
    from red_team.fake_openai import FakeModel

    with FakeModel(lambda kind: ORACLE) as model:
        setup = Setup(
            files={
                "referee.toml": NO_MODEL
                + f'[arbitration]\nbackend = "openai"\nurl = "{model.url}"\nmodel = "fake"\n'
                "[execution]\nmutation = false\ngenerated-inputs = 0\n",
                "mathx.py": CLAMP_WRONG,
                "tests/test_m.py": CLAMP_TESTS,
            },
            init_options={"debounceMs": 0},
            refresh=True,
        )
        lsp_client = await _client(request, tmp_path, setup)
        lsp_client.model = model  # type: ignore[attr-defined]
        try:
            yield lsp_client
            await lsp_client.shutdown_session()
        finally:
            await lsp_client.stop()


def command_of(action: types.CodeAction | types.Command) -> types.Command:
    """pytest-lsp's client reads a CodeAction carrying a command as a Command whose
    ``command`` is the repr of the whole object; read it back."""
    if isinstance(action, types.CodeAction):
        assert action.command is not None
        return action.command
    if action.command.startswith("{"):
        raw = ast.literal_eval(action.command)
        return types.Command(raw["title"], raw["command"], arguments=raw.get("arguments"))
    return action


async def test_a_counterexample_is_a_diagnostic_and_becomes_a_certified_test(
    oracle_client: RefereeClient,
):
    client = oracle_client
    doc = Doc(client, client.uri("mathx.py"), CLAMP_WRONG).open()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    found = await diagnostics(client, doc, has("REF411"))
    (reject,) = [d for d in found if d.code == "REF411"]
    assert reject.range.start.line == 0
    assert reject.severity == types.DiagnosticSeverity.Error
    assert reject.message.startswith(
        "clamp: clamp(15, 0, 10) returned 15; 3 independent implementations of the docstring "
        "return 10 (an input the tests use)"
    )
    assert "oracle-1: 10" in reject.message
    assert [r for r in client.model.requests if r]  # type: ignore[attr-defined]

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=doc.identifier,
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
            ),
            context=types.CodeActionContext(diagnostics=[reject]),
        )
    )
    titles = [a.title for a in actions or []]
    offered = [
        a for a in actions or [] if a.title == "Add clamp(15, 0, 10) == 10 as a test (certified)"
    ]
    assert len(offered) == 1, titles
    (action,) = offered
    command = command_of(action)
    assert command.command == "referee.execution.addTest"

    # refused while the function's file differs from what was checked
    doc.replace("max(lo, x)", "max(lo, x) ")
    answer: Any = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    assert not answer["ok"] and "changed since it was checked" in answer["message"]
    doc.replace("max(lo, x) ", "max(lo, x)")
    assert client.applied_edits == []  # type: ignore[attr-defined]

    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    assert answer["ok"] and answer["applied"], answer
    assert answer["test"] == "tests/test_m.py::test_clamp_counterexample"
    (applied,) = client.applied_edits  # type: ignore[attr-defined]
    edit = applied.edit
    if edit.document_changes:
        (change,) = edit.document_changes
        uri, edits = change.text_document.uri, list(change.edits)
    else:
        ((uri, edits),) = edit.changes.items()
    assert uri == client.uri("tests/test_m.py")
    (text_edit,) = edits
    lines = CLAMP_TESTS.split("\n")
    assert (text_edit.range.start.line, text_edit.range.start.character) == (len(lines) - 1, 0)
    new_text = CLAMP_TESTS + text_edit.new_text
    assert "\n\n\ndef test_clamp_counterexample():\n" in new_text
    assert new_text.endswith("    assert clamp(15, 0, 10) == 10\n")
    compile(new_text, "test_m.py", "exec")

    (certificate,) = ledger.read(client.root).certificates
    assert certificate.id == answer["certificate"]
    assert certificate.test_id == "tests/test_m.py::test_clamp_counterexample"
    assert (certificate.call, certificate.old_value, certificate.new_value) == (
        "clamp(15, 0, 10)",
        "",
        "10",
    )
    assert [e.source for e in certificate.evidence] == ["oracle-1", "oracle-2", "oracle-3"]
    assert certificate.test_sha256 == ledger.test_sha256(
        new_text, "tests/test_m.py", certificate.test_id, "10"
    )

    # once the edit is saved, a second one goes below it, under a fresh name
    (client.root / "tests/test_m.py").write_text(new_text)
    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    assert answer["ok"], answer
    assert answer["test"] == "tests/test_m.py::test_clamp_counterexample_2"


async def test_add_test_refuses_malformed_arguments():
    from referee.server.lsp import RefereeServer
    from referee.server.lsp_execution import add_test_command

    for args in [(), ([],), ({"uri": "file:///x.py"},), ("x",)]:
        answer = await add_test_command(RefereeServer(), args)
        assert answer["ok"] is False and "takes" in answer["message"], args
    answer = await add_test_command(RefereeServer(), ({"uri": "file:///x.py", "function": "f"},))
    assert answer == {"ok": False, "message": "no counterexample for f: save to check it"}


# ------------------------------------------------------------------ the oracles disagree

CLAMP_RIGHT = CLAMP_WRONG.replace("max(lo, x)", "max(lo, min(x, hi))")


@pytest_asyncio.fixture(params=["visual-studio-code"])  # push diagnostics
async def unclear_client(request: pytest.FixtureRequest, tmp_path: Path):
    from red_team.fake_openai import FakeModel

    other = "def clamp(x, lo, hi):\n    return max(lo, x)\n"  # another reading
    programs = {1: ORACLE, 2: other, 3: ORACLE}
    answer_for = lambda body: programs[int(body.get("seed") or 1)]  # noqa: E731
    with FakeModel(lambda kind: "", answer_for=answer_for) as model:
        setup = Setup(
            files={
                "referee.toml": NO_MODEL
                + f'[arbitration]\nbackend = "openai"\nurl = "{model.url}"\nmodel = "fake"\n'
                "[execution]\nmutation = false\ngenerated-inputs = 0\n",
                "mathx.py": CLAMP_RIGHT,
                "tests/test_m.py": CLAMP_TESTS,
            },
            init_options={"debounceMs": 0},
            refresh=True,
        )
        lsp_client = await _client(request, tmp_path, setup)
        try:
            yield lsp_client
            await lsp_client.shutdown_session()
        finally:
            await lsp_client.stop()


async def test_oracles_that_disagree_are_a_review_item_decided_from_the_editor(
    unclear_client: RefereeClient,
):
    from referee.checks import review

    client = unclear_client
    doc = Doc(client, client.uri("mathx.py"), CLAMP_RIGHT).open()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    found = await diagnostics(client, doc, has("REF412"))
    (unclear,) = [d for d in found if d.code == "REF412"]
    assert "the oracles disagree (oracle-1 10, oracle-2 15, oracle-3 10)" in unclear.message
    (item,) = review.read(client.root).items.values()
    assert unclear.data["reviewId"] == item.id and item.kind == "execution"

    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=doc.identifier,
            range=types.Range(
                start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)
            ),
            context=types.CodeActionContext(diagnostics=[unclear]),
        )
    )
    (accept,) = [a for a in actions or [] if a.title.startswith("Accept in review")]
    command = command_of(accept)
    assert command.arguments == [item.id, doc.uri]
    answer: Any = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    assert answer["ok"], answer
    await diagnostics(client, doc, lambda f: not has("REF412")(f))  # run again: accepted
    (decided,) = review.read(client.root).items.values()
    assert decided.decision == "accepted"
