"""What a rule is, and what it sees: the types every rule module imports."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePath
from typing import Literal

from referee.checks.configuration import Contract, RefereeConfig
from referee.checks.guard.context import GuardContext
from referee.checks.models import Fix, Layer, Severity, Span
from referee.checks.project import EMPTY_VIEW, FileView
from referee.checks.pymodule import PythonModule
from referee.checks.source import SourceFile

DOCS_BASE_URL = "https://github.com/referee-dev/referee/blob/main/docs/rules/"

_TEST_DIRS = frozenset({"test", "tests", "testing"})

PYTHON = frozenset({"python"})
TEXT = frozenset({"text"})
ANY = PYTHON | TEXT


@dataclass(frozen=True)
class Violation:
    """What a rule yields; the engine adds the rule's identity and the file's path."""

    span: Span
    message: str
    evidence: str | None = None
    severity: Severity | None = None  # when one finding is louder or quieter than the rule
    fix: Fix | None = None


@dataclass
class Context:
    """One file, as the rules see it."""

    source: SourceFile
    config: RefereeConfig
    relpath: str  # posix path relative to the project root, for glob matching
    is_test_file: bool
    contracts: tuple[Contract, ...] = ()
    root_name: str = ""  # the project root directory's own name
    guard: GuardContext | None = None  # set when a baseline is known (REF3xx rules)
    memo: dict[str, object] = field(default_factory=dict)  # work rules share within a file
    # Kept between checks of one open document (engine.Incremental), for caches whose
    # answers are those of a fresh computation; None for a one-off check.
    store: dict[str, object] | None = None
    # What the rest of the project says about this file (checks/project.py).
    project: FileView = EMPTY_VIEW

    @cached_property
    def in_test_tree(self) -> bool:
        """A test module, or any file under a directory called test/tests/testing —
        the project root itself included, however the path was written."""
        if self.is_test_file or self.source.path.endswith("conftest.py"):
            return True
        parts = {
            self.root_name,
            *PurePath(self.source.path).parts[:-1],
            *PurePath(self.relpath).parts[:-1],
        }
        return not parts.isdisjoint(_TEST_DIRS)

    @cached_property
    def module(self) -> PythonModule:
        return PythonModule(
            self.source,
            self.is_test_file,
            external=self.project.asserting,
            xfail_strict=self.project.xfail_strict,
        )


Check = Callable[[Context], Iterator[Violation]]

# A rule's scope. A ``"statement"`` rule's findings inside one top-level statement (a
# function, a class, a statement, a comment) depend only on that statement's text and on
# the file-wide facts that ``engine.Incremental`` tracks: the assertion aliases, whether
# the module imports only unittest, which functions are defined and which assert, and
# which methods a subclass elsewhere in the file overrides; the incremental check re-runs
# it only on the statements an edit changed. A ``"file"`` rule runs on the whole file at
# every check. A new rule is file-wide until it says otherwise (tests/test_incremental.py
# then covers it).
Scope = Literal["statement", "file"]
STATEMENT: Scope = "statement"
FILE: Scope = "file"

# Whether a rule's findings can carry a fix, and its applicability (None: never a fix).
# tests/test_docs.py checks it against the fixes the rule modules build.
FixAvailability = Literal["safe", "unsafe"] | None


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    layer: Layer
    severity: Severity
    message: str  # the one-line message a finding carries when the rule has nothing to add
    kinds: frozenset[str]
    check: Check
    scope: Scope = FILE
    fix: FixAvailability = None

    @property
    def url(self) -> str:
        return f"{DOCS_BASE_URL}{self.name}.md"

    @property
    def documentation(self) -> str:
        """The rule's page body: its check's docstring (What it does / Why it matters /
        Example / Use instead)."""
        return inspect.cleandoc(self.check.__doc__ or "")
