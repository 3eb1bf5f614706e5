"""Long work that a caller watches and may stop: one ``Cancelled`` and one ``Work``.

The judge, arbitration and the execution checks run for seconds to minutes; the language
server asks them to stop when the document changes again (or the editor cancels the
request) and shows what they are doing meanwhile. ``Work`` carries both directions: the
caller's "stop?" question and the worker's "now doing ..." messages. Either may be absent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Say = Callable[[str], None]
IsCancelled = Callable[[], bool]


class Cancelled(Exception):
    """The caller asked to stop (the document changed again, the editor cancelled the
    request). Not a failure: there is no result to report."""


@dataclass(frozen=True)
class Work:
    """What a long-running step is told: ``cancelled`` (asked often, between steps) and
    ``progress`` (one line for the user, replacing the last)."""

    is_cancelled: IsCancelled | None = None
    progress: Say | None = None

    def cancelled(self) -> bool:
        return self.is_cancelled is not None and self.is_cancelled()

    def raise_if_cancelled(self) -> None:
        if self.cancelled():
            raise Cancelled

    def say(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)

    def advance(self, what: str, done: int, total: int, detail: str = "") -> None:
        """``what (done/total): detail``: the item a loop over ``total`` of them is at."""
        self.say(f"{what} ({done}/{total})" + (f": {detail}" if detail else ""))


IDLE = Work()  # nobody watches, nothing stops it
