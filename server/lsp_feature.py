"""What every service of the language server is: a :class:`LanguageFeature`.

The server (:mod:`referee.server.lsp`) keeps one list of features and calls each at the
same points of the session (as esbonio does): a document changed, saved or closed, the
session shuts down; it asks each for the diagnostics of a document beside L0/L1's, for
what they add to a pull result id, for the code actions they offer on a range, for the
commands they answer and for their part of the ``referee/status`` notification.

Also here: what the features share (no feature imports another's private helpers).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
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


class LayerResults:
    """What the layers that run on save (the judge, the execution checks) share: where
    their findings, computed on the text of the last run, are in the text as it is now."""

    def __init__(self) -> None:
        self._blocks: dict[tuple[str, int, int], list[tuple[int, int, int]]] = {}

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


def review_actions(diagnostic: types.Diagnostic, item_id: str, uri: str) -> list[types.CodeAction]:
    """ "Accept in review" and "Reject in review" of the review item a diagnostic shows."""
    return [
        types.CodeAction(
            title=f"{verb} in review: {diagnostic.message.splitlines()[0][:60]}",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            command=types.Command(
                title=f"{verb} (referee review)",
                command=f"referee.review.{command}",
                arguments=[item_id, uri],
            ),
        )
        for verb, command in (("Accept", "accept"), ("Reject", "reject"))
    ]
