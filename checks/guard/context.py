"""What the guard knows beyond the file it checks (kept free of rule imports)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
    # "agent": every uncertified weakening is an error, whatever else changed with it.
    mode: str = "default"
    # Parametrized fixtures (``@pytest.fixture(params=[...])``): name -> canonical params.
    fixtures: Mapping[str, list[str]] = field(default_factory=dict)
    # How often each check is made by the changed test files at the base and now: a
    # check gone from one test but made as often as before was moved, not removed.
    counts_before: Mapping[tuple[str, str, str | None], int] = field(default_factory=dict)
    counts_now: Mapping[tuple[str, str, str | None], int] = field(default_factory=dict)
    # Tests of the changed files that are new since the base, by id: where a test
    # renamed and edited is found.
    new_tests: Mapping[str, TestFacts] = field(default_factory=dict)
    # What else the diff changed (checks/guard/impact.py's Impact), or None.
    impact: Any = None
    # pytest's settings in effect (the file that holds them, and the settings), at the
    # base and now: configuration moved between files is compared as one.
    pytest_before: tuple[str, Mapping[str, str]] | None = None
    pytest_now: tuple[str, Mapping[str, str]] | None = None
    # The project's test modules now (paths from the repository root), and the test
    # modules' text at the base (as test_text is now): what a new deselection can reach.
    test_files: tuple[str, ...] = ()
    base_test_text: str = ""
    # The changed test files' facts as the plan read them: relpath -> (text, facts);
    # a check of the same text uses them instead of computing them again.
    current_tests: Mapping[str, tuple[str, Mapping[str, TestFacts]]] = field(default_factory=dict)

    @property
    def strict(self) -> bool:
        return self.mode == "agent"
