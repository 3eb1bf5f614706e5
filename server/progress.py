"""window/workDoneProgress for one long run (the judge, an arbitration), when the client
supports it; a client without it simply gets no progress."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from lsprotocol import types

from referee.checks.progress import Work

if TYPE_CHECKING:
    import asyncio
    import threading

    from pygls.lsp.server import LanguageServer


class WorkProgress:
    """One progress token: ``begin`` (creates it), ``report``, ``end``; ``cancelled`` says
    whether the user pressed the progress's cancel button (when ``cancellable``)."""

    def __init__(self, ls: LanguageServer, kind: str, *, cancellable: bool = False) -> None:
        self.ls = ls
        self.kind = kind
        self.cancellable = cancellable
        self.token: str | None = None

    async def begin(self, title: str) -> None:
        window = self.ls.client_capabilities.window
        if not (window and window.work_done_progress):
            return
        token = f"referee-{self.kind}-{uuid.uuid4()}"
        try:
            await self.ls.work_done_progress.create_async(token)
        except Exception:  # the client refused the token: run without progress
            return
        self.token = token
        self.ls.work_done_progress.begin(
            token, types.WorkDoneProgressBegin(title=title, cancellable=self.cancellable)
        )

    def cancelled(self) -> bool:
        if self.token is None:
            return False
        future = self.ls.work_done_progress.tokens.get(self.token)
        return future is not None and future.cancelled()

    def work(self, loop: asyncio.AbstractEventLoop, stop: threading.Event | None = None) -> Work:
        """What a run on another thread is given: asked to stop once ``stop`` is set or,
        when ``cancellable``, the user cancels; its messages reported on ``loop``, the event
        loop the token belongs to."""

        def is_cancelled() -> bool:
            return (stop is not None and stop.is_set()) or (self.cancellable and self.cancelled())

        return Work(
            is_cancelled=is_cancelled,
            progress=lambda message: loop.call_soon_threadsafe(self.report, message),
        )

    def report(self, message: str) -> None:
        if self.token is not None:
            self.ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=message)
            )

    def end(self) -> None:
        if self.token is not None:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd())
            self.ls.work_done_progress.tokens.pop(self.token, None)
            self.token = None
