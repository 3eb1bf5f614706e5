"""The language server's client settings: initializationOptions and the ``referee``
section of workspace/configuration, in the editor's camelCase. See docs/editors.md."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel


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
