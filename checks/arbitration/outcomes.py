"""How arbitration reads what a call did and what a test expects — the outcome of a
raises assertion, a boolean, identity or membership expectation met or not — and the
lines its verdicts and the review queue show (the evidence, the history of the expected
value, what truth was missing)."""

from __future__ import annotations

import ast
import datetime as dt
import operator
import os
import re
import subprocess
import unicodedata
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from referee.checks.arbitration.isolate import FunctionSpec
from referee.checks.arbitration.known import with_definitions
from referee.checks.arbitration.raises_match import match_failed
from referee.checks.arbitration.sites import COMPARISON_IN_BOOLEAN, Isolated, NotIsolated, wrapped
from referee.checks.arbitration.suite import SuiteScan
from referee.checks.execution.running import MODULE_IMPORT, module_of
from referee.checks.models import Observation, OracleResult
from referee.checks.nodes import excerpt
from referee.checks.sandbox import SandboxResult


def _suite_words(scan: SuiteScan, needed: int) -> str:
    """What the suite gave: ``and only 1 passing assertion about it in the suite (2
    needed) — left out: ...``."""
    count = len(scan.found)
    if not needed:
        return "and the suite's assertions are not used (arbitration.suite-examples = 0)"
    noun = "assertion" if count == 1 else "assertions"
    suite = f"and only {count} passing {noun} about it in the suite ({needed} needed)"
    if count == 0:
        suite = f"and no passing assertion about it in the suite ({needed} needed)"
    if scan.excluded:
        suite += " — left out: " + ", ".join(f"{n} {w}" for w, n in scan.excluded.items())
    return suite


def no_truth(
    spec: FunctionSpec,
    arguments: str,
    scan: SuiteScan,
    needed: int,
    function_relpath: str | None,
) -> str:
    """One line: what truth was missing for an UNCLEAR verdict, and what the user can add."""
    if spec.class_stub is not None:
        return no_method_truth(spec, function_relpath, _suite_words(scan, needed))
    suite = _suite_words(scan, needed)
    key = _reference_key(spec, spec.name, function_relpath)
    return (
        f"no independent truth for `{spec.name}`: no docstring, no doctest for this call, no "
        f"reference, {suite} — add a docstring example (`>>> {spec.name}({arguments})`), a "
        f'reference (`[arbitration.references]` "{key}" = ...), or a literal case '
        f"(`assert {spec.name}(...) == value`) to a committed test"
    )


def decisive_truth(spec: FunctionSpec, arguments: str | None, function_relpath: str | None) -> str:
    """The end of an UNCLEAR line where the model's oracles did not settle it (they
    disagree, or the time budget ran out): what the user can add that decides the call
    without the model — a docstring example of it, or a declared reference."""
    if spec.class_stub is not None:
        call, key = f"{_receiver(spec)}.{spec.name}(...)", spec.qualname
    else:
        call, key = f"{spec.name}({arguments if arguments is not None else '...'})", spec.name
    key = _reference_key(spec, key, function_relpath)
    return (
        f" — a docstring example of the call (`>>> {call}`) or a reference "
        f'(`[arbitration.references]` "{key}" = ...) decides it without the model'
    )


def no_method_truth(
    spec: FunctionSpec, function_relpath: str | None, suite: str | None = None
) -> str:
    """One line: why a method (or class method) with no docstring has no truth —
    ``suite``, what the suite's assertions about it gave (None: they are not read for
    this form)."""
    key = _reference_key(spec, spec.qualname, function_relpath)
    receiver = _receiver(spec)
    if suite is None:
        suite = f"and the suite's assertions are not read for `{spec.qualname}`"
    return (
        f"no independent truth for `{spec.qualname}`: neither the method nor its class "
        f"has a docstring, no reference, {suite} — add a docstring example "
        f"(`>>> {receiver}.{spec.name}(...)`), a reference (`[arbitration.references]` "
        f'"{key}" = ..., a function of {spec.signature.removeprefix("def ").rstrip(":")}), '
        f"or a literal case (`assert {receiver}.{spec.name}(...) == value`) to a committed test"
    )


def _reference_key(spec: FunctionSpec, name: str, function_relpath: str | None) -> str:
    """How ``[arbitration.references]`` names ``name`` of the spec's module (or file)."""
    return f"{spec.module}:{name}" if spec.module else f"{function_relpath}:{name}"


def _receiver(spec: FunctionSpec) -> str:
    """What a method is called on in an example: ``Table(...)``, or the class itself for
    a class method or static method."""
    return f"{spec.owner}(...)" if spec.form == "method" else spec.owner


def evidence_line(result: OracleResult, *, escaped: bool = False) -> str:
    """``oracle-2: 'aa|bb'``, or what went wrong; ``escaped``: the value with its
    non-ASCII characters as escapes."""
    if result.status == "ok":
        value = result.value
        if escaped and value is not None:
            value = value.encode("ascii", "backslashreplace").decode("ascii")
        return f"{result.source}: {value}"
    return f"{result.source}: {result.status} ({result.detail})"


def evidence_lines(results: Iterable[OracleResult]) -> list[str]:
    """Each source's :func:`evidence_line`. Where two values differ only in how Unicode
    spells the same text (a precomposed ``ÿ`` and a ``y`` with a combining diaeresis, an
    invisible format character), every value is shown escaped: a person reading "the
    oracles do not agree" sees where they differ, not the same text three times."""
    results = list(results)
    escaped = _look_alike({r.value for r in results if r.status == "ok" and r.value is not None})
    return [evidence_line(r, escaped=escaped) for r in results]


def evidence_text(results: Iterable[OracleResult]) -> str:
    """:func:`evidence_lines` on one line, as reasons quote them."""
    return "; ".join(evidence_lines(results))


def _look_alike(values: set[str]) -> bool:
    """Whether two of ``values`` are different texts that read the same on a screen."""
    seen: set[str] = set()
    for value in values:
        shown = "".join(
            ch for ch in unicodedata.normalize("NFKC", value) if unicodedata.category(ch) != "Cf"
        )
        if shown in seen:
            return True
        seen.add(shown)
    return False


def history(root: Path, path: str, line: int) -> str | None:
    """Who last changed the line holding the expected value (git blame): evidence shown
    beside the verdict, never a reason for it."""
    try:
        proc = subprocess.run(
            ["git", "blame", "--porcelain", "-L", f"{line},{line}", "--", path],
            cwd=root,
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    fields: dict[str, str] = {}
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    commit = lines[0].split()[0] if lines else ""
    for entry in lines[1:]:
        key, _, value = entry.partition(" ")
        fields.setdefault(key, value)
    if not commit or set(commit) == {"0"}:
        return "the expected value's line is not committed yet"
    when = fields.get("author-time")
    date = dt.datetime.fromtimestamp(int(when), dt.timezone.utc).date() if when else "?"
    return (
        f"the expected value's line was last changed in {commit[:10]} "
        f"({fields.get('author', '?')}, {date}): {fields.get('summary', '')}"
    )


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat()


_RAISED = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")


def exception_name(isolated: Isolated) -> str:
    """The class name of the exception a raises assertion expects (``errors.ParseError``:
    ``ParseError``)."""
    return isolated.expected.text.strip().rsplit(".", 1)[-1]


def raised(name: str) -> str:
    """The outcome "raises NAME", as the truth of a call that raises is written."""
    return f"raises {name.strip().rsplit('.', 1)[-1]}"


def outcome(result: OracleResult) -> OracleResult:
    """A source's result read as the call's outcome: an exception it raised is the
    value "raises NAME" (the class name only: messages differ between programs)."""
    if result.status != "error":
        return result
    match = _RAISED.match(result.detail or "")
    if match is None:
        return result
    return result.model_copy(update={"status": "ok", "value": raised(match.group(1))})


def raises_observed(isolated: Isolated, crash: dict[str, Any]) -> str:
    """What the code did instead of raising the expected exception: returned (pytest's
    ``DID NOT RAISE``, unittest's ``E not raised``), or raised another exception."""
    kind, message = str(crash.get("type", "")), str(crash.get("message", ""))
    name = exception_name(isolated)
    on_message = match_failed(isolated, kind, message)  # match= did not find the message
    if on_message is not None:
        return on_message
    if (kind == "Failed" and message.startswith("DID NOT RAISE")) or (
        kind == "AssertionError" and " not raised" in message
    ):
        return f"returned instead of raising {name}"
    if not kind or kind == name or kind in ("Failed", "AssertionError"):
        raise NotIsolated(
            "cannot isolate the call under test: the raises assertion failed in a way "
            f"referee does not read ({kind}: {excerpt(message)})"
        )
    return f"raised {kind}: {excerpt(message)} instead of {name}"


def expectation(isolated: Isolated) -> str:
    """The test's expectation in words: ``count_vowels('a') is truthy``."""
    call, value = isolated.call, isolated.expected.text
    if isolated.op in ("truthy", "falsy"):
        return f"{call} is {isolated.op}"
    if isolated.op in _TWO_SIDED and isolated.call_side == "right":
        return f"{value} {isolated.op} {call}"
    return f"{call} {isolated.op} {value}"


# Operators whose sides are written in an order that matters to the expectation's words
_TWO_SIDED = frozenset({"in", "not in", "!=", "<", "<=", ">", ">="})
_ORDERINGS = {
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def meets(op: str, call_side: str, value: str, expected: str) -> bool | None:
    """Whether the call's value (a repr) meets a boolean, identity, membership,
    inequality or ordering expectation, the sides in the test's order; None when either is
    not a literal that can be checked, or the two cannot be ordered."""
    try:
        got = ast.literal_eval(value)
        want = None if op in ("truthy", "falsy") else ast.literal_eval(expected)
        if op == "truthy":
            return bool(got)
        if op == "falsy":
            return not got
        if op in ("is", "is not"):
            if not (want is None or isinstance(want, bool)):
                return None
            return (got is want) == (op == "is")
        if op in ("in", "not in"):
            container, member = (got, want) if call_side == "right" else (want, got)
            return (member in container) == (op == "in")
        if op in _ORDERINGS:
            left, right = (want, got) if call_side == "right" else (got, want)
            return bool(_ORDERINGS[op](left, right))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return None


def shown_value(message: str, op: str) -> str | None:
    """The value pytest's rewritten ``assert f(x)`` (``assert not f(x)``) shows on its
    first line; None when that line is not one."""
    first = message.split("\n", 1)[0].strip()
    prefix = "assert not " if op == "falsy" else "assert "
    if not first.startswith(prefix):
        return None
    return first[len(prefix) :].strip() or None


def same_file(a: Any, b: str) -> bool:
    if not a:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(str(a)) == b


def observation(
    isolated: Isolated,
    comparison: dict[str, Any] | None,
    resolved: dict[str, Any],
    crash: dict[str, Any],
    test_id: str,
    test_path: str,
    function_path: str,
) -> Observation:
    """What the failing run showed of the call under test: the value it produced (or
    the exception it raised, the time it did not return in) and the value asserted."""
    produced = asserted = produced_error = timeout_s = None
    if isolated.op == "raises":
        produced_error = raises_observed(isolated, crash)
        asserted = raised(isolated.expected.text)
    elif COMPARISON_IN_BOOLEAN in isolated.forms:
        asserted = _written_expected(isolated)  # the call's value: observed_by_running
    elif comparison is not None:
        produced = comparison["left"] if isolated.call_side == "left" else comparison["right"]
        asserted = comparison["right"] if isolated.call_side == "left" else comparison["left"]
        if isolated.expected.kind == "implicit":
            asserted = isolated.expected.text  # assertTrue's True, assertIsNone's None
    elif crash.get("assertion") and crash.get("raised_here") and isolated.op in ("truthy", "falsy"):
        # ``assert f(x)`` / ``assert not f(x)`` compares nothing: what the call gave is
        # what pytest's rewritten assertion shows ("assert []\n +  where [] = f(3)")
        produced = shown_value(str(crash.get("message", "")), isolated.op)
        asserted = isolated.expected.text
    elif isolated.expected.kind == "computed" and isolated.expected_known is None:
        raise NotIsolated(
            "cannot isolate the call under test: the expected value "
            f"`{excerpt(isolated.expected.text)}` is computed by the test, and the failure "
            "recorded no comparison that shows its value"
        )
    else:
        # An AssertionError is what the call raised only when the function's own file
        # raised it — not the test's line, not an assertion helper elsewhere.
        if crash.get("assertion") and not same_file(crash.get("raised_in"), resolved["file"]):
            raise NotIsolated(
                "cannot isolate the call under test: the assertion failed without a "
                "comparison pytest could report"
            )
        if crash.get("hung"):
            timeout_s = float(crash["hung"])
            produced_error = str(crash.get("message", ""))
        else:
            produced_error = f"{crash.get('type', 'Exception')}: {crash.get('message', '')}"
        try:
            asserted = repr(ast.literal_eval(isolated.expected.text))
        except (ValueError, SyntaxError):
            # a computed value known on its own: evaluated later (asserted_by_evaluating)
            asserted = isolated.expected.text if isolated.expected_known is None else None
    kind = resolved.get("kind")
    forms = isolated.forms + (
        (kind,)
        if kind in ("method", "staticmethod", "classmethod") and isolated.constructor is None
        else ()
    )
    return Observation(
        test_id=test_id,
        path=test_path,
        line=isolated.line,
        assertion=isolated.assertion,
        op=isolated.op,
        call=isolated.call,
        function=f"{resolved.get('module')}:{resolved.get('qualname')}",
        function_path=function_path,
        produced=produced,
        produced_error=produced_error,
        timeout_s=timeout_s,
        asserted=asserted,
        expected_text=isolated.expected.text,
        expected_site=isolated.expected.kind,
        call_forms=forms,
    )


def _written_expected(isolated: Isolated) -> str | None:
    """The expected value of ``self.assertTrue(f(x) == 3)``, of which unittest recorded only
    ``False``: the literal the test writes; None for a value it computes that is known on
    its own (evaluated later: :func:`asserted_by_evaluating`)."""
    if isolated.expected.kind == "computed" and isolated.expected_known is not None:
        return None
    if isolated.expected.kind == "computed":
        raise NotIsolated(
            "cannot isolate the call under test: the expected value "
            f"`{excerpt(isolated.expected.text)}` is computed by the test, and a comparison "
            "inside assertTrue records no value of it"
        )
    try:
        return repr(ast.literal_eval(isolated.expected.text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return isolated.expected.text


def observed_by_running(
    observation: Observation,
    isolated: Isolated,
    name: str,
    relpath: str | None,
    run: Callable[[str, str], SandboxResult],
) -> Observation | str:
    """``observation`` with what the call under test gives, observed by running it on the
    current code — ``run(code, expression)``, the sandbox with the project's files and
    interpreter: the user's own code, as the test runs it — where the failing run could
    not record it (``self.assertTrue(f(x) == 3)``: unittest sees only ``False``); a
    one-line reason when it cannot be."""
    if relpath is None or isolated.constructor is not None or "." in isolated.callee:
        return (
            "cannot isolate the call under test: a comparison inside assertTrue is observed "
            "by running its call, which must be a plain function of the project's files"
        )
    entry, module = module_of(relpath)
    code = MODULE_IMPORT.format(entry=entry, module=module, relpath=relpath)
    code += f"{name} = _referee_m.{name}\n"
    expression = with_definitions(
        wrapped(isolated.wrapper, isolated.call, isolated.projection), isolated.definitions
    )
    result = run(code, expression)
    if result.status == "ok" and result.value is not None:
        return observation.model_copy(update={"produced": result.value})
    if result.status == "error":
        return observation.model_copy(update={"produced_error": result.message})
    return f"could not run {excerpt(isolated.call)} on the current code: {result.message}"


# The project's root and its src/ first on the path: where the test module's imports of
# the project resolve (the sandbox's working directory is a copy of the project's files)
_PROJECT_ON_PATH = (
    "import os as _referee_os, sys as _referee_sys\n"
    "_referee_sys.path[:0] = [_referee_os.getcwd(), _referee_os.path.join("
    "_referee_os.getcwd(), 'src')]\n"
)


def asserted_by_evaluating(
    observation: Observation, isolated: Isolated, run: Callable[[str, str], SandboxResult]
) -> Observation | str:
    """``observation`` with the value of the expected value the test computes from what
    is known on its own (``datetime(2003, 9, 25)``: :attr:`Isolated.expected_known`),
    evaluated by ``run(code, expression)`` in the sandbox, where the failing run recorded
    no comparison that shows it (the call raised); a one-line reason when it cannot be."""
    if observation.asserted is not None or isolated.expected_known is None:
        return observation
    definitions = isolated.definitions + isolated.expected_definitions
    code = _PROJECT_ON_PATH if isolated.expected_definitions else ""
    result = run(code, with_definitions(isolated.expected_known, definitions))
    if result.status == "ok" and result.value is not None:
        return observation.model_copy(update={"asserted": result.value})
    return (
        "cannot isolate the call under test: the expected value "
        f"`{excerpt(isolated.expected.text)}` is computed by the test, the failure recorded "
        f"no comparison that shows its value, and evaluating it on its own failed: "
        f"{result.message}"
    )


def completed(
    observation: Observation,
    isolated: Isolated,
    name: str,
    relpath: str | None,
    run: Callable[[str, str], SandboxResult],
    say: Callable[[str], None],
) -> Observation | str:
    """``observation`` with what the failing run could not record, observed by ``run`` in
    the sandbox: the call's value in ``self.assertTrue(f(x) == 3)``
    (:func:`observed_by_running`), a computed expected value known on its own where the
    call raised (:func:`asserted_by_evaluating`); a one-line reason when it cannot be."""
    observed: Observation | str = observation
    if COMPARISON_IN_BOOLEAN in isolated.forms:
        say(f"running {isolated.call} on the current code")
        observed = observed_by_running(observation, isolated, name, relpath, run)
    if isinstance(observed, str):
        return observed
    return asserted_by_evaluating(observed, isolated, run)
