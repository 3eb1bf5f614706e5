"""The verdict of each kind of case, once the truth is known: an expected exception, a
boolean, identity or membership expectation, a wrong test (its literal replaced, the
corrected test run, the certificate prepared), a wrong source (candidate patches
verified) — each a phase of :meth:`referee.checks.arbitration.engine._Context.decide`,
given the arbitration's context."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from referee.checks import interpreter, ledger, sandbox
from referee.checks.arbitration import outcomes
from referee.checks.arbitration.fix import (
    SourceFix,
    TestFix,
    fix_test,
    literal_mismatch,
    pytest_counts,
    pytest_run_limits,
    sha256_text,
    source_fix,
    unsafe_literal,
)
from referee.checks.arbitration.raises_match import match_decision
from referee.checks.arbitration.sites import Isolated
from referee.checks.arbitration.truth import (
    ProgramCache,
    Replacements,
    agreed_value,
    oracle_evidence,
)
from referee.checks.arbitration.verify import AssertedCall
from referee.checks.guard.pytestconfig import alone_args_of
from referee.checks.models import ArbitrationVerdict, OracleEvidence, OracleResult
from referee.checks.nodes import excerpt
from referee.checks.progress import Cancelled, Work

if TYPE_CHECKING:
    from referee.checks.arbitration.engine import _Context, _LazyFiles

BackendFactory = Callable[[], Any]


@dataclass(frozen=True)
class Fixing:
    """What looking for a fix of the source needs beyond the case: the function's file
    relative to the root (None outside the project), the project's files, the model,
    the work (its progress and cancellation) and the program cache's folder."""

    function_relpath: str | None
    files: _LazyFiles
    backend: BackendFactory | None
    work: Work
    cache_dir: Path | None


@dataclass(frozen=True)
class Truth:
    """What the arbitration found the failing call should give, where that came from,
    and the assertion's history: what every verdict about the case carries."""

    value: str
    source: str
    history: str | None

    @property
    def said(self) -> str:
        """How a verdict's reason names it: ``the truth (3, from oracles)``."""
        return f"the truth ({self.value}, from {self.source})"

    def fields(self) -> dict[str, str | None]:
        """The verdict's fields that hold it."""
        return {"truth": self.value, "truth_source": self.source, "history": self.history}


@dataclass(frozen=True)
class Arbitration:
    """A verdict and what applying its fix would write."""

    verdict: ArbitrationVerdict
    root: Path
    new_text: str | None = None  # the fixed file's text
    certificate: dict[str, Any] | None = None  # fields of the certificate a test fix needs


def raises_verdict(ctx: _Context, isolated: Isolated, truth: Truth) -> Arbitration:
    """The test expects the call to raise: when the truth is that it raises that
    exception and the code did not, the source is wrong. No fix is tried — a patch
    would be held to a value, and this truth is an exception. When the truth returns,
    or raises another exception, the test may be wrong, but what a test expects to
    raise is not an expected value referee edits: a person decides."""
    assert ctx.observation is not None
    obs = ctx.observation
    expected = outcomes.raised(isolated.expected.text)
    common = truth.fields()
    if not sandbox.values_equal(truth.value, expected):
        return ctx.unclear(
            f"{truth.said} is not what the test expects "
            f"({isolated.call} {expected}): the test may be wrong, but referee does not "
            "edit what a test expects to raise",
            **common,
        )
    on_message = match_decision(isolated, obs.produced_error, ctx.oracles, truth.value)
    if on_message is not None and not on_message[0]:
        return ctx.unclear(f"{truth.said} is what the test expects; {on_message[1]}", **common)
    reason = (
        f"{truth.said} is what the test expects; the code "
        f"{obs.produced_error}; "
        + (f"{on_message[1]}; " if on_message is not None else "")
        + "no fix is tried for an expected exception"
    )
    verdict = ctx.verdict(verdict="SOURCE_WRONG", reason=reason, **common)
    return Arbitration(ctx.queued(verdict, "Source is wrong; no verified fix"), ctx.root)


def expectation_verdict(
    ctx: _Context,
    isolated: Isolated,
    truth: Truth,
    fixing: Fixing,
) -> Arbitration:
    """A boolean, identity or membership assertion: the truth decides by whether it
    meets the test's expectation. Only the source is ever blamed and fixed. When the
    truth does not meet it, the test looks wrong, but the fix would be to turn the
    assertion around (assertTrue into assertFalse, drop a ``not``, a member for
    another) — an edit of what the test means, not of one value, that no certificate
    covers; a person decides."""
    assert ctx.observation is not None
    obs = ctx.observation
    expectation = outcomes.expectation(isolated)
    # an expected value the test computes is no literal: its value is the one recorded
    bound = isolated.expected.text
    if isolated.expected.kind == "computed" and obs.asserted is not None:
        bound = obs.asserted
    meets = outcomes.meets(isolated.op, isolated.call_side, truth.value, bound)
    if meets is None:
        return ctx.unclear(
            f"the truth ({excerpt(truth.value)}, from {truth.source}) is not a literal value "
            f"referee can check the test's expectation ({expectation}) against",
            **truth.fields(),
        )
    if not meets:
        return ctx.unclear(
            f"{truth.said} does not meet the test's "
            f"expectation ({expectation}), as what the code produced "
            f"({obs.produced or obs.produced_error}) does not: the test may be wrong, but "
            "referee edits only the expected value of an equality, not a "
            f"{isolated.op} assertion",
            **truth.fields(),
        )
    if obs.produced is not None and outcomes.meets(
        isolated.op, isolated.call_side, obs.produced, bound
    ):
        return ctx.unclear(
            f"{truth.said} and what the code produced "
            f"({obs.produced}) both meet the test's expectation ({expectation}), yet it "
            "failed",
            **truth.fields(),
        )
    # The source is wrong: a fixed source must give the truth itself on this call.
    return source_wrong(
        ctx,
        replace(isolated, op="=="),
        truth,
        fixing,
        agrees=f"meets the test's expectation ({expectation})",
    )


def fix_programs(
    ctx: _Context,
    isolated: Isolated,
    truth: str,
    backend: BackendFactory,
    work: Work,
    cache_dir: Path | None,
) -> list[tuple[str, str]]:
    """Oracle programs written only as candidate fixes, when the truth came from a
    doctest or a reference and no oracle was needed for it: independent
    implementations of the docstring, kept when they give the truth on the failing
    call (and, as every oracle, the docstring's own examples). They decide nothing."""
    assert ctx.spec is not None
    written = oracle_evidence(
        ctx.spec,
        isolated.oracle_arguments,
        backend(),
        ctx.config,
        ProgramCache(cache_dir, ctx.settings.config.cache_size),
        work=work,
        replacements=Replacements(ctx.config.oracle_replacements),
        wrapper=isolated.wrapper,
        projection=isolated.projection,
        definitions=isolated.definitions,
    )
    return [
        (r.source, r.program)
        for r in written
        if r.program and r.value is not None and sandbox.values_equal(truth, r.value)
    ]


def confirm_test_edit(
    ctx: _Context,
    model: Any,
    arguments: str,
    truth: str,
    work: Work,
    cache_dir: Path | None,
    wrapper: str | None = None,
    projection: str = "",
    definitions: str = "",
) -> Arbitration | None:
    """A test edit is the one move the guard exists to stop, and k oracles of one model
    can share one misreading of the docstring. So before oracles alone certify it,
    more are written (``test_edit_oracles``) and they must agree as well; None when
    they do, else the UNCLEAR verdict that says they do not."""
    config = ctx.config
    total, needed = config.test_edit_total, config.test_edit_agreement
    if total <= config.oracles:
        return None
    assert ctx.spec is not None
    # Candidates written in place of failed oracles that ran but were not needed are
    # oracles of this same call already: the first of the extra ones, in the order
    # they were written, whatever their values.
    spares: list[OracleResult] = []
    if ctx.replacements is not None:
        spares = ctx.replacements.spares[: total - config.oracles]
        del ctx.replacements.spares[: len(spares)]
    seeds = range(config.oracles + 1, total + 1 - len(spares))
    ctx.confirming = (
        f"the {config.oracles} oracles agree with what the code produced ({truth}), but "
        f"editing the test needs {needed} of {total} oracles to agree: "
        + outcomes.evidence_text(ctx.oracles)
        + f"; the {total - config.oracles} more were being written"
    )
    extra = spares + (
        oracle_evidence(
            ctx.spec,
            arguments,
            model,
            config,
            ProgramCache(cache_dir, ctx.settings.config.cache_size),
            work=work,
            seeds=seeds,
            replacements=ctx.replacements,
            wrapper=wrapper,
            projection=projection,
            suite=ctx.suite,
            definitions=definitions,
        )
        if seeds
        else []
    )
    ctx.confirming = None
    ctx.oracles = (*ctx.oracles, *extra)
    confirmed = agreed_value(ctx.oracles, needed)
    if confirmed is not None and sandbox.values_equal(confirmed, truth):
        return None
    return ctx.unclear(
        f"the {config.oracles} oracles agree with what the code produced ({truth}), but "
        f"editing the test needs {needed} of {total} oracles to agree and the "
        f"{total - config.oracles} more do not: " + outcomes.evidence_text(extra)
    )


def test_wrong(
    ctx: _Context,
    isolated: Isolated,
    truth: Truth,
    files: _LazyFiles,
    work: Work,
) -> Arbitration:
    assert ctx.spec is not None and ctx.observation is not None
    fixed: TestFix = fix_test(
        ctx.source.text,
        ctx.test.path,
        isolated.expected,
        truth.value,
        (isolated.assertion_start, isolated.assertion_end),
    )
    # The value comes from programs (oracles a model wrote, a reference): data, and
    # data is what gets written — a literal, or a call of a plain name with literal
    # arguments (Fraction(3, 2)) — never code that does something when the test runs.
    problem = unsafe_literal(fixed.fix.new_value or "")
    if problem is not None:
        return ctx.unclear(
            f"the truth ({excerpt(truth.value)}, from {truth.source}) equals what the code "
            f"produced, but it is not a value referee writes into a test ({problem}); "
            "nothing is certified",
            **truth.fields(),
        )

    def still_fails(detail: str) -> Arbitration:
        return ctx.unclear(
            f"{truth.said} equals what the code produced, but "
            f"the test with `{excerpt(fixed.fix.new_value or '')}` written in still does "
            f"not pass ({detail}); nothing is certified",
            **truth.fields(),
        )

    failure = _corrected_test_failure(ctx, isolated, fixed, files, work)
    if failure is not None:
        return still_fails(failure)
    certificate = _certificate(ctx, isolated, fixed, truth.value)
    verdict = ctx.verdict(
        verdict="TEST_WRONG",
        **truth.fields(),
        fix=fixed.fix,
        reason=(
            f"{truth.said} equals what the code produced; "
            f"the test asserted {ctx.observation.asserted}"
        ),
    )
    return Arbitration(verdict, ctx.root, fixed.new_text, certificate)


def _corrected_test_failure(
    ctx: _Context, isolated: Isolated, fixed: TestFix, files: _LazyFiles, work: Work
) -> str | None:
    """Why the test with the truth written in still fails, or None when it passes."""
    assert ctx.observation is not None
    # The certificate says the corrected test is right, so the corrected test must pass:
    # a value compared within a tolerance but written exactly (0.3 for
    # 0.30000000000000004), or one whose repr names what the module never imported
    # (Fraction(3, 2)), would otherwise be written, certified, and still fail. Where
    # both are literals referee compares them itself, with the test's operator; then
    # the corrected test runs in the sandbox — the user's test and the user's code, no
    # model-written code — which must pass too.
    mismatch = literal_mismatch(isolated.op, fixed.fix.new_value or "", ctx.observation.produced)
    if mismatch is not None:
        return mismatch

    def corrected_run(node: str) -> tuple[sandbox.SandboxResult, int, int]:
        work.say(f"running {node} with the corrected assertion")
        corrected = {**files.get(), ctx.test.path: fixed.new_text}
        run = sandbox.run_pytest(
            corrected,
            [node, "-q", "-p", "no:cacheprovider", *alone_args_of(corrected)],
            limits=pytest_run_limits(ctx.config),
            python=interpreter.for_settings(ctx.settings),
        )
        return (run, *pytest_counts(run.message))

    run, passed, total = corrected_run(ctx.test_id)
    if not total and "[" in ctx.test_id:
        # A parametrized case's id is made of its values (``test_x[1-1st]``): written
        # in, the truth may have renamed the case, so the old id selects nothing. Then
        # the test runs with all its cases, and every one must pass.
        run, passed, total = corrected_run(ctx.test_id.split("[", 1)[0])
    if not (run.status == "ok" and total and passed == total):
        return run.message or run.status
    return None


def _certificate(ctx: _Context, isolated: Isolated, fixed: TestFix, truth: str) -> dict[str, Any]:
    """The fields of the certificate a test fix is applied with: the edit, the evidence
    that agreed on the truth, and the hashes that bind it to the function and the test."""
    assert ctx.spec is not None
    return {
        "test_id": ctx.test_id,
        "call": isolated.call,
        "old_value": isolated.expected.text,
        "new_value": fixed.fix.new_value,
        "evidence": [
            OracleEvidence(source=r.source, value=r.value or "", detail=r.detail or None)
            for r in ctx.oracles
            if r.status == "ok" and r.value is not None and sandbox.values_equal(truth, r.value)
        ],
        "source_sha256": sha256_text(ctx.spec.definition),
        "test_sha256": ledger.normalized_text_hash(fixed.bound_text),
        "created": outcomes.now(),
    }


def source_wrong(
    ctx: _Context,
    isolated: Isolated,
    truth: Truth,
    fixing: Fixing,
    agrees: str = "equals what the test asserted",
) -> Arbitration:
    assert ctx.spec is not None and ctx.observation is not None
    obs = ctx.observation
    reason = f"{truth.said} {agrees}; " + (
        f"the call {obs.produced_error}"
        if obs.timeout_s
        else f"the code produced {obs.produced or obs.produced_error}"
    )
    common = {"verdict": "SOURCE_WRONG", **truth.fields()}
    function_relpath, backend = fixing.function_relpath, fixing.backend
    why_not = None
    if function_relpath is None:
        why_not = f"{obs.function_path} is outside the project"
    elif ctx.config.candidates == 0:
        why_not = "arbitration.candidates is 0"
    elif backend is None:
        why_not = "no model to write candidate patches"
    if why_not is not None:
        verdict = ctx.verdict(**common, reason=f"{reason}; no verified fix ({why_not})")
        return Arbitration(ctx.queued(verdict, "Source is wrong; no verified fix"), ctx.root)
    assert function_relpath is not None and backend is not None
    try:
        result = candidate_fix(
            ctx,
            isolated,
            truth.value,
            function_relpath,
            fixing.files,
            backend,
            fixing.work,
            fixing.cache_dir,
        )
    except Cancelled:
        if not ctx.out_of_time():
            raise
        budget = ctx.config.time_budget
        verdict = ctx.verdict(
            **common,
            reason=f"{reason}; no verified fix (the time budget, {budget:g} s, "
            "ran out while candidates were tried)",
        )
        return Arbitration(ctx.queued(verdict, "Source is wrong; no verified fix"), ctx.root)
    if result.fix is None:
        verdict = ctx.verdict(
            **common,
            patches=result.patches,
            reason=f"{reason}; source is wrong; no verified fix "
            f"({len(result.patches)} candidate(s) tried)",
        )
        return Arbitration(ctx.queued(verdict, "Source is wrong; no verified fix"), ctx.root)
    verdict = ctx.verdict(**common, patches=result.patches, fix=result.fix, reason=reason)
    return Arbitration(verdict, ctx.root, result.new_text)


def candidate_fix(
    ctx: _Context,
    isolated: Isolated,
    truth: str,
    function_relpath: str,
    files: _LazyFiles,
    backend: BackendFactory,
    work: Work,
    cache_dir: Path | None,
) -> SourceFix:
    """Candidate patches (the oracles' programs that give the truth first), each kept
    only when the test module's asserted calls give the right values and it passes."""
    assert ctx.spec is not None and ctx.observation is not None
    obs = ctx.observation
    spec = ctx.spec
    function = spec.qualname  # Owner.name for a static or class method
    if isolated.constructor is not None:  # a method of an object built from literals
        function = f"{spec.owner}({', '.join(isolated.constructor_arguments)}).{spec.name}"
    # An oracle of a method or class method is a function of another signature (the
    # constructor's arguments, no ``ctx`` or ``cls``): not a body for the method.
    as_fixes = spec.class_stub is None
    return source_fix(
        spec,
        function_relpath,
        ctx.test.path,
        files.get(),
        AssertedCall(
            where=f"{ctx.test.path}:{isolated.line} ({ctx.test.name})",
            function=function,
            arguments=isolated.arguments,
            expected=truth,
            op=isolated.op,
            wrapper=isolated.wrapper,
            projection=isolated.projection,
            definitions=isolated.definitions,
        ),
        obs.produced or (obs.produced_error if obs.timeout_s else f"raises {obs.produced_error}"),
        truth,
        backend(),
        ctx.config,
        ctx.settings,
        ProgramCache(cache_dir, ctx.settings.config.cache_size),
        [
            (r.source, r.program)
            for r in ctx.oracles
            if as_fixes
            and r.program
            and r.value is not None
            and sandbox.values_equal(truth, r.value)
        ],
        work=work,
        more_programs=(lambda: fix_programs(ctx, isolated, truth, backend, work, cache_dir))
        if as_fixes
        else None,
    )
