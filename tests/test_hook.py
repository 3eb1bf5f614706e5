"""`referee hook` end to end: a fake agent pipes hook payloads of each dialect (Claude
Code, VS Code, Codex; written here, in each one's documented shape) into the real
command in a temporary git repository, and reads the answer as the agent would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from guard_catalogue.cases import BASIC, PROJECT, SHOP, T, commit_repo, git, guard_env

from referee.server import hook

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the hook needs git")

WEAKENED = BASIC.replace("assert total([10, 20]) == 30", "assert total([10, 20]) > 0")
STRONGER = (
    BASIC + "\n\ndef test_mean():\n    from shop import mean\n\n    assert mean([2, 4]) == 3\n"
)
SPECIAL_CASED = SHOP.replace(
    "def add(a, b):\n    return a + b\n",
    "def add(a, b):\n    if a == 41 and b == 1:\n        return 99\n    return a + b\n",
)
TESTS_41 = BASIC + "\n\ndef test_add_odd():\n    assert add(41, 1) == 99\n"


def _repo(tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    root = tmp_path / "repo"
    commit_repo(root, {**PROJECT, T: BASIC, **(files or {})})
    return root


def _run(payload: Any, *args: str, cwd: Path | None = None) -> tuple[int, dict | None, str]:
    raw = payload if isinstance(payload, (str, bytes)) else json.dumps(payload)
    proc = subprocess.run(
        [sys.executable, "-m", "referee", "hook", *args],
        input=raw if isinstance(raw, bytes) else raw.encode(),
        capture_output=True,
        cwd=cwd,
        env=guard_env(),
        timeout=120,
        check=False,
    )
    out = proc.stdout.decode().strip()
    return proc.returncode, json.loads(out) if out else None, proc.stderr.decode()


def claude(root: Path, event: str, tool: str | None = None, **tool_input: Any) -> dict:
    payload: dict[str, Any] = {
        "session_id": "s-1",
        "transcript_path": str(root / ".transcript.jsonl"),
        "cwd": str(root),
        "hook_event_name": event,
    }
    if tool is not None:
        payload["tool_name"] = tool
        payload["tool_input"] = tool_input
    return payload


def _denied(answer: dict | None) -> str:
    assert answer is not None
    specific = answer["hookSpecificOutput"]
    assert specific["hookEventName"] == "PreToolUse"
    assert specific["permissionDecision"] == "deny"
    return specific["permissionDecisionReason"]


# ------------------------------------------------------------------- PreToolUse


def test_a_write_that_weakens_a_test_is_denied_with_a_reason(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    code, answer, _ = _run(
        claude(root, "PreToolUse", "Write", file_path=str(root / T), content=WEAKENED)
    )
    assert code == 0
    reason = _denied(answer)
    assert "REF303" in reason and f"{T}:" in reason
    assert "referee arbitrate" in reason
    assert (root / T).read_text() == BASIC  # the hook writes nothing


def test_a_harmless_edit_and_a_non_python_file_pass_silently(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    assert _run(claude(root, "PreToolUse", "Write", file_path=str(root / T), content=STRONGER)) == (
        0,
        None,
        "",
    )
    readme = claude(root, "PreToolUse", "Write", file_path=str(root / "README.md"), content="")
    assert _run(readme) == (0, None, "")


def test_edit_and_multiedit_are_applied_to_the_file_before_the_check(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    edit = claude(
        root,
        "PreToolUse",
        "Edit",
        file_path=str(root / T),
        old_string="== 30",
        new_string="> 0",
    )
    assert "REF303" in _denied(_run(edit)[1])
    multi = claude(
        root,
        "PreToolUse",
        "MultiEdit",
        file_path=str(root / T),
        edits=[
            {"old_string": "assert add(1, 2) == 3\n", "new_string": ""},
            {"old_string": "add(-1, 1) == 0", "new_string": "add(-1, 1) == 0"},
        ],
    )
    assert "REF301" in _denied(_run(multi)[1])
    # an edit whose text is not in the file fails in the agent's own tool: nothing to say
    missing = claude(
        root, "PreToolUse", "Edit", file_path=str(root / T), old_string="nope", new_string="x"
    )
    assert _run(missing) == (0, None, "")


def test_source_special_cased_for_a_test_is_denied(tmp_path: Path) -> None:
    root = _repo(tmp_path, {T: TESTS_41})
    write = claude(
        root, "PreToolUse", "Write", file_path=str(root / "shop.py"), content=SPECIAL_CASED
    )
    assert "REF330" in _denied(_run(write)[1])


def test_an_error_already_on_disk_does_not_block_an_unrelated_edit(tmp_path: Path) -> None:
    # The weakening is already there (written past the hook): the Stop hook reports it;
    # an edit that adds nothing wrong is not refused for it.
    root = _repo(tmp_path)
    (root / T).write_text(WEAKENED)
    edit = claude(
        root,
        "PreToolUse",
        "Write",
        file_path=str(root / T),
        content=WEAKENED + "\n\ndef test_more():\n    assert add(2, 2) == 4\n",
    )
    assert _run(edit) == (0, None, "")


# ------------------------------------------------------- sessions, Stop, shell writes


def test_the_session_baseline_survives_the_agent_committing(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    code, answer, _ = _run(claude(root, "SessionStart"))
    assert code == 0 and "baseline" in answer["hookSpecificOutput"]["additionalContext"]
    ref = git(root, "rev-parse", "refs/referee/sessions/s-1").strip()
    assert git(root, "rev-parse", f"{ref}:{T}").strip()
    # the agent weakens the test and commits it: HEAD now holds the weakening
    (root / T).write_text(WEAKENED)
    git(root, "commit", "-qam", "agent")
    code, answer, _ = _run(claude(root, "Stop"))
    assert answer is not None and answer["decision"] == "block"
    assert "REF303" in answer["reason"]
    # another session (none recorded) compares with HEAD, where nothing changed
    other = {**claude(root, "Stop"), "session_id": "s-2"}
    assert _run(other) == (0, None, "")


def test_stop_blocks_once_then_lets_the_agent_stop(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / T).write_text(WEAKENED)
    first = _run(claude(root, "Stop"))[1]
    assert first is not None and first["decision"] == "block"
    again = {**claude(root, "Stop"), "stop_hook_active": True}
    assert _run(again) == (0, None, "")


def test_a_shell_write_is_reported_once_after_the_command(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    subprocess.run(["sed", "-i", "s/== 30/> 0/", T], cwd=root, check=True)
    after = claude(root, "PostToolUse", "Bash", command=f"sed -i 's/== 30/> 0/' {T}")
    after["tool_response"] = {"stdout": "", "stderr": "", "interrupted": False}
    code, answer, _ = _run(after)
    assert code == 0 and answer is not None and answer["decision"] == "block"
    assert "REF303" in answer["reason"] and "edit hook did not see" in answer["reason"]
    assert _run(after) == (0, None, "")  # already reported: not repeated on every command


# -------------------------------------------------------------- failing open


def test_garbage_input_fails_open_visibly(tmp_path: Path) -> None:
    for raw in (b"not json", b"[1, 2]", b'{"tool_name": "Write"}', b"\xff\xfe"):
        code, answer, err = _run(raw, cwd=tmp_path)
        assert code == 0
        assert answer is not None and "did not decide" in answer["systemMessage"]
        assert "the call goes through" in err
    outside = claude(
        tmp_path, "PreToolUse", "Write", file_path=str(tmp_path / "x.py"), content="x = 1\n"
    )
    code, answer, err = _run(outside)
    assert code == 0 and "did not decide" in answer["systemMessage"]


def test_the_deadline_lets_the_call_through_with_a_message(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    payload = claude(root, "PreToolUse", "Write", file_path=str(root / T), content=WEAKENED)
    code, answer, err = _run(payload, "--deadline", "0.001")
    assert code == 0
    assert "deadline" in answer["systemMessage"] and "deadline" in err


# ----------------------------------------------------------------- other dialects

# Codex validates a hook's output against a strict schema; this one states the same
# constraints for PreToolUse (no property other than these, enums as documented).
CODEX_PRE_TOOL_USE = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "continue": {"type": "boolean"},
        "decision": {"enum": ["approve", "block"]},
        "reason": {"type": "string"},
        "stopReason": {"type": "string"},
        "suppressOutput": {"type": "boolean"},
        "systemMessage": {"type": "string"},
        "hookSpecificOutput": {
            "type": "object",
            "additionalProperties": False,
            "required": ["hookEventName"],
            "properties": {
                "hookEventName": {"enum": ["PreToolUse"]},
                "permissionDecision": {"enum": ["allow", "deny", "ask"]},
                "permissionDecisionReason": {"type": "string"},
                "additionalContext": {"type": "string"},
                "updatedInput": {},
            },
        },
    },
}


def _codex_patch(root: Path, body: str) -> dict:
    return {
        "session_id": "c-1",
        "turn_id": "t-1",
        "cwd": str(root),
        "hook_event_name": "PreToolUse",
        "model": "gpt-x",
        "tool_name": "apply_patch",
        "tool_use_id": "call-1",
        "tool_input": {"command": f"*** Begin Patch\n{body}*** End Patch\n"},
    }


def test_a_codex_patch_that_weakens_a_test_is_denied_in_its_schema(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    patch = (
        f"*** Update File: {T}\n@@ def test_total():\n"
        "-    assert total([10, 20]) == 30\n+    assert total([10, 20]) > 0\n"
    )
    code, answer, _ = _run(_codex_patch(root, patch))
    assert code == 0
    jsonschema.validate(answer, CODEX_PRE_TOOL_USE)
    assert "REF303" in _denied(answer)
    deleted = _run(_codex_patch(root, f"*** Delete File: {T}\n"))[1]
    jsonschema.validate(deleted, CODEX_PRE_TOOL_USE)
    assert "REF300" in _denied(deleted)
    added = _run(
        _codex_patch(
            root, "*** Add File: tests/test_new.py\n+def test_new():\n+    assert 1 + 1 == 2\n"
        )
    )
    assert added == (0, None, "")
    fail_open = _run(_codex_patch(root, "*** Update File: missing.py\n@@\n-x\n+y\n"))
    assert fail_open == (0, None, "")  # the patch would not apply: Codex says so itself


def test_vscode_camel_case_payloads_are_read(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    payload = {
        "hookEventName": "PreToolUse",
        "sessionId": "v-1",
        "cwd": str(root),
        "toolName": "replace_string_in_file",
        "toolInput": {"filePath": str(root / T), "oldString": "== 30", "newString": "> 0"},
    }
    assert "REF303" in _denied(_run(payload)[1])


# ----------------------------------------------------------------- the patch format


def test_apply_patch_adds_updates_moves_and_deletes(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\ntwo\nthree\n")
    (tmp_path / "b.py").write_text("gone\n")
    patch = (
        "*** Begin Patch\n"
        "*** Update File: a.py\n@@\n one\n-two\n+2\n three\n"
        "*** Delete File: b.py\n"
        "*** Add File: c.py\n+new\n"
        "*** Update File: d.py\n*** Move to: e.py\n"
        "*** End Patch\n"
    )
    (tmp_path / "d.py").write_text("moved\n")
    out = hook.apply_patch(patch, tmp_path)
    assert out[tmp_path / "a.py"] == "one\n2\nthree\n"
    assert out[tmp_path / "b.py"] is None
    assert out[tmp_path / "c.py"] == "new\n"
    assert out[tmp_path / "d.py"] is None and out[tmp_path / "e.py"] == "moved\n"


def test_a_test_command_that_ran_nothing_is_fed_back(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    empty = claude(root, "PostToolUse", "Bash", command="python -m pytest -q tests -k nothing")
    empty["tool_response"] = {
        "stdout": "\n======= 3 deselected in 0.01s =======\nno tests ran in 0.01s\n",
        "stderr": "",
        "interrupted": False,
    }
    code, answer, _ = _run(empty)
    assert code == 0 and answer is not None and answer["decision"] == "block"
    assert "REF130" in answer["reason"] and "ran nothing" in answer["reason"]
    ran = {**empty, "tool_response": {"stdout": "...\n3 passed in 0.02s\n", "stderr": ""}}
    assert _run(ran) == (0, None, "")
    # the same output from a command that is not a test run is not read as one
    echo = claude(root, "PostToolUse", "Bash", command="echo 'no tests ran in 0.01s'")
    echo["tool_response"] = {"stdout": "no tests ran in 0.01s\n", "stderr": ""}
    assert _run(echo) == (0, None, "")


# ------------------------------------------------------------- the warm process


def test_the_warm_process_answers_as_the_command_does(tmp_path: Path) -> None:
    import os
    import signal
    import tempfile
    import time

    root = _repo(tmp_path)
    sockets = Path(tempfile.mkdtemp(prefix="rh-", dir="/tmp"))  # AF_UNIX paths are short
    env = {**guard_env(), "REFEREE_HOOK_DAEMON": "1", "REFEREE_HOOK_SOCKET_DIR": str(sockets)}
    env["REFEREE_HOOK_TRACE"] = "1"
    payload = json.dumps(
        claude(root, "PreToolUse", "Write", file_path=str(root / T), content=WEAKENED)
    )

    def call(body: str = payload) -> tuple[dict | None, str]:
        proc = subprocess.run(
            [sys.executable, "-m", "referee", "hook"],
            input=body,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=True,
        )
        return (json.loads(proc.stdout) if proc.stdout.strip() else None), proc.stderr

    try:
        # a socket left by a process that is gone: decided in process, no hang
        (sockets / "hook.sock").write_text("")
        cold, err = call()
        assert "warm process" not in err
        for _ in range(100):  # the first call started the warm process
            if (sockets / "hook.pid").exists():
                break
            time.sleep(0.1)
        warm, err = call()
        assert "answered by the warm process" in err
        assert warm == cold and "REF303" in _denied(warm)
        harmless = json.dumps(
            claude(root, "PreToolUse", "Write", file_path=str(root / T), content=STRONGER)
        )
        answer, err = call(harmless)
        assert answer is None and "answered by the warm process" in err
    finally:
        pid_file = sockets / "hook.pid"
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGTERM)
            for _ in range(50):
                if not (sockets / "hook.sock").exists():
                    break
                time.sleep(0.1)
        assert not (sockets / "hook.sock").exists()  # SIGTERM takes the socket with it
        shutil.rmtree(sockets, ignore_errors=True)


CODEX_STOP = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "continue": {"type": "boolean"},
        "decision": {"enum": ["block"]},
        "reason": {"type": "string"},
        "stopReason": {"type": "string"},
        "suppressOutput": {"type": "boolean"},
        "systemMessage": {"type": "string"},
    },
}


def test_codex_stop_and_a_fail_open_answer_validate_in_its_schema(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    (root / T).write_text(WEAKENED)
    stop = {"session_id": "c-2", "turn_id": "t-9", "cwd": str(root), "hook_event_name": "Stop"}
    stop["stop_hook_active"] = False
    answer = _run(stop)[1]
    jsonschema.validate(answer, CODEX_STOP)
    assert answer["decision"] == "block" and "REF303" in answer["reason"]
    broken = _run(b"{", cwd=tmp_path)[1]
    jsonschema.validate(broken, CODEX_STOP)
    jsonschema.validate(broken, CODEX_PRE_TOOL_USE)
