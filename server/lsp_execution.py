"""L2's execution checks in the language server: run on save, in the background.

Saving a Python file runs :func:`referee.checks.execution.run.check_file` on it — each
changed test graded by the mutants of its target (REF410), each changed function with a
docstring run beside its spec's oracle programs (REF411, REF412) — on a thread of its own
(never the event loop, never the judge's thread), with cancellable work-done progress. A
newer save of the same file cancels the older run (so does closing it); the sandbox runs
already started finish on their own within their time limits. The oracles' model is
arbitration's (:class:`~referee.checks.arbitration.truth.LazyModel`), which for llama-cpp
runs in referee's model worker process, never in this one.

The findings are kept apart from L0/L1's and the judge's and published beside them; like
the judge's they stay until the next run, moved with their lines as the text above them
is edited and withdrawn when their own lines are.

Runs when the project's ``execution.enabled`` is true (``[tool.referee.execution]``) and
the editor's ``referee.execution.run`` is ``onSave`` (the default).

The code action "Add the counterexample as a test" on a REF411 diagnostic runs
``referee.execution.addTest`` with ``[{"uri": str, "function": str}]``: a new test that
asserts the value the oracles agreed on is appended to a test module that imports the
function (a new test module where none does), through ``workspace/applyEdit``, and its
certificate is written to ``.referee/certificates.jsonl`` once the editor applied it.
"""

from __future__ import annotations

import ast
import asyncio
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from referee.checks.cache import default_cache_dir
from referee.checks.config import Settings
from referee.checks.models import Finding
from referee.checks.progress import Work
from referee.server import lsp_counterexample
from referee.server.lsp_feature import (
    Command,
    LayerResults,
    baseline_text,
    quick_fix,
    review_actions,
)
from referee.server.progress import WorkProgress

if TYPE_CHECKING:
    from referee.checks.execution.differential import Differential
    from referee.server.lsp import RefereeServer

log = logging.getLogger("referee.server.execution")

ADD_TEST = lsp_counterexample.ADD_TEST
FIX_SOURCE = lsp_counterexample.FIX_SOURCE


@dataclass
class Executed:
    """The execution checks' findings for one document, and the text they ran on."""

    version: int | None
    text: str
    relpath: str
    root: Path
    findings: list[Finding]
    extents: dict[int, tuple[int, int]] = field(default_factory=dict)  # index -> lines
    rejected: dict[str, Differential] = field(default_factory=dict)  # function -> REF411
    review_ids: dict[str, str] = field(default_factory=dict)  # function -> REF412 item
    serial: int = 0
    # The functions a counterexample rejected (REF411 or not: one the rule selection or an
    # ignore comment hides is decided all the same): the reading judge does not read them.
    decided: set[str] = field(default_factory=set)


class ExecutionService(LayerResults):
    """The mutation and differential checks on save, and their quick fixes."""

    name = "execution"
    log = log
    results: dict[str, Executed]
    failure = "the execution checks of %s failed"

    def __init__(self) -> None:
        super().__init__()
        self._serial = 0

    # ------------------------------------------------------------------ settings

    def settings_for(self, ls: RefereeServer, path: Path) -> Settings:
        """The project's settings with the editor's judge model and oracle count on top
        (the oracles are arbitration's, written by the judge's model unless set)."""
        settings = ls.judge.settings_for(ls, path)
        oracles = ls.client_settings(path).arbitration.oracles
        if oracles is None:
            return settings
        config = settings.config.arbitration
        update: dict[str, Any] = {"oracles": oracles}
        if isinstance(config.agreement, int) and config.agreement > oracles:
            update["agreement"] = "all"
        return settings.with_sections(arbitration=config.model_copy(update=update))

    def wanted(self, ls: RefereeServer, path: Path) -> bool:
        if path.suffix != ".py" or ls.client_settings(path).execution.run != "onSave":
            return False
        config = ls.settings_for(path).config.execution
        return config.enabled and (config.mutation or config.differential)

    # ------------------------------------------------------------------ running

    def did_save(self, ls: RefereeServer, uri: str) -> None:
        # First of the layers on save: a newer save cancels the older run, and the judge
        # waits for this one (what it rejects is not read: execution overrides reading).
        if uri in ls.documents and self.wanted(ls, ls.path_of(uri)):
            self.start(ls, uri)

    def did_close(self, ls: RefereeServer, uri: str) -> None:
        self.forget(uri)

    def status(self, ls: RefereeServer) -> dict[str, Any]:
        return {"execution": "running" if self.running else "idle"}

    def commands(self) -> dict[str, Command]:
        return {
            ADD_TEST: lsp_counterexample.add_test_command,
            FIX_SOURCE: lsp_counterexample.fix_source_command,
        }

    async def _run(
        self, ls: RefereeServer, uri: str, text: str, version: int | None, stop: threading.Event
    ) -> None:
        path = ls.path_of(uri)
        settings = self.settings_for(ls, path)
        progress = WorkProgress(ls, "execution", cancellable=True)
        await progress.begin(f"referee: running {path.name}'s changes")
        loop = asyncio.get_running_loop()
        work = progress.work(loop, stop)
        try:
            executed = await loop.run_in_executor(
                self.executor, self._execute, path, text, version, settings, work
            )
        except asyncio.CancelledError:
            stop.set()  # the thread sees it at its next mutant or input
            raise
        finally:
            progress.end()
        if executed is None or work.cancelled():
            return
        self._serial += 1
        executed.serial = self._serial
        self.results[uri] = executed
        ls.publish_all(uri)

    def _execute(
        self,
        path: Path,
        text: str,
        version: int | None,
        settings: Settings,
        work: Work,
    ) -> Executed | None:
        from referee.checks.arbitration.truth import LazyModel
        from referee.checks.engine import check_source
        from referee.checks.execution.run import ProjectFiles, check_file
        from referee.checks.source import SourceFile, kind_of

        if work.cancelled():
            return None
        relpath = settings.relative(path)
        source = SourceFile(str(path), text, kind_of(str(path)))
        findings = check_source(source, settings, relpath)
        model = LazyModel.from_settings(settings.config.arbitration, settings.config.judge)
        executed = check_file(
            source,
            settings,
            relpath,
            findings,
            baseline=baseline_text(path),
            files=ProjectFiles(settings),
            model=model,
            cache_dir=default_cache_dir() if settings.config.cache else None,
            work=work,
        )
        for note in executed.notes:
            log.info("execution: %s: %s", relpath, note)
        if executed.cancelled:
            return None
        extents = _extents(text)
        return Executed(
            version,
            text,
            relpath,
            settings.root,
            executed.findings,
            {
                index: extents.get(f.span.start.line, (f.span.start.line, f.span.end.line))
                for index, f in enumerate(executed.findings)
            },
            {
                d.function: d
                for d in executed.differentials
                if d.status == "REJECT" and any(f.code == "REF411" for f in executed.findings)
            },
            executed.review_ids,
            decided=set(executed.decided),
        )

    def decided(self, ls: RefereeServer, uri: str, item_id: str) -> None:
        """A person decided review item ``item_id``: when it is one of ``uri``'s REF412,
        run the checks again (from their caches: an accepted item is then no longer
        reported, a rejected one is a REF403), or, when they do not run on save, take
        the "needs review" diagnostic away."""
        executed = self.results.get(uri)
        if executed is None or item_id not in executed.review_ids.values():
            return
        if self.wanted(ls, ls.path_of(uri)):
            self.start(ls, uri)
            return
        subjects = {name for name, known in executed.review_ids.items() if known == item_id}
        keep = [
            i
            for i, f in enumerate(executed.findings)
            if not (f.code == "REF412" and f.message.split(":", 1)[0] in subjects)
        ]
        executed.extents = {
            new: executed.extents[old] for new, old in enumerate(keep) if old in executed.extents
        }
        executed.findings = [executed.findings[i] for i in keep]
        self._serial += 1
        executed.serial = self._serial
        ls.publish_all(uri)

    def forget(self, uri: str) -> None:
        self.cancel(uri)
        self.results.pop(uri, None)

    # ------------------------------------------------------------------ output

    def diagnostics(self, ls: RefereeServer, uri: str) -> list[types.Diagnostic]:
        executed = self.results.get(uri)
        if executed is None:
            return []
        document = ls.documents.get(uri)
        now = document.text if document is not None else executed.text
        lines = now.split("\n")
        moved = self._moved(uri, executed, now)
        out = []
        for index, finding in enumerate(executed.findings):
            first, last = executed.extents.get(
                index, (finding.span.start.line, finding.span.end.line)
            )
            shift = moved(first, last)
            if shift is None:
                continue  # the function or test it was about was edited: stale until saved
            if shift:
                from referee.checks.engine import shifted

                (finding,) = shifted([finding], shift)
            diagnostic = ls.diagnostic(finding, lines)
            if finding.evidence:
                diagnostic.message = f"{finding.message}\n{finding.evidence}"
            subject = finding.message.split(":", 1)[0]
            data = dict(diagnostic.data or {})
            data["layer"] = "execution"
            if finding.code == "REF411" and subject in executed.rejected:
                data["function"] = subject
            if finding.code == "REF412" and subject in executed.review_ids:
                data["reviewId"] = executed.review_ids[subject]
            diagnostic.data = data
            out.append(diagnostic)
        return out

    def result_tag(self, uri: str) -> str:
        executed = self.results.get(uri)
        return "" if executed is None else f"-x{executed.serial}"

    def code_actions(
        self, ls: RefereeServer, uri: str, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        actions = []
        executed = self.results.get(uri)
        for diagnostic in self.diagnostics_on(ls, uri, params):
            data = diagnostic.data or {}
            function = data.get("function")
            if diagnostic.code == "REF411" and executed is not None and function:
                rejected = executed.rejected[function]
                arguments = [{"uri": uri, "function": function}]
                title = f"Add {rejected.call} == {rejected.truth} as a test (certified)"
                actions.append(quick_fix(diagnostic, title, ADD_TEST, arguments))
                fix_title = f"Fix {function} so that {rejected.call} == {rejected.truth} (verified)"
                actions.append(quick_fix(diagnostic, fix_title, FIX_SOURCE, arguments))
            item_id = data.get("reviewId")
            if diagnostic.code == "REF412" and item_id:
                actions.extend(review_actions(diagnostic, item_id, uri))
        return actions


def _extents(text: str) -> dict[int, tuple[int, int]]:
    """First line (the ``def``'s, and its first decorator's) -> (first, last) line of
    every function and method: an edit anywhere in one makes its finding stale."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    out: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            top = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            last = node.end_lineno or node.lineno
            out[node.lineno] = (top, last)
            out[top] = (top, last)
    return out
