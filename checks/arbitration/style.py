"""A source fix written in the project's own style: where the project configures a
formatter (ruff format or black) and an import sorter (ruff's ``I`` rules or isort), the
fixed module goes through them — but only when the module, as it was, is already what
that tool would write. A module its formatter would change is left as it is, so that a fix
changes the function and what it needs, never the rest of the file.

The tools are the project's own, run from ``PATH`` (or beside this interpreter), on the
text over standard input: nothing is executed but the formatter, and a tool that is
missing, fails or takes too long leaves the text unchanged.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from referee.checks.config import tomllib

__all__ = ["formatters", "restyler"]

TIMEOUT_S = 20.0


def _table(data: dict[str, Any], *keys: str) -> dict[str, Any] | None:
    for key in keys:
        value = data.get(key)
        if not isinstance(value, dict):
            return None
        data = value
    return data


def _read_toml(path: Path) -> dict[str, Any] | None:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return None


def _selects_isort(ruff: dict[str, Any]) -> bool:
    lint = ruff.get("lint") if isinstance(ruff.get("lint"), dict) else {}
    assert isinstance(lint, dict)
    chosen: list[Any] = []
    for table in (ruff, lint):
        for key in ("select", "extend-select"):
            value = table.get(key)
            if isinstance(value, list):
                chosen.extend(value)
    return any(isinstance(code, str) and (code == "I" or code.startswith("I0")) for code in chosen)


def formatters(root: Path) -> list[str]:
    """The style tools ``root`` configures, in the order they run: ``ruff-isort`` or
    ``isort`` first, then ``ruff-format`` or ``black``."""
    pyproject = _read_toml(root / "pyproject.toml") or {}
    ruff = _table(pyproject, "tool", "ruff")
    for name in ("ruff.toml", ".ruff.toml"):
        if ruff is None and (root / name).is_file():
            ruff = _read_toml(root / name) or {}
    found: list[str] = []
    if ruff is not None and _selects_isort(ruff):
        found.append("ruff-isort")
    elif _table(pyproject, "tool", "isort") is not None or (root / ".isort.cfg").is_file():
        found.append("isort")
    if ruff is not None and (
        _table(ruff, "format") is not None or _table(pyproject, "tool", "black") is None
    ):
        found.append("ruff-format")
    elif _table(pyproject, "tool", "black") is not None:
        found.append("black")
    return found


def _executable(name: str) -> str | None:
    beside = Path(sys.executable).with_name(name)
    if beside.is_file():
        return str(beside)
    return shutil.which(name)


def _command(tool: str, filename: str) -> list[str] | None:
    program = _executable(tool.split("-")[0])
    if program is None:
        return None
    if tool == "ruff-isort":
        fix = ["--select", "I", "--fix-only", "--exit-zero", "--quiet"]
        return [program, "check", *fix, "--stdin-filename", filename, "-"]
    if tool == "ruff-format":
        return [program, "format", "--quiet", "--stdin-filename", filename, "-"]
    if tool == "black":
        return [program, "--quiet", "--stdin-filename", filename, "-"]
    if tool == "isort":
        return [program, "--quiet", "--filename", filename, "-"]
    return None


def _run(command: Sequence[str], text: str, root: Path) -> str | None:
    try:
        done = subprocess.run(
            list(command),
            input=text.encode("utf-8"),
            capture_output=True,
            cwd=root,
            timeout=TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        return done.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None


def restyler(root: Path, relpath: str, original: str) -> Callable[[str], tuple[str, list[str]]]:
    """A function that gives (a fixed text as the project's style tools write it, the
    tools applied). A tool is applied only when it leaves ``original`` unchanged; which
    ones do is found out once, here."""
    filename = str(root / relpath)
    tools: list[tuple[str, list[str]]] = []
    for tool in formatters(root):
        command = _command(tool, filename)
        if command is not None and _run(command, original, root) == original:
            tools.append((tool, command))

    def restyle(fixed: str) -> tuple[str, list[str]]:
        applied: list[str] = []
        for tool, command in tools:
            styled = _run(command, fixed, root)
            if styled is not None and styled.strip():
                applied.append(tool)
                fixed = styled
        return fixed, applied

    return restyle
