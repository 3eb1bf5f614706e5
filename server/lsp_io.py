"""How ``referee serve`` talks to its client besides LSP's replies: the log records it
sends to the client's log, and the private copies of stdin and stdout the LSP stream
runs on."""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer


class ClientLogHandler(logging.Handler):
    """Sends log records to the client's log (window/logMessage)."""

    _TYPES: ClassVar[dict[int, types.MessageType]] = {
        logging.ERROR: types.MessageType.Error,
        logging.WARNING: types.MessageType.Warning,
        logging.INFO: types.MessageType.Info,
    }

    def __init__(self, ls: LanguageServer, level: int) -> None:
        super().__init__(level)
        self.ls = ls
        self._sending = False

    def emit(self, record: logging.LogRecord) -> None:
        if self._sending:
            return  # a failure to send that logs would try to send again, forever
        kind = next(
            (t for lvl, t in sorted(self._TYPES.items(), reverse=True) if record.levelno >= lvl),
            types.MessageType.Log,
        )
        self._sending = True
        try:
            self.ls.window_log_message(
                types.LogMessageParams(type=kind, message=self.format(record))
            )
        except Exception:  # never let logging take the server down
            self.handleError(record)
        finally:
            self._sending = False


def private_stdio() -> tuple[Any, Any]:
    """The LSP stream on private copies of stdin and stdout; fd 0 then reads /dev/null
    and fd 1 writes to stderr. A child process (git, pytest) can no longer read the
    client's messages, and a library that prints, or points fd 1 at /dev/null while it
    loads (llama-cpp-python does, around a model load), can no longer corrupt or swallow
    the server's replies (tests/test_lsp_fuzz.py)."""
    import os
    import sys

    try:
        stdin = os.fdopen(os.dup(0), "rb")
        stdout = os.fdopen(os.dup(1), "wb")
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)
    except OSError:  # no such descriptors (an embedding host): the standard streams
        return sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    return stdin, stdout
