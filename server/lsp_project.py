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

import logging
import threading
from pathlib import Path

from referee.checks import runner
from referee.checks.config import Settings
from referee.checks.project import EMPTY_VIEW, FileView, ModuleFacts, ProjectIndex, summarize
from referee.checks.source import SourceFile

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
