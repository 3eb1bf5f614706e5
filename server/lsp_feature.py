"""What every service of the language server is: a :class:`LanguageFeature`.

The server (:mod:`referee.server.lsp`) keeps one list of features and calls each at the
same points of the session (as esbonio does): a document changed, saved or closed, the
session shuts down; it asks each for the diagnostics of a document beside L0/L1's, for
what they add to a pull result id, for the code actions they offer on a range, for the
commands they answer and for their part of the ``referee/status`` notification.

Also here: what the features share (no feature imports another's private helpers).
"""

from __future__ import annotations

import asyncio
import difflib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from lsprotocol import types

if TYPE_CHECKING:
    from referee.server.lsp import RefereeServer

# A command's handler: (the server, the command's arguments) -> its answer (or a coroutine).
Command = Callable[["RefereeServer", tuple[Any, ...]], Any]


class LanguageFeature:
    """One service of the language server. Every hook does nothing by default."""

    #: the server attribute it is reached by (``ls.judge``), by other features and tests
    name: ClassVar[str]

    def commands(self) -> dict[str, Command]:
        """The ``workspace/executeCommand`` commands it answers, by name."""
        return {}

    def did_change(self, ls: RefereeServer, uri: str) -> None:
        """``uri``'s text was edited (the document already holds the new text)."""

    def did_save(self, ls: RefereeServer, uri: str) -> None:
        """``uri`` was saved."""

    def did_close(self, ls: RefereeServer, uri: str) -> None:
        """``uri`` was closed."""

    def shutdown(self, ls: RefereeServer) -> None:
        """The session ends: stop what runs."""

    def diagnostics(self, ls: RefereeServer, uri: str) -> list[types.Diagnostic]:
        """Its diagnostics of ``uri``, published beside L0/L1's, never instead of them."""
        return []

    def result_tag(self, uri: str) -> str:
        """What it adds to ``uri``'s pull result id (changes when its diagnostics do)."""
        return ""

    def code_actions(
        self, ls: RefereeServer, uri: str, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        """The quick fixes it offers on ``params.range``."""
        return []

    def status(self, ls: RefereeServer) -> dict[str, Any]:
        """Its part of the ``referee/status`` notification."""
        return {}

    def diagnostics_on(
        self, ls: RefereeServer, uri: str, params: types.CodeActionParams
    ) -> list[types.Diagnostic]:
        """Its diagnostics of ``uri`` that start on the lines ``params.range`` covers (the
        cursor anywhere on a diagnostic's first line offers its quick fixes)."""
        first, last = params.range.start.line, params.range.end.line
        return [d for d in self.diagnostics(ls, uri) if first <= d.range.start.line <= last]


F = TypeVar("F", bound=LanguageFeature)


class FeatureSlot(Generic[F]):
    """``ls.judge``: the server's feature of that name, typed; assigning one replaces it
    in the server's list (a test gives the server a fresh service)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, ls: Any, owner: type | None = None) -> F:
        return ls.feature_named(self.name)

    def __set__(self, ls: Any, feature: F) -> None:
        ls.replace_feature(self.name, feature)


class LayerResults(LanguageFeature):
    """What the layers that run on save (the judge, the execution checks) share: one run
    per document in the background, on a thread of the layer's own (a newer run cancels
    the older), the last run's results by uri, and where their findings, computed on the
    text of the last run, are in the text as it is now."""

    #: where a failed run is logged, and what is said (the document's uri for ``%s``)
    log: ClassVar[logging.Logger]
    failure: ClassVar[str]

    def __init__(self) -> None:
        self._blocks: dict[tuple[str, int, int], list[tuple[int, int, int]]] = {}
        # uri -> the run in progress, its stop flag, and the text it runs on (what the
        # judge, started by the same save, waits for)
        self.running: dict[str, tuple[asyncio.Task[None], threading.Event, str]] = {}
        self.results: dict[str, Any] = {}  # uri -> the last run's results
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"referee-{self.name}")

    def _run(
        self, ls: RefereeServer, uri: str, text: str, version: int | None, stop: threading.Event
    ) -> Any:
        """The coroutine of one run on ``text`` (``stop`` is set when it is cancelled)."""
        raise NotImplementedError

    def cancel(self, uri: str) -> None:
        running = self.running.pop(uri, None)
        if running is not None:
            running[1].set()
            running[0].cancel()

    def start(self, ls: RefereeServer, uri: str) -> asyncio.Task[None] | None:
        document = ls.documents.get(uri)
        if document is None:
            return None
        self.cancel(uri)  # a newer save: the older run's results would be stale
        stop = threading.Event()
        task = asyncio.get_running_loop().create_task(
            self._run(ls, uri, document.text, document.version, stop)
        )
        self.running[uri] = (task, stop, document.text)
        task.add_done_callback(lambda t, uri=uri: self._done(ls, uri, t))
        ls.notify_status()
        return task

    def _done(self, ls: RefereeServer, uri: str, task: asyncio.Task[None]) -> None:
        if uri in self.running and self.running[uri][0] is task:
            del self.running[uri]
        if not task.cancelled() and task.exception() is not None:
            self.log.error(self.failure, uri, exc_info=task.exception())
        ls.notify_status()

    def shutdown(self, ls: RefereeServer) -> None:
        for uri in list(self.running):
            self.cancel(uri)

    def _moved(self, uri: str, judged: Any, now: str) -> Callable[[int, int], int | None]:
        """For the text as it is now: how far the lines ``first..last`` (1-based) of the
        judged text moved, or None when any of them was edited. Edits above a judged
        function move its diagnostic with it; an edit inside it takes the diagnostic away
        (the verdict was about other text) until the judge runs again."""
        if now == judged.text:
            return lambda first, last: 0
        key = (uri, id(judged), hash(now))
        blocks = self._blocks.get(key)
        if blocks is None:
            matcher = difflib.SequenceMatcher(
                None, judged.text.split("\n"), now.split("\n"), autojunk=False
            )
            blocks = [(i, j, n) for i, j, n in matcher.get_matching_blocks() if n]
            self._blocks = {key: blocks}  # one document's latest text is enough

        def moved(first: int, last: int) -> int | None:
            for i, j, n in blocks:
                if i < first and last <= i + n:  # lines first..last are 0-based i..i+n-1
                    return j - i
            return None

        return moved


def baseline_text(path: Path) -> str | None:
    """The file's text at HEAD, when it is tracked by git (only changed functions are
    judged, only changed functions and tests are run)."""
    from referee.checks.guard import baseline

    try:
        top = baseline.toplevel(path.parent)
        relative = path.resolve().relative_to(top).as_posix()
        return baseline.read_at(top, "HEAD", [relative]).get(relative)
    except (baseline.GitError, ValueError, OSError):
        return None


def first_argument(args: tuple[Any, ...]) -> Any:
    """A command's first argument, whether the client sent ``[x]`` or ``[[x]]``."""
    if not args:
        return None
    first = args[0]
    if isinstance(first, list):
        return first[0] if first else None
    return first


def quick_fix(
    diagnostic: types.Diagnostic,
    title: str,
    command: str,
    arguments: list[Any],
    command_title: str | None = None,
) -> types.CodeAction:
    """The quick fix ``title`` on ``diagnostic`` that runs ``command`` with ``arguments``
    (the command's own title is the action's unless given)."""
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic],
        command=types.Command(
            title=title if command_title is None else command_title,
            command=command,
            arguments=arguments,
        ),
    )


def review_actions(diagnostic: types.Diagnostic, item_id: str, uri: str) -> list[types.CodeAction]:
    """ "Accept in review" and "Reject in review" of the review item a diagnostic shows."""
    return [
        quick_fix(
            diagnostic,
            f"{verb} in review: {diagnostic.message.splitlines()[0][:60]}",
            f"referee.review.{command}",
            [item_id, uri],
            command_title=f"{verb} (referee review)",
        )
        for verb, command in (("Accept", "accept"), ("Reject", "reject"))
    ]
