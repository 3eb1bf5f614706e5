"""Rendering a check report: ruff-like text, JSON (the pydantic models), SARIF 2.1.0."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from urllib.parse import quote

from rich.console import Console
from rich.markup import escape

from referee import __version__
from referee.checks.fixes import applicable
from referee.checks.models import ArbitrationVerdict, CheckReport, Finding, Severity
from referee.checks.rule import Rule

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
_SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def text(
    report: CheckReport,
    console: Console,
    statistics: bool = False,
    *,
    unsafe_fixes: bool = False,
    fixing: bool = False,
) -> None:
    """``path:line:col: CODE message``, one per line, then a summary. ``[*]`` marks a
    finding ``--fix`` would fix with these options (an unsafe fix only with
    ``unsafe_fixes``); ``fixing``: the run was ``--fix``, and says how many it applied."""
    for f in report.findings:
        fixable = " [*]" if applicable(f.fix, unsafe_fixes) else ""
        console.print(
            f"[bold]{escape(f.path)}[/]:{f.span.start.line}:{f.span.start.column}: "
            f"[{_STYLE[f.severity]}]{f.code}[/]{fixable} {escape(f.message)}",
            highlight=False,
            soft_wrap=True,
        )
    if statistics:
        from referee.checks.registry import BY_CODE  # every rule's module: only here

        counts = Counter((f.code, f.severity) for f in report.findings)
        for (code, severity), count in counts.most_common():
            console.print(
                f"{count:>6}  {code}  {BY_CODE[code].name:<28} {severity.value}",
                highlight=False,
            )
    summary = report.summary
    if fixing and summary.fixed:
        console.print(
            f"Fixed {_count(summary.fixed, 'finding')} ({summary.findings} remaining).",
            highlight=False,
        )
    if summary.findings:
        parts = [
            _count(summary.by_severity[s], s.value, plural=s is not Severity.INFO)
            for s in Severity
            if summary.by_severity.get(s, 0)
        ]
        console.print(
            f"Found {_count(summary.findings, 'finding')} ({', '.join(parts)}) in "
            f"{_count(summary.files_with_findings, 'file')}; "
            f"{_count(summary.files_checked, 'file')} checked.",
            highlight=False,
        )
    else:
        console.print(
            f"[green]All checks passed![/] ({_count(summary.files_checked, 'file')})",
            highlight=False,
        )
    hint = fix_hint(report, unsafe_fixes, fixing)
    if hint:
        console.print(escape(hint), highlight=False, soft_wrap=True)


def fix_hint(report: CheckReport, unsafe_fixes: bool, fixing: bool) -> str | None:
    """What ``--fix`` (and ``--unsafe-fixes``) would do about the findings, as ruff says
    it: ``[*] 2 fixable with --fix (1 more with --fix --unsafe-fixes).``"""
    fixes = [f.fix for f in report.findings if f.fix is not None]
    ready = sum(1 for fix in fixes if applicable(fix, unsafe_fixes))
    hidden = len(fixes) - ready
    unsafe = f"{hidden} unsafe {'fix' if hidden == 1 else 'fixes'}"
    if fixing:
        if hidden:
            it = "it" if hidden == 1 else "them"
            return f"{unsafe} not applied; add --unsafe-fixes to apply {it}."
        return None
    if ready:
        more = f" ({hidden} more with --fix --unsafe-fixes)" if hidden else ""
        return f"[*] {ready} fixable with --fix{more}."
    if hidden:
        return f"No safe fixes; {unsafe} can be applied with --fix --unsafe-fixes."
    return None


def _count(n: int, noun: str, plural: bool = True) -> str:
    return f"{n} {noun}{'s' if plural and n != 1 else ''}"


def as_json(report: CheckReport) -> str:
    return report.model_dump_json(indent=2)


def _uri(path: str) -> str:
    """A relative URI reference, as SARIF requires: ``my test#1.py`` is ``my%20test%231.py``
    (a raw ``#`` would start a fragment, a raw ``%`` an escape)."""
    return quote(Path(path).as_posix(), safe="/")


def _region(f: Finding) -> dict:
    return {
        "startLine": f.span.start.line,
        "startColumn": f.span.start.column,
        "endLine": f.span.end.line,
        "endColumn": f.span.end.column,
    }


def sarif(report: CheckReport) -> str:
    """SARIF 2.1.0, as GitHub code scanning reads it."""
    from referee.checks.registry import RULES  # every rule's module: only here

    rules = list(RULES)
    index = {rule.code: i for i, rule in enumerate(rules)}
    notifications = [
        {
            "level": "warning",
            "message": {"text": f"skipped: {s.reason}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(s.path)}}}],
        }
        for s in report.skipped
    ]
    document = {
        "$schema": _SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "referee",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "informationUri": "https://github.com/referee-dev/referee",
                        "rules": [_sarif_rule(rule) for rule in rules],
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": True,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": [_sarif_result(f, index[f.code]) for f in report.findings],
            }
        ],
    }
    return json.dumps(document, indent=2)


def _sarif_rule(rule: Rule) -> dict:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.message},
        "fullDescription": {
            "text": rule.documentation.split("\n\n")[0].removeprefix("## What it does\n")
        },
        "helpUri": rule.url,
        "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
        "properties": {"layer": rule.layer.value},
    }


def _sarif_result(f: Finding, rule_index: int) -> dict:
    """One finding as a SARIF result, with its evidence and its fix."""
    result: dict = {
        "ruleId": f.code,
        "ruleIndex": rule_index,
        "level": _SARIF_LEVEL[f.severity],
        "message": {"text": f.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(f.path), "uriBaseId": "%SRCROOT%"},
                    "region": _region(f),
                }
            }
        ],
    }
    if f.evidence:
        # what backs the finding: the judge's quotes, a counterexample, surviving mutants
        result["properties"] = {"evidence": f.evidence}
    if f.fix is not None:
        result["fixes"] = [
            {
                "description": {"text": f.fix.message},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": _uri(f.path), "uriBaseId": "%SRCROOT%"},
                        "replacements": [
                            {
                                "deletedRegion": {
                                    "startLine": e.span.start.line,
                                    "startColumn": e.span.start.column,
                                    "endLine": e.span.end.line,
                                    "endColumn": e.span.end.column,
                                },
                                "insertedContent": {"text": e.content},
                            }
                            for e in f.fix.edits
                        ],
                    }
                ],
            }
        ]
    return result


_GITHUB_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _github_data(value: str) -> str:
    """A workflow command's message: ``%``, CR and LF escaped, as the runner unescapes."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_property(value: str) -> str:
    """A workflow command's property value: also ``:`` and ``,``, which end a value."""
    return _github_data(value).replace(":", "%3A").replace(",", "%2C")


def _github_command(level: str, properties: dict[str, object], message: str) -> str:
    props = ",".join(f"{key}={_github_property(str(value))}" for key, value in properties.items())
    return f"::{level} {props}::{_github_data(message)}"


def github(report: CheckReport) -> str:
    """GitHub Actions workflow commands, one per finding: an annotation on the line in the
    pull request's diff and in the run's summary. A skipped file is a warning on the file.
    No summary line: the job's log shows the commands as annotations."""
    lines = []
    for f in report.findings:
        properties = {
            "file": Path(f.path).as_posix(),
            "line": f.span.start.line,
            "col": f.span.start.column,
            "endLine": f.span.end.line,
            "endColumn": f.span.end.column,
            "title": f"{f.code} ({f.name})",
        }
        lines.append(_github_command(_GITHUB_LEVEL[f.severity], properties, f.message))
    for skipped in report.skipped:
        properties = {"file": Path(skipped.path).as_posix(), "title": "referee: skipped"}
        lines.append(_github_command("warning", properties, f"skipped: {skipped.reason}"))
    return "\n".join(lines)


# ------------------------------------------------------------------------- arbitration

_VERDICT_STYLE = {"TEST_WRONG": "bold yellow", "SOURCE_WRONG": "bold red", "UNCLEAR": "bold cyan"}


def arbitration_text(verdict: ArbitrationVerdict, console: Console, applied: bool) -> None:
    """The verdict of ``referee arbitrate``: what was observed, what each source said, the
    decision and the fix."""
    rows = [("call", verdict.call), ("produced", verdict.produced), ("asserted", verdict.asserted)]
    console.print(f"[bold]{escape(verdict.test_id)}[/]", soft_wrap=True)
    for name, value in rows:
        if value is not None:
            console.print(f"  {name:<10} {escape(value)}", soft_wrap=True, highlight=False)
    for source in verdict.oracles:
        said = source.value if source.status == "ok" else f"{source.status}: {source.detail}"
        where = f"   {source.detail}" if source.status == "ok" and source.detail else ""
        cached = " (cached)" if source.cached else ""
        console.print(
            f"  {source.source:<10} {escape(str(said))}{escape(where)}{cached}",
            soft_wrap=True,
            highlight=False,
        )
    for gone in verdict.replaced_oracles:
        console.print(
            f"  {gone.source:<10} {escape(f'{gone.status}: {gone.detail}')} "
            f"(did not run; replaced by {escape(gone.replaced_by or '?')})",
            soft_wrap=True,
            highlight=False,
        )
    for patch in verdict.patches:
        label = f"patch {patch.candidate}"
        console.print(
            f"  {label:<10} {patch.status} ({patch.origin}): {escape(patch.message)}",
            soft_wrap=True,
            highlight=False,
        )
    for example in verdict.spec_examples:
        # the suite's assertions the oracles were held to (a function with no docstring)
        console.print(f"  suite      {escape(example)}", soft_wrap=True, highlight=False)
    if verdict.history:
        console.print(f"  history    {escape(verdict.history)}", soft_wrap=True, highlight=False)
    console.print(
        f"[{_VERDICT_STYLE[verdict.verdict]}]{verdict.verdict}[/]: {escape(verdict.reason)}",
        soft_wrap=True,
        highlight=False,
    )
    if verdict.fix is not None:
        console.print(f"{escape(verdict.fix.title)}:", soft_wrap=True)
        console.out(verdict.fix.diff.rstrip("\n"), highlight=False)
        if verdict.applied:
            certificate = verdict.certificate
            note = f"; certificate {certificate.id} written" if certificate else ""
            console.print(f"applied to {escape(verdict.fix.path)}{note}", soft_wrap=True)
        elif not applied:
            console.print("run again with --apply to write it", soft_wrap=True)
    if verdict.review_item:
        console.print(f"queued for review as {verdict.review_item}", soft_wrap=True)
