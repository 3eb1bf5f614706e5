"""`referee init --agent` and `referee doctor --agents`, through the real command line:
each agent's configuration written, merged with what a user has, idempotent, and the
hook command it writes really answers a payload."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from guard_catalogue.cases import BASIC, PROJECT, T, commit_repo, guard_env

from referee.checks.config import tomllib

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the hook needs git")


def referee(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "referee", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env=guard_env(),
        timeout=120,
        check=False,
    )


def test_claude_gets_hooks_and_mcp_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    done = referee("init", "--agent", "claude", "--command", "referee", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    settings = json.loads((tmp_path / ".claude/settings.json").read_text())
    for event in ("PreToolUse", "PostToolUse", "Stop", "SessionStart"):
        (entry,) = settings["hooks"][event]
        assert entry["hooks"][0]["command"] == "referee hook"
    assert settings["hooks"]["PreToolUse"][0]["matcher"] == "Write|Edit|MultiEdit"
    assert json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["referee"] == {
        "command": "referee",
        "args": ["mcp"],
    }
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    again = referee("init", "--agent", "claude", "--command", "referee", cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.count("unchanged") == 2
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_users_hooks_servers_and_keys_are_kept(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    mine = {
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}
            ]
        },
    }
    (tmp_path / ".claude/settings.json").write_text(json.dumps(mine))
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".cursor/mcp.json").write_text(
        json.dumps({"mcpServers": {"db": {"command": "db"}}})
    )
    done = referee("init", "--agent", "cursor", "--command", "referee", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    settings = json.loads((tmp_path / ".claude/settings.json").read_text())
    assert settings["permissions"] == mine["permissions"]
    pre = settings["hooks"]["PreToolUse"]
    assert (
        pre[0] == mine["hooks"]["PreToolUse"][0] and pre[1]["hooks"][0]["command"] == "referee hook"
    )
    servers = json.loads((tmp_path / ".cursor/mcp.json").read_text())["mcpServers"]
    assert set(servers) == {"db", "referee"}


def test_a_file_that_does_not_parse_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    broken = '{"hooks": {'
    (tmp_path / ".claude/settings.json").write_text(broken)
    done = referee("init", "--agent", "claude", cwd=tmp_path)
    assert done.returncode == 2
    assert "not valid JSON" in done.stderr and "nothing was written" in done.stderr
    assert (tmp_path / ".claude/settings.json").read_text() == broken
    assert not (tmp_path / ".mcp.json").exists()


def test_codex_and_vscode_configuration_merge_into_their_own_files(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex/config.toml").write_text(
        'model = "gpt-x"\n\n[mcp_servers.docs]\ncommand = "docs-server"\n'
    )
    done = referee(
        "init", "--agent", "codex", "--agent", "vscode", "--command", "referee", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    codex = tomllib.loads((tmp_path / ".codex/config.toml").read_text())
    assert codex["model"] == "gpt-x" and set(codex["mcp_servers"]) == {"docs", "referee"}
    assert codex["mcp_servers"]["referee"] == {"command": "referee", "args": ["mcp"]}
    (pre,) = codex["hooks"]["PreToolUse"]
    assert pre["matcher"] == "apply_patch" and pre["hooks"][0]["command"] == "referee hook"
    assert "Stop" in codex["hooks"] and "PostToolUse" in codex["hooks"]
    vscode = json.loads((tmp_path / ".vscode/mcp.json").read_text())
    assert vscode["servers"]["referee"]["type"] == "stdio"
    text = (tmp_path / ".codex/config.toml").read_text()
    assert referee("init", "--agent", "codex", "--command", "referee", cwd=tmp_path).returncode == 0
    assert (tmp_path / ".codex/config.toml").read_text() == text


def test_doctor_reports_what_is_set_up(tmp_path: Path) -> None:
    before = referee("doctor", "--agents", cwd=tmp_path)
    assert before.returncode == 0
    assert "claude:          hooks no, mcp no" in before.stdout
    referee("init", "--agent", "claude", cwd=tmp_path)
    after = referee("doctor", "--agents", cwd=tmp_path)
    assert "claude:          hooks yes, mcp yes" in after.stdout
    assert "codex:           hooks no, mcp no" in after.stdout


def test_the_hook_command_written_denies_a_weakening(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    commit_repo(root, {**PROJECT, T: BASIC})
    assert referee("init", "--agent", "claude", cwd=root).returncode == 0
    command = json.loads((root / ".claude/settings.json").read_text())["hooks"]["PreToolUse"][0][
        "hooks"
    ][0]["command"]
    payload = {
        "session_id": "s",
        "cwd": str(root),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {
            "file_path": str(root / T),
            "content": BASIC.replace("== 30", "> 0"),
        },
    }
    done = subprocess.run(
        command,
        shell=True,
        cwd=root,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=guard_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
