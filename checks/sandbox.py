"""Running untrusted code — oracle programs, reference implementations, candidate patches.

Every run is a fresh interpreter in a fresh temporary directory, removed afterwards:

- a scrubbed environment (``PATH``, ``LANG``, ``PYTHONHASHSEED=0``, ``HOME`` and ``TMPDIR``
  set to the directory — nothing inherited, so no secrets), stdin closed;
- its own session and process group, killed as a whole (``os.killpg``) on timeout, when
  its output passes the cap, and after it exits;
- inside the child, before any untrusted code (``_sandbox_boot.py``): new user, network
  and pid namespaces where the kernel allows, resource limits (CPU, address space, file
  size, processes, no core dumps), and an audit hook that refuses writes outside the
  directory, signals to other processes, and the network when no namespace could be made;
- output read incrementally and capped; values come back over a dedicated pipe.

``SandboxResult.containment`` names the mechanisms that were in force for that run.
A misbehaving program yields a result, never an exception or a hung caller.
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
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Limits", "SandboxResult", "evaluate", "run_pytest", "values_equal"]

Status = Literal["ok", "error", "timeout", "memory", "output-limit", "killed"]

_NOBODY = 65534
_GRACE_S = 0.5  # how long a finished run's pipes may stay open (held by its children)


class Limits(BaseModel):
    """What one sandboxed run may use. Every limit applies to each run separately."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_s: float = Field(default=10.0, gt=0, description="Wall-clock limit.")
    cpu_s: int = Field(default=10, ge=1, description="CPU seconds (RLIMIT_CPU).")
    memory_mb: int = Field(default=512, ge=64, description="Address space (RLIMIT_AS).")
    file_size_mb: int = Field(default=16, ge=1, description="Largest file (RLIMIT_FSIZE).")
    output_kb: int = Field(
        default=256, ge=1, description="stdout and stderr kept, together; beyond: killed."
    )
    processes: int = Field(
        default=0, ge=0, description="Extra processes allowed (RLIMIT_NPROC where effective)."
    )


class SandboxResult(BaseModel):
    """How a sandboxed run ended. ``status`` is ``ok`` only for a clean, complete run."""

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
        description="Mechanisms in force: userns, netns, pidns, rlimits, nproc, "
        "no-new-privs, uid-drop, audit-hook.",
    )


class SandboxError(ValueError):
    """The request itself is malformed (a file path that escapes the directory)."""


def evaluate(
    code: str,
    call: str,
    *,
    limits: Limits = Limits(),  # noqa: B008 - frozen, so one shared default is safe
    files: dict[str, str] | None = None,
) -> SandboxResult:
    """Run ``code`` as a module in a fresh interpreter, then evaluate the expression
    ``call`` (``"count_vowels('aeiou')"``) in its namespace. ``value`` is the repr of the
    result; an exception in either becomes status ``error`` with its type and message."""
    job = {"mode": "evaluate", "code": code, "call": call, "value_cap": _value_cap(limits)}
    return _run(job, files or {}, limits)


def run_pytest(
    files: dict[str, str],
    args: list[str],
    *,
    limits: Limits = Limits(),  # noqa: B008
) -> SandboxResult:
    """Write ``files`` (relative path -> text) into a fresh directory and run
    ``python -m pytest <args>`` there. Status ``ok`` iff pytest exits 0; the message is
    pytest's summary line. Plugins are not auto-loaded (``-p name`` loads one) and the
    cache provider is off."""
    job = {
        "mode": "pytest",
        "args": ["-p", "no:cacheprovider", *args],
        "site": list(_site_dirs()),
    }
    return _run(job, files, limits)


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


@functools.lru_cache(maxsize=1)
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


@functools.lru_cache(maxsize=1)
def _can_drop_root() -> bool:
    """Root runs the child as nobody when nobody can read the interpreter and its paths
    (root is exempt from RLIMIT_NPROC and owns most of the file system)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not sys.platform.startswith("linux"):
        return False
    paths = [sys.executable, sysconfig.get_paths()["stdlib"], *_site_dirs()]
    platstdlib = sysconfig.get_paths().get("platstdlib")
    if platstdlib:
        paths.append(platstdlib)
    return all(_world_readable(path) for path in paths)


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


def _command(job_path: str) -> list[str]:
    # Not -I: it implies -E, which would ignore PYTHONHASHSEED. The environment is built
    # from nothing instead, which is what -E protects against.
    flags = ["-S", "-s", "-u", "-B"]
    if sys.version_info >= (3, 11):
        flags.append("-P")
    return [sys.executable, *flags, "-c", _boot_source(), job_path]


def _safe_relative(name: str) -> PurePosixPath:
    path = PurePosixPath(name.replace("\\", "/"))
    if not name or path.is_absolute() or ".." in path.parts or not path.parts:
        raise SandboxError(f"sandbox file name must be a relative path inside it: {name!r}")
    return path


def _chown_tree(directory: str, uid: int) -> None:
    for dirpath, dirnames, filenames in os.walk(directory):
        os.chown(dirpath, uid, uid)
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)


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


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the process has exited, without reaping it where the OS allows (its pid,
    and so its process group's id, stays ours until the group is killed)."""
    if not hasattr(os, "waitid"):  # macOS
        return proc.poll() is not None
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _seconds(value: float) -> str:
    return f"{value:g}"


def _run(job: dict[str, Any], files: dict[str, str], limits: Limits) -> SandboxResult:
    started = time.monotonic()
    relative = {_safe_relative(name): text for name, text in files.items()}
    if os.name != "posix":
        return SandboxResult(status="error", message="the sandbox needs a POSIX system")
    directory = tempfile.mkdtemp(prefix="referee-sandbox-")
    read_fd = write_fd = -1
    try:
        root = os.path.realpath(directory)
        for path, text in relative.items():
            target = Path(root, *path.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        read_fd, write_fd = os.pipe()
        job = {
            **job,
            "root": root,
            "result_fd": write_fd,
            "parent_uid": os.getuid(),
            # REFEREE_SANDBOX_NAMESPACES=0: for kernels where namespaces misbehave, and to
            # test the audit-hook fallback on kernels where they work.
            "namespaces": os.environ.get("REFEREE_SANDBOX_NAMESPACES", "1") != "0",
            "limits": limits.model_dump(),
        }
        job_path = os.path.join(root, ".referee-job.json")
        with open(job_path, "w", encoding="utf-8") as handle:
            json.dump(job, handle)
        extra: dict[str, Any] = {}
        if _can_drop_root():
            _chown_tree(root, _NOBODY)
            extra = {"user": _NOBODY, "group": _NOBODY, "extra_groups": []}
        try:
            proc = subprocess.Popen(
                _command(job_path),
                cwd=root,
                env=_environment(root),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(write_fd,),
                start_new_session=True,
                close_fds=True,
                **extra,
            )
        except OSError as exc:
            return SandboxResult(
                status="error",
                message=f"sandbox could not start: {exc.strerror or exc}",
                duration_s=time.monotonic() - started,
            )
        os.close(write_fd)
        write_fd = -1
        try:
            outcome = _collect(proc, read_fd, limits, started)
        finally:
            _kill_group(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        result = _result(job["mode"], proc.returncode, outcome, limits, started)
        if limits.processes and "pidns" not in result.containment and os.path.isdir("/proc"):
            _sweep(root)
        return result
    finally:
        for fd in (read_fd, write_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        _remove_tree(directory)


class _Outcome:
    def __init__(self) -> None:
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.channel = bytearray()
        self.stopped: str | None = None  # "timeout" / "output-limit": we killed it


def _collect(proc: subprocess.Popen[bytes], channel: int, limits: Limits, started: float):
    """Read stdout, stderr and the result channel until they close, the run times out, or
    its output passes the cap; never hold more than the cap in memory."""
    outcome = _Outcome()
    assert proc.stdout is not None and proc.stderr is not None
    buffers = {
        proc.stdout.fileno(): outcome.stdout,
        proc.stderr.fileno(): outcome.stderr,
        channel: outcome.channel,
    }
    output_cap = limits.output_kb * 1024
    channel_cap = _value_cap(limits) * 7 + 65536  # JSON escaping of a capped repr
    deadline = started + limits.timeout_s
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        for fd in buffers:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                outcome.stopped = "timeout"
                break
            if exited_at is None and _exited(proc):
                exited_at = now
            if exited_at is not None and now - exited_at > _GRACE_S:
                break  # its children hold the pipes open; the group is killed next
            for key, _ in selector.select(timeout=min(deadline - now, 0.1)):
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
                else:
                    room = output_cap - len(outcome.stdout) - len(outcome.stderr)
                buffer += data[: max(room, 0)]
                if len(data) > room:
                    outcome.stopped = "output-limit"
                    break
            if outcome.stopped:
                break
    if outcome.stopped:
        _kill_group(proc.pid)
    return outcome


def _messages(channel: bytes) -> tuple[tuple[str, ...], dict[str, Any] | None]:
    containment: tuple[str, ...] = ()
    result = None
    for line in bytes(channel).split(b"\n"):
        try:
            message = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if not isinstance(message, dict):
            continue
        if "containment" in message and not containment:
            containment = tuple(str(item) for item in message["containment"])
        elif "result" in message:
            result = message
    return containment, result


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
    containment, reported = _messages(outcome.channel)
    common = {
        "stdout": stdout,
        "stderr": stderr,
        "returncode": returncode,
        "duration_s": round(time.monotonic() - started, 4),
        "containment": containment,
    }
    summary = _pytest_summary(stdout) if mode == "pytest" else None

    def done(status: Status, message: str, **fields: Any) -> SandboxResult:
        return SandboxResult(status=status, message=message, **common, **fields)

    if outcome.stopped == "timeout":
        return done("timeout", f"timed out after {_seconds(limits.timeout_s)} s")
    if outcome.stopped == "output-limit":
        return done("output-limit", f"output passed {limits.output_kb} KB; stopped, truncated")
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
