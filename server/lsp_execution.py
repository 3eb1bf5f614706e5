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
import datetime as dt
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
from referee.checks.models import Finding
from referee.server.lsp_judge import LayerResults, _baseline, _first
from referee.server.progress import WorkProgress

if TYPE_CHECKING:
    from collections.abc import Callable

    from referee.checks.execution.differential import Differential
    from referee.server.lsp import RefereeServer

log = logging.getLogger("referee.server.execution")

ADD_TEST = "referee.execution.addTest"
FIX_SOURCE = "referee.execution.fixSource"


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
    def __init__(self) -> None:
        super().__init__()
        self.results: dict[str, Executed] = {}
        # uri -> the run in progress, its stop flag, and the text it runs on (what the
        # judge, started by the same save, waits for)
        self.running: dict[str, tuple[asyncio.Task[None], threading.Event, str]] = {}
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="referee-execution")
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

    def on_save(self, ls: RefereeServer, uri: str) -> None:
        if uri in ls.documents and self.wanted(ls, ls.path_of(uri)):
            self.start(ls, uri)

    def cancel(self, uri: str) -> None:
        running = self.running.pop(uri, None)
        if running is not None:
            running[1].set()
            running[0].cancel()

    def start(self, ls: RefereeServer, uri: str) -> asyncio.Task[None] | None:
        document = ls.documents.get(uri)
        if document is None:
            return None
        self.cancel(uri)  # a newer save: the older run's results would be stale
        stop = threading.Event()
        task = asyncio.get_running_loop().create_task(
            self._run(ls, uri, document.text, document.version, stop)
        )
        self.running[uri] = (task, stop, document.text)
        task.add_done_callback(lambda t, uri=uri: self._done(ls, uri, t))
        ls.judge.notify_status(ls)
        return task

    def _done(self, ls: RefereeServer, uri: str, task: asyncio.Task[None]) -> None:
        if uri in self.running and self.running[uri][0] is task:
            del self.running[uri]
        if not task.cancelled() and task.exception() is not None:
            log.error("the execution checks of %s failed", uri, exc_info=task.exception())
        ls.judge.notify_status(ls)

    async def _run(
        self, ls: RefereeServer, uri: str, text: str, version: int | None, stop: threading.Event
    ) -> None:
        path = ls.path_of(uri)
        settings = self.settings_for(ls, path)
        progress = WorkProgress(ls, "execution", cancellable=True)
        await progress.begin(f"referee: running {path.name}'s changes")
        loop = asyncio.get_running_loop()
        try:
            executed = await loop.run_in_executor(
                self.executor,
                self._execute,
                path,
                text,
                version,
                settings,
                lambda: stop.is_set() or progress.cancelled(),
                lambda message: loop.call_soon_threadsafe(progress.report, message),
            )
        except asyncio.CancelledError:
            stop.set()  # the thread sees it at its next mutant or input
            raise
        finally:
            progress.end()
        if executed is None or stop.is_set() or progress.cancelled():
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
        cancelled: Any,
        report: Any,
    ) -> Executed | None:
        from referee.checks import runner
        from referee.checks.arbitration.truth import LazyModel
        from referee.checks.engine import check_source
        from referee.checks.execution.run import ProjectFiles, check_file
        from referee.checks.source import SourceFile, kind_of

        if cancelled():
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
            baseline=_baseline(settings.root, path),
            files=ProjectFiles(settings),
            model=model,
            cache_dir=runner.default_cache_dir() if settings.config.cache else None,
            cancelled=cancelled,
            progress=report,
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
        first, last = params.range.start.line, params.range.end.line
        executed = self.results.get(uri)
        for diagnostic in self.diagnostics(ls, uri):
            if not first <= diagnostic.range.start.line <= last:
                continue
            data = diagnostic.data or {}
            function = data.get("function")
            if diagnostic.code == "REF411" and executed is not None and function:
                rejected = executed.rejected[function]
                title = f"Add {rejected.call} == {rejected.truth} as a test (certified)"
                actions.append(
                    types.CodeAction(
                        title=title,
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        command=types.Command(
                            title=title,
                            command=ADD_TEST,
                            arguments=[{"uri": uri, "function": function}],
                        ),
                    )
                )
                fix_title = f"Fix {function} so that {rejected.call} == {rejected.truth} (verified)"
                actions.append(
                    types.CodeAction(
                        title=fix_title,
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        command=types.Command(
                            title=fix_title,
                            command=FIX_SOURCE,
                            arguments=[{"uri": uri, "function": function}],
                        ),
                    )
                )
            item_id = data.get("reviewId")
            if diagnostic.code == "REF412" and item_id:
                for verb, command in (("Accept", "accept"), ("Reject", "reject")):
                    actions.append(
                        types.CodeAction(
                            title=f"{verb} in review: {diagnostic.message.splitlines()[0][:60]}",
                            kind=types.CodeActionKind.QuickFix,
                            diagnostics=[diagnostic],
                            command=types.Command(
                                title=f"{verb} (referee review)",
                                command=f"referee.review.{command}",
                                arguments=[item_id, uri],
                            ),
                        )
                    )
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


# ---------------------------------------------------------------------- the quick fix


@dataclass
class NewTest:
    """A counterexample written as a test, and what certifies it."""

    path: str  # the test module, relative to the project root
    old_text: str
    new_text: str
    test_id: str
    certificate: dict[str, Any]
    create: bool = False  # a new test module: no test module imported the function


def _new_test_module(root: Path, settings: Settings, module: str) -> str:
    """Where a new test module for ``module`` goes when none imports the function: the
    project's ``tests`` directory (``tests/test_mathx.py``), else beside the project's
    root; a name no file has yet, that the project's ``test-files`` patterns match."""
    stem = module.rsplit(".", 1)[-1]
    folder = "tests/" if (root / "tests").is_dir() else ""
    for name in (f"test_{stem}.py", f"test_{stem}_referee.py"):
        relpath = folder + name
        if not (root / relpath).exists() and settings.is_test_file(relpath):
            return relpath
    raise NotWritten(
        f"no test module imports {module}'s function, and {folder}test_{stem}.py exists or "
        "is not a test module by the project's test-files patterns; add an import of it to "
        "a test module and try again"
    )


class NotWritten(Exception):
    """Why the counterexample is not written as a test (one sentence)."""


def _importers(root: Path, settings: Settings, module: str, name: str) -> list[tuple[str, str]]:
    """(test module, how it calls ``name``) for each test module of the project that
    imports ``name`` from ``module`` (``clamp``) or ``module`` itself (``mathx.clamp``)."""
    from referee.checks.arbitration.engine import walk
    from referee.checks.execution.differential import _imports_function

    found = []
    for relpath, path in walk(root, settings):
        if not relpath.endswith(".py") or not settings.is_test_file(relpath):
            continue
        try:
            tree = ast.parse(path.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            continue
        direct, aliases = _imports_function(tree, name, module)
        if direct:
            found.append((relpath, name))
        elif aliases:
            found.append((relpath, f"{sorted(aliases)[0]}.{name}"))
    # the module's own test file first (tests/test_mathx.py for mathx), then by name
    stem = module.rsplit(".", 1)[-1]
    return sorted(found, key=lambda f: (Path(f[0]).stem != f"test_{stem}", f[0]))


def _fresh_name(text: str, base: str) -> str:
    taken = set(re.findall(r"^\s*(?:async\s+)?def\s+(\w+)", text, re.MULTILINE))
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def counterexample_test(executed: Executed, rejected: Differential, settings: Settings) -> NewTest:
    """The counterexample ``rejected`` found, as a new test at the end of a test module
    that imports its function, with the certificate that binds its expected value to the
    sources that agreed on it. Checked before it is offered: the value is data referee
    writes into tests, the assertion is found where the guard will look for it, and the new
    test runs in the sandbox and fails on the function as it is (it is a counterexample)."""
    from referee.checks import interpreter, ledger, sandbox
    from referee.checks.arbitration.fix import (
        pytest_counts,
        pytest_run_limits,
        sha256_text,
        unsafe_literal,
    )
    from referee.checks.arbitration.isolate import NotIsolated, function_spec
    from referee.checks.execution.run import ProjectFiles, _module_name

    if rejected.call is None or rejected.truth is None:
        raise NotWritten("the check found no value to assert")
    truth = rejected.truth
    problem = unsafe_literal(truth)
    if problem is not None or "nan" in truth:
        raise NotWritten(f"{truth} is not a value referee writes into a test ({problem or 'nan'})")
    module = _module_name(executed.relpath)
    name = rejected.function
    try:
        spec = function_spec(executed.text, executed.relpath, module, name)
    except NotIsolated as exc:
        raise NotWritten(str(exc)) from exc
    root = executed.root
    importers = _importers(root, settings, module, name)
    create = not importers
    if create:
        test_path, callee = _new_test_module(root, settings, module), name
        old_text = ""
    else:
        test_path, callee = importers[0]
        try:
            old_text = (root / test_path).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise NotWritten(f"cannot read {test_path}: {exc}") from exc
    arguments = rejected.call[len(name) + 1 : -1]
    test_name = _fresh_name(old_text, f"test_{name}_counterexample")
    agreed = [
        (source, value)
        for source, value in rejected.answers
        if sandbox.values_equal(value, truth) or rejected.truth_source == "docstring"
    ]
    said = {
        "docstring": "the docstring's example",
        "reference": "the declared reference",
    }.get(rejected.truth_source or "", f"{len(agreed)} independent implementations")
    produced = (rejected.produced or "").replace("\n", " ")[:60]
    assertion = f"assert {callee}({arguments}) == {truth}"
    block = (
        f"def {test_name}():\n"
        f"    # referee REF411: {name}({arguments}) {produced}; {said} give {truth[:60]}\n"
        f"    {assertion}\n"
    )
    separator = "" if not old_text or old_text.endswith("\n") else "\n"
    blank = "" if not old_text.strip() else "\n\n"
    new_text = f"{old_text}{separator}{blank}{block}"
    if create:
        new_text = f'"""Tests of {module}."""\n\nfrom {module} import {name}\n\n\n{block}'
    test_id = f"{test_path}::{test_name}"
    bound = ledger.test_sha256(new_text, test_path, test_id, truth)
    if bound is None:
        raise NotWritten(f"the new test's assertion `{assertion}` cannot be bound to it")
    files = ProjectFiles(settings).get({executed.relpath: executed.text, test_path: new_text})
    args = [test_id, "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    if executed.relpath.startswith("src/"):
        args += ["-o", "pythonpath=src"]  # the project's copy, not an installed one
    try:
        python = interpreter.for_settings(settings)
    except ConfigError as exc:
        raise NotWritten(str(exc)) from None
    run = sandbox.run_pytest(
        files, args, limits=pytest_run_limits(settings.config.arbitration), python=python
    )
    passed, total = pytest_counts(run.message)
    if run.status == "refused":
        raise NotWritten(f"the sandbox refused to run it: {run.message}")
    if total != 1:
        raise NotWritten(f"the new test did not run in the sandbox: {run.message or run.status}")
    if passed:
        raise NotWritten(f"{name} now returns {truth} on it: the counterexample is gone")
    certificate = {
        "test_id": test_id,
        "call": rejected.call,
        "old_value": "",  # a new test: no value was asserted before
        "new_value": truth,
        "evidence": [
            {"source": source, "value": value, "detail": None}
            for source, value in (agreed or [(rejected.truth_source or "", truth)])
        ],
        "source_sha256": sha256_text(spec.definition),
        "test_sha256": bound,
        "created": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
    }
    return NewTest(test_path, old_text, new_text, test_id, certificate, create)


def _counterexample(
    ls: RefereeServer, args: tuple[Any, ...], command: str
) -> tuple[str, Executed, Differential] | dict[str, Any]:
    """(uri, the file as checked, its rejection) that a command's ``[{"uri", "function"}]``
    names, or the answer saying why there is none. Commands act only on the file as it was
    checked: unchanged on disk since, and no unsaved edits of it in the editor."""
    request = _first(args)
    if not (
        isinstance(request, dict)
        and isinstance(request.get("uri"), str)
        and isinstance(request.get("function"), str)
    ):
        return {"ok": False, "message": f'{command} takes [{{"uri": str, "function": str}}]'}
    uri, function = request["uri"], request["function"]
    executed = ls.execution.results.get(uri)
    rejected = executed.rejected.get(function) if executed is not None else None
    if executed is None or rejected is None:
        return {"ok": False, "message": f"no counterexample for {function}: save to check it"}
    path = ls.path_of(uri)
    try:
        on_disk = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        on_disk = None
    document = ls.documents.get(uri)
    if on_disk != executed.text or (document is not None and document.text != on_disk):
        return {
            "ok": False,
            "message": f"{path.name} changed since it was checked; save it to check it again",
        }
    return uri, executed, rejected


async def _apply(
    ls: RefereeServer, uri: str, edit: types.TextEdit, label: str
) -> dict[str, Any] | None:
    """Apply one edit of ``uri`` (versioned where the client takes document changes):
    None when the editor applied it, else the answer saying why not."""
    document = ls.documents.get(uri)
    if ls.document_changes:
        workspace_edit = types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=document.version if document is not None else None
                    ),
                    edits=[edit],
                )
            ]
        )
    else:
        workspace_edit = types.WorkspaceEdit(changes={uri: [edit]})
    applied = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=workspace_edit, label=label)
    )
    if not applied.applied:
        return {"ok": False, "message": applied.failure_reason or "the editor did not apply it"}
    return None


async def add_test_command(ls: RefereeServer, args: tuple[Any, ...]) -> dict[str, Any]:
    found = _counterexample(ls, args, ADD_TEST)
    if isinstance(found, dict):
        return found
    uri, executed, rejected = found
    service: ExecutionService = ls.execution
    settings = service.settings_for(ls, ls.path_of(uri))
    loop = asyncio.get_running_loop()
    try:
        new = await loop.run_in_executor(
            service.executor, counterexample_test, executed, rejected, settings
        )
    except NotWritten as exc:
        return {"ok": False, "message": str(exc)}
    test_file = executed.root / new.path
    if new.create:
        return await _create_test_module(ls, executed.root, new)
    test_uri = test_file.resolve().as_uri()
    test_document = ls.documents.get(test_uri)
    # Never applied to text other than what the test was written against: the file as
    # read, unchanged since, and no unsaved edits of it in the editor.
    try:
        now = test_file.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        now = None
    if now != new.old_text or (test_document is not None and test_document.text != now):
        return {"ok": False, "message": f"{new.path} changed or has unsaved edits; try again"}
    lines = new.old_text.split("\n")
    end = ls.position(lines, len(lines), len(lines[-1]) + 1)
    edit = types.TextEdit(
        range=types.Range(start=end, end=end), new_text=new.new_text[len(new.old_text) :]
    )
    refused = await _apply(ls, test_uri, edit, f"referee: {new.test_id}")
    return refused if refused is not None else _added(executed.root, new)


def _added(root: Path, new: NewTest) -> dict[str, Any]:
    from referee.checks import ledger

    certificate = ledger.append(root, new.certificate)
    return {
        "ok": True,
        "applied": True,
        "test": new.test_id,
        "path": new.path,
        "certificate": certificate.id,
        "sha256": hashlib.sha256(new.new_text.encode("utf-8")).hexdigest(),
        "created": new.create,
    }


def _can_create_files(ls: RefereeServer) -> bool:
    workspace = ls.client_capabilities.workspace
    edit = workspace.workspace_edit if workspace else None
    operations = (edit.resource_operations or []) if edit else []
    return ls.document_changes and types.ResourceOperationKind.Create in operations


async def _create_test_module(ls: RefereeServer, root: Path, new: NewTest) -> dict[str, Any]:
    """A new test module: created by the editor (a ``CreateFile`` and its text, one undo
    step) where it can create files, else written by referee, never over a file that
    exists by now."""
    from referee.checks.atomic import create_text_exclusive

    test_file = root / new.path
    if test_file.exists():
        return {"ok": False, "message": f"{new.path} exists by now; try again"}
    if not _can_create_files(ls):
        test_file.parent.mkdir(parents=True, exist_ok=True)
        try:
            create_text_exclusive(test_file, new.new_text)
        except FileExistsError:
            return {"ok": False, "message": f"{new.path} exists by now; try again"}
        return _added(root, new)
    uri = test_file.resolve().as_uri()
    start = types.Position(line=0, character=0)
    workspace_edit = types.WorkspaceEdit(
        document_changes=[
            types.CreateFile(
                uri=uri, options=types.CreateFileOptions(overwrite=False, ignore_if_exists=False)
            ),
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                edits=[
                    types.TextEdit(range=types.Range(start=start, end=start), new_text=new.new_text)
                ],
            ),
        ]
    )
    applied = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=workspace_edit, label=f"referee: {new.test_id}")
    )
    if not applied.applied:
        return {"ok": False, "message": applied.failure_reason or "the editor did not apply it"}
    return _added(root, new)


@dataclass
class SourceFixed:
    """A verified fix of the function a counterexample rejected."""

    new_text: str
    origin: str  # the candidate it came from: oracle-N, or model
    verified: str  # "3/3 asserted calls"
    test_path: str  # the test module it was verified against (with the counterexample)


def counterexample_fix(
    executed: Executed,
    rejected: Differential,
    settings: Settings,
    cache_dir: Path | None,
    progress: Callable[[str], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> SourceFixed:
    """A fix of the function that ``rejected`` found a counterexample to, found as
    arbitration finds one (:func:`referee.checks.arbitration.fix.source_fix`): the
    programs of the oracles that agreed on the counterexample's value first, then the
    model's patches; each refused when it adds capabilities or special-cases the input,
    and offered only when it gives the right value for every asserted call of a test
    module that imports the function — the counterexample written into it as a test — and
    that module passes against it in the sandbox."""
    from referee.checks import sandbox
    from referee.checks.arbitration.fix import source_fix
    from referee.checks.arbitration.isolate import NotIsolated, function_spec
    from referee.checks.arbitration.truth import LazyModel, ProgramCache
    from referee.checks.arbitration.verify import AssertedCall
    from referee.checks.execution.run import ProjectFiles, _module_name

    new_test = counterexample_test(executed, rejected, settings)  # it fails on the code now
    assert rejected.call is not None and rejected.truth is not None
    name = rejected.function
    try:
        spec = function_spec(executed.text, executed.relpath, _module_name(executed.relpath), name)
    except NotIsolated as exc:
        raise NotWritten(str(exc)) from exc
    files = ProjectFiles(settings).get(
        {executed.relpath: executed.text, new_test.path: new_test.new_text}
    )
    agreeing = {
        source for source, value in rejected.answers if sandbox.values_equal(value, rejected.truth)
    }
    programs = [
        (str(s["source"]), str(s["program"]))
        for s in rejected.sources
        if s.get("program") and s.get("source") in agreeing
    ]
    config = settings.config.arbitration
    found = source_fix(
        spec,
        executed.relpath,
        new_test.path,
        files,
        AssertedCall(
            where=new_test.test_id,
            function=name,
            arguments=rejected.call[len(name) + 1 : -1],
            expected=rejected.truth,
            op="==",
            wrapper=None,
        ),
        rejected.produced or "",
        rejected.truth,
        LazyModel.from_settings(config, settings.config.judge),
        config,
        settings,
        ProgramCache(cache_dir / "arbitration" if cache_dir else None, settings.config.cache_size),
        programs,
        progress=progress,
        cancelled=cancelled,
    )
    if found.fix is None or found.new_text is None:
        tried = "; ".join(f"{p.origin}: {p.message}" for p in found.patches[:4])
        raise NotWritten(f"no verified fix of {name} ({len(found.patches)} tried: {tried})")
    passed = next((p for p in found.patches if p.status == "passed"), None)
    verified = (
        f"{found.fix.calls_verified}/{found.fix.calls_total} asserted calls"
        if found.fix.calls_total
        else "the test module"
    )
    return SourceFixed(
        found.new_text, passed.origin if passed else "model", verified, new_test.path
    )


def _line_edit(old: str, new: str) -> types.TextEdit:
    """One edit of whole lines turning ``old`` into ``new``."""
    from referee.checks.arbitration.fix import changed_lines

    first, past, content = changed_lines(old, new)
    return types.TextEdit(
        range=types.Range(
            start=types.Position(line=first, character=0),
            end=types.Position(line=past, character=0),
        ),
        new_text=content,
    )


async def fix_source_command(ls: RefereeServer, args: tuple[Any, ...]) -> dict[str, Any]:
    from referee.checks import runner
    from referee.checks.arbitration.truth import Cancelled

    found = _counterexample(ls, args, FIX_SOURCE)
    if isinstance(found, dict):
        return found
    uri, executed, rejected = found
    service: ExecutionService = ls.execution
    settings = service.settings_for(ls, ls.path_of(uri))
    cache_dir = runner.default_cache_dir() if settings.config.cache else None
    loop = asyncio.get_running_loop()
    # The model may write patches: seconds to minutes, shown and cancellable.
    progress = WorkProgress(ls, "fix", cancellable=True)
    await progress.begin(f"referee: fixing {rejected.function}")
    try:
        fixed = await loop.run_in_executor(
            service.executor,
            counterexample_fix,
            executed,
            rejected,
            settings,
            cache_dir,
            lambda message: loop.call_soon_threadsafe(progress.report, message),
            progress.cancelled,
        )
    except NotWritten as exc:
        return {"ok": False, "message": str(exc)}
    except Cancelled:
        return {"ok": False, "message": "cancelled"}
    finally:
        progress.end()
    # Never applied to text other than what the fix was found for: checked again, as the
    # file may have changed while the fix was looked for.
    again = _counterexample(ls, args, FIX_SOURCE)
    if isinstance(again, dict):
        return again
    edit = _line_edit(executed.text, fixed.new_text)
    refused = await _apply(ls, uri, edit, f"referee: fix {rejected.function}")
    if refused is not None:
        return refused
    return {
        "ok": True,
        "applied": True,
        "origin": fixed.origin,
        "verified": fixed.verified,
        "against": fixed.test_path,
        "sha256": hashlib.sha256(fixed.new_text.encode("utf-8")).hexdigest(),
    }


def register(server: RefereeServer) -> None:
    """Add the ``referee.execution.addTest`` command to ``server`` (whose
    ``execution`` service runs the checks on save)."""

    @server.command(ADD_TEST)
    async def add_test(ls: Any, *args: Any) -> dict[str, Any]:
        return await add_test_command(ls, args)

    @server.command(FIX_SOURCE)
    async def fix_source(ls: Any, *args: Any) -> dict[str, Any]:
        return await fix_source_command(ls, args)
