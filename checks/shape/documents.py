"""The shape of a whole file: empty, punctuation only, a test log that ran nothing
(REF104, REF105, REF130)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from pathlib import PurePath

from referee.checks.models import Severity
from referee.checks.nodes import is_docstring, statements
from referee.checks.rule import Context, Violation

_NEAR_EMPTY_CHARS = 3
# Modules that are legitimately empty: package markers and entry points.
_EMPTY_OK = frozenset({"__init__.py", "__init__.pyi", "conftest.py", "__main__.py", "py.typed"})


def empty_file(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a text document that is empty, or has fewer than three visible characters of
    which one is a letter or digit (one that is all punctuation is `punctuation-only`,
    REF105), and a Python module with no code at all (only whitespace, comments or
    docstrings). `__init__.py`, `__main__.py`, `conftest.py` and `py.typed` may be
    empty.

    An empty document is an error; a near-empty document and an empty module are
    warnings.

    ## Why it matters
    "The file exists" is the weakest possible evidence that a task was done, and it is the
    one a careless pipeline checks. An empty output is the degenerate case.

    ## Example
    A `report.md` that was created but never written.

    ## Use instead
    Write the content; if the file is meant to be empty, exclude it in the configuration.
    """
    source = ctx.source
    if PurePath(source.path).name in _EMPTY_OK:
        return  # before the kind test: py.typed is a text file, and empty by design
    if source.kind == "text":
        visible = "".join(source.text.split()).replace("\ufeff", "")
        if not visible:
            yield Violation(span=source.line_span(0), message="file is empty")
        elif len(visible) < _NEAR_EMPTY_CHARS and any(ch.isalnum() for ch in visible):
            yield Violation(
                span=source.line_span(0),
                message=f"file is nearly empty: {len(visible)} visible character(s)",
                evidence=visible,
                severity=Severity.WARNING,
            )
        return
    code = [s for s in statements(source.tree.root_node) if not is_docstring(s)]
    if not code:
        yield Violation(
            span=source.line_span(0),
            message="module has no code",
            severity=Severity.WARNING,
        )


def _is_punctuation(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PS"


def punctuation_only(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a text document whose visible characters are all punctuation or symbols:
    `。`, `...`, `---`, `***`, `!!!`.

    ## Why it matters
    A model that has nothing to say still emits *something*; a lone full stop passes
    "non-empty" checks and means nothing.

    ## Example
    ```text
    。
    ```

    ## Use instead
    Produce the content the task asked for.
    """
    source = ctx.source
    visible = "".join(source.text.split()).replace("\ufeff", "")
    if visible and all(_is_punctuation(ch) for ch in visible):
        yield Violation(
            span=source.line_span(0),
            message=f"document is only punctuation: {visible[:40]!r}",
            evidence=visible[:200],
        )


# Each pattern is a runner's way of saying it ran nothing. Case-insensitive.
_NOTHING_RAN = re.compile(
    r"\b(?:"
    r"0 passed"  # pytest "0 passed in 0.01s"
    r"|no tests ran"  # pytest
    r"|collected 0 items"  # pytest
    r"|no tests (?:were )?collected"  # pytest
    r"|ran 0 tests?"  # unittest
    r"|0 tests? (?:run|ran|executed|passed|collected)"
    r"|tests run: 0\b"  # JUnit / Maven Surefire
    r"|running 0 tests?"  # cargo test
    r"|0 examples, 0 failures"  # RSpec
    r"|no tests found"  # jest, go test
    r"|executed 0 of 0"  # karma
    r")",
    re.IGNORECASE,
)
_SOMETHING_RAN = re.compile(
    r"\b[1-9]\d* (?:passed|failed|errors?|tests?|examples?|skipped|xfailed|xpassed)\b"
    r"|\bran [1-9]\d* tests?\b|\btests run: [1-9]",
    re.IGNORECASE,
)


def empty_test_run(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test-run log or report that claims success while nothing ran: `0 passed`,
    `no tests collected`, `collected 0 items`, `Ran 0 tests … OK`, `Tests run: 0`,
    `running 0 tests`, `No tests found`. A log that reports any test that ran (passed,
    failed or skipped) is not flagged.

    ## Why it matters
    "The tests pass" is the claim agents most often make, and a run that collected
    nothing exits 0 in several runners. referee's own CI treats pytest's "no tests
    collected" (exit code 5) as a failure for the same reason.

    ## Example
    ```text
    $ python run_tests.py
    exit_code=0, stdout: '0 passed in 0.00s (no tests collected)'
    ```

    ## Use instead
    Make the runner find the tests (check `testpaths`, file names, `-k` filters), and
    report the run that executed them.
    """
    source = ctx.source
    if _SOMETHING_RAN.search(source.text):
        return
    for row, line in enumerate(source.text.splitlines()):
        match = _NOTHING_RAN.search(line)
        if match:
            yield Violation(
                span=source.line_span(row),
                message=f"test run claims success but ran nothing: {match.group(0)!r}",
                evidence=line.strip()[:200],
            )
            return
