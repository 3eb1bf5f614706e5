"""Malformed JSON-RPC against a real ``referee serve`` over stdio.

A raw client (no LSP library: it must be able to send what no library would) and a
seeded generator of hostile cases. After every case the client asks a normal question —
``textDocument/diagnostic`` for a document it opened at the start — and the answer must
be the one the server gave before any case was sent. Used by tests/test_lsp_fuzz.py (a
few hundred cases) and bench/reliability.py (many more, and the load measurement).

Framing the server cannot be expected to survive is not generated: a Content-Length the
client never delivers holds the stream in every LSP server. A case that breaks the framing
(a wrong length, a missing header) is followed by what re-synchronises a reader that
reads header lines: the missing bytes, or a line end.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROBE_TEXT = '''"""A module the probe asks about."""


def helper():
    pass  # TODO: write it


def test_helper():
    helper()


def test_tuple():
    assert (helper() is None, "message")
'''

CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16"]},
    "textDocument": {
        "diagnostic": {"dynamicRegistration": False},
        "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix"]}}},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "synchronization": {"didSave": True},
    },
    "workspace": {"configuration": True, "workspaceFolders": True, "applyEdit": True},
}


class ServerGone(Exception):
    """The server exited or closed its output."""


class NoAnswer(Exception):
    """A request went unanswered within its timeout."""


class RawServer:
    """``referee serve`` over stdio, spoken to byte by byte."""

    def __init__(self, workspace: Path, argv: list[str] | None = None) -> None:
        self.workspace = workspace
        self.argv = argv or [sys.executable, "-m", "referee", "serve"]
        self.stderr_path = workspace / ".referee-serve.log"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in close()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            self.argv,
            cwd=workspace,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
        )
        self._lock = threading.Condition()
        self._responses: dict[Any, dict[str, Any]] = {}
        self.notifications: Counter[str] = Counter()
        self.last_params: dict[str, Any] = {}  # the latest params of each notification
        self.errors_shown: list[str] = []  # window/showMessage and logMessage of type Error
        self._gone: str | None = None
        self.settings: dict[str, Any] = {}  # what workspace/configuration answers
        self.stray_output: list[bytes] = []  # stdout lines that were not LSP headers
        # The last messages each way, for telling what happened when a case fails.
        self.trace: deque[tuple[float, str, str]] = deque(maxlen=200)
        self._next_id = 10_000_000
        self._write_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- transport

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        try:
            while True:
                length = None
                while True:
                    line = stream.readline()
                    if not line:
                        raise ServerGone("stdout closed")
                    line = line.strip()
                    if not line:
                        break
                    key, _, value = line.decode("ascii", "replace").partition(":")
                    if key.strip().lower() == "content-length":
                        length = int(value.strip())
                    elif key.strip().lower() != "content-type":
                        # Not LSP framing: something in the server wrote to its stdout.
                        self.stray_output.append(line[:200])
                        self.trace.append((time.monotonic(), "<-", f"stray {line[:100]!r}"))
                if length is None:
                    continue
                body = stream.read(length)
                if len(body) < length:
                    raise ServerGone("stdout closed mid-message")
                self._dispatch(json.loads(body))
        except (ServerGone, OSError, ValueError) as exc:
            with self._lock:
                self._gone = f"{type(exc).__name__}: {exc}"
                self._lock.notify_all()

    def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        self.trace.append((time.monotonic(), "<-", _summary(message)))
        if method is not None and "id" in message:
            self._answer(message)
        elif method is None:
            with self._lock:
                self._responses[message.get("id")] = message
                self._lock.notify_all()
        else:
            self.notifications[method] += 1
            params = message.get("params") or {}
            self.last_params[method] = params
            if method in ("window/showMessage", "window/logMessage") and params.get("type") == 1:
                self.errors_shown.append(str(params.get("message", ""))[:500])

    def _answer(self, message: dict[str, Any]) -> None:
        method, params = message["method"], message.get("params") or {}
        result: Any = None
        if method == "workspace/configuration":
            result = [self.settings for _ in params.get("items", [])]
        elif method == "workspace/workspaceFolders":
            result = [{"uri": self.workspace.as_uri(), "name": self.workspace.name}]
        with contextlib.suppress(ServerGone, OSError):
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def send_bytes(self, data: bytes) -> None:
        self.trace.append((time.monotonic(), "->", repr(data[:120])))
        if self.proc.poll() is not None:
            raise ServerGone(f"exited with {self.proc.returncode}")
        assert self.proc.stdin is not None
        with self._write_lock:
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError) as exc:
                raise ServerGone(f"stdin closed: {exc}") from None

    def send(self, message: Any) -> None:
        self.send_bytes(frame(json.dumps(message).encode()))

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, timeout: float = 20.0) -> dict[str, Any]:
        """The whole response message (``result`` or ``error``)."""
        with self._lock:
            self._next_id += 1
            request_id = self._next_id
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return self.wait(request_id, timeout)

    def wait(self, request_id: Any, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        key = _key(request_id)
        with self._lock:
            while True:
                for stored, message in list(self._responses.items()):
                    if _key(stored) == key:
                        del self._responses[stored]
                        return message
                if self._gone is not None or self.proc.poll() is not None:
                    raise ServerGone(self._gone or f"exited with {self.proc.returncode}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise NoAnswer(f"no answer to request {request_id!r} in {timeout:g} s")
                self._lock.wait(min(left, 0.5))

    def alive(self) -> bool:
        return self.proc.poll() is None and self._gone is None

    def stderr_tail(self, chars: int = 2000) -> str:
        with contextlib.suppress(OSError):
            return self.stderr_path.read_text(errors="replace")[-chars:]
        return ""

    # -- lifecycle

    def initialize(self, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Start the session. ``options`` go in initializationOptions and in every answer
        to workspace/configuration. The judge (L2) is off unless ``options`` turn it on:
        these tests are about L0/L1 and the protocol, and a model may be installed."""
        self.settings = {"debounceMs": 0, "judge": {"run": "off"}, **(options or {})}
        response = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": self.workspace.as_uri(),
                "capabilities": CAPABILITIES,
                "workspaceFolders": [{"uri": self.workspace.as_uri(), "name": self.workspace.name}],
                "initializationOptions": self.settings,
            },
        )
        self.notify("initialized", {})
        return response

    def close(self) -> int | None:
        if self.alive():
            with contextlib.suppress(ServerGone, NoAnswer, OSError):
                self.request("shutdown", None, timeout=5)
                self.notify("exit", None)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        self._stderr.close()
        return self.proc.returncode

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _summary(message: dict[str, Any]) -> str:
    if "method" in message:
        return f"{message['method']} id={message.get('id')!r}"[:120]
    return f"response id={message.get('id')!r} {'error' if 'error' in message else 'result'}"


def _key(request_id: Any) -> str:
    return json.dumps(request_id, sort_keys=True)


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


# ----------------------------------------------------------------------- the probe


@dataclass
class Probe:
    """A document opened at the start and the diagnostics the server first gave for it."""

    uri: str
    answer: list[tuple[Any, ...]]


def _diagnostics(response: dict[str, Any]) -> list[tuple[Any, ...]]:
    result = response.get("result") or {}
    items = result.get("items") or []
    return sorted(
        (
            d.get("code"),
            d["range"]["start"]["line"],
            d["range"]["start"]["character"],
            d["range"]["end"]["line"],
            d["range"]["end"]["character"],
            d.get("severity"),
        )
        for d in items
    )


def open_probe(server: RawServer) -> Probe:
    path = server.workspace / "probe_test.py"
    path.write_text(PROBE_TEXT, encoding="utf-8")
    uri = path.as_uri()
    server.notify(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": PROBE_TEXT}},
    )
    answer = _diagnostics(server.request("textDocument/diagnostic", {"textDocument": {"uri": uri}}))
    if not answer:
        raise AssertionError("the probe document should have findings")
    return Probe(uri, answer)


def ask(server: RawServer, probe: Probe, timeout: float = 20.0) -> str | None:
    """None when the server answers the probe as it did at the start; else what is wrong."""
    try:
        response = server.request(
            "textDocument/diagnostic", {"textDocument": {"uri": probe.uri}}, timeout
        )
    except ServerGone as exc:
        return f"crashed: {exc}"
    except NoAnswer as exc:
        return f"hung: {exc}"
    if "error" in response:
        return f"probe failed: {response['error']}"
    got = _diagnostics(response)
    if got != probe.answer:
        return f"wrong answer: {got} instead of {probe.answer}"
    return None


# ----------------------------------------------------------------------- the cases


@dataclass
class Case:
    kind: str
    name: str
    data: bytes  # what goes on the wire
    resync: bytes = b""  # sent after it, to re-synchronise a header-line reader
    answer_id: Any = None  # a request id the server must answer (result or error)
    answer_timeout: float = 10.0


@dataclass
class Generator:
    """Seeded hostile cases; ``uris`` are documents the cases may open and edit (never
    the probe's)."""

    rng: random.Random
    workspace: Path
    huge_mb: float = 2.0
    counter: int = 0
    opened: list[str] = field(default_factory=list)

    def uri(self) -> str:
        return (self.workspace / f"fuzz_{self.rng.randrange(8)}.py").as_uri()

    def next_id(self) -> Any:
        self.counter += 1
        return f"fuzz-{self.counter}"

    def text(self, limit: int = 400) -> str:
        alphabet = "abc xyz_()=:\n\t\"'#é𝄞\u200b\\{}[],.0123456789assert def pass TODO"
        return "".join(self.rng.choice(alphabet) for _ in range(self.rng.randrange(limit)))

    def junk(self) -> Any:
        """A JSON value of an unexpected type."""
        choices: list[Callable[[], Any]] = [
            lambda: None,
            lambda: self.rng.randint(-(2**70), 2**70),
            lambda: self.rng.random() * 1e308,
            lambda: self.text(40),
            lambda: [self.junk() for _ in range(self.rng.randrange(3))],
            lambda: {self.text(8): self.junk() for _ in range(self.rng.randrange(3))},
            lambda: True,
            lambda: {"line": -1, "character": "x"},
        ]
        return self.rng.choice(choices)()

    def position(self) -> Any:
        big = [0, 1, -1, 2**31, 2**31 - 1, 2**53, 10**9, -(2**31)]
        return {"line": self.rng.choice(big), "character": self.rng.choice(big)}

    def request(self, method: str, params: Any, kind: str, name: str) -> Case:
        request_id = self.next_id()
        body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        return Case(kind, name, frame(json.dumps(body).encode()), answer_id=request_id)

    def notification(self, method: str, params: Any, kind: str, name: str) -> Case:
        body = {"jsonrpc": "2.0", "method": method, "params": params}
        return Case(kind, name, frame(json.dumps(body).encode()))

    # -- the kinds

    def invalid_json(self) -> Case:
        valid = json.dumps({"jsonrpc": "2.0", "id": self.next_id(), "method": "hover"}).encode()
        options: list[tuple[str, bytes]] = [
            ("garbage", self.text(200).encode()),
            ("truncated", valid[: self.rng.randrange(1, len(valid))]),
            ("bad-utf8", b'{"jsonrpc": "2.0", "method": "\xff\xfe"}'),
            ("binary", bytes(self.rng.randrange(256) for _ in range(64))),
            ("scalar", self.rng.choice([b"1", b"null", b'"x"', b"true", b"1e999"])),
            ("array", b'[{"jsonrpc": "2.0", "method": "initialized", "params": {}}]'),
            ("nested", b"[" * 100_000 + b"]" * 100_000),
            ("no-jsonrpc", b'{"id": 5, "method": "shutdown"}'),
            ("jsonrpc-1", b'{"jsonrpc": "1.0", "id": 6, "method": "shutdown"}'),
            ("method-not-string", b'{"jsonrpc": "2.0", "method": 5, "params": {}}'),
            ("empty-object", b"{}"),
            ("empty", b""),
            ("response-to-nothing", b'{"jsonrpc": "2.0", "id": 999999, "result": {"x": 1}}'),
            ("error-to-nothing", b'{"jsonrpc": "2.0", "id": 99, "error": {"code": 1}}'),
        ]
        name, body = self.rng.choice(options)
        # "empty" has Content-Length 0, which a reader may take as no header at all.
        return Case("invalid-json", name, frame(body), resync=b"\r\n")

    def wrong_length(self) -> Case:
        body = json.dumps(
            {"jsonrpc": "2.0", "method": "$/fuzz", "params": {"text": self.text(100)}}
        ).encode()
        choice = self.rng.randrange(7)
        if choice == 0:  # extra headers around the length: valid
            data = b"X-Before: 1\r\nContent-Length: %d\r\nContent-Type: x\r\n\r\n%s" % (
                len(body),
                body,
            )
            return Case("wrong-length", "extra-headers", data, b"\r\n")
        if choice == 1:  # claims less than it sends
            short = self.rng.randrange(1, len(body))
            data = b"Content-Length: %d\r\n\r\n%s" % (short, body)
            return Case("wrong-length", "shorter-than-body", data, b"\r\n")
        if choice == 2:  # claims more: the client then sends the missing bytes as junk
            extra = self.rng.randrange(1, 64)
            data = b"Content-Length: %d\r\n\r\n%s" % (len(body) + extra, body)
            return Case("wrong-length", "longer-than-body", data, b"x" * extra + b"\r\n")
        if choice == 3:
            value = self.rng.choice([b"-1", b"abc", b"", b"1.5", b"0x10", b" 12 "])
            data = b"Content-Length: %s\r\n\r\n%s" % (value, body)
            return Case("wrong-length", "not-a-number", data, b"\r\n")
        if choice == 4:
            data = b"Content-Type: application/json\r\n\r\n" + body
            return Case("wrong-length", "no-length", data, b"\r\n")
        if choice == 5:
            data = b"content-length: %d\r\n\r\n%s" % (len(body), body)
            return Case("wrong-length", "lowercase-header", data, b"\r\n")
        data = b"Content-Length: %d\nX-Other: 1\n\n%s" % (len(body), body)
        return Case("wrong-length", "bare-newlines", data, b"\r\n")

    def unknown_method(self) -> Case:
        method = self.rng.choice(
            ["referee/nothing", "textDocument/unknown", "", "$/x", "a" * 5000, "initialize/x"]
        )
        if self.rng.random() < 0.5:
            case = self.request(method, self.junk(), "unknown-method", "request")
            if method.startswith("$/"):
                case.answer_id = None  # "$/" requests may be ignored
            return case
        return self.notification(method, self.junk(), "unknown-method", "notification")

    def wrong_params(self) -> Case:
        uri = self.uri()
        methods = [
            ("textDocument/didOpen", False),
            ("textDocument/didChange", False),
            ("textDocument/didClose", False),
            ("textDocument/didSave", False),
            ("textDocument/diagnostic", True),
            ("textDocument/codeAction", True),
            ("textDocument/hover", True),
            ("codeAction/resolve", True),
            ("workspace/diagnostic", True),
            ("workspace/executeCommand", True),
            ("workspace/didChangeWatchedFiles", False),
            ("workspace/didChangeWorkspaceFolders", False),
            ("$/cancelRequest", False),
            ("$/setTrace", False),
            ("textDocument/willSaveWaitUntil", True),
        ]
        method, is_request = self.rng.choice(methods)
        params_options = [
            lambda: self.junk(),
            lambda: {"textDocument": self.junk()},
            lambda: {"textDocument": {"uri": self.junk(), "version": self.junk()}},
            lambda: {"textDocument": {"uri": uri, "version": "x", "text": 5, "languageId": None}},
            lambda: {"textDocument": {"uri": uri}, "contentChanges": self.junk()},
            lambda: {"textDocument": {"uri": uri}, "range": self.junk(), "context": self.junk()},
            lambda: {"command": self.junk(), "arguments": self.junk()},
            lambda: {"command": "referee.checkWorkspace", "arguments": [self.junk()]},
            lambda: {"id": self.junk()},
            lambda: {"changes": [{"uri": self.junk(), "type": 99}]},
            lambda: {"title": "x", "data": self.junk()},
            lambda: {"event": {"added": [self.junk()], "removed": self.junk()}},
        ]
        params = self.rng.choice(params_options)()
        if is_request:
            return self.request(method, params, "wrong-params", method)
        return self.notification(method, params, "wrong-params", method)

    def out_of_range(self) -> Case:
        uri = self.rng.choice(
            [
                self.uri(),
                "file:///no/such/file.py",
                "untitled:Untitled-1",
                "http://x/y.py",
                "file:///",
                "not a uri",
                (self.workspace / "probe_test.py").as_uri(),
            ]
        )
        start, end = self.position(), self.position()
        method = self.rng.choice(
            ["textDocument/codeAction", "textDocument/diagnostic", "textDocument/hover"]
        )
        if method == "textDocument/codeAction":
            diagnostic = {
                "range": {"start": self.position(), "end": self.position()},
                "message": self.text(30),
                "code": self.rng.choice(["REF101", "REF999", 5, None]),
                "source": "referee",
                "data": self.junk(),
            }
            params: dict[str, Any] = {
                "textDocument": {"uri": uri},
                "range": {"start": start, "end": end},
                "context": {
                    "diagnostics": [diagnostic],
                    "only": self.rng.choice([None, ["quickfix"], ["source.fixAll.referee"]]),
                },
            }
        elif method == "textDocument/hover":
            params = {"textDocument": {"uri": uri}, "position": start}
        else:
            params = {
                "textDocument": {"uri": uri},
                "previousResultId": self.rng.choice([None, "x", "1-abc"]),
            }
        return self.request(method, params, "out-of-range", method)

    def document_lifecycle(self) -> Case:
        """didChange for unopened documents, versions going backwards, ranges past the end,
        double opens and closes."""
        uri = self.uri()
        version = self.rng.choice([-5, 0, 1, 2, 2**31 - 1, 2**31, 10**12])
        choice = self.rng.randrange(6)
        if choice == 0:
            params: dict[str, Any] = {
                "textDocument": {
                    "uri": uri,
                    "languageId": "python",
                    "version": version,
                    "text": self.text(),
                },
            }
            return self.notification("textDocument/didOpen", params, "lifecycle", "open")
        if choice == 1:
            return self.notification(
                "textDocument/didClose", {"textDocument": {"uri": uri}}, "lifecycle", "close"
            )
        if choice == 2:
            return self.notification(
                "textDocument/didSave",
                {"textDocument": {"uri": uri}, "text": self.text()},
                "lifecycle",
                "save",
            )
        change: dict[str, Any]
        if choice == 3:  # a whole-document change
            change = {"text": self.text()}
        else:  # an incremental change, its range anywhere
            change = {
                "range": {"start": self.position(), "end": self.position()},
                "text": self.text(40),
            }
            if choice == 5:
                change["rangeLength"] = self.rng.choice([-1, 0, 10**9])
        params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
        return self.notification("textDocument/didChange", params, "lifecycle", "change")

    def huge(self) -> Case:
        size = int(self.huge_mb * 1024 * 1024)
        choice = self.rng.randrange(4)
        uri = self.uri()
        if choice == 0:
            text = ("x = 1  # é𝄞\n" * (size // 14 + 1))[:size]
            params = {
                "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}
            }
            return self.notification("textDocument/didOpen", params, "huge", "document")
        if choice == 1:
            text = "def f():\n    pass\n" + "a" * size  # one enormous line
            params = {
                "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}
            }
            return self.notification("textDocument/didOpen", params, "huge", "one-line")
        if choice == 2:
            return self.request("referee/" + "m" * size, {}, "huge", "method-name")
        # Well-formed: thousands of items that each fail validation take pygls seconds to
        # reject (it formats every item's error); out-of-range values come one at a time.
        place = {"line": 3, "character": 4}
        params = {
            "textDocument": {"uri": uri},
            "range": {"start": place, "end": place},
            "context": {
                "diagnostics": [
                    {"range": {"start": place, "end": place}, "message": "m" * 100}
                    for _ in range(size // 200)
                ]
            },
        }
        return self.request("textDocument/codeAction", params, "huge", "many-diagnostics")

    KINDS: tuple[str, ...] = (
        "invalid_json",
        "wrong_length",
        "unknown_method",
        "wrong_params",
        "out_of_range",
        "document_lifecycle",
        "huge",
    )

    def cases(self, count: int, huge_share: float = 0.02) -> Iterator[Case]:
        for index in range(count):
            if index < len(self.KINDS):  # every kind at least once
                kind = self.KINDS[index]
            elif self.rng.random() < huge_share:
                kind = "huge"
            else:
                kind = self.rng.choice(self.KINDS[:-1])
            yield getattr(self, kind)()


# ----------------------------------------------------------------------- running


@dataclass
class FuzzReport:
    seed: int
    cases: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)  # crashes, hangs, wrong answers
    unanswered: list[str] = field(default_factory=list)  # requests never answered
    slow: list[str] = field(default_factory=list)  # answered, but after answer_timeout
    crashed: bool = False
    seconds: float = 0.0
    errors_shown: int = 0


def fuzz(
    workspace: Path,
    count: int,
    seed: int,
    *,
    huge_mb: float = 2.0,
    probe_every: int = 1,
    argv: list[str] | None = None,
) -> FuzzReport:
    """Run ``count`` seeded cases against one server; stop at the first crash."""
    report = FuzzReport(seed)
    started = time.monotonic()
    generator = Generator(random.Random(seed), workspace, huge_mb=huge_mb)
    late: list[tuple[str, Any]] = []
    with RawServer(workspace, argv) as server:
        server.initialize()
        probe = open_probe(server)
        for index, case in enumerate(generator.cases(count)):
            label = f"#{index} {case.kind}/{case.name}"
            try:
                server.send_bytes(case.data)
                if case.resync:
                    server.send_bytes(case.resync)
                if case.answer_id is not None:
                    try:
                        server.wait(case.answer_id, case.answer_timeout)
                    except NoAnswer:
                        late.append((label, case.answer_id))
            except ServerGone as exc:
                report.failures.append(f"{label}: crashed: {exc}")
                report.crashed = True
                break
            report.cases += 1
            report.by_kind[case.kind] += 1
            if (index + 1) % probe_every == 0 or index == count - 1:
                problem = ask(server, probe)
                if problem is not None:
                    report.failures.append(f"{label}: {problem}")
                    if not server.alive():
                        report.crashed = True
                        report.failures.append(f"stderr: {server.stderr_tail()}")
                        break
        for label, request_id in late:  # slow (a check of a huge document), or lost?
            try:
                server.wait(request_id, 30 if server.alive() else 0)
                report.slow.append(label)
            except (NoAnswer, ServerGone):
                report.unanswered.append(label)
        report.errors_shown = len(server.errors_shown)
    report.seconds = time.monotonic() - started
    return report
