"""A pytest-lsp client for ``referee serve`` that records what the server sends.

The client impersonates a stored editor profile (VS Code, Neovim), answers the requests
the server makes (workspace/configuration, client/registerCapability,
window/workDoneProgress/create) and records every notification, so that tests can wait
for what they expect instead of sleeping.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import copy
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest_lsp
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient, LanguageClientProtocol
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from referee.checks.document import index_to_units
from referee.checks.models import Finding

T = TypeVar("T")

PROFILES = ("visual-studio-code", "neovim")
SERVER = [sys.executable, "-m", "referee", "serve"]  # a process of its own, started as usual
SAFE_FIXES_SERVER = [sys.executable, str(Path(__file__).with_name("safe_fixes.py"))]
TIMEOUT = 20.0  # seconds to wait for something the server must send; never reached when green

Mode = Literal["push", "pull"]


class ForkedServer(Sequence[str]):
    """``referee serve`` forked from this worker's zygote (:mod:`lsp.zygote`): the command
    of its launcher, the zygote started on first use. Where a zygote cannot run (no
    ``os.pidfd_open``, not Linux), the usual command."""

    _command: list[str] | None = None

    def _resolve(self) -> list[str]:
        if ForkedServer._command is None:
            ForkedServer._command = _start_zygote() or list(SERVER)
        return ForkedServer._command

    def __getitem__(self, index):  # type: ignore[override]
        return self._resolve()[index]

    def __len__(self) -> int:
        return len(self._resolve())


def _start_zygote() -> list[str] | None:
    if not hasattr(os, "pidfd_open") or not sys.platform.startswith("linux"):
        return None
    script = str(Path(__file__).with_name("zygote.py"))
    home = Path(tempfile.mkdtemp(prefix="referee-zygote-"))
    path, env_file = home / "socket", home / "env.json"
    env = {k: v for k, v in os.environ.items() if k.startswith("PYTHON")}
    env_file.write_text(json.dumps(env), encoding="utf-8")
    log = (home / "zygote.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, script, "--zygote", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=log,
    )
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    proc.stdout.close()
    if ready.strip() != b"ready":
        proc.kill()
        return None

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        for leftover in (path, env_file, home / "zygote.log"):
            leftover.unlink(missing_ok=True)
        home.rmdir()

    atexit.register(stop)
    return [sys.executable, "-I", "-S", script, str(path), str(env_file), "--", "serve"]


@dataclass(frozen=True)
class Setup:
    """How a test's session starts. Paths are relative to the test's tmp_path."""

    files: Mapping[str, str] = field(default_factory=lambda: {"referee.toml": ""})
    folders: Sequence[str] = (".",)
    init_options: Any = field(default_factory=lambda: {"debounceMs": 0})
    # workspace/configuration answers: folder ("" for global) -> the `referee` section
    settings: Mapping[str, Any] = field(default_factory=dict)
    mode: Mode | None = None  # None: as the profile says
    lazy: bool | None = None  # codeAction resolveSupport for "edit"; None: as the profile says
    encodings: Sequence[str] | None = None  # general.positionEncodings; None: as the profile
    # the command that starts the server: by default forked from a zygote (see ForkedServer)
    server: Sequence[str] = ForkedServer()
    hold_configuration: bool = False  # answer workspace/configuration only when released
    refresh: bool = False  # add workspace.diagnostics.refreshSupport to the profile
    progress: bool = True  # False: remove window.workDoneProgress from the profile


class RecordingProtocol(LanguageClientProtocol):
    def _handle_notification(self, method_name: str, params: Any) -> None:
        super()._handle_notification(method_name, params)
        self._server.wake()  # type: ignore[attr-defined]


class RefereeClient(LanguageClient):
    """pytest-lsp's client, recording everything the tests look at."""

    def __init__(self) -> None:
        super().__init__(converter_factory=default_converter, protocol_cls=RecordingProtocol)
        self.published: list[types.PublishDiagnosticsParams] = []
        self.configuration_requests: list[types.ConfigurationParams] = []
        self.registrations: list[types.Registration] = []
        self.configuration_gate = asyncio.Event()
        self.configuration_gate.set()
        self.progress_gate = asyncio.Event()  # cleared: hold window/workDoneProgress/create
        self.progress_gate.set()
        self.progress_requests: list[types.WorkDoneProgressCreateParams] = []
        self.mode: Mode = "push"
        self.encoding = "utf-16"
        self.capabilities_sent: types.ClientCapabilities | None = None
        self.root = Path()
        self.profile = ""
        self._waiters: list[asyncio.Event] = []

    # -------------------------------------------------------------- waiting

    def wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for event in waiters:
            event.set()

    async def until(self, predicate: Callable[[], T], what: str) -> T:
        """Wait until ``predicate()`` is truthy (re-checked on every notification)."""

        async def poll() -> T:
            while not (value := predicate()):
                event = asyncio.Event()
                self._waiters.append(event)
                await event.wait()
            return value

        try:
            return await asyncio.wait_for(poll(), TIMEOUT)
        except asyncio.TimeoutError:
            raise AssertionError(f"timed out waiting for {what}") from None

    def mark(self) -> int:
        return len(self.published)

    async def publication(
        self, uri: str, *, after: int = 0, version: int | None = None
    ) -> types.PublishDiagnosticsParams:
        """The first publishDiagnostics for ``uri`` (of ``version``) after ``after``."""

        def found() -> types.PublishDiagnosticsParams | None:
            return next(
                (
                    p
                    for p in self.published[after:]
                    if p.uri == uri and (version is None or p.version == version)
                ),
                None,
            )

        return await self.until(found, f"publishDiagnostics for {uri} version {version}")

    def publications(self, uri: str) -> list[types.PublishDiagnosticsParams]:
        return [p for p in self.published if p.uri == uri]

    # -------------------------------------------------------------- requests

    async def pull(self, uri: str, previous: str | None = None) -> Any:
        return await self.text_document_diagnostic_async(
            types.DocumentDiagnosticParams(
                text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=previous
            )
        )

    async def diagnostics_for(self, doc: Doc) -> list[types.Diagnostic]:
        """The document's diagnostics for its current version, however this client gets
        them: pulled, or waited for as publishDiagnostics."""
        if self.mode == "pull":
            report = await self.pull(doc.uri)
            assert report.kind == "full"
            return list(report.items)
        published = await self.publication(doc.uri, after=doc.mark, version=doc.version)
        return list(published.diagnostics)

    def uri(self, relative: str) -> str:
        return (self.root / relative).as_uri()


def make_client() -> RefereeClient:
    client = RefereeClient()
    defaults = {
        method: handler
        for method, handler in DEFAULT_CLIENT_FEATURES.items()
        if method
        not in (
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
            types.WORKSPACE_CONFIGURATION,
            types.WORKSPACE_DIAGNOSTIC_REFRESH,
            types.WINDOW_WORK_DONE_PROGRESS_CREATE,
        )
    }
    register_lsp_features(client, defaults)

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def _publish(params: types.PublishDiagnosticsParams) -> None:
        client.published.append(params)
        client.diagnostics[params.uri] = params.diagnostics

    @client.feature(types.WORKSPACE_CONFIGURATION)
    async def _configuration(params: types.ConfigurationParams) -> list[Any]:
        client.configuration_requests.append(params)
        client.wake()
        await client.configuration_gate.wait()
        return [
            client.get_configuration(section=item.section, scope_uri=item.scope_uri)
            for item in params.items
        ]

    create_progress = DEFAULT_CLIENT_FEATURES[types.WINDOW_WORK_DONE_PROGRESS_CREATE]

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    async def _create_progress(params: types.WorkDoneProgressCreateParams) -> None:
        client.progress_requests.append(params)
        client.wake()
        await client.progress_gate.wait()
        create_progress(client, params)  # pytest-lsp's: warns about a reused token

    @client.feature(types.WORKSPACE_DIAGNOSTIC_REFRESH)
    def _refresh(params: None) -> None:
        client.diagnostic_refresh_count += 1
        client.wake()

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)
        client.wake()

    return client


def capabilities(profile: str, setup: Setup) -> types.ClientCapabilities:
    caps = copy.deepcopy(pytest_lsp.client_capabilities(profile))
    text_document = caps.text_document
    assert text_document is not None
    if setup.mode == "pull" and text_document.diagnostic is None:
        text_document.diagnostic = types.DiagnosticClientCapabilities(dynamic_registration=False)
    elif setup.mode == "push":
        text_document.diagnostic = None
    if setup.lazy is not None:
        action = text_document.code_action
        assert action is not None
        action.resolve_support = (
            types.ClientCodeActionResolveOptions(properties=["edit"]) if setup.lazy else None
        )
    if setup.refresh:
        workspace = caps.workspace or types.WorkspaceClientCapabilities()
        workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
        caps.workspace = workspace
    if not setup.progress and caps.window is not None:
        caps.window.work_done_progress = None
    if setup.encodings is not None:
        general = caps.general or types.GeneralClientCapabilities()
        general.position_encodings = list(setup.encodings)
        caps.general = general
    return caps


@contextlib.asynccontextmanager
async def session(
    devtools: str | None, profile: str, root: Path, setup: Setup, *, statuses: bool = False
) -> AsyncIterator[RefereeClient]:
    """A started and initialized session (:func:`start`), shut down at the end. With
    ``statuses``, ``client.statuses`` records each ``referee/status`` notification."""
    config = pytest_lsp.ClientServerConfig(
        server_command=list(setup.server), client_factory=make_client
    )
    client = await config.start(devtools=devtools)
    assert isinstance(client, RefereeClient)
    if statuses:
        record_statuses(client)
    try:
        await start(client, profile, root, setup)
        yield client
        await client.shutdown_session()
    finally:
        await client.stop()


def record_statuses(client: RefereeClient) -> list[dict[str, Any]]:
    """Record the server's ``referee/status`` notifications in ``client.statuses``."""
    statuses: list[dict[str, Any]] = []
    client.statuses = statuses  # type: ignore[attr-defined]

    @client.feature("referee/status")
    def _status(params: Any) -> None:
        # pygls hands an unknown notification's params over as a namedtuple
        statuses.append(params if isinstance(params, dict) else params._asdict())
        client.wake()

    return statuses


async def start(client: RefereeClient, profile: str, root: Path, setup: Setup) -> None:
    """Write the project, then initialize a session as ``profile`` would."""
    client.root = root
    for relative, text in setup.files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for scope, section in setup.settings.items():
        scope_uri = (root / scope).as_uri() if scope else None
        client.set_configuration(section, section="referee", scope_uri=scope_uri)
    if setup.hold_configuration:
        client.configuration_gate.clear()
    folders = [
        types.WorkspaceFolder(uri=(root / f).resolve().as_uri(), name=Path(f).name or root.name)
        for f in setup.folders
    ]
    caps = capabilities(profile, setup)
    client.capabilities_sent = caps
    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            root_uri=root.as_uri(),
            workspace_folders=folders,
            initialization_options=setup.init_options,
        )
    )
    encoding = result.capabilities.position_encoding or "utf-16"
    client.encoding = str(getattr(encoding, "value", encoding))
    client.mode = "pull" if caps.text_document and caps.text_document.diagnostic else "push"


# ------------------------------------------------------------------ documents


def offset(text: str, position: types.Position, encoding: str) -> int:
    """An LSP position in ``text`` to a code-point offset (the client's side of it)."""
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    units = 0
    for index, ch in enumerate(line):
        if units >= position.character:
            return start + index
        units += len(ch.encode(_codec(encoding))) // _unit(encoding)
    return start + len(line)


def position(text: str, index: int, encoding: str) -> types.Position:
    before = text[:index]
    line = before.count("\n")
    column = before[before.rfind("\n") + 1 :]
    return types.Position(
        line=line, character=len(column.encode(_codec(encoding))) // _unit(encoding)
    )


def _codec(encoding: str) -> str:
    return {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[encoding]


def _unit(encoding: str) -> int:
    return {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]


def apply_edits(text: str, edits: Sequence[types.TextEdit], encoding: str) -> str:
    """Apply a TextEdit list (ranges all relative to ``text``), as a client would."""
    spans = sorted(
        (
            (offset(text, e.range.start, encoding), offset(text, e.range.end, encoding), e)
            for e in edits
        ),
        key=lambda s: (s[0], s[1]),
        reverse=True,
    )
    for start, end, edit in spans:
        text = text[:start] + edit.new_text + text[end:]
    return text


def expected_range(text: str, finding: Finding, encoding: str) -> types.Range:
    """Where a finding (1-based line, code-point column) lies, in ``encoding`` units."""
    lines = text.split("\n")

    def at(line: int, column: int) -> types.Position:
        row = lines[line - 1]
        return types.Position(line=line - 1, character=index_to_units(row, column - 1, encoding))  # type: ignore[arg-type]

    return types.Range(
        start=at(finding.span.start.line, finding.span.start.column),
        end=at(finding.span.end.line, finding.span.end.column),
    )


@dataclass
class Doc:
    """A document open in the client, kept in step with the edits it sends."""

    client: RefereeClient
    uri: str
    text: str
    version: int = 1
    language: str = "python"
    mark: int = 0  # client.published index when the current version was sent

    def open(self) -> Doc:
        self.mark = self.client.mark()
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=self.uri, language_id=self.language, version=self.version, text=self.text
                )
            )
        )
        return self

    def edit(self, edits: Sequence[types.TextEdit], *, version: int | None = None) -> None:
        """Send ``edits`` (relative to the current text) as one incremental didChange."""
        ordered = sorted(
            edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
        )
        self.text = apply_edits(self.text, edits, self.client.encoding)
        changes = [
            types.TextDocumentContentChangePartial(range=e.range, text=e.new_text) for e in ordered
        ]
        self._send(changes, version)

    def replace(self, old: str, new: str) -> None:
        """Replace the first ``old`` in the text with ``new``, incrementally."""
        index = self.text.index(old)
        enc = self.client.encoding
        self.edit(
            [
                types.TextEdit(
                    range=types.Range(
                        start=position(self.text, index, enc),
                        end=position(self.text, index + len(old), enc),
                    ),
                    new_text=new,
                )
            ]
        )

    def set_text(self, text: str) -> None:
        self.text = text
        self._send([types.TextDocumentContentChangeWholeDocument(text=text)], None)

    def _send(self, changes: list[Any], version: int | None) -> None:
        self.version = self.version + 1 if version is None else version
        self.mark = self.client.mark()
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=self.uri, version=self.version
                ),
                content_changes=changes,
            )
        )

    def close(self) -> None:
        self.mark = self.client.mark()
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=self.uri)
            )
        )

    @property
    def identifier(self) -> types.TextDocumentIdentifier:
        return types.TextDocumentIdentifier(uri=self.uri)
