"""`referee mcp`: referee's checks as tools of a stdio MCP server, for any agent that
speaks MCP (Claude Code, VS Code's agent, Cursor, Codex).

Each tool that checks code runs the `referee` command line in a child process and returns
its JSON report as structured data — the very models `referee check/guard/arbitrate
--format json` print, so an agent sees what CI sees — with the exit status beside it. A
crash of the engine or of the model (arbitration) ends that child, never this server.
Explaining a rule and listing the review queue are read in process.

Tools:

* ``check(paths)`` — L0 shape and L1 contract rules on files or directories;
* ``guard(base, strict, execute)`` — the anti-gaming guard against a git ref;
* ``check_edit(path, content)`` — what writing ``content`` to ``path`` would add (the
  pre-edit hook's check, for agents without hooks);
* ``arbitrate(test_id, apply)`` — which side of a failing test is wrong; writes a fix only
  with ``apply`` (and a test fix only with its certificate);
* ``explain_rule(code)`` — a rule's page;
* ``review_queue(all)`` — what waits for a person.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

_CHECK_TIMEOUT_S = 300
_ARBITRATE_TIMEOUT_S = 1800


def _referee(root: Path, *args: str, timeout: float) -> dict[str, Any]:
    """``referee ARGS`` in ``root``: its JSON report and exit status."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "referee", *args],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"exit_status": None, "error": f"referee {args[0]} ran past {timeout:g} s"}
    out: dict[str, Any] = {"exit_status": proc.returncode}
    try:
        out["report"] = json.loads(proc.stdout) if proc.stdout.strip() else None
    except json.JSONDecodeError:
        out["output"] = proc.stdout[-4000:]
    notes = [line for line in proc.stderr.splitlines() if line.strip()]
    if notes:
        out["notes"] = notes[-40:]
    return out


def build_server(root: Path) -> Any:
    """The MCP server, its tools working in the project at ``root``."""
    # Longer than 80 lines on purpose: a table of the tools, each a short function whose
    # docstring is the description agents read; there are no phases to name.
    from mcp.server import MCPServer

    from referee import __version__

    server = MCPServer(
        name="referee",
        version=__version__,
        instructions=(
            "referee keeps tests honest when the same author writes a function and its "
            "tests. Before finishing, run `guard` (strict) and fix what it reports in the "
            "code, not in the tests; `check_edit` tells whether an edit would weaken a "
            "test before you write it. A test you believe is wrong goes to `arbitrate`, "
            "never edited by hand."
        ),
    )

    @server.tool()
    def check(paths: list[str] | None = None) -> dict[str, Any]:
        """Run referee's L0 shape and L1 contract rules on files or directories (relative
        to the project; default: the whole project). Returns the JSON report of
        `referee check --format json` (findings with code, message, path, line, fix)
        and the exit status (1: an error-level finding)."""
        return _referee(
            root, "check", "--format", "json", *(paths or ["."]), timeout=_CHECK_TIMEOUT_S
        )

    @server.tool()
    def guard(base: str = "HEAD", strict: bool = True, execute: bool = False) -> dict[str, Any]:
        """Run the anti-gaming guard: every test changed since the git ref `base` compared
        with its version there (removed or weakened assertions, changed expected values,
        new skips, source special-cased for a test). `strict` is agent mode (every
        uncertified weakening an error); `execute` also runs the tests in the sandbox to
        find a test passing only by a value the change wrote into the code. Returns the
        JSON report and the exit status (1: a weakening)."""
        args = ["guard", "--base", base, "--format", "json"]
        args += ["--strict"] if strict else []
        args += ["--execute"] if execute else ["--no-execute"]
        return _referee(root, *args, timeout=_CHECK_TIMEOUT_S)

    @server.tool()
    def check_edit(path: str, content: str) -> dict[str, Any]:
        """Before writing a file: what writing `content` to `path` would add — L0 and the
        guard in agent mode against HEAD, only the findings the edit introduces. Returns
        `allowed` (false when the edit introduces an error) and the findings."""
        payload = {
            "hook_event_name": "PreToolUse",
            "cwd": str(root),
            "tool_name": "Write",
            "tool_input": {"file_path": str((root / path).resolve()), "content": content},
        }
        proc = subprocess.run(
            [sys.executable, "-m", "referee", "hook", "--deadline", "120"],
            input=json.dumps(payload),
            cwd=root,
            capture_output=True,
            text=True,
            timeout=_CHECK_TIMEOUT_S,
            check=False,
        )
        answer = json.loads(proc.stdout) if proc.stdout.strip() else {}
        decision = (answer.get("hookSpecificOutput") or {}).get("permissionDecision")
        out: dict[str, Any] = {"allowed": decision != "deny"}
        if decision == "deny":
            out["reason"] = answer["hookSpecificOutput"]["permissionDecisionReason"]
        if "systemMessage" in answer:
            out["note"] = answer["systemMessage"]
        return out

    @server.tool()
    def arbitrate(test_id: str, apply: bool = False) -> dict[str, Any]:
        """Decide which side of the failing test `test_id` (a pytest node id) is wrong,
        from sources that saw neither the function's body nor the assertion: TEST_WRONG,
        SOURCE_WRONG or UNCLEAR (queued for a person). With `apply`, writes the fix (a test
        fix with its certificate). Runs the local model: minutes on a CPU."""
        args = ["arbitrate", test_id, "--format", "json"] + (["--apply"] if apply else [])
        return _referee(root, *args, timeout=_ARBITRATE_TIMEOUT_S)

    @server.tool()
    def explain_rule(code: str) -> dict[str, Any]:
        """A rule's page by code or name (`REF302`, `expected-value-changed`): what it
        flags, why it matters, an example and what to do instead."""
        from referee.checks.registry import lookup
        from referee.checks.ruledocs import render_page

        rule = lookup(code)
        if rule is None:
            return {"error": f"no rule {code!r}; `referee rule` lists them"}
        return {
            "code": rule.code,
            "name": rule.name,
            "layer": rule.layer.value,
            "severity": rule.severity.value,
            "summary": rule.message,
            "page": render_page(rule),
            "url": rule.url,
        }

    @server.tool()
    def review_queue(all: bool = False) -> dict[str, Any]:
        """The L3 review queue: items the judge or arbitration could not settle, waiting
        for a person (with `all`, decided and outdated ones too)."""
        args = ["review", "--format", "json", "--root", str(root)] + (["--all"] if all else [])
        return _referee(root, *args, timeout=_CHECK_TIMEOUT_S)

    return server


TOOLS = ("check", "guard", "check_edit", "arbitrate", "explain_rule", "review_queue")


def serve(root: Path) -> None:
    build_server(root.resolve()).run("stdio")
