"""What the guard knows beyond the file it checks (kept free of rule imports)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from referee.checks.guard.facts import TestFacts
from referee.checks.models import Certificate


@dataclass(frozen=True)
class GuardContext:
    """What the guard needs beyond the file itself."""

    baseline: str | None  # the file at the base; None when the file is new
    base: str = "HEAD"
    certificates: tuple[Certificate, ...] = ()
    # Tests present now in other files: body hash / assertion fingerprint -> test id.
    elsewhere: Mapping[str, str] = field(default_factory=dict)
    # All test files' text, whitespace removed: where a test's literal inputs live.
    test_text: str = ""
    # Tests in other changed files by name: a test moved and edited is compared there.
    by_name: Mapping[str, TestFacts] = field(default_factory=dict)
