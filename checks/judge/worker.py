"""The in-process model, moved out of the process: a worker that referee starts and owns.

llama.cpp is native code, and native code can crash (on AMX CPUs it does:
ggml-org/llama.cpp#20824). A crash must never take down the language server holding an
editor session, nor the CLI's report. So :class:`WorkerBackend` — what
:func:`~referee.checks.judge.opening.open_backend` returns for ``llama-cpp`` — starts
``python -m referee.checks.judge._worker_main``, loads the model there once, and talks to it
over a pipe. Everything that makes the model fast (the batched decoder, forced text, the
shared prompt cache) runs inside the worker, unchanged; only requests and answers cross.

When the worker dies — a signal (SIGSEGV, SIGABRT, an OOM kill), or no sign of life for
``timeout`` seconds (it is then killed) — the call raises :class:`WorkerCrashed`, whose
message is one line ("the model process crashed: signal 11 (SIGSEGV)"). Callers send the
items being judged to L3 as UNCLEAR; none passes. The next call starts a fresh worker,
after a back-off (1 s, doubling to 60 s) so a model that always crashes is not restarted
in a loop; within the back-off a call raises :class:`WorkerUnavailable` at once.

Under ``judge.runtime = "auto"`` a worker that crashed in ``fast`` mode is restarted once
in ``safe`` mode for the same request, and the machine remembers that (see
:mod:`referee.checks.judge.runtime`).

The worker dies with its parent however the parent ends: it exits when its end of the
pipe closes (the parent exited, was killed, or closed it) and, on Linux, asks the kernel
for SIGKILL when its parent dies.

Framing: a 4-byte big-endian length, then the body — pickle from parent to worker (the
requests carry the judge's forcing object), JSON from worker to parent (nothing the parent
reads can run code).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from referee.checks.judge import runtime
from referee.checks.judge.backend import (
    Backend,
    BackendError,
    BatchCancelled,
    ChatRequest,
    Generation,
)
from referee.checks.process import dead_or_dying, kill_and_reap, read_exact, wait_then_kill
from referee.checks.progress import IDLE, Work

log = logging.getLogger("referee.judge.worker")

HEADER = struct.Struct(">I")
MAX_FRAME = 256 << 20
# Loading a model is mostly mapping its file: seconds, but a cold disk is slow.
LOAD_TIMEOUT_S = 300.0
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0
# Environment variable naming a test-only backend ("module:attribute") the worker builds
# instead of loading a model; see tests/worker_backends.py. Read only in the worker.
TEST_BACKEND_ENV = "REFEREE_WORKER_TEST_BACKEND"


class WorkerCrashed(BackendError):
    """The model process died (or hung and was killed) while answering; the message is
    one line saying how."""


class WorkerUnavailable(BackendError):
    """The model process crashed recently and is not restarted yet (back-off)."""


def describe_exit(returncode: int | None) -> str:
    """``signal 11 (SIGSEGV)``, ``exit status 3``."""
    if returncode is None:
        return "no exit status"
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "?"
        return f"signal {-returncode} ({name})"
    return f"exit status {returncode}"


@dataclass(frozen=True)
class WorkerSpec:
    """What the worker loads: a GGUF file with llama-cpp-python, in a runtime mode."""

    path: str
    n_ctx: int = 4096
    threads: int | None = None
    identity: str | None = None
    setting: runtime.Setting = "auto"


@dataclass
class _Process:
    popen: subprocess.Popen[bytes]
    mode: runtime.Mode
    info: dict[str, Any] = field(default_factory=dict)
    stderr_tail: deque[str] = field(default_factory=lambda: deque(maxlen=40))


class WorkerBackend(Backend):
    """The :class:`~referee.checks.judge.backend.Backend` of a GGUF model run by a worker
    process. Thread-safe: calls are serialised (the worker answers one at a time)."""

    def __init__(self, spec: WorkerSpec, *, timeout_s: float = 120.0) -> None:
        self.spec = spec
        self.timeout_s = timeout_s
        self._identity = spec.identity
        self._lock = threading.RLock()
        self._process: _Process | None = None
        self._next_id = 0
        self._crashes = 0
        self._not_before = 0.0
        self._closing = False
        self.last_crash: str | None = None
        self.starts = 0
        self.cpu = runtime.this_cpu()
        _LIVE.add(self)

    # ---------------------------------------------------------------- identity

    @property
    def identity(self) -> str:
        if self._identity is None:
            from referee.checks.judge.backend import _file_identity

            self._identity = _file_identity(Path(self.spec.path))
        return self._identity

    @property
    def info(self) -> dict[str, Any]:
        """What the running worker said of itself when it was ready (mode, load time...)."""
        process = self._process
        return dict(process.info) if process is not None else {}

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.popen.pid if process is not None else None

    # ---------------------------------------------------------------- life cycle

    def _choice(self) -> runtime.Choice:
        return runtime.choose(self.spec.setting, self.cpu, runtime.remembered(self.cpu))

    def start(self) -> dict[str, Any]:
        """Start the worker now (it starts by itself on the first question); what it said
        when it was ready."""
        with self._lock:
            self._ensure()
            return self.info

    def _ensure(self, mode: runtime.Mode | None = None) -> _Process:
        process = self._process
        if process is not None and not dead_or_dying(process.popen):
            return process
        if process is not None:
            # It died while idle (killed for memory, say): nothing was being judged, so no
            # back-off; the next start is the one that counts if it fails too.
            log.info(
                "the model process exited while idle: %s", describe_exit(process.popen.returncode)
            )
            self._kill(process)
        wait = self._not_before - time.monotonic()
        if wait > 0:
            raise WorkerUnavailable(
                f"{self.last_crash}; the model process is restarted in {wait:.0f} s"
            )
        return self._spawn(mode or self._choice().mode)

    def _spawn(self, mode: runtime.Mode) -> _Process:
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        popen = subprocess.Popen(
            [sys.executable, "-m", "referee.checks.judge._worker_main"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            close_fds=True,
        )
        self.starts += 1
        process = _Process(popen, mode)
        threading.Thread(
            target=_drain,
            args=(popen, process.stderr_tail),
            daemon=True,
            name="referee-worker-stderr",
        ).start()
        self._process = process
        try:
            self._send(process, {"op": "open", "spec": self.spec, "mode": mode})
            ready = self._receive(process, None, LOAD_TIMEOUT_S, IDLE)
        except BaseException:
            self._kill(process)
            raise
        if ready.get("op") == "error":
            self._kill(process)
            self._process = None
            raise BackendError(ready.get("message") or "the model process could not load the model")
        process.info = {**ready.get("info", {}), "mode": mode, "pid": popen.pid}
        if ready.get("identity") and self._identity is None:
            self._identity = ready["identity"]
        return process

    def close(self) -> None:
        """Stop the worker (asked to quit, killed if it does not within a second). Does not
        wait for a call in flight: that call ends as cancelled, not as a crash."""
        process = self._process
        if process is None:
            return
        self._closing = True
        try:
            with contextlib.suppress(Exception):
                self._send(process, {"op": "quit"})
            wait_then_kill(process.popen, grace_s=1.0)
            with self._lock:
                if self._process is process:
                    self._process = None
                self._close_pipes(process)
        finally:
            self._closing = False

    @staticmethod
    def _close_pipes(process: _Process) -> None:
        for pipe in (process.popen.stdin, process.popen.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def _kill(self, process: _Process) -> None:
        kill_and_reap(process.popen)
        self._close_pipes(process)
        if self._process is process:
            self._process = None

    def _reap(self, process: _Process, message: str) -> WorkerCrashed:
        """Record a dead worker: back-off for the next start; the error to raise."""
        self._kill(process)
        self._crashes += 1
        self._not_before = time.monotonic() + min(
            BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (self._crashes - 1)
        )
        self.last_crash = message
        tail = "".join(process.stderr_tail).strip()
        # info, not warning: the caller says it once, in its own words (the CLI's one line)
        log.info("%s%s", message, f"\n{tail}" if tail else "")
        return WorkerCrashed(message)

    # ---------------------------------------------------------------- wire

    @staticmethod
    def _send(process: _Process, message: dict[str, Any]) -> None:
        body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        stdin = process.popen.stdin
        assert stdin is not None
        stdin.write(HEADER.pack(len(body)) + body)
        stdin.flush()

    def _receive(
        self,
        process: _Process,
        request_id: int | None,
        timeout_s: float,
        work: Work,
    ) -> dict[str, Any]:
        """The worker's answer to ``request_id``: heartbeats push the deadline back (a
        long batch that makes progress is no hang); ``work`` is asked to stop as the answer
        is waited for, and a stop is passed on."""
        stdout = process.popen.stdout
        assert stdout is not None
        fd = stdout.fileno()
        last_sign = [time.monotonic()]
        asked_to_stop = [False]

        def deadline() -> float:
            return last_sign[0] + timeout_s

        def alive() -> None:
            if not asked_to_stop[0] and work.cancelled():
                asked_to_stop[0] = True
                with contextlib.suppress(OSError):
                    self._send(process, {"op": "cancel", "id": request_id})

        while True:
            try:
                header = read_exact(fd, HEADER.size, deadline, alive)
                body = (
                    read_exact(fd, HEADER.unpack(header)[0], deadline, alive)
                    if len(header) == HEADER.size
                    else b""
                )
            except TimeoutError:
                raise self._reap(
                    process,
                    f"the model process did not answer in {timeout_s:.0f} s and was killed",
                ) from None
            if not body:
                if self._closing:
                    raise BatchCancelled
                try:
                    code = process.popen.wait(timeout=5.0)
                except subprocess.TimeoutExpired:
                    code = None
                raise self._reap(process, f"the model process crashed: {describe_exit(code)}")
            message = json.loads(body)
            if message.get("op") == "beat":
                last_sign[0] = time.monotonic()
                continue
            if request_id is not None and message.get("id") != request_id:
                continue  # the late answer to a request given up on
            return message

    def _call(
        self,
        message: dict[str, Any],
        work: Work = IDLE,
        timeout_s: float | None = None,
    ) -> dict[str, Any]:
        with self._lock:
            fell_back = False
            first_crash = ""
            while True:
                process = self._ensure()
                self._next_id += 1
                request_id = self._next_id
                with contextlib.suppress(OSError):  # it died; _receive reports how
                    self._send(process, {**message, "id": request_id})
                try:
                    answer = self._receive(process, request_id, timeout_s or self.timeout_s, work)
                except WorkerCrashed as crash:
                    if fell_back or process.mode != "fast" or not self._choice().may_fall_back:
                        raise
                    # auto chose fast, and it crashed: the CPU may take a repacked-weights
                    # path we do not know by name. Ask once more in safe mode; if that
                    # answers, this machine needs safe mode, and it is remembered.
                    fell_back = True
                    self._not_before = 0.0
                    log.info("%s; asking again in safe mode (use_extra_bufts = False)", crash)
                    self._spawn("safe")
                    first_crash = str(crash)
                    continue
                if answer.get("op") == "cancelled":
                    raise BatchCancelled
                if answer.get("op") == "error":
                    raise BackendError(answer.get("message") or "the model could not answer")
                self._crashes = 0
                if fell_back:
                    runtime.remember(self.cpu, "safe", f"fast mode: {first_crash}")
                return answer

    # ---------------------------------------------------------------- Backend

    def ask(self, request: ChatRequest) -> Generation:
        answer = self._call(
            {
                "op": "chat",
                "messages": list(request.messages),
                "schema": request.schema,
                "grammar": request.grammar,
                "max_tokens": request.max_tokens,
                "temperature": request.temperature,
                "seed": request.seed,
            }
        )
        return _generation(answer["generations"][0])

    def chat_batch(
        self,
        requests: Sequence[ChatRequest],
        *,
        work: Work = IDLE,
    ) -> list[Generation]:
        if work.cancelled():
            raise BatchCancelled
        answer = self._call({"op": "batch", "requests": list(requests)}, work)
        return [_generation(g) for g in answer["generations"]]

    def ping(self) -> dict[str, Any]:
        return self._call({"op": "ping"})


def _generation(data: dict[str, Any]) -> Generation:
    return Generation(
        text=str(data.get("text", "")),
        prompt_tokens=int(data.get("prompt_tokens", 0)),
        completion_tokens=int(data.get("completion_tokens", 0)),
    )


def _drain(popen: subprocess.Popen[bytes], tail: deque[str]) -> None:
    """Read the worker's stderr (llama.cpp's own messages) so its pipe never fills; keep
    the last lines for the log of a crash."""
    stream = popen.stderr
    if stream is None:
        return
    with contextlib.suppress(Exception):
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace")
            tail.append(line)
            log.debug("worker: %s", line.rstrip())


_LIVE: weakref.WeakSet[WorkerBackend] = weakref.WeakSet()


def close_all() -> None:
    """Stop every worker of this process (at exit; the server's shutdown)."""
    for backend in list(_LIVE):
        with contextlib.suppress(Exception):
            backend.close()


atexit.register(close_all)
