"""The referee engine: every layer, as pure functions from text and settings to findings.

The engine never imports the language server or the terminal; front-ends live in
:mod:`referee.server`.

The names below are imported when first used (PEP 562), not with the package: a process
that needs one part of the engine (the sandbox, arbitration, the hook) does not pay for
every rule's module, which was a third of each command's start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from referee.checks.config import ConfigError, Settings, discover
    from referee.checks.configuration import RefereeConfig
    from referee.checks.engine import check_source, check_text
    from referee.checks.models import Finding, Severity
    from referee.checks.registry import RULES

_WHERE = {
    "ConfigError": "referee.checks.config",
    "Settings": "referee.checks.config",
    "discover": "referee.checks.config",
    "RefereeConfig": "referee.checks.configuration",
    "check_source": "referee.checks.engine",
    "check_text": "referee.checks.engine",
    "Finding": "referee.checks.models",
    "Severity": "referee.checks.models",
    "RULES": "referee.checks.registry",
}

__all__ = [
    "RULES",
    "ConfigError",
    "Finding",
    "RefereeConfig",
    "Settings",
    "Severity",
    "check_source",
    "check_text",
    "discover",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
