"""The referee engine: every layer, as pure functions from text and settings to findings.

The engine never imports the language server or the terminal; front-ends live in
:mod:`referee.server`.
"""

from referee.checks.config import ConfigError, Settings, discover
from referee.checks.configuration import RefereeConfig
from referee.checks.engine import check_source, check_text
from referee.checks.models import Finding, Severity
from referee.checks.registry import RULES

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
