"""What a guard rule reports of one comparison with the baseline (a code, a line, a
message), and how loud: an error, or a warning where the default mode is lenient."""

from __future__ import annotations

from dataclasses import dataclass

from referee.checks.guard.context import GuardContext
from referee.checks.guard.facts import TestFacts
from referee.checks.models import Location, Severity, Span


@dataclass(frozen=True)
class Found:
    code: str
    line: int  # 1-based line in the current file
    message: str
    severity: Severity | None = None


def span(line: int) -> Span:
    location = Location(line=max(line, 1), column=1)
    return Span(start=location, end=location)


def where(guard: GuardContext, facts: TestFacts, line: int | None = None) -> str:
    """Where something was at the base, in words: ``line 6 at HEAD`` (``HEAD:6`` read as
    git's ``REV:PATH``, and a value followed by it as another value)."""
    return f"line {line or facts.line} at {guard.base}"


def judge(
    guard: GuardContext, tests: tuple[TestFacts, ...], code: str, line: int, message: str
) -> Found:
    """A weakening of a check: an error, unless (in the default mode) the code the test
    exercises changed in the same diff: then a warning that names what changed."""
    if guard.strict or guard.impact is None:
        return Found(code, line, message)
    names: set[str] = set()
    for facts in tests:
        names |= facts.names
    reason = guard.impact.reason(names)
    if reason is None:
        return Found(code, line, message)
    return Found(
        code,
        line,
        f"{message}; changed together with the code it tests ({reason}): an intended "
        "change? (an error in agent mode)",
        Severity.WARNING,
    )


def relaxed(guard: GuardContext, code: str, line: int, message: str) -> Found:
    """A skip or xfail that applies under a condition: a warning a reviewer reads (the
    condition quoted), an error in agent mode."""
    return Found(code, line, message, None if guard.strict else Severity.WARNING)
