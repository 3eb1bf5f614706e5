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
from referee.checks.shape.markup import (
    BLANKED,
    OUTPUT_LANGUAGES,
    Line,
    document_lines,
    markup_of,
    unquoted_prose,
    without_quotations,
)

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
# What marks a line of a document as a run's output rather than a sentence about one: a
# duration, an exit status, a stream's name, a runner's banner or result line, a prompt.
_RUN_OUTPUT = re.compile(
    r"\b\d+(?:\.\d+)?\s?(?:s|ms|sec|secs|seconds)\b"  # "in 0.01s"
    r"|\b(?:exit[ _-]?(?:code|status)|return[ _-]?code|rc)\s*[=:]\s*-?\d"
    r"|\b(?:stdout|stderr)\s*[=:]"
    r"|={3,}"  # pytest's banners
    r"|^\s*(?:\$|>>>|PS [^>]*>)\s"  # a shell or Python prompt
    r"|\btest result:|\bBUILD (?:SUCCESS|FAILURE)\b"
    r"|\b(?:failures|errors|skipped|failed|ignored|measured)\s*:\s*\d"
    r"|\b\d+ (?:failed|errors?|skipped|ignored|measured|filtered out)\b",
    re.IGNORECASE,
)
_LIST_LEAD = re.compile(r"^\s*(?:(?:[-*+>|]|\d+[.)])\s*)*")
# A Markdown heading, a line of nothing but bold text (a heading by another name), or a
# reStructuredText title's underline.
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s|^\s*(\*\*|__)\S.*\1\s*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")


def _is_heading(lines: list[Line], index: int) -> bool:
    following = lines[index + 1].text if index + 1 < len(lines) else ""
    return bool(_HEADING.match(lines[index].text) or _RST_UNDERLINE.match(following))


_LABEL = re.compile(r"^.*(?:[:：=→]|=>|->)[\s*_~]*$")


def _alone(bare: str, match: re.Match[str]) -> bool:
    """Whether the phrase is all the line says, or all it says after a label ("Tests:
    0 passed", "Result → no tests ran"): list and quote marks, table bars and punctuation
    aside (a blanked-out quotation is something said)."""
    before = _LIST_LEAD.sub("", bare[: match.start()])
    if _LABEL.match(before):
        before = ""
    rest = before + bare[match.end() :]
    return not any(ch.isalnum() or ch == BLANKED for ch in rest)


def _run_output(text: str, markup: str | None) -> list[tuple[int, str]]:
    """``(row, line)`` for each line of the document that is a test run's output.

    A plain-text file (a log, a task's output) is output throughout. In Markdown and
    reStructuredText, a line of a code block is output when the block shows output (a
    console session, a log, plain text, no language) and the line says the phrase itself
    or says it in quotes beside a run's marks (an exit code, a duration): a linter's
    message quoting `'0 passed'` is not a run. A line of prose is output only when it
    bears a run's marks outside any quotation or inline code, or is the phrase alone or
    after a label; a sentence, heading or table row that quotes the phrase is not.
    """
    lines = document_lines(text, markup)
    if markup is None:
        return [(line.row, line.text) for line in lines]
    unquoted = unquoted_prose(lines, markup)
    out = []
    for index, line in enumerate(lines):
        match = _NOTHING_RAN.search(line.text)
        if match is None and not _SOMETHING_RAN.search(line.text):
            continue
        if line.is_code:
            if line.language not in OUTPUT_LANGUAGES:
                continue  # source code: the phrase is in a string or a comment
            bare = without_quotations(line.text)
            if _NOTHING_RAN.search(bare) or _RUN_OUTPUT.search(bare) or match is None:
                out.append((line.row, line.text))
            continue
        bare = unquoted[index]
        said = _NOTHING_RAN.search(bare)
        alone = said is not None and _alone(bare, said) and not _is_heading(lines, index)
        if alone or _RUN_OUTPUT.search(bare):
            out.append((line.row, line.text))
    return out


def empty_test_run(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test run's output that claims success while nothing ran: `0 passed`,
    `no tests collected`, `collected 0 items`, `Ran 0 tests … OK`, `Tests run: 0`,
    `running 0 tests`, `No tests found`. Output that reports any test that ran (passed,
    failed or skipped) is not flagged.

    Output is the whole of a plain-text file (a log, a task's report). In Markdown and
    reStructuredText it is a code block that shows output — `console`, `text`, `log`, a
    shell, no language, a `::` literal block — and a line of prose that bears a run's
    marks (an exit code, a duration, `stdout:`, a runner's banner or result line) or says
    the phrase alone or after a label (`Tests: 0 passed`). A sentence, heading or table
    row that quotes the phrase, a block of source code (`python`, `toml`, ...), and a
    line that has the phrase only in quotation marks beside no run's marks (a linter's
    message ending `'0 passed'`) are not output.

    ## Why it matters
    "The tests pass" is the claim agents most often make, and a run that collected
    nothing exits 0 in several runners. referee's own CI treats pytest's "no tests
    collected" (exit code 5) as a failure for the same reason.

    ## Example
    A task's report, `reports/test-run.md`:
    ```text referee: ignore[REF130]
    $ python run_tests.py
    exit_code=0, stdout: '0 passed in 0.00s (no tests collected)'
    ```
    The `referee: ignore[REF130]` after the fence's language keeps this page's own example
    from failing referee's check of its docs (see Configuration below). Not flagged: "pytest
    exits with status 5 when `no tests ran`", or `| REF130 | a log that claims "0 passed" |`.

    ## Use instead
    Make the runner find the tests (check `testpaths`, file names, `-k` filters), and
    report the run that executed them.
    """
    source = ctx.source
    output = _run_output(source.text, markup_of(source.path))
    if any(_SOMETHING_RAN.search(line) for _, line in output):
        return
    for row, line in output:
        match = _NOTHING_RAN.search(line)
        if match:
            yield Violation(
                span=source.line_span(row),
                message=f"test run claims success but ran nothing: {match.group(0)!r}",
                evidence=line.strip()[:200],
            )
            return
