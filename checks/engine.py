"""The functional core: text and settings in, findings out. No I/O happens here."""

from __future__ import annotations

import re

from referee.checks.config import Settings
from referee.checks.guard.context import GuardContext
from referee.checks.models import Finding
from referee.checks.rule import Context, Rule, Violation
from referee.checks.source import SourceFile

# `# referee: ignore` (every rule) or `# referee: ignore[REF101, REF102]` on the line a
# finding starts on. In Markdown the same words may stand in an HTML comment.
_SUPPRESSION = re.compile(r"referee:\s*ignore(?!-)(?:\[([A-Za-z0-9,\s]*)\])?")


def suppressions(text: str) -> dict[int, frozenset[str] | None]:
    """1-based line → suppressed codes on that line (None: every code)."""
    if "referee:" not in text:
        return {}
    found: dict[int, frozenset[str] | None] = {}
    for row, line in enumerate(text.splitlines(), start=1):
        match = _SUPPRESSION.search(line)
        if match:
            codes = match.group(1)
            found[row] = (
                None
                if codes is None
                else frozenset(c.strip().upper() for c in codes.split(",") if c.strip())
            )
    return found


def _is_suppressed(finding: Finding, table: dict[int, frozenset[str] | None]) -> bool:
    if finding.span.start.line not in table:
        return False
    codes = table[finding.span.start.line]
    return codes is None or finding.code in codes


def _finding(rule: Rule, violation: Violation, path: str, settings: Settings) -> Finding:
    severity = settings.severity(rule, violation.severity or rule.severity)
    return Finding(
        code=rule.code,
        name=rule.name,
        layer=rule.layer,
        severity=severity,
        message=violation.message,
        path=path,
        span=violation.span,
        evidence=violation.evidence,
        fix=violation.fix,
        url=rule.url,
    )


def check_source(
    source: SourceFile,
    settings: Settings,
    relpath: str | None = None,
    guard: GuardContext | None = None,
    only: frozenset[str] | None = None,
) -> list[Finding]:
    """Run every enabled rule (or those of them in ``only``) on one decoded file and return
    its findings, sorted. ``guard`` gives the baseline the REF3xx rules compare with."""
    relpath = relpath if relpath is not None else source.path
    ctx = Context(
        source=source,
        config=settings.config,
        relpath=relpath,
        is_test_file=source.kind == "python" and settings.is_test_file(relpath),
        contracts=settings.contracts_for(relpath),
        root_name=settings.root.name,
        guard=guard,
    )
    findings = [
        _finding(rule, violation, source.path, settings)
        for rule in settings.rules_for(relpath, source.kind)
        if only is None or rule.code in only
        for violation in rule.check(ctx)
    ]
    table = suppressions(source.text)
    findings = [f for f in findings if not _is_suppressed(f, table)]
    findings.sort(key=lambda f: (f.span.start.line, f.span.start.column, f.code))
    return findings


def check_text(text: str, path: str, settings: Settings | None = None) -> list[Finding]:
    """Convenience for callers holding text (editors, tests): check it as ``path``."""
    return check_source(SourceFile(path, text), settings or Settings())
