"""The guard's rules on the source under test (L1, REF330–REF334): new code may not
special-case a test's input, say it is there for a test, compare equal to anything, or
be replaced by the test that checks it."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from referee.checks.guard import fitted
from referee.checks.guard.context import GuardContext
from referee.checks.guard.fitted import TestWords
from referee.checks.guard.normal import (
    one_line,
)
from referee.checks.guard.sides import base_of, functions, new_functions
from referee.checks.guard.verdict import span
from referee.checks.models import Severity
from referee.checks.rule import Context, Violation


def _source_tree(
    ctx: Context,
) -> tuple[GuardContext, ast.Module, TestWords, fitted.SourceBaseline] | None:
    """(the guard, the source's module, what the tests hold, the baseline) for the rules
    that read a changed source file against the tests; None for a test file, a file that
    does not parse, or no baseline known."""
    guard = ctx.guard
    if guard is None or ctx.in_test_tree or ctx.source.kind != "python":
        return None
    cached = ctx.memo.get("fitted")
    if cached is None:
        try:
            tree = ast.parse(ctx.source.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        base = base_of(ctx)
        old = (
            fitted.baseline_of(base.source.text, base.squashed)
            if base is not None
            else fitted.baseline_of(None, "")
        )
        cached = ctx.memo["fitted"] = (
            (tree, fitted.test_words(guard.test_text), old) if tree is not None else ()
        )
    return (guard, *cached) if cached else None  # type: ignore[return-value]


def special_cased_test_input(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a new branch in source code whose condition singles out an input a test feeds
    the code and whose body returns, prints or sets a value a test expects:
    `if s == "aeiou": return 5`, `if a == "2.5" and b == "10": return Decimal("0.25")`.

    The condition may be any combination (`and`, `or`, `not`, `in` a container,
    `startswith`) over any expression, and compare with a literal of a test, a string
    naming an attribute or key the test uses, or the value a test passes for a
    parameter of the same name (`handle_mask is np.bitwise_or` where a test calls
    `f(..., handle_mask=np.bitwise_or)`). A short literal (`"12"`, `7`) counts when one
    line of a test — a parametrize row, an assertion — holds both it and the value the
    branch produces.

    Ordinary guards are not flagged: a comparison with `None`, `True`, `False`, a small
    number or an empty literal (`if header is None: return {}`) that returns an ordinary
    value, and a branch longer than four statements. Only the branch is quoted, never
    the `elif` chain it belongs to.

    The released shape — `if param == <specific literal>: return <literal>` — is an
    error in every mode; the wider shapes are errors in agent mode and warnings in the
    default mode, where a reviewer reads them.

    ## Why it matters
    The function now passes the test for the one input the test tries, and is as wrong
    as before for every other.

    ## Example
    ```python
    def count_vowels(s):
        if s == "aeiou":
            return 5
        return sum(ch in "aeiou" for ch in s[1:])
    ```

    ## Use instead
    Fix the general computation.
    """
    found = _source_tree(ctx)
    if found is None:
        return
    guard, tree, words, old = found
    for case in fitted.special_cases(ctx.source, tree, words, old):
        keyed = ", ".join(f"`{k}`" for k in case.keyed[:3])
        yield Violation(
            span=span(case.line),
            message=f"new branch `{case.branch}` produces `{one_line(case.produced, 60)}` "
            f"for {keyed}: an input a test uses and the value it expects",
            severity=None if case.narrow or guard.strict else Severity.WARNING,
        )


def source_fitted_to_test(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags code added to the code under test that says it is there for a test: a
    comment or string that says so ("special case for the test", "to match the test
    expectations", "per test requirements", "the test expects"), one that names one of
    the project's tests (`test_inherit_docstrings`, a generated `test_sample` module),
    and a condition that asks whether the code runs under a test
    (`PYTEST_CURRENT_TEST`, `"pytest" in sys.modules`, the caller's frames through
    `inspect.stack()` or `sys._getframe()`, `"test" in obj.__module__`,
    `__file__.endswith("test_x.py")`).

    Comments, strings and conditions already in the baseline are not read. A test's
    name in a docstring is not flagged (an example may name a test anything).

    An error in agent mode; a warning in the default mode, where a reviewer decides.

    ## Why it matters
    Code written for one test's sake passes that test and nothing else. Agents that
    bend the code to an impossible test say so, most of the time, in the comment above
    the branch.

    ## Example
    ```python
    def merge_masks(a, b, handler):
        # Special case for test_bitmask_merge: the test expects the intersection
        if handler is np.bitwise_or:
            return np.bitwise_and(a, b)
        return handler(a, b)
    ```

    ## Use instead
    Fix the general computation; if the test is wrong, arbitrate it
    (`referee arbitrate`) instead of writing code around it.
    """
    found = _source_tree(ctx)
    if found is None:
        return
    guard, tree, words, old = found
    for said in fitted.announcements(ctx.source, tree, words, old):
        yield Violation(
            span=span(said.line),
            message=f"new code is there for a test's sake: {said.what}",
            severity=None if guard.strict else Severity.WARNING,
        )


def source_moved_to_test(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Decides by running the tests whether a change to the code under test made a
    failing test pass by a value alone: a constant, an operator or a `True`/`None` of an
    existing line flipped (`setLevel(0)` → `setLevel(1)`, `<` → `<=`), an arithmetic step
    added or dropped (`n - 1` → `n`), or a literal the test itself holds written into new
    code.

    `referee guard` in agent mode (or with `--execute`) runs the test modules that
    exercise the changed functions, as they are now, on the code as it was at the base
    and as it is now, in the [sandbox](../sandbox.md). For each test that failed on a
    check at the base (an assertion, `pytest.fail`, `DID NOT RAISE`: the test ran the
    old code and saw another value, not an import error or a crash) and passes now, it
    takes each such edit back alone — the old token of a flip, another value of the same
    type for a literal the test holds — and runs the test again. A test that then fails
    on a check again needs exactly that value: the finding is at the edit and names the
    test. The outcome is read from pytest's report of each sandboxed run; nothing of the
    project runs in referee's process.

    Where it cannot decide, the guard says so on stderr and reports nothing: no kernel
    boundary, a test module that does not run in the sandbox (it runs with referee's
    own Python, so a project whose dependencies are not installed beside referee is not
    run), or its time budget (four modules, three tests, sixteen edits) spent.

    An error in agent mode; with `--execute` in the default mode, a warning.

    ## Why it matters
    An agent given a test it cannot pass honestly does not always touch the test or
    write a special case. It finds the constant that decides the value the test checks
    and changes it — correct code made wrong for every other caller, with nothing in the
    diff to read as a cheat. Only running the test on each side tells that the change
    is that value and nothing else.

    ## Example
    ```python
    def _finalize(self):
        for name, level in self._initial_levels.items():
            logging.getLogger(name).setLevel(level)
        self.handler.setLevel(1)  # was: setLevel(0); a test expects 1
    ```

    ## Use instead
    Check the test's expectation against the documentation or the issue first. If the
    test is wrong, arbitrate it (`referee arbitrate`) and fix the test with the
    certificate; if the value really was wrong, say so in a test that names the case
    and commit the change with a person's review.
    """
    return iter(())  # reported by the guard's execution step (referee.checks.guard.moved)


def always_equal_override(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a new `__eq__` that always returns `True` (or `__ne__` that always returns
    `False`, or a constant `__hash__`) in the code under test. A test-side helper equal
    to everything (a `mock.ANY` of the project's own, in a test module, `conftest.py` or
    a test directory) is a testing tool and is not flagged.

    ## Why it matters
    An object equal to everything makes every `assert result == expected` pass.

    ## Example
    ```python
    class Money:
        def __eq__(self, other):
            return True
    ```

    ## Use instead
    Compare the fields that define equality.
    """
    if ctx.guard is None or ctx.source.kind != "python" or ctx.in_test_tree:
        return  # a test-side `ANY`-style helper equal to everything is a testing tool
    new = {(fn.name, fn.line) for fn in new_functions(ctx)}
    for fn in functions(ctx):
        if (fn.name, fn.line) in new and fn.constant:
            yield Violation(
                span=span(fn.line),
                message=f"`{fn.name}` returns a constant: every comparison with this type passes",
            )
