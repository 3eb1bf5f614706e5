"""A Python file's top-level statements as chunks: the whole lines of one or more
statements, the unit the two incremental caches (``engine.Incremental``'s findings and
``guard.live``'s test facts) key by text, and what each chunk contributes to the
file-wide facts (assertion aliases, functions defined and asserting, overrides)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from tree_sitter import Node

from referee.checks.project import base_name
from referee.checks.pymodule import Function, PythonModule
from referee.checks.source import SourceFile


class Chunk(NamedTuple):
    """Whole lines holding one or more top-level statements (several when they share a
    line), as byte offsets into the source and 0-based rows."""

    key: bytes  # the lines' text: what the findings inside them depend on
    start: int
    end: int
    first_row: int
    # Holds a syntax error. Its tree then depends on more than its text (error recovery
    # may read far), so it is always checked again, and never reused.
    broken: bool


def chunks_of(source: SourceFile) -> list[Chunk]:
    data = source.data
    chunks: list[Chunk] = []
    start = end = first = last = -1
    broken = False
    root = source.tree.root_node
    for node in root.children:
        row = node.start_point.row
        if start >= 0 and row <= last:
            last = max(last, node.end_point.row)
            end = max(end, node.end_byte)
            broken = broken or node.has_error
            continue
        if start >= 0:
            chunks.append(_close(data, start, end, first, broken))
        start, end = node.start_byte - node.start_point.column, node.end_byte
        first, last = row, node.end_point.row
        broken = node.has_error or root.type != "module"
    if start >= 0:
        chunks.append(_close(data, start, end, first, broken))
    return chunks


def _close(data: bytes, start: int, end: int, first_row: int, broken: bool) -> Chunk:
    line_end = data.find(b"\n", end)
    end = len(data) if line_end < 0 else line_end
    return Chunk(data[start:end], start, end, first_row, broken)


@dataclass(frozen=True)
class ChunkFacts:
    """What one chunk contributes to the file-wide facts, and what it depends on."""

    aliases: frozenset[str]  # `eq = self.assertEqual`
    defined: frozenset[str]  # function names
    asserting: frozenset[str]  # functions that assert themselves, with their enclosers
    candidates: tuple[tuple[str, list[str]], ...]  # the others: (name, callees)
    depends: frozenset[str]  # callees and decorators: whether they assert matters here
    methods: frozenset[tuple[str, str]]  # (class, method) defined here
    overrides: frozenset[tuple[str, str]]  # (base class, method) a subclass here defines
    comments: tuple[tuple[int, int], ...]  # byte ranges, from the chunk's start
    suspicious: bool


def _ancestors(fn: Function) -> Iterable[Function]:
    current: Function | None = fn
    while current is not None:
        yield current
        current = current.parent


def chunk_facts(
    module: PythonModule, chunks: list[Chunk], indices: list[int]
) -> dict[int, ChunkFacts]:
    """Each chunk's facts, from a module that collected (at least) those chunks."""
    starts = [chunks[i].start for i in indices]

    def owner(byte: int) -> int | None:
        at = bisect.bisect_right(starts, byte) - 1
        if at < 0 or byte >= chunks[indices[at]].end:
            return None  # a context chunk's node (see engine.Incremental)
        return indices[at]

    functions: dict[int, list[Function]] = {}
    for fn in module.functions:
        at = owner(fn.node.start_byte)
        if at is not None:
            functions.setdefault(at, []).append(fn)
    comments: dict[int, list[Node]] = {}
    for node in module.comments:
        at = owner(node.start_byte)
        if at is not None:
            comments.setdefault(at, []).append(node)
    aliases: dict[int, set[str]] = {}
    for alias, byte in module.alias_sites:
        at = owner(byte)
        if at is not None:
            aliases.setdefault(at, set()).add(alias)
    suspicious = {owner(node.start_byte) for node in module.suspicious}
    found = {}
    for i in indices:
        fns = functions.get(i, [])
        asserting = frozenset(
            outer.name
            for fn in fns
            if fn.assertions
            for outer in _ancestors(fn)
            if outer.parent is None  # a nested function's name is not visible file-wide
        )
        start = chunks[i].start
        found[i] = ChunkFacts(
            aliases=frozenset(aliases.get(i, ())),
            defined=frozenset(fn.name for fn in fns),
            asserting=asserting,
            candidates=tuple(
                (fn.name, [name for name, _ in fn.calls])
                for fn in fns
                if fn.name not in asserting and fn.parent is None
            ),
            depends=frozenset(
                [name for fn in fns for name, _ in fn.calls]
                + [d.rsplit(".", 1)[-1] for fn in fns for d in fn.decorators]
            ),
            methods=frozenset((fn.class_.name, fn.name) for fn in fns if fn.class_ is not None),
            overrides=frozenset(
                (base_name(base), fn.name)
                for fn in fns
                if fn.class_ is not None
                for base in fn.class_.bases
            ),
            comments=tuple((n.start_byte - start, n.end_byte - start) for n in comments.get(i, ())),
            suspicious=i in suspicious,
        )
    return found
