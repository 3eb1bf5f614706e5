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
from referee.checks.models import Finding

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
SLOW_TEST_LINE = 5  # 0-based: its `def test_weak():`
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


async def actions_at_top(
    client: RefereeClient, doc: Doc, diagnostic: types.Diagnostic
) -> list[types.CodeAction | types.Command]:
    """The code actions offered at the document's first line for ``diagnostic``."""
    start = types.Position(line=0, character=0)
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=doc.identifier,
            range=types.Range(start=start, end=start),
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    return list(actions or [])


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

    actions = await actions_at_top(client, doc, reject)
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


async def test_with_no_test_module_importing_it_the_counterexample_gets_a_new_one(
    oracle_client: RefereeClient,
):
    client = oracle_client
    doc = Doc(client, client.uri("mathx.py"), CLAMP_WRONG).open()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    found = await diagnostics(client, doc, has("REF411"))
    assert [d.code for d in found].count("REF411") == 1
    # the test that supplied the input is gone by now: nothing imports clamp
    (client.root / "tests/test_m.py").write_text("def test_other():\n    assert 1 + 1 == 2\n")
    arguments = [{"uri": doc.uri, "function": "clamp"}]
    answer: Any = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="referee.execution.addTest", arguments=arguments)
    )
    assert answer["ok"] and answer["created"], answer
    assert answer["test"] == "tests/test_mathx.py::test_clamp_counterexample"
    expected = (
        '"""Tests of mathx."""\n\nfrom mathx import clamp\n\n\ndef test_clamp_counterexample():\n'
    )
    new_file = client.root / "tests/test_mathx.py"
    (certificate,) = ledger.read(client.root).certificates
    if client.profile == "visual-studio-code":
        # a client that takes documentChanges with file creation: the editor creates it,
        # one undo step (this client only records the edit)
        (applied,) = client.applied_edits  # type: ignore[attr-defined]
        create, change = applied.edit.document_changes
        assert isinstance(create, types.CreateFile) and create.uri == new_file.resolve().as_uri()
        assert create.options is not None and not create.options.overwrite
        (text_edit,) = change.edits
        written = text_edit.new_text
        assert not new_file.exists()
    else:
        # Neovim announces no documentChanges: referee creates the file itself
        assert client.applied_edits == []  # type: ignore[attr-defined]
        written = new_file.read_text(encoding="utf-8")
    assert written.startswith(expected)
    assert written.endswith("    assert clamp(15, 0, 10) == 10\n")
    assert certificate.test_sha256 == ledger.test_sha256(
        written, "tests/test_mathx.py", certificate.test_id, "10"
    )

    # a file by that name now exists and still imports nothing: the next name
    new_file.write_text("", encoding="utf-8")
    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="referee.execution.addTest", arguments=arguments)
    )
    assert answer["ok"] and answer["test"].startswith("tests/test_mathx_referee.py::"), answer


async def test_a_counterexample_offers_a_verified_source_fix(oracle_client: RefereeClient):
    client = oracle_client
    doc = Doc(client, client.uri("mathx.py"), CLAMP_WRONG).open()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    found = await diagnostics(client, doc, has("REF411"))
    (reject,) = [d for d in found if d.code == "REF411"]
    actions = await actions_at_top(client, doc, reject)
    title = "Fix clamp so that clamp(15, 0, 10) == 10 (verified)"
    (action,) = [a for a in actions or [] if a.title == title]
    command = command_of(action)
    assert command.command == "referee.execution.fixSource"
    answer: Any = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    assert answer["ok"] and answer["applied"], answer
    # the oracles' program, verified on the module's asserted calls with the
    # counterexample among them, and on a pytest run of that module
    # (`clamp(15, 0, 10) >= 0` is no literal equality: only the counterexample is a call)
    assert answer["origin"] == "oracle-1" and answer["verified"] == "1/1 asserted calls", answer
    # looking for a fix is shown as cancellable work-done progress
    (token,) = [p.token for p in client.progress_requests if str(p.token).startswith("referee-fix")]
    begun = client.progress_reports.get(token, [])
    assert begun and begun[0].title == "referee: fixing clamp" and begun[0].cancellable
    assert begun[-1].kind == "end"
    (applied,) = client.applied_edits  # type: ignore[attr-defined]
    edit = applied.edit
    if edit.document_changes:
        (change,) = edit.document_changes
        uri, edits = change.text_document.uri, list(change.edits)
    else:
        ((uri, edits),) = edit.changes.items()
    assert uri == doc.uri
    (text_edit,) = edits
    lines = CLAMP_WRONG.splitlines(keepends=True)
    start, end = text_edit.range.start.line, text_edit.range.end.line
    fixed = "".join(lines[:start]) + text_edit.new_text + "".join(lines[end:])
    assert fixed == CLAMP_WRONG.replace("max(lo, x)", "max(lo, min(x, hi))"), fixed
    assert (start, end) == (2, 3)  # the signature and the docstring are not touched
    assert ledger.read(client.root).certificates == []  # a source fix needs no certificate
    assert (client.root / "tests/test_m.py").read_text() == CLAMP_TESTS  # the tests are not

    # refused once the file differs from what was checked
    doc.replace("max(lo, x)", "max(lo, x) ")
    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
    )
    assert not answer["ok"] and "changed since it was checked" in answer["message"]


def test_a_new_test_module_is_created_whole_and_never_over_a_file(tmp_path: Path):
    from referee.checks.atomic import create_text_exclusive

    target = tmp_path / "test_new.py"
    create_text_exclusive(target, "x = 1\n")
    assert target.read_text() == "x = 1\n"
    with pytest.raises(FileExistsError):
        create_text_exclusive(target, "y = 2\n")
    assert target.read_text() == "x = 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test_new.py"]  # no temporary left


async def test_add_test_refuses_malformed_arguments():
    from referee.server.lsp import RefereeServer
    from referee.server.lsp_counterexample import add_test_command

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

    actions = await actions_at_top(client, doc, unclear)
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


# ------------------------------------------------------------------ execution overrides reading

# The docstring's own example contradicts clamp (no model needed to reject it); scale has
# no docstring, so only the reading judge has anything to say about it.
OVERRIDDEN = '''def clamp(x: int, lo: int, hi: int) -> int:
    """x limited to the range [lo, hi].

    >>> clamp(15, 0, 10)
    10
    """
    return max(lo, x)


def scale(n: int) -> int:
    return n * 3
'''
CLAMP_LINES = range(0, 7)  # 0-based, the def to the return
SCALE_LINE = 9
# Every reading is a REJECT quoting the function (so it is a REF401, not a review item
# for an answer the judge cannot read).
VERDICT = '{"reason": "It does not do what it says.", "evidence": ["def"], "verdict": "REJECT"}'
JUDGE_CODES = ("REF401", "REF402")
DIFFERENTIAL = "mutation = false\ngenerated-inputs = 0\n"


async def _judged(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    execution: str,
    files: dict[str, str] | None = None,
):
    """A session with the reading judge on save, its model the fake server (which records
    every prompt), and the execution checks as the ``[execution]`` table ``execution``
    sets them."""
    from red_team.fake_openai import FakeModel

    with FakeModel(lambda kind: VERDICT, fence=False) as model:
        config = (
            f'[judge]\nbackend = "openai"\nurl = "{model.url}"\nmodel = "fake"\n'
            f'perspectives = ["balanced"]\naudit-rate = 0.0\n[execution]\n{execution}'
        )
        setup = Setup(
            files={"referee.toml": config, **(files or {"mathx.py": OVERRIDDEN})},
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


@pytest_asyncio.fixture(params=["visual-studio-code", "neovim"])
async def judged_client(request: pytest.FixtureRequest, tmp_path: Path):
    """The reading judge and the execution checks both on save."""
    async for lsp_client in _judged(request, tmp_path, DIFFERENTIAL):
        yield lsp_client


@pytest_asyncio.fixture(params=["visual-studio-code"])
async def unexecuted_client(request: pytest.FixtureRequest, tmp_path: Path):
    """The reading judge on save, the execution checks off in the project."""
    async for lsp_client in _judged(request, tmp_path, DIFFERENTIAL + "enabled = false\n"):
        yield lsp_client


@pytest_asyncio.fixture(params=["visual-studio-code"])
async def mutating_client(request: pytest.FixtureRequest, tmp_path: Path):
    """The reading judge on save, and the mutation checks, on a test slow to run."""
    files = {"mathx.py": EVEN, "tests/test_m.py": SLOW}
    async for lsp_client in _judged(request, tmp_path, "differential = false\n", files):
        yield lsp_client


def prompts(client: RefereeClient) -> list[str]:
    """The text of every request the fake model server was sent."""
    return [
        "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
        for body in client.model.requests  # type: ignore[attr-defined]
    ]


def judge_idle(client: RefereeClient) -> bool:
    statuses = client.statuses  # type: ignore[attr-defined]
    return bool(statuses) and statuses[-1].get("judge") == "idle"


def on(line: int, codes: tuple[str, ...]):
    return lambda found: any(d.code in codes and d.range.start.line == line for d in found)


async def test_the_judge_does_not_read_what_execution_rejected(judged_client: RefereeClient):
    client = judged_client
    doc = Doc(client, client.uri("mathx.py"), OVERRIDDEN).open()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    found = await diagnostics(
        client, doc, lambda f: has("REF411")(f) and on(SCALE_LINE, JUDGE_CODES)(f)
    )
    await client.until(lambda: judge_idle(client) and execution_idle(client), "both done")
    found = await diagnostics(client, doc, lambda f: True)
    (reject,) = [d for d in found if d.code == "REF411"]
    assert reject.range.start.line == 0
    assert "the docstring says 10" in reject.message
    # the REF411 stands alone on clamp; scale, which execution did not decide, is read
    assert [
        (d.code, d.range.start.line)
        for d in found
        if d.code in JUDGE_CODES and d.range.start.line in CLAMP_LINES
    ] == []
    (read,) = [d for d in found if d.code in JUDGE_CODES]
    assert read.range.start.line == SCALE_LINE and read.message.startswith("scale: ")
    # and the judge was never asked about clamp (the oracles written from clamp's
    # docstring, to ask whether its example is the mistake, are not the judge)
    from referee.checks.arbitration.truth import prompts as arbitration_prompts

    oracle_system = arbitration_prompts().oracle_system
    sent = [p for p in prompts(client) if not p.startswith(oracle_system)]
    assert any("def scale(n: int) -> int:" in p for p in sent), sent
    assert not any("clamp" in p for p in sent), sent


async def test_with_execution_off_the_judge_reads_every_function(
    unexecuted_client: RefereeClient,
):
    client = unexecuted_client
    doc = Doc(client, client.uri("mathx.py"), OVERRIDDEN).open()
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    found = await diagnostics(
        client, doc, lambda f: on(0, JUDGE_CODES)(f) and on(SCALE_LINE, JUDGE_CODES)(f)
    )
    assert not has("REF411")(found)
    assert not any(s.get("execution") == "running" for s in client.statuses)  # type: ignore[attr-defined]
    sent = prompts(client)
    assert any("def clamp(x: int, lo: int, hi: int) -> int:" in p for p in sent), sent


def test_a_reading_of_a_function_execution_rejected_is_not_shown():
    """The safety net: a judge's finding on a function that the execution checks of the
    same text rejected (read before they ended) is not shown; the REF411 stands alone."""
    from referee.checks.document import Document
    from referee.checks.models import Location, Span
    from referee.checks.registry import BY_CODE
    from referee.server.lsp import RefereeServer
    from referee.server.lsp_execution import Executed
    from referee.server.lsp_judge import Judged, JudgeService

    def finding(code: str, line: int, message: str) -> Finding:
        rule = BY_CODE[code]
        span = Span(start=Location(line=line, column=1), end=Location(line=line, column=2))
        return Finding(
            code=code,
            name=rule.name,
            layer=rule.layer,
            severity=rule.severity,
            message=message,
            path="mathx.py",
            span=span,
            url=rule.url,
        )

    ls = RefereeServer()
    ls.protocol.server_capabilities = types.ServerCapabilities()  # as initialize leaves it
    ls.judge = JudgeService()
    uri = "file:///project/mathx.py"
    ls.documents[uri] = Document("/project/mathx.py", OVERRIDDEN, 3)
    ls.execution.results[uri] = Executed(
        3,
        OVERRIDDEN,
        "mathx.py",
        Path("/project"),
        [finding("REF411", 1, "clamp: clamp(15, 0, 10) returned 15; the docstring says 10")],
        decided={"clamp"},
    )
    readings = [
        finding("REF401", 1, "clamp: the judge rejects this function"),
        finding("REF401", SCALE_LINE + 1, "scale: the judge rejects this function"),
    ]
    ls.judge.results[uri] = Judged(
        3, OVERRIDDEN, readings, extents={0: (1, 7), 1: (10, 11)}, subjects={0: "clamp", 1: "scale"}
    )

    def shown() -> list[tuple[str, int]]:
        return sorted((str(d.code), d.range.start.line) for d in ls.all_diagnostics(uri, None))

    assert shown() == [("REF401", SCALE_LINE), ("REF411", 0)]
    # execution results of other text overrule nothing: the function may have changed
    ls.execution.results[uri].text = OVERRIDDEN.replace("n * 3", "n * 4")
    assert ("REF401", 0) in shown()


async def test_the_judge_waits_for_the_execution_run_and_goes_on_when_it_is_cancelled(
    mutating_client: RefereeClient,
):
    client = mutating_client
    doc = Doc(client, client.uri("tests/test_m.py"), SLOW).open()
    save(client, doc)

    def mutants() -> list[str]:
        runs = execution_reports(client)
        messages = [getattr(p, "message", None) or "" for p in (runs[0] if runs else [])]
        return [m for m in messages if "mutant" in m]

    await client.until(lambda: len(mutants()) >= 3, "three mutants run")
    # the judge, started by the same save, waits for the run before it reads anything
    assert prompts(client) == []
    assert client.statuses[-1]["judge"] == "running"  # type: ignore[attr-defined]
    (token,) = [
        p.token for p in client.progress_requests if str(p.token).startswith("referee-execution")
    ]
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    # the cancelled run ends the wait: the judge reads the test (nothing was rejected)
    found = await diagnostics(client, doc, on(SLOW_TEST_LINE, JUDGE_CODES))
    await client.until(lambda: judge_idle(client) and execution_idle(client), "both done")
    assert not has("REF410")(found)  # the run was cancelled: no grade
    assert any("def test_weak():" in p for p in prompts(client))
    done, total = map(int, mutants()[-1].rsplit(" ", 1)[-1].split("/"))
    assert done < total, mutants()


async def test_an_edit_cancels_the_waiting_judge_and_not_the_execution_run(
    mutating_client: RefereeClient,
):
    client = mutating_client
    doc = Doc(client, client.uri("tests/test_m.py"), SLOW).open()
    save(client, doc)

    def mutants() -> int:
        runs = execution_reports(client)
        return sum("mutant" in (getattr(p, "message", None) or "") for p in runs[0]) if runs else 0

    await client.until(lambda: mutants() >= 2, "two mutants run")
    assert client.statuses[-1]["judge"] == "running"  # type: ignore[attr-defined]
    doc.replace("time.sleep(0.4)", "time.sleep(0.5)")  # an edit cancels the judge run...
    await client.until(lambda: judge_idle(client), "the judge cancelled")
    seen = mutants()
    # ...which never read anything, and the execution run goes on
    await client.until(lambda: mutants() >= seen + 2, "two more mutants run")
    assert prompts(client) == []
    assert not ended(execution_reports(client)[0])
