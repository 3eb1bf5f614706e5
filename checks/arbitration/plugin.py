"""A pytest plugin that records what a failing assertion compared.

``referee arbitrate`` runs the user's tests in the project's interpreter with a copy of
this file loaded by ``-p`` (:mod:`.observe`), and reads what this plugin wrote to the
JSON-lines file named by ``$REFEREE_ARBITRATION_OUT``: one record per test that ran, with

- every failing comparison (``pytest_assertrepr_compare`` for ``assert a == b``, ``in``,
  ``is``..., and the ``unittest`` assertions, wrapped: equality, assertTrue/False,
  assertIs(Not)(None), assertIn/NotIn) — operator, both values as ``repr`` and the line
  of the test file it happened on;
- where the test failed (file and line), with what exception, whether the test's own line
  raised it, and the ``repr`` of that frame's locals (capped: a loop's case, a local);
- its parametrized arguments and their indices in the parametrize lists;
- where the names in ``$REFEREE_ARBITRATION_NAMES`` (a JSON list of dotted names the
  failing assertion calls) resolve to in the test's module: module, qualified name, file;
- with ``$REFEREE_ARBITRATION_WATCH`` (``{"file": ..., "line": N, "end": M}``), the
  ``repr`` of the test frame's locals each time a test of that file comes to the
  statement on lines N-M (capped), passing or not: what the other cases of a
  parametrized test gave the assertion there.

It runs inside the user's test process, in the project's interpreter, and uses only the
standard library and pytest: referee itself need not be importable there. What it needs
is captured when it loads, and no hook lets an exception out: a record it cannot write is
said in the terminal summary (``referee-recorder: ...``), never a broken run.
"""

from __future__ import annotations

import builtins
import contextlib
import faulthandler
import inspect
import io
import json
import os
import sys
import unittest
from typing import Any

import pytest

# beside this file wherever it runs: observe.py ships the two as one package
from .assertion_methods import METHODS

# The names of referee.checks.arbitration, written out: this file runs in the project's
# interpreter, where referee is not importable (observe.py loads a copy of it by path).
OUT_ENV = "REFEREE_ARBITRATION_OUT"
NAMES_ENV = "REFEREE_ARBITRATION_NAMES"
HANG_ENV = "REFEREE_ARBITRATION_HANG_S"
HANG_OUT_ENV = "REFEREE_ARBITRATION_HANG_OUT"
WATCH_ENV = "REFEREE_ARBITRATION_WATCH"

# Everything the hooks need is captured here, when pytest loads the plugin: a project's
# fixtures may replace ``os.environ`` (monkeypatch.setattr("os.environ", {...})), change
# the directory, or patch ``builtins.open``, ``json.dumps``, ``os.path``, ``print`` or
# ``time.time`` while its test runs — and the report hook runs before they are undone.
_ENV = {
    name: os.environ.get(name) for name in (OUT_ENV, NAMES_ENV, HANG_ENV, HANG_OUT_ENV, WATCH_ENV)
}
_OPEN = io.open
_DUMPS = json.dumps
_LOADS = json.loads
_ABSPATH = os.path.abspath
_JOIN = os.path.join
_NORMPATH = os.path.normpath
_ISABS = os.path.isabs
_CWD = os.getcwd()
_SEP = os.sep
_GETFRAME = sys._getframe
_SETTRACE = sys.settrace
_GETTRACE = sys.gettrace
_REPR = builtins.repr
_ISINSTANCE = builtins.isinstance

_REPR_LIMIT = 20_000
_LOCALS_LIMIT = 40  # names recorded from the failing frame
_LOCAL_REPR_LIMIT = 4_000

_WATCH_LIMIT = 20  # times one test's locals are recorded at the watched line

_comparisons: list[dict[str, Any]] = []
_watched: list[dict[str, str]] = []  # the locals at the watched line, this test's
_notes: list[str] = []  # what the recorder could not do, said in the terminal summary


def _abs(path: str) -> str:
    """An absolute path that does not depend on the directory a fixture moved to."""
    try:
        return _NORMPATH(path if _ISABS(path) else _JOIN(_CWD, path))
    except Exception:
        return str(path)


_skip_files = {_abs(__file__)}


def _note(where: str, exc: BaseException | None) -> None:
    try:
        if exc is None:
            _notes.append(where)
            return
        _notes.append(f"{where}: {type(exc).__name__}: {_text(exc)[:300]}")
    except Exception:
        _notes.append(f"{where}: failed")


def _write(record: dict[str, Any]) -> None:
    out = _ENV[OUT_ENV]
    if not out:
        return
    with _OPEN(out, "a", encoding="utf-8") as handle:
        handle.write(_DUMPS(record) + "\n")


def _repr(value: Any, limit: int = _REPR_LIMIT) -> str:
    try:
        text = _REPR(value)
        if not _ISINSTANCE(text, str):
            text = str(text)
    except Exception as exc:  # a broken __repr__ is the user's, not ours
        text = f"<unrepresentable {type(value).__name__}: {exc}>"
    return text if len(text) <= limit else text[:limit] + "…"


def _text(value: BaseException) -> str:
    try:
        return str(value)
    except Exception:
        return type(value).__name__


def _caller() -> tuple[str, int]:
    """The innermost frame outside pytest, pluggy, unittest and this plugin."""
    frame = _GETFRAME(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (
            _abs(filename) in _skip_files
            or f"{_SEP}_pytest{_SEP}" in filename
            or f"{_SEP}pluggy{_SEP}" in filename
            or f"{_SEP}unittest{_SEP}" in filename
        ):
            return _abs(filename), frame.f_lineno
        frame = frame.f_back
    return "", 0


def _record(op: str, left: Any, right: Any) -> None:
    try:
        filename, line = _caller()
        # ``x == pytest.approx(v)`` or ``pytest.approx(v) == x``: the value is v, either side
        if type(right).__name__.startswith("Approx") and hasattr(right, "expected"):
            op, right = "approx", right.expected
        elif type(left).__name__.startswith("Approx") and hasattr(left, "expected"):
            op, left = "approx", left.expected
        _comparisons.append(
            {"op": op, "left": _repr(left), "right": _repr(right), "file": filename, "line": line}
        )
    except Exception as exc:  # never the reason a test run breaks
        _note("recording a comparison", exc)


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: Any, right: Any) -> None:
    _record(op, left, right)
    return None  # an observer: pytest's own explanation is still shown


_depth = [0]  # wrapped assertions running, one inside another


def _wrap(name: str, op: str, arity: int) -> None:
    original = getattr(unittest.TestCase, name, None)
    if original is None or getattr(original, "_referee_wrapped", False):
        return

    def wrapped(self: unittest.TestCase, *args: Any, **kwargs: Any):
        _depth[0] += 1
        try:
            return original(self, *args, **kwargs)
        except self.failureException:
            # the outermost assertion only: assertEqual hands two strings to
            # assertMultiLineEqual, and one failure is one comparison
            if _depth[0] == 1 and len(args) >= arity:
                _record(op, args[0], args[1] if arity == 2 else None)
            raise
        finally:
            _depth[0] -= 1

    wrapped._referee_wrapped = True  # type: ignore[attr-defined]
    wrapped.__name__ = original.__name__
    wrapped.__qualname__ = getattr(original, "__qualname__", original.__name__)
    setattr(unittest.TestCase, name, wrapped)


def _wrap_all() -> None:
    # at load, before any test module binds ``unittest.TestCase().assertEqual`` or imports
    # ``nose.tools.assert_equal`` (a bound method of a TestCase instance)
    for name, (op, arity) in METHODS.items():
        try:
            _wrap(name, op, arity)
        except Exception as exc:
            _note(f"wrapping {name}", exc)


_wrap_all()


def pytest_configure(config: pytest.Config) -> None:
    _wrap_all()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _comparisons.clear()
    _watched.clear()


def _watch() -> tuple[str, int, int] | None:
    """(the test module's file, the statement's first line, its last)
    ``$REFEREE_ARBITRATION_WATCH`` names."""
    try:
        data = _LOADS(_ENV[WATCH_ENV] or "null")
        if _ISINSTANCE(data, dict) and data.get("file") and int(data.get("line", 0)) > 0:
            first = int(data["line"])
            return _abs(str(data["file"])), first, max(first, int(data.get("end") or first))
    except Exception as exc:
        _note("reading the watched line", exc)
    return None


_WATCH = _watch()


def _watcher(filename: str, first: int, last: int):
    """A trace function that records the locals of frames of ``filename`` each time one
    comes to the statement on lines ``first``-``last`` (its first line, from outside it:
    a statement over lines is reached once however often its evaluation moves between
    them); frames of other files are not traced at all."""
    ours: dict[str, bool] = {}

    def frame_tracer():
        before = [0]  # the frame's last line event

        def local(frame: Any, event: str, arg: Any):
            if event == "line":
                now = frame.f_lineno
                entered = now == first and not (first <= before[0] <= last)
                before[0] = now
                if entered and len(_watched) < _WATCH_LIMIT:
                    try:
                        _watched.append(_locals(frame.f_locals))
                    except Exception as exc:
                        _note("reading the locals at the watched line", exc)
            return local

        return local

    def calls(frame: Any, event: str, arg: Any):
        name = frame.f_code.co_filename
        if name not in ours:
            ours[name] = _abs(name) == filename
        return frame_tracer() if ours[name] else None

    return calls


@contextlib.contextmanager
def _watching(item: pytest.Item):
    """Within the block, the watched line's locals are recorded — unless another tracer
    (coverage, a debugger) is installed: it is left alone, and nothing is recorded."""
    tracer = None
    try:
        if _WATCH is not None and _abs(str(getattr(item, "path", "") or "")) == _WATCH[0]:
            if _GETTRACE() is None:
                tracer = _watcher(*_WATCH)
                _SETTRACE(tracer)
            else:
                _note(f"{item.nodeid}: another tracer is installed; the line was not watched", None)
    except Exception as exc:
        _note(f"{item.nodeid}: watching the line", exc)
    try:
        yield
    finally:
        if tracer is not None:
            with contextlib.suppress(Exception):
                if _GETTRACE() is tracer:
                    _SETTRACE(None)


def _resolve(item: pytest.Item, names: list[str]) -> dict[str, Any]:
    """Where each dotted name leads from the test's module globals."""
    function = getattr(item, "obj", None)
    with contextlib.suppress(Exception):
        function = inspect.unwrap(function)  # a @mock.patch'd test: mock's wrapper
    namespace = getattr(function, "__globals__", None) or vars(getattr(item, "module", object()))
    resolved: dict[str, Any] = {}
    for dotted in names:
        head, *rest = dotted.split(".")
        if head not in namespace:
            continue
        target = namespace[head]
        kind = None
        try:
            for part in rest:
                owner, target = target, getattr(target, part)
                if inspect.isclass(owner):
                    raw = inspect.getattr_static(owner, part, None)
                    kind = (
                        "staticmethod"
                        if isinstance(raw, staticmethod)
                        else "classmethod"
                        if isinstance(raw, classmethod)
                        else "method"
                        if inspect.isfunction(raw)
                        else None
                    )
            target = inspect.unwrap(target)
            if isinstance(target, (staticmethod, classmethod)):
                target = target.__func__
            if inspect.ismethod(target):  # Cls.a_classmethod: bound to the class
                target = target.__func__
            source_file = inspect.getsourcefile(target)
            lines = inspect.getsourcelines(target)[1]
        except Exception:
            continue
        resolved[dotted] = {
            "module": getattr(target, "__module__", None),
            "qualname": getattr(target, "__qualname__", None),
            "file": _abs(source_file) if source_file else None,
            "line": lines,
            "kind": kind or ("function" if inspect.isfunction(target) else type(target).__name__),
        }
    return resolved


def _crash(item: pytest.Item, call: pytest.CallInfo[None]) -> dict[str, Any] | None:
    excinfo = call.excinfo
    if excinfo is None:
        return None
    module_file = _abs(str(getattr(item, "path", "") or ""))
    line = None
    frame_locals: dict[str, str] = {}
    raised_here = False  # the exception was raised by the test's own line, not a callee
    raised_in = None  # the file of the innermost frame: where it was raised
    for entry in excinfo.traceback:
        raised_in = _abs(str(entry.path))
        raised_here = raised_in == module_file
        if raised_here:
            line = entry.lineno + 1  # the innermost frame in the test module
            try:
                frame_locals = _locals(entry.frame.f_locals)
            except Exception as exc:
                _note("reading the failing frame's locals", exc)
    return {
        "type": excinfo.type.__name__,
        "message": _text(excinfo.value)[:2000],
        "assertion": isinstance(excinfo.value, AssertionError),
        "file": module_file,
        "line": line,
        "raised_here": raised_here,
        "raised_in": raised_in,
        "locals": frame_locals,
    }


def _locals(values: dict[str, Any]) -> dict[str, str]:
    """The ``repr`` of the failing test frame's locals (a loop's case, a local variable),
    capped; arbitration uses those that read back as literals."""
    found: dict[str, str] = {}
    for name, value in list(values.items())[:_LOCALS_LIMIT]:
        if name.startswith("@") or name == "self":
            continue
        if inspect.ismodule(value) or inspect.isroutine(value) or inspect.isclass(value):
            continue
        found[name] = _repr(value, _LOCAL_REPR_LIMIT)
    return found


def _names() -> list[str]:
    try:
        names = _LOADS(_ENV[NAMES_ENV] or "[]")
    except ValueError:
        return []
    return names if isinstance(names, list) else []


def _params(item: pytest.Item) -> tuple[dict[str, str], dict[str, int]]:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return {}, {}
    return {k: _repr(v) for k, v in callspec.params.items()}, dict(callspec.indices)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """With ``$REFEREE_ARBITRATION_HANG_S`` set: record that the test's call started (with
    what its names resolve to: a call that never returns reports nothing else), and have
    faulthandler dump every thread's stack to ``$REFEREE_ARBITRATION_HANG_OUT`` and end the
    process if the call is still running after that many seconds."""
    handle = None
    try:
        out, hang_out = _ENV[OUT_ENV], _ENV[HANG_OUT_ENV]
        try:
            seconds = float(_ENV[HANG_ENV] or 0)
        except ValueError:
            seconds = 0.0
        if out and hang_out and seconds > 0:
            params, indices = _params(item)
            _write(
                {
                    "nodeid": item.nodeid,
                    "when": "start",
                    "outcome": "",
                    "params": params,
                    "indices": indices,
                    "names": _resolve(item, _names()),
                }
            )
            handle = _OPEN(hang_out, "w", encoding="utf-8")
            faulthandler.dump_traceback_later(seconds, exit=True, file=handle)
    except Exception as exc:
        _note(f"{item.nodeid}: recording the call's start", exc)
    try:
        with _watching(item):
            yield
    finally:
        if handle is not None:
            try:
                faulthandler.cancel_dump_traceback_later()
                handle.close()
            except Exception as exc:
                _note(f"{item.nodeid}: closing the hang watch", exc)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    outcome = yield
    try:
        report = outcome.get_result()
        if not _ENV[OUT_ENV] or (call.when != "call" and not report.failed):
            return
        params, indices = _params(item)
        _write(
            {
                "nodeid": item.nodeid,
                "when": call.when,
                "outcome": report.outcome,
                "comparisons": list(_comparisons),
                "crash": _crash(item, call) if report.failed else None,
                "params": params,
                "indices": indices,
                "names": _resolve(item, _names()) if report.failed else {},
                "watched": list(_watched) if call.when == "call" else [],
            }
        )
    except Exception as exc:  # a record lost is said, never a broken run
        _note(f"{getattr(item, 'nodeid', '?')}: recording the {call.when} report", exc)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """What the recorder could not do, where ``referee arbitrate`` reads it back."""
    for note in _notes:
        with contextlib.suppress(Exception):
            terminalreporter.write_line(f"referee-recorder: {note}")
