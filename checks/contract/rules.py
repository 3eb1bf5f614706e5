"""L1 contracts: what a file matched by a glob in ``[[tool.referee.contract]]`` must hold
(REF201–REF209). Each check is its own rule, so each can be selected, ignored, given a
severity, or suppressed."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from referee.checks.configuration import Contract
from referee.checks.models import Span
from referee.checks.pymodule import PythonModule
from referee.checks.rule import Context, Violation


def _whole_file(ctx: Context) -> Span:
    return ctx.source.line_span(0)


def _where(contract: Contract) -> str:
    return f"contract for {', '.join(contract.globs)}"


def _at_least(
    ctx: Context,
    minimum: Callable[[Contract], int | None],
    size: Callable[[], int],
    unit: str,
) -> Iterator[Violation]:
    """The file against each contract's ``minimum`` of a size (lines, characters, tests):
    one violation per contract it falls short of. ``size`` is counted only when some
    contract sets a minimum."""
    limits = [(c, least) for c in ctx.contracts if (least := minimum(c)) is not None]
    if not limits:
        return
    count = size()
    for contract, least in limits:
        if count < least:
            yield Violation(
                span=_whole_file(ctx),
                message=f"{count} {unit}; the {_where(contract)} requires at least {least}",
            )


def contract_min_lines(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a file with fewer non-blank lines than its contract's `min-lines`.

    ## Why it matters
    A contract states the least a deliverable must be. A three-line "design document"
    does not meet the task however good the three lines are.

    ## Example
    ```toml
    [[tool.referee.contract]]
    glob = "docs/design/*.md"
    min-lines = 20
    ```
    A `docs/design/cache.md` of four lines is flagged.

    ## Use instead
    Write the document the contract asks for, or lower the contract if it is wrong.
    """
    yield from _at_least(
        ctx,
        lambda c: c.min_lines,
        lambda: sum(1 for line in ctx.source.text.splitlines() if line.strip()),
        "non-blank line(s)",
    )


def contract_min_chars(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a file shorter than its contract's `min-chars`, counting every character of
    the text with leading and trailing whitespace removed (a CJK character counts as
    one).

    ## Why it matters
    Length is the cheapest signal that an output is a real answer and not a shrug:
    "I could not do it." is 18 characters.

    ## Example
    ```toml
    [[tool.referee.contract]]
    glob = "out/summary.md"
    min-chars = 80
    ```

    ## Use instead
    Produce the full content, or lower the contract if it is wrong.
    """
    yield from _at_least(
        ctx, lambda c: c.min_chars, lambda: len(ctx.source.text.strip()), "character(s)"
    )


def contract_keywords(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a file that contains too few of its contract's `required-keywords`
    (case-insensitive substring match). By default every keyword must occur;
    `min-keywords = N` asks for at least N of them, `min-keyword-ratio = 0.5` for at
    least that share of them, rounded up (0.5 of 5 keywords is 3).

    ## Why it matters
    An answer about a topic uses the topic's words. An output that mentions none of
    them is off-topic, whatever its length.

    ## Example
    ```toml
    [[tool.referee.contract]]
    glob = "out/brief.md"
    required-keywords = ["loop", "engine", "ReAct", "agent"]
    min-keywords = 2
    ```

    ## Use instead
    Answer the task that was asked.
    """
    if not any(c.required_keywords for c in ctx.contracts):
        return
    text = ctx.source.text.casefold()
    for contract in ctx.contracts:
        keywords = contract.required_keywords
        if not keywords:
            continue
        found = [k for k in keywords if k.casefold() in text]
        needed = contract.keywords_needed()
        if len(found) < needed:
            missing = [k for k in keywords if k not in found]
            yield Violation(
                span=_whole_file(ctx),
                message=f"{len(found)} of {len(keywords)} required keywords found, "
                f"{needed} needed ({_where(contract)}); missing: {', '.join(missing)}",
            )


def contract_forbidden_word(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags each line that contains one of the contract's `forbidden-words`
    (case-insensitive).

    ## Why it matters
    Some words are reliable tells of unfinished or evasive output: "lorem ipsum",
    "as an AI", "I cannot", "placeholder", "mock data".

    ## Example
    ```toml
    [[tool.referee.contract]]
    glob = "docs/**/*.md"
    forbidden-words = ["lorem ipsum", "as an AI language model"]
    ```

    ## Use instead
    Replace the text with real content.
    """
    if not any(c.forbidden_words for c in ctx.contracts):
        return
    lines = ctx.source.text.splitlines()
    for contract in ctx.contracts:
        for word in contract.forbidden_words:
            needle = word.casefold()
            for row, line in enumerate(lines):
                if needle in line.casefold():
                    yield Violation(
                        span=ctx.source.line_span(row),
                        message=f"forbidden word {word!r} ({_where(contract)})",
                        evidence=line.strip()[:200],
                    )


_ATX = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")


def headings(text: str) -> list[str]:
    """Markdown headings (ATX ``# Title`` and setext ``Title\\n=====``), stripped."""
    found = []
    lines = text.splitlines()
    fence = ""
    for index, line in enumerate(lines):
        opening = _FENCE.match(line)
        if opening and (not fence or opening.group(1).startswith(fence)):
            fence = "" if fence else opening.group(1)
            continue
        if fence:
            continue  # "# comment" in a code block is not a heading
        match = _ATX.match(line)
        if match:
            found.append(match.group(1).strip())
        elif index > 0 and lines[index - 1].strip() and _SETEXT.match(line):
            found.append(lines[index - 1].strip())
    return found


def contract_required_heading(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags each heading in the contract's `required-headings` that the Markdown document
    does not have (compared case-insensitively, ignoring surrounding whitespace).

    ## Why it matters
    A required section that is missing is a part of the task that was not done: a
    README without "Usage", a design note without "Alternatives".

    ## Example
    ```toml
    [[tool.referee.contract]]
    glob = "README.md"
    required-headings = ["Install", "Usage"]
    ```

    ## Use instead
    Write the missing section.
    """
    if not any(c.required_headings for c in ctx.contracts):
        return
    present = {h.casefold() for h in headings(ctx.source.text)}
    for contract in ctx.contracts:
        for heading in contract.required_headings:
            if heading.strip().casefold() not in present:
                yield Violation(
                    span=_whole_file(ctx),
                    message=f"missing heading {heading!r} ({_where(contract)})",
                )


def contract_expect_heading(ctx: Context) -> Iterator[Violation]:
    """## What it does
    With `expect-heading = true`, flags a document that has no Markdown heading at all.

    ## Why it matters
    Structured deliverables (briefs, chapters, reports) start with a title; a wall of
    text where a document was asked for is a weak answer. Many teams treat this as a
    soft signal: give it `severity = { REF206 = "warning" }`.

    ## Example
    ```toml
    [[tool.referee.contract]]
    glob = "chapters/*.md"
    expect-heading = true
    ```

    ## Use instead
    ```markdown
    # Chapter 1: The loop engine
    ```
    """
    if not any(contract.expect_heading for contract in ctx.contracts):
        return
    if not headings(ctx.source.text):
        contract = next(c for c in ctx.contracts if c.expect_heading)
        yield Violation(
            span=_whole_file(ctx),
            message=f"document has no heading ({_where(contract)} expects one)",
        )


def _top_level_symbols(ctx: Context) -> set[str]:
    module = ctx.module
    symbols = {fn.name for fn in module.functions if fn.parent is None and fn.class_ is None}
    for cls in module.classes:
        if cls.nested:
            continue
        symbols.add(cls.name)
        symbols.update(f"{cls.name}.{fn.name}" for fn in module.functions if fn.class_ is cls)
    root = ctx.source.tree.root_node
    for stmt in root.named_children:
        target = (
            stmt.named_children[0]
            if stmt.type == "expression_statement" and (stmt.named_children)
            else None
        )
        if target is not None and target.type == "assignment":
            left = target.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                symbols.add(ctx.source.node_text(left))
    return symbols


def contract_required_symbol(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags each name in the contract's `required-symbols` that the Python module does not
    define at the top level: a function, a class, a `Class.method`, or a module-level
    assignment.

    ## Why it matters
    "Add `parse_config` to `settings.py`" is not done if `settings.py` defines
    `load_config`: callers and tests written against the task will fail to import.

    ## Example
    ```toml
    [[tool.referee.contract]]
    glob = "src/app/settings.py"
    required-symbols = ["parse_config", "Settings.from_env"]
    ```

    ## Use instead
    Define the symbols the task named.
    """
    if ctx.source.kind != "python":
        return
    wanted = [s for contract in ctx.contracts for s in contract.required_symbols]
    if not wanted:
        return
    present = _top_level_symbols(ctx)
    for contract in ctx.contracts:
        for symbol in contract.required_symbols:
            if symbol not in present:
                yield Violation(
                    span=_whole_file(ctx),
                    message=f"missing top-level symbol `{symbol}` ({_where(contract)})",
                )


def contract_min_tests(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a Python file with fewer tests than its contract's `min-tests`. Tests are
    counted as in a test module, whatever the file's name: `test*` functions and
    methods (only methods in a module that imports `unittest` and not `pytest`).

    ## Why it matters
    "Add tests for the parser" answered with one test is a fig leaf. The count is a
    floor, not a measure of quality — the L0 rules and the judge look at what each test
    checks.

    ## Example
    ```toml
    [[tool.referee.contract]]
    glob = "tests/test_parser.py"
    min-tests = 5
    ```

    ## Use instead
    Write the tests the task asked for.
    """
    if ctx.source.kind != "python":
        return

    def tests() -> int:
        module = ctx.module if ctx.is_test_file else PythonModule(ctx.source, is_test_file=True)
        return len(module.tests)

    yield from _at_least(ctx, lambda c: c.min_tests, tests, "test(s)")


# A test runner's way of saying that something failed. Each needs a count above zero or a
# runner's failure marker, so "0 failed" and "failures=0" are not failures. Counts are
# matched in any case; the markers only in the capitals runners print them in, so that a
# line of prose starting "Fail" is not one.
_RUN_FAILED = re.compile(
    r"(?i:(?<![\w.])[1-9]\d*\s+(?:failed|failing|failures?|errors?)\b)"  # pytest, jest, rspec
    r"|(?i:\b(?:failures|errors|failed)\s*[:=]\s*[1-9])"  # unittest, JUnit/Maven
    r"|\btest result:\s*FAILED\b"  # cargo test
    r"|^\s*(?:---\s+)?FAIL\b"  # go test, jest
    r"|\bFAILED\s+\S+::\S+"  # pytest's short summary: FAILED tests/test_x.py::test_y
    r"|\bBUILD FAILURE\b",  # Maven
    re.MULTILINE,
)
# A process that exited with a status other than zero.
_NONZERO_EXIT = re.compile(
    r"\b(?:exit|return)[ _-]?(?:code|status)\s*[=:]?\s*(?:-\s*)?[1-9]\d*\b"
    r"|\bexited with (?:code|status)\s+(?:-\s*)?[1-9]\d*\b",
    re.IGNORECASE,
)


def contract_tests_failed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    With `tests-pass = true`, flags a test-run report that shows a failure: a count of
    failed tests or errors above zero (`1 failed`, `Tests: 2 failed`, `5 examples,
    1 failure`, `FAILED (failures=1)`, `Failures: 1`), a runner's failure marker
    (`test result: FAILED`, go's `--- FAIL`, `BUILD FAILURE`), or a process that exited
    with a status other than zero (`exit_code=1`, `exited with code 2`). The first line
    that shows one is reported. Counts of zero (`0 failed`, `Errors: 0`) are not
    failures, and a report with no test summary at all is left to the other checks.

    ## Why it matters
    "Run the tests and make sure they pass" answered with a log of a failing run is the
    task not done, however much else the log says. Agents report such runs as success:
    the log has the words a keyword check looks for (`pass`, `exit_code`), and a model
    reading "3 passed" may stop before ", 1 failed". A run that collected nothing is
    [empty-test-run](empty-test-run.md) (REF130).

    ## Example
    ```toml
    [[tool.referee.contract]]
    glob = "reports/test-run.md"
    tests-pass = true
    ```
    ```text
    $ python run_tests.py
    exit_code=1, stdout: '3 passed, 1 failed'
    ```

    ## Use instead
    Fix the failing test or the code under test, run the suite again, and report the run
    that passed.
    """
    if not any(c.tests_pass for c in ctx.contracts):
        return
    contract = next(c for c in ctx.contracts if c.tests_pass)
    for row, line in enumerate(ctx.source.text.splitlines()):
        match = _RUN_FAILED.search(line) or _NONZERO_EXIT.search(line)
        if match:
            yield Violation(
                span=ctx.source.line_span(row),
                message=f"test run shows a failure: {match.group(0).strip()!r} "
                f"(the {_where(contract)} requires passing tests)",
                evidence=line.strip()[:200],
            )
            return
