"""Applying the fixes findings carry to a file's text (``referee check --fix``).

Pure: text and findings in, text out. A fix is *safe* when applying it keeps what the code
does, *unsafe* when it may change it — every fix referee's rules offer today is unsafe,
because it makes a test check what it only pretended to check, so the test may start to
fail. ``--fix`` applies the safe ones, ``--fix --unsafe-fixes`` both kinds, as in ruff.

Fixes are applied together when they do not overlap, in order of position; a fix that
overlaps (or touches) one already taken waits for the next pass, which re-checks the new
text first (see :func:`referee.checks.runner.fix_bytes`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from referee.checks.models import Finding, Fix, Location

__all__ = ["Applied", "applicable", "apply_fixes"]


def applicable(fix: Fix | None, unsafe: bool) -> bool:
    """Whether ``--fix`` applies ``fix`` (``unsafe``: with ``--unsafe-fixes``)."""
    return fix is not None and (fix.applicability == "safe" or unsafe)


@dataclass(frozen=True)
class Applied:
    text: str
    applied: int  # fixes applied
    deferred: int  # fixes left for a later pass: they overlap one applied here


def _offsets(text: str) -> list[int]:
    """Where each line starts, lines split at ``\\n`` as :class:`SourceFile` splits them
    (a ``\\r`` before it belongs to the line), so 1-based line ``n`` starts at
    ``starts[n - 1]``."""
    starts = [0]
    at = text.find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def _offset(text: str, starts: list[int], location: Location) -> int | None:
    """The character offset of ``location``, or None when the text has no such place
    (a fix computed from other text must never be applied somewhere else)."""
    if location.line > len(starts):
        return None
    start = starts[location.line - 1]
    end = starts[location.line] - 1 if location.line < len(starts) else len(text)
    offset = start + location.column - 1
    return offset if offset <= end else None


def apply_fixes(text: str, findings: Iterable[Finding]) -> Applied:
    """``text`` with the fixes of ``findings`` applied, each fix whole or not at all."""
    starts = _offsets(text)
    planned: list[tuple[int, int, list[tuple[int, int, str]]]] = []
    for finding in findings:
        if finding.fix is None or not finding.fix.edits:
            continue
        edits = []
        for edit in finding.fix.edits:
            start = _offset(text, starts, edit.span.start)
            end = _offset(text, starts, edit.span.end)
            if start is None or end is None or end < start:
                break
            edits.append((start, end, edit.content))
        else:
            edits.sort()
            if all(a[1] <= b[0] for a, b in pairwise(edits)):  # its own edits disjoint
                planned.append((edits[0][0], edits[-1][1], edits))
    planned.sort(key=lambda p: (p[0], p[1]))
    taken: list[tuple[int, int, str]] = []
    last_end = -1
    deferred = 0
    applied = 0
    for start, end, edits in planned:
        if start <= last_end:  # overlaps or touches the previous fix: next pass
            deferred += 1
            continue
        taken.extend(edits)
        last_end = end
        applied += 1
    pieces = []
    at = 0
    for start, end, content in taken:
        pieces.append(text[at:start])
        pieces.append(content)
        at = end
    pieces.append(text[at:])
    return Applied("".join(pieces), applied, deferred)
