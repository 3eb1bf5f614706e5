"""The model worker: ``python -m referee.checks.judge._worker_main``.

Started by :class:`referee.checks.judge.worker.WorkerBackend`, never by hand. It reads
framed requests on standard input, loads the model on the first (``open``), answers each
on a private copy of standard output, and exits when standard input closes. Native code
that prints goes to standard error (file descriptor 1 is pointed there), so nothing but
answers reaches the parent's pipe.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import pickle
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, BinaryIO

from referee.checks.judge.worker import HEADER, MAX_FRAME, TEST_BACKEND_ENV
from referee.checks.process import name_process

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the parent dies (the pipe's EOF covers the rest)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Wire:
    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        with self.lock:
            self.out.write(HEADER.pack(len(body)) + body)
            self.out.flush()


def _read_frame(stream: BinaryIO) -> dict[str, Any] | None:
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        return None
    (size,) = HEADER.unpack(header)
    if size > MAX_FRAME:
        return None
    body = stream.read(size)
    if len(body) < size:
        return None
    return pickle.loads(body)


def _open_backend(spec: Any, mode: str) -> Any:
    """The model (or, in referee's own tests, the backend ``$REFEREE_WORKER_TEST_BACKEND``
    names)."""
    name = os.environ.get(TEST_BACKEND_ENV)
    if name:
        module, _, attribute = name.partition(":")
        return getattr(importlib.import_module(module), attribute)(spec, mode)
    from pathlib import Path

    from referee.checks.judge.backend import LlamaCppBackend

    return LlamaCppBackend(
        Path(spec.path),
        n_ctx=spec.n_ctx,
        n_threads=spec.threads,
        identity=spec.identity,
        extra_buffers=mode == "fast",
    )


def _private_answers() -> Any:
    """Answers go to a private descriptor; fd 1 becomes stderr for native prints."""
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def _open_and_say_ready(first: dict[str, Any], wire: Wire) -> Any:
    """The backend ``first`` (the "open" message) asks for, once the parent was told it is
    ready (or what went wrong: None)."""
    from referee.checks.judge.backend import BackendError

    started = time.perf_counter()
    try:
        backend = _open_backend(first["spec"], first["mode"])
    except BackendError as exc:
        wire.send({"op": "error", "message": str(exc)})
        return None
    wire.send(
        {
            "op": "ready",
            "identity": backend.identity,
            "info": {
                "load_s": round(time.perf_counter() - started, 3),
                "extra_buffers": getattr(backend, "extra_buffers", None),
            },
        }
    )
    return backend


def _start_reader(stdin: Any, requests: queue.Queue[dict[str, Any] | None], cancelled: set) -> None:
    """A thread that reads the parent's messages: cancellations are noted in ``cancelled``
    at once (the main thread is busy with the request they cancel), the rest queued."""

    def reader() -> None:
        while True:
            try:
                message = _read_frame(stdin)
            except Exception:
                message = None
            if message is None or message.get("op") == "quit":
                # The parent is gone or done: leave now, whatever the model is doing.
                os._exit(0)
            if message.get("op") == "cancel":
                cancelled.add(message.get("id"))
                continue
            requests.put(message)

    threading.Thread(target=reader, daemon=True, name="referee-worker-reader").start()


class _UnknownOp(Exception):
    pass


def _generate(backend: Any, message: dict[str, Any], stop: Callable[[], bool]) -> list[Any]:
    """The generations one request asks for; ``stop`` is polled between decoding steps."""
    from referee.checks.judge.backend import ChatRequest, chat_batch
    from referee.checks.progress import Work

    op = message.get("op")
    if op == "ping":
        return []
    if op == "chat":
        asked = {
            "schema": message.get("schema"),
            "grammar": message.get("grammar"),
            "max_tokens": message.get("max_tokens", 256),
            "temperature": message.get("temperature", 0.0),
            "seed": message.get("seed"),
        }
        if hasattr(backend, "chat_batch"):
            # Through the batched decoder, even alone: it polls between steps, which
            # is how the parent hears that a slow answer is alive, and how it cancels.
            single = ChatRequest(message["messages"], **asked)
            return backend.chat_batch([single], work=Work(is_cancelled=stop))
        return [backend.chat(message["messages"], **asked)]
    if op == "batch":
        batch: list[ChatRequest] = message["requests"]
        return chat_batch(backend, batch, work=Work(is_cancelled=stop))
    raise _UnknownOp(f"unknown op {op!r}")


def _serve(backend: Any, wire: Wire, message: dict[str, Any], cancelled: set) -> None:
    """Answer one request: its generations, or that it was cancelled, or the error."""
    from referee.checks.judge.backend import BackendError, BatchCancelled

    request_id = message.get("id")
    last_beat = time.monotonic()

    def stop() -> bool:
        nonlocal last_beat
        now = time.monotonic()
        if now - last_beat >= 1.0:
            last_beat = now
            wire.send({"op": "beat", "id": request_id})
        return request_id in cancelled

    try:
        generations = _generate(backend, message, stop)
    except _UnknownOp as exc:
        wire.send({"op": "error", "id": request_id, "message": str(exc)})
        return
    except BatchCancelled:
        wire.send({"op": "cancelled", "id": request_id})
        return
    except BackendError as exc:
        wire.send({"op": "error", "id": request_id, "message": str(exc)})
        return
    except Exception as exc:  # a bug here is an error answer, not a dead worker
        wire.send({"op": "error", "id": request_id, "message": f"{type(exc).__name__}: {exc}"})
        return
    finally:
        cancelled.discard(request_id)
    wire.send(
        {
            "op": "answer",
            "id": request_id,
            "generations": [
                {
                    "text": g.text,
                    "prompt_tokens": g.prompt_tokens,
                    "completion_tokens": g.completion_tokens,
                }
                for g in generations
            ],
        }
    )


def main() -> int:
    name_process("referee-model")  # the process busy at 100 % in top: say whose it is
    out = _private_answers()
    # Ctrl-C in a terminal reaches the whole process group: the parent decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    stdin = sys.stdin.buffer
    wire = Wire(out)
    first = _read_frame(stdin)
    if first is None or first.get("op") != "open":
        return 2
    backend = _open_and_say_ready(first, wire)
    if backend is None:
        return 1
    requests: queue.Queue[dict[str, Any] | None] = queue.Queue()
    cancelled: set[int] = set()
    _start_reader(stdin, requests, cancelled)
    while True:
        message = requests.get()
        if message is None:
            return 0
        _serve(backend, wire, message, cancelled)


if __name__ == "__main__":
    sys.exit(main())
