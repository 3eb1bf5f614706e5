"""Opening the judge's model: :func:`open_backend` turns a configuration into a
:class:`~referee.checks.judge.backend.Backend` — in this process, behind the worker
process referee owns, or a server's — opened once per process and shared, and closed at
exit. Apart from the backends so that the worker (which is one) and the backends it runs
do not import each other.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import threading
from typing import Any

from referee.checks.judge import models as model_files
from referee.checks.judge.backend import Backend, BackendError, LlamaCppBackend, OpenAIBackend

_OPEN: dict[tuple[Any, ...], Backend] = {}
_OPEN_LOCK = threading.Lock()


def close_all() -> None:
    """Close every backend this process opened (a model process referee owns stops); the
    next :func:`open_backend` opens afresh. Runs at exit; a caller that is done with the
    model before then (a test, a command that goes on without it) may call it sooner."""
    with _OPEN_LOCK:
        opened = list(_OPEN.values())
        _OPEN.clear()
    for backend in opened:
        close = getattr(backend, "close", None)
        if close is not None:
            with contextlib.suppress(Exception):  # exiting anyway: never mask the real exit
                close()


atexit.register(close_all)


def open_backend(
    backend: str = "llama-cpp",
    *,
    model: str = model_files.DEFAULT_MODEL,
    url: str | None = None,
    api_key_env: str | None = None,
    n_ctx: int = 4096,
    threads: int | None = None,
    runtime: str = "auto",
    timeout: float = 120.0,
    in_process: bool = False,
) -> Backend:
    """The backend a configuration names, opened once per process and shared.

    ``llama-cpp`` runs the model in a worker process referee owns
    (:class:`~referee.checks.judge.worker.WorkerBackend`): a crash of native code there is
    an error here, never this process's death. ``in_process=True`` loads it in this
    process instead — only for the worker itself and for measuring the hop.

    Raises :class:`BackendError` with one clear sentence when it cannot be used.
    """
    key = (backend, model, url, api_key_env, n_ctx, threads, runtime, in_process)
    with _OPEN_LOCK:
        if key in _OPEN:
            return _OPEN[key]
        if backend == "openai":
            if not url:
                raise BackendError('judge.backend is "openai" but judge.url is not set')
            api_key = os.environ.get(api_key_env) if api_key_env else None
            opened: Backend = OpenAIBackend(url, model=model, api_key=api_key, timeout_s=timeout)
        elif backend == "llama-cpp":
            try:
                path = model_files.resolve(model)
            except model_files.ModelError as exc:
                raise BackendError(str(exc)) from exc
            if in_process:
                from referee.checks.judge import runtime as runtimes

                cpu = runtimes.this_cpu()
                choice = runtimes.choose(runtime, cpu, runtimes.remembered(cpu))  # type: ignore[arg-type]
                opened = LlamaCppBackend(
                    path, n_ctx=n_ctx, n_threads=threads, extra_buffers=choice.mode == "fast"
                )
            else:
                from referee.checks.judge.worker import WorkerBackend, WorkerSpec

                # Found, not imported: its native library stays out of this process.
                if importlib.util.find_spec("llama_cpp") is None:
                    raise BackendError(
                        "the judge needs llama-cpp-python: pip install 'referee[judge]' "
                        '(or set judge.backend = "openai" and judge.url to a model server)'
                    )
                opened = WorkerBackend(
                    WorkerSpec(str(path), n_ctx=n_ctx, threads=threads, setting=runtime),  # type: ignore[arg-type]
                    timeout_s=timeout,
                )
        else:
            raise BackendError(f"unknown judge backend {backend!r}: use llama-cpp or openai")
        _OPEN[key] = opened
        return opened


def backend_for(config: Any) -> Backend:
    """:func:`open_backend` for a :class:`~referee.checks.configuration.JudgeConfig`."""
    return open_backend(
        config.backend,
        model=config.model,
        url=config.url,
        api_key_env=config.api_key_env,
        threads=config.threads,
        runtime=config.runtime,
        timeout=config.timeout,
    )
