"""The types that cross a boundary of the engine, as pydantic models (configuration:
:mod:`referee.checks.configuration`).

Findings, reports, verdicts and certificates are what the CLI prints as JSON and what the language
server turns into diagnostics, so their field names are part of referee's public interface
(see ``docs/output.md`` and ``docs/schema/check-report.schema.json``).
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
)

# Where an expected value is written (referee.checks.arbitration.sites.Site.kind).
SiteKind = Literal[
    "assertion",
    "parametrize",
    "assignment",
    "local",
    "implicit",
    "computed",
    "call-site",
    "helper",
    "shared",
    "input",
]


class Severity(str, Enum):
    """How loudly a finding speaks. Only ``error`` makes ``referee check`` exit 1."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


class Layer(str, Enum):
    """The verification layer that produced a finding (see docs/index.md, "The layers")."""

    L0 = "L0"  # shape: cheap structural checks
    L1 = "L1"  # contracts and the anti-gaming guard
    L2 = "L2"  # the local model judge
    L3 = "L3"  # a person: the review queue


class _Model(BaseModel):
    # defer_build: a model's validator is built on its first use, not on import (building
    # all of them was most of the start-up of a run that checks nothing)
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Location(_Model):
    """A position in a file: 1-based line, 1-based column counted in characters."""

    line: int = Field(ge=1)
    column: int = Field(ge=1)


class Span(_Model):
    start: Location
    end: Location


class Edit(_Model):
    """Replace the text between ``span.start`` and ``span.end`` with ``content``."""

    span: Span
    content: str


class Fix(_Model):
    message: str
    edits: tuple[Edit, ...]
    applicability: Literal["safe", "unsafe"] = "safe"


class Finding(_Model):
    """One thing a rule found in one file."""

    code: str = Field(description="Stable rule code, e.g. REF101.")
    name: str = Field(description="The rule's kebab-case name, e.g. placeholder-body.")
    layer: Layer
    severity: Severity
    message: str
    path: str = Field(description="The file, as given on the command line or relative to it.")
    span: Span
    evidence: str | None = Field(
        default=None, description="The exact source text the finding is about."
    )
    fix: Fix | None = None
    url: str = Field(description="The rule's documentation page.")


class SkippedFile(_Model):
    """A file referee could not check, and why. Never counted as a finding."""

    path: str
    reason: str


class Summary(_Model):
    files_checked: int
    files_skipped: int
    files_with_findings: int = Field(description="How many of the files checked have findings.")
    findings: int
    by_severity: dict[Severity, int]
    by_code: dict[str, int]
    fixed: int = Field(
        default=0,
        description="Fixes applied by `--fix`; `findings` counts only those left after them.",
    )


class CheckReport(_Model):
    """What ``referee check --format json`` prints."""

    version: str
    findings: tuple[Finding, ...]
    skipped: tuple[SkippedFile, ...]
    summary: Summary


def json_schema() -> dict:
    """The JSON schema of ``referee check --format json``'s output."""
    schema = CheckReport.model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "referee check report"
    return schema


# ---------------------------------------------------------------------------- judge, L3

Verdict = Literal["PASS", "REJECT"]
Outcome = Literal["PASS", "REJECT", "UNCLEAR"]


class JudgeVerdict(_Model):
    """What one perspective of the judge said about one item, and whether its quotes hold."""

    perspective: str
    verdict: Verdict
    evidence: tuple[str, ...] = Field(description="Exact quotes from the item's text.")
    reason: str = ""
    hallucinated: tuple[str, ...] = Field(
        default=(), description="Quotes not found in the text (after whitespace normalisation)."
    )
    cached: bool = False


class Decision(_Model):
    """The outcome for one item: which layer decided, and why."""

    subject: str = Field(description="What was judged: a function, a test, or the whole file.")
    kind: Literal["task", "function", "test"]
    outcome: Outcome
    layer: Layer
    agreement: float = Field(description="Share of the most common verdict (1.0: unanimous).")
    reasons: tuple[str, ...] = ()
    verdicts: tuple[JudgeVerdict, ...] = ()
    span: Span | None = None
    content_sha256: str = ""
    audit: bool = Field(default=False, description="Passed, but sampled for a human audit.")


class ReviewItem(_Model):
    """One item waiting for (or decided by) a person, in ``.referee/review.jsonl``."""

    id: str = Field(description="Stable id: hash of kind, path, subject and content.")
    kind: Literal["judge", "audit", "arbitration", "execution"]
    path: str
    line: int = Field(ge=1)
    subject: str
    content_sha256: str
    title: str
    reasons: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    created: str
    decision: Literal["accepted", "rejected"] | None = None
    decided_by: str | None = None
    decided: str | None = None


__all__ = [
    "CheckReport",
    "Decision",
    "Edit",
    "Finding",
    "Fix",
    "JudgeVerdict",
    "Layer",
    "Location",
    "ReviewItem",
    "Severity",
    "SkippedFile",
    "Span",
    "Summary",
    "json_schema",
]


# --------------------------------------------------------------------------- certificates


class OracleEvidence(_Model):
    """One independent source of the expected value and what it said."""

    source: str = Field(description="doctest, reference, oracle-1, ...")
    value: str = Field(description="The value it produced, as Python repr.")
    detail: str | None = None


class Certificate(_Model):
    """Proof that a test's expected value was wrong, written when referee fixes a test.

    ``id`` is a hash over every other field: a certificate edited by hand no longer
    matches its id, and the guard reports it instead of honouring it.
    """

    id: str
    test_id: str = Field(description="pytest node id, e.g. tests/test_text.py::test_vowels")
    call: str = Field(description="The call under test, e.g. count_vowels('aeiou').")
    old_value: str = Field(description="The expected value the test asserted (source text).")
    new_value: str = Field(description="The certified value written instead (source text).")
    evidence: tuple[OracleEvidence, ...] = ()
    source_sha256: str | None = Field(
        default=None, description="sha256 of the function under test when certified."
    )
    test_sha256: str | None = Field(
        default=None, description="sha256 of the fixed assertion's text, whitespace removed."
    )
    created: str = Field(description="ISO 8601 time of certification.")


# --------------------------------------------------------------------------- arbitration

ArbitrationOutcome = Literal["TEST_WRONG", "SOURCE_WRONG", "UNCLEAR"]


class Observation(_Model):
    """A failing assertion as running its test showed it, and the call it is about."""

    test_id: str = Field(description="pytest node id relative to the project root.")
    path: str = Field(description="The test file, relative to the project root.")
    line: int = Field(ge=1, description="First line of the failing assertion.")
    assertion: str = Field(description="The failing assertion's text.")
    op: str | None = Field(
        default=None,
        description="The expectation: == or approx; truthy or falsy (assert f(x), assertTrue, "
        "assert not f(x), assertFalse); is or is not (True, False, None: assertIsNone, "
        "assertIs); in or not in (assertIn, `x in f(y)`).",
    )
    call: str | None = Field(default=None, description="The call under test, e.g. f('a').")
    function: str | None = Field(default=None, description="module:qualname of the callee.")
    function_path: str | None = Field(default=None, description="The callee's file.")
    produced: str | None = Field(default=None, description="repr of what the code produced.")
    produced_error: str | None = Field(
        default=None,
        description="The exception the call raised instead of returning, or 'did not return "
        "within N s' when it hung.",
    )
    timeout_s: float | None = Field(
        default=None,
        description="The call did not return within this many seconds (the test hung, "
        "arbitration.test-timeout): nothing was produced.",
    )
    asserted: str | None = Field(default=None, description="repr of the value asserted.")
    expected_text: str | None = Field(
        default=None, description="Source text of the expected value, where a fix would go."
    )
    expected_site: SiteKind | None = Field(
        default=None,
        description="Where the expected value is written: a literal in the assertion, a "
        "parametrize case or an assignment (a test fix can replace these); local: read from "
        "the failing test frame (a loop's case, a local variable) — never edited; implicit: "
        "the assertion's own expectation (assertTrue's True, assertIsNone's None); computed: "
        "an expression the test evaluates (datetime(2003, 9, 25)), its value as the failing "
        "comparison recorded it — never edited; call-site: a literal the test's one call of "
        "the helper that asserts passes (a test fix replaces it there); helper, shared: a "
        "literal in that helper, or at its call inside a loop, shared by other cases — never "
        "edited; input: a literal the call under test is given too (xs = [1], then assert "
        "f(xs) == xs) — never edited, as the edit would change the call.",
    )
    call_forms: tuple[str, ...] = Field(
        default=(), description="How the test wrote the call (see ArbitrationVerdict.call_forms)."
    )


class OracleResult(_Model):
    """What one independent source of truth said about the call under test."""

    source: str = Field(description="doctest, reference, oracle-1 … oracle-k.")
    status: Literal["ok", "error", "timeout", "memory", "output-limit", "killed", "refused"]
    value: str | None = Field(default=None, description="repr of its value when status is ok.")
    detail: str = Field(default="", description="Where it came from, or what went wrong.")
    duration_s: float = 0.0
    cached: bool = Field(default=False, description="An oracle program reused from the cache.")
    program: str | None = Field(default=None, description="An oracle's program text.")
    replaced_by: str | None = Field(
        default=None,
        description="An oracle that failed to run: the fresh oracle written in its place.",
    )


class PatchResult(_Model):
    """One candidate patch of the source and how it fared: refused before it ran, or
    judged by referee on the values it produced for the test module's asserted calls."""

    candidate: int = Field(ge=1)
    origin: str = Field(default="model", description="model, or the oracle whose program it is.")
    status: Literal["passed", "failed", "invalid", "refused"]
    message: str
    capabilities: tuple[str, ...] = Field(
        default=(),
        description="refused: what the patch would add that the original function did not "
        "use ('import os (line 3)', 'open() (line 5)'); it never ran.",
    )
    calls_verified: int | None = Field(
        default=None, description="Asserted calls whose value referee compared and found right."
    )
    calls_total: int | None = Field(
        default=None, description="Asserted calls of the test module referee could check by value."
    )
    pytest: str | None = Field(
        default=None,
        description="pytest's summary from the sandbox that ran the patch: it can refuse a "
        "patch, never certify one.",
    )


class ArbitrationFix(_Model):
    """The edit arbitration offers: to the test (with a certificate) or to the source."""

    side: Literal["test", "source"]
    title: str = Field(
        description="'Fix test (certified: 5)' or 'Fix source (verified 3/3 asserted calls)'."
    )
    path: str = Field(description="The file edited, relative to the project root.")
    edits: tuple[Edit, ...]
    diff: str = Field(description="The change as a unified diff.")
    content_sha256: str = Field(description="sha256 of the file the edits were computed on.")
    old_value: str | None = Field(default=None, description="Expected value replaced (test).")
    new_value: str | None = Field(default=None, description="Certified value written (test).")
    calls_verified: int | None = Field(
        default=None, description="Source: asserted calls referee checked by value and found right."
    )
    calls_total: int | None = Field(
        default=None, description="Source: asserted calls of the test module checked by value."
    )


class ArbitrationVerdict(_Model):
    """What ``referee arbitrate --format json`` prints."""

    version: str
    verdict: ArbitrationOutcome
    test_id: str
    call: str | None = None
    produced: str | None = None
    asserted: str | None = None
    truth: str | None = Field(default=None, description="The certified value, if any.")
    truth_source: str | None = Field(
        default=None,
        description="doctest, reference or oracles; oracles written from the project's own "
        "assertions say so: 'oracles (spec from suite: N examples)' (no docstring), "
        "'oracles (spec from docstring and suite: N examples)' (beside a docstring).",
    )
    spec_examples: tuple[str, ...] = Field(
        default=(),
        description="For oracles written from the suite: where each assertion they were held "
        "to is written (path:line: the assertion), and what was left out.",
    )
    oracles: tuple[OracleResult, ...] = ()
    oracles_replaced: int = Field(
        default=0, description="How many oracles failed to run and were replaced."
    )
    replaced_oracles: tuple[OracleResult, ...] = Field(
        default=(),
        description="The oracles that failed to run — no opinion about the value — each "
        "with why (status, detail) and replaced_by; they count for no agreement.",
    )
    patches: tuple[PatchResult, ...] = ()
    fix: ArbitrationFix | None = None
    reason: str
    history: str | None = Field(
        default=None, description="What git says about the expected value: evidence, not proof."
    )
    observation: Observation | None = None
    call_forms: tuple[str, ...] = Field(
        default=(),
        description="How the test wrote the call under test, beyond `assert f(literals) == "
        "literal`: unittest-method (self.assert*), assert-function (a bare assertEqual or "
        "nose's assert_equal), boolean (assert f(x), assertTrue/False), identity (is None, "
        "assertIsNone, assertIs), membership (in, assertIn), inequality (!=, "
        "assertNotEqual), ordering (<, <=, >, >=, assertGreater, assertLess...), raises "
        "(pytest.raises, "
        "assertRaises: an expected exception), parametrize, local (a local "
        "variable), loop-table (a loop over a table of cases), assigned-call (the call's "
        "value assigned, then compared; assertions between that only look at it allowed), "
        "unpacked-call (a name the test unpacks from the call, a, b = f(x): tuple(f(x))[1]), "
        "computed-expected (an expected value the test "
        "computes, never edited), projection (an attribute or a literal item of the call's "
        "value compared: parse(s).year, f(x)[0]), unpacked-argument (f(*args), f(**kwargs) of a "
        "literal list, tuple or dict), expression-argument (an argument of literals and known "
        'names joined by operators: "a" * 511, f"a{sep}b", [x, 2]), module-constant (an '
        "argument that is a literal constant "
        "of the test module), set-up-attribute and class-attribute (self.x bound once by the test "
        "class's setUp or body; class-attribute also for a class the test builds through "
        "one: self.parser_class(...) where the class body binds parser_class = Parser), "
        "method-of-set-up-object (self.x.method() of an object setUp "
        "builds from literals), method-of-fixture-object (x.method() of an object a fixture "
        "the test takes builds from literals), comparison-in-boolean "
        "(self.assertTrue(f(x) == y): the call's value observed by running it), method, "
        "staticmethod, classmethod; docs/arbitration.md lists them all.",
    )
    applied: bool = Field(default=False, description="Whether --apply wrote the fix.")
    certificate: Certificate | None = None
    review_item: str | None = Field(default=None, description="Id of the queued review item.")
    duration_s: float = 0.0


class ArbitrationFailure(_Model):
    """What ``referee arbitrate --format json`` prints when there is no verdict to print
    (exit status 2): no such test, a test that passes, no model, a file that changed."""

    version: str
    test_id: str
    verdict: None = Field(default=None, description="Always null: no verdict was reached.")
    error: str = Field(description="What went wrong, and what to do.")
    exit_status: int = Field(default=2, description="The command's exit status.")


def arbitration_schema() -> dict:
    """The JSON schema of ``referee arbitrate --format json``'s output: a verdict, or a
    failure when there was nothing to decide."""
    verdict = ArbitrationVerdict.model_json_schema(
        mode="serialization", ref_template="#/$defs/{model}"
    )
    failure = ArbitrationFailure.model_json_schema(
        mode="serialization", ref_template="#/$defs/{model}"
    )
    definitions = {**verdict.pop("$defs", {}), **failure.pop("$defs", {})}
    definitions["ArbitrationVerdict"] = verdict
    definitions["ArbitrationFailure"] = failure
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "referee arbitration verdict",
        "anyOf": [
            {"$ref": "#/$defs/ArbitrationVerdict"},
            {"$ref": "#/$defs/ArbitrationFailure"},
        ],
        "$defs": definitions,
    }
