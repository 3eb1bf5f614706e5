"""Test-only backends for the model worker (``REFEREE_WORKER_TEST_BACKEND``).

They run inside the real worker process, in place of llama.cpp, so that what happens
around a model — a real crash by signal, a hang, a restart — is tested for real without a
model download. ``REFEREE_TEST_FAULT`` says what goes wrong at the first decode:

* ``segv``: the process dies by SIGSEGV (a null pointer read through ctypes);
* ``abort``: by SIGABRT;
* ``segv-once:PATH``: SIGSEGV only when PATH does not exist yet (it is created first), so
  the worker started after the crash answers;
* ``segv-fast``: SIGSEGV only when loaded in ``fast`` mode (what AMX CPUs do);
* ``hang``: never answers;
* empty: no fault.

Answers: every judge question gets PASS with the item's first quotable line as evidence;
any other question gets ``def f(): pass`` in a code block.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import time
from typing import Any

from referee.checks.judge.backend import ChatRequest, Generation


def _fault(mode: str) -> None:
    fault = os.environ.get("REFEREE_TEST_FAULT", "")
    if fault == "segv" or (fault == "segv-fast" and mode == "fast"):
        ctypes.string_at(0)  # a real SIGSEGV
    if fault.startswith("segv-once:"):
        marker = fault.partition(":")[2]
        if not os.path.exists(marker):
            with open(marker, "w") as handle:
                handle.write("crashed\n")
            ctypes.string_at(0)
    if fault == "abort":
        os.kill(os.getpid(), signal.SIGABRT)
    if fault == "hang":
        while True:
            time.sleep(60)


class Scripted:
    def __init__(self, spec: Any, mode: str) -> None:
        self.mode = mode
        self.identity = f"scripted-{mode}"
        self.decoded = 0

    def _answer(self, forcing: Any) -> str:
        lines = getattr(forcing, "lines", ())
        if lines or forcing is not None:
            quote = json.loads(f'"{lines[0]}"') if lines else "x"
            return json.dumps(
                {"reason": "It does what its name says.", "evidence": [quote], "verdict": "PASS"}
            )
        return "```python\ndef f():\n    pass\n```"

    def chat_batch(self, requests: list[ChatRequest], *, work: Any = None) -> list[Generation]:
        _fault(self.mode)
        self.decoded += 1
        return [Generation(text=self._answer(r.forcing), completion_tokens=8) for r in requests]

    def chat(self, messages: Any, **kwargs: Any) -> Generation:
        _fault(self.mode)
        return Generation(text=self._answer(None), completion_tokens=8)
