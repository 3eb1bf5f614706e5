"""``referee serve`` for the test suite, forked from a process that has imported it.

A language server's start is mostly imports: lsprotocol's types alone take 0.8 s of CPU
(about a thousand attrs classes, the same for every pygls server), referee's engine 0.4 s
more. The suite starts about a hundred and twenty servers, one per test that opens a
session: about three minutes of its CPU, and the same imports every time.

Here a *zygote* per pytest worker imports what ``referee serve`` imports, once, and
forks a server for each session. The test still starts a process and talks to it over
its stdin and stdout, as an editor does: that process is the *launcher* (this file, run
with ``python -I -S``: the standard library only, a few milliseconds), which hands its
three standard descriptors, its arguments, environment and working directory to the
zygote over a unix socket, and then stands for the server: a signal it gets is passed
on, and it exits as the server did. The server forked for it is a fresh copy of a
process that has run nothing but imports; it sets the launcher's environment, working
directory and arguments, and runs referee's entry point as ``python -m referee`` would.

What a fork does not give (an interpreter started with the test's ``PYTHON*``
variables) the launcher falls back to for itself: it then runs ``python -m referee``
as before. Tests about the server as an operating-system process (its children, its
pid, signals) start it the usual way (:data:`lsp.harness.SERVER`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
from typing import NoReturn

# what the launcher sends (with the descriptors): 8 bytes of length, then a JSON header
_MAX_HEADER = 1 << 20


# ------------------------------------------------------------------------ the launcher


def launch(path: str, args: list[str]) -> int:
    """Run ``referee *args`` in a fork of the zygote at ``path``; return its exit status."""
    env = dict(os.environ)
    if any(k.startswith("PYTHON") and env.get(k) != _ZYGOTE_ENV.get(k) for k in env):
        _exec(args)  # an interpreter setting the zygote did not start with
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except OSError:
        _exec(args)  # no zygote (it ended with its worker): start the usual way
    header = json.dumps({"argv": ["referee", *args], "env": env, "cwd": os.getcwd()})
    data = header.encode("utf-8")
    # its length first: the connection stays open both ways (closed, it means the
    # launcher is gone)
    socket.send_fds(conn, [len(data).to_bytes(8, "big") + data], [0, 1, 2])
    reply = conn.makefile("r", encoding="utf-8")
    first = reply.readline()
    if not first.strip():
        _exec(args)  # the zygote could not fork it
    pid = int(first)

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    # The server holds the client's pipes now; the launcher keeps none of them open, so
    # that the client sees the server's end of them as the server's alone.
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    line = reply.readline()  # "<status>": how the server ended (from waitpid)
    status = int(line) if line.strip() else 0
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return os.waitstatus_to_exitcode(status) if line.strip() else 1


def _exec(args: list[str]) -> None:
    os.execv(sys.executable, [sys.executable, "-m", "referee", *args])


# ------------------------------------------------------------------------ the zygote

_ZYGOTE_ENV: dict[str, str] = {}  # the launcher reads the zygote's from its argument


def zygote(path: str) -> None:
    """Import what ``referee serve`` imports, then fork a server for each connection on
    the unix socket ``path`` until the process that started this one is gone."""
    import selectors

    sys.path.pop(0)  # this file's directory: nothing is imported from it
    import referee.server.cli
    import referee.server.lsp  # noqa: F401

    parent = os.getppid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    print("ready", flush=True)
    while os.getppid() == parent:
        for key, _ in selector.select(timeout=1.0):
            if key.data is None:
                conn, _ = listener.accept()
                pid = _fork_server(conn, selector)
                if pid is None:
                    conn.close()
                    continue
                pidfd = os.pidfd_open(pid)
                selector.register(pidfd, selectors.EVENT_READ, ("exited", pid, conn))
                selector.register(conn, selectors.EVENT_READ, ("launcher", pid, pidfd))
            elif key.data[0] == "exited":
                _, pid, conn = key.data
                _, status = os.waitpid(pid, 0)
                selector.unregister(key.fd)
                os.close(key.fd)
                _tell(conn, f"{status}\n")
                if conn.fileno() != -1:
                    selector.unregister(conn)
                    conn.close()
            elif key.fileobj.fileno() != -1:  # the launcher hung up before its server
                _, pid, _pidfd = key.data  # ended (it was killed): so is the server
                selector.unregister(key.fileobj)
                key.fileobj.close()
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _tell(conn: socket.socket, text: str) -> None:
    with contextlib.suppress(OSError):
        conn.sendall(text.encode("ascii"))


def _fork_server(conn: socket.socket, selector) -> int | None:
    """Read a launcher's request and fork its server; the server's pid (None: a bad
    request)."""
    data, fds, _, _ = socket.recv_fds(conn, _MAX_HEADER, 3)
    size = int.from_bytes(data[:8], "big") if len(data) >= 8 else -1
    data = data[8:]
    while 0 <= len(data) < size and (chunk := conn.recv(size - len(data))):
        data += chunk
    if len(fds) != 3 or size < 0 or len(data) != size:
        for fd in fds:
            os.close(fd)
        return None
    request = json.loads(data)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        for fd in fds:
            os.close(fd)
        _tell(conn, f"{pid}\n")
        return pid
    # the server
    try:
        for key in list(selector.get_map().values()):  # other servers' pidfds, launchers
            if isinstance(key.fileobj, int):
                os.close(key.fileobj)
            else:
                key.fileobj.close()
        selector.close()
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        sys.path.insert(0, os.getcwd())  # as `python -m` puts it first
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = list(request["argv"])
        _run_referee()
    except BaseException:
        import traceback

        traceback.print_exc()
    os._exit(70)  # only where referee raised before it could leave


def _run_referee() -> NoReturn:
    """``python -m referee``, in this process, ended as the command line ends it
    (:func:`referee.server.cli.leave`: threads joined, exit handlers run, streams
    flushed); the exit status where ``leave`` was not reached (70: it raised)."""
    from referee.server.cli import leave
    from referee.server.entry import main

    try:
        main()
        code: object = 0
    except SystemExit as stop:
        code = stop.code
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    leave(code or 0)


if __name__ == "__main__":
    if sys.argv[1] == "--zygote":
        zygote(sys.argv[2])
    else:  # launcher: zygote.py SOCKET ZYGOTE_ENV_FILE -- referee's arguments
        path, env_file, sep, *rest = sys.argv[1:]
        with open(env_file, encoding="utf-8") as handle:
            _ZYGOTE_ENV.update(json.load(handle))
        sys.exit(launch(path, rest))
