"""``referee.checkWorkspace``: every file of every workspace folder checked, as
``referee check`` would, with cancellable progress; the files not open in the editor
get their diagnostics pushed (a pull client asks for the open ones)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from referee.server.lsp_feature import Command, LanguageFeature

if TYPE_CHECKING:
    from referee.server.lsp import RefereeServer


class WorkspaceCheck(LanguageFeature):
    name = "workspace_check"

    def commands(self) -> dict[str, Command]:
        return {"referee.checkWorkspace": check_workspace}


async def check_workspace(ls: RefereeServer, args: tuple[Any, ...]) -> dict[str, int]:
    """Check every file of every workspace folder, with progress; cancellable."""
    from referee.checks import runner  # the CLI's walker, gitignore and all

    window = ls.client_capabilities.window
    token: str | None = None  # clients without window/workDoneProgress still get the result
    if window and window.work_done_progress:
        token = f"referee-check-{uuid.uuid4()}"  # a token is used for one run only
        try:
            await ls.work_done_progress.create_async(token)
        except Exception:
            token = None
    targets: list[runner.Target] = []
    for folder in ls.folders():
        targets.extend(runner.collect([folder], ls.settings_for(folder / "_")))
    if token:
        ls.work_done_progress.begin(
            token,
            types.WorkDoneProgressBegin(title="referee: checking", cancellable=True, percentage=0),
        )
    files = findings = 0
    loop = asyncio.get_running_loop()
    try:
        for index, target in enumerate(targets):
            if token and ls.work_done_progress.tokens[token].cancelled():
                break
            settings = ls.settings_for(target.path.resolve())
            view = ls.project.view(settings, settings.relative(target.path), target.path)
            file_result = await loop.run_in_executor(
                ls.thread_pool, runner.check_file, target, settings, view
            )
            files += 1
            findings += len(file_result.findings)
            uri = target.path.resolve().as_uri()
            if uri not in ls.documents and not ls.pull_mode:
                lines = _read_lines(target.path)
                ls.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(
                        uri=uri,
                        diagnostics=[ls.diagnostic(f, lines) for f in file_result.findings],
                    )
                )
            if token and index % 10 == 0:
                ls.work_done_progress.report(
                    token,
                    types.WorkDoneProgressReport(
                        message=f"{index + 1}/{len(targets)} files",
                        percentage=int(100 * (index + 1) / max(len(targets), 1)),
                    ),
                )
    finally:
        if token:
            ls.work_done_progress.end(
                token, types.WorkDoneProgressEnd(message=f"{files} files, {findings} findings")
            )
            ls.work_done_progress.tokens.pop(token, None)
    return {"files": files, "findings": findings}


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        return [""]
