"""Which Python runs the project's tests: the project's own interpreter, not referee's.

referee may be installed apart from the project (pipx, a tool venv): its own interpreter
cannot import the project's dependencies, nor, often, pytest. Arbitration's test run,
mutation grading and the sandboxed runs use the interpreter :func:`find` returns, first
of:

1. the ``python`` setting (``python = ".venv/bin/python"`` in ``[tool.referee]``, or the
   editor's ``referee.python``), a path relative to the project root or absolute;
2. the active virtual environment, ``$VIRTUAL_ENV``;
3. ``.venv/`` or ``venv/`` in the project root, then any other directory of the root that
   is an environment (a ``pyvenv.cfg`` — ``python -m venv env`` — or a conda
   environment's ``conda-meta/``, ``conda create -p ./env``), by name;
4. the active conda environment, ``$CONDA_PREFIX`` (after the project's own: conda's
   base environment is often active in every shell);
5. referee's own ``sys.executable``.

:func:`describe` asks an interpreter, once, where its standard library and
site-packages are (the sandbox mounts them read-only); :func:`pytest_problem` says, in
one line, when it has no pytest. Standard library only: the language server and the CLI
both use it, and it never imports the editor's side.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from referee.checks.config import Settings

__all__ = [
    "Description",
    "Interpreter",
    "InterpreterError",
    "describe",
    "find",
    "for_settings",
    "forget",
    "own",
    "pytest_problem",
]

# How an interpreter was found, as :attr:`Interpreter.found` names it.
SETTING, VIRTUAL_ENV, CONDA, REFEREE = "setting", "$VIRTUAL_ENV", "$CONDA_PREFIX", "referee"
DOT_VENV, VENV = ".venv", "venv"

_WINDOWS = sys.platform == "win32"


@dataclass(frozen=True)
class Interpreter:
    """A Python to run the project's code with. ``path`` is as found, not resolved: a
    virtual environment's ``bin/python`` is a link whose place makes it that
    environment's."""

    path: str
    # setting, $VIRTUAL_ENV, .venv, venv, another directory's name, $CONDA_PREFIX, referee
    found: str

    @property
    def is_own(self) -> bool:
        """Whether it is referee's own interpreter (found so, or the same path: the
        active environment is referee's own)."""
        return self.found == REFEREE or self.path == sys.executable

    def __str__(self) -> str:
        return f"{self.path} (found: {self.found})"


class InterpreterError(ValueError):
    """The ``python`` setting names no interpreter."""


def own() -> Interpreter:
    return Interpreter(sys.executable, REFEREE)


def _in_environment(directory: Path) -> Path | None:
    """The interpreter of the virtual environment ``directory``, if it has one."""
    for candidate in (
        ("Scripts/python.exe", "bin/python", "bin/python3")
        if _WINDOWS
        else ("bin/python", "bin/python3", "Scripts/python.exe")
    ):
        path = directory / candidate
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def find(
    root: Path,
    setting: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Interpreter:
    """The interpreter for the project at ``root`` (see the module's docstring for the
    order). ``setting`` is the ``python`` setting; a setting that names no executable
    file (or a directory without one) raises :class:`InterpreterError`."""
    environ = os.environ if environ is None else environ
    resolved = str(Path(root).resolve())
    try:  # a .venv made in the root since the last ask changes the root's mtime
        stamp = os.stat(resolved).st_mtime_ns
    except OSError:
        stamp = 0
    return _find(
        resolved,
        setting or None,
        environ.get("VIRTUAL_ENV") or None,
        environ.get("CONDA_PREFIX") or None,
        stamp,
    )


def _is_environment(directory: Path) -> bool:
    """Whether ``directory`` is a virtual environment (``pyvenv.cfg``) or a conda one."""
    return (directory / "pyvenv.cfg").is_file() or (directory / "conda-meta").is_dir()


def _in_root(base: Path) -> Interpreter | None:
    """``.venv/``, then ``venv/``, then any other environment directly in the root."""
    for name in (DOT_VENV, VENV):
        inside = _in_environment(base / name)
        if inside is not None:
            return Interpreter(str(inside), name)
    try:
        others = sorted(
            entry.name
            for entry in os.scandir(base)
            if entry.name not in (DOT_VENV, VENV) and entry.is_dir(follow_symlinks=False)
        )
    except OSError:
        return None
    for name in others:
        if _is_environment(base / name):
            inside = _in_environment(base / name)
            if inside is not None:
                return Interpreter(str(inside), name)
    return None


@functools.lru_cache(maxsize=64)
def _find(
    root: str, setting: str | None, virtual_env: str | None, conda: str | None, _stamp: int
) -> Interpreter:
    base = Path(root)
    if setting is not None:
        path = Path(os.path.expanduser(setting))
        if not path.is_absolute():
            path = base / path
        if path.is_dir():
            inside = _in_environment(path)
            if inside is None:
                raise InterpreterError(
                    f"{setting!r} is a directory with no bin/python in it ({path})"
                )
            path = inside
        elif not path.exists():
            raise InterpreterError(f"{setting!r} does not exist ({path})")
        elif not path.is_file() or not os.access(path, os.X_OK):
            raise InterpreterError(f"{setting!r} is not an executable file ({path})")
        return Interpreter(os.path.abspath(path), SETTING)
    if virtual_env is not None:
        inside = _in_environment(Path(virtual_env))
        if inside is not None:
            return Interpreter(os.path.abspath(inside), VIRTUAL_ENV)
    in_root = _in_root(base)
    if in_root is not None:
        return in_root
    if conda is not None:
        inside = _in_environment(Path(conda))
        if inside is not None:
            return Interpreter(os.path.abspath(inside), CONDA)
    return own()


def for_settings(settings: Settings) -> Interpreter:
    """The interpreter for a project's settings; a bad ``python`` setting is a
    :class:`~referee.checks.config.ConfigError` naming the file and the key."""
    from referee.checks.config import ConfigError

    setting = settings.config.python
    try:
        return find(settings.root, setting)
    except InterpreterError as exc:
        if settings.python_origin:  # the editor's setting, not the file's
            raise ConfigError(None, settings.python_origin, str(exc)) from None
        in_pyproject = settings.path is not None and settings.path.name == "pyproject.toml"
        key = "[tool.referee].python" if in_pyproject else "python"
        raise ConfigError(settings.path, key, str(exc)) from None


def forget() -> None:
    """Look again at the next ask (a ``.venv`` made, a package installed since)."""
    _find.cache_clear()
    _describe.cache_clear()
    _has_pytest.cache_clear()
    _PYTEST_SEEN.clear()


# -- what an interpreter is made of ---------------------------------------------------------

_PROBE = r"""
import importlib.util, json, os, site, sys, sysconfig
paths = sysconfig.get_paths()
try:
    sites = list(site.getsitepackages())
except AttributeError:  # an old virtualenv's site module
    sites = []
print(json.dumps({
    "executable": os.path.realpath(sys.executable),
    "version": list(sys.version_info[:3]),
    "prefix": sys.prefix,
    "base_prefix": sys.base_prefix,
    "base_exec_prefix": sys.base_exec_prefix,
    "stdlib": paths.get("stdlib"),
    "platstdlib": paths.get("platstdlib"),
    "site": sites + [paths.get("purelib"), paths.get("platlib")],
    "path": sys.path,
    "pytest": importlib.util.find_spec("pytest") is not None,
}))
"""
# interpreter -> (the mtimes of its site-packages, whether pytest was importable), as the
# description's probe found it: the first pytest_problem of a process asks no second one.
_PYTEST_SEEN: dict[str, tuple[tuple[int, ...], bool]] = {}


@dataclass(frozen=True)
class Description:
    """What an interpreter is made of: the binary itself (``executable``, the link
    resolved), its version, its standard library, its site-packages (``site``: what
    ``-S`` leaves out and a run adds back) and the directories its ``.pth`` files add
    (``extra``)."""

    executable: str
    version: tuple[int, int, int]
    prefixes: tuple[str, ...]  # base prefix, base exec prefix
    stdlib: tuple[str, ...]
    site: tuple[str, ...]
    extra: tuple[str, ...]


def describe(interpreter: Interpreter) -> Description:
    """Ask ``interpreter`` (once while its file is unchanged) what it is made of. Raises
    :class:`InterpreterError` when it does not run."""
    try:
        stat = os.stat(interpreter.path)
    except OSError as exc:
        raise InterpreterError(f"{interpreter}: {exc.strerror or exc}") from None
    return _describe(interpreter.path, stat.st_mtime_ns, stat.st_ino)


def _existing(paths: list[str | None]) -> tuple[str, ...]:
    found: list[str] = []
    for path in paths:
        if path and os.path.isdir(path):
            real = os.path.realpath(path)
            if real not in found:
                found.append(real)
    return tuple(found)


def _run_code(path: str, code: str) -> subprocess.CompletedProcess[bytes]:
    """``code`` run by the interpreter ``path``, isolated from the caller's environment
    (``-I``), its output captured; raises OSError or TimeoutExpired (30 s)."""
    return subprocess.run(
        [path, "-I", "-c", code],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
        check=False,
    )


@functools.lru_cache(maxsize=16)
def _describe(path: str, _mtime: int, _inode: int) -> Description:
    try:
        done = _run_code(path, _PROBE)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InterpreterError(f"{path} does not run: {exc}") from None
    try:
        data = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise InterpreterError(f"{path} is not a Python interpreter: {tail[0]}") from None
    site = _existing(data["site"])
    stdlib = _existing([data["stdlib"], data["platstdlib"]])
    covered = (*site, *stdlib)
    extra = tuple(
        entry
        for entry in _existing(data["path"])
        if entry != "/"
        and not any(entry == top or entry.startswith(top + os.sep) for top in covered)
    )
    if isinstance(data.get("pytest"), bool):
        _PYTEST_SEEN[path] = (_stamps(site), data["pytest"])
    return Description(
        executable=data["executable"],
        version=tuple(data["version"]),  # type: ignore[arg-type]
        prefixes=_existing([data["base_prefix"], data["base_exec_prefix"]]),
        stdlib=stdlib,
        site=site,
        extra=extra,
    )


def pytest_problem(interpreter: Interpreter) -> str | None:
    """One line saying why ``interpreter`` cannot run the project's tests (no pytest,
    or it does not run at all), or None. Asked once while its site-packages are
    unchanged: installing pytest there is seen at the next ask."""
    try:
        description = describe(interpreter)
    except InterpreterError as exc:
        return f"the project's interpreter {exc}"
    stamps = _stamps(description.site)
    seen = _PYTEST_SEEN.get(interpreter.path)
    if seen is not None and seen[0] == stamps:
        has_pytest = seen[1]
    else:
        has_pytest = _has_pytest(interpreter.path, stamps)
    if has_pytest:
        return None
    return (
        f"the project's interpreter {interpreter} has no pytest: install it there "
        "or set `python` in [tool.referee]"
    )


def _stamps(site: tuple[str, ...]) -> tuple[int, ...]:
    """The modification times of ``site``'s directories (0 for one that is gone)."""
    stamps = []
    for directory in site:
        try:
            stamps.append(os.stat(directory).st_mtime_ns)
        except OSError:
            stamps.append(0)
    return tuple(stamps)


_HAS_PYTEST = "import importlib.util, sys; sys.exit(importlib.util.find_spec('pytest') is None)"


@functools.lru_cache(maxsize=16)
def _has_pytest(path: str, _stamps: tuple[int, ...]) -> bool:
    try:
        done = _run_code(path, _HAS_PYTEST)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0
