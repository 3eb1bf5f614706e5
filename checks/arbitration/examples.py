"""A docstring's examples as evidence: the examples a docstring gives (doctests and
example lines such as ``f(1) -> 2``), the doctest truth for one call, and the probe that
runs a program on many calls in one sandbox run — how every oracle is held to the
examples its specification spells out.

Nothing here sees a function's body or a test.
"""

from __future__ import annotations

import ast
import doctest
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from referee.checks import sandbox
from referee.checks.arbitration.ast_names import dotted_name
from referee.checks.arbitration.isolate import FunctionSpec
from referee.checks.arbitration.known import with_definitions
from referee.checks.arbitration.methods import object_uses, oracle_example
from referee.checks.arbitration.projection import projected_literal
from referee.checks.arbitration.sites import WRAPPERS
from referee.checks.arbitration.std_values import (
    built_value,
    definitions_for,
    imported_names,
    is_value_repr,
)
from referee.checks.arbitration.suite_reading import Example
from referee.checks.models import OracleResult


def _literal_value(text: str) -> str | None:
    """``text`` when it reads as a value a doctest can show and compare as text: a Python
    literal, or the repr of a standard-library value built from literals
    (``datetime.datetime(2003, 9, 25, 0, 0)``, ``[Decimal('1.5')]``: :func:`is_value_repr`)."""
    text = text.strip()
    if text in ("nan", "inf", "-inf"):
        return text
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    try:
        ast.literal_eval(tree)
    except (ValueError, TypeError, MemoryError, RecursionError):
        return text if is_value_repr(tree.body) else None
    return text


_Call = tuple[list[object], dict[str, object]]


def _calls(func: ast.expr, name: str, module: str | None) -> bool:
    """Whether ``func`` names the top-level function ``name`` of ``module``: ``name``
    itself, or ``module.name`` / ``last_part_of_module.name`` — never another object's
    function of the same name (``np.mean`` is not ``stats.mean``)."""
    if isinstance(func, ast.Name):
        return func.id == name
    if isinstance(func, ast.Attribute) and func.attr == name and module:
        return dotted_name(func.value) in (module, module.rsplit(".", 1)[-1])
    return False


def _call_values(
    call: ast.expr, name: str, module: str | None = None, names: Mapping[str, str] | None = None
) -> _Call | None:
    """The values of a call's literal arguments, when it calls ``name``; with ``names``
    (what the text's imports bind), also of arguments that are standard-library values
    built from literals (``dt.timedelta(seconds=1001)``: :func:`built_value`)."""
    if not isinstance(call, ast.Call) or not _calls(call.func, name, module):
        return None

    def value(node: ast.expr) -> object:
        return ast.literal_eval(node) if names is None else built_value(node, names)

    try:
        args = [value(a) for a in call.args]
        kwargs = {k.arg or "**": value(k.value) for k in call.keywords}
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return args, kwargs


def identical(a: object, b: object) -> bool:
    """Equal values of the same types all the way down: an example for ``f(1)`` is not
    one for ``f(1.0)`` or ``f(True)``, nor one for ``f(0)`` evidence about ``f(1e-13)``."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple))
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return a.keys() == b.keys() and all(identical(a[k], b[k]) for k in a)
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
        and all(identical(x, y) for x, y in zip(args_a, args_b, strict=True))
        and all(identical(kw_a[k], kw_b[k]) for k in kw_a)
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
    spec: FunctionSpec,
    arguments: str,
    wrapper: str | None = None,
    projection: str = "",
    definitions: str = "",
) -> OracleResult | None:
    """The docstring's own example for this call, if it has one. With ``wrapper``
    (``list``...), an example of the wrapped call, or of the bare call whose value the
    wrapper can be applied to here. With ``projection`` (``[0]``), an example whose value
    is a literal the projection's subscripts can be applied to here (an attribute of a
    value no literal writes is not: no evidence). An argument that is a standard-library
    value (``dt.timedelta(seconds=1001)``, its names bound by ``definitions``, the test's
    imports) is the same as the example's when both build equal values of one type (the
    example's names bound by its module's imports)."""
    if not spec.docstring_value:
        return None
    ours = _call_values(
        ast.parse(f"{spec.name}({arguments})", mode="eval").body,
        spec.name,
        names=imported_names(definitions),
    )
    theirs_names = imported_names(spec.text)
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
        theirs = _call_values(node, spec.name, module, theirs_names)
        if theirs is not None and _same_call(ours, theirs):
            values.append((want, line))
    if projection:
        projected = [(projected_literal(want, projection), line) for want, line in values]
        values = [(want, line) for want, line in projected if want is not None]
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
    docstring = spec.docstring_value or ""
    built = object_uses(docstring, spec.owner) if spec.form == "method" else {}
    for source, want, line in docstring_examples(docstring, spec.name):
        call = oracle_example(spec, built.get(source, source))
        if call is not None:
            found.append((call, want, line))
    return found


def example_calls(spec: FunctionSpec) -> list[tuple[str, str, str]]:
    """The docstring's examples that are a self-contained call of the function — literal
    arguments or standard-library values built from them (``f(dt.timedelta(seconds=1))``,
    with the imports they need as the :class:`Example`'s definitions), perhaps under one
    wrapper (``list(f(3))``) — each as (a call of the bare name an oracle program defines,
    the value the example gives, its line). A call whose examples give different values
    (an erratum) gives none."""
    if not spec.docstring_value:
        return []
    found: dict[str, tuple[str, str, str]] = {}
    conflicting: set[str] = set()
    names = imported_names(spec.text)
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
        definitions = ""
        if _call_values(node, spec.name, spec.module) is None:
            if _call_values(node, spec.name, spec.module, names) is None:
                continue
            definitions = definitions_for(node, names)  # ``f(dt.timedelta(seconds=1))``
        assert isinstance(node, ast.Call)
        bare = ast.Call(func=ast.Name(id=spec.name), args=node.args, keywords=node.keywords)
        call = ast.unparse(bare)
        if wrapper is not None:
            call = f"{wrapper}({call})"
        if call in found and not sandbox.values_equal(found[call][1], want):
            conflicting.add(call)
        found.setdefault(call, Example(call, want, line, definitions))
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
    *,
    files: dict[str, str] | None = None,
    python: Any = None,
) -> str | None:
    """Why an oracle program is set aside — it contradicts one of the docstring's own
    examples (another value, an exception, no answer) — or None when it gives every
    example's value. Programs of one model can share a misreading of the words; the
    example the docstring spells out is the spec, and no number of them outvotes it.
    ``origin`` names where the examples come from in the reason ("the tests" for the
    suite's assertions: :mod:`referee.checks.arbitration.suite`). ``files`` and
    ``python``: the project's, where the examples build the project's objects (the
    program is then the guarded one: :mod:`~referee.checks.arbitration.project_objects`)."""
    if not examples:
        return None
    cap = probe_cap(limits, len(examples))
    # a suite's example may carry what its known arguments need, and the repr its
    # constructed expected value has (:class:`~referee.checks.arbitration.suite_reading.Example`)
    calls = [with_definitions(e[0], getattr(e, "definitions", "")) for e in examples]
    expression = "[" + ", ".join(f"_referee_probe(lambda: {c})" for c in calls) + "]"
    result = sandbox.evaluate(
        program + PROBE.format(cap=cap), expression, limits=limits, files=files, python=python
    )
    values = probe_values(result, len(examples), cap)
    if values is None:
        return f"contradicts {origin}'s examples: running them gave {result.message or 'no values'}"
    for example, (status, text) in zip(examples, values, strict=True):
        call, want = example[0], example[1]
        if status != "ok" or not sandbox.values_equal(
            text, getattr(example, "compared", "") or want
        ):
            got = f"raised {text}" if status != "ok" else f"returned {text}"
            return f"contradicts {origin}'s example: {call} {got}, {origin} says {want}"
    return None
