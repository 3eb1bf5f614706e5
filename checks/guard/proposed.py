"""An edit before it is written: what it would add to the findings of its file.

An agent's hook (``referee hook``) asks this before an `Edit`/`Write` lands: the file as
it would be, checked with L0 and the guard in agent mode against the session's baseline,
exactly as the editor's live guard checks an unsaved buffer (the plan is read from the
working tree as it is; only the edited file's text is the proposed one). Only findings
the edit *introduces* count: an error already in the file on disk is the Stop hook's to
report, not a reason to refuse every later edit of that file (a peer's users' first
complaint: blocks on stale state).

No model and no execution run here: the hook has a deadline.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path

from referee.checks.config import Settings
from referee.checks.engine import Incremental
from referee.checks.guard import baseline as git
from referee.checks.guard import run
from referee.checks.guard.facts import TestFacts
from referee.checks.guard.live import CurrentFacts
from referee.checks.models import Finding, Layer, Severity
from referee.checks.source import SourceFile, kind_of


@dataclass
class Verdict:
    """What a proposed edit would introduce. ``errors`` block it."""

    path: str  # relative to the repository
    errors: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)


def _key(finding: Finding) -> tuple[str, str]:
    # The line moves with an edit above it; the rule and what it says do not.
    return finding.code, finding.message


def _introduced(now: list[Finding], before: list[Finding]) -> list[Finding]:
    left = Counter(_key(f) for f in before)
    out = []
    for finding in now:
        if left[_key(finding)] > 0:
            left[_key(finding)] -= 1
        else:
            out.append(finding)
    return out


def check_proposed(
    settings: Settings, path: Path, proposed: str | None, base: str = "HEAD"
) -> Verdict:
    """The findings that writing ``proposed`` to ``path`` (None: deleting it) would add:
    L0 and the guard in agent mode against ``base``. ``path`` need not exist yet."""
    absolute = path.resolve()
    repo = git.toplevel(absolute.parent if absolute.parent.exists() else Path.cwd())
    try:
        relpath = absolute.relative_to(repo).as_posix()
    except ValueError:  # outside the repository (through a link): nothing to compare
        return Verdict(str(path))
    if kind_of(relpath) != "python":
        return Verdict(relpath)
    now = _findings(settings, repo, absolute, relpath, base, {relpath: proposed}, proposed)
    errors = [f for f in now if f.severity is Severity.ERROR]
    if not errors:
        return Verdict(relpath, warnings=[f for f in now if f.severity is Severity.WARNING])
    # Only what the edit adds counts: the file as it is on disk, checked the same way.
    try:
        current: str | None = absolute.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):  # not there yet, or unreadable: nothing before
        current = None
    before = (
        _findings(settings, repo, absolute, relpath, base, None, current)
        if current is not None and _parses(current)
        else []  # a file that does not parse has no checks to compare: all are the edit's
    )
    added = _introduced(now, before)
    return Verdict(
        relpath,
        errors=[f for f in added if f.severity is Severity.ERROR],
        warnings=[f for f in added if f.severity is Severity.WARNING],
    )


def _parses(text: str) -> bool:
    import ast

    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


# What a warm hook process keeps between edits, per file and side (the proposed text, the
# text on disk): the engine's incremental state, as the language server keeps it per open
# document, so an edit re-reads only the top-level statements it changed.
_WARM: OrderedDict[tuple[str, str, str], Incremental] = OrderedDict()
_WARM_FILES = 32


def _incremental(repo: Path, relpath: str, side: str) -> Incremental:
    key = (str(repo), relpath, side)
    kept = _WARM.pop(key, None) or Incremental()
    _WARM[key] = kept
    while len(_WARM) > _WARM_FILES:
        _WARM.popitem(last=False)
    return kept


def _findings(
    settings: Settings,
    repo: Path,
    absolute: Path,
    relpath: str,
    base: str,
    overrides: dict[str, str | None] | None,
    text: str | None,
) -> list[Finding]:
    from referee.checks.engine import check_source
    from referee.checks.registry import RULES

    kept = _incremental(repo, relpath, "proposed" if overrides else "disk")
    source = SourceFile(relpath, text or "", "python")

    def facts_of(path: str, text: str) -> dict[str, TestFacts] | None:
        if path != relpath or text != source.text:
            return None
        current = kept.store.get("guard-current")
        if not isinstance(current, CurrentFacts):
            current = kept.store["guard-current"] = CurrentFacts()
        return current.tests(source, relpath)

    guard_plan = run.plan(
        settings, base, repo, mode="agent", overrides=overrides, facts_of=facts_of
    )
    checked = guard_plan.settings or settings
    context = guard_plan.contexts.get(absolute)
    if context is None:  # as it is at ``base``: its baseline is that text
        then = git.read_at(repo, base, [relpath]).get(relpath)
        context = replace(guard_plan.shared, baseline=then)
    codes = frozenset(
        rule.code for rule in RULES if rule.layer is Layer.L0 or rule.code.startswith("REF3")
    )
    found = check_source(source, checked, relpath, context, cache=kept)
    return [f for f in found if f.code in codes]


def check_tree(settings: Settings, start: Path, base: str = "HEAD") -> list[Finding]:
    """The guard in agent mode over the working tree against ``base``, as `referee guard
    --strict --no-execute` reports it (paths relative to the repository): the whole
    session's change, at an agent's Stop or after a shell command."""
    from referee.checks.engine import check_source
    from referee.checks.registry import GUARD_CODES

    guard_plan = run.plan(settings, base, start, mode="agent")
    checked = guard_plan.settings or settings
    found: list[Finding] = []
    for path, context in sorted(guard_plan.contexts.items()):
        relpath = path.relative_to(guard_plan.repo).as_posix()
        try:
            source = run.current_source(path, relpath, path in guard_plan.deleted, checked)
        except Exception:
            continue
        found.extend(check_source(source, checked, relpath, context, GUARD_CODES))
    return found
