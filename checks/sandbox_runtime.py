"""The interpreter a sandboxed run starts, what of the host it may read, and who it runs as.

A :class:`Runtime` is one interpreter as the sandbox runs it (referee's own, or the
project's); its ``entries`` are all the child may read, read-only. Root starts the child
as nobody (:data:`NOBODY`) when nobody can reach the runtime (:func:`can_drop_root`).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import site
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.checks.interpreter import Interpreter, describe

NOBODY = 65534


@dataclass(frozen=True)
class Runtime:
    """One interpreter as the sandbox runs it: the binary (``interpreter``, a virtual
    environment's link resolved: the child starts without ``site`` and is handed
    ``site``, the site-packages it adds back), its version (for its flags), and what the
    child may read (``entries``: ``(path, "dir" | "file" | "symlink")``, all read-only)."""

    interpreter: str
    version: tuple[int, ...]
    site: tuple[str, ...]
    entries: tuple[tuple[str, str], ...]


def runtime_of(python: Interpreter | None = None) -> Runtime:
    """The runtime of ``python`` (None or referee's own: this process's)."""
    if python is None or python.is_own:
        return own_runtime()
    return foreign_runtime(describe(python))


@functools.lru_cache(maxsize=1)
def own_runtime() -> Runtime:
    paths = sysconfig.get_paths()
    interpreter = os.path.realpath(sys.executable)
    site_dirs = _site_dirs()
    readable = (
        os.path.dirname(interpreter),
        sys.base_prefix,
        sys.base_exec_prefix,
        paths.get("stdlib"),
        paths.get("platstdlib"),
        *site_dirs,
    )
    return Runtime(interpreter, tuple(sys.version_info[:3]), site_dirs, _entries(readable))


@functools.lru_cache(maxsize=8)
def foreign_runtime(description: Any) -> Runtime:
    """Another interpreter's (the project's): its binary, base prefixes and standard
    library, its site-packages and the directories its ``.pth`` files add — all
    read-only."""
    readable = (
        os.path.dirname(description.executable),
        *description.prefixes,
        *description.stdlib,
        *description.site,
        *description.extra,
    )
    return Runtime(
        description.executable, description.version, description.site, _entries(readable)
    )


def _site_dirs() -> tuple[str, ...]:
    """Where this interpreter finds pytest: its site-packages, named explicitly because
    the child starts with ``-S`` (no site module, no user site)."""
    found: list[str] = []
    candidates = [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    candidates.append(sysconfig.get_paths()["platlib"])
    spec = importlib.util.find_spec("pytest")
    if spec is not None and spec.origin:
        candidates.append(str(Path(spec.origin).resolve().parent.parent))
    for candidate in candidates:
        if candidate and os.path.isdir(candidate) and candidate not in found:
            found.append(candidate)
    return tuple(found)


def _entries(readable: Sequence[str | None]) -> tuple[tuple[str, str], ...]:
    """What the child may read: ``(path, "dir" | "file" | "symlink")`` — the system's
    libraries and ``readable`` (the interpreter's directory, its standard library and
    site-packages). Nothing else of the host is visible under bubblewrap or namespaces,
    nor readable under Landlock."""
    entries: dict[str, str] = {}
    for top in ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"):
        if os.path.islink(top):
            entries[top] = "symlink"
        elif os.path.isdir(top):
            entries[top] = "dir"
    if os.path.isfile("/etc/ld.so.cache"):
        entries["/etc/ld.so.cache"] = "file"
    for candidate in readable:
        if candidate:
            real = os.path.realpath(candidate)
            if os.path.isdir(real):
                entries.setdefault(real, "dir")
    kept: list[tuple[str, str]] = []
    for path in sorted(entries):
        if any(path.startswith(dir_ + "/") for dir_, kind in kept if kind == "dir"):
            continue  # an earlier directory holds it already
        kept.append((path, entries[path]))
    return tuple(kept)


def _world_readable(path: str) -> bool:
    """Whether a user other than us could read ``path`` and every directory above it."""
    current = Path(path).resolve()
    for part in [current, *current.parents]:
        try:
            mode = os.stat(part).st_mode
        except OSError:
            return False
        needed = 0o005 if part.is_dir() else 0o004
        if mode & needed != needed:
            return False
    return True


def can_drop_root(runtime: Runtime | None = None) -> bool:
    """Root starts the child as nobody when nobody can read the interpreter and its paths
    and reach the temporary directory the run directory is made in; elsewhere (an
    interpreter under /root, ``$TMPDIR`` inside a private directory) the child becomes
    nobody inside its own user namespace, or, without one, does not run in strict mode."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or sys.platform == "win32":
        return False
    runtime = runtime or own_runtime()
    return _runtime_world_readable(runtime) and _world_readable(tempfile.gettempdir())


@functools.lru_cache(maxsize=8)
def _runtime_world_readable(runtime: Runtime) -> bool:
    paths = [runtime.interpreter, *(path for path, kind in runtime.entries if kind != "symlink")]
    return all(_world_readable(path) for path in paths)


def as_nobody(runtime: Runtime) -> dict[str, Any]:
    if can_drop_root(runtime):
        return {"user": NOBODY, "group": NOBODY, "extra_groups": []}
    return {}
