"""The project index in the language server: one per project root, kept current.

Built once per workspace folder off the event loop (the same summaries the CLI makes),
then updated one module at a time: an open document's entry is made from its text when
it is opened and saved. When an entry changes, the other open documents are checked
again; their view of the project (``FileView``) is part of their incremental check's
key, so only those whose view changed do real work.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from referee.checks import runner
from referee.checks.config import Settings
from referee.checks.project import EMPTY_VIEW, FileView, ProjectIndex, summarize
from referee.checks.source import SourceFile

log = logging.getLogger(__name__)


class ProjectIndexes:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._indexes: dict[Path, ProjectIndex] = {}
        self._built: set[Path] = set()

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
        facts = summarize(source, relpath)
        with self._lock:
            index = self._indexes.setdefault(settings.root, ProjectIndex())
            if index.modules.get(relpath) == facts:
                return False
            index.update(facts)
            return True

    def build(self, folder: Path, settings: Settings, open_sources: dict[str, SourceFile]) -> None:
        """Index every Python file of ``folder`` (blocking: run it off the event loop);
        ``open_sources`` (relpath → text in the editor) win over the files on disk."""
        if settings.root in self._built:
            return
        targets = runner.collect([folder], settings)
        index = runner.build_index(targets, settings)
        for relpath, source in open_sources.items():
            if source.kind == "python":
                index.update(summarize(source, relpath))
        with self._lock:
            self._indexes[settings.root] = index
            self._built.add(settings.root)
        log.info("project index of %s: %d modules", folder, len(index.modules))

    def forget(self) -> None:
        with self._lock:
            self._indexes.clear()
            self._built.clear()
