"""pytest's configuration as pytest reads it: which file holds the settings in effect,
what they say, which files are test files, and the options a tox environment passes.

pytest takes its settings from the first of these at the root that has a pytest
section: ``pytest.ini`` (or ``.pytest.ini``, even without one), ``pyproject.toml``'s
``[tool.pytest.ini_options]`` (or pytest 9's ``[tool.pytest]``), ``tox.ini``'s
``[pytest]``, ``setup.cfg``'s ``[tool:pytest]`` (or the legacy ``[pytest]``).
"""

from __future__ import annotations

import configparser
import fnmatch
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import PurePosixPath

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
DEFAULT_PYTHON_FILES = "test_*.py *_test.py"


def settings_of(name: str, text: str) -> dict[str, str] | None:
    """The pytest settings a configuration file holds (None if it holds none)."""
    try:
        if name == "pyproject.toml":
            tool = tomllib.loads(text).get("tool", {})
            pytest = tool.get("pytest", {})
            table = pytest.get("ini_options")
            if table is None:
                native = {k: v for k, v in pytest.items() if not isinstance(v, dict)}
                if not native:
                    return None
                table = native
            return {
                k: " ".join(map(str, v)) if isinstance(v, list) else _scalar(v)
                for k, v in table.items()
            }
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        parser.read_string(text)
    except (tomllib.TOMLDecodeError, configparser.Error, AttributeError, TypeError):
        return None
    sections = {"setup.cfg": ("tool:pytest", "pytest")}.get(name, ("pytest",))
    for section in sections:
        if parser.has_section(section):
            return dict(parser[section])
    if name in ("pytest.ini", ".pytest.ini"):
        return {}
    return None


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def effective(files: Mapping[str, str | None]) -> tuple[str, dict[str, str]] | None:
    """``(file name, settings)`` pytest uses, given the root's configuration files."""
    for name in CONFIG_FILES:
        text = files.get(name)
        if text is None:
            continue
        found = settings_of(name, text)
        if found is not None:
            return name, found
    return None


def true(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("true", "1", "yes", "on")


def xfail_strict(settings: Mapping[str, str]) -> bool:
    """Whether an xfail test that passes fails the run: ``xfail_strict``, or pytest 9's
    ``strict`` (which turns it on, with the other strictness options)."""
    if "xfail_strict" in settings:
        return true(settings["xfail_strict"])
    return true(settings.get("strict"))


def test_file_patterns(settings: Mapping[str, str] | None) -> tuple[list[str], list[str]]:
    """(python_files patterns, testpaths) of a pytest configuration."""
    if settings is None:
        return DEFAULT_PYTHON_FILES.split(), []
    files = settings.get("python_files", DEFAULT_PYTHON_FILES).split()
    paths = [p.strip("/") for p in settings.get("testpaths", "").split() if p.strip("/")]
    return files, paths


def is_pytest_file(relpath: str, patterns: list[str], testpaths: list[str]) -> bool:
    """Whether pytest would collect ``relpath`` as a test module (run from the root):
    under one of ``testpaths`` (when given), and matching a ``python_files`` pattern —
    by name, or by path for a pattern with a ``/`` (as pytest's ``fnmatch_ex``)."""
    pure = PurePosixPath(relpath)
    if pure.suffix != ".py" or pure.name == "conftest.py":
        return False
    if testpaths and not any(
        relpath == t or relpath.startswith(t + "/") or fnmatch.fnmatch(relpath, t + "/*")
        for t in testpaths
    ):
        return False
    for pattern in patterns:
        if "/" in pattern:
            if fnmatch.fnmatch(relpath, pattern) or fnmatch.fnmatch(relpath, "*/" + pattern):
                return True
        elif fnmatch.fnmatch(pure.name, pattern):
            return True
    return False


DEFAULT_NORECURSEDIRS = "*.egg .* _darcs build CVS dist node_modules venv {arch}"


def norecursedirs(settings: Mapping[str, str] | None) -> list[str]:
    """The directory patterns pytest does not descend into."""
    value = (settings or {}).get("norecursedirs", DEFAULT_NORECURSEDIRS)
    return value.split()


def in_norecursedir(relpath: str, patterns: list[str]) -> bool:
    """Whether a directory above ``relpath`` (relative to the rootdir) matches one of
    ``patterns`` as pytest's ``fnmatch_ex`` does: by its name, or by its path for a
    pattern with a ``/``."""
    parts = PurePosixPath(relpath).parts[:-1]
    for depth in range(1, len(parts) + 1):
        name, path = parts[depth - 1], "/" + "/".join(parts[:depth])
        for pattern in patterns:
            if "/" in pattern:
                if fnmatch.fnmatch(path, "*/" + pattern.strip("/")):
                    return True
            elif fnmatch.fnmatch(name, pattern):
                return True
    return False


def collects(relpath: str, settings: Mapping[str, str] | None) -> bool:
    """Whether pytest, run without arguments at the rootdir, collects ``relpath``
    (relative to it) as a test module: ``python_files``, ``testpaths``, ``norecursedirs``."""
    patterns, paths = test_file_patterns(settings)
    return is_pytest_file(relpath, patterns, paths) and not in_norecursedir(
        relpath, norecursedirs(settings)
    )


# Where pytest's own arguments start in a command line: after `pytest`, `py.test`
# (a path to either included) or `python -m pytest`.
_PYTEST_COMMAND = re.compile(r"(?:^|[\s/])(?:py\.test|pytest)(?=\s|$)|-m\s+pytest(?=\s|$)")


def tox_pytest_arguments(text: str) -> dict[str, str]:
    """Each tox environment's ``commands`` that run pytest: env section -> the
    arguments, joined (``{posargs}`` and substitutions left as written)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return {}
    out: dict[str, str] = {}
    for section in parser.sections():
        if not (section == "testenv" or section.startswith("testenv:")):
            continue
        commands = parser.get(section, "commands", fallback="")
        lines = []
        for line in commands.replace("\\\n", " ").splitlines():
            match = _PYTEST_COMMAND.search(line)
            if match:
                lines.append(line[match.end() :].strip())
        if lines:
            out[section] = " ".join(lines)
    return out


def alone_args(addopts: str) -> list[str]:
    """Options that keep a run referee makes of a few tests in one process and decided by
    those tests alone, whatever the project's ``addopts`` (``addopts`` here: the
    setting, and ``$PYTEST_ADDOPTS`` where the run sees it) add:

    - ``-n 0`` where they hand the tests to pytest-xdist's workers (``-n auto``,
      ``--numprocesses``, ``--dist``): a sandboxed run may start no process, and one
      test gains nothing from a pool of them;
    - ``--no-cov`` where pytest-cov measures coverage (any ``--cov`` option): its
      ``--cov-fail-under`` fails a run of one module whose tests all passed.

    Each is added only where ``addopts`` name the plugin's options, so the plugin is
    installed; the project's other options (``--import-mode``, ``-p``) stay, as they
    can be what makes its tests import."""
    try:
        tokens = shlex.split(addopts)
    except ValueError:
        tokens = addopts.split()
    args: list[str] = []
    if any(
        token in ("--numprocesses", "--dist")
        or token.startswith(("--numprocesses=", "--dist="))
        or (token.startswith("-n") and not token.startswith("--"))
        for token in tokens
    ):
        args += ["-n", "0"]
    if any(token.startswith("--cov") for token in tokens):
        args.append("--no-cov")
    return args


def alone_args_of(files: Mapping[str, str | bytes], environ_addopts: str = "") -> list[str]:
    """:func:`alone_args` for a run whose root holds ``files`` (relative path -> text):
    the configuration pytest takes from them, and ``environ_addopts``."""
    texts = {
        name: text if isinstance(text, str) else text.decode("utf-8", "replace")
        for name in CONFIG_FILES
        if (text := files.get(name)) is not None
    }
    found = effective(texts)
    addopts = found[1].get("addopts", "") if found is not None else ""
    return alone_args(" ".join(filter(None, [addopts, environ_addopts])))
