"""The model layers in the language server: the L2 judge on save, the L3 review queue.

The judge runs on its own single worker thread (never on the event loop, never in the pool
that computes L0/L1 diagnostics, so typing stays immediate while the model thinks), with
work-done progress, and is cancelled when the document changes again. Its findings are kept
apart from L0/L1's and published beside them, never instead of them; they stay until the
next judge run of that document, moved with their lines as the text above them is edited
and withdrawn when their own lines are.

Execution overrides reading: when the execution checks run on save, the judge waits for
their run on the same text (at most ``EXECUTION_WAIT_S``) and does not read the functions
they rejected; a finding of its own on a function they rejected in the text it read
(read before they ended) is not shown.

Commands: ``referee.judge.run`` [uri] (for ``judge.run = "manual"``), ``referee.review.list``,
``referee.review.accept`` / ``referee.review.reject`` [id]. A ``referee/status``
notification tells clients whether the judge is running and how many items wait for review.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from referee.checks import review
from referee.checks.config import Settings
from referee.checks.engine import check_source, shifted
from referee.checks.judge.worker import WorkerUnavailable
from referee.checks.models import Finding
from referee.checks.progress import Work
from referee.server.lsp_feature import (
    Command,
    LayerResults,
    baseline_text,
    first_argument,
    review_actions,
)
from referee.server.progress import WorkProgress

if TYPE_CHECKING:
    from referee.server.lsp import RefereeServer

log = logging.getLogger("referee.server.judge")

# How long the judge started by a save waits for the execution checks of the same text
# (their verdict overrides its reading); after that it reads everything, and what the
# checks reject later is still not shown from the judge (JudgeService.diagnostics).
EXECUTION_WAIT_S = 120.0


@dataclass
class Judged:
    """The model layers' findings for one document, and the text they were computed on."""

    version: int | None
    text: str
    findings: list[Finding]
    review_ids: dict[int, str] = field(default_factory=dict)  # finding index -> item id
    # finding index -> the first and last line (1-based) of what was judged: the diagnostic
    # underlines only the first, but an edit anywhere in the function makes it stale
    extents: dict[int, tuple[int, int]] = field(default_factory=dict)
    crashed: str | None = None  # the model process died while judging (see WorkerCrashed)
    subjects: dict[int, str] = field(default_factory=dict)  # finding index -> what was judged


class JudgeService(LayerResults):
    """The L2 judge on save (or on ``referee.judge.run``) and the L3 review queue."""

    name = "judge"
    log = log
    results: dict[str, Judged]
    failure = "judging %s failed"

    def __init__(self) -> None:
        super().__init__()
        self.unavailable: str | None = None  # why the model cannot be used, once said
        # The model process crashed and has not answered since: said once (one
        # window/showMessage per episode, not per save), shown in referee/status.
        self.model_down: str | None = None

    # ------------------------------------------------------------------ settings

    def settings_for(self, ls: RefereeServer, path: Path) -> Settings:
        """The project's settings with the editor's ``referee.judge`` settings on top."""
        settings = ls.settings_for(path)
        client = ls.client_settings(path).judge
        update = {
            key: value
            for key, value in {
                "backend": client.backend,
                "model": client.model,
                "url": client.url,
                "perspectives": client.perspectives,
                "divergence_threshold": client.divergence_threshold,
            }.items()
            if value is not None
        }
        if not update:
            return settings
        return settings.with_sections(judge=settings.config.judge.model_copy(update=update))

    # ------------------------------------------------------------------ running

    async def _run(
        self, ls: RefereeServer, uri: str, text: str, version: int | None, stop: threading.Event
    ) -> None:
        from referee.checks.progress import Cancelled

        path = ls.path_of(uri)
        settings = self.settings_for(ls, path)
        progress = WorkProgress(ls, "judge")
        await progress.begin(f"referee: judging {path.name}")
        loop = asyncio.get_running_loop()
        try:
            decided = await self._executed(ls, uri, path, text, progress)
            judged = await loop.run_in_executor(
                self.executor,
                self._judge,
                uri,
                path,
                text,
                version,
                settings,
                progress.work(loop, stop),
                decided,
            )
        except Cancelled:
            return
        except WorkerUnavailable as exc:  # crashed a moment ago; the back-off runs
            log.warning("the judge (L2) waits: %s", exc)
            return
        except Exception as exc:  # the model cannot be used: say so once, L0/L1 go on
            message = f"referee: the judge (L2) cannot run: {exc}"
            if self.unavailable != message:
                self.unavailable = message
                ls.window_show_message(
                    types.ShowMessageParams(type=types.MessageType.Warning, message=message)
                )
            log.warning("%s", message)
            return
        finally:
            progress.end()
        if judged is None:
            return
        if judged.crashed is not None:
            self._crashed(ls, judged.crashed)
        elif self.model_down is not None:
            self.model_down = None
            log.info("the model process answers again")
        if stop.is_set() and judged.crashed is None:
            return
        self.unavailable = None
        self.results[uri] = judged
        ls.publish_all(uri)

    async def _executed(
        self, ls: RefereeServer, uri: str, path: Path, text: str, progress: WorkProgress
    ) -> set[str]:
        """The functions of ``text`` the execution checks rejected (a counterexample):
        execution overrides reading, so the judge does not read them. When the checks run
        on save, a run of theirs on the same text is waited for (at most
        ``EXECUTION_WAIT_S``; cancelling this judge run does not cancel it, and a run of
        theirs that is cancelled or fails ends the wait); when they are off, no wait."""
        execution = ls.execution
        if not execution.wanted(ls, path):
            return set()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + EXECUTION_WAIT_S
        said = False
        while (running := execution.running.get(uri)) is not None and running[2] == text:
            task = running[0]
            left = deadline - loop.time()
            if task.done() or left <= 0:
                if left <= 0:
                    log.info(
                        "judge: %s: the execution checks still run after %.0f s; reading all",
                        path.name,
                        EXECUTION_WAIT_S,
                    )
                break
            if not said:
                progress.report("waiting for the execution checks")
                said = True
            # asyncio.wait neither cancels the run it waits for (this task may be cancelled
            # by the next edit) nor raises when that run was cancelled or failed.
            await asyncio.wait({task}, timeout=left)
        executed = execution.results.get(uri)
        if executed is None or executed.text != text:
            return set()
        return set(executed.decided)

    def _crashed(self, ls: RefereeServer, reason: str) -> None:
        """The model process died: one message per episode (not per save); the status
        says so until the model answers again. The item is already UNCLEAR."""
        log.warning("%s", reason)
        if self.model_down is None:
            ls.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning,
                    message=f"referee: {reason}. The item it was judging waits for review; "
                    "L0/L1 go on, and the next save starts a fresh model process.",
                )
            )
        self.model_down = reason

    def _judge(
        self,
        uri: str,
        path: Path,
        text: str,
        version: int | None,
        settings: Settings,
        work: Work,
        decided: set[str] | None = None,
    ) -> Judged | None:
        from referee.checks.judge import core
        from referee.checks.judge.opening import backend_for
        from referee.checks.source import SourceFile, kind_of

        if work.cancelled():
            return None
        config = settings.config.judge
        relpath = settings.relative(path)
        source = SourceFile(str(path), text, kind_of(str(path)))
        findings = check_source(source, settings, relpath)
        backend = backend_for(config)
        judgement = core.judge_file(
            source,
            settings,
            relpath,
            findings,
            backend,
            baseline=baseline_text(path),
            work=work,
            decided=decided or (),
        )
        for note in judgement.notes:
            log.info("judge: %s: %s", relpath, note)
        ids = {
            index: core.review_item_for(relpath, decision)
            for index, (finding, decision) in enumerate(
                zip(judgement.findings, judgement.finding_decisions, strict=True)
            )
            if finding.code == "REF402"
        }
        extents = {
            index: (decision.span.start.line, decision.span.end.line)
            for index, decision in enumerate(judgement.finding_decisions)
            if decision.span is not None
        }
        subjects = {
            index: decision.subject for index, decision in enumerate(judgement.finding_decisions)
        }
        return Judged(version, text, judgement.findings, ids, extents, judgement.crashed, subjects)

    def forget_item(self, ls: RefereeServer, uri: str, item_id: str) -> None:
        """Drop the finding of review item ``item_id`` from ``uri``'s judge results."""
        judged = self.results.get(uri)
        if judged is None or item_id not in judged.review_ids.values():
            return
        keep = [i for i in range(len(judged.findings)) if judged.review_ids.get(i) != item_id]
        renumber = {old: new for new, old in enumerate(keep)}
        self.results[uri] = Judged(
            judged.version,
            judged.text,
            [judged.findings[i] for i in keep],
            {renumber[i]: v for i, v in judged.review_ids.items() if i in renumber},
            {renumber[i]: v for i, v in judged.extents.items() if i in renumber},
            subjects={renumber[i]: v for i, v in judged.subjects.items() if i in renumber},
        )
        ls.publish_all(uri)

    # ------------------------------------------------------------------ output

    def diagnostics(self, ls: RefereeServer, uri: str) -> list[types.Diagnostic]:
        judged = self.results.get(uri)
        if judged is None:
            return []
        document = ls.documents.get(uri)
        now = document.text if document is not None else judged.text
        lines = now.split("\n")
        moved = self._moved(uri, judged, now)
        overruled = self.overruled(ls, uri, judged)
        out = []
        for index, finding in enumerate(judged.findings):
            if judged.subjects.get(index) in overruled:
                continue  # a counterexample rejected it: its REF411 stands alone
            first, last = judged.extents.get(
                index, (finding.span.start.line, finding.span.end.line)
            )
            shift = moved(first, last)
            if shift is None:
                continue  # the lines it was about were edited since: stale until the next run
            if shift:
                (finding,) = shifted([finding], shift)
            diagnostic = ls.diagnostic(finding, lines)
            message = finding.message
            if finding.evidence:
                message += "\n" + finding.evidence
            diagnostic.message = message
            if index in judged.review_ids:
                diagnostic.data = {**(diagnostic.data or {}), "reviewId": judged.review_ids[index]}
            out.append(diagnostic)
        return out

    def overruled(self, ls: RefereeServer, uri: str, judged: Judged) -> set[str]:
        """The functions whose reading is not shown: those the execution checks rejected
        in the same text (execution overrides reading). The judge does not read them when
        it waited for those checks; this covers a reading done before they ended."""
        executed = ls.execution.results.get(uri)
        if executed is None or executed.text != judged.text:
            return set()
        return executed.decided

    def result_tag(self, uri: str) -> str:
        judged = self.results.get(uri)
        return "" if judged is None else f"-j{judged.version}-{len(judged.findings)}"

    def pending_reviews(self, ls: RefereeServer) -> int:
        return sum(len(waiting(settings)) for settings in project_settings(ls).values())

    def status(self, ls: RefereeServer) -> dict[str, Any]:
        try:
            pending = self.pending_reviews(ls)
        except Exception:  # a broken configuration is reported elsewhere
            pending = 0
        return {
            "reviewPending": pending,
            "judge": "running" if self.running else "idle",
            "model": "crashed" if self.model_down else "ok",
            **({"modelMessage": self.model_down} if self.model_down else {}),
        }

    def code_actions(
        self, ls: RefereeServer, uri: str, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        actions = []
        for diagnostic in self.diagnostics_on(ls, uri, params):
            item_id = (diagnostic.data or {}).get("reviewId")
            if item_id:
                actions.extend(review_actions(diagnostic, item_id, uri))
        return actions

    # ------------------------------------------------------------------ the session

    def did_change(self, ls: RefereeServer, uri: str) -> None:
        self.cancel(uri)  # a judge run on the older text is moot

    def did_save(self, ls: RefereeServer, uri: str) -> None:
        if uri in ls.documents and ls.client_settings(ls.path_of(uri)).judge.run == "onSave":
            self.start(ls, uri)  # L2 on save, off the event loop, cancelled by the next edit

    def did_close(self, ls: RefereeServer, uri: str) -> None:
        self.cancel(uri)
        self.results.pop(uri, None)

    # ------------------------------------------------------------------ commands

    def commands(self) -> dict[str, Command]:
        return {
            "referee.judge.run": self.run_command,
            "referee.review.list": self.review_list,
            "referee.review.accept": lambda ls, args: self.decide(ls, args, "accepted"),
            "referee.review.reject": lambda ls, args: self.decide(ls, args, "rejected"),
        }

    async def run_command(self, ls: RefereeServer, args: tuple[Any, ...]) -> dict[str, Any]:
        """``referee.judge.run`` [uri]: judge an open document now."""
        uri = first_argument(args)
        if not isinstance(uri, str) or uri not in ls.documents:
            return {"ok": False, "message": "referee.judge.run needs the uri of an open document"}
        task = self.start(ls, uri)
        if task is not None:
            await asyncio.shield(task)
        judged = self.results.get(uri)
        return {"ok": judged is not None, "findings": len(judged.findings) if judged else 0}

    def review_list(self, ls: RefereeServer, args: tuple[Any, ...]) -> list[dict[str, Any]]:
        """``referee.review.list``: the items waiting for review, in every project."""
        items = []
        projects = project_settings(ls)
        for root in sorted(projects):
            for item in waiting(projects[root]):
                data = item.model_dump(mode="json")
                data["uri"] = (root / item.path).as_uri()
                items.append(data)
        return items

    def decide(self, ls: RefereeServer, args: tuple[Any, ...], decision: str) -> dict[str, Any]:
        """``referee.review.accept`` / ``referee.review.reject`` [id, uri?]."""
        item_id = first_argument(args)
        rest = args[0] if args and isinstance(args[0], list) else args
        uri = rest[1] if len(rest) > 1 else None
        if not isinstance(item_id, str):
            verb = "accept" if decision == "accepted" else "reject"
            return {"ok": False, "message": f"referee.review.{verb} needs an item id"}
        for root in project_roots(ls):
            try:
                item = review.decide(root, item_id, decision)  # type: ignore[arg-type]
            except KeyError:
                continue
            if isinstance(uri, str) and uri in ls.documents:
                if ls.client_settings(ls.path_of(uri)).judge.run == "onSave":
                    self.start(ls, uri)  # the decision changes the document's findings
                else:
                    # "manual" or "off": no model is loaded for a decision; the item's
                    # "needs review" diagnostic goes, and the next run the user asks for
                    # shows what the decision made of it.
                    self.forget_item(ls, uri, item.id)
                ls.execution.decided(ls, uri, item.id)  # a REF412 of the execution checks
            ls.notify_status()
            return {"ok": True, "id": item.id, "decision": decision}
        return {"ok": False, "message": f"no review item {item_id!r}"}


def project_settings(ls: Any) -> dict[Path, Settings]:
    """The projects of the workspace folders and of the open documents, by root: where
    review queues live."""
    # settings_for takes a file: a name inside the folder finds the folder's own project
    found = [ls.settings_for(folder / "__referee__") for folder in ls.folders()]
    found += [ls.settings_for(ls.path_of(uri)) for uri in list(ls.documents)]
    projects: dict[Path, Settings] = {}
    for settings in found:
        projects.setdefault(settings.root, settings)
    return projects or {Path.cwd(): Settings(root=Path.cwd())}


def waiting(settings: Settings) -> list[review.ReviewItem]:
    """Pending review items whose code has not changed since (the judge's module loads
    only when it is needed)."""
    from referee.checks.judge import core

    return core.waiting(settings)


def project_roots(ls: Any) -> set[Path]:
    return set(project_settings(ls))
