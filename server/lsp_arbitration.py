"""Failing tests and their arbitration in the language server.

- Tests on save (``referee.tests.runOnSave``): saving a test module runs it; saving any
  other module runs the test modules that import it. Each failing assertion becomes a
  diagnostic on its line (layer ``arbitration``, kept apart from L0/L1's), saying what the
  code produced and what the test asserted, until the next run of that test module.
- A code action "Arbitrate this failure" on such a diagnostic runs the command
  ``referee.arbitrate`` with ``[{"uri": str, "line": int}]`` (0-based line): arbitration
  off the event loop, with cancellable work-done progress. It answers with the verdict and,
  when there is a fix, offers it ("Fix test (certified: …)" / "Fix source (verified N/N
  asserted calls)"); the fix the user picks is sent as ``workspace/applyEdit`` (undoable in the
  editor), and a test fix's certificate is written once the edit is applied.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from referee.checks.config import ConfigError, Settings
from referee.server.lsp_feature import Command, LanguageFeature, quick_fix
from referee.server.progress import WorkProgress

if TYPE_CHECKING:
    from referee.checks.arbitration.observe import TestRecord
    from referee.server.lsp import RefereeServer

log = logging.getLogger("referee.server.arbitration")

LAYER = "arbitration"
COMMAND = "referee.arbitrate"
FAILED_CODE = "test-failed"
_DOCS = "https://github.com/referee-dev/referee/tree/main/docs/arbitration.md"


@dataclass
class Failure:
    """One failing test of a test module's last run, where it failed and what it saw."""

    test_id: str
    line: int  # 0-based
    message: str


@dataclass
class ModuleRun:
    """The last run of one test module: its failures, and the text it ran against."""

    failures: list[Failure] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    serial: int = 0


class ArbitrationService(LanguageFeature):
    """State of the tests-on-save runs and of arbitrations in flight."""

    name = "arbitration"

    def __init__(self) -> None:
        self.runs: dict[str, ModuleRun] = {}  # test module uri -> its last run
        self.running: dict[str, asyncio.Task[None]] = {}  # test module uri -> run
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="referee-tests")
        self.arbiter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="referee-arbiter")
        self._serial = 0

    # ------------------------------------------------------------------ settings

    def settings_for(self, ls: RefereeServer, path: Path) -> Settings:
        """The project's settings with the editor's ``referee.arbitration`` on top."""
        settings = ls.settings_for(path)
        oracles = ls.client_settings(path).arbitration.oracles
        if oracles is None:
            return settings
        config = settings.config.arbitration
        update: dict[str, Any] = {"oracles": oracles}
        if isinstance(config.agreement, int) and config.agreement > oracles:
            update["agreement"] = "all"
        return settings.with_sections(arbitration=config.model_copy(update=update))

    # ------------------------------------------------------------------ tests on save

    def commands(self) -> dict[str, Command]:
        return {COMMAND: arbitrate_command}

    def status(self, ls: RefereeServer) -> dict[str, Any]:
        return {"arbitration": "idle"}

    def did_save(self, ls: RefereeServer, uri: str) -> None:
        path = ls.path_of(uri)
        if path.suffix != ".py" or not ls.client_settings(path).tests.run_on_save:
            return
        settings = ls.settings_for(path)
        relpath = settings.relative(path)
        targets = [path] if settings.is_test_file(relpath) else _importers(settings, path)
        for target in targets:
            self.start_run(ls, target.resolve().as_uri(), target, settings)

    def start_run(self, ls: RefereeServer, uri: str, path: Path, settings: Settings) -> None:
        previous = self.running.pop(uri, None)
        if previous is not None:
            previous.cancel()
        task = asyncio.get_running_loop().create_task(self._run(ls, uri, path, settings))
        self.running[uri] = task
        task.add_done_callback(lambda t, uri=uri: self._done(uri, t))

    def _done(self, uri: str, task: asyncio.Task[None]) -> None:
        if self.running.get(uri) is task:
            del self.running[uri]
        if not task.cancelled() and task.exception() is not None:
            log.error("running the tests of %s failed", uri, exc_info=task.exception())

    async def _run(self, ls: RefereeServer, uri: str, path: Path, settings: Settings) -> None:
        loop = asyncio.get_running_loop()
        run = await loop.run_in_executor(self.executor, _run_module, path, settings)
        if run is None:
            return
        self._serial += 1
        run.serial = self._serial
        self.runs[uri] = run
        ls.publish_all(uri)

    # ------------------------------------------------------------------ output

    def diagnostics(self, ls: RefereeServer, uri: str) -> list[types.Diagnostic]:
        run = self.runs.get(uri)
        if run is None:
            return []
        out = []
        for failure in run.failures:
            row = min(failure.line, max(len(run.lines) - 1, 0))
            text = run.lines[row] if run.lines else ""
            indent = len(text) - len(text.lstrip())
            out.append(
                types.Diagnostic(
                    range=types.Range(
                        start=ls.position(run.lines, row + 1, indent + 1),
                        end=ls.position(run.lines, row + 1, len(text.rstrip()) + 1),
                    ),
                    message=failure.message,
                    severity=types.DiagnosticSeverity.Error,
                    code=FAILED_CODE,
                    code_description=types.CodeDescription(href=_DOCS),
                    source="referee",
                    data={"layer": LAYER, "testId": failure.test_id},
                )
            )
        return out

    def result_tag(self, uri: str) -> str:
        run = self.runs.get(uri)
        return "" if run is None else f"-a{run.serial}"

    def code_actions(
        self, ls: RefereeServer, uri: str, params: types.CodeActionParams
    ) -> list[types.CodeAction]:
        actions = []
        for diagnostic in self.diagnostics_on(ls, uri, params):
            arguments = [{"uri": uri, "line": diagnostic.range.start.line}]
            actions.append(quick_fix(diagnostic, "Arbitrate this failure", COMMAND, arguments))
        return actions

    def test_id_at(self, uri: str, line: int) -> str | None:
        """The failing test (with its parametrize case) last seen on ``line``."""
        run = self.runs.get(uri)
        for failure in run.failures if run else []:
            if failure.line == line:
                return failure.test_id
        return None


def _run_module(path: Path, settings: Settings) -> ModuleRun | None:
    from referee.checks import interpreter
    from referee.checks.arbitration.observe import run_tests

    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    relpath = settings.relative(path)
    try:
        python = interpreter.for_settings(settings)
    except ConfigError as exc:
        log.error("tests not run: %s", exc)
        return None
    if (problem := interpreter.pytest_problem(python)) is not None:
        log.error("tests not run: %s", problem)
        return None
    run = run_tests(
        settings.root, [relpath], timeout=settings.config.arbitration.test_timeout, python=python
    )
    module = ModuleRun(lines=text.split("\n"))
    for record in run.records:
        if not record.failed or not record.nodeid.startswith(relpath + "::"):
            continue
        failure = _failure(path, record)
        if failure is not None:
            module.failures.append(failure)
    return module


def _failure(path: Path, record: TestRecord) -> Failure | None:
    """Where a failed test failed in its module, and what it compared."""
    mine = [c for c in record.comparisons if _same(c.get("file"), path)]
    name = record.nodeid.split("::")[-1]
    if mine:
        comparison = mine[-1]
        line = int(comparison["line"]) - 1
        message = (
            f"{name} failed: {comparison['left']} {comparison['op']} {comparison['right']} is false"
        )
    else:
        crash = record.crash or {}
        if not crash.get("line") or not _same(crash.get("file"), path):
            return None
        line = int(crash["line"]) - 1
        message = f"{name} failed: {crash.get('type', 'error')}: {crash.get('message', '')}"
    return Failure(record.nodeid, line, message.strip())


def _same(a: Any, path: Path) -> bool:
    try:
        return a is not None and Path(a).resolve() == path.resolve()
    except OSError:
        return False


def _importers(settings: Settings, module: Path) -> list[Path]:
    """Test modules of the project that import ``module`` (by its dotted name or its
    file name)."""
    relative = Path(settings.relative(module))
    dotted = ".".join(relative.with_suffix("").parts)
    names = {dotted, module.stem}
    pattern = re.compile(
        r"^\s*(?:from\s+(?P<from>[\w.]+)\s+import|import\s+(?P<import>[\w.]+))", re.MULTILINE
    )
    from referee.checks.arbitration.engine import walk

    found = []
    for relpath, candidate in walk(settings.root, settings):
        if not relpath.endswith(".py") or not settings.is_test_file(relpath):
            continue
        try:
            text = candidate.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        imported = {m.group("from") or m.group("import") for m in pattern.finditer(text)}
        if imported & names or any(n.endswith("." + module.stem) for n in imported):
            found.append(candidate)
    return found


# ---------------------------------------------------------------------- the command


def _test_at(ls: RefereeServer, path: Path, settings: Settings, line: int) -> str | None:
    """The node id of the test function holding ``line`` (0-based) of a test module."""
    from referee.checks.pymodule import PythonModule
    from referee.checks.source import SourceFile

    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    module = PythonModule(SourceFile(str(path), text), is_test_file=True)
    for fn in module.tests:
        if fn.node.start_point.row <= line <= fn.node.end_point.row:
            middle = f"{fn.class_.name}::" if fn.class_ is not None else ""
            return f"{settings.relative(path)}::{middle}{fn.name}"
    return None


def _workspace_edit(ls: RefereeServer, root: Path, fix: Any, text: str) -> types.WorkspaceEdit:
    """The fix as a WorkspaceEdit against ``text`` (what arbitration read from disk)."""
    path = root / fix.path
    uri = path.resolve().as_uri()
    lines = text.split("\n")
    edits = [
        types.TextEdit(
            range=types.Range(
                start=ls.position(lines, e.span.start.line, e.span.start.column),
                end=ls.position(lines, e.span.end.line, e.span.end.column),
            ),
            new_text=e.content,
        )
        for e in fix.edits
    ]
    if not ls.document_changes:
        return types.WorkspaceEdit(changes={uri: edits})
    document = ls.documents.get(uri)
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri, version=document.version if document else None
                ),
                edits=edits,
            )
        ]
    )


def _unsaved(ls: RefereeServer, path: Path) -> bool:
    """Whether the editor holds text for ``path`` that differs from the file."""
    document = ls.documents.get(path.resolve().as_uri())
    if document is None:
        return False
    try:
        return document.text != path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return True


async def arbitrate_command(ls: RefereeServer, args: tuple[Any, ...]) -> dict[str, Any]:
    """``referee.arbitrate`` [{"uri", "line"}]: arbitrate the failing test at the line,
    then offer its fix (applied by the editor when the user picks it)."""
    from referee.checks.arbitration import engine

    request = args[0] if args else None
    if isinstance(request, list) and request:
        request = request[0]
    if not (
        isinstance(request, dict)
        and isinstance(request.get("uri"), str)
        and isinstance(request.get("line"), int)
        and not isinstance(request.get("line"), bool)
    ):
        return {"ok": False, "message": 'referee.arbitrate takes [{"uri": str, "line": int}]'}
    uri, line = request["uri"], request["line"]
    path = ls.path_of(uri)
    service: ArbitrationService = ls.arbitration
    settings = service.settings_for(ls, path)
    test_id = service.test_id_at(uri, line) or _test_at(ls, path, settings, line)
    if test_id is None:
        return {"ok": False, "message": f"no test at line {line + 1} of {path.name}"}
    if _unsaved(ls, path):
        return {"ok": False, "message": f"save {path.name} first: arbitration runs the saved tests"}
    try:
        result = await _arbitrate(ls, service, test_id, settings)
    except engine.Cancelled:
        return {"ok": False, "message": "cancelled"}
    except engine.ArbitrationError as exc:
        return {"ok": False, "message": str(exc)}
    verdict = result.verdict
    answer: dict[str, Any] = {
        "ok": True,
        "verdict": verdict.model_dump(mode="json", exclude={"observation"}),
        "applied": False,
    }
    summary = f"referee: {verdict.verdict}: {verdict.reason}"
    if verdict.fix is None or result.new_text is None:
        ls.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message=summary)
        )
        return answer
    return await _offer_fix(ls, result, summary, answer)


async def _arbitrate(
    ls: RefereeServer, service: ArbitrationService, test_id: str, settings: Settings
) -> Any:
    """Arbitration of ``test_id`` on the arbiter's thread, with cancellable progress."""
    from referee.checks.arbitration import engine

    stop = threading.Event()
    progress = WorkProgress(ls, "arbitrate", cancellable=True)
    await progress.begin(f"referee: arbitrating {test_id.split('::')[-1]}")
    loop = asyncio.get_running_loop()

    model = engine.LazyModel.from_settings(settings.config.arbitration, settings.config.judge)

    def work() -> Any:
        return engine.arbitrate(
            test_id,
            settings,
            backend=lambda: model,
            work=progress.work(loop, stop),
        )

    try:
        return await loop.run_in_executor(service.arbiter, work)
    except asyncio.CancelledError:
        stop.set()
        raise
    finally:
        progress.end()


async def _offer_fix(
    ls: RefereeServer, result: Any, summary: str, answer: dict[str, Any]
) -> dict[str, Any]:
    """The verdict's fix offered; applied through ``workspace/applyEdit`` when the user
    picks it and the file is still what arbitration read (a test fix's certificate is
    written once the editor applied it)."""
    fix = result.verdict.fix
    fixed_path = result.root / fix.path
    try:
        old_text = fixed_path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return {**answer, "message": f"cannot read {fix.path}: {exc}"}
    if hashlib.sha256(old_text.encode("utf-8")).hexdigest() != fix.content_sha256:
        return {**answer, "message": f"{fix.path} changed during arbitration; run it again"}
    choice = await ls.window_show_message_request_async(
        types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=summary,
            actions=[types.MessageActionItem(title=fix.title)],
        )
    )
    if choice is None or choice.title != fix.title:
        return answer
    edit = _workspace_edit(ls, result.root, fix, old_text)
    applied = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=fix.title)
    )
    if not applied.applied:
        return {**answer, "message": applied.failure_reason or "the editor did not apply it"}
    answer["applied"] = True
    if fix.side == "test" and result.certificate is not None:
        from referee.checks import ledger

        certificate = ledger.append(result.root, result.certificate)
        answer["certificate"] = certificate.id
    return answer
