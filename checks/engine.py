"""The functional core: text and settings in, findings out. No I/O happens here.

:func:`check_source` checks a whole file. Given an :class:`Incremental` (one per open
document), it re-runs the rules only on the top-level statements an edit changed and
reuses the findings of the others; the result is always what a full check of the same
text gives.
"""

from __future__ import annotations

import bisect
import functools
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tree_sitter import Node

from referee.checks.chunks import Chunk, ChunkFacts, chunk_facts, chunks_of
from referee.checks.config import Settings
from referee.checks.configuration import DEFAULT_TEST_FILES
from referee.checks.guard.context import GuardContext
from referee.checks.models import Finding, Fix, Span
from referee.checks.project import EMPTY_VIEW, FileView
from referee.checks.pymodule import (
    PythonModule,
    close_asserting,
    imports_only_unittest,
    merged_ranges,
)
from referee.checks.registry import GUARD_CODES
from referee.checks.rule import STATEMENT, Context, Rule, Violation
from referee.checks.shape.markup import fenced_blocks, split_lines
from referee.checks.source import SourceFile

# `# referee: ignore` (every rule) or `# referee: ignore[REF101, REF102]` on the line a
# finding starts on. In Markdown the same words may stand in an HTML comment, or in the
# info string of a fenced block's opening line (```` ```text referee: ignore[REF130] ````),
# where they cover every line of the block.
_SUPPRESSION = re.compile(r"referee:\s*ignore(?!-)(?:\[([A-Za-z0-9,\s]*)\])?")


_FENCE_SUPPRESSION = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[^\n]*referee:\s*ignore", re.MULTILINE)


def _codes_on(line: str) -> tuple[bool, frozenset[str] | None]:
    """Whether ``line`` has a suppression comment, and the codes it names (None: every
    code)."""
    match = _SUPPRESSION.search(line)
    if match is None:
        return False, frozenset()
    codes = match.group(1)
    if codes is None:
        return True, None
    return True, frozenset(c.strip().upper() for c in codes.split(",") if c.strip())


def _fence_cover(text: str, lines: list[str]) -> dict[int, int]:
    """0-based row inside a fenced block whose opening line has a suppression comment →
    that opening row."""
    if not _FENCE_SUPPRESSION.search(text):
        return {}
    return {
        row: first
        for first, last in fenced_blocks(lines)
        if _SUPPRESSION.search(lines[first])
        for row in range(first + 1, last + 1)
    }


def _commenting(row: int, lines: list[str], cover: dict[int, int]) -> list[int]:
    """The rows whose suppression comments may apply to a finding on ``row``."""
    own = [row] if 0 <= row < len(lines) else []
    return own + ([cover[row]] if row in cover else [])


def suppressions(text: str) -> dict[int, frozenset[str] | None]:
    """1-based line → suppressed codes on that line (None: every code)."""
    if "referee:" not in text:
        return {}
    lines = split_lines(text)
    cover = _fence_cover(text, lines)
    found: dict[int, frozenset[str] | None] = {}
    for row in range(len(lines)):
        named = []
        for commenting in _commenting(row, lines, cover):
            has, codes = _codes_on(lines[commenting])
            if has:
                named.append(codes)
        if named:
            found[row + 1] = None if None in named else frozenset().union(*named)
    return found


def _is_suppressed(finding: Finding, table: dict[int, frozenset[str] | None]) -> bool:
    if finding.span.start.line not in table:
        return False
    codes = table[finding.span.start.line]
    return codes is None or finding.code in codes


def _unsuppressed(
    findings: list[Finding], text: str, guard: GuardContext | None = None
) -> list[Finding]:
    """``findings`` less those a suppression comment on their first line (or on the
    opening fence of the block it is in) silences; only those lines are read (the rows
    :func:`suppressions` numbers). A guard finding is silenced only by a comment line that
    was already there at the base (the same line, whitespace aside): a weakening must not
    come with its own waiver."""
    if not findings or "referee:" not in text:
        return findings
    lines = split_lines(text)
    cover = _fence_cover(text, lines)
    at_base: set[str] | None = None
    kept = []
    for finding in findings:
        for row in _commenting(finding.span.start.line - 1, lines, cover):
            has, codes = _codes_on(lines[row])
            if not has or (codes is not None and finding.code not in codes):
                continue
            # a change may not silence the guard's rules with a comment it adds
            if guard is None or finding.code not in GUARD_CODES:
                break
            if at_base is None:
                at_base = {line.strip() for line in (guard.baseline or "").splitlines()}
            if lines[row].strip() in at_base:
                break
        else:
            kept.append(finding)
    return kept


def unhonoured_waivers(findings: Iterable[Finding], text: str) -> dict[int, str]:
    """The suppression comments that name a guard finding ``check_source`` kept anyway —
    a comment on a line that was not at the base, which :func:`_unsuppressed` does not
    honour: 1-based line → the comment as written (``referee: ignore[REF310]``), once per
    line however many findings start there."""
    lines = text.splitlines()
    found: dict[int, str] = {}
    for finding in findings:
        row = finding.span.start.line - 1
        if finding.code not in GUARD_CODES or not 0 <= row < len(lines):
            continue
        match = _SUPPRESSION.search(lines[row])
        if match is None:
            continue
        codes = match.group(1)
        if codes is None or finding.code in {
            c.strip().upper() for c in codes.split(",") if c.strip()
        }:
            found.setdefault(row + 1, match.group(0))
    return found


def _sort(findings: list[Finding]) -> list[Finding]:
    findings.sort(key=lambda f: (f.span.start.line, f.span.start.column, f.code))
    return findings


def _finding(rule: Rule, violation: Violation, path: str, settings: Settings) -> Finding:
    severity = settings.severity(rule, violation.severity or rule.severity)
    return Finding(
        code=rule.code,
        name=rule.name,
        layer=rule.layer,
        severity=severity,
        message=violation.message,
        path=path,
        span=violation.span,
        evidence=violation.evidence,
        fix=violation.fix,
        url=rule.url,
    )


def _context(
    source: SourceFile,
    settings: Settings,
    relpath: str,
    guard: GuardContext | None,
    module: Any = None,
    store: dict[str, object] | None = None,
    project: FileView = EMPTY_VIEW,
) -> Context:
    ctx = Context(
        source=source,
        config=settings.config,
        relpath=relpath,
        is_test_file=source.kind == "python" and is_test_module(settings, source, relpath, project),
        contracts=settings.contracts_for(relpath),
        root_name=settings.root.name,
        guard=guard,
        store=store,
        project=project,
    )
    if module is not None:
        ctx.__dict__["module"] = module  # what ``Context.module`` would build, given
    return ctx


# A `tests.py` is a test module only when it uses a test framework: in a package that is
# not a test tree it is as likely Jinja's `tests.py` (template tests) or a registry.
_USES_TEST_FRAMEWORK = re.compile(
    r"^[ \t]*(?:import|from)[ \t]+(?:unittest|pytest|_pytest|django\.test|twisted\.trial)\b",
    re.MULTILINE,
)


def is_test_module(
    settings: Settings, source: SourceFile, relpath: str, project: FileView = EMPTY_VIEW
) -> bool:
    """Whether the rules treat a Python file as a test module: a file that pytest's
    configuration governing it collects (its ``python_files``, ``testpaths``,
    ``norecursedirs``: ``project.collected``, read at the I/O edge), or, without one, a
    file a ``test-files`` glob matches — a ``tests.py`` only when it imports a test
    framework."""
    if project.collected is not None:
        return project.collected
    if not settings.is_test_file(relpath):
        return False
    if relpath.rsplit("/", 1)[-1] != "tests.py" or settings.config.test_files != _DEFAULT_GLOBS:
        return True
    return _USES_TEST_FRAMEWORK.search(source.text) is not None


_DEFAULT_GLOBS = list(DEFAULT_TEST_FILES)


def _run(ctx: Context, rules: Iterable[Rule], settings: Settings) -> list[Finding]:
    return [
        _finding(rule, violation, ctx.source.path, settings)
        for rule in rules
        for violation in rule.check(ctx)
    ]


def check_source(
    source: SourceFile,
    settings: Settings,
    relpath: str | None = None,
    guard: GuardContext | None = None,
    only: frozenset[str] | None = None,
    cache: Incremental | None = None,
    project: FileView = EMPTY_VIEW,
    keep: dict[str, Any] | None = None,
) -> list[Finding]:
    """Run every enabled rule (or those of them in ``only``) on one decoded file and return
    its findings, sorted. ``guard`` gives the baseline the REF3xx rules compare with.
    ``cache``: the :class:`Incremental` of the document ``source`` is a version of; the
    findings are the same, computed from what changed since its last check. ``project``:
    what the project index says about this file (checks/project.py). ``keep``: a dict
    that receives the :class:`PythonModule` the rules built (``"module"``), for a caller
    that summarises the same file next."""
    relpath = relpath if relpath is not None else source.path
    if cache is not None and only is None and source.kind == "python":
        return cache.check(source, settings, relpath, guard, project)
    ctx = _context(source, settings, relpath, guard, project=project)
    rules = [
        rule
        for rule in settings.rules_for(relpath, source.kind)
        if only is None or rule.code in only
    ]
    findings = _sort(_unsuppressed(_run(ctx, rules, settings), source.text, guard))
    if keep is not None and "module" in ctx.__dict__:
        keep["module"] = ctx.module
    return findings


def check_text(text: str, path: str, settings: Settings | None = None) -> list[Finding]:
    """Convenience for callers holding text (editors, tests): check it as ``path``."""
    return check_source(SourceFile(path, text), settings or Settings())


# ---------------------------------------------------------------------- incremental checks

# A message that names a line ("the `try` on line 12") is only reused where it was made.
_CITES_LINE = re.compile(r"\blines?\s+\d")


@dataclass(frozen=True)
class _Job:
    """One incremental check's file and what it is checked with: what its two paths
    (:meth:`IncrementalEngine._full`, :meth:`IncrementalEngine._check`) share."""

    source: SourceFile
    settings: Settings
    relpath: str
    guard: GuardContext | None
    project: FileView
    chunks: list[Chunk]

    def context(self, store: dict[str, object], module: Any = None) -> Context:
        return _context(
            self.source, self.settings, self.relpath, self.guard, module, store, self.project
        )

    @functools.cached_property
    def rules(self) -> list[Rule]:
        return self.settings.rules_for(self.relpath, self.source.kind)

    def run(self, ctx: Context, *, statement: bool) -> list[Finding]:
        """The findings of the rules whose findings are cached by chunk (``statement``),
        or of the others, which see the whole file every time."""
        chosen = [r for r in self.rules if (r.scope == STATEMENT) == statement]
        return _run(ctx, chosen, self.settings)

    def unsuppressed(self, findings: list[Finding]) -> list[Finding]:
        """The check's result: the findings no suppression comment silences, in order."""
        return _sort(_unsuppressed(findings, self.source.text, self.guard))


@dataclass
class _Entry:
    facts: ChunkFacts
    signature: tuple[frozenset[Any], ...]  # the file-wide facts its findings were made with
    placed: dict[int, list[Finding]] = field(default_factory=dict)  # first row -> findings
    anchored: bool = False  # a message names a line: reuse only at the same row
    broken: bool = False  # made from a chunk with a syntax error: never reused


class _FileFacts:
    """What an incremental check gives the file-wide rules as ``ctx.module``: the whole
    file's comments and suspicious constructs from the chunks' facts; anything else from a
    :class:`PythonModule` of the whole file, built on first use."""

    def __init__(
        self,
        source: SourceFile,
        is_test_file: bool,
        chunks: list[Chunk],
        facts: list[ChunkFacts],
        project: FileView,
    ) -> None:
        self.source = source
        self.is_test_file = is_test_file
        self.project = project
        self._chunks = chunks
        self._facts = facts
        self._module: PythonModule | None = None

    def _full(self) -> PythonModule:
        if self._module is None:
            self._module = PythonModule(
                self.source,
                self.is_test_file,
                external=self.project.asserting,
                xfail_strict=self.project.xfail_strict,
            )
        return self._module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._full(), name)

    @property
    def suspicious(self) -> list[Node]:
        return self._full().suspicious if any(f.suspicious for f in self._facts) else []

    @property
    def comments(self) -> list[Node]:
        root = self.source.tree.root_node
        nodes = []
        for chunk, facts in zip(self._chunks, self._facts, strict=True):
            for start, end in facts.comments:
                node = root.descendant_for_byte_range(chunk.start + start, chunk.start + end)
                if (
                    node is None
                    or node.type != "comment"
                    or node.start_byte != chunk.start + start
                    or node.end_byte != chunk.start + end
                ):
                    return self._full().comments
                nodes.append(node)
        return nodes


def shifted(findings: list[Finding], rows: int) -> list[Finding]:
    """``findings`` moved down by ``rows`` lines (up, when negative), their fixes too."""

    def span(s: Span) -> Span:
        return Span(
            start=s.start.model_copy(update={"line": s.start.line + rows}),
            end=s.end.model_copy(update={"line": s.end.line + rows}),
        )

    def fix(f: Fix | None) -> Fix | None:
        if f is None:
            return None
        edits = tuple(e.model_copy(update={"span": span(e.span)}) for e in f.edits)
        return f.model_copy(update={"edits": edits})

    return [f.model_copy(update={"span": span(f.span), "fix": fix(f.fix)}) for f in findings]


class _Stale(Exception):
    """The cache cannot answer for this text: check the whole file."""


class Incremental:
    """What :func:`check_source` keeps between checks of one document, to re-check only the
    top-level statements whose text changed. Thread-safe: checks of one document run one
    at a time.

    The file is cut into chunks, the whole lines of each top-level statement. A chunk's
    findings (from the rules whose ``scope`` is ``"statement"``) are cached by its text, with the
    file-wide facts they were made with; a chunk that moved keeps its findings, shifted.
    A check collects and checks only the chunks that are new, those whose facts changed
    (a helper they call stopped asserting), and, as context, those that override their
    methods. The other rules run on the whole file every time; suppression comments are
    applied to the result. A change in the assertion aliases, in whether the module
    imports only unittest, or in the settings re-checks everything.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._identity: tuple[Any, ...] | None = None
        self._entries: dict[bytes, _Entry] = {}
        self._aliases: frozenset[str] = frozenset()
        self._unittest_only = False
        self._globals: tuple[Any, ...] = ()  # (defined, asserting, offered) of the last check
        self.rechecked = 0  # chunks whose rules ran in the last check (for tests, benchmarks)
        self.store: dict[str, object] = {}  # the rules' own caches (``Context.store``)

    def check(
        self,
        source: SourceFile,
        settings: Settings,
        relpath: str | None = None,
        guard: GuardContext | None = None,
        project: FileView = EMPTY_VIEW,
    ) -> list[Finding]:
        relpath = relpath if relpath is not None else source.path
        with self._lock:
            # A change elsewhere in the project that this file's findings depend on (a
            # helper that stopped asserting, an override removed) re-checks it all.
            identity = (settings, relpath, source.path, source.kind, project)
            unittest_only = imports_only_unittest(source.text)
            job = _Job(source, settings, relpath, guard, project, chunks_of(source))
            if (
                self._identity == identity
                and unittest_only == self._unittest_only
                # A tree whose root is an error has no top-level statements to go by.
                and source.tree.root_node.type == "module"
            ):
                try:
                    return self._check(job, unittest_only)
                except _Stale:
                    pass
            if identity != self._identity:
                self.store = {}
            self._identity = identity
            self._unittest_only = unittest_only
            return self._full(job)

    # ------------------------------------------------------------------ the two paths

    def _full(self, job: _Job) -> list[Finding]:
        chunks = job.chunks
        ctx = job.context(self.store)
        ctx.memo["chunks"] = chunks  # for the rules' own per-statement caches
        module = ctx.module
        local = job.run(ctx, statement=True)
        whole = job.run(ctx, statement=False)
        everything = list(range(len(chunks)))
        facts = chunk_facts(module, chunks, everything)
        by_chunk = _by_chunk(local, chunks, set(everything))
        assert by_chunk is not None, "every statement lies in a chunk"
        defined, asserting = module.defined_names, module.asserting_functions
        offered = _offered(facts.values())
        self._entries = {}
        for i, chunk in enumerate(chunks):
            entry = self._entries.get(chunk.key)
            if entry is None:
                signature = _signature(facts[i], defined, asserting, offered)
                entry = self._entries[chunk.key] = _Entry(facts[i], signature)
            _place(entry, chunk, by_chunk.get(i, []))
        self._aliases = frozenset(alias for f in facts.values() for alias in f.aliases)
        self._globals = (defined, asserting, offered)
        self.rechecked = len(chunks)
        return job.unsuppressed(local + whole)

    def _check(self, job: _Job, unittest_only: bool) -> list[Finding]:
        source, chunks, project = job.source, job.chunks, job.project
        entries = self._entries
        is_test_file = is_test_module(job.settings, source, job.relpath, project)
        new = [
            i
            for i, chunk in enumerate(chunks)
            if chunk.broken
            or (entry := entries.get(chunk.key)) is None
            or entry.broken
            or (entry.anchored and chunk.first_row not in entry.placed)
        ]
        module = self._module(source, is_test_file, chunks, new, unittest_only, project)
        found = chunk_facts(module, chunks, new)
        facts = [found[i] if i in found else entries[c.key].facts for i, c in enumerate(chunks)]
        if frozenset(alias for f in facts for alias in f.aliases) != self._aliases:
            raise _Stale  # every call to an alias is an assertion: collect everything anew
        defined = frozenset(name for f in facts for name in f.defined)
        asserting = close_asserting(
            {name for f in facts for name in f.asserting} | (project.asserting - defined),
            [candidate for f in facts for candidate in f.candidates],
            defined,
        )
        offered = _offered(facts)
        file_facts = (defined, asserting, offered)
        redo, signatures = self._redo(chunks, facts, new, file_facts)
        context = _context_chunks(facts, redo, offered)
        if redo | context != set(new):
            module = self._module(
                source, is_test_file, chunks, sorted(redo | context), unittest_only, project
            )
        module.use_file_facts(defined, asserting)
        local = job.run(job.context(self.store, module), statement=True)
        by_chunk = _by_chunk(local, chunks, redo | context)
        if by_chunk is None:
            raise _Stale
        entries_now, findings = self._placed(chunks, facts, signatures, redo, by_chunk)
        self._entries = entries_now
        self._globals = file_facts
        self.rechecked = len(redo)
        ctx = job.context(self.store, _FileFacts(source, is_test_file, chunks, facts, project))
        ctx.memo["chunks"] = chunks
        findings.extend(job.run(ctx, statement=False))
        return job.unsuppressed(findings)

    def _redo(
        self,
        chunks: list[Chunk],
        facts: list[ChunkFacts],
        new: list[int],
        file_facts: tuple[frozenset[str], frozenset[str], dict[tuple[str, str], int]],
    ) -> tuple[set[int], dict[int, tuple[frozenset[Any], ...]]]:
        """The chunks to check again — the new ones, and those whose file-wide facts
        changed (a helper they call stopped asserting) — and each one's signature."""
        defined, asserting, offered = file_facts
        signatures = {i: _signature(facts[i], defined, asserting, offered) for i in new}
        redo = set(new)
        if file_facts != self._globals:  # the chunks that depend on what changed
            for i, chunk in enumerate(chunks):
                if i not in redo:
                    signatures[i] = _signature(facts[i], defined, asserting, offered)
                    if signatures[i] != self._entries[chunk.key].signature:
                        redo.add(i)
        return redo, signatures

    def _placed(
        self,
        chunks: list[Chunk],
        facts: list[ChunkFacts],
        signatures: dict[int, tuple[frozenset[Any], ...]],
        redo: set[int],
        by_chunk: dict[int, list[Finding]],
    ) -> tuple[dict[bytes, _Entry], list[Finding]]:
        """The entries of this check's chunks, and their findings: those just made for
        the chunks checked again, the cached ones (shifted if the chunk moved) for the
        others."""
        entries = self._entries
        entries_now: dict[bytes, _Entry] = {}
        findings: list[Finding] = []
        for i, chunk in enumerate(chunks):
            if i in redo:
                entry = entries_now.get(chunk.key)
                if entry is None or entry.signature != signatures[i]:
                    entry = entries_now[chunk.key] = _Entry(facts[i], signatures[i])
                placed = by_chunk.get(i, [])
                _place(entry, chunk, placed)
            else:
                old = entries[chunk.key]
                entry = entries_now.get(chunk.key)
                if entry is None:
                    entry = entries_now[chunk.key] = _Entry(
                        old.facts, old.signature, anchored=old.anchored
                    )
                placed = old.placed.get(chunk.first_row)
                if placed is None:
                    placed = entry.placed.get(chunk.first_row)
                if placed is None:  # moved (never when a message names a line: see `new`)
                    row, there = next(iter(old.placed.items()))
                    placed = shifted(there, chunk.first_row - row)
                entry.placed[chunk.first_row] = placed
            findings.extend(placed)
        return entries_now, findings

    def _module(
        self,
        source: SourceFile,
        is_test_file: bool,
        chunks: list[Chunk],
        indices: list[int],
        unittest_only: bool,
        project: FileView,
    ) -> PythonModule:
        return PythonModule(
            source,
            is_test_file,
            ranges=merged_ranges(chunks, indices),
            aliases=self._aliases,
            unittest_only=unittest_only,
            external=project.asserting,
            xfail_strict=project.xfail_strict,
        )


def _context_chunks(
    facts: list[ChunkFacts], redo: set[int], offered: dict[tuple[str, str], int]
) -> set[int]:
    """The chunks to collect, not check, with those checked again: a method's
    placeholder is a declaration when a subclass here overrides it, and the rule looks
    for the override among the module's functions, so those must be there."""
    overridden = {
        method
        for i in redo
        for method in facts[i].methods
        if offered.get(method, 0) > (method in facts[i].overrides)
    }
    if not overridden:
        return set()
    return {
        j for j, f in enumerate(facts) if j not in redo and not overridden.isdisjoint(f.overrides)
    }


def _offered(facts: Iterable[ChunkFacts]) -> dict[tuple[str, str], int]:
    """(base class, method) -> how many chunks define that method in a subclass of it."""
    offered: dict[tuple[str, str], int] = {}
    for f in facts:
        for pair in f.overrides:
            offered[pair] = offered.get(pair, 0) + 1
    return offered


def _signature(
    facts: ChunkFacts,
    defined: frozenset[str],
    asserting: frozenset[str],
    offered: dict[tuple[str, str], int],
) -> tuple[frozenset[Any], ...]:
    """The file-wide facts a chunk's findings depend on."""
    overridden = frozenset(
        method for method in facts.methods if offered.get(method, 0) > (method in facts.overrides)
    )
    return (facts.depends & asserting, facts.depends & defined, overridden)


def _by_chunk(
    findings: list[Finding], chunks: list[Chunk], wanted: set[int]
) -> dict[int, list[Finding]] | None:
    """Findings by the chunk they start in; None when one lies outside ``wanted``."""
    rows = [c.first_row for c in chunks]
    found: dict[int, list[Finding]] = {}
    for finding in findings:
        at = bisect.bisect_right(rows, finding.span.start.line - 1) - 1
        if at not in wanted:
            return None
        found.setdefault(at, []).append(finding)
    return found


def _place(entry: _Entry, chunk: Chunk, findings: list[Finding]) -> None:
    entry.placed[chunk.first_row] = findings
    entry.broken = entry.broken or chunk.broken
    if any(_CITES_LINE.search(f.message) for f in findings):
        entry.anchored = True
