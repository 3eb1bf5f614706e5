"""A pytest plugin that records what a failing assertion compared.

``referee arbitrate`` runs the user's tests in the project's interpreter with a copy of
this file loaded by ``-p`` (:mod:`.observe`), and reads what this plugin wrote to the
JSON-lines file named by ``$REFEREE_ARBITRATION_OUT``: one record per test that ran, with

- every failing comparison (``pytest_assertrepr_compare`` for ``assert a == b``, and the
  ``unittest`` equality assertions, wrapped) — operator, both values as ``repr`` and the
  line of the test file it happened on;
- where the test failed (file and line) and with what exception;
- its parametrized arguments and their indices in the parametrize lists;
- where the names in ``$REFEREE_ARBITRATION_NAMES`` (a JSON list of dotted names the
  failing assertion calls) resolve to in the test's module: module, qualified name, file.

It runs inside the user's test process and uses only the standard library and pytest:
referee itself need not be importable there.
"""

from __future__ import annotations

import faulthandler
import inspect
import json
import os
import sys
import unittest
from typing import Any

import pytest

# The names of referee.checks.arbitration, written out: this file runs in the project's
# interpreter, where referee is not importable (observe.py loads a copy of it by path).
OUT_ENV = "REFEREE_ARBITRATION_OUT"
NAMES_ENV = "REFEREE_ARBITRATION_NAMES"
HANG_ENV = "REFEREE_ARBITRATION_HANG_S"
HANG_OUT_ENV = "REFEREE_ARBITRATION_HANG_OUT"

_REPR_LIMIT = 20_000

_comparisons: list[dict[str, Any]] = []
_skip_files = {os.path.abspath(__file__)}


def _repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ is the user's, not ours
        text = f"<unrepresentable {type(value).__name__}: {exc}>"
    return text if len(text) <= _REPR_LIMIT else text[:_REPR_LIMIT] + "…"


def _text(value: BaseException) -> str:
    try:
        return str(value)
    except Exception:
        return type(value).__name__


def _caller() -> tuple[str, int]:
    """The innermost frame outside pytest, pluggy, unittest and this plugin."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (
            os.path.abspath(filename) in _skip_files
            or f"{os.sep}_pytest{os.sep}" in filename
            or f"{os.sep}pluggy{os.sep}" in filename
            or f"{os.sep}unittest{os.sep}" in filename
        ):
            return os.path.abspath(filename), frame.f_lineno
        frame = frame.f_back
    return "", 0


def _record(op: str, left: Any, right: Any) -> None:
    filename, line = _caller()
    # ``x == pytest.approx(v)`` or ``pytest.approx(v) == x``: the value is v, either side
    if type(right).__name__.startswith("Approx") and hasattr(right, "expected"):
        op, right = "approx", right.expected
    elif type(left).__name__.startswith("Approx") and hasattr(left, "expected"):
        op, left = "approx", left.expected
    _comparisons.append(
        {"op": op, "left": _repr(left), "right": _repr(right), "file": filename, "line": line}
    )


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: Any, right: Any) -> None:
    _record(op, left, right)
    return None  # an observer: pytest's own explanation is still shown


def _wrap(name: str, op: str) -> None:
    original = getattr(unittest.TestCase, name, None)
    if original is None or getattr(original, "_referee_wrapped", False):
        return

    def wrapped(self: unittest.TestCase, first: Any, second: Any, *args: Any, **kwargs: Any):
        try:
            return original(self, first, second, *args, **kwargs)
        except self.failureException:
            _record(op, first, second)
            raise

    wrapped._referee_wrapped = True  # type: ignore[attr-defined]
    wrapped.__name__ = original.__name__
    setattr(unittest.TestCase, name, wrapped)


def pytest_configure(config: pytest.Config) -> None:
    for name in ("assertEqual", "assertListEqual", "assertTupleEqual", "assertDictEqual"):
        _wrap(name, "==")
    _wrap("assertAlmostEqual", "approx")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _comparisons.clear()


def _resolve(item: pytest.Item, names: list[str]) -> dict[str, Any]:
    """Where each dotted name leads from the test's module globals."""
    function = getattr(item, "obj", None)
    namespace = getattr(function, "__globals__", None) or vars(getattr(item, "module", object()))
    resolved: dict[str, Any] = {}
    for dotted in names:
        head, *rest = dotted.split(".")
        if head not in namespace:
            continue
        target = namespace[head]
        try:
            for part in rest:
                target = getattr(target, part)
            target = inspect.unwrap(target)
            source_file = inspect.getsourcefile(target)
            lines = inspect.getsourcelines(target)[1]
        except Exception:
            continue
        resolved[dotted] = {
            "module": getattr(target, "__module__", None),
            "qualname": getattr(target, "__qualname__", None),
            "file": os.path.abspath(source_file) if source_file else None,
            "line": lines,
            "kind": "function" if inspect.isfunction(target) else type(target).__name__,
        }
    return resolved


def _crash(item: pytest.Item, call: pytest.CallInfo[None]) -> dict[str, Any] | None:
    excinfo = call.excinfo
    if excinfo is None:
        return None
    module_file = os.path.abspath(str(getattr(item, "path", "") or ""))
    line = None
    for entry in excinfo.traceback:
        if os.path.abspath(str(entry.path)) == module_file:
            line = entry.lineno + 1  # the innermost frame in the test module
    return {
        "type": excinfo.type.__name__,
        "message": _text(excinfo.value)[:2000],
        "assertion": isinstance(excinfo.value, AssertionError),
        "file": module_file,
        "line": line,
    }


def _names() -> list[str]:
    try:
        names = json.loads(os.environ.get(NAMES_ENV) or "[]")
    except ValueError:
        return []
    return names if isinstance(names, list) else []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """With ``$REFEREE_ARBITRATION_HANG_S`` set: record that the test's call started (with
    what its names resolve to: a call that never returns reports nothing else), and have
    faulthandler dump every thread's stack to ``$REFEREE_ARBITRATION_HANG_OUT`` and end the
    process if the call is still running after that many seconds."""
    out, hang_out = os.environ.get(OUT_ENV), os.environ.get(HANG_OUT_ENV)
    try:
        seconds = float(os.environ.get(HANG_ENV) or 0)
    except ValueError:
        seconds = 0.0
    handle = None
    if out and hang_out and seconds > 0:
        callspec = getattr(item, "callspec", None)
        record = {
            "nodeid": item.nodeid,
            "when": "start",
            "outcome": "",
            "params": {k: _repr(v) for k, v in callspec.params.items()} if callspec else {},
            "indices": dict(callspec.indices) if callspec else {},
            "names": _resolve(item, _names()),
        }
        with open(out, "a", encoding="utf-8") as records:
            records.write(json.dumps(record) + "\n")
        handle = open(hang_out, "w", encoding="utf-8")  # noqa: SIM115 - held while it runs
        faulthandler.dump_traceback_later(seconds, exit=True, file=handle)
    try:
        yield
    finally:
        if handle is not None:
            faulthandler.cancel_dump_traceback_later()
            handle.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    report = outcome.get_result()
    out = os.environ.get(OUT_ENV)
    if not out or (call.when != "call" and not report.failed):
        return
    names = _names()
    callspec = getattr(item, "callspec", None)
    record = {
        "nodeid": item.nodeid,
        "when": call.when,
        "outcome": report.outcome,
        "comparisons": list(_comparisons),
        "crash": _crash(item, call) if report.failed else None,
        "params": {k: _repr(v) for k, v in callspec.params.items()} if callspec else {},
        "indices": dict(callspec.indices) if callspec else {},
        "names": _resolve(item, names) if report.failed else {},
    }
    with open(out, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
