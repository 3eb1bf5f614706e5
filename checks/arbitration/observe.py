"""Running the user's tests with the recording plugin and reading what it saw.

The user's tests are the user's own code, trusted as ``pytest`` itself would run them, but
never without a time limit: the process group is killed when it runs over.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from referee.checks.arbitration import HANG_ENV, HANG_OUT_ENV, NAMES_ENV, OUT_ENV, WATCH_ENV
from referee.checks.config import pytest_layout
from referee.checks.guard.pytestconfig import alone_args
from referee.checks.interpreter import Interpreter
from referee.checks.process import run_in_own_group

# The plugin runs in the project's interpreter, where referee may not be importable: a copy
# of its file, and of the table it imports, goes into the run's scratch directory as one
# package, and that directory alone is put on PYTHONPATH.
PLUGIN = "referee_arbitration_plugin"
PLUGIN_FILE = Path(__file__).resolve().parent / "plugin.py"
METHODS_FILE = PLUGIN_FILE.with_name("assertion_methods.py")  # the plugin imports it
_FRAME = re.compile(r'^\s*File "(.*)", line (\d+)', re.MULTILINE)
_SCRUBBED = ("PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST", "PYTEST_XDIST_WORKER", WATCH_ENV)
# pytest's short summary (``-rfE``): ``FAILED tests/t.py::test_x[1] - AssertionError: ...``
_SUMMARY = re.compile(r"^(FAILED|ERROR) (.+)$", re.MULTILINE)
_NOTE = re.compile(r"^referee-recorder: (.+)$", re.MULTILINE)
_NON_PRINTABLE = {i: f"\\x{i:02x}" for i in (*range(32), 127)}


def node_id(test_id: str) -> str:
    """``test_id`` as pytest spells it: the path normalized (``./tests/../tests/t.py`` is
    ``tests/t.py``) and the parameter id escaped as pytest escapes it (``[café]`` is
    ``[caf\\xe9]``)."""
    path, sep, rest = test_id.partition("::")
    if sep:
        path = posixpath.normpath(path.replace(os.sep, "/"))
        while path.startswith("./"):
            path = path[2:]
    if rest.endswith("]") and "[" in rest:
        name, _, param = rest[:-1].partition("[")
        if not param.isascii() or not param.isprintable():
            param = param.encode("unicode_escape").decode("ascii").translate(_NON_PRINTABLE)
        rest = f"{name}[{param}]"
    return f"{path}{sep}{rest}"


def summary(output: str) -> tuple[list[str], list[str]]:
    """From pytest's output: the lines of its short summary that report a failure or an
    error (``<nodeid>`` or ``<nodeid> - <message>``), and the recorder's notes."""
    return (
        [m.group(2).rstrip() for m in _SUMMARY.finditer(output)],
        [m.group(1).rstrip() for m in _NOTE.finditer(output)],
    )


def same_test(reported: str, test_id: str) -> bool:
    """Whether pytest's node id ``reported`` is the test ``test_id`` names: the same id
    once both are spelled as pytest spells them, or a case of it when ``test_id`` names
    no case."""
    a, b = node_id(reported), node_id(test_id)
    return a == b or (not b.endswith("]") and a.startswith(b + "["))


@dataclass
class TestRecord:
    """What the plugin recorded about one test."""

    __test__ = False  # not a pytest test class

    nodeid: str
    when: str
    outcome: str
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    crash: dict[str, Any] | None = None
    params: dict[str, str] = field(default_factory=dict)
    indices: dict[str, int] = field(default_factory=dict)
    names: dict[str, dict[str, Any]] = field(default_factory=dict)
    # the test frame's locals each time the test reached the watched line (``watch``)
    watched: list[dict[str, str]] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"


@dataclass
class TestRun:
    __test__ = False  # not a pytest test class
    records: list[TestRecord]
    returncode: int | None
    output: str  # pytest's stdout and stderr, the tail
    timed_out: bool = False
    # a test whose call did not return within ``hang_after`` seconds: its start record
    # (nodeid, names, params, indices), the seconds, and the stack faulthandler dumped
    # (``(file, line)`` frames, the innermost first)
    hung: TestRecord | None = None
    hung_after: float | None = None
    hung_frames: list[tuple[str, int]] = field(default_factory=list)

    # node ids pytest's own summary reports as failed or in error (``-rfE``), and what the
    # recorder plugin said it could not do
    reported_failed: list[str] = field(default_factory=list)
    recorder_notes: list[str] = field(default_factory=list)

    def reported(self, test_id: str) -> list[str]:
        """The node ids pytest reported failed (or in error) that are ``test_id``."""
        found = []
        for line in self.reported_failed:
            # the line is ``<nodeid>`` or ``<nodeid> - <message>``; a parameter id may hold
            # " - " itself, so every split point is tried
            head, *parts = line.split(" - ")
            candidates = [head] + [" - ".join([head, *parts[:i]]) for i in range(1, len(parts) + 1)]
            # a node id with a parameter part ends with its "]"
            whole = [c for c in candidates if "[" not in c or c.endswith("]")]
            match = next((c for c in whole if same_test(c, test_id)), None)
            if match is not None:
                found.append(match)
        return found

    def tail(self, lines: int = 15) -> str:
        return "\n".join(self.output.rstrip().splitlines()[-lines:])


def run_tests(
    root: Path,
    targets: list[str],
    *,
    names: list[str] | None = None,
    timeout: float = 120.0,
    extra_args: list[str] | None = None,
    hang_after: float | None = None,
    python: Interpreter | None = None,
    watch: tuple[Path, int] | tuple[Path, int, int] | None = None,
) -> TestRun:
    """Run pytest on ``targets`` (node ids or paths relative to ``root``) with the plugin,
    in ``python`` (the project's interpreter, :func:`referee.checks.interpreter.find`;
    None: referee's own). With ``hang_after``, a test's call still running after that
    many seconds is taken as hung: its stack is dumped and the run ends
    (``TestRun.hung``). With ``watch`` (a test module's file, a statement's first line and
    perhaps its last), each record holds the test frame's locals every time the test came
    to that statement (``TestRecord.watched``)."""
    with tempfile.TemporaryDirectory(prefix="referee-observe-") as scratch:
        out = Path(scratch) / "records.jsonl"
        hang_out = Path(scratch) / "hang.txt"
        plugin_dir = Path(scratch) / "plugin"
        (plugin_dir / PLUGIN).mkdir(parents=True)
        shutil.copyfile(PLUGIN_FILE, plugin_dir / PLUGIN / "__init__.py")
        shutil.copyfile(METHODS_FILE, plugin_dir / PLUGIN / "assertion_methods.py")
        env = _environment(plugin_dir, out, hang_out, names, hang_after)
        if watch is not None:
            file, first, *last = watch
            env[WATCH_ENV] = json.dumps(
                {"file": str(file), "line": first, "end": last[0] if last else first}
            )
        command = [
            python.path if python is not None else sys.executable,
            "-m",
            "pytest",
            "-p",
            PLUGIN,
            f"--rootdir={root}",
            "-q",
            "-p",
            "no:cacheprovider",
            "--color=no",
            "-rfE",
            *_alone_args(root, env),
            *(extra_args or []),
            "--",
            *[node_id(t) for t in targets],
        ]
        returncode, output, timed_out = _run(command, root, env, timeout)
        records, started = _records(out)
        try:
            frames = [
                (m.group(1), int(m.group(2)))
                for m in _FRAME.finditer(hang_out.read_text(encoding="utf-8", errors="replace"))
            ]
        except OSError:
            frames = []
        text = output.decode("utf-8", "replace")[-20_000:]
        finished = {r.nodeid for r in records if r.when == "call"}
        hung = next((r for r in reversed(started) if r.nodeid not in finished), None)
        reported, notes = summary(output.decode("utf-8", "replace"))
        summary_fields = {"reported_failed": reported, "recorder_notes": notes}
        if hung is None or not frames:
            return TestRun(records, returncode, text, timed_out, **summary_fields)
        return TestRun(
            records, returncode, text, timed_out, hung, hang_after, frames, **summary_fields
        )


def _alone_args(root: Path, env: dict[str, str]) -> list[str]:
    """The options that keep this run in one process and decided by its tests alone,
    whatever the root's pytest configuration and ``$PYTEST_ADDOPTS`` add (xdist's
    ``-n``, pytest-cov's ``--cov-fail-under``): see :func:`alone_args`."""
    layout = pytest_layout(str(root))
    addopts = layout[1].get("addopts", "") if layout is not None else ""
    return alone_args(" ".join(filter(None, [addopts, env.get("PYTEST_ADDOPTS", "")])))


def _environment(
    plugin_dir: Path,
    out: Path,
    hang_out: Path,
    names: list[str] | None,
    hang_after: float | None,
) -> dict[str, str]:
    """The pytest process's environment: the plugin importable, where it writes its
    records and hang dump, the names it resolves; nothing of referee's own settings."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(plugin_dir), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    env[OUT_ENV] = str(out)
    env[NAMES_ENV] = json.dumps(names or [])
    if hang_after is not None:
        env[HANG_ENV] = repr(float(hang_after))
        env[HANG_OUT_ENV] = str(hang_out)
    return env


def _run(
    command: list[str], root: Path, env: dict[str, str], timeout: float
) -> tuple[int | None, bytes, bool]:
    """(exit status, output, whether it ran out of time) of the pytest process, in a
    session of its own: whatever it leaves running is killed with it."""
    return run_in_own_group(
        command,
        timeout,
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )


def _records(out: Path) -> tuple[list[TestRecord], list[TestRecord]]:
    """(the records the plugin wrote, the tests it saw start) of a run."""
    records: list[TestRecord] = []
    started: list[TestRecord] = []
    try:
        lines = out.read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            data = json.loads(line)
        except ValueError:
            continue
        (started if data.get("when") == "start" else records).append(
            TestRecord(
                nodeid=data.get("nodeid", ""),
                when=data.get("when", ""),
                outcome=data.get("outcome", ""),
                comparisons=data.get("comparisons") or [],
                crash=data.get("crash"),
                params=data.get("params") or {},
                indices=data.get("indices") or {},
                names=data.get("names") or {},
                watched=[w for w in data.get("watched") or [] if isinstance(w, dict)],
            )
        )
    return records, started
