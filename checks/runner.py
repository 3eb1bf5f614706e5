"""Checking files on disk: discovery, reading, the result cache, and both cores.

This is the engine's I/O edge. Bad files never stop a run: each becomes a skip note
with a reason, and the run goes on.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import pickle
import signal
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from referee import __version__
from referee.checks.atomic import StaleFileError, sha256_bytes, write_text_atomic
from referee.checks.cache import DiskCache
from referee.checks.config import Settings, walk
from referee.checks.engine import check_source
from referee.checks.fixes import apply_fixes
from referee.checks.models import CheckReport, Finding, Severity, SkippedFile, Summary
from referee.checks.project import EMPTY_VIEW, FileView, ModuleFacts, ProjectIndex, summarize
from referee.checks.source import (
    SourceFile,
    Unreadable,
    decode,
    encoding_of,
    kind_of,
    read_bytes,
)

# Below this many files a process pool costs more than it saves.
_PARALLEL_THRESHOLD = 24


@dataclass(frozen=True)
class Target:
    path: Path  # where to read it
    display: str  # how to name it in output
    relpath: str  # relative to the project root, for globs
    named: bool = False  # named by the user, not found by walking a directory
    kind: str = ""  # "python" or "text"; by default from the display name's suffix
    # A document found by walking that no setting asked for: only the whole-file rules.
    whole_file: bool = False
    run_log: bool = False  # a .log found by a walk: only the run-output rules


# Documents a directory walk checks even unasked, with the rules that judge a file as a
# whole — nothing but a placeholder, empty, only punctuation — and no rule that reads
# its lines (markers, test-log words), which ordinary READMEs and changelogs would trip.
# Prose formats only: a `.txt` met on a walk is as often data (an empty resource, a
# fixture in another encoding) as a document.
DOCUMENT_SUFFIXES = frozenset({".md", ".markdown", ".rst"})
WHOLE_FILE_RULES = frozenset({"REF103", "REF104", "REF105"})
# A test run's log found by walking a directory: the rules that read a run's output (a
# run that ran nothing, a run a contract says must pass). An empty log is no finding.
RUN_LOG_SUFFIXES = frozenset({".log"})
RUN_LOG_RULES = frozenset({"REF130", "REF209"})


@dataclass
class FileResult:
    display: str
    findings: list[Finding] = field(default_factory=list)
    skipped: str | None = None
    fixed: int = 0  # fixes applied (``referee check --fix``)
    unfixed: str | None = None  # why fixes found for this file were not written


def _display(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive, on Windows
        return str(path)


def _git_ignored(root: Path, relpaths: list[str]) -> set[str]:
    """The subset of ``relpaths`` that git ignores; empty outside a git work tree."""
    if not relpaths:
        return set()
    try:
        proc = subprocess.run(
            ["git", "check-ignore", "--stdin", "-z"],
            cwd=root,
            input="\0".join(relpaths).encode(),
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return set()
    if proc.returncode not in (0, 1):  # 128: not a repository
        return set()
    return {p for p in proc.stdout.decode("utf-8", "replace").split("\0") if p}


def collect(paths: Sequence[Path], settings: Settings) -> list[Target]:
    """Files to check. A file named on the command line is always checked; files found
    by walking a directory are filtered by ``wants``, ``exclude`` and ``.gitignore``
    (unless the directory named is itself ignored: then the user asked for it)."""
    targets: list[Target] = []
    seen: set[Path] = set()
    for given in paths:
        if not given.is_dir():  # a file, a pipe (`<(…)`), or a path that does not exist
            resolved = given.resolve()
            if resolved not in seen:
                seen.add(resolved)
                targets.append(Target(given, _display(given), settings.relative(given), named=True))
            continue
        walked = [t for t in _walk(given, settings) if t.path.resolve() not in seen]
        seen.update(t.path.resolve() for t in walked)
        if settings.config.respect_gitignore and walked:
            top = given.resolve()
            if not _git_ignored(top.parent, [top.name]):
                ignored = _git_ignored(top, [os.path.relpath(t.path, given) for t in walked])
                walked = [t for t in walked if os.path.relpath(t.path, given) not in ignored]
        targets.extend(walked)
    return targets


def _walk(directory: Path, settings: Settings) -> Iterator[Target]:
    """What a check of ``directory`` reads: its Python files (and those the configuration
    adds), its documents and its run logs, hidden directories included."""
    prefix = settings.relative(directory)
    prefix = "" if prefix in ("", ".") else prefix + "/"
    for relpath, path in walk(directory, settings, prefix=prefix, for_check=True):
        if settings.wants(relpath):
            yield Target(path, _display(path), relpath)
        elif path.suffix.lower() in DOCUMENT_SUFFIXES:
            yield Target(path, _display(path), relpath, kind="text", whole_file=True)
        elif path.suffix.lower() in RUN_LOG_SUFFIXES:
            yield Target(path, _display(path), relpath, kind="text", run_log=True)


def indexed_targets(paths: Sequence[Path], folder: Path, settings: Settings) -> list[Target]:
    """The targets among ``paths`` that indexing ``folder`` (``collect``, then
    ``build_index``) would read; a walk leaves out a file outside ``folder``, in an
    excluded directory, excluded itself, not Python, or ignored by git. Whether a file
    can be read (size, encoding) is :func:`summarize_file`'s to say. The language server
    asks it of files changed on disk, to keep its index as a fresh walk would make it. (A
    ``conftest.py`` left out here that lies above an indexed module is the one file the
    walk's index still takes: ``build_index`` adds it whatever the exclusions say.)"""
    found: list[tuple[str, Target]] = []
    for path in paths:
        try:
            inside = path.relative_to(folder)
        except ValueError:
            continue
        if not inside.parts or kind_of(path.name) != "python":
            continue
        directory = folder
        excluded = False
        for part in inside.parts[:-1]:
            directory = directory / part
            excluded = excluded or settings.is_excluded(f"{settings.relative(directory)}/")
        relpath = settings.relative(path)
        if excluded or settings.is_excluded(relpath) or not settings.wants(relpath):
            continue
        found.append((inside.as_posix(), Target(path, _display(path), relpath)))
    if settings.config.respect_gitignore and found:
        top = folder.resolve()
        if not _git_ignored(top.parent, [top.name]):
            ignored = _git_ignored(top, [inside for inside, _ in found])
            found = [(inside, t) for inside, t in found if inside not in ignored]
    return [target for _, target in found]


def _read(target: Target, settings: Settings) -> bytes | str:
    """The file's bytes, or why it cannot be checked."""
    try:
        return read_bytes(target.path, settings.config.max_file_size, named=target.named)
    except Unreadable as exc:
        return exc.reason
    except FileNotFoundError:
        return "no such file"
    except IsADirectoryError:
        return "is a directory"
    except OSError as exc:
        return f"cannot read: {exc.strerror or exc}"


def check_file(target: Target, settings: Settings, view: FileView = EMPTY_VIEW) -> FileResult:
    data = _read(target, settings)
    if isinstance(data, str):
        return FileResult(target.display, skipped=data)
    return check_bytes(data, target, settings, view)


def check_bytes(
    data: bytes, target: Target, settings: Settings, view: FileView = EMPTY_VIEW
) -> FileResult:
    kind = target.kind or kind_of(target.display)
    try:
        text = decode(data, kind, settings.config.max_file_size)
    except Unreadable as exc:
        return FileResult(target.display, skipped=exc.reason)
    return _check_source(SourceFile(target.display, text, kind), target, settings, view)


def _check_source(
    source: SourceFile,
    target: Target,
    settings: Settings,
    view: FileView,
    keep: dict[str, Any] | None = None,
) -> FileResult:
    if source.kind == "python":
        view = settings.pytest_view(target.path, view)
    try:
        only = WHOLE_FILE_RULES if target.whole_file else RUN_LOG_RULES if target.run_log else None
        findings = check_source(
            source, settings, target.relpath, only=only, project=view, keep=keep
        )
    except RecursionError:
        return FileResult(target.display, skipped="nested too deeply to analyse")
    return FileResult(target.display, findings)


def check_and_summarize(
    target: Target, settings: Settings
) -> tuple[FileResult, ModuleFacts | None]:
    """One read and one parse for both passes of a Python file: its findings as seen
    with an empty view of the project, and its entry in the project index. (A document
    is only checked: its view is always empty.)"""
    kind = target.kind or kind_of(target.display)
    if kind != "python":
        return check_file(target, settings), None
    data = _read(target, settings)
    if isinstance(data, str):
        return FileResult(target.display, skipped=data), None
    try:
        text = decode(data, "python", settings.config.max_file_size)
    except Unreadable as exc:
        return FileResult(target.display, skipped=exc.reason), None
    source = SourceFile(target.display, text, "python")
    keep: dict[str, Any] = {}  # the rules' analysis of the file, reused for its summary
    result = _check_source(source, target, settings, EMPTY_VIEW, keep)
    try:
        return result, summarize(source, target.relpath, keep.get("module"))
    except RecursionError:
        return result, None


def summarize_file(target: Target, settings: Settings) -> ModuleFacts | None:
    """The project index's entry for a Python file; None when it cannot be read."""
    data = _read(target, settings)
    if isinstance(data, str):
        return None
    try:
        text = decode(data, "python", settings.config.max_file_size)
        return summarize(SourceFile(target.display, text, "python"), target.relpath)
    except (Unreadable, RecursionError):
        return None


# ------------------------------------------------------------------------------ cache


def _engine_stamp() -> str:
    """Sizes and mtimes of the engine's own modules: an edited checkout (an editable
    install) must not be served results an older rule computed."""
    package = Path(__file__).parent
    stamps = []
    for module in sorted(package.rglob("*.py")):
        stat = module.stat()
        stamps.append(f"{module.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}")
    return ";".join(stamps)


class ResultCache:
    """Per-project results keyed by path, invalidated by size and mtime, like ruff's.

    One pickle per (project root, configuration, referee version) in the user cache
    directory, an entry of a bounded ``DiskCache`` (``cache-size``): the pickles of
    projects and configurations not checked for longest go first.
    """

    def __init__(self, directory: Path, settings: Settings) -> None:
        fingerprint = hashlib.sha256(
            "\0".join(
                [
                    __version__,
                    _engine_stamp(),
                    str(settings.root.resolve()),
                    settings.config.model_dump_json(),
                ]
            ).encode()
        ).hexdigest()[:24]
        self.store = DiskCache(
            directory, settings.config.cache_size, prefix="check-", suffix=".pickle", fanout=False
        )
        self.key = fingerprint
        self.path = self.store.path(fingerprint)
        # path -> (size, mtime, the project's view of it, its result)
        self.entries: dict[str, tuple[int, int, FileView, FileResult]] = {}
        # path -> (size, mtime, its project index entry)
        self.summaries: dict[str, tuple[int, int, ModuleFacts | None]] = {}
        self.dirty = False
        data = self.store.get(fingerprint)
        if data is None:
            return
        try:
            loaded = pickle.loads(data)
        except (
            EOFError,
            pickle.UnpicklingError,
            AttributeError,
            ImportError,
            TypeError,
            ValueError,
            IndexError,
        ):
            return
        if isinstance(loaded, tuple) and len(loaded) == 2:
            self.entries, self.summaries = loaded

    @staticmethod
    def _stamp(path: Path) -> tuple[int, int] | None:
        try:
            stat = path.stat()
        except OSError:
            return None
        return stat.st_size, stat.st_mtime_ns

    def summary(self, target: Target) -> tuple[bool, ModuleFacts | None]:
        """(found, the file's index entry) when the file did not change since stored."""
        entry = self.summaries.get(str(target.path.resolve()))
        stamp = self._stamp(target.path)
        if entry is None or stamp is None or entry[:2] != stamp:
            return False, None
        return True, entry[2]

    def put_summary(self, target: Target, facts: ModuleFacts | None) -> None:
        stamp = self._stamp(target.path)
        if stamp is not None:
            self.summaries[str(target.path.resolve())] = (*stamp, facts)
            self.dirty = True

    def get(self, target: Target, view: FileView = EMPTY_VIEW) -> FileResult | None:
        entry = self.entries.get(str(target.path.resolve()))
        stamp = self._stamp(target.path)
        if entry is None or stamp is None or entry[:3] != (*stamp, view):
            return None
        result = entry[3]
        # The same file is named differently from another directory (`src/slug.py` from
        # the project, `slug.py` from src/): its findings carry this run's name for it.
        findings = [
            f if f.path == target.display else f.model_copy(update={"path": target.display})
            for f in result.findings
        ]
        return FileResult(target.display, findings, result.skipped)

    def put(self, target: Target, result: FileResult, view: FileView = EMPTY_VIEW) -> None:
        stamp = self._stamp(target.path)
        if stamp is not None:
            self.entries[str(target.path.resolve())] = (*stamp, view, result)
            self.dirty = True

    def save(self) -> None:
        if self.dirty:
            data = pickle.dumps((self.entries, self.summaries), protocol=pickle.HIGHEST_PROTOCOL)
            self.store.put(self.key, data)


# -------------------------------------------------------------------------- execution

_worker_settings: Settings | None = None


def _init_worker(settings: Settings) -> None:
    global _worker_settings
    _worker_settings = settings
    # Ctrl-C reaches the whole process group: the parent stops the run, and the workers
    # must not each print a KeyboardInterrupt traceback of their own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _check_chunk(work: list[tuple[Target, FileView, FileResult | None]]) -> list[FileResult]:
    assert _worker_settings is not None
    return [_check_again(t, _worker_settings, view, first) for t, view, first in work]


# The rules whose findings can change with a file's view of the project: what counts as
# an assertion (imported helpers, conftest fixtures) and what is overridden elsewhere.
VIEW_RULES = frozenset(
    {"REF101", "REF110", "REF111", "REF112", "REF113", "REF114", "REF116", "REF120"}
)


def _check_again(
    target: Target, settings: Settings, view: FileView, first: FileResult | None
) -> FileResult:
    """``target`` checked with ``view``; given its ``first`` result (an empty view),
    only the rules in :data:`VIEW_RULES` run again and the others' findings are kept."""
    if first is None or first.skipped:
        return check_file(target, settings, view)
    data = _read(target, settings)
    if isinstance(data, str):
        return FileResult(target.display, skipped=data)
    try:
        text = decode(data, "python", settings.config.max_file_size)
        source = SourceFile(target.display, text, "python")
        again = check_source(
            source,
            settings,
            target.relpath,
            only=VIEW_RULES,
            project=settings.pytest_view(target.path, view),
        )
    except Unreadable as exc:
        return FileResult(target.display, skipped=exc.reason)
    except RecursionError:
        return FileResult(target.display, skipped="nested too deeply to analyse")
    kept = [f for f in first.findings if f.code not in VIEW_RULES]
    findings = sorted(kept + again, key=lambda f: (f.span.start.line, f.span.start.column, f.code))
    return FileResult(target.display, findings)


def _summarize_chunk(targets: list[Target]) -> list[ModuleFacts | None]:
    assert _worker_settings is not None
    return [summarize_file(t, _worker_settings) for t in targets]


def _check_and_summarize_chunk(
    targets: list[Target],
) -> list[tuple[FileResult, ModuleFacts | None]]:
    assert _worker_settings is not None
    return [check_and_summarize(t, _worker_settings) for t in targets]


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _conftests(targets: Sequence[Target], settings: Settings) -> list[Target]:
    """The conftest.py files above the Python targets, up to the project root, that are
    not targets themselves: pytest hands their fixtures to the targets' tests."""
    named = {t.path.resolve() for t in targets}
    root = settings.root.resolve()
    found: dict[Path, Target] = {}
    for directory in {t.path.resolve().parent for t in targets if kind_of(t.display) == "python"}:
        for folder in (directory, *directory.parents):
            if not folder.is_relative_to(root):
                break
            conftest = folder / "conftest.py"
            if conftest not in named and conftest not in found and conftest.is_file():
                found[conftest] = Target(conftest, _display(conftest), settings.relative(conftest))
    return list(found.values())


class _Pool:
    """A process pool started on first use, for the index's pass and the check's."""

    def __init__(self, settings: Settings, jobs: int) -> None:
        self.settings, self.jobs = settings, jobs
        self._pool: ProcessPoolExecutor | None = None

    def map(self, fn: Callable[[list], list], items: list, local: Callable) -> list:
        if self.jobs <= 1 or len(items) < _PARALLEL_THRESHOLD:
            return [local(item) for item in items]
        if self._pool is None:
            context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
            self._pool = ProcessPoolExecutor(self.jobs, context, _init_worker, (self.settings,))
        # Small chunks keep both cores busy to the end; big files are not all in one.
        size = max(1, min(16, len(items) // (self.jobs * 8)))
        try:
            return [
                out for chunk in self._pool.map(fn, list(_chunks(items, size))) for out in chunk
            ]
        except BaseException:
            # Interrupted: drop the chunks not started rather than wait for them all.
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
            raise

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()


def build_index(
    targets: Sequence[Target], settings: Settings, cache: ResultCache | None = None, pool=None
) -> ProjectIndex:
    """The project index of the Python ``targets`` and the conftest.py files above them,
    each entry reused from ``cache`` while its file is unchanged."""
    python = [t for t in targets if (t.kind or kind_of(t.display)) == "python"]
    python += _conftests(python, settings)
    facts: list[ModuleFacts | None] = []
    todo: list[Target] = []
    for target in python:
        found, entry = cache.summary(target) if cache is not None else (False, None)
        if found:
            facts.append(entry)
        else:
            todo.append(target)
    pool = pool or _Pool(settings, 1)
    fresh = pool.map(_summarize_chunk, todo, lambda t: summarize_file(t, settings))
    for target, entry in zip(todo, fresh, strict=True):
        facts.append(entry)
        if cache is not None:
            cache.put_summary(target, entry)
    return ProjectIndex.of(f for f in facts if f is not None)


def run(
    targets: Sequence[Target],
    settings: Settings,
    jobs: int | None = None,
    cache: ResultCache | None = None,
) -> list[FileResult]:
    """Check ``targets`` on ``jobs`` processes (default: every core), reusing cached
    results for files that did not change and whose view of the project (the index of
    the Python targets and the conftest.py files above them) did not either.

    A Python file read for the first time is checked and summarised in one pass, with
    an empty view of the project; once the index is whole, only the files whose view is
    not empty (they import a helper that asserts, request a conftest fixture that does,
    hold a class a module elsewhere subclasses) are checked again."""
    pool = _Pool(settings, jobs or os.cpu_count() or 1)
    results: dict[int, FileResult] = {}
    try:
        facts: list[ModuleFacts | None] = []
        fresh: list[tuple[int, Target]] = []
        for number, target in enumerate(targets):
            if (target.kind or kind_of(target.display)) != "python":
                # A document's view is always empty: checked once, in the first pass.
                hit = cache.get(target) if cache is not None else None
                if hit is not None:
                    results[number] = hit
                else:
                    fresh.append((number, target))
                continue
            found, entry = cache.summary(target) if cache is not None else (False, None)
            if found:
                facts.append(entry)
            else:
                fresh.append((number, target))
        first = pool.map(
            _check_and_summarize_chunk,
            [t for _, t in fresh],
            lambda t: check_and_summarize(t, settings),
        )
        provisional: dict[int, FileResult] = {}
        for (number, target), (result, entry) in zip(fresh, first, strict=True):
            provisional[number] = result
            if (target.kind or kind_of(target.display)) != "python":
                continue
            facts.append(entry)
            if cache is not None:
                cache.put_summary(target, entry)
        python = [t for t in targets if (t.kind or kind_of(t.display)) == "python"]
        index = ProjectIndex.of(f for f in facts if f is not None)
        for conftest in build_index(_conftests(python, settings), settings, cache).modules.values():
            index.update(conftest)
        todo: list[tuple[int, Target, FileView, FileResult | None]] = []
        for number, target in enumerate(targets):
            if number in results:
                continue
            view = index.view(target.relpath)
            first_result = provisional.get(number)
            if first_result is not None and (view == EMPTY_VIEW or first_result.skipped):
                results[number] = first_result
                if cache is not None:
                    cache.put(target, first_result, view)
                continue
            hit = cache.get(target, view) if cache is not None else None
            if hit is not None:
                results[number] = hit
            else:
                todo.append((number, target, view, first_result))
        second = pool.map(
            _check_chunk,
            [(t, v, r) for _, t, v, r in todo],
            lambda tvr: _check_again(tvr[0], settings, tvr[1], tvr[2]),
        )
    finally:
        pool.close()
    for (number, target, view, _), result in zip(todo, second, strict=True):
        results[number] = result
        if cache is not None:
            cache.put(target, result, view)
    if cache is not None:
        cache.save()
    return [results[i] for i in range(len(targets))]


def report(results: Sequence[FileResult]) -> CheckReport:
    findings = tuple(f for r in results for f in r.findings)
    skipped = tuple(SkippedFile(path=r.display, reason=r.skipped) for r in results if r.skipped)
    by_severity = Counter(f.severity for f in findings)
    return CheckReport(
        version=__version__,
        findings=findings,
        skipped=skipped,
        summary=Summary(
            files_checked=len(results) - len(skipped),
            files_skipped=len(skipped),
            files_with_findings=sum(1 for r in results if r.findings),
            findings=len(findings),
            by_severity={s: by_severity.get(s, 0) for s in Severity},
            by_code=dict(sorted(Counter(f.code for f in findings).items())),
            fixed=sum(r.fixed for r in results),
        ),
    )


# ------------------------------------------------------------------------------ fixes

# Passes of fix-then-check per file; ruff allows more, but referee's fixes never cascade.
MAX_FIX_PASSES = 10


@dataclass
class FixOutcome:
    result: FileResult  # the findings left after fixing, and how many fixes were applied
    before: list[Finding]  # the findings of the text as read
    text: str | None = None  # the fixed text; None when nothing was applied
    encoding: str = "utf-8"  # how the text was stored: write it back the same way


def fix_bytes(
    data: bytes, target: Target, settings: Settings, wanted: Callable[[Finding], bool]
) -> FixOutcome:
    """Check ``data`` and apply the fixes of the findings ``wanted`` accepts; check the
    new text and repeat while fixes that overlapped wait (at most :data:`MAX_FIX_PASSES`).
    A pass whose fixes would turn a file that parsed into one that does not is dropped."""
    kind = target.kind or kind_of(target.display)
    try:
        encoding = encoding_of(data, kind)
        text = decode(data, kind, settings.config.max_file_size)
    except Unreadable as exc:
        return FixOutcome(FileResult(target.display, skipped=exc.reason), [])
    source = SourceFile(target.display, text, kind)
    try:
        findings = before = check_source(source, settings, target.relpath)
    except RecursionError:
        return FixOutcome(FileResult(target.display, skipped="nested too deeply to analyse"), [])
    parsed = kind != "python" or not source.tree.root_node.has_error
    fixed = 0
    problem = None
    for _ in range(MAX_FIX_PASSES):
        step = apply_fixes(text, [f for f in findings if wanted(f)])
        if step.applied == 0:
            break
        candidate = SourceFile(target.display, step.text, kind)
        if parsed and kind == "python" and candidate.tree.root_node.has_error:
            problem = "a fix would have made it fail to parse, so that fix was not applied"
            break
        try:
            findings = check_source(candidate, settings, target.relpath)
        except RecursionError:
            problem = "the fixed text is nested too deeply to analyse, so it was not written"
            break
        text = step.text
        fixed += step.applied
    if problem is None and fixed and any(wanted(f) for f in findings):
        problem = f"fixes were still offered after {MAX_FIX_PASSES} passes; the rest wait"
    if not fixed:
        return FixOutcome(FileResult(target.display, before, unfixed=problem), before)
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        reason = f"the fixed text cannot be written in the file's encoding, {encoding}"
        return FixOutcome(FileResult(target.display, before, unfixed=reason), before)
    result = FileResult(target.display, findings, fixed=fixed, unfixed=problem)
    return FixOutcome(result, before, text, encoding)


def fix_file(target: Target, settings: Settings, wanted: Callable[[Finding], bool]) -> FileResult:
    """Read ``target`` again, fix it (:func:`fix_bytes`) and write it back atomically, but
    only if it still holds what was read: a file changed meanwhile (an editor saved it) is
    not written, and keeps its findings, with the reason in ``unfixed``."""
    data = _read(target, settings)
    if isinstance(data, str):
        return FileResult(target.display, skipped=data)
    outcome = fix_bytes(data, target, settings, wanted)
    if outcome.text is None:
        return outcome.result
    if not target.path.is_file():
        return FileResult(
            target.display,
            outcome.before,
            unfixed="not a regular file (a pipe or a device): fixes are written only to files",
        )
    try:
        write_text_atomic(
            target.path, outcome.text, expected_sha256=sha256_bytes(data), encoding=outcome.encoding
        )
    except StaleFileError:
        return FileResult(
            target.display,
            outcome.before,
            unfixed="it changed while referee was fixing it, so nothing was written; "
            "run referee again",
        )
    except OSError as exc:
        return FileResult(
            target.display, outcome.before, unfixed=f"cannot write it: {exc.strerror or exc}"
        )
    return outcome.result
