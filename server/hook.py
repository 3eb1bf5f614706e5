"""`referee hook`: the agents' door before an edit is written.

One command for the hook events of Claude Code, VS Code's agent (and Cursor, which reads
Claude Code's settings) and Codex CLI. It reads the event as JSON on stdin, works out the
dialect, and answers in that dialect's format on stdout:

* ``PreToolUse`` of an edit (`Write`, `Edit`, `MultiEdit`; VS Code's `create_file`,
  `replace_string_in_file`, `multi_replace_string_in_file`; `apply_patch`'s patch, from
  Codex or VS Code) to a Python file: the file as it would be is checked with L0 and the
  guard in agent mode against the session's baseline; an edit that *introduces* an error
  is denied, with the findings and what to do instead as the reason the agent reads.
* ``PostToolUse`` of a shell command (`Bash`, Codex's `shell`): writes through the shell
  bypass the edit hook, so the working tree is compared with the baseline; new errors
  since the last report are fed back to the agent.
* ``Stop``: the guard in agent mode over the whole session's change; the stop is blocked
  once with the findings (never while ``stop_hook_active``), so the agent fixes them.
* ``SessionStart``: the working tree is recorded as the session's baseline, a commit
  under ``refs/referee/sessions/`` (HEAD may move when the agent commits). Without one,
  the baseline is ``HEAD``.

Policy on failure: the hook **fails open, visibly**. Input it cannot read, a directory
outside git, an internal error or the deadline (``--deadline``, default 10 s) let the
edit through with a message for the person (``systemMessage``) and a line on stderr;
never a silent block of every edit. No model and no test run on these paths.

Kept light to start (no click, no rich): an edit of a file that is not Python is
answered before the engine is imported.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DIALECTS = ("auto", "claude", "vscode", "codex")
DEFAULT_DEADLINE_S = 10.0
_SESSION_REFS = "refs/referee/sessions"
_MAX_LISTED = 8

# Tools that write a file, by dialect spelling; each maps to how its input is read.
_WRITE_TOOLS = {"Write", "create_file", "createFile"}
_EDIT_TOOLS = {"Edit", "replace_string_in_file", "replaceStringInFile", "editFile"}
_MULTI_EDIT_TOOLS = {"MultiEdit", "multi_replace_string_in_file", "multiReplaceStringInFile"}
_PATCH_TOOLS = {"apply_patch", "applyPatch"}
_SHELL_TOOLS = {"Bash", "shell", "run_in_terminal", "runInTerminal", "local_shell", "exec_command"}


class HookInputError(ValueError):
    """The event could not be read: the hook lets the call through and says so."""


@dataclass
class Event:
    dialect: str  # claude | vscode | codex
    name: str  # PreToolUse | PostToolUse | Stop | SubagentStop | SessionStart | ...
    cwd: Path
    session: str | None = None
    tool: str | None = None
    tool_input: dict[str, Any] = field(default_factory=dict)
    tool_response: Any = None
    stop_active: bool = False


def _get(payload: dict[str, Any], *names: str) -> Any:
    for name in names:
        if name in payload:
            return payload[name]
    return None


def parse_event(payload: Any, dialect: str = "auto") -> Event:
    """The event of a hook payload, whatever its dialect's spelling."""
    if not isinstance(payload, dict):
        raise HookInputError("the hook's input is not a JSON object")
    name = _get(payload, "hook_event_name", "hookEventName")
    if not isinstance(name, str) or not name:
        raise HookInputError("the hook's input names no event (hook_event_name)")
    if dialect == "auto":
        if "hookEventName" in payload or "toolName" in payload:
            dialect = "vscode"
        elif "turn_id" in payload or _get(payload, "tool_name") in ("apply_patch", "shell"):
            dialect = "codex"
        else:
            dialect = "claude"
    cwd = _get(payload, "cwd") or os.getcwd()
    tool_input = _get(payload, "tool_input", "toolInput", "toolArgs")
    if isinstance(tool_input, str):  # some send the arguments as a JSON string
        try:
            tool_input = json.loads(tool_input)
        except json.JSONDecodeError:
            tool_input = {"command": tool_input}
    if tool_input is not None and not isinstance(tool_input, dict):
        raise HookInputError("the tool's input is not a JSON object")
    session = _get(payload, "session_id", "sessionId")
    return Event(
        dialect=dialect,
        name=name,
        cwd=Path(str(cwd)),
        session=str(session) if session else None,
        tool=_get(payload, "tool_name", "toolName"),
        tool_input=tool_input or {},
        tool_response=_get(payload, "tool_response", "toolResponse", "tool_output", "toolOutput"),
        stop_active=bool(_get(payload, "stop_hook_active", "stopHookActive")),
    )


# ------------------------------------------------------------------ proposed files


class NotApplicable(Exception):
    """The edit would fail as the agent wrote it (its text is not in the file): the
    agent's tool reports that; there is nothing to check."""


def _path(event: Event, value: Any) -> Path:
    if not isinstance(value, str) or not value:
        raise HookInputError(f"{event.tool}: no file path in the tool's input")
    path = Path(value)
    return path if path.is_absolute() else event.cwd / path


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def _replace(text: str, old: Any, new: Any, every: bool = False) -> str:
    if not isinstance(old, str) or not isinstance(new, str):
        raise HookInputError("an edit without old and new text")
    if old == "":
        if text:
            raise NotApplicable
        return new
    if old not in text:
        raise NotApplicable
    return text.replace(old, new) if every else text.replace(old, new, 1)


def proposed_files(event: Event) -> dict[Path, str | None]:
    """Each file the tool call would write, as it would be (None: deleted)."""
    tool, data = event.tool or "", event.tool_input
    if tool in _WRITE_TOOLS:
        path = _path(event, _get(data, "file_path", "filePath", "path"))
        content = _get(data, "content")
        if not isinstance(content, str):
            raise HookInputError(f"{tool}: no content in the tool's input")
        return {path: content}
    if tool in _EDIT_TOOLS:
        path = _path(event, _get(data, "file_path", "filePath", "path"))
        text = _replace(
            _read(path),
            _get(data, "old_string", "oldString"),
            _get(data, "new_string", "newString"),
            bool(_get(data, "replace_all", "replaceAll")),
        )
        return {path: text}
    if tool in _MULTI_EDIT_TOOLS:
        out: dict[Path, str | None] = {}
        if "edits" in data:  # Claude Code: one file, several edits
            path = _path(event, _get(data, "file_path", "filePath"))
            edits = [(path, e) for e in data.get("edits") or []]
        else:  # VS Code: a list of replacements, each naming its file
            edits = [
                (_path(event, _get(e, "file_path", "filePath")), e)
                for e in data.get("replacements") or []
                if isinstance(e, dict)
            ]
        for path, edit in edits:
            if not isinstance(edit, dict):
                raise HookInputError(f"{tool}: an edit that is not an object")
            out[path] = _replace(
                out[path] or "" if path in out else _read(path),
                _get(edit, "old_string", "oldString"),
                _get(edit, "new_string", "newString"),
                bool(_get(edit, "replace_all", "replaceAll")),
            )
        return out
    if tool in _PATCH_TOOLS:
        patch = _get(data, "command", "input", "patch")
        if isinstance(patch, list):  # ["apply_patch", "<patch>"]
            patch = next((p for p in patch if isinstance(p, str) and "*** Begin Patch" in p), "")
        if not isinstance(patch, str):
            raise HookInputError(f"{tool}: no patch in the tool's input")
        return apply_patch(patch, event.cwd)
    return {}


_PATCH_HEADER = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$")


def apply_patch(patch: str, cwd: Path) -> dict[Path, str | None]:
    """The files an `apply_patch` envelope (``*** Begin Patch`` … ``*** End Patch``, as
    Codex and VS Code write it) would leave, each as it would be (None: deleted)."""
    lines = patch.splitlines()
    out: dict[Path, str | None] = {}
    index = 0
    while index < len(lines):
        match = _PATCH_HEADER.match(lines[index])
        index += 1
        if match is None:
            continue
        action, name = match.group(1), match.group(2).strip()
        path = Path(name) if Path(name).is_absolute() else cwd / name
        source = path  # where the text comes from, if the file moves
        body: list[str] = []
        while index < len(lines):
            line = lines[index]
            if line.startswith("*** Move to:"):
                moved = line.split(":", 1)[1].strip()
                out[path] = None  # the old name is gone
                path = Path(moved) if Path(moved).is_absolute() else cwd / moved
            elif line.startswith("*** ") and line != "*** End of File":
                break  # the next file, or the end of the patch
            else:
                body.append(line)
            index += 1
        if action == "Delete":
            out[path] = None
        elif action == "Add":
            out[path] = "".join(line[1:] + "\n" for line in body if line.startswith("+"))
        else:
            earlier = out.get(source) if source == path else None
            original = earlier if earlier is not None else _read(source)
            out[path] = _apply_hunks(original, body)
    return out


def _apply_hunks(text: str, body: list[str]) -> str:
    lines = text.splitlines()
    position = 0
    hunks: list[list[str]] = []
    for line in body:
        if line.startswith("@@") or not hunks:
            hunks.append([])
            if line.startswith("@@"):
                continue
        if line == "*** End of File":
            continue
        hunks[-1].append(line)
    for hunk in hunks:
        old = [line[1:] for line in hunk if line[:1] in (" ", "-", "")]
        new = [line[1:] for line in hunk if line[:1] in (" ", "+", "")]
        if not old:
            lines[position:position] = new
            position += len(new)
            continue
        found = _find(lines, old, position)
        if found is None:
            raise NotApplicable
        lines[found : found + len(old)] = new
        position = found + len(new)
    return "\n".join(lines) + ("\n" if lines else "")


def _find(lines: list[str], block: list[str], start: int) -> int | None:
    for strip in (False, True):  # exact, then whitespace at the line ends ignored
        wanted = [b.rstrip() if strip else b for b in block]
        for at in (*range(start, len(lines) - len(block) + 1), *range(0, start)):
            window = lines[at : at + len(block)]
            if [x.rstrip() if strip else x for x in window] == wanted:
                return at
    return None


# --------------------------------------------------------------------------- answers


def deny(reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def block(reason: str) -> dict[str, Any]:
    """PostToolUse and Stop: ``decision: block`` feeds ``reason`` back to the agent."""
    return {"decision": "block", "reason": reason}


def context(event: Event, text: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event.name, "additionalContext": text}}


def fail_open(message: str) -> dict[str, Any]:
    return {"systemMessage": f"referee hook did not decide (the call goes through): {message}"}


# ------------------------------------------------------------------------ baselines


def _git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
        timeout=30,
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip() or f"git {args[0]} failed")
    return proc.stdout.strip()


def _session_ref(session: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", session)[:80] or "session"
    return f"{_SESSION_REFS}/{safe}"


def record_baseline(repo: Path, session: str) -> str:
    """A commit of the working tree as it is (untracked files that git does not ignore
    included), kept as the session's baseline ref. Returns its id."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        try:
            parent = _git(repo, "rev-parse", "--verify", "-q", "HEAD")
        except RuntimeError:
            parent = ""
        if parent:
            _git(repo, "read-tree", parent, env=env)
        _git(repo, "add", "-A", ".", env=env)
        tree = _git(repo, "write-tree", env=env)
    ident = {
        "GIT_AUTHOR_NAME": "referee",
        "GIT_AUTHOR_EMAIL": "referee@localhost",
        "GIT_COMMITTER_NAME": "referee",
        "GIT_COMMITTER_EMAIL": "referee@localhost",
    }
    args = ["commit-tree", tree, "-m", f"referee: baseline of agent session {session}"]
    if parent:
        args[2:2] = ["-p", parent]
    commit = _git(repo, *args, env=ident)
    _git(repo, "update-ref", _session_ref(session), commit)
    return commit


def baseline_of(repo: Path, session: str | None) -> str:
    """The session's recorded baseline, else HEAD."""
    if session:
        try:
            return _git(repo, "rev-parse", "--verify", "-q", _session_ref(session) + "^{commit}")
        except RuntimeError:
            pass
    return "HEAD"


def _state_file(repo: Path, session: str | None) -> Path:
    git_dir = Path(_git(repo, "rev-parse", "--absolute-git-dir"))
    name = hashlib.sha256((session or "-").encode()).hexdigest()[:16]
    return git_dir / "referee" / f"hook-{name}.json"


# ---------------------------------------------------------------------- the checks


def _settings(repo: Path, base: str) -> Any:
    from referee.checks.config import Settings, discover
    from referee.checks.guard import baseline as git

    settings = discover(repo, None)
    if settings.path is None:
        return Settings(settings.config, git.toplevel(repo), None)
    from referee.server.cli_guard import configuration_at_base

    return configuration_at_base(settings, base)


def _listing(findings: list[Any], repo: Path) -> str:
    lines = [
        f"- {f.path}:{f.span.start.line}: {f.code} {f.name}: {f.message}"
        for f in findings[:_MAX_LISTED]
    ]
    if len(findings) > _MAX_LISTED:
        lines.append(f"- … and {len(findings) - _MAX_LISTED} more (`referee guard --strict`)")
    return "\n".join(lines)


_WHAT_TO_DO = (
    "Fix the code under test instead of the test. If you believe the test itself is "
    "wrong, do not edit it: say so, and run `referee arbitrate <test id>`, which "
    "decides from sources that saw neither side and writes a certificate a person can "
    "accept. A waiver or certificate is a person's, never the agent's own."
)


def pre_tool_use(event: Event) -> dict[str, Any] | None:
    files = proposed_files(event)
    python = {p: t for p, t in files.items() if p.suffix == ".py"}
    if not python:
        return None  # not a file the checks read: silent
    from referee.checks.guard import baseline as git
    from referee.checks.guard.proposed import check_proposed

    first = next(iter(python))
    repo = git.toplevel(first.parent if first.parent.exists() else event.cwd)
    base = baseline_of(repo, event.session)
    settings = _settings(repo, base)
    errors = []
    for path, text in python.items():
        errors.extend(check_proposed(settings, path, text, base).errors)
    if not errors:
        return None
    where = "the session's start" if base != "HEAD" else "HEAD"
    reason = (
        f"referee: this edit would weaken the tests or fit the code to them "
        f"(compared with {where}):\n{_listing(errors, repo)}\n{_WHAT_TO_DO}"
    )
    return deny(reason)


def _tree_errors(event: Event) -> tuple[Path, list[Any]]:
    from referee.checks.guard import baseline as git
    from referee.checks.guard.proposed import check_tree
    from referee.checks.models import Severity

    repo = git.toplevel(event.cwd)
    base = baseline_of(repo, event.session)
    findings = check_tree(_settings(repo, base), repo, base)
    return repo, [f for f in findings if f.severity is Severity.ERROR]


def _key(finding: Any) -> str:
    return f"{finding.path}\0{finding.code}\0{finding.message}"


_TEST_COMMAND = re.compile(
    r"(?:^|[\s;&|(/])(?:pytest|py\.test|tox|nox|unittest|hatch\s+test|"
    r"make\s+(?:test|check)\w*|(?:uv|poetry|pdm)\s+run\s+(?:python\s+-m\s+)?pytest)\b"
)


def _command(event: Event) -> str:
    command = _get(event.tool_input, "command", "cmd", "commandLine")
    if isinstance(command, list):
        return " ".join(str(c) for c in command)
    return str(command or "")


def _output(response: Any) -> str:
    """What a shell command printed, from the dialect's tool response."""
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        parts = [_get(response, k) for k in ("stdout", "output", "stderr", "aggregated_output")]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _run_output_errors(event: Event, repo: Path) -> list[Any]:
    """L0's run-output rules (REF130: a run that ran nothing) on a test command's output,
    read as the log `referee check` would read."""
    if not _TEST_COMMAND.search(_command(event)):
        return []
    output = _output(event.tool_response)
    if not output.strip():
        return []
    from referee.checks.config import discover
    from referee.checks.engine import check_source
    from referee.checks.models import Severity
    from referee.checks.runner import RUN_LOG_RULES
    from referee.checks.source import SourceFile

    source = SourceFile("test-run.log", output, "text")
    findings = check_source(source, discover(repo, None), "test-run.log", only=RUN_LOG_RULES)
    return [f for f in findings if f.severity is Severity.ERROR]


def post_tool_use(event: Event) -> dict[str, Any] | None:
    if event.tool not in _SHELL_TOOLS:
        return None
    repo, errors = _tree_errors(event)
    ran = _run_output_errors(event, repo)
    state = _state_file(repo, event.session)
    try:
        seen = set(json.loads(state.read_text(encoding="utf-8")).get("reported", []))
    except (OSError, ValueError, AttributeError):
        seen = set()
    new = [f for f in errors if _key(f) not in seen]
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"reported": sorted(_key(f) for f in errors)}), "utf-8")
    parts = []
    if ran:
        parts.append(
            "referee: that test run ran nothing, whatever its summary says — it is no "
            f"evidence that the tests pass:\n{_listing(ran, repo)}\nMake the runner find "
            "the tests (paths, `-k`, `testpaths`) and run them again."
        )
    if new:
        parts.append(
            "referee: that command changed files the edit hook did not see, and the tests "
            f"are weaker for it:\n{_listing(new, repo)}\n{_WHAT_TO_DO}"
        )
    return block("\n\n".join(parts)) if parts else None


def stop(event: Event) -> dict[str, Any] | None:
    if event.stop_active:
        return None  # blocked once already: let the agent stop, a person reads CI
    repo, errors = _tree_errors(event)
    if not errors:
        return None
    return block(
        "referee: before you stop, the session's change weakens the tests "
        f"(`referee guard --strict`):\n{_listing(errors, repo)}\n{_WHAT_TO_DO}",
    )


def session_start(event: Event) -> dict[str, Any] | None:
    from referee.checks.guard import baseline as git

    repo = git.toplevel(event.cwd)
    commit = record_baseline(repo, event.session or "default")
    return context(
        event,
        f"referee guards this session: edits that weaken a test or fit the code to one are "
        f"refused, compared with the tree as it is now (baseline {commit[:12]}).",
    )


HANDLERS = {
    "PreToolUse": pre_tool_use,
    "PostToolUse": post_tool_use,
    "Stop": stop,
    "SubagentStop": stop,
    "SessionStart": session_start,
}


def decide(payload: Any, dialect: str = "auto") -> dict[str, Any] | None:
    """The answer to one hook payload (None: nothing to say, the call goes through).
    Raises on what the hook cannot decide; :func:`main` turns that into failing open."""
    event = parse_event(payload, dialect)
    handler = HANDLERS.get(event.name)
    if handler is None:
        return None
    try:
        return handler(event)
    except NotApplicable:
        return None


def _emit(answer: dict[str, Any] | None) -> None:
    if answer is not None:
        sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="referee hook",
        description="Answer one agent hook event (JSON on stdin) in the agent's own format: "
        "deny an edit that weakens a test or fits the code to one (PreToolUse), report "
        "shell writes that did (PostToolUse), block a Stop once while the session's change "
        "weakens the tests, record the session's baseline (SessionStart). Fails open, "
        "visibly, on anything it cannot decide. Set up with `referee init --agent`; see "
        "docs/agents.md.",
    )
    parser.add_argument(
        "--dialect",
        choices=DIALECTS,
        default="auto",
        help="the agent's format (default: auto, from the payload's spelling)",
    )
    parser.add_argument(
        "--serve",
        action="store_true",
        help="run as the warm hook process the command hands its events to (started on "
        "its own; $REFEREE_HOOK_DAEMON=0 turns it off)",
    )
    parser.add_argument(
        "--idle",
        type=float,
        default=900.0,
        metavar="SECONDS",
        help="with --serve: exit after this long without an event (default 900)",
    )
    parser.add_argument(
        "--deadline",
        type=float,
        default=float(os.environ.get("REFEREE_HOOK_DEADLINE", DEFAULT_DEADLINE_S)),
        metavar="SECONDS",
        help=f"past this, let the call through with a message (default {DEFAULT_DEADLINE_S:g};"
        " $REFEREE_HOOK_DEADLINE)",
    )
    return parser


def _trivial(payload: Any, dialect: str) -> bool:
    """Whether the answer is "nothing to say" without the engine: an edit of no Python
    file, a tool or an event the hook does not read."""
    try:
        event = parse_event(payload, dialect)
        if event.name not in HANDLERS:
            return True
        if event.name == "PostToolUse":
            return event.tool not in _SHELL_TOOLS
        if event.name == "PreToolUse":
            return not any(p.suffix == ".py" for p in proposed_files(event))
    except NotApplicable:
        return True
    except (HookInputError, OSError, ValueError):
        return False  # the full path says why, failing open
    return False


def _compute(payload: Any, dialect: str) -> dict[str, Any]:
    """``{"answer": ...}`` or ``{"open": why}``: never raises."""
    try:
        return {"answer": decide(payload, dialect)}
    except HookInputError as exc:
        return {"open": str(exc)}
    except Exception as exc:
        return {"open": f"{type(exc).__name__}: {exc}"}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.serve:
        from referee.server import hook_daemon

        return hook_daemon.serve(args.idle, _compute)
    try:
        raw = sys.stdin.buffer.read()
        payload = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return _open(f"its input is not JSON ({exc})")
    if _trivial(payload, args.dialect):
        return 0
    use_daemon = os.environ.get("REFEREE_HOOK_DAEMON", "1") != "0"
    if use_daemon:
        from referee.server import hook_daemon

        reply = hook_daemon.ask(payload, args.dialect, args.deadline)
        if reply is not None and os.environ.get("REFEREE_HOOK_TRACE"):
            sys.stderr.write("referee: hook: answered by the warm process\n")
        if reply is not None:
            if "open" in reply:
                return _open(reply["open"])
            _emit(reply.get("answer"))
            return 0
    result: dict[str, Any] = {}

    def work() -> None:
        result.update(_compute(payload, args.dialect))

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(args.deadline)
    if worker.is_alive():
        code = _open(f"no answer within its deadline of {args.deadline:g} s")
        sys.stdout.flush()
        os._exit(code)  # the check thread cannot be stopped; the answer is out
    if "open" in result:
        code = _open(result["open"])
    else:
        _emit(result.get("answer"))
        code = 0
    if use_daemon:
        hook_daemon.start()  # the next call is answered warm
    return code


def _open(message: str) -> int:
    sys.stderr.write(f"referee: hook: {message}; the call goes through\n")
    _emit(fail_open(message))
    return 0
