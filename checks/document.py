"""An open document kept in step with an editor's edits, its parse tree updated in place.

Editors send edits as ranges in (line, character) positions, where a character is counted
in UTF-16 code units (the LSP default), UTF-8 bytes or code points. A :class:`Document`
applies them to its text and, for Python, to its tree-sitter tree with ``Tree.edit`` so
the next parse reuses everything the edit did not touch, and keeps an
:class:`~referee.checks.engine.Incremental` so that the next check re-runs the rules only
on the top-level statements the edits changed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Point, Tree

from referee.checks.engine import Incremental
from referee.checks.source import SourceFile, kind_of, python_parser

Encoding = Literal["utf-16", "utf-8", "utf-32"]


@dataclass(frozen=True)
class Change:
    """Replace ``start``–``end`` (``(line, character)``, 0-based) with ``text``; with no
    range, replace the whole document."""

    text: str
    start: tuple[int, int] | None = None
    end: tuple[int, int] | None = None


def _units_to_index(line: str, units: int, encoding: Encoding) -> int:
    """A character offset in ``encoding`` units to a code-point index into ``line``,
    clamped to the line (editors may send a position past its end)."""
    if encoding == "utf-32":
        return min(units, len(line))
    width = 2 if encoding == "utf-16" else None
    count = 0
    for index, ch in enumerate(line):
        if count >= units:
            return index
        code = ord(ch)
        if width:
            count += 2 if code > 0xFFFF else 1
        else:
            count += 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return len(line)


def index_to_units(line: str, index: int, encoding: Encoding) -> int:
    """A code-point index into ``line`` to a character offset in ``encoding`` units."""
    prefix = line[:index]
    if encoding == "utf-32":
        return len(prefix)
    if encoding == "utf-16":
        return len(prefix.encode("utf-16-le", "surrogatepass")) // 2
    return len(prefix.encode("utf-8", "surrogatepass"))


class Document:
    """Text, version and (for Python) an incrementally maintained tree."""

    def __init__(self, path: str, text: str, version: int | None = None) -> None:
        self.path = path
        self.kind = kind_of(path)
        self.text = text
        self.version = version
        self._lines: list[str] | None = None
        self._tree: Tree | None = None
        # Pass to check_source(..., cache=document.cache): findings of unchanged statements
        # are reused from the previous check. Hold ``cache_lock`` while doing so: a check
        # superseded by a newer one may still be running on another thread, and the cache
        # is one check's state at a time.
        self.cache = Incremental()
        self.cache_lock = threading.Lock()

    @property
    def lines(self) -> list[str]:
        """Lines without their terminators; a final newline gives a last empty line."""
        if self._lines is None:
            self._lines = self.text.split("\n")
        return self._lines

    def _offset(self, line: int, units: int, encoding: Encoding) -> int:
        """Code-point offset into ``text`` of an editor position (clamped to the text)."""
        lines = self.lines
        if line >= len(lines):
            return len(self.text)
        line = max(line, 0)
        start = sum(map(len, lines[:line])) + line
        return start + _units_to_index(lines[line], max(units, 0), encoding)

    def apply(self, changes: list[Change], version: int | None, encoding: Encoding) -> None:
        """Apply an editor's changes in order, as LSP ``didChange`` sends them."""
        for change in changes:
            if change.start is None or change.end is None:
                self.text = change.text
                self._lines = None
                self._tree = None  # nothing to reuse
                continue
            start = self._offset(*change.start, encoding)
            end = max(start, self._offset(*change.end, encoding))
            old = self.text
            self.text = old[:start] + change.text + old[end:]
            self._lines = None
            if self._tree is not None:
                self._edit_tree(old, start, end, change.text)
        self.version = version

    def _edit_tree(self, old: str, start: int, end: int, inserted: str) -> None:
        assert self._tree is not None
        start_byte = len(old[:start].encode("utf-8", "surrogatepass"))
        old_end_byte = start_byte + len(old[start:end].encode("utf-8", "surrogatepass"))
        new_bytes = inserted.encode("utf-8", "surrogatepass")
        self._tree.edit(
            start_byte=start_byte,
            old_end_byte=old_end_byte,
            new_end_byte=start_byte + len(new_bytes),
            start_point=_point(old, start),
            old_end_point=_point(old, end),
            new_end_point=_end_point(_point(old, start), new_bytes),
        )

    def source(self) -> SourceFile:
        """The document as the engine checks it; parsing reuses the previous tree."""
        source = SourceFile(self.path, self.text, self.kind)
        if self.kind == "python":
            parser = python_parser()
            self._tree = (
                parser.parse(source.data)
                if self._tree is None
                else parser.parse(source.data, self._tree)
            )
            if self._tree.root_node.has_error:
                # tree-sitter's error recovery depends on the subtrees it reuses: a tree
                # with an error, reparsed from an edited one, can differ from a fresh parse
                # (an unclosed `"""` read as a string in one and not in the other). The
                # findings must be a full check's, so such a text is parsed afresh.
                self._tree = parser.parse(source.data)
            source._tree = self._tree
        return source


def _point(text: str, index: int) -> Point:
    """tree-sitter's (row, byte column) of a code-point offset into ``text``."""
    row = text.count("\n", 0, index)
    line_start = text.rfind("\n", 0, index) + 1
    return Point(row, len(text[line_start:index].encode("utf-8", "surrogatepass")))


def _end_point(start: Point, inserted: bytes) -> Point:
    newlines = inserted.count(b"\n")
    if not newlines:
        return Point(start.row, start.column + len(inserted))
    return Point(start.row + newlines, len(inserted) - inserted.rfind(b"\n") - 1)
