"""The guard's facts about both sides of a comparison, computed once and kept.

A REF3xx check compares facts of the baseline (checks/guard/facts.py) with facts of the
text being checked. In the editor the same document is checked on every keystroke against
the same baseline, so:

* the baseline side (its test facts, its functions' bodies, its text without whitespace)
  is computed once per (path, baseline text) and kept in a small LRU cache: a baseline is
  immutable, so the cache cannot go stale, and a new guard plan (HEAD moved, a save)
  with the same baseline text still finds it;
* the current side is kept per open document (:class:`CurrentFacts`, in the engine's
  per-document store) by top-level statement, like the engine's ``Incremental``: a check
  collects only the statements whose text changed, and reuses the facts of the others
  (shifted when they moved) as long as the file-wide facts they were made with (the
  assertion aliases, which functions assert, the module's ``pytestmark``, a parametrize
  table kept in a module constant) are unchanged. The facts are always those
  :func:`~referee.checks.guard.facts.test_facts` gives for the whole text
  (tests/test_guard_live.py holds the two to each other).
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from dataclasses import dataclass, field, replace
from typing import Any

from tree_sitter import Node

from referee.checks.chunks import Chunk, ChunkFacts, chunk_facts, chunks_of
from referee.checks.guard.facts import TestFacts, facts_of, module_value
from referee.checks.guard.markers import module_marks
from referee.checks.guard.normal import squash
from referee.checks.pymodule import (
    PythonModule,
    close_asserting,
    imports_only_unittest,
    merged_ranges,
)
from referee.checks.source import SourceFile


@dataclass(frozen=True)
class FunctionText:
    """A function of a file (nested ones and methods included), as the rules that look for
    new or changed functions (REF320, REF321, REF323) compare them."""

    name: str
    line: int  # 1-based line of its ``def``
    body: str  # the body's text
    squashed: str  # the body without whitespace: what "changed" means
    # An `__eq__`/`__ne__`/`__hash__` that returns a constant (docstrings and comments
    # left out): what REF323 flags when the function is new.
    constant: bool = False


_CONSTANT = re.compile(
    r"^(def__eq__\(self,\w+(:[^)]*)?\).*:return(True|1)|def__ne__\(self,\w+(:[^)]*)?\).*:"
    r"return(False|0)|def__hash__\(self\).*:return\d+)$"
)
_CONSTANT_NAMES = frozenset({"__eq__", "__ne__", "__hash__"})


def _function_texts(source: SourceFile, functions: list[Any]) -> list[FunctionText]:
    out = []
    for fn in functions:
        body = source.node_text(fn.body)
        constant = False
        if fn.name in _CONSTANT_NAMES:  # the pattern names the function
            text = re.sub(
                r"\"\"\".*?\"\"\"|#[^\n]*", "", source.node_text(fn.node), flags=re.DOTALL
            )
            constant = _CONSTANT.match(squash(text)) is not None
        out.append(FunctionText(fn.name, fn.node.start_point.row + 1, body, squash(body), constant))
    return out


# ---------------------------------------------------------------------- the baseline side


@dataclass
class Baseline:
    """What the guard derives from one file's baseline text; computed on first use."""

    source: SourceFile
    relpath: str
    # (line, what is wrong, the line put back in its block or None) when the baseline
    # text does not parse; ``source`` is then the repaired text where one was found.
    unparsable: tuple[int, str, int | None] | None = None
    _tests: dict[str, TestFacts] | None = None
    _bodies: frozenset[tuple[str, str]] | None = None
    _squashed: str | None = None
    _hooks: dict[str, list[str]] | None = None

    @property
    def tests(self) -> dict[str, TestFacts]:
        """Test facts of the baseline (never to be changed by the caller)."""
        if self._tests is None:
            module = PythonModule(self.source, is_test_file=True)
            self._tests = facts_of(
                module, module.functions, self.relpath, module_marks(self.source)
            )
        return self._tests

    @property
    def bodies(self) -> frozenset[tuple[str, str]]:
        """(name, body without whitespace) of every function."""
        if self._bodies is None:
            module = PythonModule(self.source, is_test_file=False)
            self._bodies = frozenset(
                (fn.name, squash(self.source.node_text(fn.body))) for fn in module.functions
            )
        return self._bodies

    @property
    def hook_bodies(self) -> dict[str, list[str]]:
        """The bodies of the functions whose names pytest hooks have (``pytest_*``)."""
        if self._hooks is None:
            module = PythonModule(self.source, is_test_file=False)
            hooks: dict[str, list[str]] = {}
            for fn in module.functions:
                if fn.name.startswith("pytest_"):
                    hooks.setdefault(fn.name, []).append(self.source.node_text(fn.body))
            self._hooks = hooks
        return self._hooks

    @property
    def squashed(self) -> str:
        """The whole baseline without whitespace."""
        if self._squashed is None:
            self._squashed = squash(self.source.text)
        return self._squashed


def baseline(path: str, relpath: str, kind: str, text: str) -> Baseline:
    """The baseline ``text`` of the file ``path`` (checked as ``relpath``), with what the
    guard derives from it, shared by every check against that text. The key is the text
    itself: a string's hash is computed once per string object, and the guard plan hands
    every check of a file the same object. (``path`` names the file in messages only: the
    guard plan, which reads the baselines first, finds the same entry.)"""
    return _baseline(relpath, kind, text)


@functools.lru_cache(maxsize=256)
def _baseline(relpath: str, kind: str, text: str) -> Baseline:
    source = SourceFile(relpath, text, kind)
    # tree-sitter reads a statement out of its block without an error: ask Python.
    problem = _syntax_error(text) if kind == "python" else None
    if problem is None:
        return Baseline(source, relpath)
    line, message = problem
    repaired = _reindented(text, line)
    if repaired is None:
        return Baseline(source, relpath, (line, message, None))
    fixed_text, fixed_line = repaired
    return Baseline(SourceFile(relpath, fixed_text, kind), relpath, (line, message, fixed_line))


def _syntax_error(text: str) -> tuple[int, str] | None:
    try:
        ast.parse(text, "<baseline>")  # through referee's lock (referee/__init__.py)
    except SyntaxError as error:
        return error.lineno or 1, error.msg
    except (ValueError, RecursionError, MemoryError) as error:
        return 1, str(error)
    return None


def _reindented(text: str, line: int) -> tuple[str, int] | None:
    """``text`` with one line near ``line`` (1-based) given the indentation of the line
    before or after it, when that makes the module parse: a statement pulled out of its
    block (the ImpossibleBench mutation, a bad merge) is read where it belonged.
    (the repaired text, the line re-indented) or None."""
    lines = text.split("\n")

    def indent(index: int) -> str:
        return lines[index][: len(lines[index]) - len(lines[index].lstrip())]

    def neighbour(index: int, step: int) -> int | None:
        index += step
        while 0 <= index < len(lines):
            if lines[index].strip() and not lines[index].lstrip().startswith("#"):
                return index
            index += step
        return None

    error = line - 1
    # The line before the error first: the statement pulled out of its block makes the
    # next line's indentation unexpected.
    suspects = [i for i in (neighbour(error, -1), error) if i is not None and i < len(lines)]
    for index in suspects:
        for other in (neighbour(index, -1), neighbour(index, 1)):
            if other is None or indent(other) == indent(index):
                continue
            candidate = [*lines]
            candidate[index] = indent(other) + lines[index].lstrip()
            fixed = "\n".join(candidate)
            if _syntax_error(fixed) is None:
                return fixed, index + 1
    return None


# ---------------------------------------------------------------------- the current side


@dataclass
class _Piece:
    """What one chunk (see ``chunks.chunks_of``) contributes, cached by its text."""

    local: ChunkFacts  # its share of the file-wide facts (aliases, definitions, assertions)
    functions: dict[int, list[FunctionText]]  # by the chunk's first row
    # Test facts, computed on demand: the file-wide facts they were made with, and the
    # facts by the chunk's first row.
    env: tuple[Any, ...] | None = None
    tests: dict[int, dict[str, TestFacts]] = field(default_factory=dict)
    anchored: bool = False  # a message names a line (a silenced assertion): never shifted


def _shift_tests(tests: dict[str, TestFacts], rows: int) -> dict[str, TestFacts]:
    return {
        test_id: replace(
            facts,
            line=facts.line + rows,
            assertions=[replace(a, line=a.line + rows) for a in facts.assertions],
            relaxations=[replace(r, line=r.line + rows) for r in facts.relaxations],
        )
        for test_id, facts in tests.items()
    }


def _shift_functions(functions: list[FunctionText], rows: int) -> list[FunctionText]:
    return [replace(f, line=f.line + rows) for f in functions]


class CurrentFacts:
    """The current side of one document, kept between its checks (not thread-safe: the
    engine checks a document one check at a time)."""

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None  # (relpath, unittest-only, aliases)
        self._pieces: dict[bytes, _Piece] = {}
        self._aliases: frozenset[str] = frozenset()
        self._file_env: tuple[Any, ...] | None = None  # what the last tests were made with
        # The last check's text and results, for a check of the same text.
        self._text: str | None = None
        self._functions: list[FunctionText] = []
        self._tests: dict[str, TestFacts] | None = None
        self._state: tuple[Any, ...] = ()  # what the last update leaves the tests to do
        self.recollected = 0  # chunks collected again in the last update (for tests)

    def functions(
        self, source: SourceFile, relpath: str, chunks: list[Chunk] | None = None
    ) -> list[FunctionText]:
        """Every function of ``source``, in file order. ``chunks``: ``chunks.chunks_of``
        of ``source``, when the caller has them."""
        self._update(source, relpath, chunks)
        return self._functions

    def tests(
        self, source: SourceFile, relpath: str, chunks: list[Chunk] | None = None
    ) -> dict[str, TestFacts]:
        """``test_facts(source, relpath)``, from what changed since the last call."""
        self._update(source, relpath, chunks)
        if self._tests is None:
            if self._state[0] is not source:  # the same text, checked again: update anew
                self._text = None
                self._update(source, relpath, chunks)
            self._tests = self._test_facts(*self._state)
        return self._tests

    # ------------------------------------------------------------------ the update

    def _update(self, source: SourceFile, relpath: str, chunks: list[Chunk] | None) -> None:
        if source.text == self._text and self._key is not None and self._key[0] == relpath:
            return
        root = source.tree.root_node
        unittest_only = imports_only_unittest(source.text)
        if root.type != "module" or self._key is None or self._key[:2] != (relpath, unittest_only):
            self._pieces = {}
            self._aliases = frozenset()
        chunks = chunks_of(source) if chunks is None else chunks
        pieces = self._pieces
        fresh = [i for i, chunk in enumerate(chunks) if chunk.broken or chunk.key not in pieces]
        module = self._module(source, chunks, fresh, unittest_only)
        found = chunk_facts(module, chunks, fresh)
        local = [found[i] if i in found else pieces[c.key].local for i, c in enumerate(chunks)]
        aliases = frozenset(alias for f in local for alias in f.aliases)
        if aliases != self._aliases:
            # Every call to an alias is an assertion: collect everything anew.
            self._aliases, pieces = aliases, {}
            fresh = list(range(len(chunks)))
            module = self._module(source, chunks, fresh, unittest_only)
            found = chunk_facts(module, chunks, fresh)
            local = [found[i] for i in fresh]
        self._key = (relpath, unittest_only, aliases)
        defined = frozenset(name for f in local for name in f.defined)
        asserting = close_asserting(
            {name for f in local for name in f.asserting},
            [candidate for f in local for candidate in f.candidates],
            defined,
        )
        module.use_file_facts(defined, asserting)
        by_chunk = self._by_chunk(module, chunks, fresh)

        now: dict[bytes, _Piece] = {}
        placed: list[_Piece] = []
        self._functions = []
        for i, chunk in enumerate(chunks):
            piece = now.get(chunk.key)
            if piece is None:
                if i in found:
                    functions = _function_texts(source, by_chunk.get(i, []))
                    piece = _Piece(found[i], {chunk.first_row: functions})
                else:
                    piece = pieces[chunk.key]
                    if chunk.first_row not in piece.functions:
                        row, there = next(iter(piece.functions.items()))
                        piece.functions = {
                            chunk.first_row: _shift_functions(there, chunk.first_row - row)
                        }
                if not chunk.broken:  # a broken chunk's tree depends on more than its text
                    now[chunk.key] = piece
            elif chunk.first_row not in piece.functions:  # the same text twice
                row, there = next(iter(piece.functions.items()))
                piece.functions[chunk.first_row] = _shift_functions(there, chunk.first_row - row)
            placed.append(piece)
            self._functions.extend(piece.functions[chunk.first_row])
        self._tests = None
        self._state = (source, relpath, chunks, placed, module, fresh, defined, asserting)
        self._pieces = now
        self._text = source.text
        self.recollected = len(fresh)

    def _test_facts(
        self,
        source: SourceFile,
        relpath: str,
        chunks: list[Chunk],
        placed: list[_Piece],
        module: PythonModule,
        collected: list[int],
        defined: frozenset[str],
        asserting: frozenset[str],
    ) -> dict[str, TestFacts]:
        marks = module_marks(source)
        marks_key = (tuple(marks[0]), tuple(marks[1]))

        def lookup_key(name: str) -> tuple[str, str | None]:
            node = module_value(source, name)
            if node is None:
                return name, None
            return name, f"{node.type}:{node.has_error}:{source.node_text(node)}"

        def env_of(piece: _Piece, lookups: tuple[tuple[str, str | None], ...]) -> tuple[Any, ...]:
            depends = piece.local.depends
            return (depends & asserting, depends & defined, marks_key, lookups)

        # A piece's env is its dependencies (fixed by its text) met with these: when they
        # are the last check's, only its parametrize tables can have changed.
        file_env = (asserting, defined, marks_key)
        same_file_env = file_env == self._file_env
        self._file_env = file_env
        fresh = set(collected)
        redo: list[int] = []
        for i, (chunk, piece) in enumerate(zip(chunks, placed, strict=True)):
            if i in fresh or chunk.broken or piece.env is None:
                redo.append(i)
                continue
            lookups = piece.env[3]
            if lookups or not same_file_env:
                now = tuple(lookup_key(name) for name, _ in lookups)
                if env_of(piece, now) != piece.env:
                    redo.append(i)
                    continue
            if chunk.first_row not in piece.tests:
                if piece.anchored:
                    redo.append(i)
                    continue
                row, there = next(iter(piece.tests.items()))
                piece.tests[chunk.first_row] = _shift_tests(there, chunk.first_row - row)
        if redo and redo != collected:
            module = self._module(source, chunks, redo, module.unittest_only)
            module.use_file_facts(defined, asserting)
        by_chunk = self._by_chunk(module, chunks, redo)
        for i in redo:
            chunk, piece = chunks[i], placed[i]
            looked: dict[str, tuple[str, str | None]] = {}

            def lookup(
                name: str, looked: dict[str, tuple[str, str | None]] = looked
            ) -> Node | None:
                looked[name] = lookup_key(name)
                return module_value(source, name)

            facts = facts_of(module, by_chunk.get(i, []), relpath, marks, lookup)
            env = env_of(piece, tuple(looked.values()))
            if piece.env != env:
                piece.tests = {}
            piece.env = env
            piece.tests[chunk.first_row] = facts
            piece.anchored = any(
                a.silenced is not None for f in facts.values() for a in f.assertions
            )
        merged: dict[str, TestFacts] = {}
        for chunk, piece in zip(chunks, placed, strict=True):
            merged.update(piece.tests[chunk.first_row])
        for piece in placed:  # forget the rows a chunk has left
            if len(piece.tests) > 1:
                rows = {c.first_row for c, p in zip(chunks, placed, strict=True) if p is piece}
                piece.tests = {r: t for r, t in piece.tests.items() if r in rows}
        return merged

    # ------------------------------------------------------------------ helpers

    def _module(
        self, source: SourceFile, chunks: list[Chunk], indices: list[int], unittest_only: bool
    ) -> PythonModule:
        return PythonModule(
            source,
            True,
            ranges=merged_ranges(chunks, indices),
            aliases=self._aliases,
            unittest_only=unittest_only,
        )

    @staticmethod
    def _by_chunk(
        module: PythonModule, chunks: list[Chunk], indices: list[int]
    ) -> dict[int, list[Any]]:
        """``module``'s functions by the chunk (among ``indices``) they lie in."""
        starts = [chunks[i].start for i in indices]
        out: dict[int, list[Any]] = {}
        for fn in module.functions:
            at = bisect.bisect_right(starts, fn.node.start_byte) - 1
            if at >= 0 and fn.node.start_byte < chunks[indices[at]].end:
                out.setdefault(indices[at], []).append(fn)
        return out
