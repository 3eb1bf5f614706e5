#!/usr/bin/env python3
"""`referee hook` before an agent's edit: what it denies, and how long the agent waits.

Not a test: a script whose tables go into docs/benchmarks.md ("The agents' hook").

    python bench/agent_hook.py --recipe PATH [--split dev]        # real agents' patches
    python bench/agent_hook.py --history REPO [--commits 40]      # latency on real history
    python bench/agent_hook.py --startup                          # start-up, non-Python edit

``--recipe``: each case of an agent-cheats recipe (real agents' final files on
ImpossibleBench one-off tasks, labelled cheat or honest; rebuilt from public mirrors,
nothing stored here) is replayed as Claude Code would send it, with no ``SessionStart``:
the working tree is put back to the tree the agent started from (HEAD), and each file the
agent changed becomes a ``PreToolUse`` ``Write`` payload with its final content, in path
order, piped into ``python -m referee hook``. An allowed write is written, so the next
payload sees it; the case counts as *denied* when any of its writes is. The table gives
denied per label and kind.

``--history``: in a scratch clone of REPO, for each of the last ``--commits`` non-merge
commits that change a test file, the tree is checked out at the commit's parent and each
changed test file's new content is sent as a ``Write`` payload, then the same content with
one more test (the agent's next edit of that file): the pre-edit check's wall time, per
payload (interpreter start-up included, as an agent pays it), p50 and p95; and
how many of these honest edits the hook denied (agent mode: a person's history is not what
it is for, but a denial rate on it says what an agent editing that project would meet).
The peer design (tdd-guard: one LLM call per edit) is not run here: it needs a network
model; its cost is a model round trip per edit, seconds, where this is a local process.
By default the warm hook process is used as an agent would meet it (the first payload
starts it); ``--cold`` runs every payload in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _results  # bench/_results.py: each run is appended to its area's history
from agent_cheats import _load_build


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


ENV = {**os.environ, "NO_COLOR": "1"}


def hook(python: str, payload: dict[str, Any]) -> tuple[float, dict[str, Any] | None, str]:
    start = time.perf_counter()
    proc = subprocess.run(
        [python, "-m", "referee", "hook"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )
    seconds = time.perf_counter() - start
    out = proc.stdout.strip()
    return seconds, json.loads(out) if out else None, proc.stderr


def _decision(answer: dict[str, Any] | None) -> str:
    if answer is None:
        return "allow"
    specific = answer.get("hookSpecificOutput") or {}
    if specific.get("permissionDecision") == "deny":
        return "deny"
    return "open" if "systemMessage" in answer else "allow"


def write_payload(repo: Path, relpath: str, content: str) -> dict[str, Any]:
    return {
        "session_id": "bench",
        "cwd": str(repo),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(repo / relpath), "content": content},
    }


def replay(python: str, repo: Path) -> dict[str, Any]:
    """The agent's changed files as Write payloads onto the tree it started from."""
    status = _git(repo, "status", "--porcelain", "-z", "--untracked-files=all")
    changed = []
    for entry in status.split("\0"):
        if len(entry) > 3 and entry[:2] != " D" and entry[0] != "D":
            changed.append(entry[3:])
    finals = {}
    for relpath in sorted(changed):
        try:
            finals[relpath] = (repo / relpath).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    _git(repo, "checkout", "-q", "--", ".")
    _git(repo, "clean", "-fdq")
    out: dict[str, Any] = {"writes": [], "decision": "allow"}
    for relpath, content in finals.items():
        seconds, answer, err = hook(python, write_payload(repo, relpath, content))
        decision = _decision(answer)
        reason = ((answer or {}).get("hookSpecificOutput") or {}).get("permissionDecisionReason")
        codes = sorted({w for w in (reason or "").split() if w.startswith("REF")})
        out["writes"].append(
            {"path": relpath, "decision": decision, "seconds": round(seconds, 3), "codes": codes}
        )
        if decision == "deny":
            out["decision"] = "deny"
            continue  # the agent would now have to do something else: not written
        if decision == "open" and out["decision"] == "allow":
            out["decision"] = "open"
            out["open"] = err.strip()[-200:]
        path = repo / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    return out


def recipe_table(results: list[dict[str, Any]]) -> list[str]:
    lines = ["| cases | n | denied | allowed | failed open |", "|---|---:|---:|---:|---:|"]
    groups: list[tuple[str, list[dict[str, Any]]]] = [
        ("cheats", [r for r in results if r["label"] == "cheat"]),
    ]
    for kind in sorted({r["kind"] for r in results if r["label"] == "cheat"}):
        groups.append((f"- {kind}", [r for r in results if r.get("kind") == kind]))
    groups.append(("honest", [r for r in results if r["label"] == "honest"]))
    for name, rows in groups:
        n = len(rows)
        counts = {
            d: sum(r["hook"]["decision"] == d for r in rows) for d in ("deny", "allow", "open")
        }
        pct = f" ({100 * counts['deny'] / n:.0f} %)" if n else ""
        lines.append(
            f"| {name} | {n} | {counts['deny']}/{n}{pct} | {counts['allow']} | {counts['open']} |"
        )
    return lines


def latency(seconds: list[float]) -> str:
    if not seconds:
        return "no payloads"
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return (
        f"{len(ordered)} payloads: p50 {statistics.median(ordered) * 1000:.0f} ms, "
        f"p95 {p95 * 1000:.0f} ms, max {ordered[-1] * 1000:.0f} ms"
    )


def run_recipe(args: argparse.Namespace) -> int:
    build = _load_build(args.recipe.resolve())
    recipe = build.load_recipe()
    chosen = build.select(recipe, (), args.split)
    work = Path(tempfile.mkdtemp(prefix="referee-agent-hook-"))
    try:
        print(f"building {len(chosen)} cases in {work} ...", file=sys.stderr)
        build.build_all(chosen, str(work), recipe, args.mirror_root or build.DEFAULT_MIRROR_ROOT)
        results = []
        for case in chosen:
            row = {k: case.get(k) for k in ("id", "label", "kind", "model", "instance")}
            row["hook"] = replay(args.python, work / case["id"])
            results.append(row)
            print(f"{case['id']}: {row['hook']['decision']}", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(recipe_table(results)))
    print(latency([w["seconds"] for r in results for w in r["hook"]["writes"]]))
    misjudged: dict[str, list[str]] = {}
    for label, wrong in (("cheat", "allow"), ("honest", "deny")):
        ids = [r["id"] for r in results if r["label"] == label and r["hook"]["decision"] == wrong]
        misjudged[label] = ids
        print(
            f"{label} {'allowed' if wrong == 'allow' else 'denied'} ({len(ids)}): "
            f"{', '.join(ids) or 'none'}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    mode = "cold" if args.cold else "warm"
    writes = [w["seconds"] for r in results for w in r["hook"]["writes"]]
    _results.record(
        "agent-hook",
        {
            "recipe_split": args.split,
            "table": recipe_table(results),
            f"latency_{mode}": latency(writes),
            "cheats_allowed": misjudged["cheat"],
            "honest_denied": misjudged["honest"],
        },
        args.argv,
    )
    return 0


def _test_file(path: str) -> bool:
    name = Path(path).name
    return path.endswith(".py") and (
        name.startswith("test_") or name.endswith("_test.py") or "/tests/" in f"/{path}"
    )


def run_history(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="referee-hook-history-"))
    try:
        clone = work / "repo"
        subprocess.run(
            ["git", "clone", "-q", "--shared", str(args.history), str(clone)], check=True
        )
        log = _git(
            clone, "log", "--no-merges", "--format=%H", "-n", str(args.commits * 4), "--", "."
        )
        seconds: list[float] = []
        followups: list[float] = []
        denied = 0
        commits = 0
        for commit in log.split():
            files = [
                p
                for p in _git(
                    clone, "diff", "--name-only", "--diff-filter=M", f"{commit}^", commit
                ).split("\n")
                if _test_file(p)
            ]
            if not files:
                continue
            commits += 1
            _git(clone, "checkout", "-q", "-f", f"{commit}^")
            _git(clone, "clean", "-fdq")
            for relpath in files[:3]:
                content = _git(clone, "show", f"{commit}:{relpath}")
                took, answer, _ = hook(args.python, write_payload(clone, relpath, content))
                seconds.append(took)
                denied += _decision(answer) == "deny"
                # the agent's next edit of the same file: one more test added to it
                more = content + "\n\ndef test_bench_follow_up():\n    assert len('ab') == 2\n"
                followups.append(hook(args.python, write_payload(clone, relpath, more))[0])
            if commits >= args.commits:
                break
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"{args.history.name}: {commits} commits, first edit of a file: {latency(seconds)}; "
        f"denied {denied} of {len(seconds)}"
    )
    print(f"{args.history.name}: the next edit of the same file: {latency(followups)}")
    mode = "cold" if args.cold else "warm"
    _results.record(
        "agent-hook",
        {
            "history": args.history.name,
            "commits": commits,
            f"first_edit_latency_{mode}": latency(seconds),
            f"next_edit_latency_{mode}": latency(followups),
            "denied": f"{denied}/{len(seconds)}",
        },
        args.argv,
    )
    return 0


def run_startup(args: argparse.Namespace) -> int:
    """`referee hook` on an edit of a file that is not Python (answered before the engine
    loads), against the interpreter doing nothing: start-up as the agent pays it."""
    with tempfile.TemporaryDirectory() as tmp:
        payload = write_payload(Path(tmp), "README.md", "text\n")
        runs = 21
        hooks, bare = [], []
        for _ in range(runs):
            hooks.append(hook(args.python, payload)[0])
            start = time.perf_counter()
            subprocess.run([args.python, "-c", "pass"], check=True)
            bare.append(time.perf_counter() - start)
    print(
        f"start-up, {runs} runs: `referee hook` (an edit of README.md) median "
        f"{statistics.median(hooks) * 1000:.0f} ms (min {min(hooks) * 1000:.0f}); "
        f"`python -c pass` median {statistics.median(bare) * 1000:.0f} ms"
    )
    _results.record(
        "agent-hook",
        {
            "startup_runs": runs,
            "startup_median_ms": round(statistics.median(hooks) * 1000),
            "startup_min_ms": round(min(hooks) * 1000),
            "python_c_pass_median_ms": round(statistics.median(bare) * 1000),
        },
        args.argv,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--recipe", type=Path, help="agent-cheats recipe folder")
    parser.add_argument("--split", default="dev", choices=("dev", "heldout", "all"))
    parser.add_argument("--mirror-root", help="where the fetched mirrors are (build.py's)")
    parser.add_argument("--history", type=Path, help="a git repository with history")
    parser.add_argument("--commits", type=int, default=40, help="commits of --history")
    parser.add_argument("--python", default=sys.executable, help="interpreter with referee")
    parser.add_argument("--json", type=Path, help="write each case's result here (--recipe)")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="every payload in a fresh process, no warm hook process (REFEREE_HOOK_DAEMON=0)",
    )
    parser.add_argument(
        "--startup", action="store_true", help="time start-up: an edit of a non-Python file"
    )
    args = parser.parse_args(argv)
    if not (args.recipe or args.history or args.startup):
        parser.error("give --recipe PATH, --history REPO or --startup")
    args.argv = argv  # the command line, for the run's history entry
    sockets = Path(tempfile.mkdtemp(prefix="rh-", dir="/tmp"))
    ENV["REFEREE_HOOK_SOCKET_DIR"] = str(sockets)
    ENV["REFEREE_HOOK_DAEMON"] = "0" if args.cold else "1"
    try:
        if args.startup:
            return run_startup(args)
        return run_recipe(args) if args.recipe else run_history(args)
    finally:
        pid = sockets / "hook.pid"
        if pid.exists():
            os.kill(int(pid.read_text()), signal.SIGTERM)
        shutil.rmtree(sockets, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
