"""The warm hook process: `referee hook` hands its event to it and prints its answer.

An agent runs `referee hook` before every edit. Started cold, the command spends most of
its time importing the engine; a warm process that has it loaded answers in the time the
check takes. So the first event is answered in process, which then starts
``referee hook --serve`` in the background; later events go to it over a Unix socket
(``$REFEREE_HOOK_SOCKET_DIR``, else ``$XDG_RUNTIME_DIR/referee``, else
``/tmp/referee-<uid>``: a directory only its user may enter).

Each event is decided from the files and git as they are then, exactly as in process;
what it keeps is only what the same text always gives (the engine's incremental state per
edited file, facts per text). It answers one event at a time, exits after ``--idle``
seconds without one, and exits as soon as it notices that referee's own code changed
(an upgrade, an edit of an editable install): a client whose code differs is told it is
stale and decides in process. Anything wrong with it (no socket, a dead process, a
directory another user owns) and the client decides in process; a daemon that takes
longer than the client's deadline makes the client fail open, as in process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

_SOCKET = "hook.sock"
_MAX_REQUEST = 64 * 1024 * 1024
_CONNECT_TIMEOUT_S = 0.2


def socket_dir() -> Path | None:
    """The daemon's directory, created private; None where it is not ours alone."""
    configured = os.environ.get("REFEREE_HOOK_SOCKET_DIR")
    if configured:
        base = Path(configured)
    elif os.environ.get("XDG_RUNTIME_DIR"):
        base = Path(os.environ["XDG_RUNTIME_DIR"]) / "referee"
    else:
        base = Path(tempfile.gettempdir()) / f"referee-{os.getuid()}"
    try:
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = base.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None  # a link, or a directory someone else can enter: not a safe place
    if len(str(base / _SOCKET)) > 100:  # AF_UNIX paths are short
        return None
    return base


@lru_cache(maxsize=1)
def build_key() -> str:
    """referee's version and the newest change to its code: what a daemon must share
    with its client."""
    from referee import __version__

    top = Path(__file__).resolve().parent.parent
    newest = 0
    for folder in (top / "checks", top / "server", Path(__file__).resolve().parent):
        for current, _dirs, files in os.walk(folder):
            for name in files:
                if name.endswith((".py", ".toml")):
                    with contextlib.suppress(OSError):
                        newest = max(newest, os.stat(os.path.join(current, name)).st_mtime_ns)
    return f"{__version__}:{newest}"


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(json.dumps(message).encode("utf-8") + b"\n")


def _receive(conn: socket.socket) -> dict[str, Any] | None:
    chunks = []
    size = 0
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n") or size > _MAX_REQUEST:
            break
    try:
        data = json.loads(b"".join(chunks).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def ask(payload: Any, dialect: str, deadline: float) -> dict[str, Any] | None:
    """The warm process's answer (``{"answer": ...}`` or ``{"open": why}``), or None
    when there is no usable one: the caller decides in process."""
    directory = socket_dir()
    if directory is None or not (directory / _SOCKET).exists():
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(_CONNECT_TIMEOUT_S)
        conn.connect(str(directory / _SOCKET))
        conn.settimeout(deadline)
        _send(
            conn,
            {"key": build_key(), "cwd": os.getcwd(), "dialect": dialect, "payload": payload},
        )
        reply = _receive(conn)
    except TimeoutError:
        return {"open": f"no answer within its deadline of {deadline:g} s"}
    except OSError:
        return None
    finally:
        conn.close()
    if reply is None or reply.get("stale"):
        return None
    return reply


def start() -> None:
    """Start the warm process in the background, if none runs (it refuses to start
    twice: the socket is taken)."""
    directory = socket_dir()
    if directory is None:
        return
    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-m", "referee", "hook", "--serve"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
            cwd=directory,
        )


def _alive(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(_CONNECT_TIMEOUT_S)
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def serve(idle: float, compute: Callable[[Any, str], dict[str, Any]]) -> int:
    """Answer events with ``compute`` (the hook's check of one event) until ``idle``
    seconds pass without one, or referee's code changes."""
    from referee.checks.process import name_process

    name_process("referee-hookd")
    directory = socket_dir()
    if directory is None:
        sys.stderr.write("referee: hook: no private directory for the warm process\n")
        return 2
    path = directory / _SOCKET
    if path.exists():
        if _alive(path):
            return 0  # one runs already
        with contextlib.suppress(OSError):
            path.unlink()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
    except OSError:
        return 0  # another one won the race
    os.chmod(path, 0o600)
    pid_file = directory / "hook.pid"
    pid_file.write_text(f"{os.getpid()}\n", encoding="utf-8")
    # SIGTERM ends it as the idle timeout does: the socket goes with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.listen(8)
    server.settimeout(idle)
    key = build_key()
    import referee.checks.guard.proposed  # noqa: F401 - warm: the engine, loaded once

    try:
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                break
            with conn:
                conn.settimeout(30)
                try:
                    request = _receive(conn)
                except OSError:
                    continue
                if request is None:
                    continue
                if request.get("key") != key:
                    _send(conn, {"stale": True})
                    break  # a client of other code: it decides itself; this one retires
                with contextlib.suppress(OSError):
                    os.chdir(str(request.get("cwd") or directory))
                reply = compute(request.get("payload"), str(request.get("dialect") or "auto"))
                with contextlib.suppress(OSError):
                    _send(conn, reply)
            build_key.cache_clear()
            if build_key() != key:
                break
    finally:
        server.close()
        with contextlib.suppress(OSError):
            path.unlink()
        with contextlib.suppress(OSError):
            pid_file.unlink()
    return 0
