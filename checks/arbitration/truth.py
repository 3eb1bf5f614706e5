"""The independent sources of truth for a call under test, in order of trust:

1. an explicit spec — a doctest or docstring example with the same call;
2. a reference implementation the user declared (``arbitration.references``);
3. k oracle programs the model writes from the signature and docstring only, each run in
   the sandbox on the call's arguments; they certify a value only when enough agree.

None of them sees the function's body or the test. Every execution goes through
:mod:`referee.checks.sandbox`.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import hashlib
import json
import math
import os
import re
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from referee.checks import sandbox
from referee.checks.arbitration.isolate import WRAPPERS, FunctionSpec
from referee.checks.arbitration.methods import oracle_example
from referee.checks.config import tomllib
from referee.checks.judge.backend import BatchCancelled, ChatRequest, chat_batch
from referee.checks.models import ArbitrationConfig, OracleResult

PROMPTS = Path(__file__).with_name("prompts") / "arbitration-v1.toml"
ORACLE_MAX_TOKENS = 768

Progress = Callable[[str], None]


class Cancelled(Exception):
    """The caller asked arbitration to stop (the editor cancelled the request)."""


class ArbitrationError(Exception):
    """Arbitration could not run at all (no such test, the test passes, no model): the
    message says what to do. Not a verdict."""


class ModelCrashed(ArbitrationError):
    """The model process died while writing oracles or patches: the arbitration is
    UNCLEAR with this reason, never a verdict."""


class LazyModel:
    """The model for oracles and patches, loaded on its first question: when every
    program comes from the cache, arbitration never loads it. ``identity`` (part of every
    cache key) names the weights without loading them: the backend, the model setting,
    and for a local file its size and modification time."""

    def __init__(
        self,
        backend: str,
        model: str,
        url: str | None,
        api_key_env: str | None,
        threads: int | None = None,
        runtime: str = "auto",
        timeout: float = 120.0,
    ):
        self.backend, self.model, self.url, self.api_key_env = backend, model, url, api_key_env
        self.threads, self.runtime, self.timeout = threads, runtime, timeout
        self._opened: Any = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, config: ArbitrationConfig, judge: Any) -> LazyModel:
        """The arbitration table's model, falling back on the judge's."""
        return cls(
            config.backend or judge.backend,
            config.model or judge.model,
            config.url or judge.url,
            judge.api_key_env,
            judge.threads,
            judge.runtime,
            judge.timeout,
        )

    @property
    def identity(self) -> str:
        parts = [self.backend, self.model, self.url or ""]
        if self.backend == "llama-cpp":
            with contextlib.suppress(OSError):
                path = Path(self.model).expanduser()
                if path.is_file():
                    stat = path.stat()
                    parts += [str(stat.st_size), str(stat.st_mtime_ns)]
        return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:16]

    def _open(self) -> Any:
        from referee.checks.judge.backend import open_backend

        with self._lock:
            if self._opened is None:
                self._opened = open_backend(
                    self.backend,
                    model=self.model,
                    url=self.url,
                    api_key_env=self.api_key_env,
                    threads=self.threads,
                    runtime=self.runtime,
                    timeout=self.timeout,
                )
        return self._opened

    def chat(self, messages: Sequence[dict[str, str]], **kwargs: Any) -> Any:
        from referee.checks.judge.backend import BackendError
        from referee.checks.judge.worker import WorkerCrashed, WorkerUnavailable

        try:
            return self._open().chat(messages, **kwargs)
        except (WorkerCrashed, WorkerUnavailable) as exc:
            raise ModelCrashed(str(exc)) from None
        except BackendError as exc:
            raise ArbitrationError(f"arbitration needs its model: {exc}") from None

    def chat_batch(self, requests: Sequence[Any], **kwargs: Any) -> list[Any]:
        from referee.checks.judge.backend import BackendError, chat_batch
        from referee.checks.judge.worker import WorkerCrashed, WorkerUnavailable

        try:
            return chat_batch(self._open(), requests, **kwargs)
        except (WorkerCrashed, WorkerUnavailable) as exc:
            raise ModelCrashed(str(exc)) from None
        except BackendError as exc:
            raise ArbitrationError(f"arbitration needs its model: {exc}") from None


@dataclass(frozen=True)
class Prompts:
    version: str
    oracle_system: str
    oracle: str
    oracle_examples: str
    oracle_suite: str
    oracle_method: str
    oracle_repair: str
    patch_system: str
    patch: str
    inputs_system: str
    inputs: str


@cache
def prompts() -> Prompts:
    raw = PROMPTS.read_bytes()
    data = tomllib.loads(raw.decode("utf-8"))
    return Prompts(
        version="arbitration-v1-" + hashlib.sha256(raw).hexdigest()[:8],
        oracle_system=data["oracle_system"],
        oracle=data["oracle"],
        oracle_examples=data["oracle_examples"],
        oracle_suite=data["oracle_suite"],
        oracle_method=data["oracle_method"],
        oracle_repair=data["oracle_repair"],
        patch_system=data["patch_system"],
        patch=data["patch"],
        inputs_system=data["inputs_system"],
        inputs=data["inputs"],
    )


def limits(config: ArbitrationConfig) -> sandbox.Limits:
    """Sandbox limits for one oracle, reference or doctest run."""
    return sandbox.Limits(
        timeout_s=config.timeout,
        cpu_s=max(1, math.ceil(config.timeout)),
        memory_mb=config.memory_mb,
    )


# ------------------------------------------------------------------------- doctest


def _literal_value(text: str) -> str | None:
    """``text`` when it reads as a Python literal (what a value can be compared as)."""
    text = text.strip()
    if text in ("nan", "inf", "-inf"):
        return text
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return text


_Call = tuple[list[object], dict[str, object]]


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _calls(func: ast.expr, name: str, module: str | None) -> bool:
    """Whether ``func`` names the top-level function ``name`` of ``module``: ``name``
    itself, or ``module.name`` / ``last_part_of_module.name`` — never another object's
    function of the same name (``np.mean`` is not ``stats.mean``)."""
    if isinstance(func, ast.Name):
        return func.id == name
    if isinstance(func, ast.Attribute) and func.attr == name and module:
        return _dotted(func.value) in (module, module.rsplit(".", 1)[-1])
    return False


def _call_values(call: ast.expr, name: str, module: str | None = None) -> _Call | None:
    """The values of a call's literal arguments, when it calls ``name``."""
    if not isinstance(call, ast.Call) or not _calls(call.func, name, module):
        return None
    try:
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg or "**": ast.literal_eval(k.value) for k in call.keywords}
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return args, kwargs


def _identical(a: object, b: object) -> bool:
    """Equal values of the same types all the way down: an example for ``f(1)`` is not
    one for ``f(1.0)`` or ``f(True)``, nor one for ``f(0)`` evidence about ``f(1e-13)``."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple))
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return a.keys() == b.keys() and all(_identical(a[k], b[k]) for k in a)
    if isinstance(a, (set, frozenset)):
        return a == b and all(type(x) in {type(y) for y in b} for x in a)
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))  # nan is the same example
    return a == b


def _same_call(a: _Call, b: _Call) -> bool:
    args_a, kw_a = a
    args_b, kw_b = b
    return (
        len(args_a) == len(args_b)
        and kw_a.keys() == kw_b.keys()
        and all(_identical(x, y) for x, y in zip(args_a, args_b, strict=True))
        and all(_identical(kw_a[k], kw_b[k]) for k in kw_a)
    )


_SEPARATOR = re.compile(
    r"^\s*(==>|=>|->|➞|→|==|=|:|returns|should return|should be|gives|is)\s*(?P<value>.+)$"
)


def docstring_examples(docstring: str, name: str) -> list[tuple[str, str, str]]:
    """(call source, expected value, the line it came from) of every example in a
    docstring: doctest examples (``>>> f(1)`` then ``2``) and example lines
    (``f(1) == 2``, ``f(1) -> 2``, ``f(1) ➞ 2``, ``f(1) returns 2``, and ``>>> f(1) == 2``
    with no output under it)."""
    found: list[tuple[str, str, str]] = []
    try:
        examples = doctest.DocTestParser().get_examples(docstring)
    except ValueError:
        examples = []
    # ``>>> f(19) == 'xix'`` with no output under it: an example line written with the
    # prompt (doctest would print True there), read as ``f(19) == 'xix'`` below
    without_output = set()
    for example in examples:
        # The whole expected output, else its first line: example lines written right
        # under a doctest read as part of its output.
        want = _literal_value(example.want) or _literal_value(example.want.split("\n")[0])
        if want is not None:
            found.append((example.source.strip(), want, f">>> {example.source.strip()}"))
        elif not example.want.strip():
            without_output.add(example.source.strip())
    for raw_line in docstring.splitlines():
        line = raw_line.strip().lstrip("-*•").strip().strip("`")
        if line.startswith(">>>"):
            line = line[3:].strip()
            if line not in without_output:
                continue
        # ``name(`` standing alone or after its module's name, not the tail of another
        # name (``geometric_mean(`` is not ``mean(``); _call_values checks the prefix.
        found_at = re.search(rf"(?<![\w])(?:[A-Za-z_][\w.]*\.)?{re.escape(name)}\(", line)
        if found_at is None:
            continue
        start = found_at.start()
        for end in (m.end() for m in re.finditer(r"\)", line[start:])):
            text = line[start : start + end]
            try:
                ast.parse(text, mode="eval")
            except SyntaxError:
                continue
            match = _SEPARATOR.match(line[start + end :].replace("`", ""))
            if match:
                value = _leading_literal(match.group("value"))
                if value is not None:
                    found.append((text, value, raw_line.strip()))
            break
    return found


# what follows a value written as a computation: ``-> 19 - 5 - 6 = 8``
_OPERATOR = re.compile(r"^(?:[-+*/%=<>&|^]|\*\*|//)")


def _leading_literal(text: str) -> str | None:
    """The longest run of leading words of ``text`` that is a literal (``5.`` → ``5``).

    A value written as a computation is read by its result: ``19 - 5 - 6 = 8`` is ``8``
    (the words after the last ``=``), never ``19``; one with no ``=`` result
    (``10 - 2``) is no value."""
    words = text.strip().split()
    for count in range(len(words), 0, -1):
        candidate = " ".join(words[:count]).rstrip(".,;")
        value = _literal_value(candidate)
        if value is not None:
            if count < len(words) and _OPERATOR.match(words[count]):
                _, equals, result = text.rpartition("=")
                if not equals or result.lstrip().startswith("="):
                    return None
                tail = result.strip().split()
                if not tail or (len(tail) > 1 and _OPERATOR.match(tail[1])):
                    return None
                return _literal_value(tail[0].rstrip(".,;"))
            return value
    return None


# What a wrapper does to a literal value, computed here (built-ins on data, nothing run).
_WRAP_LITERAL: dict[str, Callable[[Any], Any]] = {
    "list": list,
    "tuple": tuple,
    "set": set,
    "sorted": sorted,
    "dict": dict,
    "str": str,
    "len": len,
}


def wrap_literal(wrapper: str, want: str) -> str | None:
    """``repr(wrapper(value))`` of a literal ``want`` (an unwrapped example ``f(3) -> [3,
    1]`` for the test's ``sorted(f(3))``), or None where that cannot be said."""
    function = _WRAP_LITERAL.get(wrapper)
    if function is None or want in ("nan", "inf", "-inf"):
        return None
    try:
        return repr(function(ast.literal_eval(want)))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def doctest_evidence(
    spec: FunctionSpec, arguments: str, wrapper: str | None = None
) -> OracleResult | None:
    """The docstring's own example for this call, if it has one. With ``wrapper``
    (``list``...), an example of the wrapped call, or of the bare call whose value the
    wrapper can be applied to here."""
    if not spec.docstring_value:
        return None
    ours = _call_values(ast.parse(f"{spec.name}({arguments})", mode="eval").body, spec.name)
    module = spec.module
    if ours is None:
        return None
    values: list[tuple[str, str]] = []
    for source, want, line in _examples(spec):
        try:
            node = ast.parse(source, mode="eval").body
        except SyntaxError:
            continue
        outer = (
            node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None
        )
        if (
            isinstance(node, ast.Call)
            and outer is not None
            and len(node.args) == 1
            and not node.keywords
            and outer != spec.name
        ):
            if outer != wrapper:
                continue  # an example of another wrapper's value
            node = node.args[0]
        elif wrapper is not None:
            bare = wrap_literal(wrapper, want)
            if bare is None:
                continue
            want = bare
        theirs = _call_values(node, spec.name, module)
        if theirs is not None and _same_call(ours, theirs):
            values.append((want, line))
    if not values:
        return None
    first, line = values[0]
    if any(not sandbox.values_equal(first, other) for other, _ in values[1:]):
        return OracleResult(
            source="doctest",
            status="error",
            detail="the docstring gives different values for this call: "
            + ", ".join(v for v, _ in values),
        )
    return OracleResult(source="doctest", status="ok", value=first, detail=line)


def _examples(spec: FunctionSpec) -> list[tuple[str, str, str]]:
    """The docstring's examples (:func:`docstring_examples`), each call written as the
    oracle's function is called (a method's ``Table(x).to_text()`` is
    ``to_text((x,), {})``: :func:`~referee.checks.arbitration.methods.oracle_example`)."""
    found = []
    for source, want, line in docstring_examples(spec.docstring_value or "", spec.name):
        call = oracle_example(spec, source)
        if call is not None:
            found.append((call, want, line))
    return found


def example_calls(spec: FunctionSpec) -> list[tuple[str, str, str]]:
    """The docstring's examples that are a self-contained call of the function — literal
    arguments, perhaps under one wrapper (``list(f(3))``) — each as (a call of the bare
    name an oracle program defines, the value the example gives, its line). A call whose
    examples give different values (an erratum) gives none."""
    if not spec.docstring_value:
        return []
    found: dict[str, tuple[str, str, str]] = {}
    conflicting: set[str] = set()
    for source, want, line in _examples(spec):
        try:
            node = ast.parse(source, mode="eval").body
        except SyntaxError:
            continue
        wrapper = None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in WRAPPERS
            and node.func.id != spec.name
            and len(node.args) == 1
            and not node.keywords
        ):
            wrapper, node = node.func.id, node.args[0]
        if _call_values(node, spec.name, spec.module) is None:
            continue
        assert isinstance(node, ast.Call)
        bare = ast.Call(func=ast.Name(id=spec.name), args=node.args, keywords=node.keywords)
        call = ast.unparse(bare)
        if wrapper is not None:
            call = f"{wrapper}({call})"
        if call in found and not sandbox.values_equal(found[call][1], want):
            conflicting.add(call)
        found.setdefault(call, (call, want, line))
    return [example for call, example in found.items() if call not in conflicting]


PROBE = """

def _referee_probe(thunk):
    try:
        value = thunk()
    except BaseException as exc:
        try:
            text = type(exc).__name__ + ": " + str(exc)
        except BaseException:
            text = "exception"
        return ["error", text[:300]]
    try:
        return ["ok", repr(value)[:{cap}]]
    except BaseException as exc:
        return ["error", "repr failed: " + type(exc).__name__]
"""


def probe_cap(limits: sandbox.Limits, count: int) -> int:
    """How long each repr in a batch of ``count`` probed calls may be."""
    return max(256, max(1024 * 1024, limits.output_kb * 1024) // (12 * max(1, count)))


def probe_values(
    result: sandbox.SandboxResult, count: int, cap: int
) -> list[tuple[str, str]] | None:
    """The ``count`` (status, text) pairs a :data:`PROBE` batch returned, or None when the
    sandbox answered anything else (the program is untrusted: its answer is checked)."""
    values = result.value_json
    if not (
        result.status == "ok"
        and isinstance(values, list)
        and len(values) == count
        and all(
            isinstance(v, list)
            and len(v) == 2
            and v[0] in ("ok", "error")
            and isinstance(v[1], str)
            and len(v[1]) <= cap
            for v in values
        )
    ):
        return None
    return [(v[0], v[1]) for v in values]


def contradicted_example(
    program: str,
    examples: Sequence[tuple[str, str, str]],
    limits: sandbox.Limits,
    origin: str = "the docstring",
) -> str | None:
    """Why an oracle program is set aside — it contradicts one of the docstring's own
    examples (another value, an exception, no answer) — or None when it gives every
    example's value. Programs of one model can share a misreading of the words; the
    example the docstring spells out is the spec, and no number of them outvotes it.
    ``origin`` names where the examples come from in the reason ("the tests" for the
    suite's assertions: :mod:`referee.checks.arbitration.suite`)."""
    if not examples:
        return None
    cap = probe_cap(limits, len(examples))
    expression = "[" + ", ".join(f"_referee_probe(lambda: {c})" for c, _, _ in examples) + "]"
    result = sandbox.evaluate(program + PROBE.format(cap=cap), expression, limits=limits)
    values = probe_values(result, len(examples), cap)
    if values is None:
        return f"contradicts {origin}'s examples: running them gave {result.message or 'no values'}"
    for (call, want, _), (status, text) in zip(examples, values, strict=True):
        if status != "ok" or not sandbox.values_equal(text, want):
            got = f"raised {text}" if status != "ok" else f"returned {text}"
            return f"contradicts {origin}'s example: {call} {got}, {origin} says {want}"
    return None


# ----------------------------------------------------------------------- reference


def reference_for(config: ArbitrationConfig, keys: Sequence[str]) -> str | None:
    """The declared reference for the first of ``keys`` (``module:function``,
    ``path.py:function``) that has one."""
    for key in keys:
        if key in config.references:
            return config.references[key]
    return None


def reference_evidence(
    reference: str,
    arguments: str,
    config: ArbitrationConfig,
    files: dict[str, str],
    wrapper: str | None = None,
    python: sandbox.Interpreter | None = None,
) -> OracleResult:
    """Run the declared reference implementation on the call's arguments, in the sandbox,
    with the project's files beside it (in ``python``, the project's interpreter)."""
    target, sep, function = reference.rpartition(":")
    if not sep or not target or not function.isidentifier():
        return OracleResult(
            source="reference",
            status="error",
            detail=f"{reference!r} is not module:function or path.py:function",
        )
    if target.endswith(".py"):
        text = files.get(target.replace(os.sep, "/"))
        if text is None:
            return OracleResult(
                source="reference", status="error", detail=f"{target}: no such file in the project"
            )
        code, call = text, f"{function}({arguments})"
    else:
        code = (
            "import os, sys\nsys.path.insert(0, os.getcwd())\n"
            f"from {target} import {function} as __referee_reference__\n"
        )
        call = f"__referee_reference__({arguments})"
    call = f"{wrapper}({call})" if wrapper else call
    result = sandbox.evaluate(code, call, limits=limits(config), files=files, python=python)
    return OracleResult(
        source="reference",
        status=result.status,
        value=result.value if result.status == "ok" else None,
        detail=reference if result.status == "ok" else f"{reference}: {result.message}",
        duration_s=result.duration_s,
    )


# -------------------------------------------------------------------------- oracles


def oracle_messages(
    spec: FunctionSpec, suite: Sequence[tuple[str, str, str]] | None = None
) -> list[dict[str, str]]:
    """The oracle prompt: the signature and the docstring, never the body or a test. For
    a function with no docstring, ``suite`` — the project's passing, uncommitted-to-change
    assertions about it (:mod:`referee.checks.arbitration.suite`), never the failing one —
    is the specification: the signature and those assertions."""
    p = prompts()
    if spec.class_stub is not None:
        # a method that takes the object or its class: the class without its bodies, and
        # the function the oracle writes for it (referee.checks.arbitration.methods)
        return [
            {"role": "system", "content": p.oracle_system},
            {
                "role": "user",
                "content": p.oracle_method.format(
                    class_stub=spec.class_stub,
                    signature=spec.signature,
                    call=spec.oracle_call,
                    name=spec.name,
                ),
            },
        ]
    if suite and not spec.docstring_value:
        lines = "\n".join(f"assert {call} == {want}" for call, want, _ in suite)
        return [
            {"role": "system", "content": p.oracle_system},
            {
                "role": "user",
                "content": p.oracle_suite.format(
                    signature=spec.signature, examples=lines, name=spec.name
                ),
            },
        ]
    return [
        {"role": "system", "content": p.oracle_system},
        {
            "role": "user",
            "content": p.oracle.format(
                signature=spec.signature, docstring=spec.docstring or "", name=spec.name
            ),
        },
    ]


def examples_messages(
    spec: FunctionSpec, examples: Sequence[tuple[str, str, str]]
) -> list[dict[str, str]]:
    """The prompt of a fresh oracle in place of one that failed: the oracle prompt, with
    the docstring's own examples (:func:`example_calls`) written out as assertions the
    function must pass — still the signature and docstring only. Without examples it is
    the plain oracle prompt; without a docstring, the suite's prompt (which shows them
    already)."""
    if not examples:
        return oracle_messages(spec)
    if not spec.docstring_value:
        return oracle_messages(spec, examples)
    lines = "\n".join(f"assert {call} == {want}" for call, want, _ in examples)
    system, user = oracle_messages(spec)
    more = prompts().oracle_examples.format(examples=lines)
    return [system, {"role": "user", "content": f"{user['content']}\n\n{more}"}]


def extract_code(answer: str) -> str:
    """The first fenced Python block of a model's answer, else the answer itself."""
    for pattern in (r"```(?:python|py)[^\n]*\n(.*?)```", r"```[^\n]*\n(.*?)```"):
        match = re.search(pattern, answer, re.DOTALL)
        if match:
            return match.group(1)
    unterminated = re.search(r"```(?:python|py)?[^\n]*\n(.*)$", answer, re.DOTALL)
    return unterminated.group(1) if unterminated else answer


_KEPT = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
)


def module_imports(text: str) -> str:
    """The standard-library imports at the top level of a module: what the
    module's functions take for granted (``from math import pi``). An oracle program runs
    with them in front of its own code — the model sees the signature and docstring, not
    the module, and an oracle that uses ``pi`` as the docstring does is no worse for
    forgetting the import. Its own definitions come after them and win."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ""
    kept = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            roots = [alias.name.partition(".")[0] for alias in stmt.names]
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
            roots = [stmt.module.partition(".")[0]]
        else:
            continue
        if all(r in sys.stdlib_module_names and r != "__future__" for r in roots):
            kept.append(ast.unparse(stmt))
    return "".join(f"{line}\n" for line in kept)


def program_from(answer: str, name: str, preamble: str = "") -> tuple[str | None, str]:
    """(program, problem): the definitions of a model's answer — imports, functions,
    classes, constants; examples and prints dropped — or None and why not. ``preamble``
    (:func:`module_imports`) goes in front of them."""
    code = extract_code(answer)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return None, f"not valid Python: {exc.msg} (line {exc.lineno})"
    body = [
        stmt
        for stmt in tree.body
        if isinstance(stmt, _KEPT)
        and not (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__")
    ]
    if not any(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name for s in body
    ):
        return None, f"does not define `{name}`"
    # each definition as the model wrote it (its comments and quotes: a fix taken from
    # this program reads as written), or as ast writes it when its lines do not stand alone
    lines = code.splitlines()
    parts = []
    for stmt in body:
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        text = "\n".join(lines[first - 1 : stmt.end_lineno]).rstrip()
        try:
            ast.parse(text)
        except SyntaxError:
            text = ast.unparse(stmt)
        parts.append(text)
    program = "from __future__ import annotations\n\n" + preamble + "\n".join(parts)
    return program + "\n", ""


class ProgramCache:
    """Generated programs on disk, keyed by (prompt, model identity, seed, temperature):
    the same function arbitrated again, or another case of it, costs no model call."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def key(
        self,
        messages: Sequence[dict[str, str]],
        identity: str,
        seed: int,
        temp: float,
        max_tokens: int,
    ) -> str:
        # the conversation itself, not the prompt file's version: a prompt added beside
        # the others leaves the programs of unchanged conversations where they are
        raw = json.dumps(["conversation-v2", list(messages), identity, seed, temp, max_tokens])
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()

    def get(self, key: str) -> str | None:
        if self.directory is None:
            return None
        try:
            data = json.loads((self.directory / key[:2] / f"{key}.json").read_text("utf-8"))
        except (OSError, ValueError):
            return None
        text = data.get("answer") if isinstance(data, dict) else None
        return text if isinstance(text, str) else None

    def put(self, key: str, answer: str) -> None:
        if self.directory is None:
            return
        folder = self.directory / key[:2]
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"answer": answer}, handle)
            os.replace(tmp, folder / f"{key}.json")
        except OSError:
            pass  # a cache that cannot be written is only slower


def generate(
    backend: Any,
    messages: Sequence[dict[str, str]],
    *,
    seed: int,
    temperature: float,
    cache: ProgramCache,
    max_tokens: int = ORACLE_MAX_TOKENS,
) -> tuple[str, bool]:
    """(answer, whether it came from the cache)."""
    return generate_many(
        backend, messages, seeds=[seed], temperature=temperature, cache=cache, max_tokens=max_tokens
    )[0]


def generate_many(
    backend: Any,
    messages: Sequence[dict[str, str]] | Sequence[Sequence[dict[str, str]]],
    *,
    seeds: Sequence[int],
    temperature: float,
    cache: ProgramCache,
    max_tokens: int = ORACLE_MAX_TOKENS,
    cancelled: Callable[[], bool] | None = None,
) -> list[tuple[str, bool]]:
    """One answer per seed, (answer, whether it came from the cache): those not cached are
    decoded as one batch where the backend can (see :func:`chat_batch`). ``messages`` is
    one conversation for every seed, or one per seed."""
    if messages and isinstance(messages[0], dict):
        conversations = [messages] * len(seeds)
    else:
        conversations = list(messages)  # type: ignore[arg-type]
    keys = [
        cache.key(conversation, backend.identity, seed, temperature, max_tokens)  # type: ignore[arg-type]
        for conversation, seed in zip(conversations, seeds, strict=True)
    ]
    found = [cache.get(key) for key in keys]
    missing = [i for i, answer in enumerate(found) if answer is None]
    if missing:
        requests = [
            ChatRequest(
                conversations[i],  # type: ignore[arg-type]
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seeds[i],
                until_code_block=True,
            )
            for i in missing
        ]
        try:
            generations = chat_batch(backend, requests, cancelled=cancelled)
        except BatchCancelled:
            raise Cancelled from None
        for i, generation in zip(missing, generations, strict=True):
            found[i] = generation.text
            cache.put(keys[i], generation.text)
    return [(answer or "", i not in missing) for i, answer in enumerate(found)]


REPLACEMENT_SEEDS = 100  # replacement oracles are oracle-101, oracle-102, ...


@dataclass
class Replacements:
    """The budget of fresh oracles written in place of oracles that failed to run, shared
    by every round of one arbitration, and the oracles they replaced."""

    budget: int
    next_seed: int = REPLACEMENT_SEEDS + 1
    replaced: list[OracleResult] = field(default_factory=list)
    # The first half of the budget (rounded up) asks each fresh sample with the
    # docstring's examples written out as assertions; the second half asks it as the
    # first oracles were asked. Some docstrings lead the model astray the same way every
    # time it is shown the examples, and the plain question meets them; a function the
    # first half settles never reaches the second.
    with_examples: int = field(init=False)
    used: int = 0
    # candidates that ran but were not needed (a failed oracle's repair, when its fresh
    # sample ran too), in the order written: already paid for, the first oracles asked
    # when more are wanted for the same call (a test edit's extra ones), whatever they say
    spares: list[OracleResult] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.with_examples = (self.budget + 1) // 2

    def next_round(self, wanted: int) -> tuple[int, bool]:
        """How many of ``wanted`` candidates the next round may write — a round never
        straddles the two halves — and whether its fresh samples are shown the examples;
        the budget is spent as they are."""
        examples = self.used < self.with_examples
        room = self.with_examples - self.used if examples else self.budget
        count = min(wanted, room, self.budget)
        self.used += count
        self.budget -= count
        return count, examples


_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning)):")


def failed_to_run(result: OracleResult, docstring: str | None) -> bool:
    """Whether an oracle gave no opinion about the value: its program did not parse or
    define the function, it crashed, it timed out or ran out of memory, or it contradicts
    one of the docstring's examples (a misreading of the spec). An exception the
    docstring names (``Raises ValueError``) is an opinion — "this call raises" — and
    stays: it blocks certification as any disagreement does, it is never replaced by
    programs that happen to return."""
    if result.status == "ok" or result.status == "refused":
        return False
    if result.status != "error":
        return True  # timeout, memory, output-limit, killed
    match = _EXCEPTION.match(result.detail or "")
    if match is None:
        return True  # the program did not parse, did not define the function, ...
    name = match.group(1).rsplit(".", 1)[-1]
    return not (docstring and re.search(rf"\b{re.escape(name)}\b", docstring))


def oracle_evidence(
    spec: FunctionSpec,
    arguments: str,
    backend: Any,
    config: ArbitrationConfig,
    cache: ProgramCache,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
    seeds: Sequence[int] | None = None,
    replacements: Replacements | None = None,
    wrapper: str | None = None,
    suite: Sequence[tuple[str, str, str]] | None = None,
    raises: str | None = None,
) -> list[OracleResult]:
    """k oracle programs, written from the signature and docstring with different seeds,
    each run in the sandbox on the call's arguments. The k questions go to the model at
    once — the in-process model decodes them as one batch, the shared prompt evaluated
    once; a server gets them concurrently — then the programs run side by side.

    ``seeds`` (default 1..k) names the oracles: oracle-N is the one written with seed N,
    so more oracles for the same call extend the first k rather than repeat them.

    An oracle whose program contradicts one of the docstring's own examples
    (:func:`contradicted_example`) is set aside as if it had not run: it misread the spec.

    An oracle that failed to run (:func:`failed_to_run`) is no opinion about the value:
    while ``replacements`` has budget left, another one (seed 101, 102, ...) takes its
    place — the model shown the failed program and what went wrong with it
    (:func:`repair_messages`) — and the failed one is recorded in
    ``replacements.replaced``; a second candidate that ran too is kept in
    ``replacements.spares``, and takes the place of another failed oracle whose own
    candidates both failed. ``wrapper``
    (``list``, ``sorted``...) is applied to the call's value, as the test applies it.

    ``suite``: for a function with no docstring, the project's own passing assertions
    about it (:func:`referee.checks.arbitration.suite.suite_examples`), in
    :func:`example_calls`' shape: the oracles are written from the signature and them
    (:func:`oracle_messages`), and an oracle counts only when it gives every one's value.

    ``raises``: the exception class the test expects the call to raise. An oracle that
    raises it gave an opinion ("this call raises"), as one that raises an exception the
    docstring names does, and is kept rather than replaced."""
    from_suite = bool(suite) and not spec.docstring_value
    # the exceptions that are opinions, not failures to run (see failed_to_run)
    named = " ".join(filter(None, [spec.docstring_value, raises]))
    messages = oracle_messages(spec, suite if from_suite else None)
    examples = list(suite) if from_suite and suite else example_calls(spec)
    origin = "the suite" if from_suite else "the docstring"
    fresh_messages = examples_messages(spec, examples)
    preamble = module_imports(spec.text)
    inner = f"{spec.name}({arguments})"
    call = f"{wrapper}({inner})" if wrapper else inner
    seeds = list(seeds) if seeds is not None else list(range(1, config.oracles + 1))
    if progress is not None:
        more = "" if seeds[0] == 1 else " more"
        spec_words = f"{len(examples)} assertions of the tests" if from_suite else "docstring"
        progress(f"writing {len(seeds)}{more} oracles from the signature and {spec_words}")

    written: dict[str, str] = {}  # oracle -> the model's answer, for a repair

    def run_round(
        round_seeds: list[int], conversations: list[list[dict[str, str]]] | None = None
    ) -> list[OracleResult]:
        answers = generate_many(
            backend,
            conversations if conversations is not None else messages,
            seeds=round_seeds,
            temperature=config.temperature,
            cache=cache,
            cancelled=cancelled,
        )

        def oracle(position: int) -> OracleResult:
            source = f"oracle-{round_seeds[position]}"
            answer, cached = answers[position]
            written[source] = answer
            program, problem = program_from(answer, spec.name, preamble)
            if program is None:
                return OracleResult(
                    source=source,
                    status="error",
                    detail=f"the model's program {problem}",
                    cached=cached,
                )
            result = sandbox.evaluate(program, call, limits=limits(config))
            if result.status == "ok":
                why = contradicted_example(program, examples, limits(config), origin)
                if why is not None:
                    return OracleResult(
                        source=source,
                        status="error",
                        detail=why,
                        duration_s=result.duration_s,
                        cached=cached,
                        program=program,
                    )
            return OracleResult(
                source=source,
                status=result.status,
                value=result.value if result.status == "ok" else None,
                detail="" if result.status == "ok" else result.message,
                duration_s=result.duration_s,
                cached=cached,
                program=program,
            )

        if progress is not None:
            progress(f"running {len(round_seeds)} oracle programs in the sandbox")
        with ThreadPoolExecutor(max_workers=len(round_seeds)) as pool:
            return list(pool.map(oracle, range(len(round_seeds))))

    results = run_round(seeds)
    while replacements is not None and replacements.budget > 0:
        failed = [i for i, r in enumerate(results) if failed_to_run(r, named)]
        if not failed:
            break
        if cancelled is not None and cancelled():
            raise Cancelled
        if progress is not None:
            progress(f"{len(failed)} oracle(s) did not run; asking for new ones")
        # Each failed oracle gets two candidates, decoded in one batch: a fresh sample —
        # in the first half of the budget the prompt with the docstring's examples
        # written out as assertions (:func:`examples_messages`), another way of asking
        # than the one that failed; in the second half the first oracles' prompt again,
        # for a docstring whose examples, shown, lead the model astray every time — and
        # a repair — the model shown its own program and what went wrong with it. A
        # repair alone tends to stay with the mistake it was shown; a fresh sample alone
        # forgets what was learnt. Fresh samples come first while the budget is short.
        # The first candidate of the two (in that fixed order, whatever
        # its value) that runs takes the place; when neither does, the fresh one stays, and
        # the next round repairs that.
        count, shown_examples = replacements.next_round(2 * len(failed))
        asked = fresh_messages if shown_examples else messages
        jobs = [(i, asked) for i in failed] + [
            (
                i,
                repair_messages(
                    messages, written.get(results[i].source, ""), results[i], spec.name
                ),
            )
            for i in failed
        ]
        jobs = jobs[:count]
        fresh = list(range(replacements.next_seed, replacements.next_seed + len(jobs)))
        replacements.next_seed += len(jobs)
        candidates = run_round(fresh, [conversation for _, conversation in jobs])
        for index in failed:
            mine = [c for (i, _), c in zip(jobs, candidates, strict=True) if i == index]
            if not mine:
                continue
            ran = [c for c in mine if not failed_to_run(c, named)]
            chosen = ran[0] if ran else mine[0]
            replacements.spares.extend(ran[1:])
            # set aside: the oracle that failed, and the candidates that failed too (a
            # second candidate that also ran is kept as a spare)
            for candidate in (results[index], *(c for c in mine if c not in ran)):
                if candidate is not chosen:
                    replacements.replaced.append(
                        candidate.model_copy(update={"replaced_by": chosen.source})
                    )
            results[index] = chosen
        # A slot whose own candidates both failed takes a spare of another slot, the
        # first written, whatever its value: it ran, from the same prompt, for this call.
        for index in failed:
            if replacements.spares and failed_to_run(results[index], named):
                spare = replacements.spares.pop(0)
                replacements.replaced.append(
                    results[index].model_copy(update={"replaced_by": spare.source})
                )
                results[index] = spare
    return results


def _problem(result: OracleResult, name: str) -> str:
    """What went wrong with an oracle's program, in the words of the repair prompt."""
    detail = result.detail.strip()
    for origin in ("the docstring", "the suite"):
        if detail.startswith(f"contradicts {origin}'s example: "):
            rest = detail.removeprefix(f"contradicts {origin}'s example: ")
            return rest.replace(f", {origin} says ", f", but {origin} says ")
        if detail.startswith(f"contradicts {origin}'s examples: "):
            return f"running {origin}'s examples with it " + detail.split(": ", 1)[1]
    if result.status == "timeout":
        return "it did not finish in time (an endless loop or far too slow)"
    if result.status == "memory":
        return "it used too much memory"
    if detail.startswith("the model's program "):
        return "the program " + detail.removeprefix("the model's program ")
    return f"calling `{name}` raised {detail}" if detail else f"`{name}` failed ({result.status})"


def repair_messages(
    messages: Sequence[dict[str, str]], answer: str, failed: OracleResult, name: str
) -> list[dict[str, str]]:
    """The oracle prompt, the failed oracle's own answer, and what went wrong with it: the
    next attempt sees its own mistake, never the function's body or the test. A failed
    program with no answer to show gets the plain prompt (a fresh sample)."""
    if not answer.strip():
        return list(messages)
    p = prompts()
    return [
        *messages,
        {"role": "assistant", "content": answer},
        {
            "role": "user",
            "content": p.oracle_repair.format(problem=_problem(failed, name), name=name),
        },
    ]


def agreed_value(results: Sequence[OracleResult], required: int) -> str | None:
    """The value at least ``required`` of the results agree on (and no other value as
    many do), or None."""
    groups: list[list[OracleResult]] = []
    for result in results:
        if result.status != "ok" or result.value is None:
            continue
        for group in groups:
            if sandbox.values_equal(group[0].value or "", result.value):
                group.append(result)
                break
        else:
            groups.append([result])
    groups.sort(key=len, reverse=True)
    if not groups or len(groups[0]) < required:
        return None
    if len(groups) > 1 and len(groups[1]) == len(groups[0]):
        return None
    return groups[0][0].value
