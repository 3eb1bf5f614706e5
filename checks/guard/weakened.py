"""The anti-gaming guard's comparison with the baseline (L1, REF300–REF314): a test that
asserted something at the baseline (git HEAD, or ``--base``) may not quietly assert
less now.

Each rule compares facts (checks/guard/facts.py), never text, so reformatting, moving
and renaming are not flagged. An expected value may change only with a certificate from
arbitration; a certified change is reported as information."""

from __future__ import annotations

import ast
import functools
import operator
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from referee.checks.guard import codes
from referee.checks.guard.changed_tests import (
    compare_test,
    elsewhere_keys,
    missing_test,
    relaxations_changed,
)
from referee.checks.guard.facts import Relaxation, TestFacts, module_relaxations
from referee.checks.guard.normal import (
    statement_key,
)
from referee.checks.guard.sides import base_of, current_of, functions
from referee.checks.guard.verdict import Found, relaxed, span
from referee.checks.models import Severity
from referee.checks.rule import Context, Violation


def _facts(ctx: Context) -> tuple[dict[str, TestFacts], dict[str, TestFacts]]:
    """(baseline, current) facts of the file's tests, computed once per file."""
    cached = ctx.memo.get("guard-facts")
    if cached is None:
        base = base_of(ctx)
        guard = ctx.guard
        planned = guard.current_tests.get(ctx.relpath) if guard is not None else None
        if planned is not None and planned[0] == ctx.source.text:
            now = dict(planned[1])  # read by the plan from the same text
        else:
            now = current_of(ctx).tests(ctx.source, ctx.relpath, ctx.memo.get("chunks"))  # type: ignore[arg-type]
        cached = (base.tests if base is not None else {}, now)
        ctx.memo["guard-facts"] = cached
    return cached  # type: ignore[return-value]


def _compare(ctx: Context) -> list[Found]:
    cached = ctx.memo.get("guard")
    if cached is not None:
        return cached  # type: ignore[return-value]
    guard = ctx.guard
    store = ctx.store
    # The same text against the same baseline, checked again (a save, a new setting).
    key = (ctx.source.text, ctx.relpath, ctx.source.kind, ctx.is_test_file)
    last = store.get("guard-compared") if store is not None else None
    if last is not None and last[0] is guard and last[1] == key:  # type: ignore[index]
        ctx.memo["guard"] = last[2]  # type: ignore[index]
        return last[2]  # type: ignore[index]
    found: list[Found] = []
    if guard is not None and ctx.source.kind == "python" and ctx.is_test_file:
        base, current = _facts(ctx)
        present: set[str] | None = None
        # A test's findings, kept while its facts on both sides are the same objects
        # (the facts of a test whose text did not change are reused, see live.py).
        compared: dict[str, Any] = (store or {}).get("guard-tests", {})  # type: ignore[assignment]
        now: dict[str, Any] = {}
        inherited = _inherited_classes(ctx)
        for test_id, before in base.items():
            if not before.collected and _class_of(test_id) not in inherited:
                continue
            after = current.get(test_id)
            if after is not None and (after.collected or _class_of(test_id) in inherited):
                known = compared.get(test_id)
                if known is None or not all(map(operator.is_, known[:3], (guard, before, after))):
                    known = (guard, before, after, compare_test(guard, before, after))
                now[test_id] = known
                found.extend(known[3])
            else:
                if present is None:
                    present = {
                        k for f in current.values() if f.collected for k in elsewhere_keys(f)
                    }
                found.extend(missing_test(guard, before, after, base, current, present))
        if store is not None:
            store["guard-tests"] = now
        found.extend(_module_relaxations(ctx))
        found.extend(_fixtures_changed(ctx, current))
    ctx.memo["guard"] = found
    if store is not None:
        store["guard-compared"] = (guard, key, found)
    return found


_CLASS_BASES = re.compile(r"^[ \t]*class\s+(\w+)\s*\(([^)]*)\)\s*:", re.MULTILINE)


def _inherited_classes(ctx: Context) -> frozenset[str]:
    """Classes whose tests pytest runs through a collected subclass in the same module
    (``class TestVariable(VariableSubclassobjects)``): a mixin's test methods are tests.
    Read at the baseline and now."""
    base = base_of(ctx)
    found: set[str] = set()
    for text in (ctx.source.text, base.source.text if base is not None else ""):
        for name, bases in _CLASS_BASES.findall(text):
            if name.startswith("Test"):
                found.update(b.strip().rsplit(".", 1)[-1] for b in bases.split(","))
    return frozenset(found)


def _class_of(test_id: str) -> str | None:
    parts = test_id.split("::")
    return parts[1] if len(parts) == 3 else None


def _module_relaxations(ctx: Context) -> list[Found]:
    """Conditional skips and xfails that apply to a whole module or class
    (``pytestmark``, a class decorator, a module-level ``importorskip``), compared once."""
    guard = ctx.guard
    assert guard is not None
    base = base_of(ctx)
    before = module_relaxations(base.source) if base is not None else []
    after = module_relaxations(ctx.source)
    found = []
    for scope in sorted({r.text.split("\0", 1)[0] for r in after}):
        now = [_strip_scope(r) for r in after if r.text.split("\0", 1)[0] == scope]
        was = [_strip_scope(r) for r in before if r.text.split("\0", 1)[0] == scope]
        label = "every test in this module" if scope == "" else f"every test in class `{scope}`"
        found.extend(relaxations_changed(guard, label, was, now))
    return found


_SETUP_METHODS = frozenset({"setUp", "setUpClass", "setup_method", "setup_class", "setup"})
_FIXTURE_DECORATOR = re.compile(r"^\s*@\s*(pytest\.)?fixture\b")


def _fixtures_changed(ctx: Context, current: dict[str, TestFacts]) -> list[Found]:
    """A fixture (or a unittest ``setUp``) of this file whose body changed, that tests
    existing at the base use: what those tests feed the code is not what it was (REF314:
    a warning by default, an error in agent mode)."""
    guard = ctx.guard
    base = base_of(ctx)
    if guard is None or base is None:
        return []
    before: dict[str, set[str]] = {}
    for name, body in base.bodies:
        before.setdefault(name, set()).add(body)
    lines = ctx.source.text.split("\n")
    found = []
    canonical_before: dict[str, set[str]] | None = None
    canonical_now: dict[str, set[str]] = {}
    for fn in functions(ctx):
        if fn.name not in before or fn.squashed in before[fn.name]:
            continue
        if fn.name not in _SETUP_METHODS and not any(
            _FIXTURE_DECORATOR.match(line) for line in lines[max(0, fn.line - 4) : fn.line - 1]
        ):
            continue
        if canonical_before is None:
            canonical_before = _function_keys(base.source.text)
            canonical_now = _function_keys(ctx.source.text)
        if canonical_now.get(fn.name, set()) <= canonical_before.get(fn.name, set()):
            continue  # reformatted
        above = lines[max(0, fn.line - 4) : fn.line - 1]
        if fn.name in _SETUP_METHODS:
            users = [
                f for f in current.values() if f.collected and "::" in f.id[len(ctx.relpath) + 2 :]
            ]
            what = f"`{fn.name}`"
        elif any(_FIXTURE_DECORATOR.match(line) for line in above):
            users = [f for f in current.values() if f.collected and fn.name in f.params]
            what = f"the fixture `{fn.name}`"
        else:
            continue
        if not users:
            continue
        names = ", ".join(f"`{f.name}`" for f in users[:3]) + (
            f" and {len(users) - 3} more" if len(users) > 3 else ""
        )
        found.append(
            relaxed(
                guard,
                codes.TEST_INPUT_CHANGED,
                fn.line,
                f"{what} changed since {guard.base}, and {names} "
                f"{'uses' if len(users) == 1 else 'use'} it: what the test feeds the code is "
                "not what it was",
            )
        )
    return found


@functools.lru_cache(maxsize=64)
def _function_keys(text: str) -> dict[str, set[str]]:
    """Each function's body as :func:`statement_key` reads it, by name."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    lines = text.split("\n")
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first, last = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
            body = "\n".join(lines[first - 1 : last])
            out.setdefault(node.name, set()).add(statement_key(body))
    return out


def _strip_scope(relaxation: Relaxation) -> Relaxation:
    return replace(relaxation, text=relaxation.text.split("\0", 1)[-1])


def _report(ctx: Context, code: str) -> Iterator[Violation]:
    for item in _compare(ctx):
        if item.code == code:
            yield Violation(span=span(item.line), message=item.message, severity=item.severity)


def test_removed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test that existed at the baseline and is gone, when its checks are not made
    by any test now. Renaming a test, moving it to another file, splitting, merging or
    parametrizing tests keep the checks and are not flagged; nor is deleting a duplicate
    whose copy lives in a test file the change did not touch. A test renamed and edited
    is compared with the new test it became (REF301/REF302/… name it).

    A warning, not an error, in the default mode when the code the test exercised
    changed in the same diff (the feature went with its test), or when the test had no
    assertion at all; an error in agent mode. The message lists the checks no test
    makes any more.

    ## Why it matters
    Deleting the red test is the bluntest way to make a suite pass.

    ## Example
    `tests/test_cart.py::test_total_with_discount` existed at `HEAD`; the working tree
    no longer has it, nor an assertion like its `assert total(...) == 90`.

    ## Use instead
    Fix the code, or — if the test is wrong — change its expected value with an
    arbitration certificate: the test stays.
    """
    yield from _report(ctx, codes.TEST_REMOVED)


def assertion_removed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an assertion (or a call to a helper that asserts, or a `raise` that fails the
    test) that a test had at the baseline and no longer has. Not flagged: the same check
    in another form (`assert 4 == f(x)` for `assert f(x) == 4`, `assertEqual` for
    `assert ==`, `raises(match=)` for `assert "x" in str(e.value)`), a check moved to
    another test of the change (it is still made as often as before), into a helper
    the test calls, or into a parametrize table, and an assertion whose subject was
    rewritten with its expected value kept.

    A warning in the default mode when the code the test exercises changed in the same
    diff, or when the test was rewritten against another API (it stopped calling
    something and makes at least half as many new checks); an error in agent mode.

    ## Why it matters
    A test that still runs but checks less is harder to spot than a deleted one.

    ## Example
    ```python
    def test_parse():
        result = parse("1h30m")
        assert result.hours == 1
        # `assert result.minutes == 30` was here at HEAD
    ```

    ## Use instead
    Keep the assertion and fix the code it catches.
    """
    yield from _report(ctx, codes.ASSERTION_REMOVED)


def expected_value_changed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an equality assertion whose expected value changed since the baseline
    (`assert f(x) == 4` became `assert f(x) == 5`) without a certificate in
    `.referee/certificates.jsonl`. A change a certificate covers (same test id, old and
    new value) is reported as information: "certified by …".

    A value changed inside a `@pytest.mark.parametrize` table (without removing the
    case) is the same change, and the message names the columns that changed;
    reordering, deduplicating or wrapping cases in `pytest.param(..., id=)`, renaming an
    argname, adding a column and moving the table to a parametrized fixture are not.
    So is a value changed in a local the test assigns a literal to once and compares
    with (`==`, `assertEqual`, `pytest.approx`); renaming the local is not.

    Values are compared as the values they evaluate to when they are constants:
    `u"x"` and `"x"`, `"a" "b"` and `"ab"`, `"a b".split()` and `["a", "b"]`,
    `"{}:{}".format(h, p)` and `f"{h}:{p}"`, `flask.Markup` and `Markup` are the same.
    An expected side computed from the test's own variables or fixtures is not a value
    and is not compared.

    In the default mode the change is a warning when the code the test exercises
    changed in the same diff — the function it calls, or one that function reaches
    (found by name, a few calls deep), or a non-Python file the code may live in:
    "changed together with the code it tests (`parse` (def parse in src/p.py)
    changed): an intended change?". With nothing it exercises changed it is an error:
    that is the cheat. In agent mode every uncertified change is an error.

    ## Why it matters
    Rewriting the expected value to whatever the code returns turns every test green and
    every bug into a specification. Only an independent oracle may decide that the test
    was the wrong side.

    ## Example
    ```python
    assert count_vowels("aeiou") == 4   # HEAD
    assert count_vowels("aeiou") == 5   # now, no certificate

    expected = 4   # HEAD; now `expected = 5`, no certificate
    assert count_vowels("aeiou") == expected
    ```

    ## Use instead
    Change an expected value only with a certificate: guarded arbitration fixes the test
    only when an independent oracle proves it wrong, and writes the certificate to
    `.referee/certificates.jsonl`.
    """
    yield from _report(ctx, codes.EXPECTED_VALUE_CHANGED)


def comparison_weakened(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an assertion on the same subject whose comparison now pins the value down less:
    `==` became `in`, `>=`, `<=`, `!=`, `is not None` or a bare truth test. Strengthening
    (`>` to `==`) is not flagged. In a parametrized test each case is compared.
    A warning in the default mode when the code the test exercises changed in the same
    diff; an error otherwise, and always in agent mode.

    ## Why it matters
    `assert total == 90` fails for a wrong total; `assert total >= 0` passes for almost
    all of them.

    ## Example
    ```python
    assert total(cart) == 90    # HEAD
    assert total(cart)          # now
    ```

    ## Use instead
    Keep the exact comparison.
    """
    yield from _report(ctx, codes.COMPARISON_WEAKENED)


def test_input_changed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an assertion that is written as it was at the baseline but is fed other data
    now: a statement of the test before it that binds a name it reads, or calls a method
    of an object it reads, changed, was removed or was added — the input the test gives
    the code (`data = [...]`, a `pytester.makepyfile(...)` source, a seed), or how it
    computes the value it compares with (`expected = compute(...)`). A value the
    assertion compares with that changed from one constant to another
    (`expected = Grid(1)` → `Grid(2)`) is `expected-value-changed` instead. A fixture
    of the test module (`@pytest.fixture`) or a unittest `setUp` whose body changed, used
    by tests that existed at the baseline, is reported the same way.

    A warning in the default mode, where changing a test's data together with its
    expectation is ordinary maintenance; an error in agent mode, where an agent that
    changes what an existing test feeds the code has changed the test, not the code.

    ## Why it matters
    A test is its inputs and its expectation together. An agent facing an impossible
    expectation can keep the assertion and change the input until the expectation
    holds: add one more case to the generated source so that "2 skipped" matches, or
    compute the reference another way.

    ## Example
    ```python
    def test_summary(pytester):
        pytester.makepyfile("def test_a(): pass")   # HEAD
        pytester.makepyfile("def test_a(): pass\\ndef test_b(): pass")   # now
        result = pytester.runpytest()
        result.assert_outcomes(passed=2)
    ```

    ## Use instead
    Fix the code so that the test's own inputs give its expectation, or arbitrate the
    test (`referee arbitrate`) if the expectation is wrong.
    """
    yield from _report(ctx, codes.TEST_INPUT_CHANGED)


def baseline_unparsable(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Reports a changed test file whose baseline does not parse: the guard cannot read
    what its tests checked, so it cannot say what the change weakened. Where one line
    of the baseline is only mis-indented (a statement pulled out of its block), the
    guard reads the baseline with that line put back in its block, compares with that,
    and says so (a warning). Where it cannot, it compares what it could read of the
    baseline and reports that the rest was not seen: an error in agent mode, a warning in
    the default mode.

    ## Why it matters
    "All checks passed" must mean the checks ran. A broken baseline is also the moment
    an agent is most tempted to rewrite an assertion while it "fixes the syntax".

    ## Example
    ```python
    def test_copy():
        w = v.copy()
    assert not v.identical(w)   # HEAD: de-indented, the module does not parse
        assert v.dtype == w.dtype
    ```

    ## Use instead
    Fix the baseline's syntax in a commit of its own, then change the test.
    """
    guard = ctx.guard
    if guard is None or ctx.source.kind != "python" or not ctx.is_test_file:
        return
    base = base_of(ctx)
    if base is None or base.unparsable is None:
        return
    line, problem, repaired = base.unparsable
    if repaired is not None:
        yield Violation(
            span=span(1),
            message=f"this file at {guard.base} does not parse (line {line}: {problem}); "
            f"it was compared as if line {repaired} were indented as its block",
            severity=Severity.WARNING,
        )
        return
    yield Violation(
        span=span(1),
        message=f"this file at {guard.base} does not parse (line {line}: {problem}): its "
        "tests were compared as far as they could be read, and a change to the rest is not "
        "seen",
        severity=None if guard.strict else Severity.WARNING,
    )


def approx_loosened(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a `pytest.approx` (or `assertAlmostEqual`) whose `rel` or `abs` tolerance grew
    since the baseline. Tightening is not flagged.

    A missing tolerance means pytest's defaults (`rel=1e-6`, `abs=1e-12`), so adding a
    tighter one is not flagged; `assertAlmostEqual` losing `places` or gaining a larger
    `delta` is.

    ## Why it matters
    A tolerance wide enough accepts any answer.

    ## Example
    ```python
    assert mean(xs) == pytest.approx(2.5, rel=1e-6)   # HEAD
    assert mean(xs) == pytest.approx(2.5, rel=0.5)    # now
    ```

    ## Use instead
    Keep the tolerance the computation needs.
    """
    yield from _report(ctx, codes.APPROX_LOOSENED)


def raises_widened(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags `pytest.raises` / `assertRaises` that expected a specific exception at the
    baseline and now accepts `Exception` or `BaseException`.

    ## Why it matters
    `pytest.raises(Exception)` passes when the code fails for any reason — a typo, a
    `TypeError` — instead of the error the test was about.

    ## Example
    ```python
    with pytest.raises(ValueError): parse("")   # HEAD
    with pytest.raises(Exception): parse("")    # now
    ```

    ## Use instead
    Keep the specific exception.
    """
    yield from _report(ctx, codes.RAISES_WIDENED)


def raises_match_removed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a `pytest.raises(..., match=...)` (or `assertRaisesRegex`) whose message
    pattern was dropped since the baseline.

    Also flagged: `assertRaisesRegex` turned into `assertRaises`, and a pattern replaced
    by one that matches anything (`match=".*"`).

    ## Why it matters
    The pattern is what tells this `ValueError` from any other.

    ## Example
    ```python
    with pytest.raises(ValueError, match="empty"): parse("")   # HEAD
    with pytest.raises(ValueError): parse("")                  # now
    ```

    ## Use instead
    Keep the pattern, or make it match the real message.
    """
    yield from _report(ctx, codes.RAISES_MATCH_REMOVED)


def parametrize_cases_removed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a `@pytest.mark.parametrize` case that is gone: the table has fewer distinct
    cases than at the baseline, and this one has no counterpart now. Each removed case
    is named. Removing an exact duplicate, renaming an argname, adding a column and
    moving the table to a parametrized fixture (`@pytest.fixture(params=[...])`) remove
    nothing.

    Tables kept in a module constant (`CASES = [...]` used as
    `@pytest.mark.parametrize("x, y", CASES)`) are read too. A warning in the default
    mode when the code the test exercises changed in the same diff.

    ## Why it matters
    Deleting the failing case from a table is deleting a test.

    ## Example
    ```python
    @pytest.mark.parametrize("text, n", [("a", 1), ("aeiou", 5), ("", 0)])   # HEAD
    @pytest.mark.parametrize("text, n", [("a", 1), ("", 0)])                 # now
    ```

    ## Use instead
    Keep the case and fix the code, or arbitrate it.
    """
    yield from _report(ctx, codes.PARAMETRIZE_CASES_REMOVED)


def renamed_out_of_collection(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test that was renamed to a name pytest does not collect (`test_x` to
    `_test_x`, `check_x`, `xtest_x`) with its body intact.

    Renaming a class from `Test*` to a name pytest does not collect (with no base class
    that would make it a unittest case) takes all its methods out of collection and is
    flagged the same way.

    ## Why it matters
    The test still reads as a test in review, and never runs.

    ## Example
    ```python
    def test_refund(): ...    # HEAD
    def _test_refund(): ...   # now
    ```

    ## Use instead
    Keep the `test` prefix; skip with a reason if it must not run for now.
    """
    yield from _report(ctx, codes.RENAMED_OUT_OF_COLLECTION)


def certificate_mismatch(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a certificate in `.referee/certificates.jsonl` that would cover a changed
    expected value (same test, same old and new value) but is not bound to the test as
    it is written now: its `test_sha256` is missing or is not the hash of the changed
    assertion statement (whitespace removed; for a value in a local, of the assertion
    that compares with it; for a parametrized case, of the case as Python prints it), or
    its `test_id` no longer names the test. The certificate is not honoured, so the
    change is also reported as REF302.

    ## Why it matters
    A certificate's id is a hash anyone can recompute. What makes it evidence is that
    arbitration issued it for this assertion; a certificate copied from another test, or
    written by hand for the value the code happens to return, proves nothing.

    ## Example
    ```json
    {"test_id": "tests/test_shop.py::test_total", "old_value": "30", "new_value": "31",
     "test_sha256": "0000000000000000000000000000000000000000000000000000000000000000", ...}
    ```

    ## Use instead
    Let arbitration fix the test: it writes the certificate with the assertion's hash.
    If the assertion was reformatted or changed again since, arbitrate it again.
    """
    yield from _report(ctx, codes.CERTIFICATE_MISMATCH)


def skip_added(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test that is skipped now and was not at the baseline: `@pytest.mark.skip`,
    `@unittest.skip`, `pytest.skip()`, `self.skipTest()`, `raise SkipTest` — an error.

    Unconditional forms count wherever they are written: `skipif(True)`,
    `skipUnless(False)`, a module- or class-level `pytestmark`, a class decorator, and
    `pytest.param(..., marks=pytest.mark.skip)`. A condition that reads only the Python
    version, the platform and the implementation and holds on all of them
    (`skipif(sys.version_info > (3,))`) is unconditional too.

    A skip that applies only sometimes is a warning that quotes its condition (an error
    in agent mode): a new or widened `skipif(cond)` / `skipUnless(cond)`,
    `pytest.importorskip("x")` in a test or at module level, a `pytest.skip()` under an
    `if`, an `else` or an `except`, and a conditional mark on a case, a class or
    `pytestmark`: "`test_a` is now skipped when `sys.platform == "win32"`". A condition
    narrowed (`cond and more`) is not flagged; a reworded `reason=` is not a new skip.

    ## Why it matters
    A skipped test reports nothing, and CI stays green.

    ## Example
    ```python
    @pytest.mark.skip(reason="flaky")
    def test_refund(): ...
    ```

    ## Use instead
    Fix the test or the code; a skip that must stay deserves a reviewer's eyes.
    """
    yield from _report(ctx, codes.SKIP_ADDED)


def failure_swallowed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an assertion that could fail at the baseline and now cannot: newly wrapped in a
    `try` whose `except` swallows the failure, in `contextlib.suppress`, after an
    unconditional `return`, or under a condition that is always false (`if False:`).

    Also: assertions moved into a nested function the test never calls, and a
    `pytest.raises(E)` block whose body raises `E` itself. An assertion newly placed
    under a condition that may be false (`if result is not None: assert ...`, an
    `except` clause) is checked only sometimes: a warning quoting the condition in the
    default mode, an error in agent mode.

    ## Why it matters
    The assertion is still there for a reviewer to see; it just never fails.

    ## Example
    ```python
    try:
        assert total(cart) == 90
    except AssertionError:
        pass
    ```

    ## Use instead
    Let the assertion fail.
    """
    yield from _report(ctx, codes.FAILURE_SWALLOWED)


def xfail_added(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test newly marked as expected to fail (`@pytest.mark.xfail`,
    `@unittest.expectedFailure`, `pytest.xfail()`), or an xfail that became
    `strict=False` (so an unexpected pass no longer fails the run) — an error.

    xfail marks are read in the same places as skips (see `skip-added`), and as there,
    an xfail under a condition (`xfail(sys.platform == "win32")`, a `pytest.xfail()`
    inside an `if` or a `try`'s `else`) is a warning quoting the condition (an error in
    agent mode). Rewording an xfail's `reason=` changes nothing.

    ## Why it matters
    An xfail turns a red test into a yellow one that nobody reads.

    ## Example
    ```python
    @pytest.mark.xfail
    def test_refund(): ...
    ```

    ## Use instead
    Fix the code, or record the known bug with `reason=` and `strict=True`.
    """
    yield from _report(ctx, codes.XFAIL_ADDED)


def tested_function_monkeypatched(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test that now monkeypatches (`monkeypatch.setattr`, `mock.patch`,
    `patch.object`) a function it also calls — usually the function under test.

    ## Why it matters
    The test then checks the stand-in it installed, not the code.

    ## Example
    ```python
    def test_total(monkeypatch):
        monkeypatch.setattr(cart, "total", lambda items: 90)
        assert cart.total([...]) == 90
    ```

    ## Use instead
    Patch what the function depends on (the clock, the network), never the function.
    """
    yield from _report(ctx, codes.TESTED_FUNCTION_MONKEYPATCHED)
