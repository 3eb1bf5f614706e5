"""`referee init --agent` and `referee doctor --agents`: the hook and MCP configuration
each agent reads, written or merged, and reported.

| agent | hooks | MCP server |
|---|---|---|
| claude | `.claude/settings.json` | `.mcp.json` |
| vscode | `.claude/settings.json` (read by VS Code's agent) | `.vscode/mcp.json` |
| cursor | `.claude/settings.json` (read by Cursor) | `.cursor/mcp.json` |
| codex | `.codex/config.toml` | `.codex/config.toml` |

Merging never drops what is there: other hooks, other servers, other keys stay as they
were; an entry that already runs referee is left alone (running it twice changes
nothing). A file that does not parse is not touched: the error says which and why. Each
file is replaced atomically, and only if it did not change since it was read.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from referee.checks.atomic import sha256_file, write_text_atomic

AGENTS = ("claude", "vscode", "cursor", "codex")
CLAUDE_SETTINGS = ".claude/settings.json"
MCP_FILES = {"claude": ".mcp.json", "vscode": ".vscode/mcp.json", "cursor": ".cursor/mcp.json"}
CODEX_CONFIG = ".codex/config.toml"

# Claude Code's events, with the tools each one matches (None: an event without tools).
HOOK_EVENTS: dict[str, str | None] = {
    "PreToolUse": "Write|Edit|MultiEdit",
    "PostToolUse": "Bash",
    "Stop": None,
    "SessionStart": None,
}
HOOK_TIMEOUT_S = 30  # VS Code's limit; the hook's own deadline is 10 s


class InitError(ValueError):
    """A configuration file referee will not touch, and why."""


@dataclass
class Change:
    path: str
    what: str  # "created", "updated", "unchanged"


def referee_command() -> str:
    """How an agent should start referee: `referee` when that name finds this
    installation on PATH, else this installation's path (an agent's PATH is not always
    the terminal's)."""
    script = Path(sys.executable).parent / "referee"
    found = shutil.which("referee")
    if found and script.exists() and Path(found).resolve() == script.resolve():
        return "referee"
    if script.exists():
        return shlex.quote(str(script))
    return f"{shlex.quote(sys.executable)} -m referee"


def _read_json(path: Path) -> tuple[dict[str, Any], str | None]:
    if not path.exists():
        return {}, None
    text = path.read_text(encoding="utf-8")
    digest = sha256_file(path)
    if not text.strip():
        return {}, digest
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InitError(
            f"{path}: not valid JSON ({exc}); fix it first, nothing was written"
        ) from None
    if not isinstance(data, dict):
        raise InitError(f"{path}: not a JSON object; nothing was written")
    return data, digest


def _write(path: Path, text: str, digest: str | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text, expected_sha256=digest)


def _runs_referee(entry: Any, word: str) -> bool:
    """Whether a hook entry runs `referee WORD` (however referee is started)."""
    if not isinstance(entry, dict):
        return False
    for hook in entry.get("hooks") or []:
        if isinstance(hook, dict):
            command = " ".join(str(hook.get("command", "")).split())
            if re.search(rf"\breferee {word}\b", command):
                return True
    return False


def merge_claude_hooks(root: Path, command: str) -> Change:
    path = root / CLAUDE_SETTINGS
    data, digest = _read_json(path)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InitError(f"{path}: `hooks` is not an object; nothing was written")
    changed = False
    for event, matcher in HOOK_EVENTS.items():
        entries = hooks.setdefault(event, [])
        if not isinstance(entries, list):
            raise InitError(f"{path}: `hooks.{event}` is not a list; nothing was written")
        if any(_runs_referee(e, "hook") for e in entries):
            continue
        entry: dict[str, Any] = {
            "hooks": [{"type": "command", "command": f"{command} hook", "timeout": HOOK_TIMEOUT_S}]
        }
        if matcher is not None:
            entry = {"matcher": matcher, **entry}
        entries.append(entry)
        changed = True
    if not changed:
        return Change(CLAUDE_SETTINGS, "unchanged")
    _write(path, json.dumps(data, indent=2) + "\n", digest)
    return Change(CLAUDE_SETTINGS, "created" if digest is None else "updated")


def merge_mcp_json(root: Path, agent: str, command: str) -> Change:
    relpath = MCP_FILES[agent]
    path = root / relpath
    data, digest = _read_json(path)
    key = "servers" if agent == "vscode" else "mcpServers"
    servers = data.setdefault(key, {})
    if not isinstance(servers, dict):
        raise InitError(f"{path}: `{key}` is not an object; nothing was written")
    if "referee" in servers:
        return Change(relpath, "unchanged")
    program, *rest = shlex.split(command)
    server: dict[str, Any] = {"command": program, "args": [*rest, "mcp"]}
    if agent == "vscode":
        server = {"type": "stdio", **server}
    servers["referee"] = server
    _write(path, json.dumps(data, indent=2) + "\n", digest)
    return Change(relpath, "created" if digest is None else "updated")


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a TOML basic string is a JSON string


def merge_codex(root: Path, command: str) -> Change:
    from referee.checks.config import tomllib

    path = root / CODEX_CONFIG
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    digest = sha256_file(path) if path.exists() else None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InitError(f"{path}: not valid TOML ({exc}); nothing was written") from None
    program, *rest = shlex.split(command)
    blocks = []
    if "referee" not in (data.get("mcp_servers") or {}):
        args = ", ".join(_toml_string(a) for a in [*rest, "mcp"])
        blocks.append(
            f"[mcp_servers.referee]\ncommand = {_toml_string(program)}\nargs = [{args}]\n"
        )
    hooks = data.get("hooks") or {}
    codex_events = (
        ("PreToolUse", "apply_patch"),
        ("PostToolUse", "Bash"),
        ("Stop", None),
        ("SessionStart", None),
    )
    for event, matcher in codex_events:
        present = any(_runs_referee(e, "hook") for e in hooks.get(event) or [])
        if present:
            continue
        lines = [f"[[hooks.{event}]]"]
        if matcher is not None:
            lines.append(f"matcher = {_toml_string(matcher)}")
        lines += [
            f"[[hooks.{event}.hooks]]",
            'type = "command"',
            f"command = {_toml_string(command + ' hook')}",
            f"timeout = {HOOK_TIMEOUT_S}",
        ]
        blocks.append("\n".join(lines) + "\n")
    if not blocks:
        return Change(CODEX_CONFIG, "unchanged")
    joined = text + ("\n" if text and not text.endswith("\n") else "")
    joined += ("\n" if text else "") + "\n".join(blocks)
    try:
        tomllib.loads(joined)
    except tomllib.TOMLDecodeError as exc:  # e.g. a [hooks] table written inline
        raise InitError(
            f"{path}: referee's entries would not merge with what is there ({exc}); "
            "add them by hand (docs/agents.md); nothing was written"
        ) from None
    _write(path, joined, digest)
    return Change(CODEX_CONFIG, "created" if digest is None else "updated")


def init(root: Path, agent: str, command: str | None = None) -> list[Change]:
    """Write or merge ``agent``'s hook and MCP configuration under ``root``."""
    command = command or referee_command()
    if agent == "codex":
        return [merge_codex(root, command)]
    return [merge_claude_hooks(root, command), merge_mcp_json(root, agent, command)]


def status(root: Path) -> dict[str, dict[str, bool]]:
    """Per agent: whether its hooks and its MCP server run referee here."""
    from referee.checks.config import tomllib

    out: dict[str, dict[str, bool]] = {}
    try:
        claude, _ = _read_json(root / CLAUDE_SETTINGS)
    except (InitError, OSError):
        claude = {}
    hooks = claude.get("hooks") if isinstance(claude.get("hooks"), dict) else {}
    claude_hooks = all(
        any(_runs_referee(e, "hook") for e in (hooks.get(event) or []))
        for event in ("PreToolUse", "Stop")
    )
    for agent, relpath in MCP_FILES.items():
        try:
            data, _ = _read_json(root / relpath)
        except (InitError, OSError):
            data = {}
        key = "servers" if agent == "vscode" else "mcpServers"
        servers = data.get(key) if isinstance(data.get(key), dict) else {}
        out[agent] = {"hooks": claude_hooks, "mcp": "referee" in servers}
    try:
        codex = tomllib.loads((root / CODEX_CONFIG).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        codex = {}
    codex_hooks = codex.get("hooks") or {}
    out["codex"] = {
        "hooks": any(_runs_referee(e, "hook") for e in codex_hooks.get("PreToolUse") or []),
        "mcp": "referee" in (codex.get("mcp_servers") or {}),
    }
    return out
