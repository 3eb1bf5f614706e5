"""Running the guard over a working tree: what changed since the base, and each changed
file checked against its baseline with the REF3xx rules."""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from referee.checks import ledger
from referee.checks.config import Settings
from referee.checks.guard import baseline as git
from referee.checks.guard import codes, impact, live, pytestconfig
from referee.checks.guard.changed_tests import elsewhere_keys
from referee.checks.guard.compare import key_counts
from referee.checks.guard.context import GuardContext
from referee.checks.guard.facts import TestFacts, case_values, test_facts
from referee.checks.guard.normal import squash_lines, unparse
from referee.checks.models import Finding, Severity
from referee.checks.progress import IDLE, Work
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
    settings: Settings | None = None  # the settings the files are checked with
    # changed code under test: path -> (text at the base, text now); None: absent there
    sources: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    changed_tests: tuple[str, ...] = ()  # changed test modules, as they are now


def _relevant(path: str) -> bool:
    name = PurePosixPath(path).name
    return path.endswith(".py") or name in PYTEST_CONFIG_FILES or name == ".pytest.ini"


def guard_settings(settings: Settings, *configs: tuple[str, dict[str, str]] | None) -> Settings:
    """``settings`` with pytest's own ``python_files`` (under its ``testpaths``) added to
    the test-file globs: a test module is one that pytest collects, whatever its name.
    ``configs``: pytest's settings at the base and now (the union is taken, so narrowing
    them does not hide a test from the guard: REF320 reports the narrowing)."""
    extra: list[str] = []
    for config in configs:
        if config is None:
            continue
        patterns, testpaths = pytestconfig.test_file_patterns(config[1])
        for pattern in patterns:
            if testpaths:
                globs = [f"{t}/**/{pattern.rsplit('/', 1)[-1]}" for t in testpaths]
                if "/" in pattern:
                    globs = [f"**/{pattern}"]
            else:
                globs = [f"**/{pattern}" if "/" in pattern else pattern]
            for glob in globs:
                if glob not in extra and glob not in settings.config.test_files:
                    extra.append(glob)
    if not extra:
        return settings
    config = settings.config.model_copy(
        update={"test_files": [*settings.config.test_files, *extra]}
    )
    return replace(settings, config=config)


def plan(
    settings: Settings,
    base: str,
    start: Path,
    mode: str | None = None,
    overrides: dict[str, str | None] | None = None,
    facts_of: Callable[[str, str], dict[str, TestFacts] | None] | None = None,
) -> GuardPlan:
    """Compare the working tree under ``start``'s repository with ``base``. ``mode``:
    "agent" or "default" (None: the configuration's ``guard.mode``). ``overrides``:
    files (relative to the repository) as an edit would leave them, in place of the
    working tree's (None: deleted) — an agent's edit before it is written. ``facts_of``:
    a changed test module's facts where the caller keeps them (None: computed here)."""
    repo = git.toplevel(start.resolve())
    git.resolve(repo, base)
    all_changes = git.changed_files(repo, base)
    if overrides:
        all_changes = _overridden(repo, base, all_changes, overrides)
    changes = [c for c in all_changes if _relevant(c.path)]
    config_paths = [n for n in pytestconfig.CONFIG_FILES]
    wanted = sorted({c.old_path for c in changes if c.old_path} | set(config_paths))
    before = git.read_at(repo, base, wanted)
    found = ledger.read(settings.root)

    pytest_before = pytestconfig.effective({n: before.get(n) for n in config_paths})
    pytest_now = pytestconfig.effective({n: _read_or_none(repo / n) for n in config_paths})
    settings = guard_settings(settings, pytest_before, pytest_now)

    def is_test(path: str) -> bool:
        return settings.is_test_file(path)

    current = _current_texts(repo, changes, overrides)
    tracked, texts = _tracked(repo, current, overrides, is_test)
    fixtures = _fixtures(texts)
    now = _tests_now(current, is_test, facts_of)
    base_tests = _base_tests(changes, before, is_test)
    base_ids = {t.id for t in base_tests}
    changed_tests = {c.path for c in changes if is_test(c.path)}
    test_text, base_test_text = _test_texts(texts, changes, before, changed_tests, is_test)
    source_changes, others = _source_changes(repo, base, all_changes, before, current, is_test)
    effect = impact.Impact(repo, source_changes, others, is_test, lambda: tracked)

    shared = GuardContext(
        baseline=None,
        base=base,
        certificates=tuple(found.certificates),
        elsewhere=now.elsewhere,
        test_text=test_text,
        by_name=now.by_name,
        mode=mode or settings.config.guard.mode,
        fixtures=fixtures,
        counts_before=key_counts(base_tests, fixtures),
        counts_now=key_counts(now.tests, fixtures),
        new_tests={t.id: t for t in now.tests if t.id not in base_ids},
        impact=effect,
        pytest_before=pytest_before,
        pytest_now=pytest_now,
        test_files=tuple(sorted(p for p, t in texts.items() if is_test(p) and _TESTS.search(t))),
        base_test_text=base_test_text,
        current_tests=now.by_path,
    )
    result = GuardPlan(
        repo,
        base,
        shared,
        ledger_problems=found.problems,
        settings=settings,
        sources=source_changes,
        changed_tests=tuple(sorted(p for p in changed_tests if p in current)),
    )
    for change in changes:
        path = (repo / change.path).resolve()
        result.contexts[path] = replace(
            shared, baseline=before.get(change.old_path) if change.old_path else None
        )
        if change.deleted:
            result.deleted.add(path)
    return result


def _current_texts(
    repo: Path, changes: list[git.Changed], overrides: dict[str, str | None] | None
) -> dict[str, str]:
    """The changed files' texts now (an override's in place of the working tree's);
    a deleted or unreadable file has none."""
    current: dict[str, str] = {}
    for change in changes:
        if change.deleted:
            continue
        if overrides and change.path in overrides:
            current[change.path] = overrides[change.path] or ""
            continue
        try:
            current[change.path] = (repo / change.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return current


def _tracked(
    repo: Path,
    current: dict[str, str],
    overrides: dict[str, str | None] | None,
    is_test: Callable[[str], bool],
) -> tuple[list[str], dict[str, str]]:
    """The repository's tracked files (as the overrides leave them), and the text now of
    its test modules and conftest files."""
    tracked = git.tracked_files(repo)
    if overrides:
        tracked = sorted(
            {p for p in tracked if overrides.get(p, "") is not None}
            | {p for p, t in overrides.items() if t is not None}
        )
    texts: dict[str, str] = {}
    for path in tracked:
        if path.endswith(".py") and (is_test(path) or path.endswith("conftest.py")):
            texts[path] = current[path] if path in current else _read(repo / path)
    return tracked, texts


def _base_tests(
    changes: list[git.Changed], before: dict[str, str | None], is_test: Callable[[str], bool]
) -> list[TestFacts]:
    """The tests of the changed test modules as they were at the base."""
    base_tests: list[TestFacts] = []
    for change in changes:
        old = change.old_path
        if old is None or not is_test(old) or not old.endswith(".py") or before.get(old) is None:
            continue
        base_tests.extend(live.baseline(old, old, "python", before[old] or "").tests.values())
    return base_tests


@dataclass
class _TestsNow:
    """The collected tests of the changed test modules, as they are now."""

    tests: list[TestFacts] = field(default_factory=list)
    by_name: dict[str, TestFacts] = field(default_factory=dict)
    elsewhere: dict[str, str] = field(default_factory=dict)  # elsewhere_keys -> a test id
    by_path: dict[str, tuple[str, dict[str, TestFacts]]] = field(default_factory=dict)


def _tests_now(
    current: dict[str, str],
    is_test: Callable[[str], bool],
    facts_of: Callable[[str, str], dict[str, TestFacts] | None] | None,
) -> _TestsNow:
    now = _TestsNow()
    for path, text in current.items():
        if is_test(path) and path.endswith(".py"):
            found_tests = (facts_of(path, text) if facts_of else None) or _test_facts(path, text)
            now.by_path[path] = (text, found_tests)
            for facts in found_tests.values():
                if facts.collected:
                    now.tests.append(facts)
                    now.by_name.setdefault(facts.name, facts)
                    for key in elsewhere_keys(facts):
                        now.elsewhere.setdefault(key, facts.id)
    return now


def _test_texts(
    texts: dict[str, str],
    changes: list[git.Changed],
    before: dict[str, str | None],
    changed_tests: set[str],
    is_test: Callable[[str], bool],
) -> tuple[str, str]:
    """Every test module's text now, and at the base (the changed ones as they were),
    squashed line by line."""
    squashed = {path: _squashed(text) for path, text in texts.items() if is_test(path)}
    test_text = "".join(squashed.values())
    base_test_text = "".join(
        text for path, text in squashed.items() if path not in changed_tests
    ) + "".join(
        squash_lines(before.get(c.old_path) or "")
        for c in changes
        if c.old_path and is_test(c.old_path)
    )
    return test_text, base_test_text


def _source_changes(
    repo: Path,
    base: str,
    all_changes: list[git.Changed],
    before: dict[str, str | None],
    current: dict[str, str],
    is_test: Callable[[str], bool],
) -> tuple[dict[str, tuple[str | None, str | None]], list[str]]:
    """The code under test that changed: Python modules that are not tests (path ->
    (text at the base, text now)), and other files the code may depend on."""
    source_changes: dict[str, tuple[str | None, str | None]] = {}
    others = []
    for change in all_changes:
        path = change.path
        if path.endswith(".py"):
            if is_test(path) or (change.old_path is not None and is_test(change.old_path)):
                continue  # a test module (or one that was) is not the code under test
            old_text = before.get(change.old_path) if change.old_path else None
            if change.old_path and change.old_path not in before:
                old_text = git.read_at(repo, base, [change.old_path]).get(change.old_path)
            source_changes[path] = (old_text, None if change.deleted else current.get(path))
        elif impact.other_change(path):
            others.append(path)
        elif (
            PurePosixPath(path).name in ("pyproject.toml", "setup.cfg")
            and "/" not in path
            and impact.dependencies_changed(
                before.get(change.old_path) if change.old_path else None,
                None if change.deleted else _read_or_none(repo / path),
                PurePosixPath(path).name,
            )
        ):
            others.append(f"{path} (dependencies)")
    return source_changes, others


def _overridden(
    repo: Path, base: str, changes: list[git.Changed], overrides: dict[str, str | None]
) -> list[git.Changed]:
    """``changes`` as they would be with ``overrides`` written: a file the edit brings
    back to its text at ``base`` drops out, one it changes or deletes comes in."""
    at_base = git.read_at(repo, base, sorted(overrides))
    kept = [c for c in changes if c.path not in overrides]
    for path, text in overrides.items():
        then = at_base.get(path)
        if text == then:
            continue
        if text is None:
            if then is not None:
                kept.append(git.Changed(path, path, deleted=True))
            continue
        kept.append(git.Changed(path, path if then is not None else None))
    return kept


@functools.lru_cache(maxsize=256)
def _squashed(text: str) -> str:
    return squash_lines(text)


@functools.lru_cache(maxsize=32)
def _test_facts(path: str, text: str) -> dict[str, TestFacts]:
    """A test module's facts, kept for the same text: a warm hook process plans every
    edit of a file, and the file's other tests do not change between two of them."""
    return test_facts(SourceFile(path, text), path)


_FIXTURE = re.compile(r"fixture\s*\(")
_TESTS = re.compile(r"^\s*(async\s+)?def\s+test|^\s*class\s+Test", re.MULTILINE)


def _fixtures(texts: dict[str, str]) -> dict[str, list[str]]:
    """Parametrized fixtures (``@pytest.fixture(params=[...])`` with a literal list) in
    the test files and conftest.py files: name -> params, canonical."""
    out: dict[str, list[str]] = {}
    for text in texts.values():
        if "params" not in text or not _FIXTURE.search(text):
            continue
        for name, params in _fixtures_in(text):
            out.setdefault(name, params)
    return out


@functools.lru_cache(maxsize=256)
def _fixtures_in(text: str) -> tuple[tuple[str, list[str]], ...]:
    """The parametrized fixtures of one module (kept per text: a warm hook process plans
    every edit, and the other modules do not change between two)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    out: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            if not isinstance(decorator, ast.Call) or not unparse(decorator.func).endswith(
                "fixture"
            ):
                continue
            params = next((k.value for k in decorator.keywords if k.arg == "params"), None)
            if isinstance(params, (ast.List, ast.Tuple)):
                name = next(
                    (
                        k.value.value
                        for k in decorator.keywords
                        if k.arg == "name" and isinstance(k.value, ast.Constant)
                    ),
                    node.name,
                )
                values = [case_values(unparse(e)) for e in params.elts]
                if all(v is not None and len(v) == 1 for v in values):
                    out.setdefault(str(name), [v[0] for v in values])  # type: ignore[index]
    return tuple(out.items())


def _read_or_none(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


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


def execution(
    guard_plan: GuardPlan,
    settings: Settings,
    *,
    strict: bool,
    work: Work = IDLE,
) -> tuple[dict[str, list[Finding]], list[str]]:
    """The guard's execution step (REF334, :mod:`referee.checks.guard.moved`): findings
    by the changed source file's path relative to the repository, and notes on what
    could not be decided. Errors in agent mode (``strict``), warnings otherwise."""
    from referee.checks.arbitration.engine import project_files
    from referee.checks.engine import _unsuppressed
    from referee.checks.execution.run import _finding
    from referee.checks.guard import moved

    if codes.SOURCE_MOVED_TO_TEST not in settings.enabled:
        return {}, []
    sources = {
        path: texts
        for path, texts in guard_plan.sources.items()
        if codes.SOURCE_MOVED_TO_TEST not in settings.ignored_for(path)
    }
    if not any(old and new for old, new in sources.values()):
        return {}, []
    from referee.checks import interpreter
    from referee.checks.config import ConfigError

    try:
        python = interpreter.for_settings(settings)
    except ConfigError as exc:
        return {}, [f"REF334 not run: {exc}"]
    files = project_files(guard_plan.repo, settings)
    outcome = moved.check(
        files,
        sources,
        settings.is_test_file,
        changed_tests=guard_plan.changed_tests,
        work=work,
        python=python,
    )
    found: dict[str, list[Finding]] = {}
    for item in outcome.moved:
        edit = item.edit
        if edit.kind == "flip":
            if edit.before and edit.after:
                what = f"`{edit.before}` changed to `{edit.after}`"
            elif edit.after:
                what = f"`{edit.after}` added"
            else:
                what = f"`{edit.before}` dropped"
            taken = "with the line as it was"
        else:
            what = f"the new literal `{edit.after}`"
            taken = f"with any other value there (`{edit.undo}`)"
        message = (
            f"{item.test} failed at {guard_plan.base} and passes only because of {what}: "
            f"{taken}, it fails on its check again. The change moves exactly the value the "
            "test expects: check that expectation (`referee arbitrate`) before keeping it"
        )
        finding = _finding(
            settings, codes.SOURCE_MOVED_TO_TEST, edit.path, edit.line, message, item.before
        )
        if not strict and finding.severity is Severity.ERROR:
            finding = finding.model_copy(update={"severity": Severity.WARNING})
        found.setdefault(edit.path, []).append(finding)
    for path, findings in list(found.items()):
        context = guard_plan.contexts.get((guard_plan.repo / path).resolve())
        text = sources[path][1] or ""
        found[path] = _unsuppressed(findings, text, context)
    return found, outcome.notes
