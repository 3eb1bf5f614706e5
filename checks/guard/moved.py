"""A source change that moves exactly the value a test expects, decided by execution
(REF334).

An agent facing a test it cannot pass honestly sometimes changes no test and writes no
special case: it flips a constant or an operator of correct code (`setLevel(0)` to
`setLevel(1)`, `< n` to `<= n`), or writes the very literal the test expects into new
code, until the test's expectation holds. Reading cannot tell that from a fix; running
can tell what the change does for the test. So the guard, in agent mode:

1. takes the value-level edits of the change: a constant, an operator, a `True`/`None`
   of an existing line replaced or an arithmetic step (`+ 1`) added or dropped
   ("flips"), and the literals written into new code ("literals");
2. runs the test modules that exercise the changed code, as they are now, on the source
   as it was at the base and as it is now, in the sandbox (``sandbox.run_pytest``: a
   kernel boundary, fresh directory, time and memory bounded);
3. for each test that failed on a check at the base (an assertion, not an import error
   or a crash: the test ran the old code and saw another value) and passes now, takes
   each edit back alone — the old token of a flip, another value for a literal the test
   itself holds — and runs the test again.

A test that fails again on a check when one value-level edit alone is taken back is one
the change fitted with that value: REF334, at the edit. The verdict is read here from
the runs' outcomes; no code of the project runs in this process.

What it cannot decide it says so (``Outcome.notes``): no kernel boundary, a test module
that does not run in the sandbox (the project's dependencies are not referee's), a time
budget spent.
"""

from __future__ import annotations

import ast
import io
import re
import time
import tokenize
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import PurePosixPath

from referee.checks import sandbox
from referee.checks.guard.fitted import mentions
from referee.checks.interpreter import Interpreter
from referee.checks.progress import IDLE, Work

# Operators whose change changes a value, not a structure (`(`, `.` and `,` do).
_VALUE_OPS = frozenset(
    {"<", "<=", ">", ">=", "==", "!=", "+", "-", "*", "/", "//", "%", "**", "&", "|", "^"}
    | {"~", "<<", ">>", "+=", "-=", "*=", "/=", "//=", "%="}
)
_VALUE_NAMES = frozenset({"True", "False", "None", "and", "or", "not", "is", "in"})
_LAYOUT = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
)
_FLIP_TOKENS = 3  # a flip replaces at most this many tokens by at most this many
_STEP_TOKENS = 2  # an arithmetic step added or dropped (`+ 1`, `- offset`)

MAX_TEST_FILES = 4
MAX_FIXED_TESTS = 3
MAX_EDITS = 16


@dataclass(frozen=True)
class Edit:
    """One value-level edit of a changed source file, and how to take it back alone."""

    path: str
    line: int  # in the file as it is now
    before: str  # the tokens it replaced ("" for a literal of new code)
    after: str  # the tokens as they are now
    kind: str  # "flip" | "literal"
    start: int  # offsets of ``after`` in the text as it is now
    end: int
    undo: str  # what goes in place of text[start:end] to take the edit back

    def taken_back(self, text: str) -> str:
        return text[: self.start] + self.undo + text[self.end :]

    @property
    def needs_witness(self) -> bool:
        """Whether the edit counts only as the value the test expects: a literal written
        into new code, or a string of an existing line rewritten (a message, a pattern:
        the project's to word). A flipped number, operator or step counts as it is."""
        if self.kind == "literal":
            return True
        try:
            node = ast.parse(self.after.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
        return isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))


@dataclass(frozen=True)
class Moved:
    test: str  # the test's node id
    edit: Edit
    before: str  # how the test failed on the base source


@dataclass
class Outcome:
    moved: list[Moved] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------- the edits


@dataclass(frozen=True)
class _Token:
    type: int
    string: str
    start: int  # offset
    end: int
    line: int
    statement: bool  # the first token of a statement (a docstring, a bare expression)


def _tokens(text: str) -> list[_Token] | None:
    starts = [0]
    for line in io.StringIO(text):
        starts.append(starts[-1] + len(line))
    try:
        raw = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    out: list[_Token] = []
    first = True
    for tok in raw:
        if tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            first = True
            continue
        if tok.type in _LAYOUT:
            continue
        (row, col), (end_row, end_col) = tok.start, tok.end
        if row - 1 >= len(starts) or end_row - 1 >= len(starts):
            continue
        out.append(
            _Token(
                tok.type,
                tok.string,
                starts[row - 1] + col,
                starts[end_row - 1] + end_col,
                row,
                first,
            )
        )
        first = False
    return out


def _valued(token: _Token) -> bool:
    return (
        token.type in (tokenize.NUMBER, tokenize.STRING)
        or (token.type == tokenize.OP and token.string in _VALUE_OPS)
        or (token.type == tokenize.NAME and token.string in _VALUE_NAMES)
    )


def _literal(token: _Token) -> object:
    try:
        return ast.literal_eval(token.string)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_A_VALUE


_NOT_A_VALUE = object()


def _other_value(value: object) -> str | None:
    """Another literal of the same type, to stand for ``value`` taken back."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return repr(value + 1)
    if isinstance(value, float):
        return repr(value + 1.5)
    if isinstance(value, str):
        return repr(value + "~") if value else repr("~")
    if isinstance(value, bytes):
        return repr(value + b"~")
    return None


def _same_values(gone: list[_Token], came: list[_Token]) -> bool:
    """Whether two runs of tokens spell the same values (`"a"` and `'a'`, `1_000` and
    `1000`)."""
    if len(gone) != len(came) or not gone:
        return False
    for one, other in zip(gone, came, strict=True):
        if one.string == other.string:
            continue
        if one.type != other.type or one.type not in (tokenize.NUMBER, tokenize.STRING):
            return False
        value = _literal(one)
        if (
            value is _NOT_A_VALUE
            or value != _literal(other)
            or type(value) is not type(_literal(other))
        ):
            return False
    return True


def _compiles(text: str) -> bool:
    try:
        compile(text, "<edit>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def edits(path: str, old: str, new: str) -> list[Edit]:
    """The value-level edits that turn ``old`` into ``new`` (see the module's docstring),
    each one that can be taken back alone into code that compiles."""
    old_tokens, new_tokens = _tokens(old), _tokens(new)
    if old_tokens is None or new_tokens is None:
        return []
    out: list[Edit] = []
    old_lines, new_lines = old.splitlines(), new.splitlines()
    lines = SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in lines.get_opcodes():
        if tag == "equal":
            continue
        a = [t for t in old_tokens if i1 < t.line <= i2]
        b = [t for t in new_tokens if j1 < t.line <= j2]
        matcher = SequenceMatcher(None, [t.string for t in a], [t.string for t in b], False)
        for op, x1, x2, y1, y2 in matcher.get_opcodes():
            if op == "equal":
                continue
            gone, came = a[x1:x2], b[y1:y2]
            if _same_values(gone, came) or any(
                t.statement and t.type == tokenize.STRING for t in (*gone, *came)
            ):
                continue  # a quote style, a docstring, a bare string: no value changed
            flip = _flip(path, new, gone, came, b[y1 - 1] if y1 > 0 else None, old)
            if flip is not None:
                out.append(flip)
                continue
            out.extend(_new_literals(path, came))
    return [e for e in out if _compiles(e.taken_back(new))]


def _flip(
    path: str,
    new: str,
    gone: list[_Token],
    came: list[_Token],
    before: _Token | None,
    old: str,
) -> Edit | None:
    if not all(_valued(t) for t in (*gone, *came)):
        return None
    if gone and came:
        if len(gone) > _FLIP_TOKENS or len(came) > _FLIP_TOKENS:
            return None
        was = old[gone[0].start : gone[-1].end]
        return Edit(
            path,
            came[0].line,
            was,
            new[came[0].start : came[-1].end],
            "flip",
            came[0].start,
            came[-1].end,
            was,
        )
    step = came or gone
    if len(step) > _STEP_TOKENS or not any(
        t.type == tokenize.OP or t.string == "not" for t in step
    ):
        return None
    if came:  # a step added: taken back by removing it
        return Edit(
            path,
            came[0].line,
            "",
            new[came[0].start : came[-1].end],
            "flip",
            came[0].start,
            came[-1].end,
            "",
        )
    if before is None:
        return None
    was = old[gone[0].start : gone[-1].end]
    return Edit(path, before.line, was, "", "flip", before.end, before.end, " " + was + " ")


def _new_literals(path: str, came: Iterable[_Token]) -> Iterator[Edit]:
    for token in came:
        if token.type not in (tokenize.NUMBER, tokenize.STRING) or token.statement:
            continue  # a docstring or a bare string is no value the code produces
        other = _other_value(_literal(token))
        if other is None:
            continue
        yield Edit(path, token.line, "", token.string, "literal", token.start, token.end, other)


# --------------------------------------------------------------------------- the runs

_OUTCOME = re.compile(r"^(PASSED|FAILED|ERROR)\s+(.+?)(?:\s+-\s+(.*))?$", re.MULTILINE)
_RAISED = re.compile(r"^E\s+(\w+(?:Error|Exception): .+)$", re.MULTILINE)
_CHECK_FAILED = re.compile(r"^(?:assert\b|AssertionError\b|Failed:|\w*Error: assert\b)")


def outcomes(stdout: str) -> dict[str, tuple[str, str]]:
    """Node id -> (PASSED | FAILED | ERROR, the reason) from pytest's ``-rA`` summary."""
    found: dict[str, tuple[str, str]] = {}
    for status, node, reason in _OUTCOME.findall(stdout):
        found.setdefault(node.strip(), (status, reason.strip()))
    return found


def check_failed(reason: str) -> bool:
    """Whether a failure is a check that saw another value (an assertion, `pytest.fail`,
    `DID NOT RAISE`), not the code crashing or a name it imports missing."""
    return bool(_CHECK_FAILED.match(reason))


def _side(
    files: dict[str, str], sources: dict[str, tuple[str | None, str | None]], index: int
) -> dict[str, str]:
    """The project with each changed source file as it was (``index`` 0) or is (1)."""
    view = dict(files)
    for path, texts in sources.items():
        if texts[index] is None:
            view.pop(path, None)
        else:
            view[path] = texts[index]  # type: ignore[assignment]
    return view


def _enclosing_names(text: str, lines: set[int]) -> set[str]:
    """The functions and classes around ``lines`` (by name), which the tests that
    exercise the change mention."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            end = node.end_lineno or node.lineno
            dunder = node.name.startswith("__") and node.name.endswith("__")
            if not dunder and any(node.lineno <= line <= end for line in lines):
                names.add(node.name)
    return names


def test_modules(
    files: dict[str, str],
    is_test: Callable[[str], bool],
    names: set[str],
    changed_tests: Iterable[str] = (),
    limit: int = MAX_TEST_FILES,
) -> list[str]:
    """The test modules to run: the changed ones first, then those that mention the
    changed functions or classes most."""
    chosen = [p for p in changed_tests if p in files and p.endswith(".py")][:limit]
    if not names:
        return chosen
    pattern = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\b")
    ranked = []
    for path, text in files.items():
        if path in chosen or not path.endswith(".py") or not is_test(path):
            continue
        if PurePosixPath(path).name == "conftest.py":
            continue
        count = len(pattern.findall(text))
        if count:
            ranked.append((-count, path))
    chosen += [path for _, path in sorted(ranked)]
    return chosen[:limit]


def _test_text(files: dict[str, str], node: str) -> str:
    """The test function's own text (whitespace removed per line) where it can be found,
    else its module's."""
    path, _, rest = node.partition("::")
    text = files.get(path, "")
    name = rest.split("::")[-1].split("[")[0]
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    if tree is not None:
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == name:
                segment = ast.get_source_segment(text, fn) or ""
                decorators = [ast.get_source_segment(text, d) or "" for d in fn.decorator_list]
                text = "\n".join([*decorators, segment])
                break
    return "\n".join("".join(line.split()) for line in text.splitlines())


def check(
    files: dict[str, str],
    sources: dict[str, tuple[str | None, str | None]],
    is_test: Callable[[str], bool],
    *,
    changed_tests: Iterable[str] = (),
    timeout_s: float = 60.0,
    budget_s: float = 240.0,
    work: Work = IDLE,
    python: Interpreter | None = None,
) -> Outcome:
    """Decide by execution which value-level edits of ``sources`` (path -> (text at the
    base, text now); None where the file did not exist) a test's expectation needs.
    ``files``: the project as it is now (relative path -> text), what the sandbox gets;
    ``python``: the project's interpreter the tests run in (None: referee's own)."""
    out = Outcome()
    deadline = time.monotonic() + budget_s
    found, touched = _value_edits(sources)
    if not found:
        return out
    found = found[:MAX_EDITS]
    refused = sandbox.boundary_problem(python=python)
    if refused is not None:
        out.notes.append(f"the execution check (REF334) did not run: {refused}")
        return out
    now, then = _side(files, sources, 1), _side(files, sources, 0)
    modules = test_modules(now, is_test, touched, changed_tests)
    if not modules:
        out.notes.append(
            "the execution check (REF334) found no test module that exercises the changed code"
        )
        return out
    run = _runner(now, timeout_s, python)
    fixed = _fixed_tests(modules, run, then, now, out, deadline, work)
    if fixed is not None:
        _take_back(fixed, found, now, run, out, deadline, work)
    return out


_Run = Callable[[dict[str, str], list[str]], "sandbox.SandboxResult"]


def _value_edits(
    sources: dict[str, tuple[str | None, str | None]],
) -> tuple[list[Edit], set[str]]:
    """The value-level edits of the changed sources, and the names of the functions and
    classes they are in."""
    found: list[Edit] = []
    touched: set[str] = set()
    for path, (old, new) in sorted(sources.items()):
        if old is None or new is None or old == new:
            continue
        these = edits(path, old, new)
        found.extend(these)
        touched |= _enclosing_names(new, {e.line for e in these})
    return found, touched


def _runner(now: dict[str, str], timeout_s: float, python: Interpreter | None) -> _Run:
    """How to run some tests of a view of the project in the sandbox: pytest, laid out
    as the project is (a ``src/`` layout packaged)."""
    from referee.checks.execution.targets import layout_args

    layout, mapping = layout_args(now, any(path.startswith("src/") for path in now))
    args = ["-q", "-rA", "--tb=line", "--no-header", "-o", "addopts=", "-p", "no:warnings"]
    args += layout
    limits = sandbox.Limits(
        timeout_s=timeout_s, cpu_s=max(1, int(timeout_s)), memory_mb=2048, disk_mb=256
    )

    def run(view: dict[str, str], targets: list[str]) -> sandbox.SandboxResult:
        from referee.checks.execution.targets import packaged_view

        full = {**view, **packaged_view(view, mapping)} if mapping else view
        return sandbox.run_pytest(full, [*targets, *args], limits=limits, python=python)

    return run


def _fixed_tests(
    modules: list[str],
    run: _Run,
    then: dict[str, str],
    now: dict[str, str],
    out: Outcome,
    deadline: float,
    work: Work,
) -> dict[str, str] | None:
    """Tests (node id -> the reason they failed) that failed a check on the source as it
    was and pass on the source as it is; None when the check must stop (out of time,
    refused), with a note in ``out``."""
    fixed: dict[str, str] = {}
    for module in modules:
        if time.monotonic() > deadline:
            out.notes.append("the execution check (REF334) ran out of time")
            return None
        work.say(f"REF334: {module} on the source as it was and as it is")
        before_run = run(then, [module])
        after_run = run(now, [module])
        if after_run.status == "refused":
            out.notes.append(f"the execution check (REF334) did not run: {after_run.message}")
            return None
        before, after = outcomes(before_run.stdout), outcomes(after_run.stdout)
        if not any(status != "ERROR" for status, _ in after.values()):
            errors = [why for status, why in after.values() if status == "ERROR" and why]
            errors += _RAISED.findall(after_run.stdout)
            out.notes.append(
                f"the execution check (REF334) could not run {module} in the sandbox "
                f"(it runs with referee's Python): {errors[0] if errors else after_run.message}"
            )
            continue
        for node, (status, reason) in before.items():
            now_passes = after.get(node, ("",))[0] == "PASSED"
            if status == "FAILED" and check_failed(reason) and now_passes:
                fixed.setdefault(node, reason)
    return fixed


def _take_back(
    fixed: dict[str, str],
    found: list[Edit],
    now: dict[str, str],
    run: _Run,
    out: Outcome,
    deadline: float,
    work: Work,
) -> None:
    """Add to ``out.moved`` each edit without which a fixed test fails its check again."""
    for node, reason in list(fixed.items())[:MAX_FIXED_TESTS]:
        text = _test_text(now, node)
        seen = "".join(reason.split())
        for edit in found:
            if edit.needs_witness and not (
                mentions(text, edit.after) and mentions(seen, edit.after)
            ):
                # A literal is the value the test expects when the test holds it and its
                # failed check at the base showed it (`assert 41 == 1`): a message or a
                # pattern rewritten for another reason is not.
                continue
            if any(m.edit == edit for m in out.moved):
                continue
            if time.monotonic() > deadline:
                out.notes.append("the execution check (REF334) ran out of time")
                return
            work.say(f"REF334: {node} with {edit.path}:{edit.line} taken back")
            result = run({**now, edit.path: edit.taken_back(now[edit.path])}, [node])
            status, why = outcomes(result.stdout).get(node, ("", ""))
            if status == "FAILED" and check_failed(why):
                out.moved.append(Moved(node, edit, reason))
