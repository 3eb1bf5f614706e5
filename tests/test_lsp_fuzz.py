"""Malformed JSON-RPC against the real ``referee serve`` over stdio (tests/lsp/fuzz.py).

A seeded generator sends a few hundred hostile cases — invalid JSON, wrong
Content-Length, unknown methods, wrong parameter types, out-of-range positions, edits to
documents that are not open, versions going backwards, huge messages — and after each
one the server must answer a normal ``textDocument/diagnostic`` exactly as it did before
the first. bench/reliability.py runs many more.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from lsp.fuzz import RawServer, ask, frame, fuzz, open_probe

CASES = 300
SEED = 20250101


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "referee.toml").write_text("", encoding="utf-8")
    return tmp_path


def test_seeded_fuzz_never_crashes_the_server(workspace: Path) -> None:
    report = fuzz(workspace, CASES, SEED, huge_mb=1.0)
    assert report.failures == []
    assert not report.crashed
    assert report.cases == CASES
    assert set(report.by_kind) == {
        "invalid-json",
        "wrong-length",
        "unknown-method",
        "wrong-params",
        "out-of-range",
        "lifecycle",
        "huge",
    }
    # Every request that could be read got an answer (a result or an error).
    assert report.unanswered == []


def test_a_request_with_ill_typed_params_is_answered_with_an_error(workspace: Path) -> None:
    with RawServer(workspace) as server:
        server.initialize()
        probe = open_probe(server)
        params = {"textDocument": {"uri": probe.uri}, "position": {"line": 2**40, "character": 0}}
        server.send(
            {"jsonrpc": "2.0", "id": "bad-1", "method": "textDocument/hover", "params": params}
        )
        response = server.wait("bad-1", 10)
        assert response["error"]["code"] == -32602  # Invalid Params
        unknown = server.request("referee/noSuchMethod", {})
        assert unknown["error"]["code"] == -32601  # Method Not Found


def test_edits_to_documents_that_are_not_open_and_stale_versions(workspace: Path) -> None:
    with RawServer(workspace) as server:
        server.initialize()
        probe = open_probe(server)
        other = (workspace / "other_test.py").as_uri()
        change = {
            "range": {"start": {"line": 9, "character": 0}, "end": {"line": 99, "character": 5}},
            "text": "x",
        }
        server.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": other, "version": 3}, "contentChanges": [change]},
        )
        # The probe document, edited at a version older than the one it was opened with:
        server.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": probe.uri, "version": 0}, "contentChanges": [change]},
        )
        response = server.request("textDocument/diagnostic", {"textDocument": {"uri": probe.uri}})
        assert "result" in response
        assert server.alive()


def test_libraries_and_child_processes_cannot_touch_the_lsp_stream(workspace: Path) -> None:
    """The real server, with a neighbour in its process doing what llama-cpp-python does
    around a model load (fd 1 pointed at /dev/null for a moment) and what a child process
    with an inherited stdin may do (read from it). Every request is still answered."""
    meddler = workspace / "meddler.py"
    meddler.write_text(_MEDDLER, encoding="utf-8")
    with RawServer(workspace, [sys.executable, str(meddler)]) as server:
        server.initialize()
        probe = open_probe(server)
        deadline = time.monotonic() + 10
        while not (workspace / "meddling").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (workspace / "meddling").exists()
        problems = []
        for _ in range(30):
            problems.append(ask(server, probe, timeout=5))
            time.sleep(0.05)
        assert problems == [None] * 30
        assert server.stray_output == []


_MEDDLER = r"""
import os, stat, subprocess, threading, time

def meddle():
    # Once the server has set up its stream, fd 0 is no longer the client's pipe (or,
    # without that set-up, after 3 s).
    deadline = time.monotonic() + 3
    while stat.S_ISFIFO(os.fstat(0).st_mode) and time.monotonic() < deadline:
        time.sleep(0.01)
    open("meddling", "w").close()
    while True:
        saved = os.dup(1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # llama_cpp._utils.suppress_stdout_stderr
        time.sleep(0.05)
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
        subprocess.run(["head", "-c", "1"], stdout=subprocess.DEVNULL, timeout=5)
        os.write(1, b"stray output\n")
        time.sleep(0.02)

threading.Thread(target=meddle, daemon=True).start()
from referee.server.lsp import serve
serve()
"""


def test_the_harness_notices_a_server_that_dies(workspace: Path) -> None:
    """A stand-in server that exits on the first body it cannot parse: the fuzz run must
    report the crash (so a real one would not go unnoticed)."""
    fragile = workspace / "fragile.py"
    fragile.write_text(_FRAGILE, encoding="utf-8")
    report = fuzz(workspace, 40, SEED, huge_mb=0.1, argv=[sys.executable, str(fragile)])
    assert report.crashed
    assert any("crashed" in failure for failure in report.failures)


def test_frame() -> None:
    body = json.dumps({"é": 1}).encode()
    assert frame(body) == b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


_FRAGILE = r"""
import json, sys

def read():
    length = None
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        if not line.strip():
            break
        key, _, value = line.decode().partition(":")
        if key.lower() == "content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))  # raises on bad JSON: the "crash"

def send(message):
    body = json.dumps(message).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    sys.stdout.buffer.flush()

while True:
    message = read()
    if "id" in message and "method" in message:
        result = None
        if message["method"] == "textDocument/diagnostic":
            result = {"kind": "full", "items": [{"code": "X", "severity": 1, "message": "m",
                      "range": {"start": {"line": 0, "character": 0},
                                "end": {"line": 0, "character": 1}}}]}
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})
"""
