"""The first code every sandbox process runs (see ``referee.checks.sandbox``).

referee never imports this module: ``sandbox.py`` passes its source to ``python -c``, so
the child needs nothing but the standard library. It runs with a scrubbed environment in
a fresh temporary directory, reads its job, contains itself, then runs the untrusted code:

1. ``unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID)`` where the kernel allows it: no
   network interface but a downed loopback, and a fork whose child is pid 1 of a new pid
   namespace, so it cannot see or signal referee, and every process it starts dies with it;
2. resource limits with equal soft and hard values (CPU, address space, file size, core
   dumps, processes), which the code cannot raise again;
3. an audit hook (best effort against Python code, no boundary against native code) that
   refuses writes outside the directory, signals outside the sandbox's process group,
   reading other processes' ``/proc`` entries, sockets when no network namespace could be
   made, and new processes when none are allowed.

Results travel as JSON lines over the file descriptor named in the job, never over stdout.
"""

import contextlib
import json
import os
import sys

CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
PR_SET_NO_NEW_PRIVS = 38


def _send(fd, message):
    data = (json.dumps(message, ensure_ascii=True) + "\n").encode("ascii")
    while data:
        data = data[os.write(fd, data) :]


def _libc():
    try:
        import ctypes

        return ctypes, ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        return None, None


def _write(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode("ascii"))
    finally:
        os.close(fd)


def _unshare(containment):
    """New user, network and pid namespaces, or as many of them as the kernel allows."""
    if not sys.platform.startswith("linux"):
        return False, False
    _, libc = _libc()
    if libc is None:
        return False, False
    uid, gid = os.getuid(), os.getgid()
    for flags in (CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID, CLONE_NEWUSER | CLONE_NEWNET):
        if libc.unshare(flags) == 0:
            break
    else:
        return False, False
    # Map our own ids, so that files created here have an owner and getuid() looks the same.
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
    except OSError:
        pass
    containment += ["userns", "netns"]
    pidns = bool(flags & CLONE_NEWPID)
    if pidns:
        containment.append("pidns")
    return True, pidns


def _no_new_privs(containment):
    _, libc = _libc()
    if libc is not None and libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0:
        containment.append("no-new-privs")


def _end_like(status):
    """End this process the way the one with wait status ``status`` ended."""
    import signal

    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status))


def _enter_pid_namespace(channel):
    """Fork twice: pid 1 of the new namespace only reaps, and the code runs as its child,
    an ordinary process (pid 1 ignores signals it has no handler for, SIGXCPU included).
    When pid 1 exits the kernel kills everything left in the namespace. Returns in the
    worker; the other two end as the worker ended."""
    read_end, write_end = os.pipe()
    init = os.fork()
    if init:  # outside the namespace: wait for pid 1's report
        os.close(write_end)
        os.close(channel)
        report = b""
        while True:
            chunk = os.read(read_end, 64)
            if not chunk:
                break
            report += chunk
        os.waitpid(init, 0)
        try:
            status = int(report)
        except ValueError:
            os._exit(70)
        _end_like(status)
    os.close(read_end)
    worker = os.fork()
    if worker:  # pid 1
        os.close(channel)
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except InterruptedError:
                continue
            except ChildProcessError:
                os._exit(70)
            if pid == worker:
                break
        os.write(write_end, str(status).encode("ascii"))
        os._exit(0)
    os.close(write_end)


def _own_processes(uid):
    """How many processes this user runs now (what RLIMIT_NPROC counts outside a userns)."""
    count = 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as handle:
                for line in handle:
                    if line.startswith("Uid:"):
                        count += int(line.split()[1]) == uid
                        break
        except (OSError, ValueError, IndexError):
            continue
    return count


def _no_core_dumps():
    import resource

    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _limits(limits, containment, pidns, userns):
    import resource

    def cap(which, value):
        try:
            _, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(which, (value, value))
            return True
        except (ValueError, OSError):
            return False

    mb = 1024 * 1024
    # The soft CPU limit sends SIGXCPU; one more second and the kernel sends SIGKILL.
    try:
        cpu = limits["cpu_s"]
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        ok = True
    except (ValueError, OSError):
        ok = False
    applied = ok & cap(resource.RLIMIT_AS, limits["memory_mb"] * mb)
    applied &= cap(resource.RLIMIT_FSIZE, limits["file_size_mb"] * mb)
    if applied:
        containment.append("rlimits")
    # RLIMIT_NPROC counts the user's processes (in its user namespace) and binds no root.
    uid = os.getuid()
    running = None
    if userns:
        running = 3 if pidns else 1  # outside the pid namespace, its pid 1, this one
    elif uid != 0:
        running = _own_processes(uid)
    if (
        running is not None
        and uid != 0
        and cap(resource.RLIMIT_NPROC, running + limits["processes"])
    ):
        containment.append("nproc")


def _install_hook(root, processes, netns):
    """Refuse, from Python code, what the operating system could not be asked to refuse."""
    import os.path

    realpath = os.path.realpath
    root = realpath(root)
    prefix = root + os.sep
    # In a pid namespace getpid() is small while /proc (the outer one) names us otherwise.
    own_proc = {os.path.basename(realpath("/proc/self")), str(os.getpid())}
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    path_events = {
        # event: positions of path arguments it writes to
        "os.remove": (0,),
        "os.rmdir": (0,),
        "os.mkdir": (0,),
        "os.rename": (0, 1),
        "os.symlink": (1,),
        "os.link": (1,),
        "os.chmod": (0,),
        "os.chown": (0,),
        "os.chflags": (0,),
        "os.truncate": (0,),
        "os.utime": (0,),
        "os.setxattr": (0,),
        "os.removexattr": (0,),
        "shutil.rmtree": (0,),
        "shutil.copyfile": (1,),
        "shutil.copymode": (1,),
        "shutil.copystat": (1,),
        "shutil.move": (1,),
    }
    process_events = {
        "os.fork",
        "os.forkpty",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "subprocess.Popen",
        "pty.spawn",
    }
    # event: positions of the ``dir_fd`` arguments that the path positions above are
    # relative to (``os.unlink("x", dir_fd=fd)`` names a file in fd's directory, not here)
    dir_fd_positions = {
        "os.remove": {0: 1},
        "os.rmdir": {0: 1},
        "os.mkdir": {0: 2},
        "os.rename": {0: 2, 1: 3},
        "os.symlink": {1: 2},
        "os.link": {1: 3},
        "os.chmod": {0: 2},
        "os.chown": {0: 3},
        "os.utime": {0: 3},
    }
    network_events = {
        "socket.connect",
        "socket.bind",
        "socket.sendto",
        "socket.sendmsg",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
    }

    def inside(path, dir_fd=None):
        if isinstance(path, int):
            return True  # an open file descriptor: how it was opened was checked then
        try:
            path = os.fsdecode(path)
        except TypeError:
            return False
        if dir_fd is not None and dir_fd != -1 and not os.path.isabs(path):
            try:  # the directory the descriptor names (readlink raises no audit event)
                path = os.path.join(os.readlink(f"/proc/self/fd/{int(dir_fd)}"), path)
            except (OSError, TypeError, ValueError):
                return False
        resolved = realpath(path)
        return resolved == root or resolved.startswith(prefix) or resolved == os.devnull

    def outside_directory(path):
        """A directory outside the sandbox: a descriptor of one would let the code name
        files there relative to it (``dir_fd=``), which the ``open`` event cannot show."""
        if isinstance(path, int):
            return False
        try:
            return os.path.isdir(path) and not inside(path)
        except (TypeError, ValueError):
            return True

    def _unix_path(args):
        sock = args[0] if args else None
        address = args[1] if len(args) > 1 else None
        family = getattr(sock, "family", None)
        if family is None or getattr(family, "name", "") != "AF_UNIX":
            return False
        return not (isinstance(address, (str, bytes)) and address[:1] in ("\0", b"\0"))

    def foreign_proc(path):
        if not isinstance(path, (str, bytes)):
            return False
        path = os.fsdecode(path)
        parts = realpath(path).split(os.sep)
        return (
            len(parts) > 2
            and parts[1] == "proc"
            and parts[2].isdigit()
            and parts[2] not in own_proc
            and parts[2] != str(os.getpid())
        )

    def deny(what):
        raise PermissionError(f"sandbox: {what} is not allowed")

    def hook(event, args):
        if event == "open":
            path, mode, flags = (*args, None, None, None)[:3]
            writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & write_flags
            )
            if writes and not inside(path):
                deny(f"writing outside the sandbox directory ({path!r})")
            if foreign_proc(path):
                deny(f"reading another process's {path!r}")
            if outside_directory(path):
                deny(f"opening a directory outside the sandbox directory ({path!r})")
        elif event in path_events:
            fds = dir_fd_positions.get(event, {})
            for position in path_events[event]:
                if position >= len(args):
                    continue
                at = fds.get(position)
                dir_fd = args[at] if at is not None and at < len(args) else None
                if not inside(args[position], dir_fd):
                    deny(f"{event} outside the sandbox directory ({args[position]!r})")
        elif event == "sqlite3.connect":
            database = args[0] if args else None
            if isinstance(database, bytes):
                database = os.fsdecode(database)
            if isinstance(database, str) and database.startswith("file:"):
                database = database[5:].split("?", 1)[0] or ":memory:"
            if database not in (":memory:", "") and not inside(database):
                deny(f"a database outside the sandbox directory ({database!r})")
        elif event == "os.killpg":
            deny("signalling a process group")
        elif event == "os.kill":
            target = args[0]
            if target <= 0:
                deny("signalling a process group")
            if target != os.getpid():
                try:
                    ours = target != os.getppid() and os.getpgid(target) == os.getpgid(0)
                except OSError:
                    ours = False
                if not ours:
                    deny("signalling a process outside the sandbox")
        elif event in network_events:
            # A network namespace has no route out, but a path-named unix socket is a file
            # that reaches whatever listens on it (a container daemon, say) in any namespace.
            if not netns or (event != "socket.getaddrinfo" and _unix_path(args)):
                deny("network access")
        elif not processes and event in process_events:
            deny("starting a process")

    sys.addaudithook(hook)
    _guard_unaudited(inside, deny, processes)


def _guard_unaudited(inside, deny, processes):
    """Functions that create files or processes without raising an audit event, wrapped
    so that Python code calling them meets the same rules (native code still goes around
    them, as around the hook)."""
    import posix

    def checked(original, event):
        def call(path, *args, dir_fd=None, **kwargs):
            if not inside(path, dir_fd):
                deny(f"{event} outside the sandbox directory ({path!r})")
            if dir_fd is not None:
                kwargs["dir_fd"] = dir_fd
            return original(path, *args, **kwargs)

        return call

    for name in ("mkfifo", "mknod"):
        original = getattr(posix, name, None)
        if original is not None:
            wrapped = checked(original, f"os.{name}")
            setattr(posix, name, wrapped)
            setattr(os, name, wrapped)
    if not processes:
        try:
            import _posixsubprocess
        except ImportError:
            return

        def fork_exec(*args, **kwargs):
            deny("starting a process")

        _posixsubprocess.fork_exec = fork_exec


def _message(exc):
    text = str(exc).strip().splitlines()
    head = type(exc).__name__
    return f"{head}: {text[0][:300]}" if text else head


def _print_traceback(exc):
    import traceback

    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
        tb = tb.tb_next  # this bootstrap's own frames
    traceback.print_exception(type(exc), exc, tb, file=sys.stderr)
    sys.stderr.flush()


def _json_form(value, depth=0):
    """(True, value) when ``value`` is plain JSON without loss (no NaN, only str keys)."""
    if depth > 100:
        return False, None
    if value is None or isinstance(value, (bool, str)):
        return True, value
    if isinstance(value, int):
        return True, int(value)
    if isinstance(value, float):
        return (value == value and value not in (float("inf"), float("-inf"))), value
    if isinstance(value, (list, tuple)):
        items = []
        for item in value:
            ok, item = _json_form(item, depth + 1)
            if not ok:
                return False, None
            items.append(item)
        return True, items
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                return False, None
            ok, item = _json_form(item, depth + 1)
            if not ok:
                return False, None
            out[key] = item
        return True, out
    return False, None


def _evaluate(job, fd):
    import types

    cap = job["value_cap"]
    module = types.ModuleType("sandbox_module")
    path = os.path.join(job["root"], "sandbox_module.py")
    module.__file__ = path
    sys.modules["sandbox_module"] = module
    stage = "code"
    try:
        exec(compile(job["code"], path, "exec"), module.__dict__)
        stage = "call"
        value = eval(compile(job["call"], "<call>", "eval"), module.__dict__)
        stage = "repr"
        text = repr(value)
        ok, json_value = _json_form(value)
        if ok:
            json.dumps(json_value)
    except MemoryError as exc:
        _send(fd, {"result": "memory", "message": _message(exc), "stage": stage})
        return
    except BaseException as exc:  # the code's failure is the result, whatever it is
        _print_traceback(exc)
        _send(fd, {"result": "error", "message": _message(exc), "stage": stage})
        return
    if len(text) > cap:
        _send(fd, {"result": "output-limit", "message": f"value's repr is {len(text)} chars"})
        return
    _send(fd, {"result": "ok", "value": text, "json": ok, "value_json": json_value})


def _pytest(job):
    import site

    for directory in job["site"]:
        site.addsitedir(directory)
    sys.path.insert(0, job["root"])
    sys.argv = ["pytest", *job["args"]]
    import pytest

    return pytest.main(sys.argv[1:])


def main():
    exit_now = os._exit  # the code may replace os._exit; this one ends the run regardless
    job_path = sys.argv[1]
    with open(job_path, encoding="utf-8") as handle:
        job = json.load(handle)
    os.unlink(job_path)
    fd = job["result_fd"]
    os.set_inheritable(fd, False)
    _no_core_dumps()
    containment = []
    if os.getuid() != job["parent_uid"]:
        containment.append("uid-drop")
    userns, pidns = _unshare(containment) if job["namespaces"] else (False, False)
    if pidns:
        _enter_pid_namespace(fd)
    _limits(job["limits"], containment, pidns, userns)
    _no_new_privs(containment)
    _install_hook(job["root"], job["limits"]["processes"], netns=userns)
    containment.append("audit-hook")
    _send(fd, {"containment": containment})
    code = 0
    try:
        if job["mode"] == "evaluate":
            _evaluate(job, fd)
        else:
            code = _pytest(job)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except MemoryError:
        _send(fd, {"result": "memory", "message": "MemoryError"})
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        # Never wait for the code's threads or run its atexit handlers.
        exit_now(code)


main()
