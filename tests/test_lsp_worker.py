"""The language server when the model process crashes: it survives, L0/L1 go on, the crash
is said once, the item is UNCLEAR, and the next save judges again in a fresh worker. And
the worker never outlives the server: not after shutdown/exit, not when the client dies,
not after SIGTERM.

The worker is real and so is its crash (SIGSEGV by a null-pointer read at the first
decode, from tests/worker_backends.py); only the answers are scripted, so no model is
downloaded.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from lsp.fuzz import frame
from lsp.harness import SERVER, Doc, RefereeClient, Setup, make_client, record_statuses, start
from lsprotocol import types
from pytest_lsp import ClientServerConfig

TESTS = Path(__file__).resolve().parent

pytestmark = pytest.mark.filterwarnings("error::pytest_lsp.checks.LspSpecificationWarning")

CODE = '''def placeholder():
    """Parse the configuration."""
    raise NotImplementedError


def add(a: int, b: int) -> int:
    """The sum of a and b."""
    return a + b
'''


@pytest.fixture
def worker_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF" + bytes(64))
    monkeypatch.setenv("REFEREE_WORKER_TEST_BACKEND", "worker_backends:Scripted")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv("REFEREE_TEST_FAULT", f"segv-once:{tmp_path / 'crashed'}")
    return model


@pytest_asyncio.fixture
async def session(tmp_path: Path, worker_env: Path, request):
    project = tmp_path / "project"
    setup = Setup(
        files={
            # safe: no fallback from fast mode to hide the crash (tested in test_model_worker)
            # The judge's worker alone: the execution checks would ask it for oracles too.
            "referee.toml": f'[judge]\nmodel = "{worker_env}"\naudit-rate = 0.0\n'
            'runtime = "safe"\n[execution]\nenabled = false\n',
            "mathx.py": CODE,
        },
        init_options={"debounceMs": 0},
        # a process of its own: these tests follow the server's pid and its children
        server=tuple(SERVER),
    )
    config = ClientServerConfig(server_command=list(setup.server), client_factory=make_client)
    client = await config.start(devtools=request.config.getoption("devtools"))
    assert isinstance(client, RefereeClient)
    record_statuses(client)

    try:
        await start(client, "visual-studio-code", project, setup)
        yield client
        server = client._server  # type: ignore[attr-defined]
        if server is not None and server.returncode is None:  # the test did not end it
            try:
                await asyncio.wait_for(client.shutdown_session(), 20)
            except Exception:
                server.kill()
    finally:
        if client._server is not None and client._server.returncode is None:  # type: ignore[attr-defined]
            client._server.kill()  # type: ignore[attr-defined]
        await client.stop()


def _children(pid: int) -> list[int]:
    """The model worker processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z" and b"_worker_main" in cmdline:
            found.append(int(entry))
    return found


def _worker_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


async def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _worker_alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


def codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diagnostics)


async def _diagnostics(client: RefereeClient, doc: Doc, ready) -> list[types.Diagnostic]:
    try:
        (found,) = await client.until(
            lambda: ready(found := client.diagnostics.get(doc.uri, [])) and (found,),
            "diagnostics",
        )
        return found
    except AssertionError:
        found = client.diagnostics.get(doc.uri, [])
        raise AssertionError(f"diagnostics now: {[(d.code, d.message) for d in found]}") from None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_the_server_survives_a_model_crash_and_judges_again(session: RefereeClient):
    client = session
    server_pid = client._server.pid  # type: ignore[union-attr]
    doc = Doc(client, client.uri("mathx.py"), CODE).open()
    await _diagnostics(client, doc, lambda d: "REF101" in codes(d))

    # The first save: the worker dies by SIGSEGV while judging `add`.
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    found = await _diagnostics(client, doc, lambda d: "REF402" in codes(d))
    (unclear,) = [d for d in found if d.code == "REF402"]
    assert "the model process crashed: signal 11 (SIGSEGV)" in unclear.message
    assert "REF101" in codes(found)  # L0 is still there, beside it
    await client.until(lambda: any("crashed" in m.message for m in client.messages), "message")
    await client.until(lambda: any(s.get("model") == "crashed" for s in client.statuses), "status")
    assert os.getpid() != server_pid and _worker_alive(server_pid)

    # L0/L1 go on: an edit is diagnosed at once.
    doc.replace("raise NotImplementedError", "return None")
    after = await _diagnostics(client, doc, lambda d: "REF101" not in codes(d))
    assert "REF402" in codes(after)  # the judge's item stays until the next judge run

    # After the back-off, the next save starts a fresh worker, which judges `add` PASS.
    await asyncio.sleep(1.2)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=doc.identifier))
    await _diagnostics(client, doc, lambda d: "REF402" not in codes(d))
    await client.until(lambda: any(s.get("model") == "ok" for s in client.statuses[-1:]), "ok")
    crash_messages = [m for m in client.messages if "crashed" in m.message]
    assert len(crash_messages) == 1  # once, not once per save
    assert len(_children(server_pid)) == 1

    # shutdown + exit: no worker left behind.
    worker = _children(server_pid)[0]
    await client.shutdown_session()
    assert await _gone(worker), "the model process outlived the server's shutdown"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("how", ["sigterm", "client-dies"])
async def test_no_worker_outlives_the_server(session: RefereeClient, how: str, tmp_path: Path):
    client = session
    (tmp_path / "crashed").touch()  # segv-once: as if it had crashed already, so no fault
    server = client._server  # type: ignore[union-attr]
    doc = Doc(client, client.uri("mathx.py"), CODE).open()
    await _diagnostics(client, doc, lambda d: "REF101" in codes(d))
    answer = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="referee.judge.run", arguments=[doc.uri])
    )
    assert answer["ok"] if isinstance(answer, dict) else answer.ok
    (worker,) = _children(server.pid)
    if how == "sigterm":
        server.send_signal(signal.SIGTERM)
    else:
        # The client dies: its end of the server's stdin closes, the server exits.
        server.stdin.close()
    await asyncio.wait_for(server.wait(), 20)
    assert await _gone(worker), f"the model process outlived the server ({how})"


@pytest.mark.parametrize(("shut_down_first", "code"), [(True, 0), (False, 1)])
def test_the_exit_code_says_whether_shutdown_came_before_exit(
    tmp_path: Path, shut_down_first: bool, code: int
):
    """The protocol's rule: 0 when ``shutdown`` came before ``exit``, 1 otherwise (pygls
    computes it and loses it; ``referee serve`` leaves with it, skipping the interpreter's
    teardown)."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}},
        },
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
    ]
    if shut_down_first:
        messages.append({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    messages.append({"jsonrpc": "2.0", "method": "exit"})
    done = subprocess.run(
        list(SERVER),
        input=b"".join(frame(json.dumps(m).encode()) for m in messages),
        capture_output=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == code, done.stderr.decode()[-2000:]
    answered = {m.get("id") for m in _frames(done.stdout) if "result" in m}
    assert answered == ({1, 2} if shut_down_first else {1})


def _frames(stream: bytes) -> list[dict[str, Any]]:
    found = []
    while stream:
        header, _, rest = stream.partition(b"\r\n\r\n")
        length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
        found.append(json.loads(rest[:length]))
        stream = rest[length:]
    return found
