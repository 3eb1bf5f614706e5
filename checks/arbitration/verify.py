"""The parent decides: a candidate patch is judged by values, compared here.

A candidate patch is model-written code. Whatever runs it can be made to say anything —
pytest's "3 passed" included: the patch shares pytest's process, so it can write that
line to the descriptors it inherited and exit 0, or wrap pytest's report. So no verdict
on a patch is read from a process that ran it. Instead:

1. the parent (referee) takes the test module apart — every assertion of the form
   arbitration can isolate (``assert f(args) == literal``, either side, ``approx``,
   ``assertEqual``, parametrized cases, a literal assigned) whose call is a function
   of the patched module — into (call, expected value) pairs, without running anything;
2. the patched module runs in the sandbox with only the calls: the test module and
   conftest files are not there, nor is any expected value;
3. the values come back as data — a JSON list of ``[status, repr]`` pairs, shape and
   sizes checked — and are compared here, with the test's own operator (``==``, with
   the sandbox's float tolerance, or ``pytest.approx``'s).

The process that ran the patch can still write any list it likes to its channel, but a
list of values for inputs it was given is exactly what the function is asked to produce:
forging the right values means computing them. What it cannot do is claim "passed"
without them.
"""

from __future__ import annotations

import ast
import itertools
import math
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tree_sitter import Node

from referee.checks import sandbox
from referee.checks.arbitration.bindings import Bindings
from referee.checks.arbitration.examples import PROBE, probe_cap, probe_values
from referee.checks.arbitration.isolate import isolate
from referee.checks.arbitration.known import with_definitions
from referee.checks.arbitration.sites import (
    EQUALITY_OPS,
    Isolated,
    NotIsolated,
    TestRef,
    wrapped,
)
from referee.checks.interpreter import Interpreter
from referee.checks.nodes import decorators
from referee.checks.pymodule import Function, PythonModule
from referee.checks.source import SourceFile

MAX_CALLS = 200  # asserted calls checked per candidate (parametrize products can explode)
_STATUS_LEN = 16


@dataclass(frozen=True)
class AssertedCall:
    """One assertion of the test module, taken apart: ``function(arguments) op expected``."""

    where: str  # "tests/test_text.py:12 (test_upper)"
    function: str  # a top-level function of the module under test
    arguments: str  # literals only
    expected: str  # the expected value as written (a literal)
    op: str  # "==" or "approx"
    wrapper: str | None = None  # list, sorted...: the built-in the test wraps the call in
    projection: str = ""  # .year, [0]: what the test reads from the call's value
    definitions: str = ""  # what its known arguments need: Isolated.definitions

    @property
    def call(self) -> str:
        return wrapped(self.wrapper, f"{self.function}({self.arguments})", self.projection)


@dataclass(frozen=True)
class Verification:
    """How a patched module fared on the asserted calls, judged here."""

    verified: int
    total: int
    message: str  # one line: "3/3 asserted calls verified" or the first mismatch
    untaken: int = 0  # assertions of the module that could not be taken apart

    @property
    def passed(self) -> bool:
        return self.total > 0 and self.verified == self.total


# ---------------------------------------------------------------------------- the test


def _module_aliases(tree: ast.Module, module: str) -> tuple[dict[str, str], set[str], bool]:
    """How the test module names the module under test: (name -> function for
    ``from module import f as name``, names bound to the module itself, whether it
    star-imports it)."""
    functions: dict[str, str] = {}
    modules: set[str] = set()
    star = False
    parent, _, last = module.rpartition(".")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level:
            for alias in node.names:
                if node.module == module:
                    if alias.name == "*":
                        star = True
                    else:
                        functions[alias.asname or alias.name] = alias.name
                elif parent and node.module == parent and alias.name == last:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == module:
                    modules.add(alias.asname or alias.name)
    return functions, modules, star


def _resolve(
    callee: str,
    module: str,
    aliases: tuple[dict[str, str], set[str], bool],
    functions: frozenset[str],
) -> str | None:
    """The function of the module under test that ``callee`` (as written) names."""
    names, modules, star = aliases
    if callee in names:
        return names[callee] if names[callee] in functions else None
    head, _, attr = callee.rpartition(".")
    if head and (head in modules or head == module) and attr in functions:
        return attr
    if not head and star and callee in functions:
        return callee
    return None


def _marked_off(source: SourceFile, fn: Function) -> bool:
    """A test marked skip, skipif or xfail (on itself or its class): its assertions say
    nothing a fix must satisfy."""
    holders = [fn.node] + ([fn.class_.node] if fn.class_ is not None else [])
    for decorator in decorators(holders):
        expression = decorator.named_children[0]
        if expression.type == "call":
            expression = expression.child_by_field_name("function") or expression
        name = source.node_text(expression).rsplit(".", 1)[-1]
        if name in ("skip", "skipif", "xfail"):
            return True
    return False


def _cases(source: SourceFile, module: PythonModule, fn: Function) -> list[dict[str, int]] | None:
    """Every combination of parametrize cases of ``fn`` (its ``callspec.indices``), or
    None when its cases cannot be read from the text."""
    bindings = Bindings(source, module, fn, {}, 0)
    axes: list[list[dict[str, int]]] = []
    for decorator in bindings._parametrize_decorators():
        names, values = bindings._parametrize_arguments(decorator)
        if names is None or values is None or values.type not in ("list", "tuple"):
            return None
        cases = [c for c in values.named_children if c.type != "comment"]
        axes.append(
            [
                {name: index for name in names}
                for index, case in enumerate(cases)
                if not _marked_case(source, case)
            ]
        )
    combinations = []
    for combination in itertools.islice(itertools.product(*axes), MAX_CALLS):
        indices: dict[str, int] = {}
        for part in combination:
            indices.update(part)
        combinations.append(indices)
    return combinations


def _marked_case(source: SourceFile, case: Node) -> bool:
    """``pytest.param(..., marks=...)``: a case marked xfail or skip."""
    return case.type == "call" and "marks" in source.node_text(case)


def _assertion_lines(fn: Function) -> list[int]:
    lines = []
    for node in fn.assertions:
        if node.type in ("assert_statement", "call"):
            line = node.start_point.row + 1
            if line not in lines:
                lines.append(line)
    return lines


def asserted_calls(
    test_text: str,
    test_relpath: str,
    module: str,
    functions: frozenset[str],
) -> tuple[list[AssertedCall], int]:
    """(the asserted calls of functions of ``module`` in the test module, how many of its
    assertions could not be taken apart). Nothing runs: this reads the text."""
    source = SourceFile(test_relpath, test_text)
    try:
        tree = ast.parse(test_text)
    except SyntaxError:
        return [], 0
    aliases = _module_aliases(tree, module)
    parsed = PythonModule(source, is_test_file=True)
    found: list[AssertedCall] = []
    seen: set[tuple[str, str, str, str]] = set()
    untaken = 0
    for fn in parsed.tests:
        if fn.is_nested or _marked_off(source, fn):
            continue
        test = TestRef(
            test_relpath, fn.class_.name if fn.class_ is not None else None, fn.name, None
        )
        cases = _cases(source, parsed, fn)
        for line in _assertion_lines(fn):
            if cases is None:
                untaken += 1
                continue
            for indices in cases:
                try:
                    isolated: Isolated = isolate(source, test, line, indices)
                except NotIsolated:
                    untaken += 1
                    break
                if isolated.op not in EQUALITY_OPS or isolated.expected.kind in (
                    "implicit",
                    "computed",
                    "input",  # the call may change it before the comparison
                ):
                    # a boolean, identity or membership assertion: not a value; an
                    # expected value the test computes: not one a probe can write
                    untaken += 1
                    break
                function = _resolve(isolated.callee, module, aliases, functions)
                if function is None:
                    break  # an assertion about something else
                key = (
                    wrapped(isolated.wrapper, function, isolated.projection),
                    isolated.arguments,
                    isolated.expected.text,
                    isolated.op,
                )
                if key in seen:
                    continue
                seen.add(key)
                found.append(
                    AssertedCall(
                        where=f"{test_relpath}:{isolated.line} ({fn.name})",
                        function=function,
                        arguments=isolated.arguments,
                        expected=isolated.expected.text,
                        op=isolated.op,
                        wrapper=isolated.wrapper,
                        projection=isolated.projection,
                        definitions=isolated.definitions,
                    )
                )
                if len(found) >= MAX_CALLS:
                    return found, untaken
    return found, untaken


# ----------------------------------------------------------------------- the sandbox


_HARNESS = """\
import importlib as _importlib
import importlib.util as _util
import os as _os
import sys as _sys

_sys.path.insert(0, _os.path.join(_os.getcwd(), {path_entry!r}))
try:
    _m = _importlib.import_module({module!r})
except ImportError:
    _spec = _util.spec_from_file_location({module!r}, _os.path.join(_os.getcwd(), {relpath!r}))
    _m = _util.module_from_spec(_spec)
    _sys.modules[{module!r}] = _m
    _spec.loader.exec_module(_m)
"""


def _path_entry(relpath: str, module: str) -> str:
    """The sys.path entry under which ``relpath`` is importable as ``module``:
    ``src`` for ``src/pkg/text.py`` and ``pkg.text``; ``.`` when they do not match."""
    parts = posixpath.splitext(relpath)[0].split("/")
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    names = module.split(".")
    if len(parts) >= len(names) and parts[-len(names) :] == names:
        return "/".join(parts[: len(parts) - len(names)]) or "."
    return "."


def _compare(op: str, value: str, expected: str) -> bool:
    if sandbox.values_equal(value, expected):
        return True
    if op != "approx":
        return False
    # pytest.approx's defaults: relative 1e-6, absolute 1e-12, through lists and tuples
    try:
        x, y = ast.literal_eval(value), ast.literal_eval(expected)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return _approx(x, y)


def _approx(x: Any, y: Any) -> bool:
    if isinstance(x, (int, float)) and isinstance(y, (int, float)):
        if isinstance(x, bool) or isinstance(y, bool):
            return x == y
        return math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-12)
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return len(x) == len(y) and all(_approx(a, b) for a, b in zip(x, y, strict=True))
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(_approx(x[k], y[k]) for k in x)
    return bool(x == y)


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def verify(
    patched_text: str,
    module_relpath: str,
    module: str,
    calls: Sequence[AssertedCall],
    files: dict[str, str],
    limits: sandbox.Limits,
    untaken: int = 0,
    python: Interpreter | None = None,
) -> Verification:
    """Run ``calls`` against the patched module in the sandbox — one fresh run, with
    ``files`` (the project without its tests) and the patched module in place — and
    compare each value with its expected value here."""
    if not calls:
        return Verification(
            0, 0, "no assertion of the test module could be checked by value", untaken
        )
    # Each repr is cut so that the list of them, escaped, stays under the value cap.
    cap = probe_cap(limits, len(calls))
    harness = _HARNESS.format(
        path_entry=_path_entry(module_relpath, module), module=module, relpath=module_relpath
    ) + PROBE.format(cap=cap)
    expression = (
        "["
        + ", ".join(
            "_referee_probe(lambda: "
            + with_definitions(
                wrapped(c.wrapper, f"_m.{c.function}({c.arguments})", c.projection),
                c.definitions,
            )
            + ")"
            for c in calls
        )
        + "]"
    )
    result = sandbox.evaluate(
        harness,
        expression,
        limits=limits,
        files={**files, module_relpath: patched_text},
        python=python,  # the project's: the patched module imports its dependencies
    )
    if result.status != "ok":
        return Verification(
            0, len(calls), f"the patched module did not run: {result.message}", untaken
        )
    values = probe_values(result, len(calls), cap)
    if values is None:
        return Verification(
            0, len(calls), "the sandbox answered something other than values", untaken
        )
    verified = 0
    first_miss = None
    for call, (status, text) in zip(calls, values, strict=True):
        if status == "ok" and _compare(call.op, text, call.expected):
            verified += 1
        elif first_miss is None:
            got = f"raised {_short(text)}" if status == "error" else f"returned {_short(text)}"
            first_miss = f"{_short(call.call)} {got}; {call.where} asserts {_short(call.expected)}"
    total = len(calls)
    if first_miss is None:
        message = f"{verified}/{total} asserted calls verified"
    else:
        message = f"{verified}/{total} asserted calls verified: {first_miss}"
    return Verification(verified, total, message, untaken)
