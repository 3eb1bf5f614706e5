"""The minimal JSON-RPC client bench/lsp_latency.py drives each language server with."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import Any


class ServerGone(Exception):
    pass


class Client:
    """JSON-RPC over a server's stdin/stdout: requests, notifications, and the time each
    publishDiagnostics arrived (taken as soon as its bytes are read, before decoding)."""

    def __init__(self, name: str, argv: list[str], cwd: Path, log: Path, config: Any) -> None:
        self.name, self.argv, self.cwd, self.log_path, self.config = name, argv, cwd, log, config
        self.proc: asyncio.subprocess.Process | None = None
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.publishes: asyncio.Queue[tuple[float, dict[str, Any]]] = asyncio.Queue()
        self.reader_task: asyncio.Task[None] | None = None
        self.log_file: Any = None
        self.gone: str | None = None

    async def start(self) -> None:
        self.log_file = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            cwd=self.cwd,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self.log_file,
            limit=2**24,
        )
        self.reader_task = asyncio.create_task(self._read())

    def stderr_tail(self, chars: int = 1500) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:].strip()
        except OSError:
            return ""

    async def _read(self) -> None:
        assert self.proc and self.proc.stdout
        stream = self.proc.stdout
        try:
            while True:
                length = None
                while True:
                    header = await stream.readline()
                    if not header:
                        raise ServerGone("the server closed its stdout")
                    header = header.strip()
                    if not header:
                        break
                    key, _, value = header.decode("ascii").partition(":")
                    if key.lower() == "content-length":
                        length = int(value)
                if length is None:
                    continue
                body = await stream.readexactly(length)
                arrived = time.perf_counter()
                message = json.loads(body)
                self._dispatch(arrived, message)
        except (ServerGone, asyncio.IncompleteReadError, ConnectionError) as exc:
            self.gone = str(exc) or type(exc).__name__
            for future in self.waiting.values():
                if not future.done():
                    future.set_exception(ServerGone(self.gone))
            self.publishes.put_nowait((time.perf_counter(), {"__gone__": self.gone}))

    def _dispatch(self, arrived: float, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is not None and "id" in message:  # a request from the server
            self._answer(message)
        elif method is None:  # a response
            future = self.waiting.pop(message.get("id"), None)
            if future is not None and not future.done():
                if "error" in message:
                    future.set_exception(RuntimeError(f"{self.name}: {message['error']}"))
                else:
                    future.set_result(message.get("result"))
        elif method == "textDocument/publishDiagnostics":
            self.publishes.put_nowait((arrived, message["params"]))

    def _answer(self, message: dict[str, Any]) -> None:
        method, params = message["method"], message.get("params") or {}
        result: Any = None
        if method == "workspace/configuration":
            result = [self.config(item.get("section")) for item in params.get("items", [])]
        elif method == "workspace/workspaceFolders":
            result = [{"uri": self.cwd.as_uri(), "name": self.cwd.name}]
        self._write({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def _write(self, message: dict[str, Any]) -> None:
        if self.gone or not self.proc or not self.proc.stdin:
            raise ServerGone(self.gone or "not started")
        body = json.dumps(message, separators=(",", ":")).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    async def notify(self, method: str, params: Any) -> float:
        """Send a notification; returns the time just before it was written."""
        sent = time.perf_counter()
        self._write({"jsonrpc": "2.0", "method": method, "params": params})
        assert self.proc and self.proc.stdin
        await self.proc.stdin.drain()
        return sent

    async def request(self, method: str, params: Any, timeout: float = 30.0) -> Any:
        self.next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        try:
            self._write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
            assert self.proc and self.proc.stdin
            await self.proc.stdin.drain()
            return await asyncio.wait_for(future, timeout)
        finally:
            self.waiting.pop(self.next_id, None)
            if future.done() and not future.cancelled():
                future.exception()  # retrieved: asyncio need not warn about it
            else:
                future.cancel()

    def drain_publishes(self) -> int:
        count = 0
        while not self.publishes.empty():
            self.publishes.get_nowait()
            count += 1
        return count

    async def wait_publish(
        self, uri: str, version: int, timeout: float
    ) -> tuple[float, dict[str, Any]]:
        """The first publish for ``uri`` at ``version`` or later (or without a version)."""
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise asyncio.TimeoutError
            arrived, params = await asyncio.wait_for(self.publishes.get(), left)
            if "__gone__" in params:
                raise ServerGone(params["__gone__"])
            if params.get("uri") != uri:
                continue
            published = params.get("version")
            if published is None or published >= version:
                return arrived, params

    async def stop(self) -> None:
        if self.proc is None:
            return
        if self.gone is None and self.proc.returncode is None:
            with contextlib.suppress(Exception):
                await self.request("shutdown", None, timeout=5)
                await self.notify("exit", None)
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except asyncio.TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        if self.reader_task:
            self.reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.reader_task
        if self.log_file:
            self.log_file.close()
