"""``referee serve``: the language server. A thin adapter from LSP to the engine.

Diagnostics are computed per open document, debounced, off the event loop, and kept per
layer so one layer's results never replace another's. Clients that can pull diagnostics
(LSP 3.17) pull them; others receive ``publishDiagnostics``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.uris import to_fs_path

from referee import __version__
from referee.checks import interpreter
from referee.checks.config import ConfigError, Settings, discover, forget_pytest_layouts
from referee.checks.document import Change, Document, Encoding, index_to_units
from referee.checks.engine import check_source
from referee.checks.models import Finding, Fix, Layer, Severity, Span
from referee.checks.project import ModuleFacts
from referee.server import lsp_arbitration, lsp_execution, lsp_judge
from referee.server.live_guard import LiveGuard
from referee.server.lsp_project import ProjectIndexes
from referee.server.options import ClientSettings, parse_settings

log = logging.getLogger("referee.server")

SOURCE = "referee"
FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.referee"
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


class RefereeServer(LanguageServer):
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
        self.global_settings = ClientSettings()
        self.folder_settings: dict[str, ClientSettings] = {}  # folder path -> settings
        self._project_settings: dict[tuple[str, str | None], Settings] = {}
        self._reported_config_errors: set[str] = set()
        self._oversize_reported: set[str] = set()  # documents said to be too large
        self.live_guard = LiveGuard()
        self.arbitration = lsp_arbitration.ArbitrationService()  # tests on save
        self.project = ProjectIndexes()  # what each file's rules may ask of the others
        self.execution = lsp_execution.ExecutionService()  # L2's execution checks on save
        self._reindexing = asyncio.Lock()  # files changed on disk, re-indexed in turn

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

    # ------------------------------------------------------------------ settings

    def folders(self) -> list[Path]:
        return [Path(to_fs_path(f.uri) or f.uri) for f in self.workspace.folders.values()]

    def folder_of(self, path: Path) -> Path | None:
        matches = [f for f in self.folders() if path == f or f in path.parents]
        return max(matches, key=lambda f: len(f.parts), default=None)

    def client_settings(self, path: Path) -> ClientSettings:
        folder = self.folder_of(path)
        if folder is not None and str(folder) in self.folder_settings:
            return self.folder_settings[str(folder)]
        return self.global_settings

    def settings_for(self, path: Path) -> Settings:
        """The project's configuration for a file, with the editor's overrides on top.
        A broken configuration is reported once and replaced by the defaults."""
        client = self.client_settings(path)
        explicit = client.configuration
        key = (str(path.parent), explicit)
        project = self._project_settings.get(key)
        if project is None:
            try:
                project = discover(path.parent, Path(explicit) if explicit else None)
            except ConfigError as exc:
                self._report_config_error(str(exc))
                project = Settings(root=self.folder_of(path) or path.parent)
            self._project_settings[key] = project
        if client.python:  # the editor's interpreter wins over the file's and discovery
            project = project.with_python(client.python, "editor setting referee.python")
        try:
            return project.with_overrides(client.select or (), client.extend_select, client.ignore)
        except ConfigError as exc:  # the editor's select/ignore, not a file's
            self._report_config_error(f"editor settings: {exc.key}: {exc.problem}")
            return project

    def _report_config_error(self, message: str) -> None:
        log.error(message)
        if message not in self._reported_config_errors:
            self._reported_config_errors.add(message)
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=f"referee: {message}")
            )

    def forget_settings(self) -> None:
        self._project_settings.clear()
        interpreter.forget()  # a .venv made, pytest installed since
        forget_pytest_layouts()
        self._reported_config_errors.clear()
        self.live_guard.invalidate()

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
            _refresh(self)

    async def pull_configuration(self) -> bool:
        """Ask the client for the ``referee`` section of every workspace folder; whether
        the settings changed."""
        workspace = self.client_capabilities.workspace
        if not (workspace and workspace.configuration):
            return False
        before = (self.global_settings, self.folder_settings)
        folders = list(self.workspace.folders.values())
        items = [types.ConfigurationItem(scope_uri=f.uri, section="referee") for f in folders]
        items.append(types.ConfigurationItem(section="referee"))
        try:
            answers = await self.workspace_configuration_async(
                types.ConfigurationParams(items=items)
            )
        except Exception as exc:  # a client that fails the request keeps its old settings
            log.warning("workspace/configuration failed: %s", exc)
            return False
        *per_folder, global_answer = list(answers) + [None] * (len(items) - len(answers))
        if global_answer is not None:
            self.global_settings = self._parsed(global_answer)
        self.folder_settings = {}
        for folder, answer in zip(folders, per_folder, strict=False):
            if answer is not None:
                path = to_fs_path(folder.uri) or folder.uri
                self.folder_settings[str(Path(path))] = self._parsed(answer)
        return (self.global_settings, self.folder_settings) != before

    def _parsed(self, raw: Any) -> ClientSettings:
        settings, problem = parse_settings(raw)
        if problem:
            self._report_config_error(problem)
        return settings

    # ------------------------------------------------------------------ checking

    def index_document(self, uri: str) -> None:
        """Update the project index with ``uri``'s text; when its entry changed, check
        again the other open documents whose view of the project changed with it."""
        document = self.documents.get(uri)
        if document is None or self._oversized(uri, document):
            return
        path = self.path_of(uri)
        settings = self.settings_for(path)
        before = self._views(exclude=uri)
        if self.project.update(settings, settings.relative(path), document.source()):
            self._recheck_changed(before)

    async def index_workspace(self) -> None:
        """Index every workspace folder's Python files, off the event loop, then check
        again the open documents whose view of the project changed."""
        loop = asyncio.get_running_loop()
        before = self._views()
        for folder in self.folders():
            settings = self.settings_for(folder / "_")
            if not self.project.begin(settings):
                continue  # this project's index is built, or being built, already
            open_sources = {
                settings.relative(self.path_of(uri)): document.source()
                for uri, document in self.documents.items()
                if self.folder_of(self.path_of(uri)) == folder
            }
            try:
                await loop.run_in_executor(
                    self.thread_pool, self.project.build, folder, settings, open_sources
                )
            except Exception:  # an index is an aid: checks go on without it
                log.exception("indexing %s failed", folder)
        self._recheck_changed(before)

    async def reindex_files(self, events: Iterable[types.FileEvent]) -> None:
        """Python files changed on disk outside the editor (a checkout, a script, an
        agent), or closed in it: their index entries are made again from the files as
        they are now (a file that is gone, or can no longer be read, leaves the index,
        whatever the event said), off the event loop; then the open documents whose view
        of the project changed are checked again. Left alone: documents open in the
        editor (their entry is the editor's text), files outside the workspace folders,
        URIs that are not files, and the files the workspace's indexing leaves out
        (excluded, ignored by git, not Python)."""
        open_paths = {self.path_of(uri) for uri in self.documents}
        groups: dict[tuple[Path, Path, Path | None], tuple[Settings, list[Path]]] = {}
        for event in events:
            try:
                fs_path = to_fs_path(event.uri)  # None for another scheme
                if fs_path is None:
                    continue
                path = Path(fs_path)
                folder = self.folder_of(path)
                if folder is None or path in open_paths or path.suffix not in (".py", ".pyi"):
                    continue
                if self.client_settings(path).run == "off":
                    continue
                settings = self.settings_for(path)
            except Exception:  # a URI no path comes from: nothing to index
                log.warning("didChangeWatchedFiles: %s ignored", event.uri, exc_info=True)
                continue
            key = (folder, settings.root, settings.path)
            paths = groups.setdefault(key, (settings, []))[1]
            if path not in paths:
                paths.append(path)
        if not groups:
            return
        loop = asyncio.get_running_loop()
        async with self._reindexing:  # one batch at a time: a later read is applied later
            entries = await loop.run_in_executor(self.thread_pool, self._read_entries, groups)
            open_paths = {self.path_of(uri) for uri in self.documents}
            before = self._views()
            changed = False
            for settings, path, relpath, facts in entries:
                if path not in open_paths:  # opened meanwhile: the editor's text wins
                    changed = self.project.put(settings, relpath, facts) or changed
            if changed:
                self._recheck_changed(before)

    def _read_entries(
        self, groups: dict[Any, tuple[Settings, list[Path]]]
    ) -> list[tuple[Settings, Path, str, ModuleFacts | None]]:
        """Each file's index entry from disk (blocking), grouped by folder and project."""
        entries = []
        for (folder, _root, _config), (settings, paths) in groups.items():
            try:
                read = self.project.read(paths, folder, settings)
            except Exception:  # an index is an aid: the old entries stay
                log.exception("re-indexing files of %s failed", folder)
                continue
            entries.extend((settings, path, relpath, facts) for path, relpath, facts in read)
        return entries

    def _views(self, exclude: str | None = None) -> dict[str, Any]:
        """Each open document's view of the project now (documents not checked left out)."""
        views = {}
        for uri in self.documents:
            path = self.path_of(uri)
            if uri != exclude and self.client_settings(path).run != "off":
                settings = self.settings_for(path)
                views[uri] = self.project.view(settings, settings.relative(path), path)
        return views

    def _recheck_changed(self, before: dict[str, Any]) -> None:
        """Check again the documents whose view differs from ``before``; a pull client is
        told to ask again (only then: a refresh makes it pull every document)."""
        changed = [uri for uri, view in self._views().items() if before.get(uri, view) != view]
        for uri in changed:
            self.schedule(uri, 0)
        if changed and self.pull_mode:
            _refresh(self)

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
        return (
            found
            + self.execution.diagnostics(self, uri)
            + self.judge.diagnostics(self, uri)
            + self.arbitration.diagnostics(self, uri)
        )

    def result_tag(self, uri: str) -> str:
        """What the model layers add to a pull result id."""
        return (
            self.execution.result_tag(uri)
            + self.judge.result_tag(uri)
            + self.arbitration.result_tag(uri)
        )

    def publish_all(self, uri: str) -> None:
        """A later layer changed ``uri``'s diagnostics: show every layer's."""
        self.arbitration_changed(uri)

    def arbitration_changed(self, uri: str) -> None:
        """A test run changed ``uri``'s failing-test diagnostics: show them."""
        if self.pull_mode:
            _refresh(self)
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


def _refresh(ls: RefereeServer) -> None:
    workspace = ls.client_capabilities.workspace
    diagnostics = workspace.diagnostics if workspace else None
    if diagnostics and diagnostics.refresh_support:
        ls.workspace_diagnostic_refresh(None)


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
    ls.judge.cancel(uri)  # a judge run on the older text is moot
    settings = ls.client_settings(ls.path_of(uri))
    if settings.run == "onType" and not ls.pull_mode:
        ls.schedule(uri, settings.debounce_ms / 1000)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: RefereeServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.live_guard.invalidate()  # the working tree changed: the guard's plan is stale
    ls.arbitration.on_save(ls, uri)  # tests on save, when the client asked for them
    # L2's execution checks, first: a newer save cancels the older run, and the judge
    # waits for this one (what it rejects is not read: execution overrides reading)
    ls.execution.on_save(ls, uri)
    if uri in ls.documents and ls.client_settings(ls.path_of(uri)).judge.run == "onSave":
        ls.judge.start(ls, uri)  # L2 on save, off the event loop, cancelled by the next edit
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
    ls.judge.cancel(uri)
    ls.judge.results.pop(uri, None)
    ls.execution.forget(uri)
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
                _refresh(ls)
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


def _wanted(kind: str, only: Iterable[str] | None) -> bool:
    if not only:
        return kind != FIX_ALL_KIND  # fix-all is a source action: only when asked for
    return any(kind == k or kind.startswith(f"{k}.") for k in only)


def _overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (
        b.start.line,
        b.start.character,
    ) <= (a.end.line, a.end.character)


def _ignore_edit(ls: RefereeServer, document: Document, finding: Finding) -> types.TextEdit:
    """Append (or extend) a ``referee: ignore[...]`` comment on the finding's line."""
    row = min(finding.span.start.line - 1, len(document.lines) - 1)
    line = document.lines[row]
    marker = "referee: ignore["
    if marker in line:
        start = line.index(marker) + len(marker)
        close = line.find("]", start)
        if close != -1:
            column = index_to_units(line, close, ls.encoding)
            position = types.Position(line=row, character=column)
            return types.TextEdit(
                range=types.Range(start=position, end=position), new_text=f", {finding.code}"
            )
    end = types.Position(line=row, character=index_to_units(line, len(line), ls.encoding))
    comment = (
        f"  # referee: ignore[{finding.code}]"
        if document.kind == "python"
        else f" <!-- referee: ignore[{finding.code}] -->"
    )
    return types.TextEdit(range=types.Range(start=end, end=end), new_text=comment)


def _fix_all_edits(ls: RefereeServer, document: Document, result: Result) -> list[types.TextEdit]:
    """Every safe fix, skipping any that overlaps one already taken."""
    lines = document.text.split("\n")
    taken: list[types.Range] = []
    edits: list[types.TextEdit] = []
    for finding in result.findings:
        if finding.fix is None or finding.fix.applicability != "safe":
            continue
        fix_edits = ls.edits(lines, finding.fix)
        if any(_overlaps(e.range, t) for e in fix_edits for t in taken):
            continue
        taken.extend(e.range for e in fix_edits)
        edits.extend(fix_edits)
    return edits


def _finding_key(finding: Any) -> list[Any]:
    span = finding.span
    return [finding.code, span.start.line, span.start.column, span.end.line, span.end.column]


def _offered_finding(result: Result, data: dict[str, Any]) -> Any:
    """The finding a code action was offered for, in the current result: the same code
    at the same place. A re-check of the same version (the settings changed) may have
    dropped or reordered findings, so the index alone could name another one."""
    key = data.get("finding")
    index = data.get("index")
    if (
        isinstance(index, int)
        and 0 <= index < len(result.findings)
        and _finding_key(result.findings[index]) == key
    ):
        return result.findings[index]
    return next((f for f in result.findings if _finding_key(f) == key), None)


def _action_edit(ls: RefereeServer, data: dict[str, Any]) -> types.WorkspaceEdit | None:
    """The edit a code action's ``data`` describes, against the current document; None if
    the document changed since the action was offered."""
    uri = data["uri"]
    document = ls.documents.get(uri)
    result = ls.results.get(uri)
    if document is None or result is None or document.version != data.get("version"):
        return None
    if data["action"] == "fixAll":
        edits = _fix_all_edits(ls, document, result)
    else:
        finding = _offered_finding(result, data)
        if finding is None:  # re-checked since (new settings), and that finding is gone
            return None
        if data["action"] == "fix" and finding.fix is not None:
            edits = ls.edits(document.text.split("\n"), finding.fix)
        else:
            edits = [_ignore_edit(ls, document, finding)]
    if not ls.document_changes:  # the client takes only the unversioned form
        return types.WorkspaceEdit(changes={uri: edits})
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri, version=document.version
                ),
                edits=edits,
            )
        ]
    )


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND],
        resolve_provider=True,
    ),
)
async def code_action(
    ls: RefereeServer, params: types.CodeActionParams
) -> list[types.CodeAction] | None:
    uri = params.text_document.uri
    document = ls.documents.get(uri)
    if document is None:
        return None
    result = await ls.current_result(uri)
    if result is None:
        return None
    only = params.context.only
    lines = document.text.split("\n")
    actions: list[types.CodeAction] = []
    base = {"uri": uri, "version": result.version}

    def offer(title: str, kind: str, data: dict[str, Any], **extra: Any) -> None:
        action = types.CodeAction(title=title, kind=kind, data={**base, **data}, **extra)
        if not ls.lazy_code_actions:
            action.edit = _action_edit(ls, action.data)
        actions.append(action)

    if _wanted(types.CodeActionKind.QuickFix.value, only):
        for index, finding in enumerate(result.findings):
            diagnostic = ls.diagnostic(finding, lines)
            # The lines the request covers, not only the underlined columns: "ignore on
            # this line" must be on offer with the cursor anywhere on the line.
            first, last = params.range.start.line, params.range.end.line
            on_lines = first <= diagnostic.range.start.line <= last
            if not (on_lines or _overlaps(diagnostic.range, params.range)):
                continue
            if finding.fix is not None:
                offer(
                    f"{finding.fix.message} ({finding.code})",
                    types.CodeActionKind.QuickFix.value,
                    {"action": "fix", "index": index, "finding": _finding_key(finding)},
                    diagnostics=[diagnostic],
                    is_preferred=finding.fix.applicability == "safe",
                )
            offer(
                f"Ignore {finding.code} on this line",
                types.CodeActionKind.QuickFix.value,
                {"action": "ignore", "index": index, "finding": _finding_key(finding)},
                diagnostics=[diagnostic],
            )
        actions.extend(ls.arbitration.code_actions(ls, uri, params))
        actions.extend(ls.judge.code_actions(ls, uri, params))  # accept/reject in review
        actions.extend(ls.execution.code_actions(ls, uri, params))  # counterexample as a test
    if _wanted(FIX_ALL_KIND, only) and any(
        f.fix is not None and f.fix.applicability == "safe" for f in result.findings
    ):
        offer("referee: fix all safe fixes", FIX_ALL_KIND, {"action": "fixAll"})
    return actions


@server.feature(types.CODE_ACTION_RESOLVE)
def code_action_resolve(ls: RefereeServer, action: types.CodeAction) -> types.CodeAction:
    if isinstance(action.data, dict) and "uri" in action.data:
        action.edit = _action_edit(ls, action.data)
    return action


# ---------------------------------------------------------------------- commands


@server.command("referee.checkWorkspace")
async def check_workspace(ls: RefereeServer, *args: Any) -> dict[str, int]:
    """Check every file of every workspace folder, with progress; cancellable."""
    from referee.checks import runner  # the CLI's walker, gitignore and all

    window = ls.client_capabilities.window
    token: str | None = None  # clients without window/workDoneProgress still get the result
    if window and window.work_done_progress:
        token = f"referee-check-{uuid.uuid4()}"  # a token is used for one run only
        try:
            await ls.work_done_progress.create_async(token)
        except Exception:
            token = None
    targets: list[runner.Target] = []
    for folder in ls.folders():
        targets.extend(runner.collect([folder], ls.settings_for(folder / "_")))
    if token:
        ls.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(title="referee: checking", cancellable=True, percentage=0),
        )
    files = findings = 0
    loop = asyncio.get_running_loop()
    try:
        for index, target in enumerate(targets):
            if token and ls.work_done_progress.tokens[token].cancelled():
                break
            settings = ls.settings_for(target.path.resolve())
            view = ls.project.view(settings, settings.relative(target.path), target.path)
            file_result = await loop.run_in_executor(
                ls.thread_pool, runner.check_file, target, settings, view
            )
            files += 1
            findings += len(file_result.findings)
            uri = target.path.resolve().as_uri()
            if uri not in ls.documents and not ls.pull_mode:
                lines = _read_lines(target.path)
                ls.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(
                        uri=uri,
                        diagnostics=[ls.diagnostic(f, lines) for f in file_result.findings],
                    )
                )
            if token and index % 10 == 0:
                ls.work_done_progress.report(
                    token,
                    types.WorkDoneProgressReport(
                        message=f"{index + 1}/{len(targets)} files",
                        percentage=int(100 * (index + 1) / max(len(targets), 1)),
                    ),
                )
    finally:
        if token:
            ls.work_done_progress.end(
                token, types.WorkDoneProgressEnd(message=f"{files} files, {findings} findings")
            )
            ls.work_done_progress.tokens.pop(token, None)
    return {"files": files, "findings": findings}


lsp_judge.register(server)  # the L2 judge on save, the L3 review queue
lsp_arbitration.register(server)  # tests on save, failing-test diagnostics, referee.arbitrate
lsp_execution.register(server)  # mutation and differential checks on save, referee.execution.*


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        return [""]


# ---------------------------------------------------------------------- logging


class ClientLogHandler(logging.Handler):
    """Sends log records to the client's log (window/logMessage)."""

    _TYPES: ClassVar[dict[int, types.MessageType]] = {
        logging.ERROR: types.MessageType.Error,
        logging.WARNING: types.MessageType.Warning,
        logging.INFO: types.MessageType.Info,
    }

    def __init__(self, ls: RefereeServer, level: int) -> None:
        super().__init__(level)
        self.ls = ls
        self._sending = False

    def emit(self, record: logging.LogRecord) -> None:
        if self._sending:
            return  # a failure to send that logs would try to send again, forever
        kind = next(
            (t for lvl, t in sorted(self._TYPES.items(), reverse=True) if record.levelno >= lvl),
            types.MessageType.Log,
        )
        self._sending = True
        try:
            self.ls.window_log_message(
                types.LogMessageParams(type=kind, message=self.format(record))
            )
        except Exception:  # never let logging take the server down
            self.handleError(record)
        finally:
            self._sending = False


def serve(
    transport: str = "stdio", host: str = "127.0.0.1", port: int = 2087, log_level: str = "info"
) -> None:
    level = getattr(logging, log_level.upper())
    handler = ClientLogHandler(server, level)
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
        server.start_io(*_private_stdio())


def _private_stdio() -> tuple[Any, Any]:
    """The LSP stream on private copies of stdin and stdout; fd 0 then reads /dev/null
    and fd 1 writes to stderr. A child process (git, pytest) can no longer read the
    client's messages, and a library that prints, or points fd 1 at /dev/null while it
    loads (llama-cpp-python does, around a model load), can no longer corrupt or swallow
    the server's replies (tests/test_lsp_fuzz.py)."""
    import os
    import sys

    try:
        stdin = os.fdopen(os.dup(0), "rb")
        stdout = os.fdopen(os.dup(1), "wb")
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)
    except OSError:  # no such descriptors (an embedding host): the standard streams
        return sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    return stdin, stdout
