"""The first code every sandbox process runs (see ``referee.checks.sandbox``).

referee never imports this module: ``sandbox.py`` passes its source to ``python -c`` (compiled
there under a file name of its own, ``sandbox.BOOT_FILENAME``), so
the child needs nothing but the standard library. It runs with a scrubbed environment,
reads its job (from a descriptor, or a file it deletes), contains itself, then runs the
untrusted code. The parent chose the plan; this carries it out and reports what held:

- ``bwrap``: bubblewrap already built the view (user, mount, network, pid, ipc and uts
  namespaces, a read-only root with the interpreter, ``/proc``, ``/dev`` and a size-limited
  ``/tmp``); this process is its pid 2 and becomes the *monitor*, the code runs in a child.
- ``namespaces``: ``unshare`` here: a user namespace (root maps itself to nobody), mount,
  network, pid, ipc and uts namespaces; pid 1 of the new pid namespace builds the same
  read-only view with bind mounts and ``pivot_root``, then monitors the code's process.
- ``host``: no namespaces (switched off, or refused by the kernel).

In every plan the process that runs the code then drops its capabilities and, as far as
the kernel offers them, applies resource limits, ``no_new_privs``, Landlock (files: read
the runtime, write only the run directory; TCP; signals and abstract unix sockets outside
the sandbox) and the seccomp filter the parent compiled with libseccomp. In strict mode a
run without a filesystem boundary, a network boundary, or as uid 0 refuses to run the code
and says why. Last comes an audit hook: defence in depth against Python code, no boundary.

Results travel as JSON lines over the file descriptor named in the job, never over stdout;
the monitor reports how the code's process ended over a second descriptor the code never
holds.

One file, by design, and longer than referee's other modules: it is shipped to the child
as the single argument of ``python -c`` and can import nothing but the standard library.
The child starts with ``-S`` (no site-packages, so no referee), often in another
interpreter (the project's, where referee is not installed), in a view of the file system
that holds the runtime and the run directory only; and the run directory holds the
untrusted files, which a module imported by name from there could be. Splitting it would
mean joining the parts back into one ``-c`` string (``sandbox._boot_source``), and
``bench/sandbox.py`` loads an older revision's sandbox by copying exactly this file.
"""

import contextlib
import json
import os
import sys

# The file name this code was compiled under (``sandbox.BOOT_FILENAME``; ``<string>`` where
# it runs as ``python -c`` itself), read before anything is audited.
_BOOT_FILE = sys._getframe().f_code.co_filename

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_MOVE = 8192
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2

# syscall numbers the C library has no wrapper for (the same on every architecture that
# has Landlock, because they were added after the tables were unified)
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}

LANDLOCK_FS_FILE = 1 | 2 | 4  # EXECUTE, WRITE_FILE, READ_FILE
LANDLOCK_FS_READ = 1 | 4 | 8  # EXECUTE, READ_FILE, READ_DIR
LANDLOCK_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
LANDLOCK_TRUNCATE = 1 << 14
LANDLOCK_IOCTL_DEV = 1 << 15
LANDLOCK_NET_TCP = 1 | 2  # BIND_TCP, CONNECT_TCP
LANDLOCK_SCOPE = 1 | 2  # ABSTRACT_UNIX_SOCKET, SIGNAL

DEVICES = ("null", "zero", "full", "random", "urandom")


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


def _check(result, what):
    if result != 0:
        import ctypes

        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _write(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode("ascii"))
    finally:
        os.close(fd)


def _read_job(where):
    if where.startswith("fd:"):
        fd = int(where[3:])
        chunks = []
        os.lseek(fd, 0, os.SEEK_SET)
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(fd)
        return json.loads(b"".join(chunks))
    with open(where, encoding="utf-8") as handle:
        job = json.load(handle)
    os.unlink(where)
    return job


# -- namespaces ---------------------------------------------------------------------------


def _unshare(job, containment):
    """New user, mount, network, pid, ipc and uts namespaces, or as many as the kernel
    allows. Returns (userns, mountns, pidns).

    An ordinary user maps its own ids. Root maps itself (the view is built as root: it
    reaches an interpreter under /root, and owns the tmpfs it mounts) and nobody (65534):
    the code's process becomes nobody before it runs, without capabilities, and owns no
    file outside. Only a process in the parent namespace may write such a map, so a
    helper forked before the unshare writes it."""
    if not sys.platform.startswith("linux"):
        return False, False, False
    _, libc = _libc()
    if libc is None:
        return False, False, False
    uid, gid = os.getuid(), os.getgid()
    helper = _map_helper(job["drop_to"]) if uid == 0 else None
    base = CLONE_NEWUSER | CLONE_NEWNET
    for flags in (
        base | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS,
        base | CLONE_NEWNS | CLONE_NEWPID,
        base | CLONE_NEWPID,
        base,
    ):
        if libc.unshare(flags) == 0:
            break
    else:
        if helper is not None:
            helper(False)
        return False, False, False
    if helper is not None:
        if not helper(True):
            # no map: the code would run as root's own uid; the refusal says so
            job["view_error"] = "root could not map nobody into the user namespace"
            return False, False, False
    else:
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
        except OSError:
            pass
    containment += ["userns", "netns"]
    if flags & CLONE_NEWIPC:
        containment.append("ipcns")
    pidns = bool(flags & CLONE_NEWPID)
    if pidns:
        containment.append("pidns")
    return True, bool(flags & CLONE_NEWNS), pidns


def _map_helper(inner):
    """Fork a process that, once told this one has unshared its user namespace, maps root
    and ``inner`` into it. Returns ``done(unshared) -> mapped``."""
    go_read, go_write = os.pipe()
    done_read, done_write = os.pipe()
    target = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(go_write)
        os.close(done_read)
        ok = b"0"
        if os.read(go_read, 1) == b"1":
            try:
                _write(f"/proc/{target}/gid_map", f"0 0 1\n{inner} {inner} 1\n")
                _write(f"/proc/{target}/uid_map", f"0 0 1\n{inner} {inner} 1\n")
                ok = b"1"
            except OSError:
                pass
        os.write(done_write, ok)
        os._exit(0)
    os.close(go_read)
    os.close(done_write)

    def done(unshared):
        os.write(go_write, b"1" if unshared else b"0")
        os.close(go_write)
        answer = os.read(done_read, 1)
        os.close(done_read)
        os.waitpid(pid, 0)
        return answer == b"1"

    return done


def _mount(libc, source, target, fstype, flags, data=None):
    def encode(value):
        return None if value is None else os.fsencode(value)

    _check(
        libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data)),
        f"mount {target}",
    )


def _locked_flags(path):
    """The flags of the mount ``path`` is on that a bind mount made in a user namespace
    must keep (the kernel refuses a remount that would drop them)."""
    flags = 0
    with contextlib.suppress(OSError):
        found = os.statvfs(path).f_flag
        for st, ms in (
            (os.ST_NOSUID, MS_NOSUID),
            (os.ST_NODEV, MS_NODEV),
            (os.ST_NOEXEC, MS_NOEXEC),
            (getattr(os, "ST_NOATIME", 1024), MS_NOATIME),
            (getattr(os, "ST_NODIRATIME", 2048), MS_NODIRATIME),
            (getattr(os, "ST_RELATIME", 4096), MS_RELATIME),
        ):
            if found & st:
                flags |= ms
    return flags


def _makedirs(path):
    """``os.makedirs`` whose new directories are 0755 whatever the umask: the view's
    directories must be passable for the code's user (nobody, when root built them)."""
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory)
        os.chmod(directory, 0o755)


def _bind(libc, source, target, writable=False):
    if os.path.isdir(source):
        _makedirs(target)
    else:
        _makedirs(os.path.dirname(target))
        if not os.path.exists(target):
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))
    _mount(libc, source, target, None, MS_BIND)
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | _locked_flags(source)
    if not writable:
        flags |= MS_RDONLY
    _mount(libc, None, target, None, flags)


def _pivot_root(libc, new_root):
    """Make ``new_root`` the root of this mount namespace and detach the old one."""
    import platform

    old = os.path.join(new_root, ".old-root")
    os.mkdir(old)
    number = SYS_PIVOT_ROOT.get(platform.machine())
    if number is not None and libc.syscall(number, os.fsencode(new_root), os.fsencode(old)) == 0:
        os.chdir("/")
        _check(libc.umount2(b"/.old-root", MNT_DETACH), "umount the old root")
        os.rmdir("/.old-root")
    else:  # switch_root's way: move the new root over / and enter it
        os.rmdir(old)
        os.chdir(new_root)
        _mount(libc, new_root, "/", None, MS_MOVE)
        _check(libc.chroot(b"."), "chroot")
        os.chdir("/")


def _build_root(job, proc):
    """The child's whole file system: a read-only tmpfs holding the runtime (interpreter,
    standard library, site-packages, system libraries) bound read-only, five device
    nodes, a fresh ``/proc`` of this pid namespace when ``proc``, and a size-limited
    writable ``/tmp`` that holds the run directory. No home, no host ``/tmp``, no
    ``/run``. Raises OSError when the kernel refuses a step."""
    _, libc = _libc()
    if libc is None:
        raise OSError("no C library")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    new = job["stage"]  # an empty directory the parent made; its mount point now
    _mount(libc, "tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m,nr_inodes=4k")
    size = job["limits"]["disk_mb"]
    if os.getuid() == 0 or job["parent_uid"] == 0:
        owner = group = job["drop_to"]
    else:
        owner, group = os.getuid(), os.getgid()
    for tmp in job["tmpfs"]:
        _makedirs(new + tmp)
        mode = "1777" if tmp == "/tmp" else "0700"
        _mount(
            libc,
            "tmpfs",
            new + tmp,
            "tmpfs",
            MS_NOSUID | MS_NODEV,
            f"mode={mode},size={size}m,uid={owner},gid={group}",
        )
    for path, kind in job["runtime"]:
        target = new + path
        if kind == "symlink":
            _makedirs(os.path.dirname(target))
            os.symlink(os.readlink(path), target)
        else:
            _bind(libc, path, target)
    # The run directory, made now by the view's builder: its parents may be directories
    # the runtime's binds made (an interpreter under /tmp), which the code's user could
    # not create anything in.
    run = new + job["root"]
    if not os.path.isdir(run):
        _makedirs(os.path.dirname(run))
        os.mkdir(run, 0o700)
        os.chown(run, owner, group)
    os.makedirs(new + "/dev", exist_ok=True)
    _mount(libc, "tmpfs", new + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for name in DEVICES:
        _bind(libc, "/dev/" + name, f"{new}/dev/{name}", writable=True)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0")):
        os.symlink(target, f"{new}/dev/{name}")
    os.symlink("/proc/self/fd/1", f"{new}/dev/stdout")
    os.symlink("/proc/self/fd/2", f"{new}/dev/stderr")
    _mount(libc, None, new + "/dev", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
    os.makedirs(new + "/proc")
    if proc:
        _mount(libc, "proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _pivot_root(libc, new)
    _mount(libc, None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


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


def _sandbox_rss_kb(exclude):
    """Resident memory of every process this /proc shows (a fresh one: the sandbox's)."""
    import resource

    page_kb = resource.getpagesize() // 1024
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in exclude:
            continue
        try:
            with open(f"/proc/{name}/statm", "rb") as handle:
                total += int(handle.read().split()[1]) * page_kb
        except (OSError, ValueError, IndexError):
            continue
    return total


def _monitor(worker, status_fd, limit_mb, watch_memory):
    """Wait for the code's process (reaping every orphan meanwhile) and watch the memory
    of all the sandbox's processes together; report how it ended over ``status_fd``, a
    descriptor the code never held. Killing everything is left to pid 1's exit.
    SIGCHLD is blocked (see :func:`_fork_worker`) and waited for, so an exit is seen at
    once and the memory every 50 ms."""
    import signal
    import time

    exclude = {os.getpid(), 1}
    limit_kb = limit_mb * 1024
    next_check = 0.0
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(70)
        if pid == worker:
            break
        if pid:
            continue
        now = time.monotonic()
        if watch_memory and now >= next_check:
            next_check = now + 0.05
            used = _sandbox_rss_kb(exclude)
            if used > limit_kb:
                with contextlib.suppress(OSError):
                    _send(status_fd, {"memory_kb": used})
                with contextlib.suppress(OSError):
                    os.kill(-1, signal.SIGKILL)
                status = signal.SIGKILL  # a wait status: killed by SIGKILL
                break
        signal.sigtimedwait([signal.SIGCHLD], 0.05)
    with contextlib.suppress(OSError):
        _send(status_fd, {"wait_status": status})
    return status


def _fork_worker():
    """fork() with SIGCHLD blocked in the parent (the monitor waits for it) and not in
    the child."""
    import signal

    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
    pid = os.fork()
    if pid == 0:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGCHLD])
    return pid


def _enter_pid_namespace(job, channel, status_fd):
    """Fork twice: pid 1 of the new namespace builds the view, then monitors; the code
    runs as its child, an ordinary process (pid 1 ignores signals it has no handler for,
    SIGXCPU included). When pid 1 exits the kernel kills everything left in the
    namespace. Returns (in the worker) whether the view was built."""
    read_end, write_end = os.pipe()
    init = os.fork()
    if init:  # outside the namespace: wait for pid 1's report
        os.close(write_end)
        os.close(channel)
        os.close(status_fd)
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
    _, libc = _libc()
    if libc is not None:  # whatever kills the process outside kills the namespace
        libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
    built = _try_build_root(job, proc=True)
    worker = _fork_worker()
    if worker:  # pid 1
        os.close(channel)
        status = _monitor(worker, status_fd, job["limits"]["memory_mb"], built)
        os.write(write_end, str(status).encode("ascii"))
        os._exit(0)
    os.close(write_end)
    os.close(status_fd)
    return built


def _try_build_root(job, proc):
    try:
        _build_root(job, proc)
        return True
    except OSError as exc:
        job["view_error"] = str(exc)
        return False


def _start_monitor(job, channel, status_fd):
    """Under bubblewrap (this process is pid 2 of its pid namespace): fork the code's
    process and monitor it; returns in the worker."""
    _, libc = _libc()
    if libc is not None:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    worker = _fork_worker()
    if worker:
        os.close(channel)
        _end_like(_monitor(worker, status_fd, job["limits"]["memory_mb"], True))
    os.close(status_fd)


# -- the code's process -------------------------------------------------------------------


def _become(uid, containment):
    """Root's way out, inside the user namespace that maps ``uid`` (nobody): every id to
    ``uid``, no supplementary groups (root's group 0 among them), no capabilities."""
    _drop_bounding_set()
    with contextlib.suppress(OSError):  # a namespace that denies setgroups has none to drop
        os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    containment.append("uid-drop")


def _drop_bounding_set():
    """Empty the bounding set (needs CAP_SETPCAP: before giving up root)."""
    ctypes, libc = _libc()
    if libc is None:
        return
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:
            break  # EINVAL: past the last capability


def _drop_capabilities(containment):
    """No capability left in any set, bounding and ambient included (the creator of a user
    namespace holds all of them inside it)."""
    ctypes, libc = _libc()
    if libc is None:
        return
    _drop_bounding_set()
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)

    class Header(ctypes.Structure):
        _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))

    class Data(ctypes.Structure):
        _fields_ = tuple((n, ctypes.c_uint32) for n in ("effective", "permitted", "inheritable"))

    header = Header(0x20080522, 0)
    data = (Data * 2)()
    if libc.capset(ctypes.byref(header), data) == 0:
        containment.append("no-capabilities")


def _write_files(root, files, binary):
    """The run's files: text, and binary data (base64) a test may read."""
    import binascii

    os.makedirs(root, mode=0o700, exist_ok=True)
    for name, text in files.items():
        target = os.path.join(root, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(text)
    for name, encoded in binary.items():
        target = os.path.join(root, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as handle:
            handle.write(binascii.a2b_base64(encoded))


def _own_processes(uid):
    """How many processes this user runs now (what RLIMIT_NPROC counts)."""
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


def _limits(limits, containment, running, threads):
    """The resource limits; RLIMIT_NPROC lets ``threads`` more tasks start, for the
    seccomp filter that keeps them threads (:func:`_seccomp`, lowered again by
    :func:`_no_threads` where it did not load)."""
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
    if (
        running is not None
        and os.getuid() != 0
        and cap(resource.RLIMIT_NPROC, running + limits["processes"] + threads)
    ):
        containment.append("nproc")


def _no_threads(limits, running):
    """RLIMIT_NPROC back to the processes alone: the filter that keeps new tasks threads
    did not load, so a thread RLIMIT_NPROC allowed could as well be a process."""
    import resource

    with contextlib.suppress(ValueError, OSError):
        value = running + limits["processes"]
        resource.setrlimit(resource.RLIMIT_NPROC, (value, value))


def _no_new_privs(containment):
    _, libc = _libc()
    if libc is not None and libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0:
        containment.append("no-new-privs")


def _landlock(job, containment, proc):
    """Landlock, to the ABI the kernel offers: the runtime read-only, the run directory
    read-write, five devices, this pid namespace's /proc when ``proc``; TCP bind and
    connect denied (ABI 4); signals and abstract unix sockets limited to the sandbox
    (ABI 6). Needs no_new_privs."""
    ctypes, libc = _libc()
    if libc is None:
        return
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return
    handled = LANDLOCK_FS_BY_ABI[max(k for k in LANDLOCK_FS_BY_ABI if k <= abi)]

    class Ruleset(ctypes.Structure):
        _fields_ = tuple((name, ctypes.c_uint64) for name in ("fs", "net", "scoped"))

    class PathBeneath(ctypes.Structure):
        _pack_ = 1
        _fields_ = (("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))

    attr = Ruleset(handled, LANDLOCK_NET_TCP if abi >= 4 else 0, LANDLOCK_SCOPE if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = libc.syscall(
        SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    if ruleset < 0:
        return
    read = LANDLOCK_FS_READ
    rules = [(path, read) for path, kind in job["runtime"] if kind != "symlink"]
    device = read | 2 | (LANDLOCK_TRUNCATE & handled)
    rules += [("/dev/" + name, device) for name in DEVICES]
    if proc:
        rules.append(("/proc", read))
    rules.append((job["root"], handled))
    try:
        for path, allowed in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not _fd_is_dir(fd):
                    allowed &= LANDLOCK_FS_FILE | LANDLOCK_TRUNCATE | LANDLOCK_IOCTL_DEV
                rule = PathBeneath(allowed & handled, fd)
                _check(
                    libc.syscall(
                        SYS_LANDLOCK_ADD_RULE,
                        ctypes.c_int(ruleset),
                        ctypes.c_int(1),
                        ctypes.byref(rule),
                        ctypes.c_uint32(0),
                    ),
                    f"landlock rule for {path}",
                )
            finally:
                os.close(fd)
        _check(
            libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)),
            "landlock_restrict_self",
        )
    finally:
        os.close(ruleset)
    containment.append("landlock")
    if abi >= 4:
        containment.append("landlock-tcp")
    if abi >= 6:
        containment.append("landlock-scoped")


def _fd_is_dir(fd):
    import stat

    try:
        return stat.S_ISDIR(os.fstat(fd).st_mode)
    except OSError:
        return False


def _seccomp(programs, containment, nofork):
    """Load the BPF program the parent compiled with libseccomp: inside network and pid
    namespaces the one that allows internet sockets (they reach nothing there) and new
    sessions; elsewhere the one that allows no socket() at all, nor leaving the process
    group that is killed at the end. With ``nofork``, its variant that lets no process
    start (fork, vfork, a clone without CLONE_THREAD), threads only."""
    ctypes, libc = _libc()
    if libc is None or not programs:
        return
    namespaced = "netns" in containment and "pidns" in containment
    key = ("namespaced" if namespaced else "host") + ("-nofork" if nofork else "")
    program = programs.get(key)
    if not program:
        return
    code = bytes.fromhex(program)

    class Fprog(ctypes.Structure):
        _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_char_p))

    prog = Fprog(len(code) // 8, code)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0:
        containment.append("seccomp")
        if not namespaced:
            containment.append("seccomp-nosocket")
        if nofork:
            containment.append("seccomp-nofork")


def _notes(job):
    """What was planned for this run and did not hold, for the user to read."""
    return [f"the private view failed: {job['view_error']}"] if job.get("view_error") else []


def _refusal(job, containment):
    """Why the code must not run here in strict mode, or None."""
    missing = []
    if not {"mountns", "landlock", "seatbelt"} & set(containment):
        missing.append("no filesystem boundary (no mount namespace, no Landlock)")
    net = (
        "seatbelt" in containment
        or "seccomp-nosocket" in containment
        or ("netns" in containment and ("mountns" in containment or "seccomp" in containment))
    )
    if not net:
        missing.append("no network boundary (no network namespace with a private view, no seccomp)")
    if (
        os.getuid() == 0
        or os.geteuid() == 0
        or (job["parent_uid"] == 0 and "uid-drop" not in containment)
    ):
        missing.append("it would run as root")
    if not missing:
        return None
    return "; ".join(missing + _notes(job))


# -- the audit hook -----------------------------------------------------------------------
#
# Why the hook is built from closures: the untrusted code runs in this same interpreter,
# where this script's module globals (``__main__``'s) are its to rebind: setting a
# module's attribute raises no audit event. So nothing the hook does when an event comes
# is looked up there: every check it makes is a closure over the locals of the function
# that built it (``os`` included, imported locally for that), and the hook refuses the
# reads (``__closure__``, ``__code__``) and the ``__code__`` replacements that would reach
# or unmake them. The builders below run once, before the code; they may be split
# further, but what they hand on must stay closures, and a builder whose closures use
# ``os`` must import it locally.


def _install_hook(root, processes, netns):
    """Refuse, from Python code, what should already be impossible: defence in depth, no
    boundary (native code goes around it)."""
    import os.path

    guarded = set()

    def deny(what):
        raise PermissionError(f"sandbox: {what} is not allowed")

    _, inside, outside_directory, foreign_proc = _path_rules(os.path.realpath(root))
    check_open = _open_rule(inside, outside_directory, foreign_proc, deny)
    unix_path = _unix_path_rule()
    events = _hook_events()
    hook = _hook(inside, check_open, unix_path, deny, events, processes, netns, guarded)
    sys.addaudithook(hook)
    _guard_unaudited(inside, deny, check_open, processes, guarded)


def _hook_events():
    """The audit events the hook looks at: those that write to paths (each with the
    positions of its path arguments and of the ``dir_fd`` arguments they are relative
    to), start processes, reach the network, or reach the hook itself."""
    path_events = {
        # event: positions of path arguments it writes to (or, for link, makes writable)
        "os.remove": (0,),
        "os.rmdir": (0,),
        "os.mkdir": (0,),
        "os.rename": (0, 1),
        "os.symlink": (1,),
        "os.link": (0, 1),
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
        "os.link": {0: 2, 1: 3},
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
    # Ways to reach the hook or the originals the wrappers below hold, from Python.
    introspection = {"gc.get_referrers", "gc.get_referents", "gc.get_objects"}
    return path_events, process_events, dir_fd_positions, network_events, introspection


def _path_rules(root):
    """Closures over the sandbox directory ``root`` (resolved): ``described`` (the path a
    descriptor names), ``inside`` (whether a path lies in it), ``outside_directory`` (a
    directory outside it) and ``foreign_proc`` (another process's ``/proc`` entry)."""
    import os.path

    realpath = os.path.realpath
    readlink = os.readlink
    isdir = os.path.isdir
    prefix = root + os.sep
    # In a pid namespace getpid() is small while /proc (the outer one) names us otherwise.
    own_proc = {os.path.basename(realpath("/proc/self")), str(os.getpid())}

    def described(fd):
        """The path an open descriptor names (readlink raises no audit event)."""
        try:
            return readlink(f"/proc/self/fd/{int(fd)}")
        except (OSError, TypeError, ValueError):
            return None

    def inside(path, dir_fd=None):
        if isinstance(path, int):
            # a descriptor: what it names now (a read-only descriptor of a file outside
            # must not become a way to chmod, chown, utime or setxattr it)
            path = described(path)
            if path is None:
                return False
        try:
            path = os.fsdecode(path)
        except TypeError:
            return False
        if dir_fd is not None and dir_fd != -1 and not os.path.isabs(path):
            base = described(dir_fd)
            if base is None:
                return False
            path = os.path.join(base, path)
        resolved = realpath(path)
        return resolved == root or resolved.startswith(prefix) or resolved == os.devnull

    def outside_directory(path, dir_fd=None):
        """A directory outside the sandbox: a descriptor of one would let the code name
        files there relative to it (``dir_fd=``), which the ``open`` event cannot show."""
        if isinstance(path, int):
            return False
        try:
            target = path
            if dir_fd is not None and not os.path.isabs(os.fsdecode(path)):
                base = described(dir_fd)
                if base is None:
                    return True
                target = os.path.join(base, os.fsdecode(path))
            return isdir(target) and not inside(target)
        except (TypeError, ValueError):
            return True

    def foreign_proc(path):
        if isinstance(path, int):
            path = described(path) or ""
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

    return described, inside, outside_directory, foreign_proc


def _open_rule(inside, outside_directory, foreign_proc, deny):
    """The check of an ``open``: no writing outside the sandbox directory, no reading
    another process's ``/proc``, no descriptor of a directory outside."""
    import os

    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def check_open(path, flags, dir_fd=None, mode=None):
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & write_flags
        )
        if writes and not inside(path, dir_fd):
            deny(f"writing outside the sandbox directory ({path!r})")
        if foreign_proc(path):
            deny(f"reading another process's {path!r}")
        if outside_directory(path, dir_fd):
            deny(f"opening a directory outside the sandbox directory ({path!r})")

    return check_open


def _unix_path_rule():
    """Whether a socket call's address is a path-named unix socket (a file that reaches
    whatever listens on it, in any network namespace; an abstract one starts with NUL)."""
    af_unix = 1

    def unix_path(args):
        sock = args[0] if args else None
        address = args[1] if len(args) > 1 else None
        family = getattr(sock, "family", None)
        try:  # an enum member or a plain int (``_socket.socket(1, 1)``)
            if int(family) != af_unix:
                return False
        except (TypeError, ValueError):
            return False
        return not (isinstance(address, (str, bytes)) and address[:1] in ("\0", b"\0"))

    return unix_path


def _hook(inside, check_open, unix_path, deny, events, processes, netns, guarded):
    """The audit hook: each event the sandbox refuses from Python code, refused."""
    import os.path

    path_events, process_events, dir_fd_positions, network_events, introspection = events

    def hook(event, args):
        if event == "open":
            path, mode, flags = (*args, None, None, None)[:3]
            check_open(path, flags, mode=mode)
        elif event in path_events:
            fds = dir_fd_positions.get(event, {})
            for position in path_events[event]:
                if position >= len(args):
                    continue
                at = fds.get(position)
                dir_fd = args[at] if at is not None and at < len(args) else None
                if not inside(args[position], dir_fd):
                    deny(f"{event} outside the sandbox directory ({args[position]!r})")
        elif event == "os.chdir":
            if not inside(args[0]):
                deny(f"changing to a directory outside the sandbox ({args[0]!r})")
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
            if not netns or (event != "socket.getaddrinfo" and unix_path(args)):
                deny("network access")
        elif event in introspection:
            deny(f"{event}")
        elif event == "object.__setattr__":
            # Replacing the code of the sandbox's own functions (this hook, the wrappers,
            # what they call) would unmake them; other code may do it (asyncio's
            # types.coroutine does, on import).
            if len(args) > 1 and args[1] == "__code__" and sandbox_own(args[0]):
                deny("replacing the code of the sandbox's functions")
        elif event == "object.__getattr__":
            if args and args[0] in guarded and len(args) > 1:
                deny(f"reading the sandbox's {args[1]}")
        elif not processes and event in process_events:
            deny("starting a process")

    own_file = hook.__code__.co_filename

    def sandbox_own(function):
        if function in guarded:
            return True
        code = getattr(function, "__code__", None)  # audited: object.__getattr__
        return code is not None and code.co_filename == own_file

    return hook


def _guard_unaudited(inside, deny, check_open, processes, guarded):
    """Functions that act without an audit event that shows what they act on, wrapped
    so that Python code calling them meets the same rules. The originals are held only
    as keyword defaults, which the hook does not let Python code read (a closure cell
    would hand them out); native code still goes around them, as around the hook."""
    import posix

    def node_maker(original, event):
        def make(path, *args, dir_fd=None, _original=original, **kwargs):
            if not inside(path, dir_fd):
                deny(f"{event} outside the sandbox directory ({path!r})")
            if dir_fd is not None:
                kwargs["dir_fd"] = dir_fd
            return _original(path, *args, **kwargs)

        return make

    def open_at(path, flags, mode=0o777, *, dir_fd=None, _original=posix.open):
        # The ``open`` event shows the path but not the directory descriptor it is relative
        # to; with the descriptor, a chdir elsewhere no longer hides where it writes.
        if dir_fd is not None:
            check_open(path, flags, dir_fd)
        return _original(path, flags, mode, dir_fd=dir_fd)

    # os.mkfifo and os.mknod raise no audit event at all.
    for name in ("mkfifo", "mknod"):
        original = getattr(posix, name, None)
        if original is not None:
            wrapped = node_maker(original, f"os.{name}")
            setattr(posix, name, wrapped)
            setattr(os, name, wrapped)
            guarded.add(wrapped)
    del original
    posix.open = os.open = open_at
    guarded.add(open_at)
    if not processes:
        try:
            import _posixsubprocess
        except ImportError:
            return

        def fork_exec(*args, **kwargs):
            deny("starting a process")

        _posixsubprocess.fork_exec = fork_exec
        guarded.add(fork_exec)
    # importlib.reload(posix) would run the module's initialisation again, originals
    # included, without an audit event.
    import _imp

    def exec_builtin(module, _original=_imp.exec_builtin):
        if getattr(module, "__name__", None) in ("posix", "_posixsubprocess", "os"):
            deny("re-initialising a system module")
        return _original(module)

    _imp.exec_builtin = exec_builtin
    guarded.add(exec_builtin)


# -- running ------------------------------------------------------------------------------


def _message(exc):
    text = str(exc).strip().splitlines()
    head = type(exc).__name__
    return f"{head}: {text[0][:300]}" if text else head


def _print_traceback(exc):
    import traceback

    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in (_BOOT_FILE, "<string>"):
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


def _add_site(job):
    """The interpreter's site-packages (and what their .pth files add): the child starts
    with -S, and the parent names them."""
    import site

    for directory in job.get("site") or ():
        site.addsitedir(directory)


def _evaluate(job, fd):
    import types

    _add_site(job)
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
    _add_site(job)
    sys.path.insert(0, job["root"])
    sys.argv = ["pytest", *job["args"]]
    import pytest

    return pytest.main(sys.argv[1:])


def _nofork(job, disabled):
    """Whether the seccomp filter that lets threads start and no process will load:
    only then may RLIMIT_NPROC count threads (``limits["threads"]``)."""
    return (
        job["limits"]["processes"] == 0
        and "seccomp" not in disabled
        and bool(job.get("seccomp"))
        and sys.platform.startswith("linux")
    )


def _contain(job, fd, status_fd):
    """Everything before the code runs. Returns the containment list, or None after
    reporting a refusal."""
    containment = []
    plan = job["plan"]
    disabled = set(job["disabled"])
    parent_uid = job["parent_uid"]
    started_as_root = os.getuid() == 0
    if os.getuid() != parent_uid:
        containment.append("uid-drop")  # the parent started this process as nobody
    running = None  # processes RLIMIT_NPROC already counts for the code's uid
    proc = monitored = userns = False
    if plan == "bwrap":
        containment += ["bwrap", "userns", "mountns", "netns", "pidns", "ipcns"]
        _start_monitor(job, fd, status_fd)
        containment.append("memory-total")
        userns = proc = monitored = True
        running = _own_processes(os.getuid())  # bwrap's pid 1, the monitor, this one
    elif plan == "namespaces":
        userns, mountns, pidns = _unshare(job, containment)
        built = False
        if pidns:
            built = proc = _enter_pid_namespace(job, fd, status_fd)
            monitored = True
        elif mountns:
            built = _try_build_root(job, proc=False)
        if built:
            containment.append("mountns")
        if proc:
            containment.append("memory-total")
        if userns and started_as_root:
            _become(job["drop_to"], containment)
            running = 1  # nobody's only process in this user namespace
        elif userns:  # the one that made the namespaces, pid 1 and this one; or this one
            running = 3 if pidns else 1
    if not userns:
        running = _own_processes(os.getuid())
        if started_as_root and os.getuid() == 0 and plan == "namespaces":
            # no user namespace after all: the directory the parent gave nobody is the
            # run directory of root's own uid (strict mode refuses this run below)
            os.chown(job["root"], 0, 0)
    if not monitored:
        os.close(status_fd)
    # before the limits and the capabilities go
    _write_files(job["root"], job["files"], job.get("binary") or {})
    os.chdir(job["root"])
    nofork = _nofork(job, disabled)
    threads = job["limits"].get("threads", 0) if nofork else 0
    _limits(job["limits"], containment, running, threads)
    _no_new_privs(containment)
    if sys.platform.startswith("linux"):
        _drop_capabilities(containment)
        if "landlock" not in disabled:
            try:
                _landlock(job, containment, proc)
            except OSError as exc:
                job["view_error"] = job.get("view_error") or str(exc)
        if "seccomp" not in disabled:
            _seccomp(job.get("seccomp"), containment, nofork)
    if threads and "seccomp-nofork" not in containment and running is not None:
        _no_threads(job["limits"], running)
    if plan == "seatbelt":
        containment.append("seatbelt")
    if job["strict"]:
        reason = _refusal(job, containment)
        if reason is not None:
            _send(fd, {"containment": containment, "notes": _notes(job)})
            _send(fd, {"refused": reason})
            return None
    else:
        containment.append("weak")
    if "hook" not in disabled:
        _install_hook(job["root"], job["limits"]["processes"], netns="netns" in containment)
        containment.append("audit-hook")
    return containment


def _name_process():
    """``referee-sandbox`` in ps, top and process accounting (checks/process.py's
    name_process: the boot imports nothing of referee's)."""
    try:
        with open("/proc/self/comm", "w", encoding="utf-8") as comm:
            comm.write("referee-sandbox")
    except OSError:
        pass


def main():
    exit_now = os._exit  # the code may replace os._exit; this one ends the run regardless
    _name_process()
    job = _read_job(sys.argv[1])
    fd = job["result_fd"]
    status_fd = job["status_fd"]
    os.set_inheritable(fd, False)
    os.set_inheritable(status_fd, False)
    _no_core_dumps()
    containment = _contain(job, fd, status_fd)
    if containment is None:
        exit_now(0)
    _send(fd, {"containment": containment, "notes": _notes(job)})
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
