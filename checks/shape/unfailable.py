"""Tests that can never fail, and skips that do not say why (REF120, REF121)."""

from __future__ import annotations

from collections.abc import Iterator

from tree_sitter import Node

from referee.checks.models import Severity
from referee.checks.nodes import (
    CATCHES_FAILURES,
    call_arguments,
    excerpt,
    handler_swallows,
    keyword_argument,
    string_value,
)
from referee.checks.pymodule import Function, callee_parts
from referee.checks.rule import Context, Violation
from referee.checks.source import SourceFile


def _keeps_failure(name: str) -> bool:
    """A call in an ``except`` body that fails, skips or ends the test all the same."""
    return name.startswith(("assert", "fail", "skip")) or name in ("exit", "_exit")


def _swallowing_try(source: SourceFile, node: Node, fn: Node) -> Node | None:
    """The ``try`` inside ``fn`` whose handler silently catches a failure raised at
    ``node``, if any."""
    child, parent = node, node.parent
    while parent is not None and parent != fn:
        if parent.type == "try_statement" and parent.child_by_field_name("body") == child:
            for handler in parent.named_children:
                if handler.type != "except_clause":
                    continue
                if handler_swallows(source, handler, _keeps_failure):
                    return parent
        if parent.type == "with_statement" and "suppress(" in source.node_text(
            parent.named_children[0]
        ):
            text = source.node_text(parent.named_children[0])
            if any(name in text for name in CATCHES_FAILURES):
                return parent
        child, parent = parent, parent.parent
    return None


def _first_return(fn: Function) -> Node | None:
    for stmt in fn.statements:
        if stmt.type == "return_statement":
            return stmt
    return None


def unfailable_test(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test whose every assertion is unreachable or silenced: each one sits inside a
    `try` whose `except` (bare, `Exception`, `BaseException` or `AssertionError`) does not
    raise again, assert, fail, skip or exit, or inside `contextlib.suppress(...)` of those, or
    comes after a `return` statement at the top level of the test's body. A handler that
    uses the exception it caught (`except Exception as exc: future.set_exception(exc)`)
    hands the failure on and does not swallow it.

    ## Why it matters
    The test has assertions, so it passes review and `test-without-assertion`, but no
    outcome of the code under test can make it fail. Swallowing the failure is the
    classic way to turn a red test green without fixing anything.

    ## Example
    ```python
    def test_total():
        try:
            assert total([1, 2]) == 3
        except AssertionError:
            pass
    ```

    ## Use instead
    ```python
    def test_total():
        assert total([1, 2]) == 3
    ```
    """
    source = ctx.source
    module = ctx.module
    for fn in module.tests:
        nodes = module.assertion_nodes(fn)
        if not nodes:
            continue
        early = _first_return(fn)
        reasons = []
        for node in nodes:
            if early is not None and node.start_byte > early.end_byte:
                line = early.start_point.row + 1
                reasons.append(f"after the unconditional `return` on line {line}")
                continue
            guard = _swallowing_try(source, node, fn.node)
            if guard is None:
                break
            reasons.append(
                f"inside the `{guard.type.split('_')[0]}` on line "
                f"{guard.start_point.row + 1}, which swallows failures"
            )
        else:
            name = fn.node.child_by_field_name("name") or fn.node
            where = "; ".join(dict.fromkeys(reasons))
            yield Violation(
                span=source.node_span(name),
                message=f"test `{fn.name}` can never fail: its assertions are {where}",
                evidence=source.node_text(fn.node)[:400],
            )


def _is_skip_marker(name: str) -> bool:
    return name in ("pytest.mark.skip", "mark.skip", "unittest.skip", "skip")


def _empty_reason(source: SourceFile, call: Node | None) -> bool:
    """True when a skip call gives no reason, or an empty one."""
    if call is None:
        return True
    reason = keyword_argument(source, call, "reason") or keyword_argument(source, call, "msg")
    if reason is None:
        args = call_arguments(call)
        reason = args[0] if args else None
    if reason is None:
        return True
    value = string_value(source, reason)
    return value is not None and not value.strip()


def skip_without_reason(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an unconditional skip that gives no reason: `@pytest.mark.skip` or
    `@unittest.skip("")` on a test or a class, and `pytest.skip()`,
    `self.skipTest("")` or `raise unittest.SkipTest` as a top-level statement of a test.
    Conditional skips (`skipif`, `skipUnless`, a skip inside an `if`) are not flagged.

    ## Why it matters
    A skipped test is a test that no longer runs. Without a reason nobody can tell
    whether it was parked for a known bug or silenced because it was failing.

    ## Example
    ```python
    @pytest.mark.skip
    def test_unicode_names(): ...
    ```

    ## Use instead
    ```python
    @pytest.mark.skip(reason="parser drops combining marks, issue #31")
    def test_unicode_names(): ...
    ```
    """
    source = ctx.source
    module = ctx.module
    definitions = [fn.node for fn in module.tests] + [
        cls.node for cls in module.classes if not cls.nested
    ]
    for definition in definitions:
        parent = definition.parent
        if parent is None or parent.type != "decorated_definition":
            continue
        for decorator in parent.named_children:
            if decorator.type != "decorator" or not decorator.named_children:
                continue
            expr = decorator.named_children[0]
            call = expr if expr.type == "call" else None
            target = expr.child_by_field_name("function") if call is not None else expr
            if target is None or not _is_skip_marker(source.node_text(target)):
                continue
            if _empty_reason(source, call):
                yield Violation(
                    span=source.node_span(decorator),
                    message=f"`{excerpt(source.node_text(decorator))}` skips unconditionally "
                    "without a reason",
                    evidence=source.node_text(decorator),
                )
    for fn in module.tests:
        for stmt in fn.statements:
            call = _skip_statement(source, stmt)
            if call is not False and _empty_reason(source, call):
                yield Violation(
                    span=source.node_span(stmt),
                    message=f"test `{fn.name}` is skipped unconditionally without a reason",
                    evidence=source.node_text(stmt),
                    severity=Severity.WARNING,
                )


def _skip_statement(source: SourceFile, stmt: Node) -> Node | bool | None:
    """The skip call of a statement (None for a bare ``raise SkipTest``), or False."""
    if stmt.type == "raise_statement":
        exc = stmt.named_children[0] if stmt.named_children else None
        if exc is None:
            return False
        target = exc.child_by_field_name("function") if exc.type == "call" else exc
        if target is not None and source.node_text(target).rsplit(".", 1)[-1] == "SkipTest":
            return exc if exc.type == "call" else None
        return False
    if stmt.type == "expression_statement" and stmt.named_children:
        call = stmt.named_children[0]
        if call.type == "call":
            callee = call.child_by_field_name("function")
            if callee is not None:
                receiver, name = callee_parts(source, callee)
                if (receiver, name) in (("pytest", "skip"), ("self", "skipTest")):
                    return call
    return False
