"""The quick fixes of a counterexample the execution checks found (REF411).

``referee.execution.addTest`` with ``[{"uri": str, "function": str}]``: a new test that
asserts the value the oracles agreed on is appended to a test module that imports the
function (a new test module where none does), through ``workspace/applyEdit``, and its
certificate is written to ``.referee/certificates.jsonl`` once the editor applied it.

``referee.execution.fixSource`` with the same arguments: a fix of the function, found as
arbitration finds one and verified against the counterexample written as a test.
"""

from __future__ import annotations

import ast
import asyncio
import datetime as dt
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from referee.checks.cache import default_cache_dir
from referee.checks.config import ConfigError, Settings
from referee.checks.progress import IDLE, Work
from referee.server.lsp_feature import first_argument
from referee.server.progress import WorkProgress

if TYPE_CHECKING:
    from referee.checks.execution.differential import Differential
    from referee.server.lsp import RefereeServer
    from referee.server.lsp_execution import Executed

ADD_TEST = "referee.execution.addTest"
FIX_SOURCE = "referee.execution.fixSource"


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
    from referee.checks.execution.inputs import imports_function

    found = []
    for relpath, path in walk(root, settings):
        if not relpath.endswith(".py") or not settings.is_test_file(relpath):
            continue
        try:
            tree = ast.parse(path.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
            continue
        direct, aliases = imports_function(tree, name, module)
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
    from referee.checks import ledger, sandbox
    from referee.checks.arbitration.fix import sha256_text, unsafe_literal
    from referee.checks.arbitration.isolate import NotIsolated, function_spec
    from referee.checks.execution.run import _module_name

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
    test_path, callee, old_text, create = _test_module(executed.root, settings, module, name)
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
    gone = f"{name} now returns {truth} on it: the counterexample is gone"
    _fails_in_sandbox(executed, settings, test_path, new_text, test_id, gone)
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


def _test_module(
    root: Path, settings: Settings, module: str, name: str
) -> tuple[str, str, str, bool]:
    """The test module the counterexample goes into: (its path, how it calls ``name``,
    its text now, whether it is a new module)."""
    importers = _importers(root, settings, module, name)
    if not importers:
        return _new_test_module(root, settings, module), name, "", True
    test_path, callee = importers[0]
    try:
        old_text = (root / test_path).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NotWritten(f"cannot read {test_path}: {exc}") from exc
    return test_path, callee, old_text, False


def _fails_in_sandbox(
    executed: Executed, settings: Settings, test_path: str, new_text: str, test_id: str, gone: str
) -> None:
    """Run the new test in the sandbox, against the function as it is: it must run, and
    fail (``gone`` says why not when it passes)."""
    from referee.checks import interpreter, sandbox
    from referee.checks.arbitration.fix import pytest_counts, pytest_run_limits
    from referee.checks.execution.run import ProjectFiles

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
        raise NotWritten(gone)


def _counterexample(
    ls: RefereeServer, args: tuple[Any, ...], command: str
) -> tuple[str, Executed, Differential] | dict[str, Any]:
    """(uri, the file as checked, its rejection) that a command's ``[{"uri", "function"}]``
    names, or the answer saying why there is none. Commands act only on the file as it was
    checked: unchanged on disk since, and no unsaved edits of it in the editor."""
    request = first_argument(args)
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


def _command_subject(
    ls: RefereeServer, args: tuple[Any, ...], command: str
) -> tuple[str, Executed, Differential, Settings] | dict[str, Any]:
    """What :func:`_counterexample` finds, and the settings its file is checked with (the
    commands' work runs on the execution checks' thread, ``ls.execution.executor``)."""
    found = _counterexample(ls, args, command)
    if isinstance(found, dict):
        return found
    uri, executed, rejected = found
    return uri, executed, rejected, ls.execution.settings_for(ls, ls.path_of(uri))


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
    found = _command_subject(ls, args, ADD_TEST)
    if isinstance(found, dict):
        return found
    _, executed, rejected, settings = found
    loop = asyncio.get_running_loop()
    try:
        new = await loop.run_in_executor(
            ls.execution.executor, counterexample_test, executed, rejected, settings
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
    work: Work = IDLE,
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
        work=work,
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
    from referee.checks.progress import Cancelled

    found = _command_subject(ls, args, FIX_SOURCE)
    if isinstance(found, dict):
        return found
    uri, executed, rejected, settings = found
    cache_dir = default_cache_dir() if settings.config.cache else None
    loop = asyncio.get_running_loop()
    # The model may write patches: seconds to minutes, shown and cancellable.
    progress = WorkProgress(ls, "fix", cancellable=True)
    await progress.begin(f"referee: fixing {rejected.function}")
    try:
        fixed = await loop.run_in_executor(
            ls.execution.executor,
            counterexample_fix,
            executed,
            rejected,
            settings,
            cache_dir,
            progress.work(loop),
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
