"""Child processes: starting one in its own process group, asking whether it has exited,
ending it (or its whole group), and reading its output against a deadline.

"Has it exited?" has two answers, for two uses, and each has its own name here:

- :func:`exited_unreaped` — the sandbox's question: it has exited, asked without reaping
  it, so its pid (and its process group's id, which is the same number) stays ours until
  we kill the group: the group's other members cannot be mistaken for a stranger's.
- :func:`dead_or_dying` — the model worker's question: is it past answering? A killed
  process with threads shows as a zombie while its other threads unwind, and cannot be
  waited for until they have; a request sent in that window would look like a crash of
  its own.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Any


def name_process(name: str) -> None:
    """Give this process ``name`` (15 bytes at most) where ``ps``, ``top`` and the kernel's
    process accounting read it: ``referee-model`` busy at 100 % says more than ``python``.
    Linux only; elsewhere, or where ``/proc`` is not there, the name stays as it was."""
    with contextlib.suppress(OSError), open("/proc/self/comm", "w", encoding="utf-8") as comm:
        comm.write(name.encode("utf-8")[:15].decode("utf-8", "ignore"))


def start_in_own_group(command: Sequence[str], **options: Any) -> subprocess.Popen[bytes]:
    """``command`` started in a new session, so in a process group of its own (its pid is
    the group's id): :func:`kill_group` then ends it and everything it started."""
    return subprocess.Popen(command, start_new_session=True, close_fds=True, **options)


def run_in_own_group(
    command: Sequence[str], timeout: float, **options: Any
) -> tuple[int | None, bytes, bool]:
    """(exit status, stdout, whether it ran out of ``timeout``) of ``command`` run to its
    end in a group of its own. The group is killed when time runs out, and again after it
    exits: whatever it left running (a test's server, a stuck child) goes with it."""
    proc = start_in_own_group(command, stdout=subprocess.PIPE, **options)
    timed_out = False
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group(proc.pid)
        output, _ = proc.communicate()
    finally:
        kill_group(proc.pid)
    return proc.returncode, output, timed_out


def exited_unreaped(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the process has exited, without reaping it where the OS allows (its pid,
    and so its process group's id, stays ours until the group is killed)."""
    if not hasattr(os, "waitid"):  # macOS
        return proc.poll() is not None
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def dead_or_dying(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the process is gone or going: exited, or (Linux) a zombie or dead in its
    ``/proc`` state while its threads still unwind. ``poll()`` alone would say no then."""
    if proc.poll() is not None:
        return True
    try:
        with open(f"/proc/{proc.pid}/stat", encoding="ascii", errors="replace") as handle:
            state = handle.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state in {"Z", "X", "x"}


def kill_group(pgid: int) -> None:
    """SIGKILL every process of the group ``pgid``; nothing when it is gone already."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_and_reap(proc: subprocess.Popen[bytes], reap_s: float = 5.0) -> None:
    """SIGKILL the process and wait up to ``reap_s`` for it, whatever state it is in."""
    with contextlib.suppress(OSError):
        proc.kill()
    with contextlib.suppress(Exception):
        proc.wait(timeout=reap_s)


def wait_then_kill(proc: subprocess.Popen[bytes], grace_s: float, reap_s: float = 5.0) -> None:
    """Give the process ``grace_s`` to exit by itself (it was asked to), then kill it."""
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        kill_and_reap(proc, reap_s)


def read_exact(fd: int, count: int, deadline: Callable[[], float], alive: Callable[[], None]):
    """``count`` bytes from ``fd``, waiting in short slices so that ``alive`` (which may
    raise) runs between them and the ``deadline`` (a monotonic time, re-read each slice) is
    kept; b"" on end of file. TimeoutError past the deadline."""
    chunks: list[bytes] = []
    while count:
        remaining = deadline() - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        ready, _, _ = select.select([fd], [], [], min(0.05, remaining))
        if not ready:
            alive()
            continue
        chunk = os.read(fd, min(count, 1 << 20))
        if not chunk:
            return b""
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)
