"""The findings of L2's execution checks. Like the judge's rules, the deterministic engine
never runs these (they yield nothing): :mod:`referee.checks.execution.run` reports them
from the sandbox runs. They are rules so that they have a code, a page, and can be
selected, ignored and given a severity like any other."""

from __future__ import annotations

from collections.abc import Iterator

from referee.checks.rule import Context, Violation


def test_kills_no_mutant(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Grades a changed test by the bugs it catches. referee writes mutants of the code the
    test calls — each one small change: a comparison flipped (`==` → `!=`), a boundary
    moved (`<` → `<=`), an arithmetic operator swapped, an integer constant ±1, a condition
    negated, a `return` of a constant, a statement dropped — on the lines the test runs
    (traced as it runs once unchanged), in the functions it calls and then in the helpers
    of their module that those call by name, and runs only that test against each of them in the
    [sandbox](../sandbox.md). A test that still passes on every
    mutant is reported, with the surviving mutants as evidence:
    `test_parity kills none of 7 mutants of mathx.py:is_even: still passes when
    `return n % 2 == 0` becomes `return n % 2 != 0``.

    A mutant the test fails on only because the mutant **crashed, hung or returned
    `None`** — the test failed with an exception that is not a failed check (an
    `IndexError`, a `TypeError` from a `None`, a time limit), where a failed `assert`,
    `pytest.raises` that saw no exception, or the test's own unpacking of a result
    (`(finding,) = check(...)` says "exactly one"; a `ValueError` of unpacking raised on a
    line of the test, not in the code) is a check; or the mutant is `return None`, which
    any `is not None` catches — is no kill: the test checks that the code runs and returns
    something, not what it computes. Such a test is reported too, when some mutant that
    changes a value without crashing passes it: `test_runs fails only where the code
    crashes or returns None (3 of 15 mutants of seq.py:last_even), never on a wrong
    value: still passes when `i -= 1` becomes `i -= 2``.
    When every mutant crashes, the test is not reported (nothing got past it).

    Runs with `referee check --judge` (or `--execution`) on the tests changed since the
    baseline; it needs no model. The test must pass in the sandbox as it is, or it is not
    graded. Stops at the first mutant the test kills (a crash does not stop it), and within
    the time budget ([`execution`](../configuration.md#execution): `mutation-budget`, `max-mutants`,
    `mutation-operators`); results are cached by the contents of the test module and the
    modules it calls.

    ## Why it matters
    A test written by the same author as the code often checks that the code runs, not
    what it computes: `assert is_even(4) is not None` is green for every `is_even` there
    is. Its presence says "tested"; it catches nothing. A surviving mutant is a concrete
    bug the test lets through.

    ## Example
    ```python
    from mathx import is_even

    def test_parity():
        assert is_even(4) is not None
    ```

    ## Use instead
    Assert what the function computes, on both sides of its conditions:
    ```python
    from mathx import is_even

    def test_parity():
        assert is_even(4) is True
        assert is_even(3) is False
    ```
    """
    yield from ()


def spec_counterexample(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Runs a changed function that has a spec — a docstring, or a declared
    [reference](../configuration.md#arbitration) — beside k independent implementations of
    that spec, on the docstring's examples, the arguments the project's tests pass it and
    inputs generated from its annotations, all in the [sandbox](../sandbox.md). The k oracle
    programs are the ones [arbitration](../arbitration.md) writes from the signature and
    docstring only (same prompt, same cache). Where every oracle agrees on an input (or the
    docstring's own example, or the reference, gives its value) and the function returns
    something else, the function is rejected with that input as a counterexample, re-run
    once more before it is shown:
    `clamp(15, 0, 10) returned 15; 3 independent implementations of the docstring return 10`.
    An oracle that contradicts one of the docstring's own examples (another value, or an
    exception) misread the docstring: it is set aside for every input, and its entry in
    the evidence says which example it failed. A docstring example counts in both doctest
    form (`>>> f(3)` then `6`) and as a line (`f(3) -> 6`, `>>> f(3) == 6`).
    An example the function contradicts is a counterexample, unless every oracle gives the
    function's value there too: then the example itself may be the mistake (HumanEval's
    `median` docstring says `15.0` where the median is `8.0`), and the item is
    [REF412](spec-ambiguous.md) for a person, not a rejection.

    Execution overrides reading: a function rejected here is not sent to the reading judge,
    by `referee check --judge` or in the editor, where the judge started by a save waits
    for these checks of the same text and shows no reading of a function they reject.
    In the editor (on save), the quick fix **Add … as a test (certified)** appends the
    counterexample to a test module that imports the function (or creates one, where none
    does), asserting the agreed value, and records its certificate
    ([a counterexample as a test](../judge.md#a-counterexample-as-a-test)); **Fix …
    (verified)** rewrites the function's body with a candidate verified on that test module
    with the counterexample in it ([its source fix](../judge.md#a-counterexamples-source-fix)).

    ## Why it matters
    A wrong function that looks right passes any reading, a model's included: the reading
    judge passed 12 of 15 one-operator mutants of HumanEval solutions. A counterexample is
    evidence a person can run, checked by code, not an opinion.

    ## Example
    ```python
    def clamp(x: int, lo: int, hi: int) -> int:
        \"\"\"x limited to the range [lo, hi].\"\"\"
        return max(lo, x)
    ```

    ## Use instead
    Fix the function, or — when the docstring is what is wrong — fix the docstring:
    ```python
    def clamp(x: int, lo: int, hi: int) -> int:
        \"\"\"x limited to the range [lo, hi].\"\"\"
        return max(lo, min(x, hi))
    ```
    """
    yield from ()


def spec_ambiguous(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Marks a changed function on which the k oracle programs written from its docstring
    return different values for the same input: the docstring can be read more than one
    way there. The item goes to the review queue (`.referee/review.jsonl`) with the input
    and the competing answers:
    `median([1, 2]): the oracles disagree (oracle-1 1.5, oracle-2 1, oracle-3 1.5)`.
    Also marked: a docstring example that the function and every oracle contradict alike
    (`the docstring's example says 15.0, but the function and 3 independent
    implementations of the docstring all returned 8.0: the example itself may be wrong`).
    Accept or reject it with `referee review accept|reject ID`.

    ## Why it matters
    When independent readers of a docstring disagree, neither the function nor its tests can
    be checked against it on that input; a person should say what was meant — and the
    docstring needs the word that says it.

    ## Example
    ```python
    def median(values: list[int]) -> float:
        \"\"\"The middle value.\"\"\"
    ```

    ## Use instead
    Say what happens in the case the readers disagreed on:
    ```python
    def median(values: list[int]) -> float:
        \"\"\"The middle value; for an even count, the mean of the two middle values.\"\"\"
    ```
    """
    yield from ()
