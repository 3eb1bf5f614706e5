"""Code actions of L0/L1's findings: a rule's fix, "ignore on this line", and
``source.fixAll.referee`` (every safe fix); the features' quick fixes beside them.

Offered lazily (the edit made on ``codeAction/resolve``) where the client resolves
edits; the edit is made against the current document, and not at all when the document
changed since the action was offered.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from referee.checks.document import Document, index_to_units
from referee.checks.models import Finding

if TYPE_CHECKING:
    from referee.server.lsp import RefereeServer, Result

FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.referee"
OPTIONS = types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=True
)


def _wanted(kind: str, only: Iterable[str] | None) -> bool:
    if not only:
        return kind != FIX_ALL_KIND  # fix-all is a source action: only when asked for
    return any(kind == k or kind.startswith(f"{k}.") for k in only)


def _overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (
        b.start.line,
        b.start.character,
    ) <= (a.end.line, a.end.character)


def _ignore_edit(ls: RefereeServer, document: Document, finding: Finding) -> types.TextEdit:
    """Append (or extend) a ``referee: ignore[...]`` comment on the finding's line."""
    row = min(finding.span.start.line - 1, len(document.lines) - 1)
    line = document.lines[row]
    marker = "referee: ignore["
    if marker in line:
        start = line.index(marker) + len(marker)
        close = line.find("]", start)
        if close != -1:
            column = index_to_units(line, close, ls.encoding)
            position = types.Position(line=row, character=column)
            return types.TextEdit(
                range=types.Range(start=position, end=position), new_text=f", {finding.code}"
            )
    end = types.Position(line=row, character=index_to_units(line, len(line), ls.encoding))
    comment = (
        f"  # referee: ignore[{finding.code}]"
        if document.kind == "python"
        else f" <!-- referee: ignore[{finding.code}] -->"
    )
    return types.TextEdit(range=types.Range(start=end, end=end), new_text=comment)


def _fix_all_edits(ls: RefereeServer, document: Document, result: Result) -> list[types.TextEdit]:
    """Every safe fix, skipping any that overlaps one already taken."""
    lines = document.text.split("\n")
    taken: list[types.Range] = []
    edits: list[types.TextEdit] = []
    for finding in result.findings:
        if finding.fix is None or finding.fix.applicability != "safe":
            continue
        fix_edits = ls.edits(lines, finding.fix)
        if any(_overlaps(e.range, t) for e in fix_edits for t in taken):
            continue
        taken.extend(e.range for e in fix_edits)
        edits.extend(fix_edits)
    return edits


def _finding_key(finding: Any) -> list[Any]:
    span = finding.span
    return [finding.code, span.start.line, span.start.column, span.end.line, span.end.column]


def _offered_finding(result: Result, data: dict[str, Any]) -> Any:
    """The finding a code action was offered for, in the current result: the same code
    at the same place. A re-check of the same version (the settings changed) may have
    dropped or reordered findings, so the index alone could name another one."""
    key = data.get("finding")
    index = data.get("index")
    if (
        isinstance(index, int)
        and 0 <= index < len(result.findings)
        and _finding_key(result.findings[index]) == key
    ):
        return result.findings[index]
    return next((f for f in result.findings if _finding_key(f) == key), None)


def _action_edit(ls: RefereeServer, data: dict[str, Any]) -> types.WorkspaceEdit | None:
    """The edit a code action's ``data`` describes, against the current document; None if
    the document changed since the action was offered."""
    uri = data["uri"]
    document = ls.documents.get(uri)
    result = ls.results.get(uri)
    if document is None or result is None or document.version != data.get("version"):
        return None
    if data["action"] == "fixAll":
        edits = _fix_all_edits(ls, document, result)
    else:
        finding = _offered_finding(result, data)
        if finding is None:  # re-checked since (new settings), and that finding is gone
            return None
        if data["action"] == "fix" and finding.fix is not None:
            edits = ls.edits(document.text.split("\n"), finding.fix)
        else:
            edits = [_ignore_edit(ls, document, finding)]
    if not ls.document_changes:  # the client takes only the unversioned form
        return types.WorkspaceEdit(changes={uri: edits})
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri, version=document.version
                ),
                edits=edits,
            )
        ]
    )


async def code_action(
    ls: RefereeServer, params: types.CodeActionParams
) -> list[types.CodeAction] | None:
    uri = params.text_document.uri
    document = ls.documents.get(uri)
    if document is None:
        return None
    result = await ls.current_result(uri)
    if result is None:
        return None
    only = params.context.only
    lines = document.text.split("\n")
    actions: list[types.CodeAction] = []
    base = {"uri": uri, "version": result.version}

    def offer(title: str, kind: str, data: dict[str, Any], **extra: Any) -> None:
        action = types.CodeAction(title=title, kind=kind, data={**base, **data}, **extra)
        if not ls.lazy_code_actions:
            action.edit = _action_edit(ls, action.data)
        actions.append(action)

    if _wanted(types.CodeActionKind.QuickFix.value, only):
        for index, finding in enumerate(result.findings):
            diagnostic = ls.diagnostic(finding, lines)
            # The lines the request covers, not only the underlined columns: "ignore on
            # this line" must be on offer with the cursor anywhere on the line.
            first, last = params.range.start.line, params.range.end.line
            on_lines = first <= diagnostic.range.start.line <= last
            if not (on_lines or _overlaps(diagnostic.range, params.range)):
                continue
            if finding.fix is not None:
                offer(
                    f"{finding.fix.message} ({finding.code})",
                    types.CodeActionKind.QuickFix.value,
                    {"action": "fix", "index": index, "finding": _finding_key(finding)},
                    diagnostics=[diagnostic],
                    is_preferred=finding.fix.applicability == "safe",
                )
            offer(
                f"Ignore {finding.code} on this line",
                types.CodeActionKind.QuickFix.value,
                {"action": "ignore", "index": index, "finding": _finding_key(finding)},
                diagnostics=[diagnostic],
            )
        # The later layers' first: a failing test's arbitration, a reading's review, a
        # counterexample's test and fix (the features' list runs the other way).
        for feature in reversed(ls.features):
            actions.extend(feature.code_actions(ls, uri, params))
    if _wanted(FIX_ALL_KIND, only) and any(
        f.fix is not None and f.fix.applicability == "safe" for f in result.findings
    ):
        offer("referee: fix all safe fixes", FIX_ALL_KIND, {"action": "fixAll"})
    return actions


def code_action_resolve(ls: RefereeServer, action: types.CodeAction) -> types.CodeAction:
    if isinstance(action.data, dict) and "uri" in action.data:
        action.edit = _action_edit(ls, action.data)
    return action
