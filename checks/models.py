"""Every type that crosses a boundary of the engine, as pydantic models, in one module.

Findings, configuration and reports are what the CLI prints as JSON and what the language
server turns into diagnostics, so their field names are part of referee's public interface
(see ``docs/output.md`` and ``docs/schema/check-report.schema.json``).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationInfo,
    field_validator,
    model_validator,
)


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


# --------------------------------------------------------------------------- configuration


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class _Config(BaseModel):
    """Configuration keys are kebab-case in TOML, like ruff's."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        alias_generator=_kebab,
        populate_by_name=True,
        defer_build=True,
    )

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """``max-file-size = true`` is a mistake, not the number 1 (pydantic's lax mode
        would read it as 1, and every file would be skipped)."""
        if isinstance(value, bool) and info.field_name is not None:
            annotation = cls.model_fields[info.field_name].annotation
            if annotation in (int, float, int | None, float | None):
                raise ValueError("expected a number, not true/false")
        return value


class Contract(_Config):
    """What a file matched by ``glob`` must contain; every key is optional.

    A contract is declared per glob in ``[[tool.referee.contract]]``. Each check it
    enables is its own rule (REF201–REF209), so it can be selected, ignored, given a
    severity or suppressed like any other.
    """

    glob: str | list[str] = Field(description="Glob(s) relative to the project root.")
    min_lines: int | None = Field(default=None, ge=0)
    min_chars: int | None = Field(default=None, ge=0)
    required_keywords: list[str] = Field(default_factory=list)
    min_keywords: int | None = Field(
        default=None,
        ge=0,
        description="How many of required-keywords must occur; default: all of them.",
    )
    min_keyword_ratio: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Alternatively, the share of required-keywords that must occur.",
    )
    forbidden_words: list[str] = Field(default_factory=list)
    required_headings: list[str] = Field(default_factory=list)
    expect_heading: StrictBool = False
    required_symbols: list[str] = Field(default_factory=list)
    min_tests: int | None = Field(default=None, ge=0)
    tests_pass: StrictBool = Field(
        default=False, description="The file reports a test run, which must have passed."
    )
    task: str | None = Field(
        default=None, description="What the file is for, in words; read by the L2 judge."
    )

    @property
    def globs(self) -> tuple[str, ...]:
        return (self.glob,) if isinstance(self.glob, str) else tuple(self.glob)

    @model_validator(mode="after")
    def _one_keyword_threshold(self) -> Contract:
        if self.min_keywords is not None and self.min_keyword_ratio is not None:
            raise ValueError("give min-keywords or min-keyword-ratio, not both")
        if self.min_keywords is not None and self.min_keywords > len(self.required_keywords):
            raise ValueError(
                f"min-keywords is {self.min_keywords} but required-keywords lists only "
                f"{len(self.required_keywords)}"
            )
        return self

    def keywords_needed(self) -> int:
        """How many of the required keywords must occur for the contract to hold."""
        total = len(self.required_keywords)
        if self.min_keywords is not None:
            return self.min_keywords
        if self.min_keyword_ratio is not None:
            # "at least a third of 6" is 2; a fraction of a keyword rounds up.
            needed = self.min_keyword_ratio * total
            return min(total, int(needed) + (needed > int(needed) + 1e-9))
        return total


RuleSelector = Annotated[str, Field(pattern=r"^(ALL|REF\d{0,3})$")]


class JudgeConfig(_Config):
    """``[tool.referee.judge]``: the L2 judge and the L3 review queue. See docs/judge.md."""

    backend: Literal["llama-cpp", "openai"] = Field(
        default="llama-cpp",
        description="In-process llama-cpp-python (GGUF) or an OpenAI-compatible server.",
    )
    model: str = Field(
        default="qwen2.5-coder-1.5b",
        description="A known model id, the path of a GGUF file, or the server's model name.",
    )
    url: str | None = Field(default=None, description="Base URL of the OpenAI-compatible server.")
    api_key_env: str | None = Field(
        default=None, description="Environment variable holding the server's API key."
    )
    perspectives: list[str] = Field(
        default_factory=lambda: ["strict", "balanced", "lenient"],
        min_length=1,
        description="Perspectives asked for every item (built-in or declared below).",
    )
    custom_perspectives: dict[str, str] = Field(
        default_factory=dict,
        description="Extra perspectives: name → instruction appended to the prompt.",
    )
    divergence_threshold: float = Field(
        default=0.8,
        ge=0.0,
        le=1.0,
        description="Below this share of the most common verdict, the item goes to L3.",
    )
    cost_ratio: float = Field(
        default=3.0, gt=0, description="Cost of a false negative relative to a false positive."
    )
    audit_rate: float = Field(
        default=0.05, ge=0.0, le=1.0, description="Base share of auto-passed items audited."
    )
    risk: dict[str, float] = Field(
        default_factory=dict, description="Glob → risk factor for audit sampling (default 1)."
    )
    constrain_evidence: StrictBool = Field(
        default=True,
        description="Constrain each quote to be one of the item's lines (where the backend can).",
    )
    max_tokens: int = Field(default=160, ge=16, le=4096)
    timeout: float = Field(
        default=120.0,
        gt=0,
        description="Seconds a model call may go without a sign of life: an HTTP request to "
        "the server, or the model process (killed after that, as a hang).",
    )
    runtime: Literal["auto", "safe", "fast"] = Field(
        default="auto",
        description="How the in-process model loads: fast (repacked weight buffers), safe "
        "(without them: slower, but no crash on AMX CPUs), or auto (safe on CPUs with AMX "
        "or where fast crashed before).",
    )
    threads: int | None = Field(
        default=None,
        ge=1,
        le=512,
        description="CPU threads of the in-process model (default: every core).",
    )


class GuardConfig(_Config):
    """``[tool.referee.guard]``: how `referee guard` judges a change. See docs/ci.md."""

    mode: Literal["default", "agent"] = Field(
        default="default",
        description="default: an expected value or check that changed together with the code "
        "it tests is a warning (an intended change); agent: every uncertified weakening is "
        "an error, for changes written by an AI agent.",
    )
    execute: Literal["agent", "always", "never"] = Field(
        default="agent",
        description="When the guard runs the tests that exercise changed code, in the "
        "sandbox, to find a test passing only by a value the change wrote into the code "
        "(REF334): in agent mode, always, or never.",
    )


class ArbitrationConfig(_Config):
    """``[tool.referee.arbitration]``: deciding which side of a red test is wrong.
    See docs/arbitration.md."""

    oracles: int = Field(
        default=3,
        ge=1,
        le=9,
        description="k oracle programs written from the signature and docstring.",
    )
    agreement: Literal["all"] | Annotated[int, Field(ge=1)] = Field(
        default="all", description="How many oracles must agree to certify a value: all, or N."
    )
    test_edit_oracles: int = Field(
        default=5,
        ge=1,
        le=9,
        description="Oracles a test edit needs when only oracles speak for the truth: the "
        "k first ones are extended to this many, and the extra ones must agree too.",
    )
    oracle_replacements: int = Field(
        default=24,
        ge=0,
        le=30,
        description="Oracle programs written, in all, in place of oracles that failed to run "
        "(did not parse, did not define the function, raised, timed out) or contradict one "
        "of the docstring's examples, before agreement is counted: for each, a fresh sample "
        "(in the first half of the budget with the docstring's examples written out as "
        "assertions, in the second asked as the first oracles were) and the model shown the "
        "failed program and what went wrong. time-budget bounds them too.",
    )
    candidates: int = Field(
        default=3, ge=0, le=9, description="N candidate patches tried when the source is wrong."
    )
    backend: Literal["llama-cpp", "openai"] | None = Field(
        default=None, description="The oracles' model backend; default: the judge's."
    )
    model: str | None = Field(default=None, description="The oracles' model; default: the judge's.")
    url: str | None = Field(
        default=None, description="OpenAI-compatible server; default: the judge's."
    )
    temperature: float = Field(
        default=0.7, ge=0.0, le=2.0, description="Sampling temperature of oracles and patches."
    )
    suite_examples: int = Field(
        default=2,
        ge=0,
        le=12,
        description="For a function with no docstring and no reference: the fewest of the "
        "project's own assertions about it (literal arguments and value, passing now, not "
        "changed in the working diff, never the failing test's) that oracles may be written "
        "from; with fewer the verdict is UNCLEAR. 0: never use the suite.",
    )
    references: dict[str, str] = Field(
        default_factory=dict,
        description='"module:function" → "module:function" or "path.py:function" of a trusted '
        "reference implementation.",
    )
    timeout: float = Field(
        default=10.0, gt=0, description="Seconds each oracle, reference or doctest run may take."
    )
    memory_mb: int = Field(default=512, ge=64, description="Memory each sandboxed run may use.")
    test_timeout: float = Field(
        default=120.0, gt=0, description="Seconds a run of the test module may take."
    )
    time_budget: float = Field(
        default=600.0,
        ge=0,
        description="Seconds one arbitration may spend on the model's work (oracles, "
        "replacements, patches) before it stops and says what it has: UNCLEAR when no truth "
        "was certified yet, SOURCE_WRONG without a fix when the fix was being looked for. "
        "0: no limit.",
    )

    @model_validator(mode="after")
    def _agreement_within_k(self) -> ArbitrationConfig:
        if isinstance(self.agreement, int) and self.agreement > self.oracles:
            raise ValueError(
                f"agreement is {self.agreement} but only {self.oracles} oracles are written"
            )
        return self

    @property
    def required_agreement(self) -> int:
        return self.oracles if self.agreement == "all" else int(self.agreement)

    @property
    def test_edit_total(self) -> int:
        """How many oracles are written before oracles alone may certify a test edit."""
        return max(self.oracles, self.test_edit_oracles)

    @property
    def test_edit_agreement(self) -> int:
        """How many of them must agree: all, or ``agreement`` plus every extra oracle."""
        if self.agreement == "all":
            return self.test_edit_total
        return int(self.agreement) + self.test_edit_total - self.oracles


MutationOperator = Literal[
    "return", "comparison", "arithmetic", "boundary", "constant", "negation", "statement"
]


class ExecutionConfig(_Config):
    """``[tool.referee.execution]``: L2's execution checks, run before the reading judge.
    See docs/judge.md#execution-first."""

    enabled: StrictBool = Field(
        default=True,
        description="Run the execution checks with the judge (`referee check --judge`, on "
        "save); `--execution` / `--no-execution` decide for one run.",
    )
    mutation: StrictBool = Field(
        default=True, description="Grade changed tests by the mutants of their targets (REF410)."
    )
    mutation_operators: list[MutationOperator] = Field(
        default_factory=lambda: [
            "return",
            "comparison",
            "arithmetic",
            "boundary",
            "constant",
            "negation",
            "statement",
        ],
        min_length=1,
        description="The kinds of mutant written, tried in this order, one of each in turn.",
    )
    max_mutants: int = Field(default=40, ge=1, le=500, description="Mutants per test, at most.")
    mutation_budget: float = Field(
        default=60.0,
        gt=0,
        description="Seconds of mutant runs per file and check (per save); a test not "
        "finished within it is not graded this time.",
    )
    mutation_timeout: float = Field(
        default=10.0, gt=0, description="Seconds one run of the test against a mutant may take."
    )
    differential: StrictBool = Field(
        default=True,
        description="Run changed functions with a docstring or reference beside the oracles "
        "(REF411, REF412).",
    )
    inputs: int = Field(
        default=40, ge=1, le=1000, description="Inputs per function, at most, all sources."
    )
    generated_inputs: int = Field(
        default=20,
        ge=0,
        le=1000,
        description="Of these, inputs generated from the annotations (hypothesis).",
    )
    generation_time: float = Field(
        default=2.0, gt=0, description="Seconds spent generating inputs per function."
    )
    proposed_inputs: int = Field(
        default=8,
        ge=0,
        le=40,
        description="Of these, inputs the model proposes from the signature and docstring "
        "(the cases and edge cases it names), in one request, when the oracles are written. "
        "0: none.",
    )


DEFAULT_TEST_FILES = ("test_*.py", "*_test.py", "tests.py")


class RefereeConfig(_Config):
    """The whole ``[tool.referee]`` table (or a ``referee.toml``). See docs/configuration.md."""

    select: list[RuleSelector] = Field(default_factory=lambda: ["ALL"])
    extend_select: list[RuleSelector] = Field(default_factory=list)
    ignore: list[RuleSelector] = Field(default_factory=list)
    per_file_ignores: dict[str, list[RuleSelector]] = Field(default_factory=dict)
    severity: dict[Annotated[str, Field(pattern=r"^REF\d{3}$")], Severity] = Field(
        default_factory=dict, description="Override a rule's default severity by code."
    )
    exclude: list[str] = Field(default_factory=list)
    extend_include: list[str] = Field(
        default_factory=list,
        description="Globs of non-Python files to check when walking directories.",
    )
    test_files: list[str] = Field(
        default_factory=lambda: list(DEFAULT_TEST_FILES),
        description="File-name globs that make a Python file a test module.",
    )
    max_file_size: int = Field(
        default=2_000_000, ge=1, description="Files larger than this many bytes are skipped."
    )
    respect_gitignore: StrictBool = True
    cache: StrictBool = True
    cache_size: int = Field(
        default=200_000_000,
        ge=1,
        description="The most bytes each of referee's caches keeps; least recently used go first.",
    )
    contract: list[Contract] = Field(default_factory=list)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    arbitration: ArbitrationConfig = Field(default_factory=ArbitrationConfig)
    guard: GuardConfig = Field(default_factory=GuardConfig)
    execution: ExecutionConfig = Field(default_factory=ExecutionConfig)
    python: str | None = Field(
        default=None,
        min_length=1,
        description="The interpreter that runs the project's tests (arbitration, mutation "
        "grading, the sandbox): a path, relative to the project root or absolute, to a "
        "Python or a virtual environment. Unset: $VIRTUAL_ENV, then .venv/ or venv/ in the "
        "project root, then referee's own.",
    )

    @field_validator("select", "extend_select", "ignore", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        # Before validation, so that `ref101` passes the selector pattern as REF101.
        if isinstance(value, list):
            return [item.upper() if isinstance(item, str) else item for item in value]
        return value


def default_config() -> RefereeConfig:
    """The configuration of a project without one. Built without validation (the defaults
    are valid by construction): validating them would build every configuration model's
    validator, the larger part of the start-up of a run that has no configuration."""
    return _constructed(RefereeConfig)


def _constructed(model: type[_Config]) -> Any:
    # a section's default is built the same way (its default factory would validate it)
    sections = {
        name: _constructed(info.default_factory)
        for name, info in model.model_fields.items()
        if isinstance(info.default_factory, type) and issubclass(info.default_factory, _Config)
    }
    return model.model_construct(**sections)


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
    "Contract",
    "Decision",
    "Edit",
    "Finding",
    "Fix",
    "GuardConfig",
    "JudgeConfig",
    "JudgeVerdict",
    "Layer",
    "Location",
    "RefereeConfig",
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
    expected_site: (
        Literal["assertion", "parametrize", "assignment", "local", "implicit", "computed"] | None
    ) = Field(
        default=None,
        description="Where the expected value is written: a literal in the assertion, a "
        "parametrize case or an assignment (a test fix can replace these); local: read from "
        "the failing test frame (a loop's case, a local variable) — never edited; implicit: "
        "the assertion's own expectation (assertTrue's True, assertIsNone's None); computed: "
        "an expression the test evaluates (datetime(2003, 9, 25)), its value as the failing "
        "comparison recorded it — never edited.",
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
        "assertions (no docstring) say so: 'oracles (spec from suite: N examples)'.",
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
        "assertIsNone, assertIs), membership (in, assertIn), raises (pytest.raises, "
        "assertRaises: an expected exception), parametrize, local (a local "
        "variable), loop-table (a loop over a table of cases), assigned-call (the call's "
        "value assigned once, then compared), computed-expected (an expected value the test "
        "computes, never edited), method, staticmethod, classmethod.",
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
