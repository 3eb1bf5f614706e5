"""The language server's client settings: initializationOptions and the ``referee``
section of workspace/configuration, in the editor's camelCase. See docs/editors.md."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel


class _Section(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )


class JudgeSettings(_Section):
    """The L2 judge in the editor (``referee.judge.*``). Unset keys use the project's
    ``[tool.referee.judge]``, then the built-in defaults."""

    run: Literal["onSave", "manual", "off"] = Field(
        default="onSave", description="When the judge runs: on save, only on request, never."
    )
    backend: Literal["llama-cpp", "openai"] | None = Field(
        default=None, description="In-process llama-cpp (GGUF) or an OpenAI-compatible server."
    )
    model: str | None = Field(
        default=None, description="A known model id or the path of a GGUF file."
    )
    url: str | None = Field(
        default=None, description="Base URL of an OpenAI-compatible server (backend openai)."
    )
    perspectives: list[str] | None = Field(
        default=None, description="Perspectives to ask, e.g. strict, balanced, lenient."
    )
    divergence_threshold: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Below this share of one verdict: UNCLEAR."
    )


class TestSettings(_Section):
    """Running tests from the editor (``referee.tests.*``)."""

    run_on_save: bool = Field(
        default=False, description="Run the saved test file (and tests importing a saved module)."
    )


class ArbitrationSettings(_Section):
    """Arbitration of failing tests (``referee.arbitration.*``)."""

    oracles: int | None = Field(
        default=None, ge=1, le=9, description="k independent oracle programs to generate."
    )


class ExecutionSettings(_Section):
    """L2's execution checks in the editor (``referee.execution.*``): mutation grading of
    the saved tests, the differential check of the saved functions. The project's
    ``[tool.referee.execution]`` says what runs (``enabled = false``: nothing)."""

    run: Literal["onSave", "off"] = Field(
        default="onSave", description="Run the execution checks on save, or never."
    )


class ClientSettings(BaseModel):
    """What an editor may set for referee; every key optional."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True
    )

    select: list[str] | None = Field(
        default=None, description="Replaces the project's `select` (rule codes/prefixes)."
    )
    extend_select: list[str] = Field(default_factory=list)
    ignore: list[str] = Field(default_factory=list)
    run: Literal["onType", "onSave", "off"] = Field(
        default="onType", description="When L0/L1 run: as you type, on save, or never."
    )
    debounce_ms: int = Field(
        default=50, ge=0, le=5000, description="Quiet time after a change before checking."
    )
    configuration: str | None = Field(
        default=None, description="A referee.toml / pyproject.toml to use instead of the nearest."
    )
    python: str | None = Field(
        default=None,
        description="The interpreter that runs the project's tests (or its virtual "
        "environment), instead of the project's `python` setting and what referee finds.",
    )
    judge: JudgeSettings = Field(default_factory=JudgeSettings)
    tests: TestSettings = Field(default_factory=TestSettings)
    arbitration: ArbitrationSettings = Field(default_factory=ArbitrationSettings)
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)


def parse_settings(raw: Any) -> tuple[ClientSettings, str | None]:
    """Client settings from whatever the editor sent, and a problem to report, if any.

    Accepts the settings themselves or an object holding them under ``referee``; bad
    values fall back to the defaults rather than leaving the editor without diagnostics.
    """
    if isinstance(raw, dict) and isinstance(raw.get("referee"), dict):
        raw = raw["referee"]
    if not isinstance(raw, dict):
        return ClientSettings(), None
    try:
        return ClientSettings.model_validate(raw), None
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(part) for part in first["loc"])
        return ClientSettings(), f"referee settings: {key}: {first['msg']}; using defaults"
