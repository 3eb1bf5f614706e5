"""``referee serve``: the language server. A thin adapter from LSP to the engine.

Diagnostics are computed per open document, debounced, off the event loop, and kept per
layer so one layer's results never replace another's. Clients that can pull diagnostics
(LSP 3.17) pull them; others receive ``publishDiagnostics``.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.uris import to_fs_path

from referee import __version__
from referee.checks.document import Change, Document, Encoding, index_to_units
from referee.checks.engine import check_source
from referee.checks.models import Finding, Fix, Layer, Severity, Span
from referee.server import lsp_actions, lsp_io
from referee.server.live_guard import LiveGuard
from referee.server.lsp_arbitration import ArbitrationService
from referee.server.lsp_execution import ExecutionService
from referee.server.lsp_feature import Command, FeatureSlot, LanguageFeature
from referee.server.lsp_judge import JudgeService
from referee.server.lsp_project import ProjectIndexes, ProjectIndexing
from referee.server.lsp_settings import WorkspaceSettings
from referee.server.lsp_workspace import WorkspaceCheck

log = logging.getLogger("referee.server")

SOURCE = "referee"
STATUS = "referee/status"
_SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}
# referee's configuration, and pytest's (which files are test modules, strict xfails).
_CONFIG_FILES = frozenset(
    {"pyproject.toml", "referee.toml", ".referee.toml"}
    | {"pytest.ini", ".pytest.ini", "setup.cfg", "tox.ini"}
)
_WATCHED_SOURCES = ("**/*.py", "**/*.pyi")  # the project index's files

# The services of the language server, each called at the same points of the session
# (see LanguageFeature). In this order their diagnostics are published and their commands
# announced; on save the execution checks start before the judge, which waits for them.
FEATURES: tuple[type[LanguageFeature], ...] = (
    WorkspaceCheck,  # referee.checkWorkspace
    ExecutionService,  # L2's mutation and differential checks on save, referee.execution.*
    JudgeService,  # the L2 judge on save, the L3 review queue
    ArbitrationService,  # tests on save, failing-test diagnostics, referee.arbitrate
)


@dataclass
class Result:
    """The findings of one check of one document version, and their diagnostics."""

    version: int | None
    findings: list[Finding]
    diagnostics: dict[Layer, list[types.Diagnostic]] = field(default_factory=dict)
    # id(finding) -> (finding, its diagnostic): the next check's reused findings are these
    # very objects, at the same place in the same lines, so their diagnostics are too.
    converted: dict[int, tuple[Finding, types.Diagnostic]] = field(default_factory=dict, repr=False)

    @cached_property
    def result_id(self) -> str:
        digest = hashlib.sha1(
            "\n".join(f"{f.code}{f.span}{f.message}{f.severity}" for f in self.findings).encode()
        ).hexdigest()[:12]
        return f"{self.version}-{digest}"

    def all_diagnostics(self) -> list[types.Diagnostic]:
        return [d for layer in sorted(self.diagnostics) for d in self.diagnostics[layer]]


class RefereeProtocol(LanguageServerProtocol):
    """pygls's protocol without pygls's own copy of each open document: referee keeps
    its documents itself (:class:`Document`). pygls's copy was edited on every keystroke
    for nothing, and a didChange for a document that is not open raised there (an "Error
    in server" message box) before referee's handler could log and ignore it."""

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None

    def structure_message(self, data: dict[str, Any]) -> Any:
        """pygls drops a request whose params do not fit the method's types (a position
        past 2**31, a string for a number) without a response, so the client waits for
        ever; answer it with the error instead (tests/test_lsp_fuzz.py)."""
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            request_id = data.get("id") if isinstance(data, dict) else None
            if "method" in data and type(request_id) in (int, str):
                self._send_response(request_id, error=exc.to_response_error())
            raise


class RefereeServer(WorkspaceSettings, ProjectIndexing, LanguageServer):
    # The features other features reach (ls.judge); the list is self.features.
    execution: FeatureSlot[ExecutionService] = FeatureSlot()
    judge: FeatureSlot[JudgeService] = FeatureSlot()
    arbitration: FeatureSlot[ArbitrationService] = FeatureSlot()

    def __init__(self) -> None:
        super().__init__(
            "referee",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            protocol_cls=RefereeProtocol,
        )
        self.documents: dict[str, Document] = {}
        self.results: dict[str, Result] = {}
        self.pending: dict[str, asyncio.Task[Result | None]] = {}
        self.debounced: set[str] = set()  # documents whose pending check waits out a delay
        self.init_settings()
        self._oversize_reported: set[str] = set()  # documents said to be too large
        self.live_guard = LiveGuard()
        self.project = ProjectIndexes()  # what each file's rules may ask of the others
        self._reindexing = asyncio.Lock()  # files changed on disk, re-indexed in turn
        self.features: list[LanguageFeature] = [feature() for feature in FEATURES]
        for feature in self.features:
            for name, handler in feature.commands().items():
                self.command(name)(_command(feature.name, name, handler))

    # ------------------------------------------------------------------ features

    def feature_named(self, name: str) -> Any:
        return next(f for f in self.features if f.name == name)

    def replace_feature(self, name: str, feature: LanguageFeature) -> None:
        index = next(i for i, f in enumerate(self.features) if f.name == name)
        self.features[index] = feature

    def notify_status(self) -> None:
        """``referee/status``: what runs (the judge, the execution checks), how many
        items wait for review, whether the model process answers."""
        status: dict[str, Any] = {}
        for feature in self.features:
            status.update(feature.status(self))
        self.protocol.notify(STATUS, status)

    # ------------------------------------------------------------------ capabilities

    @property
    def encoding(self) -> Encoding:
        value = self.server_capabilities.position_encoding or types.PositionEncodingKind.Utf16
        return str(getattr(value, "value", value)).lower()  # type: ignore[return-value]

    @property
    def pull_mode(self) -> bool:
        text_document = self.client_capabilities.text_document
        return bool(text_document and text_document.diagnostic)

    @property
    def document_changes(self) -> bool:
        """Whether the client takes versioned ``documentChanges`` in a WorkspaceEdit."""
        workspace = self.client_capabilities.workspace
        edit = workspace.workspace_edit if workspace else None
        return bool(edit and edit.document_changes)

    @property
    def lazy_code_actions(self) -> bool:
        text_document = self.client_capabilities.text_document
        action = text_document.code_action if text_document else None
        resolve = action.resolve_support if action else None
        return bool(resolve and "edit" in resolve.properties)

    def recheck_all(self, *, reload: bool = True) -> None:
        """The settings changed: check every open document again, and take back the
        diagnostics of those that are no longer checked (``run: off``). ``reload``: read
        the projects' configuration files again too."""
        if reload:
            self.forget_settings()
        published = set(self.results)
        self.results.clear()
        for uri in list(self.documents):
            if self.client_settings(self.path_of(uri)).run != "off":
                self.schedule(uri, 0)
                continue
            task = self.pending.pop(uri, None)
            if task is not None:
                task.cancel()
            if uri in published and not self.pull_mode:
                self.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(
                        uri=uri, version=self.documents[uri].version, diagnostics=[]
                    )
                )
        if self.pull_mode:
            self.refresh()

    def refresh(self) -> None:
        """Ask a pull client to pull every document's diagnostics again."""
        workspace = self.client_capabilities.workspace
        diagnostics = workspace.diagnostics if workspace else None
        if diagnostics and diagnostics.refresh_support:
            self.workspace_diagnostic_refresh(None)

    def path_of(self, uri: str) -> Path:
        return Path(to_fs_path(uri) or uri)

    def check_now(self, uri: str) -> Result | None:
        """Check the current text of ``uri`` (runs on the caller's thread)."""
        document = self.documents.get(uri)
        if document is None:
            return None
        if self._oversized(uri, document):
            return Result(document.version, [])
        return self._compute(uri, document, *self._snapshot(document))

    def _oversized(self, uri: str, document: Document) -> bool:
        """Whether the document is larger than ``max-file-size``: left unchecked, as
        ``referee check`` skips such a file, and said once. Parsing and checking 67 MB took
        minutes and 7 GB, and held up every other request meanwhile."""
        limit = self.settings_for(self.path_of(uri)).config.max_file_size
        if len(document.text) * 4 <= limit:  # no UTF-8 character takes more than 4 bytes
            self._oversize_reported.discard(uri)
            return False
        size = len(document.text.encode("utf-8", "surrogatepass"))
        if size <= limit:
            self._oversize_reported.discard(uri)
            return False
        if uri not in self._oversize_reported:
            self._oversize_reported.add(uri)
            name = self.path_of(uri).name
            message = (
                f"referee: {name} is {size:,} bytes, more than max-file-size ({limit:,}); "
                "it is not checked"
            )
            log.info(message)
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Info, message=message)
            )
        return True

    def _snapshot(self, document: Document) -> tuple[Any, int | None]:
        source = document.source()
        if source._tree is not None:
            # The worker reads a copy: the next didChange edits the document's tree.
            source._tree = source._tree.copy()
        return source, document.version

    def _compute(
        self,
        uri: str,
        document: Document,
        source: Any,
        version: int | None,
        skip_superseded: bool = False,
    ) -> Result | None:
        """The check of ``source`` (``document`` at ``version``). With ``skip_superseded``,
        None when the document has moved past ``version`` by the time the check could
        start: while one check runs, the versions typed meanwhile queue on the lock, and
        checking each of them to the end put the diagnostics seconds behind the typing."""
        path = self.path_of(uri)
        settings = self.settings_for(path)
        relpath = settings.relative(path)
        guard = self.live_guard.context_for(path, settings)
        with document.cache_lock:  # a superseded check may still run on another thread
            if skip_superseded and document.version != version:
                return None
            findings = check_source(
                source,
                settings,
                relpath,
                guard,
                cache=document.cache,  # only the statements changed since the last check
                project=self.project.view(settings, relpath, path),
            )
        result = Result(version, findings)
        previous = self.results.get(uri)
        converted = previous.converted if previous is not None else {}
        lines: list[str] | None = None
        for finding in findings:
            known = converted.get(id(finding))
            if known is not None and known[0] is finding:
                diagnostic = known[1]
            else:
                lines = source.text.split("\n") if lines is None else lines
                diagnostic = self.diagnostic(finding, lines)
            result.converted[id(finding)] = (finding, diagnostic)
            result.diagnostics.setdefault(finding.layer, []).append(diagnostic)
        return result

    async def check_later(self, uri: str, delay: float) -> Result | None:
        if delay:
            await asyncio.sleep(delay)
        document = self.documents.get(uri)
        if document is None:
            return None
        if self._oversized(uri, document):
            result = Result(document.version, [])  # and its old diagnostics go
            self.store(uri, result)
            return result
        source, version = self._snapshot(document)
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(
            self.thread_pool, self._compute, uri, document, source, version, True
        )
        current = self.documents.get(uri)
        if result is None or current is None or current.version != version:
            return None  # a newer version is on its way; never publish an older one
        self.store(uri, result)
        return result

    def schedule(self, uri: str, delay: float) -> None:
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        task = asyncio.get_running_loop().create_task(self.check_later(uri, delay))
        self.pending[uri] = task
        if delay:
            self.debounced.add(uri)
        else:
            self.debounced.discard(uri)
        task.add_done_callback(lambda t, uri=uri: self._finished(uri, t))

    def _finished(self, uri: str, task: asyncio.Task[Result | None]) -> None:
        if self.pending.get(uri) is task:
            del self.pending[uri]
            self.debounced.discard(uri)
        if not task.cancelled() and task.exception() is not None:
            log.error("checking %s failed", uri, exc_info=task.exception())

    def store(self, uri: str, result: Result) -> None:
        self.results[uri] = result
        if not self.pull_mode:
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(
                    uri=uri, version=result.version, diagnostics=self.all_diagnostics(uri, result)
                )
            )

    def all_diagnostics(self, uri: str, result: Result | None) -> list[types.Diagnostic]:
        """L0/L1's diagnostics and, beside them, the execution checks' and the judge's
        (L2/L3) and the failing tests' (layer arbitration): each layer's own, none
        replacing another's."""
        found = result.all_diagnostics() if result is not None else []
        for feature in self.features:
            found = found + feature.diagnostics(self, uri)
        return found

    def result_tag(self, uri: str) -> str:
        """What the model layers add to a pull result id."""
        return "".join(feature.result_tag(uri) for feature in self.features)

    def publish_all(self, uri: str) -> None:
        """A feature changed ``uri``'s diagnostics: show every layer's."""
        if self.pull_mode:
            self.refresh()
            return
        result = self.results.get(uri)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri,
                version=result.version if result is not None else None,
                diagnostics=self.all_diagnostics(uri, result),
            )
        )

    async def current_result(self, uri: str) -> Result | None:
        """The result for the document's current version, computing it if needed.

        Requests share the check in flight and wait for it shielded: a second request for
        the same document, or the cancellation of one request, must not cancel the check
        that another request, or the next publishDiagnostics, is waiting for."""
        for _ in range(5):
            document = self.documents.get(uri)
            if document is None or self.client_settings(self.path_of(uri)).run == "off":
                return None
            result = self.results.get(uri)
            if result is not None and result.version == document.version:
                return result
            task = self.pending.get(uri)
            if task is None or uri in self.debounced:
                self.schedule(uri, 0)
                task = self.pending[uri]
            try:
                await asyncio.shield(task)
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise  # this request was cancelled, not the check
            # Superseded by a newer version, or cancelled by an edit: look again.
        stored = self.results.get(uri)
        if stored is not None:
            return stored  # the edits keep coming: the latest result there is
        # Nothing stored at all (every check so far was superseded): compute this version
        # here rather than answer with no diagnostics.
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.thread_pool, self.check_now, uri)

    # ------------------------------------------------------------------ conversion

    def position(self, lines: list[str], line: int, column: int) -> types.Position:
        """A 1-based line and code-point column to an LSP position."""
        row = min(max(line - 1, 0), max(len(lines) - 1, 0))
        text = lines[row] if lines else ""
        return types.Position(
            line=row, character=index_to_units(text, max(column - 1, 0), self.encoding)
        )

    def range(self, lines: list[str], span: Span) -> types.Range:
        return types.Range(
            start=self.position(lines, span.start.line, span.start.column),
            end=self.position(lines, span.end.line, span.end.column),
        )

    def diagnostic(self, finding: Finding, lines: list[str]) -> types.Diagnostic:
        return types.Diagnostic(
            range=self.range(lines, finding.span),
            message=finding.message,
            severity=_SEVERITY[finding.severity],
            code=finding.code,
            code_description=types.CodeDescription(href=finding.url),
            source=SOURCE,
            data={"layer": finding.layer.value, "name": finding.name},
        )

    def edits(self, lines: list[str], fix: Fix) -> list[types.TextEdit]:
        return [
            types.TextEdit(range=self.range(lines, edit.span), new_text=edit.content)
            for edit in fix.edits
        ]


def _command(feature: str, name: str, handler: Command) -> Any:
    """``handler`` as pygls calls a command: ``(ls, *arguments)``, a coroutine function
    when the handler is one. The feature is looked up when the command comes (a test may
    give the server another). pygls reads the annotations at run time: no names that
    exist only for type checkers here."""

    def current(ls: Any) -> Command:
        return ls.feature_named(feature).commands()[name]

    if inspect.iscoroutinefunction(handler):

        async def run_async(ls: Any, *args: Any) -> Any:
            return await current(ls)(ls, args)

        return run_async

    def run(ls: Any, *args: Any) -> Any:
        return current(ls)(ls, args)

    return run


server = RefereeServer()


def _changes(params: types.DidChangeTextDocumentParams) -> list[Change]:
    changes = []
    for change in params.content_changes:
        if isinstance(change, types.TextDocumentContentChangePartial):
            start, end = change.range.start, change.range.end
            changes.append(
                Change(change.text, (start.line, start.character), (end.line, end.character))
            )
        else:
            changes.append(Change(change.text))
    return changes


# ---------------------------------------------------------------------- lifecycle


@server.feature(types.INITIALIZE)
def initialize(ls: RefereeServer, params: types.InitializeParams) -> None:
    ls.global_settings = ls._parsed(params.initialization_options or {})


@server.feature(types.INITIALIZED)
async def initialized(ls: RefereeServer, params: types.InitializedParams) -> None:
    log.info(
        "referee %s; position encoding %s; %s diagnostics",
        __version__,
        ls.encoding,
        "pull" if ls.pull_mode else "push",
    )
    workspace = ls.client_capabilities.workspace
    registrations = []
    change = workspace.did_change_configuration if workspace else None
    if change and change.dynamic_registration:
        registrations.append(
            types.Registration(
                id="referee-configuration", method=types.WORKSPACE_DID_CHANGE_CONFIGURATION
            )
        )
    watched = workspace.did_change_watched_files if workspace else None
    if watched and watched.dynamic_registration:
        # Files edited outside the editor (a checkout, a script, an agent) count too: the
        # configuration, and the Python files the project index is made of.
        patterns = ["**/{" + ",".join(sorted(_CONFIG_FILES)) + "}", *_WATCHED_SOURCES]
        registrations.append(
            types.Registration(
                id="referee-watched-files",
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                    watchers=[types.FileSystemWatcher(glob_pattern=p) for p in patterns]
                ),
            )
        )
    if registrations:
        try:
            await ls.client_register_capability_async(
                types.RegistrationParams(registrations=registrations)
            )
        except Exception as exc:  # settings, files changed on disk: only on restart; say so
            log.warning("could not register for configuration and file changes: %s", exc)
    if await ls.pull_configuration() and ls.documents:
        # Documents opened while the client was answering were checked with the settings
        # of initializationOptions.
        ls.recheck_all(reload=False)
    if ls.global_settings.run != "off":
        asyncio.get_running_loop().create_task(ls.index_workspace())


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
async def did_change_watched_files(
    ls: RefereeServer, params: types.DidChangeWatchedFilesParams
) -> None:
    if any(ls.path_of(change.uri).name in _CONFIG_FILES for change in params.changes):
        ls.recheck_all()
    elif params.changes:
        ls.live_guard.invalidate()  # the working tree changed: the guard's plan is stale
    await ls.reindex_files(params.changes)  # what other files may ask of these, as on disk


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(
    ls: RefereeServer, params: types.DidChangeConfigurationParams
) -> None:
    if isinstance(params.settings, dict) and "referee" in params.settings:
        ls.global_settings = ls._parsed(params.settings["referee"])
    await ls.pull_configuration()
    ls.recheck_all()


@server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
async def did_change_folders(
    ls: RefereeServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    await ls.pull_configuration()
    ls.recheck_all()  # a document may now belong to another folder, with other settings


@server.feature(types.SHUTDOWN)
def shutdown(ls: RefereeServer, *args: Any) -> None:
    for feature in ls.features:
        feature.shutdown(ls)
    # The model process goes with the session (it also exits by itself when this process
    # ends, however it ends).
    from referee.checks.judge.worker import close_all

    close_all()


# ---------------------------------------------------------------------- documents


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: RefereeServer, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    ls.documents[item.uri] = Document(str(ls.path_of(item.uri)), item.text, item.version)
    if ls.client_settings(ls.path_of(item.uri)).run != "off":
        ls.index_document(item.uri)
        ls.schedule(item.uri, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: RefereeServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    document = ls.documents.get(uri)
    if document is None:
        log.warning("didChange for %s, which is not open; ignored", uri)
        return
    version = params.text_document.version
    if document.version is not None and version is not None and version < document.version:
        log.warning(
            "didChange for %s went back from version %s to %s; ignored",
            uri,
            document.version,
            version,
        )
        return
    document.apply(_changes(params), version, ls.encoding)
    for feature in ls.features:
        feature.did_change(ls, uri)
    settings = ls.client_settings(ls.path_of(uri))
    if settings.run == "onType" and not ls.pull_mode:
        ls.schedule(uri, settings.debounce_ms / 1000)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: RefereeServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.live_guard.invalidate()  # the working tree changed: the guard's plan is stale
    # the execution checks before the judge: a newer save cancels their older run, and
    # the judge waits for this one (what they reject is not read)
    for feature in ls.features:
        feature.did_save(ls, uri)
    if ls.path_of(uri).name in _CONFIG_FILES:
        ls.recheck_all()
    elif ls.client_settings(ls.path_of(uri)).run != "off" and uri in ls.documents:
        ls.index_document(uri)  # what other files may ask of this one, as saved
        if ls.client_settings(ls.path_of(uri)).run == "onSave":
            ls.schedule(uri, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: RefereeServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    if ls.documents.pop(uri, None) is not None:
        # Its index entry was the editor's text; now it is the file's (a close without
        # saving drops the edits), read off the event loop.
        reread = [types.FileEvent(uri=uri, type=types.FileChangeType.Changed)]
        asyncio.get_running_loop().create_task(ls.reindex_files(reread))
    ls.results.pop(uri, None)
    for feature in ls.features:
        feature.did_close(ls, uri)
    task = ls.pending.pop(uri, None)
    if task is not None:
        task.cancel()
    if not ls.pull_mode:
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )


@server.feature(types.TEXT_DOCUMENT_WILL_SAVE_WAIT_UNTIL)
def will_save_wait_until(
    ls: RefereeServer, params: types.WillSaveTextDocumentParams
) -> list[types.TextEdit]:
    """Verify the text about to be saved and report it before the save completes. The
    user's text is never edited here: the answer is always no edits."""
    uri = params.text_document.uri
    if ls.client_settings(ls.path_of(uri)).run != "off":
        result = ls.check_now(uri)
        if result is not None:
            ls.store(uri, result)
            if ls.pull_mode:
                ls.refresh()
    return []


# ---------------------------------------------------------------------- pull diagnostics


@server.feature(
    types.TEXT_DOCUMENT_DIAGNOSTIC,
    types.DiagnosticOptions(
        identifier=SOURCE, inter_file_dependencies=False, workspace_diagnostics=True
    ),
)
async def document_diagnostic(
    ls: RefereeServer, params: types.DocumentDiagnosticParams
) -> types.DocumentDiagnosticReport:
    uri = params.text_document.uri
    run = ls.client_settings(ls.path_of(uri)).run
    if run == "off":
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    stored = ls.results.get(uri)
    # onSave: what the last save (or the opening) showed, not the text being typed.
    result = stored if run == "onSave" and stored else await ls.current_result(uri)
    if result is None:
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    result_id = result.result_id + ls.result_tag(uri)
    if params.previous_result_id == result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    return types.RelatedFullDocumentDiagnosticReport(
        items=ls.all_diagnostics(uri, result), result_id=result_id
    )


@server.feature(types.WORKSPACE_DIAGNOSTIC)
async def workspace_diagnostic(
    ls: RefereeServer, params: types.WorkspaceDiagnosticParams
) -> types.WorkspaceDiagnosticReport:
    previous = {item.uri: item.value for item in params.previous_result_ids}
    items: list[types.WorkspaceDocumentDiagnosticReport] = []
    for uri in list(ls.documents):
        result = await ls.current_result(uri)
        if result is None:
            if uri in ls.documents:  # not checked (run: off): nothing to report
                items.append(
                    types.WorkspaceFullDocumentDiagnosticReport(
                        uri=uri, version=ls.documents[uri].version, items=[]
                    )
                )
            continue
        result_id = result.result_id + ls.result_tag(uri)
        if previous.get(uri) == result_id:
            items.append(
                types.WorkspaceUnchangedDocumentDiagnosticReport(
                    uri=uri, version=result.version, result_id=result_id
                )
            )
        else:
            items.append(
                types.WorkspaceFullDocumentDiagnosticReport(
                    uri=uri,
                    version=result.version,
                    items=ls.all_diagnostics(uri, result),
                    result_id=result_id,
                )
            )
    return types.WorkspaceDiagnosticReport(items=items)


# ---------------------------------------------------------------------- code actions


# ---------------------------------------------------------------------- code actions

server.feature(types.TEXT_DOCUMENT_CODE_ACTION, lsp_actions.OPTIONS)(lsp_actions.code_action)
server.feature(types.CODE_ACTION_RESOLVE)(lsp_actions.code_action_resolve)


def serve(
    transport: str = "stdio", host: str = "127.0.0.1", port: int = 2087, log_level: str = "info"
) -> int:
    """Serve one session; the exit code the protocol asks for: 0 when the client asked
    for ``shutdown`` before ``exit`` (or before its stream closed), 1 otherwise."""
    level = getattr(logging, log_level.upper())
    handler = lsp_io.ClientLogHandler(server, level)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    for name in ("referee", "pygls"):
        logger = logging.getLogger(name)
        logger.setLevel(level)
        logger.addHandler(handler)
        logger.propagate = False
    logging.getLogger("pygls").setLevel(max(level, logging.WARNING))
    if transport == "tcp":
        server.start_tcp(host, port)
    elif transport == "ws":
        server.start_ws(host, port)
    else:
        server.start_io(*lsp_io.private_stdio())
    # pygls works this out in its exit handler, then loses it: the SystemExit it raises
    # ends its own loop and is swallowed there.
    return 0 if server.protocol._shutdown else 1
