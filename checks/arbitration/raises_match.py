"""A raises assertion that holds the exception's message to a pattern — ``pytest.raises(E,
match="at least")``, ``assertRaisesRegex(E, "at least", ...)`` — and failed on the message:
the code raised the exception the test names (pytest and unittest check the type first; a
wrong type escapes them), with a message the pattern does not find.

The truth decides by its own messages: when every source that certified "raises E" raised
it with a message the pattern finds, the source is wrong; when any did not (messages
differ between programs, and a docstring seldom spells one out), the truth does not
settle the message, and a person decides."""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Sequence

from referee.checks.arbitration.sites import Isolated
from referee.checks.models import OracleResult
from referee.checks.nodes import excerpt

# pytest: "Regex pattern did not match.\n  Regex: 'x'\n  Input: 'y'" (and, from pytest
# 8.4, "Expected regex: 'x'\n  Actual message: 'y'"); unittest: '"x" does not match "y"'
_PYTEST = re.compile(
    r"Regex pattern did not match\.\s*(?:Expected regex|Regex): (?P<regex>.*?)\n\s*"
    r"(?:Actual message|Input): (?P<input>.*)",
    re.S,
)
_UNITTEST = re.compile(r'^"(?P<regex>.*)" does not match "(?P<input>.*)"$', re.S)
MARK = "with a message its pattern does not find"
_MESSAGE_LIMIT = 4_000


def match_failed(isolated: Isolated, kind: str, message: str) -> str | None:
    """What the code did, when the raises assertion failed on the exception's message:
    ``raised ValueError with a message its pattern does not find ('n < 0')``; else None."""
    if isolated.match is None or kind not in ("AssertionError", "Failed"):
        return None
    found = _PYTEST.search(message) or _UNITTEST.match(message.strip())
    if found is None:
        return None
    shown = found.group("input").strip()
    if found.re is _PYTEST:
        with contextlib.suppress(ValueError, SyntaxError, MemoryError, RecursionError):
            shown = str(ast.literal_eval(shown))
    name = isolated.expected.text.strip().rsplit(".", 1)[-1]
    return f"raised {name} {MARK} ({excerpt(repr(shown))})"


def _pattern(isolated: Isolated) -> re.Pattern[str] | None:
    try:
        value = ast.literal_eval(isolated.match or "")
        return re.compile(value) if isinstance(value, str) else None
    except (ValueError, SyntaxError, re.error, MemoryError, RecursionError):
        return None


def _message(detail: str | None, name: str) -> str | None:
    """The message of a source's exception, from its detail ``ValueError: msg``."""
    text = (detail or "").strip()
    head, sep, rest = text.partition(":")
    if head.strip().rsplit(".", 1)[-1] != name:
        return None
    return rest.strip() if sep else ""


def match_decision(
    isolated: Isolated, produced: str | None, sources: Sequence[OracleResult], truth: str
) -> tuple[bool, str] | None:
    """None when the failure was not on the message (:func:`match_failed`); else (whether
    the source is wrong, the reason's words about the message)."""
    if not produced or MARK not in produced:
        return None
    pattern = _pattern(isolated)
    if pattern is None:
        return False, (
            f"the code raised the exception the test expects; its pattern "
            f"`{excerpt(isolated.match or '')}` is not a literal regular expression referee "
            "can hold the truth's message to"
        )
    name = isolated.expected.text.strip().rsplit(".", 1)[-1]
    certifying = [r for r in sources if r.status == "ok" and r.value == truth]
    messages = [_message(r.detail, name) for r in certifying]
    if not messages or any(m is None for m in messages):
        return False, (
            f"the code raised {name} as the truth does, {MARK}; the truth's own message is "
            "not known, so it does not settle the message"
        )
    found = [bool(pattern.search(m[:_MESSAGE_LIMIT])) for m in messages if m is not None]
    shown = ", ".join(excerpt(repr(m), 40) for m in messages)
    if all(found):
        return True, f"every source raised it with a message the pattern finds ({shown})"
    return False, (
        f"the code raised {name} as the truth does, {MARK}; the truth's messages ({shown}) "
        f"do not all match `{excerpt(isolated.match or '')}` either, so the truth does not "
        "settle the message: the test may be wrong, but referee does not edit what a test "
        "expects to raise"
    )
