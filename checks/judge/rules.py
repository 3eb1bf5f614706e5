"""The findings of the model layers. The deterministic engine never runs these checks (they
yield nothing): :mod:`referee.checks.judge.core` produces the findings from the judge's
decisions and the review queue. They are rules so that they have a code, a page, and can be
selected, ignored and given a severity like any other."""

from __future__ import annotations

from collections.abc import Iterator

from referee.checks.rule import Context, Violation


def judge_rejected(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Reports a function, test or task output that every perspective of the L2 judge rejected,
    each with quoted evidence that was found in the file. Runs on save in the editor and with
    `referee check --judge`; only on what L0/L1 did not already reject.

    ## Why it matters
    The deterministic layers catch empty, placeholder and unfailable work. What is left —
    a function whose body contradicts its docstring, a test that checks nothing real — needs
    reading. When strict, balanced and lenient readings all reject it, and their quotes are
    really in the file, the work most likely does not do what it promises.

    ## Example
    ```python
    def is_even(n: int) -> bool:
        \"\"\"Whether n is even.\"\"\"
        return n % 2 == 1
    ```

    ## Use instead
    Make the code do what its name and docstring promise, or change the promise:
    ```python
    def is_even(n: int) -> bool:
        \"\"\"Whether n is even.\"\"\"
        return n % 2 == 0
    ```
    """
    yield from ()


def needs_human_review(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Marks an item the L2 judge could not settle, so a person decides: its perspectives
    disagreed (the most common verdict's share is below `divergence-threshold`), or a
    perspective quoted evidence that is not in the file (a hallucination). Also marks
    items the judge passed that adaptive audit sampling picked for a human look. The item
    waits in `.referee/review.jsonl`; accept or reject it with the editor's code actions or
    `referee review accept|reject ID`.

    ## Why it matters
    A model asked about its own kind of output is least reliable exactly where it matters.
    When readings diverge, a majority vote would hide that; referee hands the item to a
    person instead, with every perspective's quoted evidence.

    ## Example
    ```python
    def median(values):
        \"\"\"The median of values.\"\"\"
        values = sorted(values)
        return values[len(values) // 2]
    ```
    Strict rejects it (wrong for an even count), lenient passes it: a person decides.

    ## Use instead
    Review the item, then record the decision:
    ```console
    $ referee review show 3f2a
    $ referee review accept 3f2a
    ```
    """
    yield from ()


def review_rejected(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Reports an item a person rejected in review. The decision is keyed by the item's content
    hash: it stays until the content changes, and then the item is judged afresh.

    ## Why it matters
    A human decision is the last word on what the model layers could not decide; it must
    not be lost on the next save, and it must not outlive the code it was about.

    ## Example
    ```console
    $ referee review reject 3f2a
    ```

    ## Use instead
    Fix the code the reviewer rejected; the changed content is judged again.
    ```console
    $ referee check --judge src/
    ```
    """
    yield from ()
