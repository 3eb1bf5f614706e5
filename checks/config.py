"""The one configuration loader: find ``[tool.referee]`` (or ``referee.toml``), validate it,
and answer per-file questions (which rules, which contracts, is it a test module).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ValidationError

from referee.checks.configuration import DEFAULT_TEST_FILES, Contract, RefereeConfig, default_config
from referee.checks.guard import pytestconfig
from referee.checks.models import Severity
from referee.checks.project import EMPTY_VIEW, FileView
from referee.checks.rule import Rule

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

CONFIG_FILES = ("referee.toml", ".referee.toml", "pyproject.toml")

# Directories nobody wants checked; `exclude` adds to these.
DEFAULT_EXCLUDE = (
    ".git/",
    ".hg/",
    ".svn/",
    ".venv/",
    "venv/",
    ".tox/",
    ".nox/",
    "__pycache__/",
    "node_modules/",
    "build/",
    "dist/",
    ".eggs/",
    "*.egg-info/",
    "site-packages/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".referee/",
)


class ConfigError(Exception):
    """A configuration problem, naming the file, the key and what is wrong."""

    def __init__(self, path: Path | None, key: str | None, problem: str) -> None:
        self.path, self.key, self.problem = path, key, problem
        where = str(path) if path is not None else "command line"
        if key:
            where += f": {key}"
        super().__init__(f"{where}: {problem}")


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """gitignore-flavoured globs: ``*`` stays in one path segment, ``**`` crosses them, a
    pattern without ``/`` matches a name at any depth, a trailing ``/`` matches a
    directory (and everything below it) but not a file, and a leading ``/`` anchors the
    pattern to the project root."""
    directory_only = pattern.endswith("/")
    anchored = "/" in pattern.rstrip("/")
    pattern = pattern.strip("/")
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape("["))
                i += 1
            else:
                out.append("[" + pattern[i + 1 : end].replace("!", "^", 1) + "]")
                i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    body = "".join(out)
    prefix = "" if anchored else "(?:.*/)?"
    # Matching a directory matches what is below it, as in .gitignore. Directories are
    # passed with a trailing "/", so a directory-only pattern can tell them from files.
    below = "/.*" if directory_only else "(?:/.*)?"
    return re.compile(f"^{prefix}{body}{below}$")


def glob_match(relpath: str, pattern: str) -> bool:
    return _glob_regex(pattern).match(relpath) is not None


def _format_loc(loc: Sequence[str | int]) -> str:
    key = ""
    for part in loc:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    return key


@dataclass(frozen=True)
class Settings:
    """A validated configuration and the project root it applies to."""

    config: RefereeConfig = field(default_factory=default_config)
    root: Path = field(default_factory=Path.cwd)
    path: Path | None = None  # the file it came from; None for the defaults
    # where ``config.python`` came from when not the file: an editor's ``referee.python``
    python_origin: str | None = None

    @functools.cached_property
    def enabled(self) -> frozenset[str]:
        cfg = self.config
        chosen: set[str] = set()
        for selector in [*cfg.select, *cfg.extend_select]:
            chosen.update(rule.code for rule in _matching(selector))
        for selector in cfg.ignore:
            chosen.difference_update(rule.code for rule in _matching(selector))
        return frozenset(chosen)

    def ignored_for(self, relpath: str) -> set[str]:
        """Codes that ``per-file-ignores`` turns off for this file."""
        ignored: set[str] = set()
        for pattern, selectors in self.config.per_file_ignores.items():
            if glob_match(relpath, pattern):
                for selector in selectors:
                    ignored.update(rule.code for rule in _matching(selector))
        return ignored

    def rules_for(self, relpath: str, kind: str) -> list[Rule]:
        from referee.checks.registry import RULES

        ignored = self.ignored_for(relpath)
        return [
            rule
            for rule in RULES
            if rule.code in self.enabled and rule.code not in ignored and kind in rule.kinds
        ]

    def reports(self, code: str, relpath: str) -> bool:
        """Whether a finding of ``code`` in this file is reported (selection, per-file-ignores)."""
        return code in self.enabled and code not in self.ignored_for(relpath)

    def severity(self, rule: Rule, default: Severity) -> Severity:
        return self.config.severity.get(rule.code, default)

    def contracts_for(self, relpath: str) -> tuple[Contract, ...]:
        return tuple(
            c for c in self.config.contract if any(glob_match(relpath, g) for g in c.globs)
        )

    def is_test_file(self, relpath: str) -> bool:
        """Whether ``relpath`` is a test module: a ``test-files`` glob matches its name (or,
        for a glob with a ``/``, its path from the project root)."""
        name = PurePosixPath(relpath).name
        return any(
            glob_match(relpath if "/" in pattern else name, pattern)
            for pattern in self.config.test_files
        )

    def pytest_view(self, path: str | Path, view: FileView = EMPTY_VIEW) -> FileView:
        """``view`` with what the pytest configuration that governs the file at ``path``
        says of it: whether pytest would collect it as a test module (``python_files``,
        ``testpaths``, ``norecursedirs``) and whether xfails are strict. Unchanged when
        the file is not on disk or no pytest configuration is found; ``collected`` stays
        None when ``test-files`` was configured (the user's word wins)."""
        file = Path(path)
        if not file.is_file():
            return view
        resolved = file.resolve()
        layout = pytest_layout(str(resolved.parent))
        if layout is None:
            return view
        rootdir, settings = layout
        collected = None
        if self.config.test_files == _DEFAULT_TEST_FILES:
            collected = pytestconfig.collects(resolved.relative_to(rootdir).as_posix(), settings)
        strict = pytestconfig.xfail_strict(settings)
        if (collected, strict) == (view.collected, view.xfail_strict):
            return view
        return dataclasses.replace(view, collected=collected, xfail_strict=strict)

    def is_excluded(self, relpath: str) -> bool:
        return any(
            glob_match(relpath, pattern) for pattern in (*DEFAULT_EXCLUDE, *self.config.exclude)
        )

    def wants(self, relpath: str) -> bool:
        """Whether a file found while walking a directory is checked: Python files,
        files an `extend-include` glob names, and files a contract covers."""
        if PurePosixPath(relpath).suffix in (".py", ".pyi"):
            return True
        return any(glob_match(relpath, g) for g in self.config.extend_include) or bool(
            self.contracts_for(relpath)
        )

    def relative(self, path: Path) -> str:
        """``path`` relative to the project root, in posix form (for glob matching)."""
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return path.as_posix()

    def with_sections(self, **sections: BaseModel) -> Settings:
        """The same project with whole sections of its configuration replaced
        (``judge=…``, ``arbitration=…``): a command-line option or an editor setting on top
        of the file. The sections are models already validated."""
        return dataclasses.replace(self, config=self.config.model_copy(update=sections))

    def with_python(self, python: str, origin: str) -> Settings:
        """The same project run with the interpreter ``python`` (an editor's setting,
        named ``origin`` in errors), whatever its file says."""
        return dataclasses.replace(
            self, config=self.config.model_copy(update={"python": python}), python_origin=origin
        )

    def with_overrides(
        self,
        select: Iterable[str] = (),
        extend_select: Iterable[str] = (),
        ignore: Iterable[str] = (),
    ) -> Settings:
        """Command-line ``--select``/``--extend-select``/``--ignore`` on top of the file."""
        update: dict[str, list[str]] = {}
        if select:
            update["select"] = list(select)
        if extend_select:
            update["extend_select"] = [*self.config.extend_select, *extend_select]
        if ignore:
            update["ignore"] = [*self.config.ignore, *ignore]
        if not update:
            return self
        data = self.config.model_dump(by_alias=True)
        data.update({k.replace("_", "-"): v for k, v in update.items()})
        return dataclasses.replace(self, config=validate(data, None))


def walk(
    root: Path, settings: Settings, *, prefix: str = "", for_check: bool = False
) -> Iterator[tuple[str, Path]]:
    """(relative posix path, path) of the files under ``root``, in a stable order, without
    the directories nobody checks: :data:`DEFAULT_EXCLUDE` (virtual environments, build
    output), the configuration's ``exclude`` and hidden ones. ``for_check``: the walk of
    `referee check`, which goes into hidden directories too and leaves out the files the
    exclusions name. Paths are relative to ``root``, after ``prefix`` (``root``'s own path
    from the project root, ``"pkg/"``, when the exclusions must see the whole path)."""
    for directory, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(directory, root)
        rel_dir = prefix if rel_dir == "." else prefix + rel_dir.replace(os.sep, "/") + "/"
        dirnames[:] = sorted(
            d
            for d in dirnames
            if (for_check or not d.startswith(".")) and not settings.is_excluded(f"{rel_dir}{d}/")
        )
        for name in sorted(filenames):
            relpath = f"{rel_dir}{name}"
            if for_check and settings.is_excluded(relpath):
                continue
            yield relpath, Path(directory, name)


_DEFAULT_TEST_FILES = list(DEFAULT_TEST_FILES)


_PROJECT_MARKERS = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "tox.ini",
    "referee.toml",
    ".referee.toml",
    ".git",
)


@functools.lru_cache(maxsize=512)
def pytest_layout(directory: str) -> tuple[Path, dict[str, str]] | None:
    """``(rootdir, settings)`` of the pytest configuration that governs files in
    ``directory`` when pytest runs, without arguments, from their project's root: the
    project is the nearest directory at or above with a ``pyproject.toml``,
    ``setup.py``, ``setup.cfg``, ``tox.ini``, a referee configuration or ``.git``, and
    its configuration the nearest at or above that — so a fixture directory's own
    ``pytest.ini`` (pytest's ``testing/example_scripts``) does not make its files test
    modules. When that configuration lies above the project (a sub-project, an example
    project), pytest runs from elsewhere than its rootdir and ignores ``testpaths``: the
    settings come without it. None when no configuration is found up to the
    repository's top."""
    start = Path(directory)
    folders = (start, *start.parents)
    top = next(
        (i for i, f in enumerate(folders) if any((f / m).exists() for m in _PROJECT_MARKERS)),
        None,
    )
    if top is None:
        return None
    for folder in folders[top:]:
        found = _pytest_settings_in(str(folder))
        if found is not None:
            if folder != folders[top]:
                found = {k: v for k, v in found.items() if k != "testpaths"}
            return folder, found
        if (folder / ".git").exists():
            return None
    return None


@functools.lru_cache(maxsize=512)
def _pytest_settings_in(folder: str) -> dict[str, str] | None:
    """The pytest settings of the configuration files in ``folder`` itself, if any."""
    texts = {}
    for name in pytestconfig.CONFIG_FILES:
        try:
            texts[name] = (Path(folder) / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    found = pytestconfig.effective(texts) if texts else None
    return found[1] if found is not None else None


def forget_pytest_layouts() -> None:
    """Read the pytest configuration files again at the next ask: one of them changed
    (the language server is told so; a ``referee check`` run reads them once)."""
    pytest_layout.cache_clear()
    _pytest_settings_in.cache_clear()


def _matching(selector: str) -> list[Rule]:
    """The rules a selector names. The registry imports every rule's module: a process
    that only reads settings (arbitration, the sandbox) never needs it, and the default
    selection (``ALL``) is checked without it."""
    from referee.checks.registry import matching

    return matching(selector)


def validate(data: dict, path: Path | None, prefix: str = "") -> RefereeConfig:
    try:
        config = RefereeConfig.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = _format_loc([prefix, *error["loc"]] if prefix else error["loc"])
        value = error.get("input")
        problem = error["msg"].removeprefix("Value error, ")
        if error["type"] == "string_pattern_mismatch" and "severity" in error["loc"]:
            problem = f"{value!r} is not a rule code (like REF101)"
        elif error["type"] == "string_pattern_mismatch":
            problem = f"{value!r} is not a rule code or prefix (like REF101 or REF1) or ALL"
        elif error["type"] == "extra_forbidden":
            problem = "unknown key"
        more = len(exc.errors()) - 1
        if more:
            problem += f" (and {more} more problem{'s' if more > 1 else ''})"
        raise ConfigError(path, key, problem) from None
    for key in ("select", "extend_select", "ignore"):
        for selector in getattr(config, key):
            if selector.upper() != "ALL" and not _matching(selector):
                raise ConfigError(
                    path,
                    f"{prefix}.{key.replace('_', '-')}".lstrip("."),
                    f"{selector!r} matches no rule",
                )
    for glob, selectors in config.per_file_ignores.items():
        for selector in selectors:
            if not _matching(selector):
                raise ConfigError(
                    path,
                    f"{prefix}.per-file-ignores.{glob!r}".lstrip("."),
                    f"{selector!r} matches no rule",
                )
    for code in config.severity:
        if not _matching(code):
            raise ConfigError(path, f"{prefix}.severity.{code}".lstrip("."), "no such rule")
    return config


def load_file(path: Path) -> Settings:
    """Read and validate one configuration file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, None, f"cannot read: {exc}") from None
    return load_text(text, path)


def load_text(text: str, path: Path) -> Settings:
    """Validate ``text`` as the configuration file ``path`` (its name says which kind; its
    folder is the project root) — the file as it is, or as it was at a git ref."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(path, None, f"invalid TOML: {exc}") from None
    tool = raw.get("tool")
    if path.name == "pyproject.toml" or (isinstance(tool, dict) and "referee" in tool):
        # pyproject-style, whatever the file is called (``--config ci/pyproject.ci.toml``)
        table = tool.get("referee", {}) if isinstance(tool, dict) else {}
        prefix = "[tool.referee]"
    else:
        table, prefix = raw, ""
    if not isinstance(table, dict):
        raise ConfigError(path, prefix or None, "must be a table")
    return Settings(validate(table, path, prefix), path.parent, path)


def _has_referee_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return "[tool.referee" in text


def find_config(start: Path) -> Path | None:
    """The nearest ``referee.toml``, ``.referee.toml`` or ``pyproject.toml`` with a
    ``[tool.referee]`` table, looking upward from ``start``."""
    start = start.resolve()
    for directory in [start, *start.parents] if start.is_dir() else start.parents:
        for name in CONFIG_FILES:
            candidate = directory / name
            if candidate.is_file() and (name != "pyproject.toml" or _has_referee_table(candidate)):
                return candidate
    return None


def discover(start: Path, explicit: Path | None = None) -> Settings:
    """Settings for a run: ``explicit`` if given, else the nearest configuration file
    above ``start``, else the defaults rooted at ``start``."""
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(explicit, None, "no such file")
        return load_file(explicit)
    found = find_config(start)
    if found is None:
        root = start.resolve()
        return Settings(default_config(), root if root.is_dir() else root.parent, None)
    return load_file(found)
