"""A fake OpenAI-compatible model server on 127.0.0.1 for the red-team suite.

It stands in for the model only: every ``POST /v1/chat/completions`` is answered with the
program the test chose, in a ```python block, so the rest of referee (the oracles, the
references, the candidate patches, the sandbox, the verdict) is the real thing. The
answer may depend on the kind of request (an oracle or a patch), told apart by the
system prompt of referee's own prompt file.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from referee.checks.arbitration.truth import prompts

Answer = Callable[[str], str]  # kind ("oracle" / "patch") -> the program
Seeded = Callable[[str, "int | None"], str]  # (kind, the request's seed) -> the program


def fenced(program: str) -> str:
    return f"```python\n{program.rstrip()}\n```\n"


@dataclass
class FakeModel:
    """``with FakeModel(answer) as model: model.url`` — the server runs in a thread."""

    answer: Answer
    requests: list[dict[str, Any]] = field(default_factory=list)
    seeded: Seeded | None = None  # when set, answers by kind and seed instead
    # When set, answers from the whole request body instead (its seed, its prompt): how a
    # test makes the k oracles differ.
    answer_for: Callable[[dict[str, Any]], str] | None = None
    # False: the answer is sent as the test wrote it, not in a ```python block (a judge's
    # JSON verdict, say; the test fences the programs it answers itself).
    fence: bool = True

    def __post_init__(self) -> None:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # /v1/models, for clients that look first
                self._send(200, {"object": "list", "data": [{"id": "hostile", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                model.requests.append(body)
                messages = body.get("messages") or [{}]
                system = messages[0].get("content", "") if messages else ""
                kind = "oracle" if system == prompts().oracle_system else "patch"
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "no such endpoint"}})
                    return
                if model.answer_for is not None:
                    text = model.answer_for(body)
                elif model.seeded is not None:
                    text = model.seeded(kind, body.get("seed"))
                else:
                    text = model.answer(kind)
                text = fenced(text) if model.fence else text
                self._send(
                    200,
                    {
                        "id": "chatcmpl-red-team",
                        "object": "chat.completion",
                        "model": body.get("model", "hostile"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # shutdown() waits for serve_forever's next poll: at the default 0.5 s that was
        # 0.4 s of every test that used this server (~130 worker-seconds of the suite)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def kinds(self) -> list[str]:
        kinds = []
        for body in self.requests:
            messages = body.get("messages") or [{}]
            system = messages[0].get("content", "") if messages else ""
            kinds.append("oracle" if system == prompts().oracle_system else "patch")
        return kinds

    def __enter__(self) -> FakeModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
