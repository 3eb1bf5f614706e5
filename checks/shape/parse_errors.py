"""Files Python itself refuses to compile (REF001)."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator

from referee.checks.models import Location, Span
from referee.checks.rule import Context, Violation


def syntax_error(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Reports a Python file that does not compile, with CPython's own message and location.

    referee parses with tree-sitter, which recovers from errors; when tree-sitter reports
    one — or the tree holds something Python 3 rejects that tree-sitter accepts (a Python 2
    `print` or `exec` statement, a `def` or `class` with no body) — referee asks CPython's
    parser (`ast.parse`) to confirm it, so a construct the tree-sitter grammar does not
    know yet is never reported as your error. The other rules still run on the parts of
    the file that parse.

    Limitations: errors tree-sitter recovers from silently and that leave no such trace
    (an unexpected indent, too deeply nested brackets) are not reported, and neither are
    errors only the full compiler raises after parsing (a misplaced or unknown
    `from __future__ import`, `return` outside a function). A compiler, ruff, or your
    test run reports those.

    ## Why it matters
    Code that does not compile cannot have been tested, whatever the report says.

    ## Example
    ```python
    def total(items)
        return sum(items)
    ```

    ## Use instead
    ```python
    def total(items):
        return sum(items)
    ```
    """
    source = ctx.source
    if not source.tree.root_node.has_error and not ctx.module.suspicious:
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(source.text, filename=source.path, feature_version=None)
    except SyntaxError as exc:
        line = max(exc.lineno or 1, 1)
        column = max(exc.offset or 1, 1)
        start = Location(line=line, column=column)
        yield Violation(
            span=Span(start=start, end=start),
            message=f"syntax error: {exc.msg}",
            evidence=(exc.text or "").rstrip("\n") or None,
        )
    except (ValueError, RecursionError, MemoryError) as exc:
        start = Location(line=1, column=1)
        yield Violation(span=Span(start=start, end=start), message=f"cannot compile: {exc}")
