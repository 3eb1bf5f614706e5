"""Running the guard over a working tree: what changed since the base, and each changed
file checked against its baseline with the REF3xx rules."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from referee.checks import ledger
from referee.checks.config import Settings
from referee.checks.guard import baseline as git
from referee.checks.guard.context import GuardContext
from referee.checks.guard.facts import TestFacts, squash, test_facts
from referee.checks.guard.rules import elsewhere_keys
from referee.checks.source import SourceFile, Unreadable, decode, kind_of, read_bytes

PYTEST_CONFIG_FILES = frozenset({"pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini"})


@dataclass
class GuardPlan:
    """Everything the guard compares, read from git once per run."""

    repo: Path
    base: str
    shared: GuardContext  # what every file's context holds but its baseline
    contexts: dict[Path, GuardContext] = field(default_factory=dict)  # absolute path -> ctx
    deleted: set[Path] = field(default_factory=set)
    ledger_problems: list[str] = field(default_factory=list)


def _relevant(path: str) -> bool:
    name = PurePosixPath(path).name
    return path.endswith(".py") or name in PYTEST_CONFIG_FILES


def plan(settings: Settings, base: str, start: Path) -> GuardPlan:
    """Compare the working tree under ``start``'s repository with ``base``."""
    repo = git.toplevel(start.resolve())
    git.resolve(repo, base)
    changes = [c for c in git.changed_files(repo, base) if _relevant(c.path)]
    before = git.read_at(repo, base, sorted({c.old_path for c in changes if c.old_path}))
    found = ledger.read(settings.root)

    def is_test(path: str) -> bool:
        return settings.is_test_file(path)

    current: dict[str, str] = {}
    for change in changes:
        if change.deleted:
            continue
        try:
            current[change.path] = (repo / change.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    elsewhere: dict[str, str] = {}
    by_name: dict[str, TestFacts] = {}
    for path, text in current.items():
        if is_test(path):
            for facts in test_facts(SourceFile(path, text), path).values():
                if facts.collected:
                    by_name.setdefault(facts.name, facts)
                    for key in elsewhere_keys(facts):
                        elsewhere.setdefault(key, facts.id)
    test_text = "".join(
        squash(_read(repo / p)) for p in git.tracked_files(repo) if p.endswith(".py") and is_test(p)
    )
    shared = GuardContext(
        baseline=None,
        base=base,
        certificates=tuple(found.certificates),
        elsewhere=elsewhere,
        test_text=test_text,
        by_name=by_name,
    )
    result = GuardPlan(repo, base, shared, ledger_problems=found.problems)
    for change in changes:
        path = (repo / change.path).resolve()
        result.contexts[path] = replace(
            shared, baseline=before.get(change.old_path) if change.old_path else None
        )
        if change.deleted:
            result.deleted.add(path)
    return result


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def current_source(path: Path, display: str, deleted: bool, settings: Settings) -> SourceFile:
    """The file as it is now; a deleted file is checked as empty (all its tests gone)."""
    kind = kind_of(display)
    if deleted:
        return SourceFile(display, "", kind)
    try:
        limit = settings.config.max_file_size
        return SourceFile(display, decode(read_bytes(path, limit), kind, limit), kind)
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror or exc}") from None
