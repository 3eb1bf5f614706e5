"""referee's configuration as pydantic models: the ``[tool.referee]`` table of
``pyproject.toml`` (or ``referee.toml``) and its sub-tables, validated with clear errors.
Keys are kebab-case in TOML, like ruff's; :func:`default_config` is every default."""

from __future__ import annotations

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

from referee.checks.models import Severity


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
        description=(
            "CPU threads of the in-process model, for prompts and decoding alike "
            "(default: every core)."
        ),
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
    suite_beside_docstring: bool = Field(
        default=False,
        description="For a documented function whose docstring gives fewer examples than "
        "suite-examples: its oracles must also reproduce the suite's assertions about it "
        "(at least suite-examples of them), shown after the docstring.",
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
        "Python or a virtual environment. Unset: $VIRTUAL_ENV, then .venv/, venv/ or another "
        "environment directory in the project root, then $CONDA_PREFIX, then referee's own.",
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


__all__ = [
    "ArbitrationConfig",
    "Contract",
    "ExecutionConfig",
    "GuardConfig",
    "JudgeConfig",
    "RefereeConfig",
    "default_config",
]
