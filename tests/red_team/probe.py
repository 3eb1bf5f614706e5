"""What the sandbox contains on this machine, in this mode, found by trying (not by names):
the red-team suite expects a row to be contained only where a probe says the mechanism
it needs is in force, and marks the others xfail — so they turn into ordinary tests by
themselves when the kernel boundary (issue 19) lands.

Run as ``python probe.py READABLE_FILE`` with the interpreter and user referee runs with;
prints one JSON object:

- ``fs_boundary``: a sandboxed program can read neither with ``open`` nor by native code
  a world-readable file outside its directory (the file system is the kernel's to
  refuse, not the audit hook's);
- ``processes_bound``: a sandboxed program cannot start even one process by native code
  (``fork`` through ctypes, which no audit hook sees);
- ``disk_bound``: the sandbox's limits have a field for the disk of the run directory;
- ``uid``: the uid a sandboxed program runs as; ``containment``: what the sandbox reports.
"""

from __future__ import annotations

import json
import sys

from referee.checks import sandbox

READ = """
import ctypes

def probe(path):
    seen = []
    try:
        with open(path) as handle:
            seen.append("open:" + handle.read(20))
    except OSError:
        pass
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.open(path.encode(), 0)
    if fd >= 0:
        seen.append("ctypes")
        libc.close(fd)
    return seen
"""

FORK = """
import ctypes, os

def probe():
    libc = ctypes.CDLL(None, use_errno=True)
    forked = 0
    for _ in range(3):
        pid = libc.fork()
        if pid == 0:
            libc._exit(0)
        if pid > 0:
            forked += 1
            os.waitpid(pid, 0)
    return [forked, os.getuid()]
"""


def main() -> None:
    readable = sys.argv[1]
    limits = sandbox.Limits(timeout_s=20)
    read = sandbox.evaluate(READ, f"probe({readable!r})", limits=limits)
    fork = sandbox.evaluate(FORK, "probe()", limits=limits)
    forked, uid = fork.value_json if fork.status == "ok" else (None, None)
    print(
        json.dumps(
            {
                "fs_boundary": read.status == "ok" and read.value_json == [],
                "processes_bound": forked == 0,
                "disk_bound": any("disk" in name for name in sandbox.Limits.model_fields),
                "uid": uid,
                "containment": list(read.containment),
                "read": read.value if read.status == "ok" else read.message,
                "fork": fork.value if fork.status == "ok" else fork.message,
            }
        )
    )


if __name__ == "__main__":
    main()
