"""The project index in the language server: one per project root, kept current.

Built once per workspace folder off the event loop (the same summaries the CLI makes),
then updated one module at a time: an open document's entry is made from its text when
it is opened and saved, and a file that is not open is read again from disk when the
client says it changed there (``workspace/didChangeWatchedFiles``: a checkout, a script,
an agent), or dropped when it was deleted. When an entry changes, the other open
documents are checked again; their view of the project (``FileView``) is part of their
incremental check's key, so only those whose view changed do real work.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from referee.checks import runner
from referee.checks.config import Settings
from referee.checks.project import EMPTY_VIEW, FileView, ModuleFacts, ProjectIndex, summarize
from referee.checks.source import SourceFile

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    from referee.checks.document import Document
    from referee.server.options import ClientSettings

log = logging.getLogger(__name__)


class ProjectIndexes:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._indexes: dict[Path, ProjectIndex] = {}
        self._built: set[Path] = set()
        # root -> the entries made or dropped while its index is being built: the build
        # read the files before them, so they are laid over its result.
        self._building: dict[Path, dict[str, ModuleFacts | None]] = {}

    def view(self, settings: Settings, relpath: str, path: Path) -> FileView:
        """The file's view of the project, with what pytest's configuration says of it."""
        with self._lock:
            index = self._indexes.get(settings.root)
            view = index.view(relpath) if index is not None else EMPTY_VIEW
        return settings.pytest_view(path, view)

    def update(self, settings: Settings, relpath: str, source: SourceFile) -> bool:
        """Make ``relpath``'s entry from ``source``; whether it changed."""
        if source.kind != "python":
            return False
        return self.put(settings, relpath, summarize(source, relpath))

    def put(self, settings: Settings, relpath: str, facts: ModuleFacts | None) -> bool:
        """Make ``relpath``'s entry ``facts``, or drop it (None); whether it changed."""
        with self._lock:
            pending = self._building.get(settings.root)
            if pending is not None:
                pending[relpath] = facts
            index = self._indexes.setdefault(settings.root, ProjectIndex())
            if index.modules.get(relpath) == facts:
                return False
            if facts is None:
                index.remove(relpath)
            else:
                index.update(facts)
            return True

    @staticmethod
    def read(
        paths: list[Path], folder: Path, settings: Settings
    ) -> list[tuple[Path, str, ModuleFacts | None]]:
        """The path, relpath and entry of each of ``paths`` that indexing ``folder`` takes,
        as it would make them from the files on disk now (blocking: run it off the event
        loop). The entry is None for a file that cannot be indexed (unreadable, larger than
        max-file-size, gone); the files the walk leaves out (excluded, ignored by git, not
        Python) are not in the list."""
        return [
            (target.path, target.relpath, runner.summarize_file(target, settings))
            for target in runner.indexed_targets(paths, folder, settings)
        ]

    def begin(self, settings: Settings) -> bool:
        """Whether the project's index is still to be built; if so, the entries made from
        now on are kept for the build (:meth:`build`) to lay over what it reads."""
        with self._lock:
            if settings.root in self._built or settings.root in self._building:
                return False
            self._building[settings.root] = {}
            return True

    def build(self, folder: Path, settings: Settings, open_sources: dict[str, SourceFile]) -> None:
        """Index every Python file of ``folder`` (blocking: run it off the event loop);
        ``open_sources`` (relpath → text in the editor) win over the files on disk, and
        the entries made since :meth:`begin` over both. Call :meth:`begin` first."""
        try:
            targets = runner.collect([folder], settings)
            index = runner.build_index(targets, settings)
            for relpath, source in open_sources.items():
                if source.kind == "python":
                    index.update(summarize(source, relpath))
            with self._lock:
                for relpath, facts in self._building.pop(settings.root, {}).items():
                    if facts is None:
                        index.remove(relpath)
                    else:
                        index.update(facts)
                self._indexes[settings.root] = index
                self._built.add(settings.root)
        finally:
            with self._lock:
                self._building.pop(settings.root, None)
        log.info("project index of %s: %d modules", folder, len(index.modules))

    def forget(self) -> None:
        with self._lock:
            self._indexes.clear()
            self._built.clear()
            self._building.clear()


class ProjectIndexing:
    """The project-index part of :class:`~referee.server.lsp.RefereeServer`: the index
    kept current with the editor and the disk, and the documents whose view of the
    project changed checked again."""

    if TYPE_CHECKING:  # what the server provides
        project: ProjectIndexes
        documents: dict[str, Document]
        thread_pool: ThreadPoolExecutor
        pull_mode: bool
        _reindexing: asyncio.Lock

        def folders(self) -> list[Path]: ...
        def folder_of(self, path: Path) -> Path | None: ...
        def client_settings(self, path: Path) -> ClientSettings: ...
        def settings_for(self, path: Path) -> Settings: ...
        def path_of(self, uri: str) -> Path: ...
        def schedule(self, uri: str, delay: float) -> None: ...
        def refresh(self) -> None: ...
        def _oversized(self, uri: str, document: Document) -> bool: ...

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
            self.refresh()
