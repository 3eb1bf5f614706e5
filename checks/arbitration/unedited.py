"""A wrong test whose expected value is written once for several cases: a literal in a
helper's body or signature (every call of the helper shares it), or at a call of the
helper the test makes in a loop (every iteration shares it) — or one the call under test
is given too (``xs = [1]``, then ``assert f(xs) == xs``). The truth blames the test, but
replacing that literal would change what the other cases expect, or the call itself: the
verdict is given, the test is not edited, and a person decides how to split the case out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from referee.checks.arbitration.sites import Isolated
from referee.checks.arbitration.verdicts import Arbitration, Truth
from referee.checks.nodes import excerpt

if TYPE_CHECKING:
    from referee.checks.arbitration.engine import _Context

# the sites of an expected value shared by several cases (helpers.py)
SHARED_SITES = ("helper", "shared", "input")

_WHERE = {
    "helper": "is written in the helper the test calls (line {line}), which every call of "
    "it shares",
    "shared": "is written at the test's call of its helper (line {line}), where more than "
    "this expectation reads it (the iterations of a loop, or the call's own input)",
    "input": "is also what the call under test is given (line {line})",
}


_CHANGED = {"helper": "the other cases", "shared": "the other cases", "input": "the call"}


def shared_test_wrong(ctx: _Context, isolated: Isolated, truth: Truth) -> Arbitration:
    """TEST_WRONG with no fix: the truth equals what the code produced, and the expected
    value it contradicts belongs to other cases too."""
    assert ctx.observation is not None
    site = isolated.expected
    where = _WHERE[site.kind].format(line=site.line)
    verdict = ctx.verdict(
        verdict="TEST_WRONG",
        **truth.fields(),
        reason=(
            f"{truth.said} equals what the code produced; the test asserted "
            f"{ctx.observation.asserted}, but its expected value `{excerpt(site.text)}` "
            f"{where}: replacing it would change {_CHANGED[site.kind]} too, so the test is "
            "not edited"
        ),
    )
    return Arbitration(ctx.queued(verdict, "Test is wrong; its expected value is shared"), ctx.root)
