"""What the benchmark scripts share: finding the tools they measure."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


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
