"""The guard in the editor: baselines read from git once, refreshed when HEAD moves.

The language server asks for a :class:`GuardContext` per document it checks. The first
ask in a repository reads the whole plan (changed files, their baselines, the
certificates) with a few git processes; later asks are served from memory until HEAD,
the index or the ledger changes, or a file is saved.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from pathlib import Path

from referee.checks.config import Settings
from referee.checks.guard import baseline as git
from referee.checks.guard import run
from referee.checks.guard.context import GuardContext
from referee.checks.ledger import LEDGER

log = logging.getLogger("referee.server")


def _stamp(repo: Path, root: Path) -> tuple[float, ...]:
    """Cheap proof that HEAD, the index and the ledger are as they were."""
    git_dir = repo / ".git"
    head = git_dir / "HEAD"
    paths = [head, git_dir / "index", git_dir / "packed-refs", root / LEDGER]
    try:
        ref = head.read_text(encoding="utf-8").strip()
        if ref.startswith("ref: "):
            paths.append(git_dir / ref[5:])
    except OSError:
        pass
    stamp = []
    for path in paths:
        try:
            stamp.append(path.stat().st_mtime_ns)
        except OSError:
            stamp.append(0)
    return tuple(stamp)


@dataclass
class _Entry:
    stamp: tuple[float, ...]
    plan: run.GuardPlan
    extra: dict[Path, GuardContext]


class LiveGuard:
    def __init__(self, base: str = "HEAD") -> None:
        self.base = base
        self._repos: dict[Path, Path | None] = {}  # directory -> repository (or none)
        self._plans: dict[Path, _Entry] = {}

    def _repo_of(self, path: Path) -> Path | None:
        directory = path.parent
        if directory not in self._repos:
            try:
                self._repos[directory] = git.toplevel(directory)
            except git.GitError:
                self._repos[directory] = None
        return self._repos[directory]

    def invalidate(self) -> None:
        """A file was saved or the configuration changed: re-read on the next ask."""
        self._plans.clear()

    def context_for(self, path: Path, settings: Settings) -> GuardContext | None:
        """The baseline and surroundings of ``path``, or None outside a git repository."""
        repo = self._repo_of(path)
        if repo is None:
            return None
        stamp = _stamp(repo, settings.root)
        entry = self._plans.get(repo)
        if entry is None or entry.stamp != stamp:
            try:
                plan = run.plan(settings, self.base, repo)
            except git.GitError as exc:
                log.info("guard off for %s: %s", repo, exc)
                return None
            entry = self._plans[repo] = _Entry(stamp, plan, {})
        context = entry.plan.contexts.get(path.resolve())
        if context is not None:
            return context
        # Unchanged on disk (the editor may hold unsaved edits): its baseline is its
        # committed text.
        resolved = path.resolve()
        if resolved not in entry.extra:
            try:
                relpath = resolved.relative_to(repo).as_posix()
                text = git.read_at(repo, self.base, [relpath]).get(relpath)
            except (ValueError, git.GitError):
                text = None
            entry.extra[resolved] = replace(entry.plan.shared, baseline=text)
        return entry.extra[resolved]
