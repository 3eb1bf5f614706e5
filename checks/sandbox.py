"""Running untrusted code — oracle programs, reference implementations, candidate patches.

Every run is a fresh interpreter in a fresh, private run directory, removed afterwards.
On Linux the kernel is the boundary (docs/sandbox.md says what each platform gets):

- bubblewrap when it is installed and works, else user, mount, network, pid, ipc and uts
  namespaces made by the child itself: the child sees a read-only root holding only the
  interpreter, its standard library, site-packages and the system libraries, four device
  nodes, its own ``/proc``, and a size-limited tmpfs with the run directory; no home, no
  host ``/tmp``, no ``/run``; it never runs as uid 0 (root's child becomes nobody);
- Landlock (the runtime read-only, the run directory writable, TCP, signals and abstract
  unix sockets) and a seccomp filter compiled with libseccomp (no ptrace, no
  process_vm_*, no mount/unshare/setns, no io_uring, bpf, perf or keyrings, no unix or
  netlink sockets), wherever the kernel offers them, namespaces or not;
- resource limits per process, a monitor that kills the whole sandbox when its processes
  together pass the memory limit, and every descendant killed at the end;
- on macOS a Seatbelt profile (``sandbox-exec``): no writes outside the run directory, no
  network, no forks unless allowed;
- last, an audit hook against Python code: defence in depth, not a boundary.

Where no kernel boundary can be had, model-written code does not run: the result is
``refused`` and says why, unless the weaker mode is allowed (``REFEREE_SANDBOX=weak``, or
``Limits(sandbox="weak")``). ``SandboxResult.containment`` names the mechanisms that were
in force for the run. A misbehaving program yields a result, never an exception or a hung
caller.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.util
import json
import math
import os
import re
import selectors
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from referee.checks.interpreter import Interpreter, InterpreterError, describe
from referee.checks.process import exited_unreaped, kill_group, start_in_own_group

__all__ = [
    "Limits",
    "SandboxResult",
    "boundary_problem",
    "evaluate",
    "run_pytest",
    "seatbelt_profile",
    "values_equal",
]

Status = Literal["ok", "error", "timeout", "memory", "output-limit", "killed", "refused"]

MODE_ENV = "REFEREE_SANDBOX"  # strict (the default) | weak
DISABLE_ENV = "REFEREE_SANDBOX_DISABLE"  # bwrap,userns,landlock,seccomp,seatbelt,hook
NAMESPACES_ENV = "REFEREE_SANDBOX_NAMESPACES"  # 0: the same as disabling bwrap and userns
MECHANISMS = ("bwrap", "userns", "landlock", "seccomp", "seatbelt", "hook")

_NOBODY = 65534
_GRACE_S = 0.5  # how long a finished run's pipes may stay open (held by its children)
_SANDBOX_EXEC = "/usr/bin/sandbox-exec"


class Limits(BaseModel):
    """What one sandboxed run may use. Every limit applies to each run separately."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_s: float = Field(default=10.0, gt=0, description="Wall-clock limit.")
    cpu_s: int = Field(default=10, ge=1, description="CPU seconds (RLIMIT_CPU).")
    memory_mb: int = Field(
        default=512,
        ge=64,
        description="Address space of each process (RLIMIT_AS), and the resident memory of "
        "all the run's processes together where a pid namespace lets the monitor see them.",
    )
    file_size_mb: int = Field(default=16, ge=1, description="Largest file (RLIMIT_FSIZE).")
    disk_mb: int = Field(
        default=64,
        ge=1,
        description="The run directory's size: a tmpfs of this size under bubblewrap or "
        "namespaces, else checked while it runs.",
    )
    output_kb: int = Field(
        default=256, ge=1, description="stdout and stderr kept, together; beyond: killed."
    )
    processes: int = Field(
        default=0, ge=0, description="Extra processes allowed (RLIMIT_NPROC where effective)."
    )
    sandbox: Literal["strict", "weak"] | None = Field(
        default=None,
        description="strict: refuse to run without a kernel boundary; weak: run with what "
        "there is; None: $REFEREE_SANDBOX, else strict.",
    )


class SandboxResult(BaseModel):
    """How a sandboxed run ended. ``status`` is ``ok`` only for a clean, complete run;
    ``refused`` when there was no kernel boundary to run it in (nothing ran)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Status
    value: str | None = Field(default=None, description="repr() of the value (evaluate).")
    value_json: Any | None = Field(
        default=None, description="The value as JSON, when it is JSON without loss."
    )
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None
    duration_s: float = 0.0
    message: str = Field(description="One line for users: 'timed out after 10 s', ...")
    containment: tuple[str, ...] = Field(
        default=(),
        description="Mechanisms in force: bwrap, userns, mountns, netns, pidns, ipcns, "
        "uid-drop, no-capabilities, rlimits, nproc, no-new-privs, landlock, landlock-tcp, "
        "landlock-scoped, seccomp, seccomp-nosocket, memory-total, seatbelt, weak, "
        "audit-hook.",
    )
    notes: tuple[str, ...] = Field(
        default=(),
        description="What was planned for the run and did not hold (a private view the "
        "kernel refused, say), for the user to read.",
    )


class SandboxError(ValueError):
    """The request itself is malformed (a file path that escapes the directory)."""


def evaluate(
    code: str,
    call: str,
    *,
    limits: Limits = Limits(),  # noqa: B008 - frozen, so one shared default is safe
    files: dict[str, str] | None = None,
    python: Interpreter | None = None,
) -> SandboxResult:
    """Run ``code`` as a module in a fresh interpreter, then evaluate the expression
    ``call`` (``"count_vowels('aeiou')"``) in its namespace. ``value`` is the repr of the
    result; an exception in either becomes status ``error`` with its type and message.
    ``python``: the interpreter to run (the project's, with its site-packages); None:
    referee's own."""
    runtime = _runtime_or_error(python)
    if isinstance(runtime, SandboxResult):
        return runtime
    job = {
        "mode": "evaluate",
        "code": code,
        "call": call,
        "value_cap": _value_cap(limits),
        # the project's code may import its dependencies; referee's own runs (oracles)
        # get the standard library only
        "site": [] if python is None or python.is_own else list(runtime.site),
    }
    return _run(job, files or {}, limits, runtime)


def run_pytest(
    files: dict[str, str],
    args: list[str],
    *,
    limits: Limits = Limits(),  # noqa: B008
    python: Interpreter | None = None,
) -> SandboxResult:
    """Write ``files`` (relative path -> text) into a fresh directory and run
    ``python -m pytest <args>`` there, with ``python`` (the project's interpreter; None:
    referee's own). Status ``ok`` iff pytest exits 0; the message is pytest's summary
    line. Plugins are not auto-loaded (``-p name`` loads one) and the cache provider is
    off."""
    runtime = _runtime_or_error(python)
    if isinstance(runtime, SandboxResult):
        return runtime
    job = {
        "mode": "pytest",
        "args": ["-p", "no:cacheprovider", *args],
        "site": list(runtime.site),
    }
    return _run(job, files, limits, runtime)


def boundary_problem(
    limits: Limits = Limits(),  # noqa: B008
    python: Interpreter | None = None,
) -> str | None:
    """Why model-written code would be refused here with ``limits`` (the message every such
    run would carry), or None when it would run. Finds out by running one empty program
    the way every run is contained (in ``python``, whose paths change what nobody can
    read); the answer is kept per setting, so callers can ask before they spend anything
    on a model."""
    mode = _mode(limits)
    if mode == "weak":
        return None
    runtime = _runtime_or_error(python)
    if isinstance(runtime, SandboxResult):
        return runtime.message
    return _probe_boundary(mode, _disabled(), runtime)


@functools.lru_cache(maxsize=16)
def _probe_boundary(mode: str, disabled: frozenset[str], runtime: _Runtime) -> str | None:
    limits = Limits(timeout_s=30, cpu_s=30, sandbox="strict")
    job = {"mode": "evaluate", "code": "", "call": "None", "value_cap": _value_cap(limits)}
    result = _run({**job, "site": []}, {}, limits, runtime)
    return result.message if result.status == "refused" else None


# -- values -------------------------------------------------------------------------------

_MISSING = object()


def values_equal(a: SandboxResult | str, b: SandboxResult | str) -> bool:
    """Whether two values (results of ``evaluate``, or reprs) are the same value.

    Reprs are read back as literals (with ``nan``, ``inf``, ``set()`` and
    ``frozenset()`` understood) and compared recursively through lists, tuples, dicts
    and sets, floats with ``math.isclose(rel_tol=1e-9, abs_tol=1e-12)`` and NaN equal to
    NaN. Reprs that are not literals compare as text. A result that is not ``ok`` equals
    nothing."""
    left, right = _repr_of(a), _repr_of(b)
    if left is None or right is None:
        return False
    x, y = _literal(left), _literal(right)
    if x is _MISSING or y is _MISSING:
        return left == right
    try:
        return _equal(x, y)
    except RecursionError:
        return left == right


def _repr_of(value: SandboxResult | str) -> str | None:
    if isinstance(value, SandboxResult):
        return value.value if value.status == "ok" else None
    return value


_NAMES = {"nan": math.nan, "inf": math.inf, "None": None, "True": True, "False": False}


def _literal(text: str) -> Any:
    try:
        tree = ast.parse(text.strip(), mode="eval")
        return _convert(tree.body)
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return _MISSING


def _convert(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_convert(item) for item in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Set):
        return _Bag([_convert(item) for item in node.elts])
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise ValueError("dict unpacking")
        return {
            _hashable(_convert(k)): _convert(v) for k, v in zip(node.keys, node.values, strict=True)
        }
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _convert(node.operand)
        if isinstance(operand, (int, float, complex)) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left, right = _convert(node.left), _convert(node.right)
        if isinstance(right, complex) and isinstance(left, (int, float)):
            return left + right if isinstance(node.op, ast.Add) else left - right
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and not node.keywords
        and len(node.args) <= 1
    ):
        name = node.func.id
        args = [_convert(arg) for arg in node.args]
        if name in ("set", "frozenset"):
            if not args:
                return _Bag([])
            items = args[0].items if isinstance(args[0], _Bag) else args[0]
            if not isinstance(items, (list, tuple, str)):
                raise ValueError("set() of a non-iterable")
            return _Bag(list(items))
        if name == "float" and len(args) == 1 and isinstance(args[0], str):
            return float(args[0])
    raise ValueError(f"not a literal: {ast.dump(node)[:60]}")


class _Bag:
    """A set read from a repr: compared by matching elements with tolerance."""

    __slots__ = ("items",)

    def __init__(self, items: list[Any]) -> None:
        self.items = items


def _hashable(key: Any) -> Any:
    if isinstance(key, list):
        return tuple(_hashable(item) for item in key)
    if isinstance(key, _Bag):
        return frozenset(_hashable(item) for item in key.items)
    return key


def _equal(x: Any, y: Any) -> bool:
    """Python's ``==``, with tolerance for floats and NaN equal to NaN."""
    if isinstance(x, (int, float)) and isinstance(y, (int, float)):
        if isinstance(x, int) and isinstance(y, int):
            return x == y
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        if math.isinf(x) or math.isinf(y):
            return x == y
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(x, complex) and isinstance(y, complex):
        return _equal(x.real, y.real) and _equal(x.imag, y.imag)
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return type(x) is type(y) and len(x) == len(y) and all(map(_equal, x, y))
    if isinstance(x, dict) and isinstance(y, dict):
        if len(x) != len(y):
            return False
        if x.keys() == y.keys():
            return all(_equal(value, y[key]) for key, value in x.items())
        return _matched(list(x.items()), list(y.items()))
    if isinstance(x, _Bag) and isinstance(y, _Bag):
        return len(x.items) == len(y.items) and _matched(x.items, y.items)
    return type(x) is type(y) and x == y


def _matched(xs: list[Any], ys: list[Any]) -> bool:
    """Whether every item of ``xs`` pairs off with an equal item of ``ys``."""
    unmatched = list(ys)
    for item in xs:
        for index, other in enumerate(unmatched):
            if _equal(item, other):
                del unmatched[index]
                break
        else:
            return False
    return not unmatched


# -- running ------------------------------------------------------------------------------


def _value_cap(limits: Limits) -> int:
    return max(1024 * 1024, limits.output_kb * 1024)


@functools.lru_cache(maxsize=1)
def _boot_source() -> str:
    return (Path(__file__).resolve().parent / "_sandbox_boot.py").read_text(encoding="utf-8")


@dataclass(frozen=True)
class _Runtime:
    """One interpreter as the sandbox runs it: the binary (``interpreter``, a virtual
    environment's link resolved: the child starts without ``site`` and is handed
    ``site``, the site-packages it adds back), its version (for its flags), and what the
    child may read (``entries``: ``(path, "dir" | "file" | "symlink")``, all read-only)."""

    interpreter: str
    version: tuple[int, ...]
    site: tuple[str, ...]
    entries: tuple[tuple[str, str], ...]


def _runtime(python: Interpreter | None = None) -> _Runtime:
    """The runtime of ``python`` (None or referee's own: this process's)."""
    if python is None or python.is_own:
        return _own_runtime()
    return _foreign_runtime(describe(python))


def _runtime_or_error(python: Interpreter | None) -> _Runtime | SandboxResult:
    try:
        return _runtime(python)
    except InterpreterError as exc:
        return SandboxResult(status="error", message=f"the sandbox has no interpreter: {exc}")


@functools.lru_cache(maxsize=1)
def _own_runtime() -> _Runtime:
    paths = sysconfig.get_paths()
    interpreter = os.path.realpath(sys.executable)
    site_dirs = _site_dirs()
    readable = (
        os.path.dirname(interpreter),
        sys.base_prefix,
        sys.base_exec_prefix,
        paths.get("stdlib"),
        paths.get("platstdlib"),
        *site_dirs,
    )
    return _Runtime(interpreter, tuple(sys.version_info[:3]), site_dirs, _entries(readable))


@functools.lru_cache(maxsize=8)
def _foreign_runtime(description: Any) -> _Runtime:
    """Another interpreter's (the project's): its binary, base prefixes and standard
    library, its site-packages and the directories its ``.pth`` files add — all
    read-only."""
    readable = (
        os.path.dirname(description.executable),
        *description.prefixes,
        *description.stdlib,
        *description.site,
        *description.extra,
    )
    return _Runtime(
        description.executable, description.version, description.site, _entries(readable)
    )


def _site_dirs() -> tuple[str, ...]:
    """Where this interpreter finds pytest: its site-packages, named explicitly because
    the child starts with ``-S`` (no site module, no user site)."""
    found: list[str] = []
    candidates = [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    candidates.append(sysconfig.get_paths()["platlib"])
    spec = importlib.util.find_spec("pytest")
    if spec is not None and spec.origin:
        candidates.append(str(Path(spec.origin).resolve().parent.parent))
    for candidate in candidates:
        if candidate and os.path.isdir(candidate) and candidate not in found:
            found.append(candidate)
    return tuple(found)


def _entries(readable: Sequence[str | None]) -> tuple[tuple[str, str], ...]:
    """What the child may read: ``(path, "dir" | "file" | "symlink")`` — the system's
    libraries and ``readable`` (the interpreter's directory, its standard library and
    site-packages). Nothing else of the host is visible under bubblewrap or namespaces,
    nor readable under Landlock."""
    entries: dict[str, str] = {}
    for top in ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"):
        if os.path.islink(top):
            entries[top] = "symlink"
        elif os.path.isdir(top):
            entries[top] = "dir"
    if os.path.isfile("/etc/ld.so.cache"):
        entries["/etc/ld.so.cache"] = "file"
    for candidate in readable:
        if candidate:
            real = os.path.realpath(candidate)
            if os.path.isdir(real):
                entries.setdefault(real, "dir")
    kept: list[tuple[str, str]] = []
    for path in sorted(entries):
        if any(path.startswith(dir_ + "/") for dir_, kind in kept if kind == "dir"):
            continue  # an earlier directory holds it already
        kept.append((path, entries[path]))
    return tuple(kept)


def _world_readable(path: str) -> bool:
    """Whether a user other than us could read ``path`` and every directory above it."""
    current = Path(path).resolve()
    for part in [current, *current.parents]:
        try:
            mode = os.stat(part).st_mode
        except OSError:
            return False
        needed = 0o005 if part.is_dir() else 0o004
        if mode & needed != needed:
            return False
    return True


def _can_drop_root(runtime: _Runtime | None = None) -> bool:
    """Root starts the child as nobody when nobody can read the interpreter and its paths
    and reach the temporary directory the run directory is made in; elsewhere (an
    interpreter under /root, ``$TMPDIR`` inside a private directory) the child becomes
    nobody inside its own user namespace, or, without one, does not run in strict mode."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or sys.platform == "win32":
        return False
    runtime = runtime or _own_runtime()
    return _runtime_world_readable(runtime) and _world_readable(tempfile.gettempdir())


@functools.lru_cache(maxsize=8)
def _runtime_world_readable(runtime: _Runtime) -> bool:
    paths = [runtime.interpreter, *(path for path, kind in runtime.entries if kind != "symlink")]
    return all(_world_readable(path) for path in paths)


def _mode(limits: Limits) -> str:
    if limits.sandbox is not None:
        return limits.sandbox
    return "weak" if os.environ.get(MODE_ENV, "").strip().lower() == "weak" else "strict"


def _disabled() -> frozenset[str]:
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


def _bwrap(runtime: _Runtime) -> str | None:
    """bubblewrap, when it is installed and can make its namespaces here (checked once
    per temporary directory and runtime, with the binds a real run uses)."""
    if not sys.platform.startswith("linux"):
        return None
    if os.geteuid() == 0 and not _can_drop_root(runtime):
        return None  # root runs bwrap as nobody, who must be able to reach the runtime
    return _bwrap_works(tempfile.gettempdir(), runtime)


@functools.lru_cache(maxsize=8)
def _bwrap_works(tmp: str, runtime: _Runtime) -> str | None:
    path = shutil.which("bwrap") or next(
        (p for p in ("/usr/bin/bwrap", "/usr/local/bin/bwrap") if os.access(p, os.X_OK)), None
    )
    if path is None:
        return None
    with tempfile.TemporaryDirectory(prefix="referee-probe-") as directory:
        command = [
            *_bwrap_args(path, os.path.realpath(directory), {}, Limits(disk_mb=1), runtime),
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
                **_as_nobody(runtime),
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
    return path if done.returncode == 0 else None


def _as_nobody(runtime: _Runtime) -> dict[str, Any]:
    if _can_drop_root(runtime):
        return {"user": _NOBODY, "group": _NOBODY, "extra_groups": []}
    return {}


def _plan(disabled: frozenset[str], runtime: _Runtime) -> str:
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
    bwrap: str, root: str, env: dict[str, str], limits: Limits, runtime: _Runtime
) -> list[str]:
    """bubblewrap's command line: every namespace, no capabilities, a read-only root with
    the runtime bound read-only, ``/proc`` of its own pid namespace, a minimal ``/dev``,
    and a ``/tmp`` of ``limits.disk_mb`` that holds the run directory."""
    size = str(limits.disk_mb * 1024 * 1024)
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


def _compile_seccomp(lib: Any, namespaced: bool) -> str:
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
def _seccomp_programs() -> dict[str, str] | None:
    """The two seccomp filters, compiled once by libseccomp into BPF that the child
    loads with one prctl(); None where libseccomp or its Python API is missing."""
    if not sys.platform.startswith("linux"):
        return None
    lib = _seccomp_module()
    if lib is None:
        return None
    try:
        return {
            "namespaced": _compile_seccomp(lib, namespaced=True),
            "host": _compile_seccomp(lib, namespaced=False),
        }
    except (ValueError, OSError, RuntimeError, AttributeError):
        return None


def _environment(directory: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": directory,
        "TMPDIR": directory,
        "PYTHONHASHSEED": "0",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "NO_COLOR": "1",
        # A run may start no thread pools of its own (RLIMIT_NPROC): numerical libraries
        # that start one per core at import (OpenBLAS, OpenMP, MKL) stay on one thread
        # instead of failing their import.
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def _sweep(directory: str) -> None:
    """Kill what is left of a run outside a pid namespace: processes that left its
    process group still carry its directory in their command line or environment."""
    marker = directory.encode()
    for _ in range(2):  # a second pass for children forked during the first
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            data = b""
            for part in ("cmdline", "environ"):
                with contextlib.suppress(OSError), open(f"/proc/{name}/{part}", "rb") as f:
                    data += f.read()
            if marker in data:
                with contextlib.suppress(OSError):
                    os.kill(int(name), signal.SIGKILL)


def _command(job_ref: str, runtime: _Runtime) -> list[str]:
    # Not -I: it implies -E, which would ignore PYTHONHASHSEED. The environment is built
    # from nothing instead, which is what -E protects against.
    flags = ["-S", "-s", "-u", "-B"]
    if runtime.version >= (3, 11):
        flags.append("-P")
    return [runtime.interpreter, *flags, "-c", _boot_source(), job_ref]


def _safe_relative(name: str) -> PurePosixPath:
    path = PurePosixPath(name.replace("\\", "/"))
    if not name or path.is_absolute() or ".." in path.parts or not path.parts:
        raise SandboxError(f"sandbox file name must be a relative path inside it: {name!r}")
    return path


def _remove_tree(directory: str) -> None:
    def unlock(function: Any, path: str, _exc: Any) -> None:
        # The code may have left read-only directories behind; make them writable and retry.
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
        with contextlib.suppress(OSError):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)

    shutil.rmtree(directory, onerror=unlock)  # onexc= is 3.12+


def _seconds(value: float) -> str:
    return f"{value:g}"


def _refused(reason: str, containment: tuple[str, ...] = (), started: float = 0.0) -> SandboxResult:
    return SandboxResult(
        status="refused",
        message=f"model-written code was not run: {reason}; set {MODE_ENV}=weak to run it "
        "with weaker protection (docs/sandbox.md)",
        containment=containment,
        duration_s=round(time.monotonic() - started, 4) if started else 0.0,
    )


def _platform_refusal(plan: str) -> str | None:
    if plan == "host" and not sys.platform.startswith("linux"):
        if sys.platform == "darwin":
            return f"no kernel sandbox here ({_SANDBOX_EXEC} is missing or switched off)"
        return f"no kernel sandbox on {sys.platform}"
    return None


def _job_channel(job: dict[str, Any], root: str) -> tuple[str, int]:
    """Hand the job over in an anonymous memory file where there is one (nothing the code
    could find on disk), else in a file the child deletes first thing."""
    data = json.dumps(job).encode("utf-8")
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("referee-job", os.MFD_CLOEXEC)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        return f"fd:{fd}", fd
    path = os.path.join(root, ".referee-job.json")
    with open(path, "wb") as handle:
        handle.write(data)
    return path, -1


def _disk_used(directory: str, cap: int) -> int:
    """Bytes under ``directory`` (allocated blocks), counting at most ``cap`` entries."""
    total = seen = 0
    stack = [directory]
    while stack and seen < cap:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
            for entry in entries:
                seen += 1
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    total += getattr(info, "st_blocks", 0) * 512 or info.st_size
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
    return total


def _run(
    job: dict[str, Any], files: dict[str, str], limits: Limits, runtime: _Runtime
) -> SandboxResult:
    started = time.monotonic()
    relative = {_safe_relative(name).as_posix(): text for name, text in files.items()}
    if os.name != "posix":
        return SandboxResult(status="error", message="the sandbox needs a POSIX system")
    strict = _mode(limits) == "strict"
    disabled = _disabled()
    plan = _plan(disabled, runtime)
    problem = _platform_refusal(plan)
    if problem and strict:
        return _refused(problem, started=started)
    directory = tempfile.mkdtemp(prefix="referee-sandbox-")
    stage = ""
    fds: list[int] = []
    try:
        root = os.path.realpath(directory)
        if plan == "namespaces":  # where the child mounts its new root
            stage = tempfile.mkdtemp(prefix="referee-stage-")
        read_fd, write_fd = os.pipe()
        status_read, status_write = os.pipe()
        fds += [read_fd, write_fd, status_read, status_write]
        tmpfs = ["/tmp"] if root.startswith("/tmp/") else ["/tmp", root]
        job = {
            **job,
            "root": root,
            "stage": stage,
            "files": relative,
            "result_fd": write_fd,
            "status_fd": status_write,
            "parent_uid": os.getuid(),
            "drop_to": _NOBODY,
            "plan": plan,
            "strict": strict,
            "disabled": sorted(disabled),
            "runtime": [list(entry) for entry in runtime.entries],
            "tmpfs": tmpfs,
            "seccomp": None if "seccomp" in disabled else _seccomp_programs(),
            "limits": limits.model_dump(),
        }
        job_ref, job_fd = _job_channel(job, root)
        if job_fd >= 0:
            fds.append(job_fd)
        env = _environment(root)
        command = _command(job_ref, runtime)
        if _can_drop_root(runtime) or (plan == "namespaces" and os.getuid() == 0):
            os.chown(root, _NOBODY, _NOBODY)  # the code runs as nobody
        extra = _as_nobody(runtime)
        if plan == "bwrap":
            bwrap = _bwrap(runtime)
            assert bwrap is not None
            command = _bwrap_args(bwrap, root, env, limits, runtime) + command
        elif plan == "seatbelt":
            readable = [path for path, kind in runtime.entries if kind != "symlink"]
            profile = seatbelt_profile(root, readable, runtime.interpreter, limits.processes)
            command = [_SANDBOX_EXEC, "-p", profile, *command]
        try:
            proc = start_in_own_group(
                command,
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=tuple(fd for fd in (write_fd, status_write, job_fd) if fd >= 0),
                **extra,
            )
        except OSError as exc:
            return SandboxResult(
                status="error",
                message=f"sandbox could not start: {exc.strerror or exc}",
                duration_s=time.monotonic() - started,
            )
        for fd in (write_fd, status_write, job_fd):
            if fd >= 0:
                os.close(fd)
                fds.remove(fd)
        watch = root if plan in ("host", "seatbelt") else None
        try:
            outcome = _collect(proc, read_fd, status_read, limits, started, watch)
        finally:
            kill_group(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        over = watch is not None and _disk_used(watch, 20000) > limits.disk_mb * 1024 * 1024
        if over and not outcome.stopped:  # what it wrote since the last look
            outcome.stopped = "disk"
        result = _result(job["mode"], proc.returncode, outcome, limits, started)
        if "pidns" not in result.containment and os.path.isdir("/proc"):
            _sweep(root)
        return result
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        _remove_tree(directory)
        if stage:
            with contextlib.suppress(OSError):
                os.rmdir(stage)


class _Outcome:
    def __init__(self) -> None:
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.channel = bytearray()
        self.status = bytearray()  # the monitor's report: how the code's process ended
        self.stopped: str | None = None  # "timeout" / "output-limit" / "disk": we killed it


def _collect(
    proc: subprocess.Popen[bytes],
    channel: int,
    status: int,
    limits: Limits,
    started: float,
    watch: str | None = None,
) -> _Outcome:
    """Read stdout, stderr, the result channel and the monitor's report until they close,
    the run times out, its output passes the cap, or (``watch``: a run directory on the
    host's disk) the directory passes its size; never hold more than the cap in memory."""
    outcome = _Outcome()
    assert proc.stdout is not None and proc.stderr is not None
    buffers = {
        proc.stdout.fileno(): outcome.stdout,
        proc.stderr.fileno(): outcome.stderr,
        channel: outcome.channel,
        status: outcome.status,
    }
    output_cap = limits.output_kb * 1024
    channel_cap = _value_cap(limits) * 7 + 65536  # JSON escaping of a capped repr
    disk_cap = limits.disk_mb * 1024 * 1024
    deadline = started + limits.timeout_s
    exited_at: float | None = None
    next_disk_check = started + 0.05
    with selectors.DefaultSelector() as selector:
        for fd in buffers:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                outcome.stopped = "timeout"
                break
            if watch is not None and now >= next_disk_check:
                next_disk_check = now + 0.05
                if _disk_used(watch, 20000) > disk_cap:
                    outcome.stopped = "disk"
                    break
            if exited_at is None and exited_unreaped(proc):
                exited_at = now
            if exited_at is not None and now - exited_at > _GRACE_S:
                break  # its children hold the pipes open; the group is killed next
            wait = 0.05 if watch is not None else 0.1
            for key, _ in selector.select(timeout=min(deadline - now, wait)):
                fd = key.fd
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not data:
                    selector.unregister(fd)
                    continue
                buffer = buffers[fd]
                if fd == channel:
                    room = channel_cap - len(buffer)
                elif fd == status:
                    room = 4096 - len(buffer)
                else:
                    room = output_cap - len(outcome.stdout) - len(outcome.stderr)
                buffer += data[: max(room, 0)]
                if len(data) > room and fd != status:
                    outcome.stopped = "output-limit"
                    break
            if outcome.stopped:
                break
    if outcome.stopped:
        kill_group(proc.pid)
    return outcome


def _messages(
    data: bytes,
) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, Any] | None, str | None]:
    containment: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    result = None
    refused = None
    for line in bytes(data).split(b"\n"):
        try:
            message = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if not isinstance(message, dict):
            continue
        if "containment" in message and not containment:
            containment = tuple(str(item) for item in message["containment"])
            notes = tuple(str(item)[:300] for item in message.get("notes") or ())
        elif "refused" in message and refused is None:
            refused = str(message["refused"])[:500]
        elif "result" in message:
            result = message
    return containment, notes, result, refused


def _monitor_report(data: bytes) -> dict[str, int]:
    report: dict[str, int] = {}
    for line in bytes(data).split(b"\n"):
        with contextlib.suppress(json.JSONDecodeError, UnicodeDecodeError, TypeError, ValueError):
            message = json.loads(line)
            if isinstance(message, dict):
                report.update({k: int(v) for k, v in message.items()})
    return report


_SUMMARY = re.compile(
    r"\b(\d+ (passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected)"
    r"|no tests ran)\b.* in [\d.]+s"
)


def _pytest_summary(stdout: str) -> str | None:
    for line in reversed(stdout.splitlines()):
        if _SUMMARY.search(line):
            return line.strip("= \t")
    return None


def _last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()[:300]
    return ""


def _result(
    mode: str, returncode: int | None, outcome: _Outcome, limits: Limits, started: float
) -> SandboxResult:
    stdout = outcome.stdout.decode("utf-8", errors="replace")
    stderr = outcome.stderr.decode("utf-8", errors="replace")
    containment, notes, reported, refused = _messages(outcome.channel)
    if refused is not None:
        return _refused(refused, containment, started)
    monitor = _monitor_report(outcome.status)
    if "wait_status" in monitor:
        # How the code's process itself ended, as its monitor saw it (under bubblewrap
        # the process we started is bubblewrap, which reports a signal as 128 + n).
        with contextlib.suppress(ValueError):
            returncode = os.waitstatus_to_exitcode(monitor["wait_status"])
    common = {
        "stdout": stdout,
        "stderr": stderr,
        "returncode": returncode,
        "duration_s": round(time.monotonic() - started, 4),
        "containment": containment,
        "notes": notes,
    }
    summary = _pytest_summary(stdout) if mode == "pytest" else None

    def done(status: Status, message: str, **fields: Any) -> SandboxResult:
        return SandboxResult(status=status, message=message, **common, **fields)

    if outcome.stopped == "timeout":
        return done("timeout", f"timed out after {_seconds(limits.timeout_s)} s")
    if outcome.stopped == "output-limit":
        return done("output-limit", f"output passed {limits.output_kb} KB; stopped, truncated")
    if outcome.stopped == "disk":
        return done("error", f"the run directory passed its disk limit of {limits.disk_mb} MB")
    if "memory_kb" in monitor:
        used = monitor["memory_kb"] // 1024
        return done(
            "memory",
            f"its processes together used {used} MB (limit {limits.memory_mb} MB); all killed",
        )
    if reported is not None:
        kind = reported.get("result")
        message = str(reported.get("message", ""))[:300]
        if kind == "ok" and mode == "evaluate":
            return done(
                "ok",
                "ok",
                value=reported.get("value"),
                value_json=reported.get("value_json") if reported.get("json") else None,
            )
        if kind == "memory":
            return done("memory", f"{message or 'MemoryError'} (limit {limits.memory_mb} MB)")
        if kind == "output-limit":
            return done("output-limit", message)
        if kind == "error":
            return done("error", message or "error")
    if returncode is not None and returncode < 0:
        signum = -returncode
        if signum == signal.SIGXCPU:
            return done("timeout", f"CPU time limit of {limits.cpu_s} s exceeded")
        if signum == signal.SIGXFSZ:
            return done("error", f"file size limit of {limits.file_size_mb} MB exceeded")
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return done("killed", f"killed by {name}")
    if returncode == 0 and mode == "pytest":
        return done("ok", summary or "pytest passed")
    if "MemoryError" in stderr or (mode == "pytest" and "MemoryError" in stdout):
        detail = f"; {summary}" if summary else ""
        return done("memory", f"MemoryError (limit {limits.memory_mb} MB){detail}")
    if mode == "pytest":
        return done("error", summary or _last_line(stderr) or f"pytest exited {returncode}")
    if returncode == 0:
        return done("error", "exited without returning a value")
    return done("error", _last_line(stderr) or f"exited with status {returncode}")
