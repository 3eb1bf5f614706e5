"""What the benchmark scripts share: finding the tools they measure."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

# Directories a corpus walk leaves out: caches, version control, virtual environments.
SKIP_DIRS = frozenset({"__pycache__", ".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv"})


def python_files(root: str | Path) -> list[str]:
    """Every ``.py`` file under ``root`` (SKIP_DIRS left out), in a stable order."""
    found = []
    for current, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        found += [os.path.join(current, n) for n in sorted(filenames) if n.endswith(".py")]
    return found


def default_corpus() -> Path:
    """CPython's own test suite, the corpus the benchmarks default to."""
    import test  # CPython's own test package

    return Path(test.__file__).parent


def find_tool(name: str, program: str, hint: str) -> str:
    """The executable ``name``: next to this interpreter first (a virtual environment's
    bin/ or Scripts/), then on PATH. Exits with an install hint when it is missing."""
    here = Path(sys.executable).parent  # not resolved: a venv's python is often a symlink
    for candidate in (here / name, here / f"{name}.exe"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    sys.exit(
        f"{program}: `{name}` was found neither next to {sys.executable} nor on PATH.\n"
        f"Install it into this environment: {hint}"
    )


def source_fingerprint() -> str:
    """A short hash of the referee sources this interpreter imports: the rules change
    often, and a table is only comparable with another from the same sources."""
    try:
        import referee
        import referee.checks
        import referee.server
    except ImportError:
        return "?"
    digest = hashlib.sha256()
    for package in (referee, referee.checks, referee.server):
        base = Path(package.__file__).parent
        for path in sorted(base.rglob("*.py")):
            digest.update(path.relative_to(base).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
