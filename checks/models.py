"""Every type that crosses a boundary of the engine, as pydantic models, in one module.

Findings, configuration and reports are what the CLI prints as JSON and what the language
server turns into diagnostics, so their field names are part of referee's public interface
(see ``docs/output.md`` and ``docs/schema/check-report.schema.json``).
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
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


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


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
    findings: int
    by_severity: dict[Severity, int]
    by_code: dict[str, int]


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
        frozen=True, extra="forbid", alias_generator=_kebab, populate_by_name=True
    )


class Contract(_Config):
    """What a file matched by ``glob`` must contain; every key is optional.

    A contract is declared per glob in ``[[tool.referee.contract]]``. Each check it
    enables is its own rule (REF201–REF208), so it can be selected, ignored, given a
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
        default_factory=lambda: ["test_*.py", "*_test.py", "tests.py"],
        description="File-name globs that make a Python file a test module.",
    )
    max_file_size: int = Field(
        default=2_000_000, ge=1, description="Files larger than this many bytes are skipped."
    )
    respect_gitignore: StrictBool = True
    cache: StrictBool = True
    contract: list[Contract] = Field(default_factory=list)

    @field_validator("select", "extend_select", "ignore", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        # Before validation, so that `ref101` passes the selector pattern as REF101.
        if isinstance(value, list):
            return [item.upper() if isinstance(item, str) else item for item in value]
        return value


def json_schema() -> dict:
    """The JSON schema of ``referee check --format json``'s output."""
    schema = CheckReport.model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "referee check report"
    return schema


__all__ = [
    "CheckReport",
    "Contract",
    "Edit",
    "Finding",
    "Fix",
    "Layer",
    "Location",
    "RefereeConfig",
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
