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

This module runs the child and reads what it reports. The plan and what the parent sets up
for it (bubblewrap, Seatbelt, seccomp) are in :mod:`~referee.checks.sandbox_containment`,
the interpreter and what it may read in :mod:`~referee.checks.sandbox_runtime`, the
comparison of values in :mod:`~referee.checks.sandbox_values`; the child's side is
``_sandbox_boot.py``.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import marshal
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from referee.checks.interpreter import Interpreter, InterpreterError
from referee.checks.process import exited_unreaped, kill_group, start_in_own_group
from referee.checks.sandbox_containment import (
    MODE_ENV,
    containment_plan,
    disabled_mechanisms,
    platform_refusal,
    sandbox_mode,
    seccomp_programs,
    wrap_command,
)
from referee.checks.sandbox_runtime import NOBODY, Runtime, as_nobody, can_drop_root, runtime_of
from referee.checks.sandbox_values import values_equal

__all__ = [
    "Limits",
    "SandboxResult",
    "boundary_problem",
    "evaluate",
    "run_pytest",
    "values_equal",
]

Status = Literal["ok", "error", "timeout", "memory", "output-limit", "killed", "refused"]

_GRACE_S = 0.5  # how long a finished run's pipes may stay open (held by its children)


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
    threads: int = Field(
        default=64,
        ge=0,
        description="Threads the code may start, where the seccomp filter keeps them from "
        "being processes (with no extra processes: fork, vfork and a clone without "
        "CLONE_THREAD refused, ``seccomp-nofork``); elsewhere RLIMIT_NPROC counts threads "
        "as processes and none may start.",
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
        "landlock-scoped, seccomp, seccomp-nosocket, seccomp-nofork, memory-total, seatbelt, "
        "weak, audit-hook.",
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
    files: Mapping[str, str | bytes] | None = None,
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
    files: Mapping[str, str | bytes],
    args: list[str],
    *,
    limits: Limits = Limits(),  # noqa: B008
    python: Interpreter | None = None,
) -> SandboxResult:
    """Write ``files`` (relative path -> text, or bytes for binary data) into a fresh
    directory and run
    ``python -m pytest <args>`` there, with ``python`` (the project's interpreter; None:
    referee's own). Status ``ok`` iff pytest exits 0; the message is pytest's summary
    line. The plugins installed in that interpreter's environment load as in the
    project's own runs (``$PYTEST_DISABLE_PLUGIN_AUTOLOAD`` set where referee runs turns
    that off here too); the cache provider is off."""
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
    mode = sandbox_mode(limits)
    if mode == "weak":
        return None
    runtime = _runtime_or_error(python)
    if isinstance(runtime, SandboxResult):
        return runtime.message
    return _probe_boundary(mode, disabled_mechanisms(), runtime)


@functools.lru_cache(maxsize=16)
def _probe_boundary(mode: str, disabled: frozenset[str], runtime: Runtime) -> str | None:
    limits = Limits(timeout_s=30, cpu_s=30, sandbox="strict")
    job = {"mode": "evaluate", "code": "", "call": "None", "value_cap": _value_cap(limits)}
    result = _run({**job, "site": []}, {}, limits, runtime)
    return result.message if result.status == "refused" else None


# -- running ------------------------------------------------------------------------------


def _value_cap(limits: Limits) -> int:
    return max(1024 * 1024, limits.output_kb * 1024)


# The file name the boot's code carries. Under ``python -c`` it would be ``<string>``, as
# is the code of anything compiled from a string (hypothesis's generated wrappers, say):
# the boot's guard on its own functions' code took those for its own and refused the
# import of hypothesis's pytest plugin, so no sandboxed pytest run passed where it was
# installed.
BOOT_FILENAME = "<referee sandbox boot>"


def _boot_text() -> str:
    return (Path(__file__).resolve().parent / "_sandbox_boot.py").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=1)
def _boot_source() -> str:
    """What ``python -c`` runs: the boot, compiled under :data:`BOOT_FILENAME`."""
    return f"exec(compile({_boot_text()!r}, {BOOT_FILENAME!r}, 'exec'))"


@functools.lru_cache(maxsize=1)
def _boot_compiled() -> str:
    """What ``python -c`` runs where the child is this very interpreter: the boot's code
    as this process compiled it (marshal's format is the interpreter's own), compressed.
    Compiling the source was more than half of every sandboxed process's start (23 of
    41 ms of CPU before the boot ran; loading this takes 6), paid again by each oracle,
    mutant and patch run."""
    code = marshal.dumps(compile(_boot_text(), BOOT_FILENAME, "exec"))
    blob = base64.b64encode(zlib.compress(code, 9)).decode("ascii")
    return (
        "import binascii, marshal, zlib\n"
        f"exec(marshal.loads(zlib.decompress(binascii.a2b_base64({blob!r}))))"
    )


def _boot_for(runtime: Runtime) -> str:
    """The boot's ``-c`` text for ``runtime``: compiled where it is this interpreter's own
    binary, else its source (another version's marshal format differs)."""
    if os.path.realpath(runtime.interpreter) == os.path.realpath(sys.executable):
        return _boot_compiled()
    return _boot_source()


def _runtime_or_error(python: Interpreter | None) -> Runtime | SandboxResult:
    try:
        return runtime_of(python)
    except InterpreterError as exc:
        return SandboxResult(status="error", message=f"the sandbox has no interpreter: {exc}")


_PASSED_ON = ("PYTEST_DISABLE_PLUGIN_AUTOLOAD",)


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
        "NO_COLOR": "1",
        # A run may start no thread pools of its own (RLIMIT_NPROC): numerical libraries
        # that start one per core at import (OpenBLAS, OpenMP, MKL) stay on one thread
        # instead of failing their import.
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        # glibc reserves a malloc arena of 64 MB of address space for each new thread: under
        # RLIMIT_AS, a test's tenth thread failed to start. Two arenas, as in containers.
        "MALLOC_ARENA_MAX": "2",
        # pytest loads the plugins installed in the interpreter's environment (entry
        # points) as it does in the project's own runs: a test that takes a plugin's
        # fixture (``mocker``, an event loop) fails or passes here for its own reasons,
        # not for a fixture that is missing. Turned off only where whoever started referee
        # turned it off for pytest itself.
        **{name: os.environ[name] for name in _PASSED_ON if os.environ.get(name)},
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


def _command(job_ref: str, runtime: Runtime) -> list[str]:
    # Not -I: it implies -E, which would ignore PYTHONHASHSEED. The environment is built
    # from nothing instead, which is what -E protects against.
    flags = ["-S", "-s", "-u", "-B"]
    if runtime.version >= (3, 11):
        flags.append("-P")
    return [runtime.interpreter, *flags, "-c", _boot_for(runtime), job_ref]


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


def _job_settings(
    root: str,
    stage: str,
    plan: str,
    strict: bool,
    disabled: frozenset[str],
    runtime: Runtime,
    limits: Limits,
) -> dict[str, Any]:
    """What the boot script needs besides the code and its files: where to run, how to
    contain the code (the plan, what is switched off, seccomp's programs) and its limits."""
    return {
        "root": root,
        "stage": stage,
        "parent_uid": os.getuid(),
        "drop_to": NOBODY,
        "plan": plan,
        "strict": strict,
        "disabled": sorted(disabled),
        "runtime": [list(entry) for entry in runtime.entries],
        "tmpfs": ["/tmp"] if root.startswith("/tmp/") else ["/tmp", root],
        "seccomp": None if "seccomp" in disabled else seccomp_programs(),
        "limits": limits.model_dump(),
    }


def _start(
    job_ref: str,
    root: str,
    plan: str,
    limits: Limits,
    runtime: Runtime,
    passed: tuple[int, ...],
    started: float,
) -> subprocess.Popen[bytes] | SandboxResult:
    """Start the boot script on the job (as nobody, under bubblewrap or Seatbelt where
    the plan says so), in a session of its own; an error result when it cannot start."""
    env = _environment(root)
    command = _command(job_ref, runtime)
    if can_drop_root(runtime) or (plan == "namespaces" and os.getuid() == 0):
        os.chown(root, NOBODY, NOBODY)  # the code runs as nobody
    extra = as_nobody(runtime)
    command = wrap_command(command, plan, root, env, limits, runtime)
    try:
        return start_in_own_group(
            command,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=tuple(fd for fd in passed if fd >= 0),
            **extra,
        )
    except OSError as exc:
        return SandboxResult(
            status="error",
            message=f"sandbox could not start: {exc.strerror or exc}",
            duration_s=time.monotonic() - started,
        )


def _run(
    job: dict[str, Any], files: Mapping[str, str | bytes], limits: Limits, runtime: Runtime
) -> SandboxResult:
    started = time.monotonic()
    relative = {_safe_relative(name).as_posix(): content for name, content in files.items()}
    text = {name: content for name, content in relative.items() if isinstance(content, str)}
    binary = {
        name: base64.b64encode(content).decode("ascii")
        for name, content in relative.items()
        if isinstance(content, bytes)
    }
    if os.name != "posix":
        return SandboxResult(status="error", message="the sandbox needs a POSIX system")
    strict = sandbox_mode(limits) == "strict"
    disabled = disabled_mechanisms()
    plan = containment_plan(disabled, runtime)
    problem = platform_refusal(plan)
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
        job = {
            **job,
            **_job_settings(root, stage, plan, strict, disabled, runtime, limits),
            "files": text,
            "binary": binary,
            "result_fd": write_fd,
            "status_fd": status_write,
        }
        job_ref, job_fd = _job_channel(job, root)
        if job_fd >= 0:
            fds.append(job_fd)
        passed = (write_fd, status_write, job_fd)
        proc = _start(job_ref, root, plan, limits, runtime, passed, started)
        if isinstance(proc, SandboxResult):
            return proc
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
