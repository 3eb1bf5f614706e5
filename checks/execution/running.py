"""How the function, a declared reference or an oracle program runs on a batch of inputs.

Each is one sandbox run over the whole batch that answers a list of ``[status, repr]``
pairs, checked for shape; no verdict is read from the process that ran the code. The
function is imported from the project's files as the project would import it
(:data:`MODULE_IMPORT`, :func:`module_of`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from referee.checks import sandbox
from referee.checks.arbitration.examples import PROBE, probe_cap, probe_values
from referee.checks.arbitration.known import with_definitions
from referee.checks.interpreter import Interpreter

if TYPE_CHECKING:
    from referee.checks.execution.inputs import Input

# Imports the project's module ``module`` (a file at ``relpath``, under the sys.path
# entry ``entry``) as ``_referee_m``, by its file when the import system cannot find it.
# The module itself, as ``sys.modules`` holds it: ``import pkg.mod as m`` gives the
# package's attribute ``mod``, which a package that re-exports a same-named class
# or function (``from .parse import parse``) has rebound to it.
MODULE_IMPORT = """
import importlib as _referee_importlib
import importlib.util as _referee_util, os as _referee_os, sys as _referee_sys
_referee_sys.path.insert(0, _referee_os.path.join(_referee_os.getcwd(), {entry!r}))
try:
    _referee_m = _referee_importlib.import_module({module!r})
except ImportError:
    _referee_spec = _referee_util.spec_from_file_location(
        {module!r}, _referee_os.path.join(_referee_os.getcwd(), {relpath!r})
    )
    _referee_m = _referee_util.module_from_spec(_referee_spec)
    _referee_sys.modules[{module!r}] = _referee_m
    _referee_spec.loader.exec_module(_referee_m)
"""


def module_of(relpath: str) -> tuple[str, str]:
    """(sys.path entry, module name) of a project file."""
    entry = "."
    rest = relpath
    if relpath.startswith("src/"):
        entry, rest = "src", relpath[4:]
    parts = rest.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return entry, ".".join(parts)


@dataclass
class Run:
    source: str
    status: str  # the sandbox run's status
    detail: str
    values: list[tuple[str, str]] | None  # (status, repr) per input
    program: str | None = None
    cached: bool = False


def _expression(callee: str, inputs: Sequence[Input]) -> str:
    """Each input's call, probed; arguments that need imports (``dt.timedelta(...)``) get
    them in a copy of the program's namespace, never replacing the program's own names."""
    calls = [with_definitions(f"{callee}({i.arguments})", i.definitions) for i in inputs]
    return "[" + ", ".join(f"_referee_probe(lambda: {call})" for call in calls) + "]"


def run_code(
    source: str,
    code: str,
    callee: str,
    inputs: Sequence[Input],
    limits: sandbox.Limits,
    files: dict[str, str] | None = None,
    python: Interpreter | None = None,
) -> Run:
    cap = probe_cap(limits, len(inputs))
    result = sandbox.evaluate(
        code + PROBE.format(cap=cap),
        _expression(callee, inputs),
        limits=limits,
        files=files,
        python=python,
    )
    values = probe_values(result, len(inputs), cap)
    if values is None:
        detail = (
            result.message
            if result.status != "ok"
            else "the sandbox answered something other than values"
        )
        return Run(source, result.status if result.status != "ok" else "error", detail, None)
    return Run(source, "ok", "", values)
