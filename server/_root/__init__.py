"""referee: keeps code honest when the same author writes a function and its tests.

The engine lives in :mod:`referee.checks`; the command line and the language server live in
:mod:`referee.server`.
"""

import ast as _ast
import threading as _threading

__version__ = "0.1.0"


def _serialized_ast_parse() -> None:
    """Let one thread at a time build an AST. CPython keeps the AST constructor's recursion
    depth in per-interpreter state that every thread shares, so two threads parsing at
    once (a garbage collection switching threads mid-parse is enough) can fail with
    ``SystemError: AST constructor recursion depth mismatch`` (python/cpython#106905; seen
    here on 3.11 with the oracles' thread pool). referee parses in several threads — the
    oracles, the differential and mutation checks, the language server's features — so
    ``ast.parse`` takes one lock, and ``ast.literal_eval`` of a string, which parses
    through the module's ``parse``, takes it too. Installed once; an ``RLock``, as a
    finalizer that runs mid-parse may parse again on the same thread."""
    if getattr(_ast.parse, "_referee_serialized", False):
        return
    unlocked = _ast.parse
    lock = _threading.RLock()

    def parse(*args, **kwargs):  # type: ignore[no-untyped-def]
        with lock:
            return unlocked(*args, **kwargs)

    parse.__doc__ = unlocked.__doc__
    parse.__wrapped__ = unlocked  # type: ignore[attr-defined]
    parse._referee_serialized = True  # type: ignore[attr-defined]
    _ast.parse = parse


_serialized_ast_parse()
