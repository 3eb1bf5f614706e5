"""How a sandboxed run is contained: the plan, and the kernel mechanisms set up for it.

The plan (:func:`containment_plan`): bubblewrap, namespaces the child makes itself, Seatbelt on
macOS, or the host with Landlock and seccomp at most; what the environment switches off
(:func:`disabled_mechanisms`), and whether a run without a kernel boundary is allowed at all
(:func:`sandbox_mode`). What the parent sets up is here: bubblewrap's command line, the Seatbelt
profile, and the seccomp filters compiled once into BPF for the child to load
(:func:`seccomp_programs`); the rest the child does itself (``_sandbox_boot.py``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from referee.checks.sandbox_runtime import Runtime, as_nobody, can_drop_root

if TYPE_CHECKING:
    from referee.checks.sandbox import Limits

MODE_ENV = "REFEREE_SANDBOX"  # strict (the default) | weak
DISABLE_ENV = "REFEREE_SANDBOX_DISABLE"  # bwrap,userns,landlock,seccomp,seatbelt,hook
NAMESPACES_ENV = "REFEREE_SANDBOX_NAMESPACES"  # 0: the same as disabling bwrap and userns
MECHANISMS = ("bwrap", "userns", "landlock", "seccomp", "seatbelt", "hook")
_SANDBOX_EXEC = "/usr/bin/sandbox-exec"


def sandbox_mode(limits: Limits) -> str:
    if limits.sandbox is not None:
        return limits.sandbox
    return "weak" if os.environ.get(MODE_ENV, "").strip().lower() == "weak" else "strict"


def disabled_mechanisms() -> frozenset[str]:
    """Mechanisms switched off: ``$REFEREE_SANDBOX_DISABLE`` (for kernels where one
    misbehaves, and to test the others alone), and ``$REFEREE_SANDBOX_NAMESPACES=0``."""
    names = {
        name.strip().lower()
        for name in os.environ.get(DISABLE_ENV, "").split(",")
        if name.strip().lower() in MECHANISMS
    }
    if os.environ.get(NAMESPACES_ENV, "1") == "0":
        names |= {"bwrap", "userns"}
    return frozenset(names)


def _bwrap(runtime: Runtime) -> str | None:
    """bubblewrap, when it is installed and can make its namespaces here (checked once
    per temporary directory and runtime, with the binds a real run uses)."""
    if not sys.platform.startswith("linux"):
        return None
    if os.geteuid() == 0 and not can_drop_root(runtime):
        return None  # root runs bwrap as nobody, who must be able to reach the runtime
    return _bwrap_works(tempfile.gettempdir(), runtime)


@functools.lru_cache(maxsize=8)
def _bwrap_works(tmp: str, runtime: Runtime) -> str | None:
    path = shutil.which("bwrap") or next(
        (p for p in ("/usr/bin/bwrap", "/usr/local/bin/bwrap") if os.access(p, os.X_OK)), None
    )
    if path is None:
        return None
    with tempfile.TemporaryDirectory(prefix="referee-probe-") as directory:
        command = [
            *_bwrap_args(path, os.path.realpath(directory), {}, 1, runtime),
            runtime.interpreter,
            "-S",
            "-c",
            "pass",
        ]
        try:
            done = subprocess.run(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=10,
                **as_nobody(runtime),
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
    return path if done.returncode == 0 else None


def containment_plan(disabled: frozenset[str], runtime: Runtime) -> str:
    """How the child is contained: ``bwrap``, ``namespaces`` (the child makes them),
    ``seatbelt`` (macOS) or ``host`` (Landlock and seccomp at most)."""
    if sys.platform.startswith("linux"):
        if "bwrap" not in disabled and _bwrap(runtime) is not None:
            return "bwrap"
        return "host" if "userns" in disabled else "namespaces"
    if (
        sys.platform == "darwin"
        and "seatbelt" not in disabled
        and os.access(_SANDBOX_EXEC, os.X_OK)
    ):
        return "seatbelt"
    return "host"


def _bwrap_args(
    bwrap: str, root: str, env: dict[str, str], disk_mb: int, runtime: Runtime
) -> list[str]:
    """bubblewrap's command line: every namespace, no capabilities, a read-only root with
    the runtime bound read-only, ``/proc`` of its own pid namespace, a minimal ``/dev``,
    and a ``/tmp`` of ``disk_mb`` MB that holds the run directory."""
    size = str(disk_mb * 1024 * 1024)
    args = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    args.append("--clearenv")
    for name, value in env.items():
        args += ["--setenv", name, value]
    args += ["--perms", "1777", "--size", size, "--tmpfs", "/tmp"]
    if not root.startswith("/tmp/"):
        args += ["--perms", "0700", "--size", size, "--tmpfs", root]
    args += ["--perms", "0700", "--dir", root]
    for path, kind in runtime.entries:
        if kind == "symlink":
            args += ["--symlink", os.readlink(path), path]
        else:
            args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev", "--remount-ro", "/"]
    args += ["--chdir", root, "--"]
    return args


def wrap_command(
    command: list[str],
    plan: str,
    root: str,
    env: dict[str, str],
    limits: Limits,
    runtime: Runtime,
) -> list[str]:
    """``command`` under bubblewrap or Seatbelt where ``plan`` says so."""
    if plan == "bwrap":
        bwrap = _bwrap(runtime)
        assert bwrap is not None
        return _bwrap_args(bwrap, root, env, limits.disk_mb, runtime) + command
    if plan == "seatbelt":
        readable = [path for path, kind in runtime.entries if kind != "symlink"]
        profile = seatbelt_profile(root, readable, runtime.interpreter, limits.processes)
        return [_SANDBOX_EXEC, "-p", profile, *command]
    return command


def _seatbelt_quote(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def seatbelt_profile(root: str, readable: Sequence[str], interpreter: str, processes: int) -> str:
    """The macOS Seatbelt (``sandbox-exec``) profile of one run: nothing is allowed but
    reading the runtime (``readable``) and the run directory ``root``, writing in
    ``root``, executing the interpreter, and forking when ``processes`` allows. No network
    of any kind. Not tested on macOS by referee's own tests (see docs/sandbox.md)."""
    q = _seatbelt_quote
    system = ("/System", "/usr/lib", "/usr/share", "/private/var/db/dyld", "/Library/Apple")
    reads = " ".join(f"(subpath {q(path)})" for path in (*system, *readable, root))
    devices = " ".join(
        f"(literal {q('/dev/' + name)})" for name in ("null", "zero", "random", "urandom")
    )
    lines = [
        "(version 1)",
        "(deny default)",
        f"(allow process-exec (literal {q(interpreter)}))",
        "(allow file-read-metadata)",
        "(allow sysctl-read)",
        "(allow signal (target same-sandbox))",
        f"(allow file-read* {reads} {devices})",
        f'(allow file-write* (subpath {q(root)}) (literal "/dev/null"))',
        "(deny network*)",
    ]
    if processes:
        lines.insert(3, "(allow process-fork)")
        lines.insert(4, f"(allow process-exec {reads})")
    return "\n".join(lines) + "\n"


_DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount",
    "umount2",
    "unshare",
    "setns",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "syslog",
    "quotactl",
    "name_to_handle_at",
    "open_by_handle_at",
)
_NAMESPACE_FLAGS = (
    0x00020000,
    0x02000000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
)
_AF_INET, _AF_INET6 = 2, 10
_METADATA_SYSCALLS = (
    "chmod",
    "fchmod",
    "fchmodat",
    "fchmodat2",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "utime",
    "utimes",
    "futimesat",
    "utimensat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
)


def _seccomp_module() -> Any:
    """libseccomp's Python API: its own bindings where installed (Debian's
    ``python3-seccomp``), else ``pyseccomp``, the same API over ctypes."""
    try:
        import seccomp  # type: ignore[import-not-found]

        return seccomp
    except ImportError:
        pass
    try:
        import pyseccomp  # type: ignore[import-untyped]

        return pyseccomp
    except (ImportError, OSError):  # OSError: libseccomp.so.2 is not installed
        return None


_CLONE_THREAD = 0x00010000


def _compile_seccomp(lib: Any, namespaced: bool, nofork: bool = False) -> str:
    import errno

    deny = lib.ERRNO(errno.EPERM)
    flt = lib.SyscallFilter(lib.ALLOW)
    for name in _DENIED_SYSCALLS:
        with contextlib.suppress(ValueError, OSError, RuntimeError):
            flt.add_rule(deny, name)
    for flag in _NAMESPACE_FLAGS:  # clone() into new namespaces
        flt.add_rule(deny, "clone", lib.Arg(0, lib.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory a filter cannot read: ENOSYS makes the C library
    # fall back to clone(), whose flags it can.
    with contextlib.suppress(ValueError, OSError, RuntimeError):
        flt.add_rule(lib.ERRNO(errno.ENOSYS), "clone3")
    if nofork:  # threads, never a process: RLIMIT_NPROC can then count threads alone
        for name in ("fork", "vfork"):
            with contextlib.suppress(ValueError, OSError, RuntimeError):
                flt.add_rule(deny, name)
        flt.add_rule(deny, "clone", lib.Arg(0, lib.MASKED_EQ, _CLONE_THREAD, 0))
    refuse = lib.ERRNO(errno.EACCES)
    if namespaced:  # internet sockets reach nothing in an empty network namespace
        for family in range(64):
            if family not in (_AF_INET, _AF_INET6):
                flt.add_rule(refuse, "socket", lib.Arg(0, lib.EQ, family))
        flt.add_rule(refuse, "socket", lib.Arg(0, lib.GE, 64))
    else:  # no socket at all; socketpair() stays; nobody leaves the group killed at the end
        flt.add_rule(refuse, "socket")
        flt.add_rule(deny, "setsid")
        flt.add_rule(deny, "setpgid")
        # On the host's file system Landlock governs contents, not metadata: without a
        # read-only view, the modes, owners, times and attributes of the user's own files
        # (a virtual environment in their home) would be the code's to change.
        for name in _METADATA_SYSCALLS:
            with contextlib.suppress(ValueError, OSError, RuntimeError):
                flt.add_rule(deny, name)
    with tempfile.TemporaryFile() as handle:
        flt.export_bpf(handle)
        handle.seek(0)
        return handle.read().hex()


@functools.lru_cache(maxsize=1)
def seccomp_programs() -> dict[str, str] | None:
    """The seccomp filters, compiled once by libseccomp into BPF that the child loads
    with one prctl(): inside namespaces or on the host, each also as ``-nofork`` (no
    process may start, threads may); None where libseccomp or its Python API is
    missing."""
    if not sys.platform.startswith("linux"):
        return None
    lib = _seccomp_module()
    if lib is None:
        return None
    try:
        return {
            f"{where}{suffix}": _compile_seccomp(lib, where == "namespaced", bool(suffix))
            for where in ("namespaced", "host")
            for suffix in ("", "-nofork")
        }
    except (ValueError, OSError, RuntimeError, AttributeError):
        return None


def platform_refusal(plan: str) -> str | None:
    if plan == "host" and not sys.platform.startswith("linux"):
        if sys.platform == "darwin":
            return f"no kernel sandbox here ({_SANDBOX_EXEC} is missing or switched off)"
        return f"no kernel sandbox on {sys.platform}"
    return None
