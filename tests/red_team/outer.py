"""The outer bound around referee in the red-team suite: pid 1 of a pid namespace of the
test's own (``unshare --pid --fork --mount-proc --kill-child``, a user namespace too when
unprivileged), under ``prlimit``.

It runs the command after ``--`` with the standard streams it was given (the command
line's output, or the language server's JSON-RPC), waits for it, reaps what was
orphaned to it, and then lists every process still alive in the namespace: what
survived referee. The list goes to the file named by ``$RED_TEAM_REPORT`` (not on the
command line: the attacks pick their victims by command line). When this process
exits, the kernel kills everything left in the namespace — whatever the attacks did,
nothing outlives the test.

Standard library only; it runs with the interpreter referee runs with.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def alive() -> list[dict[str, object]]:
    found = []
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/status", encoding="utf-8", errors="replace") as handle:
                status = dict(
                    line.split(":", 1) for line in handle.read().splitlines() if ":" in line
                )
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if status.get("State", "").strip().startswith("Z"):
            continue
        found.append(
            {"pid": int(name), "name": status.get("Name", "").strip(), "cmdline": cmdline[:300]}
        )
    return found


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    report = os.environ.pop("RED_TEAM_REPORT")
    started = time.monotonic()
    proc = subprocess.Popen(argv)
    returncode = proc.wait()
    elapsed = time.monotonic() - started
    # Children may still be on their way out: they have 1.5 s to go, looked for every
    # 50 ms (a fixed half-second wait after every run was 0.5 s of each of the suite's
    # 315 rows). None left is none for good: a process that is gone starts no other.
    deadline = time.monotonic() + 1.5
    while True:
        reap()
        survivors = alive()
        if not survivors or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    with open(report, "w", encoding="utf-8") as handle:
        json.dump({"returncode": returncode, "elapsed": elapsed, "survivors": survivors}, handle)
    return returncode


if __name__ == "__main__":
    sys.exit(main())
