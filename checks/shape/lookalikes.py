"""Calls and comparisons in a test that look like checks and check nothing: a mock
assertion misspelt (REF115), a comparison computed and thrown away (REF116)."""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from referee.checks.models import Edit, Fix
from referee.checks.nodes import (
    excerpt,
)
from referee.checks.pymodule import Function
from referee.checks.rule import Context, Violation
from referee.checks.source import SourceFile

# The lookalikes that have a real assertion of the same meaning on Mock / AsyncMock.
_MOCK_ASSERTIONS = {
    name: f"assert_{name}"
    for name in (
        "called_once_with",
        "called_with",
        "called_once",
        "has_calls",
        "any_call",
        "not_called",
        "awaited_once_with",
        "awaited_with",
        "awaited_once",
        "not_awaited",
        "has_awaits",
        "any_await",
    )
}
# Attribute names that look like mock assertions but are auto-created attributes: calling
# one returns a new (truthy) Mock and checks nothing.
_MOCK_LOOKALIKES = frozenset(_MOCK_ASSERTIONS) | {
    "has_been_called",
    "has_been_called_with",
    "called_once_with_args",
}


def mock_assertion_lookalike(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags calls inside a function such as `mock.called_once_with(x)`,
    `mock.has_calls([...])` or `assert mock.not_called()`: names that read like mock
    assertions but are not methods of `Mock`. A `Mock` creates any attribute on first
    access, so the call returns a new, truthy `Mock` and checks nothing. (Misspellings
    that start with `assert`/`assret` are safe: `Mock` raises `AttributeError` for
    those.)

    When the call stands as a statement, the fix prefixes the name with `assert_`
    (`called_once_with` → `assert_called_once_with`).

    ## Why it matters
    The test reads as if it verified the interaction, and passes however the mock was
    used.

    ## Example
    ```python
    sender.send.called_once_with("hello")
    ```

    ## Use instead
    ```python
    sender.send.assert_called_once_with("hello")
    ```
    """
    source = ctx.source
    for fn in ctx.module.functions:
        for name, call in fn.calls:
            if name not in _MOCK_LOOKALIKES:
                continue
            callee = call.child_by_field_name("function")
            if callee is None or callee.type != "attribute":
                continue
            parent = call.parent
            standalone = parent is not None and parent.type == "expression_statement"
            in_assert = parent is not None and parent.type == "assert_statement"
            if not (standalone or in_assert):
                continue
            fix = None
            attr = callee.child_by_field_name("attribute")
            real = _MOCK_ASSERTIONS.get(name)
            if standalone and attr is not None and real is not None:
                # Unsafe: the test starts checking, and may start failing.
                fix = Fix(
                    message=f"Call `{real}`",
                    edits=(Edit(span=source.node_span(attr), content=real),),
                    applicability="unsafe",
                )
            advice = f"use `{real}`" if real else "use one of Mock's assert_* methods"
            yield Violation(
                span=source.node_span(call),
                message=f"`{name}` is not a Mock assertion: the call returns a truthy Mock; "
                f"{advice}",
                evidence=source.node_text(call),
                fix=fix,
            )


def comparison_statement(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a comparison that stands as a statement in a test: `result == 3` with no
    `assert` before it (ruff's B015, `useless-comparison`). Its value is computed and
    thrown away.

    Left alone: a comparison inside `with` (`with pytest.raises(TypeError): a < b`) or
    `try`, one followed by an assertion in the test (which checks what the comparison
    did: the `__eq__` it called, the log it wrote), one with a comment on its line
    (`d1 == d2  # used to crash`), and every comparison in a test that defines a class
    (a test of the comparison protocols themselves).

    ## Why it matters
    The line reads like a check and checks nothing: the test passes whatever `result`
    is. It is almost always an `assert` that was left out.

    ## Example
    ```python
    def test_style():
        console.get_style("bold") == Style(bold=True)
    ```

    ## Use instead
    ```python
    def test_style():
        assert console.get_style("bold") == Style(bold=True)
    ```
    """
    source = ctx.source
    module = ctx.module
    for fn in module.tests:
        comparisons = discarded_comparisons(fn)
        if not comparisons or _defines_a_class(fn):
            continue  # a test of comparison protocols (`__eq__`, `__contains__`) compares
        checks = module.assertion_nodes(fn)
        for node in comparisons:
            if _commented(source, node) or any(c.start_byte > node.end_byte for c in checks):
                continue  # made for what it does: a crash it must not cause, a call it logs
            yield Violation(
                span=source.node_span(node),
                message=f"`{excerpt(source.node_text(node))}` is computed and thrown away: "
                "did you mean `assert`?",
                evidence=source.node_text(node),
                fix=Fix(
                    message="Assert the comparison",
                    edits=(
                        Edit(
                            span=source.node_span(node), content="assert " + source.node_text(node)
                        ),
                    ),
                    applicability="unsafe",
                ),
            )


_NOT_DISCARDED = frozenset(
    {
        "function_definition",
        "class_definition",
        "decorated_definition",
        "with_statement",
        "try_statement",
    }
)


def _defines_a_class(fn: Function) -> bool:
    stack = list(fn.body.named_children)
    while stack:
        node = stack.pop()
        if node.type == "class_definition":
            return True
        if node.type != "function_definition":
            stack.extend(node.named_children)
    return False


def _commented(source: SourceFile, node: Node) -> bool:
    """A comment follows the statement on its line: the author says why it is there."""
    sibling = node.next_sibling
    return (
        sibling is not None
        and sibling.type == "comment"
        and sibling.start_point.row == node.end_point.row
    )


def discarded_comparisons(fn: Function) -> list[Node]:
    """Expression statements of ``fn``'s body (not of functions nested in it) that are
    one comparison. Not inside a ``with`` or a ``try``: there the comparison is made
    for the exception it raises (``with pytest.raises(TypeError): a < b``). Computed
    once per function: two rules ask."""
    cached = fn.__dict__.get("_discarded")
    if cached is None:
        cached = fn.__dict__["_discarded"] = _find_discarded(fn)
    return cached  # type: ignore[no-any-return]


def _find_discarded(fn: Function) -> list[Node]:
    found = []
    stack = list(fn.body.named_children)
    while stack:
        node = stack.pop()
        if node.type in _NOT_DISCARDED:
            continue
        if node.type == "expression_statement":
            if node.named_child_count == 1 and node.named_children[0].type == "comparison_operator":
                found.append(node)
            continue
        stack.extend(node.named_children)
    return sorted(found, key=lambda n: n.start_byte)
