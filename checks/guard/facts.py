"""What a test module asserts, in a form that survives reformatting and moves.

The guard compares these facts between a baseline (git) and the working text; it never
diffs text. Each assertion becomes ``(subject, op, expected)`` in canonical form (as
``ast.unparse`` prints it), so ``assert  f('a')==2`` and ``self.assertEqual(f("a"), 2)``
are the same fact. An equality's expected side that names a local the test binds once, to
a literal, is that literal: ``expected = 4`` then ``assert f(x) == expected`` reads ``== 4``.
"""

from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tree_sitter import Node

from referee.checks.guard.normal import canonical, is_constant, parse_expression, unparse
from referee.checks.nodes import (
    binding_counts,
    call_arguments,
    handler_swallows,
    keyword_argument,
    literal_truth,
    statements,
    unwrap,
)
from referee.checks.pymodule import Class, Function, PythonModule, callee_parts
from referee.checks.source import SourceFile

__all__ = [
    "Assertion",
    "Relaxation",
    "TestFacts",
    "canonical",
    "squash",
    "squash_lines",
    "test_facts",
]

# unittest methods: name -> (op, which argument is the subject, which the expected)
_METHODS: dict[str, tuple[str, int, int | None]] = {
    "assertEqual": ("==", 0, 1),
    "assertEquals": ("==", 0, 1),
    "assertListEqual": ("==", 0, 1),
    "assertDictEqual": ("==", 0, 1),
    "assertTupleEqual": ("==", 0, 1),
    "assertSetEqual": ("==", 0, 1),
    "assertSequenceEqual": ("==", 0, 1),
    "assertMultiLineEqual": ("==", 0, 1),
    "assertCountEqual": ("==", 0, 1),
    "assertAlmostEqual": ("approx", 0, 1),
    "assertNotEqual": ("!=", 0, 1),
    "assertNotAlmostEqual": ("!=", 0, 1),
    "assertIs": ("is", 0, 1),
    "assertIsNot": ("is not", 0, 1),
    "assertIsNone": ("is", 0, None),
    "assertIsNotNone": ("is not", 0, None),
    "assertIn": ("in", 0, 1),
    "assertNotIn": ("not in", 0, 1),
    "assertGreater": (">", 0, 1),
    "assertGreaterEqual": (">=", 0, 1),
    "assertLess": ("<", 0, 1),
    "assertLessEqual": ("<=", 0, 1),
    "assertTrue": ("truthy", 0, None),
    "assertFalse": ("falsy", 0, None),
    "assertIsInstance": ("isinstance", 0, 1),
    "assertRegex": ("matches", 0, 1),
}
_RAISES = frozenset(
    {"raises", "assertRaises", "assertRaisesRegex", "warns", "assertWarns", "assertWarnsRegex"}
)

# How much an operator pins the value down. An edit that moves an assertion to a lower
# rank proves less than before: `==` -> `in` is a weakening, `>` -> `==` is not.
STRENGTH = {
    "==": 4,
    "is": 4,
    "approx": 3,
    "isinstance": 2,
    "matches": 2,
    "in": 2,
    "<": 2,
    ">": 2,
    "<=": 2,
    ">=": 2,
    "not in": 1,
    "!=": 1,
    "is not": 1,
    "truthy": 0,
    "falsy": 0,
}

_SKIP_DECORATOR = re.compile(r"(^|\.)(skip|skipIf|skipUnless|skipif)$")
_XFAIL_DECORATOR = re.compile(r"(^|\.)(xfail|expectedFailure)$")


def squash(text: str) -> str:
    """Source text with all whitespace removed: a comparison key that ignores layout."""
    return "".join(text.split())


def squash_lines(text: str) -> str:
    """Source text with the whitespace of each line removed, lines kept apart: what
    ``GuardContext.test_text`` holds (a token at a line's end does not run into the
    next line's first one)."""
    return _BLANK_LINES.sub("\n", _SPACES.sub("", text)).strip("\n") + "\n"


_SPACES = re.compile(r"[^\S\n]+")
_BLANK_LINES = re.compile(r"\n{2,}")


def _case(text: str) -> str:
    """A parametrize case, canonical; ``pytest.param(a, b, id=..., marks=...)`` reads as
    ``(a, b)``: renaming a case changes nothing it asserts, and its skip and xfail marks
    are counted with the test's."""
    values = case_values(text)
    if values is None:
        return canonical(text)
    if len(values) == 1:
        return values[0]
    return canonical("(" + ", ".join(values) + ",)")


def case_values(text: str) -> list[str] | None:
    found = _case_values(text)
    return list(found) if found is not None else None


@functools.lru_cache(maxsize=16384)
def _case_values(text: str) -> tuple[str, ...] | None:
    """A parametrize case's values, each canonical: ``pytest.param(a, b, id=...)`` and
    ``(a, b)`` and ``[a, b]`` give ``[a, b]``; a single value gives ``[value]``. None when
    the case is not written out (``*rows``)."""
    node = parse_expression(text)
    if node is None:
        return None
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Call)
        and ".mark." in f".{unparse(node.func.func)}"
        and len(node.args) == 1
    ):
        node = node.args[0]  # pytest < 4: pytest.mark.skipif(...)((a, b)) marks a case
    if (
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "param")
            or (isinstance(node.func, ast.Name) and node.func.id == "param")
        )
        and not any(isinstance(a, ast.Starred) for a in node.args)
    ):
        items = node.args
        if len(items) != 1:
            return tuple(canonical(unparse(i)) for i in items)
        node = items[0]
        return (canonical(unparse(node)),)
    return (canonical(unparse(node)),)


def row_values(text: str, width: int) -> list[str] | None:
    """A case's values for ``width`` argnames: a tuple or list row is spread over them
    (pytest does not care which of the two it is); None when it cannot be."""
    values = case_values(text)
    if values is None:
        return None
    if width == 1:
        if len(values) == 1:
            return values
        return [canonical("(" + ", ".join(values) + ",)")]
    if len(values) == width:
        return values
    if len(values) == 1:
        node = parse_expression(values[0])
        if (
            isinstance(node, (ast.Tuple, ast.List))
            and len(node.elts) == width
            and not any(isinstance(e, ast.Starred) for e in node.elts)
        ):
            return [canonical(unparse(e)) for e in node.elts]
    return None


@dataclass(frozen=True)
class Assertion:
    subject: str
    op: str
    expected: str | None
    line: int  # 1-based
    text: str
    silenced: str | None = None  # why it can no longer fail, if it cannot
    tolerance: tuple[float | None, float | None] | None = None  # approx (rel, abs)
    raises: tuple[str, ...] = ()  # exception names for raises-style assertions
    match: str | None = None  # raises(..., match=) pattern, canonical
    alias: str | None = None  # `with pytest.raises(E) as alias:`
    # The statements of the test before the assertion that feed it (squashed): the ones
    # that bind a name it reads, or call a method of one, transitively. What the test
    # feeds the code and what it compares with are part of the check (see _feeds).
    # Each as (squashed text, text as written): compared by the first.
    feeds: tuple[tuple[str, str], ...] = ()
    # The condition of the test's own `if`/`while`/`except` it runs under, as written.
    condition: str | None = None

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.subject, self.op, self.expected)

    @property
    def kind(self) -> str:
        """What a message calls it: an assertion, a call to a helper that asserts, or a
        `raise` that fails the test."""
        if self.op == "call":
            return "the checking call"
        if self.op == "raise":
            return "the `raise`"
        return "the assertion"


@dataclass(frozen=True)
class Relaxation:
    """A skip or an xfail that applies only sometimes: ``skipif(cond)``, ``xfail(cond)``,
    ``pytest.importorskip("x")``, a ``pytest.skip()`` inside an ``if``. ``condition`` is
    canonical (what is compared); ``text`` is how it is written (what is quoted)."""

    kind: str  # "skip" or "xfail"
    condition: str
    text: str
    line: int


@dataclass
class TestFacts:
    id: str  # relpath::Class::name
    name: str
    line: int
    collected: bool
    assertions: list[Assertion] = field(default_factory=list)
    skips: list[str] = field(default_factory=list)  # unconditional skip markers/calls
    xfails: list[str] = field(default_factory=list)
    strict_false: bool = False
    parametrize_cases: int | None = None
    parametrize_values: list[str] = field(default_factory=list)  # canonical cases
    body_hash: str = ""
    patched: list[str] = field(default_factory=list)  # names monkeypatched in the test
    calls: frozenset[str] = frozenset()  # names the test calls
    # The parametrize tables as written out: the argnames, and one row of canonical
    # values per case (several decorators multiply); None when a table is not literal.
    argnames: tuple[str, ...] = ()
    rows: list[tuple[str, ...]] | None = None
    relaxations: list[Relaxation] = field(default_factory=list)  # conditional skip/xfail
    params: tuple[str, ...] = ()  # the test function's parameters (fixtures)
    names: frozenset[str] = frozenset()  # every name the test's text mentions
    local_names: frozenset[str] = frozenset()  # names the test binds (parameters included)

    @property
    def live_assertions(self) -> list[Assertion]:
        return [a for a in self.assertions if a.silenced is None]

    @property
    def fingerprint(self) -> frozenset[tuple[str, str, str | None]]:
        return frozenset(a.key for a in self.assertions)


def test_facts(source: SourceFile, relpath: str) -> dict[str, TestFacts]:
    """Facts for every top-level function and method of a top-level class (a test renamed
    out of collection is still found by its body); ``collected`` tells the tests."""
    module = PythonModule(source, is_test_file=True)
    return facts_of(module, module.functions, relpath, module_marks(source))


def module_marks(source: SourceFile) -> tuple[list[str], list[str]]:
    """(skips, xfails) that the module's ``pytestmark`` gives every test in it."""
    return _marks(source, _pytestmark(source, source.tree.root_node))


def module_relaxations(source: SourceFile) -> list[Relaxation]:
    """Conditional skips and xfails that apply to a whole module or class: a
    conditional marker in ``pytestmark`` or on a top-level class, a module-level
    ``pytest.importorskip()``, a module-level ``pytest.skip(..., allow_module_level=True)``
    under an ``if``. Each one's ``text`` starts with its scope ("" for the module, else
    the class name) and a NUL."""
    out: list[Relaxation] = []
    root = source.tree.root_node
    text = source.text
    if not any(word in text for word in ("skip", "xfail", "importorskip", "expectedFailure")):
        return out

    def add(scope: str, exprs: list[Node]) -> None:
        for expr in exprs:
            found = marker(source, expr)
            if found is not None and found[1] is not None:
                out.append(
                    Relaxation(
                        found[0],
                        canonical_condition(found[1]),
                        f"{scope}\0{found[1]}",
                        expr.start_point.row + 1,
                    )
                )

    add("", _pytestmark(source, root))
    for stmt in root.named_children:
        node = stmt
        if stmt.type == "decorated_definition":
            node = stmt.child_by_field_name("definition") or stmt
            if node.type == "class_definition":
                name = node.child_by_field_name("name")
                add(
                    source.node_text(name) if name is not None else "?",
                    [
                        c.named_children[0]
                        for c in stmt.named_children
                        if c.type == "decorator" and c.named_children
                    ],
                )
        if node.type == "class_definition":
            body = node.child_by_field_name("body")
            name = node.child_by_field_name("name")
            if body is not None:
                add(source.node_text(name) if name is not None else "?", _pytestmark(source, body))
            continue
        if stmt.type in ("function_definition", "decorated_definition"):
            continue
        statement = source.node_text(stmt)
        if "importorskip" in statement:
            for match in re.finditer(r"importorskip\(\s*([^,)]+)", statement):
                module_name = string_literal(match.group(1).strip())
                out.append(
                    Relaxation(
                        "skip",
                        f"import {module_name} fails",
                        f"\0import {module_name} fails",
                        stmt.start_point.row + 1,
                    )
                )
        elif stmt.type == "if_statement" and re.search(r"\bskip\(", statement):
            condition = stmt.child_by_field_name("condition")
            if condition is not None:
                written = " ".join(source.node_text(condition).split())
                out.append(
                    Relaxation(
                        "skip",
                        canonical_condition(written),
                        f"\0{written}",
                        stmt.start_point.row + 1,
                    )
                )
    return out


def facts_of(
    module: PythonModule,
    functions: Iterable[Function],
    relpath: str,
    marks: tuple[list[str], list[str]],
    lookup: Callable[[str], Node | None] | None = None,
) -> dict[str, TestFacts]:
    """:func:`test_facts` for some of ``module``'s functions (a module collected over some
    top-level statements only: see checks/guard/live.py), ``marks`` being the module's
    :func:`module_marks`. ``lookup``: how a parametrize table named by a module constant
    is found (default: :func:`module_value`)."""
    source = module.source
    find = lookup if lookup is not None else functools.partial(module_value, source)
    facts: dict[str, TestFacts] = {}
    for fn in functions:
        if fn.is_nested or (fn.class_ is not None and fn.class_.nested):
            continue
        test_id = (
            f"{relpath}::{fn.class_.name}::{fn.name}" if fn.class_ else f"{relpath}::{fn.name}"
        )
        runs = fn.is_test and (fn.class_ is None or _collected_class(fn.class_))
        facts[test_id] = _facts_of(module, fn, test_id, runs, find)
        skips, xfails = marks
        if fn.class_ is not None:
            class_skips, class_xfails = _class_marks(source, fn.class_.node)
            skips, xfails = skips + class_skips, xfails + class_xfails
        facts[test_id].skips[:0] = skips
        facts[test_id].xfails[:0] = xfails
    return facts


def _collected_class(cls: Class) -> bool:
    """Whether pytest collects a class's methods: a ``Test*`` class, or one with a base
    class (it may be a ``unittest.TestCase``, collected whatever its name)."""
    return cls.name.startswith("Test") or any(b not in ("object", "") for b in cls.bases)


def _pytestmark(source: SourceFile, scope: Node) -> list[Node]:
    """The marker expressions of a ``pytestmark = ...`` statement directly in ``scope``
    (a module, or a class body)."""
    marks: list[Node] = []
    for stmt in scope.named_children:
        if stmt.type != "expression_statement" or not stmt.named_children:
            continue
        assign = stmt.named_children[0]
        if assign.type != "assignment":
            continue
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        if left is None or right is None or source.node_text(left) != "pytestmark":
            continue
        right = unwrap(right)
        marks.extend(right.named_children if right.type in ("list", "tuple") else [right])
    return marks


def _marks(source: SourceFile, exprs: list[Node]) -> tuple[list[str], list[str]]:
    """(skips, xfails) among marker expressions that apply to every test in a scope."""
    skips: list[str] = []
    xfails: list[str] = []
    for expr in exprs:
        kind = _marker_kind(source, expr)
        if kind == "skip":
            skips.append(source.node_text(expr))
        elif kind == "xfail":
            xfails.append(source.node_text(expr))
    return skips, xfails


def _class_marks(source: SourceFile, class_node: Node) -> tuple[list[str], list[str]]:
    """(skips, xfails) a class's decorators and ``pytestmark`` give each of its tests."""
    exprs: list[Node] = []
    parent = class_node.parent
    if parent is not None and parent.type == "decorated_definition":
        exprs.extend(
            c.named_children[0]
            for c in parent.named_children
            if c.type == "decorator" and c.named_children
        )
    body = class_node.child_by_field_name("body")
    if body is not None:
        exprs.extend(_pytestmark(source, body))
    return _marks(source, exprs)


def _marker_kind(source: SourceFile, expr: Node) -> str | None:
    """What a marker does to every test it applies to: "skip" when it skips them
    unconditionally (``skip``, or ``skipif`` on a constant true condition), "xfail" when
    it expects them to fail unconditionally, else None (a condition: see
    :func:`marker`)."""
    found = marker(source, expr)
    if found is None or found[1] is not None:
        return None
    return found[0]


def marker(source: SourceFile, expr: Node) -> tuple[str, str | None] | None:
    """``(kind, condition)`` of a skip or xfail marker: kind "skip" or "xfail";
    condition None when it always applies, else the condition as written (for
    ``skipUnless(c)``: ``not (c)``). None for any other marker, and for one whose literal
    condition makes it never apply."""
    call = expr if expr.type == "call" else None
    target = expr.child_by_field_name("function") if call is not None else expr
    name = source.node_text(target) if target is not None else ""
    xfail = bool(_XFAIL_DECORATOR.search(name))
    if not xfail and not _SKIP_DECORATOR.search(name):
        return None
    kind = "xfail" if xfail else "skip"
    conditional = xfail or name.endswith(("skipIf", "skipUnless", "skipif"))
    if not conditional or call is None:
        return kind, None
    args = call_arguments(call)
    condition = args[0] if args else keyword_argument(source, call, "condition")
    if condition is None:
        return (kind, None) if xfail else None
    unless = name.endswith("skipUnless")
    bare = unwrap(condition)
    if bare.type not in ("string", "concatenated_string"):
        truth = literal_truth(source, condition)
        if truth is not None:
            applies = not truth if unless else truth
            return (kind, None) if applies else None
    text = " ".join(source.node_text(condition).split())
    if bare.type in ("string", "concatenated_string"):  # pytest evaluates the string
        value = parse_expression(source.node_text(bare))
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            text = value.value
    truth = condition_truth(text)
    if truth is not None and truth != unless:
        return kind, None  # it holds on every Python 3 and platform: no condition at all
    # (a condition that never holds on them is still reported: it may have held on an
    # interpreter the project supported when the change was made)
    return kind, (f"not ({text})" if unless else text)


# What a skip condition may read, and the values it takes on the interpreters and
# platforms a project can run on: a condition true on all of them always applies.
_VERSIONS = [(3, minor, 0) for minor in range(16)]
_PLATFORMS = [
    ("linux", "posix", "Linux"),
    ("darwin", "posix", "Darwin"),
    ("win32", "nt", "Windows"),
    ("cygwin", "posix", "CYGWIN_NT-10.0"),
    ("emscripten", "posix", "Emscripten"),
    ("wasi", "posix", "WASI"),
    ("freebsd14", "posix", "FreeBSD"),
    ("ios", "posix", "iOS"),
]
_IMPLEMENTATIONS = [("cpython", "CPython"), ("pypy", "PyPy"), ("graalpy", "GraalVM")]


def condition_truth(text: str) -> bool | None:
    """Whether a skip/xfail condition that reads only the interpreter's version, the
    platform and the implementation is true (or false) on every combination of them
    (``sys.version_info > (3,)``); None when it depends on them, or reads anything else."""
    node = parse_expression(text)
    if node is None:
        return None
    results = set()
    for version in _VERSIONS:
        for platform, os_name, system in _PLATFORMS:
            for implementation, python in _IMPLEMENTATIONS:
                env = {
                    "sys.version_info": version,
                    "sys.version_info.major": version[0],
                    "sys.version_info.minor": version[1],
                    "sys.platform": platform,
                    "os.name": os_name,
                    "platform.system()": system,
                    "platform.python_implementation()": python,
                    "sys.implementation.name": implementation,
                }
                try:
                    results.add(bool(_condition(node, env)))
                except _Unknown:
                    return None
                if len(results) > 1:
                    return None
    return results.pop() if results else None


class _Unknown(Exception):
    pass


def _condition(node: ast.expr, env: dict[str, object]) -> object:
    text = unparse(node)
    if text in env:
        return env[text]
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(_condition(e, env) for e in node.elts)
    if isinstance(node, ast.BoolOp):
        values = [_condition(v, env) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _condition(node.operand, env)
    if isinstance(node, ast.Call) and unparse(node.func).endswith(".startswith") and node.args:
        receiver = _condition(node.func.value, env)  # type: ignore[attr-defined]
        prefix = _condition(node.args[0], env)
        if isinstance(receiver, str) and isinstance(prefix, (str, tuple)):
            return receiver.startswith(prefix)
        raise _Unknown
    if isinstance(node, ast.Subscript):
        container = _condition(node.value, env)
        index = _condition(node.slice, env) if not isinstance(node.slice, ast.Slice) else None
        if isinstance(container, tuple) and isinstance(index, int):
            return container[index]
        if isinstance(container, tuple) and isinstance(node.slice, ast.Slice):
            low = _condition(node.slice.lower, env) if node.slice.lower else None
            high = _condition(node.slice.upper, env) if node.slice.upper else None
            return container[low:high]  # type: ignore[misc]
        raise _Unknown
    if isinstance(node, ast.Compare):
        left = _condition(node.left, env)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _condition(right_node, env)
            compare = _COMPARE.get(type(op))
            if compare is None:
                raise _Unknown
            try:
                if not compare(left, right):
                    return False
            except TypeError:
                raise _Unknown from None
            left = right
        return True
    raise _Unknown


_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def marker_key(text: str) -> str:
    """A skip or xfail marker (or an imperative ``pytest.skip(...)``) as the guard
    compares it: its reason left out, since rewording why a test is skipped skips
    nothing more."""
    text = text.strip().removeprefix("@").strip()
    prefix = ""
    if text.startswith("raise "):
        prefix, text = "raise ", text[6:]
    node = parse_expression(text)
    if node is None:
        return prefix + canonical(text)
    if isinstance(node, ast.Call):
        func = unparse(node.func)
        keywords = [k for k in node.keywords if k.arg not in ("reason", "msg")]
        args = node.args
        is_marker = ".mark." in f".{func}"
        if func.endswith(("skipif", "skipIf", "skipUnless")) or (
            is_marker and func.endswith("xfail")
        ):
            args = args[:1]  # the condition
        elif re.search(r"(^|\.)(skip|skipTest|xfail|SkipTest|expectedFailure)$", func):
            args = []  # the reason
        node = ast.Call(node.func, args, keywords)
    return prefix + canonical(unparse(node))


def _facts_of(
    module: PythonModule,
    fn: Function,
    test_id: str,
    collected: bool,
    lookup: Callable[[str], Node | None],
) -> TestFacts:
    source = module.source
    facts = TestFacts(
        id=test_id,
        name=fn.name,
        line=fn.node.start_point.row + 1,
        collected=collected,
        body_hash=hashlib.sha1(squash(source.node_text(fn.body)).encode()).hexdigest(),
        calls=frozenset(name for name, _ in fn.calls),
    )
    early_return = next((s for s in fn.statements if s.type == "return_statement"), None)
    literals = _assigned_literals(source, fn)
    setup: list[_Statement] | None = None
    renamed: Callable[[str], str] = str
    for node in module.assertion_nodes(fn):
        if node.type == "raise_statement" and _in_nested_function(node, fn.node):
            continue  # a callback that raises is behaviour the test sets up, not a check
        assertion = _assertion(source, node, literals)
        if assertion is None:
            continue
        why = _silenced(source, node, fn.node, early_return)
        if setup is None:
            checks = {n.start_byte for n in module.assertion_nodes(fn)}
            setup = _setup_statements(source, fn.body, checks)
            renamed = _renaming(setup, _parameters(source, fn.node))
        # A local holding a literal that the assertion reads as that literal (its key
        # holds the value) is no input: renaming it, or inlining it, changes nothing.
        written = set(re.findall(r"[A-Za-z_]\w*", f"{assertion.subject} {assertion.expected}"))
        inlined = {name for name in literals if name not in written}
        changes: dict[str, object] = {
            "feeds": _feeds(source, node, setup, renamed, inlined),
            "condition": _check_condition(source, node, fn.body),
        }
        if why is not None:
            changes["silenced"] = why
        assertion = Assertion(**{**assertion.__dict__, **changes})
        facts.assertions.append(assertion)
    facts.assertions = _fold_message_checks(_try_fail_checks(source, fn.node, facts.assertions))
    _decorators(source, fn, facts, lookup)
    for stmt in fn.statements:
        text = squash(source.node_text(stmt))
        if re.match(r"^(pytest\.skip|self\.skipTest)\(|^raise(unittest\.)?SkipTest", text):
            facts.skips.append(source.node_text(stmt).strip())
        if re.match(r"^pytest\.xfail\(", text):
            facts.xfails.append(source.node_text(stmt).strip())
    facts.relaxations.extend(_imperative_relaxations(source, fn))
    facts.patched = _patched_names(source, fn)
    facts.params = _parameters(source, fn.node) + facts.params  # and usefixtures
    facts.local_names = frozenset(facts.params) | _bound_names(source, fn.body)
    facts.names = frozenset(re.findall(r"[A-Za-z_]\w*", source.node_text(fn.node)))
    return facts


@dataclass(frozen=True)
class _Statement:
    """A simple statement of a test body that is not an assertion: what it binds (its
    assignment targets, or the object whose method it calls) and what it reads."""

    start: int  # byte
    text: str  # squashed
    written: str
    binds: frozenset[str]
    reads: frozenset[str]
    changes: bool = False  # changes the object it binds rather than binding it anew


_COMPOUND_BODIES = ("block", "else_clause", "elif_clause", "except_clause", "finally_clause")
_MAX_FEEDS = 40


def _identifiers(node: Node) -> set[str]:
    """The names ``node`` reads (strings, lambdas and nested definitions left out)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            found.add((current.text or b"").decode("utf-8", "replace"))
        elif current.type == "attribute":  # `a.b` reads a, not a name b
            inner = current.child_by_field_name("object")
            stack.extend([inner] if inner is not None else [])
        elif current.type == "keyword_argument":  # `f(k=v)` reads v
            inner = current.child_by_field_name("value")
            stack.extend([inner] if inner is not None else [])
        elif current.type not in ("string", "comment", "lambda", "function_definition"):
            stack.extend(current.named_children)
    return found


def _receiver(node: Node) -> str | None:
    """``x`` of a call ``x.a.b(...)``: the object a method call may change."""
    node = unwrap(node)
    if node.type == "await":
        node = node.named_children[0] if node.named_children else node
    if node.type != "call":
        return None
    callee = node.child_by_field_name("function")
    if callee is None or callee.type != "attribute":
        return None
    while callee.type in ("attribute", "call", "subscript"):
        inner = (
            callee.child_by_field_name("object")
            or callee.child_by_field_name("function")
            or callee.child_by_field_name("value")
        )
        if inner is None:
            return None
        callee = inner
    if callee.type != "identifier":
        return None
    return (callee.text or b"").decode("utf-8", "replace")


def _setup_statements(source: SourceFile, body: Node, checks: set[int]) -> list[_Statement]:
    """The simple statements of a test body (compound statements' blocks included,
    nested functions and classes not), in order; ``checks``: where the test's
    assertions start (a checking call is no input)."""
    out: list[_Statement] = []
    stack = list(reversed(body.named_children))
    while stack:
        node = stack.pop()
        if node.type in ("function_definition", "class_definition", "decorated_definition"):
            continue
        if node.type in ("assert_statement", "comment"):
            continue
        if node.type in (
            "if_statement",
            "for_statement",
            "while_statement",
            "with_statement",
            "try_statement",
            *_COMPOUND_BODIES,
        ):
            children = [c for c in node.named_children if c.type in ("block", *_COMPOUND_BODIES)]
            if node.type in ("for_statement", "with_statement"):
                binds = set()
                if node.type == "for_statement":
                    left = node.child_by_field_name("left")
                    binds = _identifiers(left) if left is not None else set()
                else:
                    for clause in node.named_children:
                        if clause.type == "with_clause":
                            binds |= {
                                t for item in clause.named_children for t in _alias_targets(item)
                            }
                head_end = children[0].start_byte if children else node.end_byte
                written = source.data[node.start_byte : head_end].decode("utf-8", "replace")
                text = squash(written)
                reads = _identifiers(node.child_by_field_name("right") or node) - binds
                if node.type == "with_statement":
                    reads = set()
                    for clause in node.named_children:
                        if clause.type == "with_clause":
                            reads |= _identifiers(clause)
                    reads -= binds
                out.append(
                    _Statement(node.start_byte, text, written, frozenset(binds), frozenset(reads))
                )
            stack.extend(reversed(children))
            continue
        if node.type != "expression_statement" or not node.named_children:
            continue
        inner = node.named_children[0]
        if inner.type in ("assignment", "augmented_assignment"):
            left = inner.child_by_field_name("left")
            right = inner.child_by_field_name("right")
            # `x = v` binds x; `x.attr = v`, `x[k] = v` and `x += v` change x
            binds = _identifiers(left) if left is not None else set()
            reads = _identifiers(right) if right is not None else set()
            changes = inner.type == "augmented_assignment" or (
                left is not None
                and left.type not in ("identifier", "pattern_list", "tuple_pattern")
            )
            if changes:
                reads |= binds
        else:
            receiver = _receiver(inner)
            if receiver is None or inner.start_byte in checks:
                continue
            binds = {receiver}
            reads = _identifiers(inner)
            changes = True
        out.append(
            _Statement(
                node.start_byte,
                squash(source.node_text(node)),
                source.node_text(node),
                frozenset(binds),
                frozenset(reads),
                changes,
            )
        )
    return out


def _alias_targets(item: Node) -> set[str]:
    value = item.child_by_field_name("value") or (
        item.named_children[0] if item.named_children else None
    )
    if value is not None and value.type == "as_pattern":
        alias = value.child_by_field_name("alias")
        if alias is None and len(value.named_children) > 1:
            alias = value.named_children[-1]
        return _identifiers(alias) if alias is not None else set()
    return set()


def _renaming(setup: list[_Statement], params: tuple[str, ...]) -> Callable[[str], str]:
    """How a statement's squashed text is compared: the names the test binds written as
    ``_``, so that renaming a local changes nothing."""
    names = {name for s in setup if not s.changes for name in s.binds} | set(params)
    names.discard("")
    if not names:
        return str
    pattern = re.compile(
        r"(?<![\w.])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")(?!\w)"
    )
    return lambda text: pattern.sub("_", text)


def _feeds(
    source: SourceFile,
    node: Node,
    setup: list[_Statement],
    renamed: Callable[[str], str] = str,
    inlined: set[str] | frozenset[str] = frozenset(),
) -> tuple[tuple[str, str], ...]:
    """The statements before ``node`` that feed it (see :class:`Assertion`), sorted: for
    each name it reads, the last statement before it that binds the name and the ones
    after that which change the object (a method call on it, an item or attribute set),
    then the same for what those read."""
    chosen: dict[int, _Statement] = {}
    todo = [(name, node.start_byte) for name in _identifiers(node) - inlined]
    seen: set[tuple[str, int]] = set()
    while todo and len(chosen) < _MAX_FEEDS:
        name, at = todo.pop()
        if (name, at) in seen:
            continue
        seen.add((name, at))
        for statement in reversed([s for s in setup if s.start < at and name in s.binds]):
            if statement.start not in chosen:
                chosen[statement.start] = statement
                todo.extend((read, statement.start) for read in statement.reads)
            if not statement.changes:
                break  # a new binding: what came before it no longer reaches here
    return tuple(sorted((renamed(s.text), s.written) for s in chosen.values()))


def _in_nested_function(node: Node, fn: Node) -> bool:
    parent = node.parent
    while parent is not None and parent != fn:
        if parent.type in ("function_definition", "lambda"):
            return True
        parent = parent.parent
    return False


def _parameters(source: SourceFile, fn: Node) -> tuple[str, ...]:
    params = fn.child_by_field_name("parameters")
    names = []
    for param in params.named_children if params is not None else ():
        node = param
        if node.type in ("default_parameter", "typed_default_parameter", "typed_parameter"):
            node = node.child_by_field_name("name") or (
                node.named_children[0] if node.named_children else node
            )
        if node.type == "identifier":
            names.append(source.node_text(node))
    return tuple(names)


def _bound_names(source: SourceFile, body: Node) -> frozenset[str]:
    """Names a test body binds: assignment, loop and ``with`` targets (nested functions'
    own bindings included: over-approximation only makes more values "computed")."""
    text = source.node_text(body)
    found = set(re.findall(r"^\s*([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)", text, re.MULTILINE))
    for targets in re.findall(r"\bfor\s+([\w\s,()\[\]]+?)\s+in\b", text):
        found.update(t for t in re.split(r"[\s,()\[\]]+", targets) if t.isidentifier())
    found.update(re.findall(r"\bas\s+([A-Za-z_]\w*)", text))
    for params in re.findall(r"\bdef\s+\w+\s*\(([^)]*)\)|\blambda\s*([^:]*):", text):
        for param in ",".join(params).split(","):
            name = param.split("=", 1)[0].split(":", 1)[0].strip().lstrip("*")
            if name.isidentifier():
                found.add(name)
    for targets in re.findall(r"^\s*([A-Za-z_][\w, ]*?)\s*=(?!=)", text, re.MULTILINE):
        found.update(t.strip() for t in targets.split(",") if t.strip().isidentifier())
    return frozenset(found)


_RELAXING_CALLS = frozenset({"skip", "xfail", "importorskip", "skipTest"})


def _imperative_relaxations(source: SourceFile, fn: Function) -> list[Relaxation]:
    """``pytest.skip()`` / ``pytest.xfail()`` / ``self.skipTest()`` under a condition of
    the test's body, and ``pytest.importorskip()`` anywhere in it."""
    found = []
    for name, call in fn.calls:
        if name not in _RELAXING_CALLS:
            continue
        callee = call.child_by_field_name("function")
        receiver = callee_parts(source, callee)[0] if callee is not None else ""
        if receiver not in ("pytest", "", "self", "cls"):
            continue
        kind = "xfail" if name == "xfail" else "skip"
        if name == "importorskip":
            args = call_arguments(call)
            module_name = source.node_text(args[0]) if args else "?"
            condition = f"import {string_literal(module_name)} fails"
            found.append(Relaxation(kind, condition, condition, call.start_point.row + 1))
            continue
        condition = _enclosing_condition(source, call, fn.body)
        if condition is not None:
            found.append(
                Relaxation(
                    kind, canonical_condition(condition), condition, call.start_point.row + 1
                )
            )
    return found


def string_literal(text: str) -> str:
    node = parse_expression(text)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return text


def canonical_condition(text: str) -> str:
    return canonical(text) if parse_expression(text) is not None else " ".join(text.split())


def _enclosing_condition(source: SourceFile, node: Node, body: Node) -> str | None:
    """The condition under which ``node`` runs, as written, when a statement of the
    test's body makes it conditional; None when it always runs."""
    child, parent = node, node.parent
    while parent is not None and parent != body:
        kind = parent.type
        if kind in ("if_statement", "elif_clause", "while_statement"):
            condition = parent.child_by_field_name("condition")
            if condition is not None and child != condition:
                return " ".join(source.node_text(condition).split())
        if kind == "else_clause" and parent.parent is not None:
            owner = parent.parent
            if owner.type == "if_statement":
                condition = owner.child_by_field_name("condition")
                if condition is not None:
                    return f"not ({' '.join(source.node_text(condition).split())})"
            if owner.type == "try_statement":
                return f"{_first_line(source, owner)} succeeds"
        if kind == "except_clause" and parent.parent is not None:
            caught = " ".join(source.node_text(parent).split(":", 1)[0].split())
            return f"{_first_line(source, parent.parent)} raises ({caught})"
        if kind == "conditional_expression":
            return " ".join(source.node_text(parent).split())
        if kind == "for_statement":
            return f"the loop on line {parent.start_point.row + 1} runs"
        child, parent = parent, parent.parent
    return None


def _check_condition(source: SourceFile, node: Node, body: Node) -> str | None:
    """The condition an assertion runs under (:func:`_enclosing_condition`), but for a
    loop's or a ``try``'s: a loop over cases and a ``try ... else`` check every time."""
    condition = _enclosing_condition(source, node, body)
    if (
        condition is None
        or condition.startswith("the loop on line")
        or condition.endswith(" succeeds")
    ):
        return None
    return condition


def _first_line(source: SourceFile, try_statement: Node) -> str:
    body = try_statement.child_by_field_name("body")
    first = statements(body)[0] if body is not None and statements(body) else None
    return " ".join(source.node_text(first).split()) if first is not None else ""


# The message of a caught exception: str(e), str(e.value), repr(e.value), e.value.args[0],
# e.value.message, str(e.value.args[0]) — the whole side, nothing else around it.
_MESSAGE_OF = re.compile(
    r"^(?:(?:str|repr)\((?P<a>\w+)(?:\.value(?:\.\w+|\.args\[0\])?)?\)"
    r"|(?P<b>\w+)\.value\.(?:args\[0\]|message|msg))$"
)


# A statement that fails the test: what `try: f() / except E: ... / else: <this>` uses to
# say "f must raise E".
_FAILS = re.compile(
    r"^(?:assert\s*\(?\s*(?:False|0|None)\b|(?:pytest|self)\.fail\(|fail\("
    r"|raise\s+(?:AssertionError|(?:pytest\.)?fail\.Exception)\b)"
)


def _try_fail_checks(source: SourceFile, fn: Node, assertions: list[Assertion]) -> list[Assertion]:
    """``try: f()`` / ``except E as e: <checks on e>`` / ``else: assert False`` (or the
    failing statement as the ``try`` body's last) is ``with pytest.raises(E) as e: f()``
    followed by the checks on ``e.value``: the failing statement is no assertion of its
    own, the ``try`` is a raises assertion, and the checks inside the handler read the
    exception through ``e.value`` — so rewriting one form as the other changes nothing."""
    body = fn.child_by_field_name("body")
    if body is None:
        return assertions
    out = list(assertions)
    stack = list(body.named_children)
    while stack:
        node = stack.pop()
        if node.type in ("class_definition", "lambda"):
            continue
        stack.extend(node.named_children)  # a nested helper's checks are the test's too
        if node.type != "try_statement":
            continue
        handlers = [c for c in node.named_children if c.type == "except_clause"]
        if len(handlers) != 1:
            continue
        fail = _failing_statement(source, node)
        caught = next((c for c in handlers[0].named_children if c.type != "block"), None)
        if fail is None or caught is None:
            continue
        alias = None
        if caught.type == "as_pattern":
            target = next((c for c in caught.named_children if c.type == "as_pattern_target"), None)
            alias = source.node_text(target).strip() if target is not None else None
            caught = caught.named_children[0]
        names = _exception_names(source, caught)
        failing = fail.start_point.row + 1
        out = [a for a in out if a.line != failing]
        if alias and alias.isidentifier():
            low, high = handlers[0].start_point.row + 1, handlers[0].end_point.row + 1
            through = re.compile(rf"\b{re.escape(alias)}\.(?!value\b)")
            for index, check in enumerate(out):
                if low <= check.line <= high:
                    out[index] = Assertion(
                        **{
                            **check.__dict__,
                            "subject": through.sub(f"{alias}.value.", check.subject),
                            "expected": through.sub(f"{alias}.value.", check.expected)
                            if check.expected is not None
                            else None,
                        }
                    )
        first = " ".join(source.node_text(caught).split())
        out.append(
            Assertion(
                "raises:raises",
                "raises",
                ",".join(names),
                node.start_point.row + 1,
                f"try: ... except {first}: ... (the `try` on line {node.start_point.row + 1})",
                raises=names,
                alias=alias,
            )
        )
    return sorted(out, key=lambda a: a.line)


def _failing_statement(source: SourceFile, try_statement: Node) -> Node | None:
    """The statement that fails the test when the ``try`` body does not raise: the only
    statement of its ``else``, or the body's last statement (after at least one other)."""
    otherwise = next((c for c in try_statement.named_children if c.type == "else_clause"), None)
    if otherwise is not None:
        block = otherwise.child_by_field_name("body") or next(
            (c for c in otherwise.named_children if c.type == "block"), None
        )
        found = statements(block) if block is not None else []
        return found[0] if len(found) == 1 and _FAILS.match(source.node_text(found[0])) else None
    body = try_statement.child_by_field_name("body")
    found = statements(body) if body is not None else []
    if len(found) >= 2 and _FAILS.match(source.node_text(found[-1])):
        return found[-1]
    return None


def _fold_message_checks(assertions: list[Assertion]) -> list[Assertion]:
    """``with pytest.raises(E) as e:`` followed by ``assert "x" in str(e.value)`` is
    ``pytest.raises(E, match="x")``: the message check is folded into the raises
    assertion (as its ``match``), so rewriting one as the other changes nothing."""
    if not any(a.op == "raises" and a.alias for a in assertions):
        return assertions
    out = list(assertions)
    dropped: set[int] = set()
    aliases: dict[str, int] = {}  # the closest `raises(...) as alias` before each check
    in_order = sorted(range(len(assertions)), key=lambda i: assertions[i].line)
    for index, check in ((i, assertions[i]) for i in in_order):
        if check.op == "raises" and check.alias:
            aliases[check.alias] = index
            continue
        if check.op not in ("in", "==", "matches", "call") or check.silenced is not None:
            continue
        if check.op == "call":
            match = re.match(r"^(\w+)\.match\((.+)\)$", check.subject)
            if match is None or match.group(1) not in aliases:
                continue
            owner, pattern = aliases[match.group(1)], canonical(match.group(2))
        else:
            sides = (check.subject, check.expected or "")
            owner = pattern = None
            for side, other in (sides, sides[::-1]):
                found = _MESSAGE_OF.search(side)
                name = (found.group("a") or found.group("b")) if found else None
                # `assert msg in str(e)`, `assert str(e) == expected`: a name as the pattern
                named = check.op in ("in", "==") and other.isidentifier()
                if name in aliases and (is_constant(other) or named):
                    owner, pattern = aliases[name], other
                    break
            if owner is None:
                continue
        raises = out[owner]
        if raises.match is None:
            out[owner] = Assertion(**{**raises.__dict__, "match": pattern})
            dropped.add(index)
        elif raises.match == pattern:
            dropped.add(index)  # the same message checked again
    return [a for i, a in enumerate(out) if i not in dropped]


def _assertion(
    source: SourceFile, node: Node, literals: dict[str, tuple[str, int]] | None = None
) -> Assertion | None:
    """``node`` as a fact. ``literals`` (see :func:`_assigned_literals`): the expected
    side of an equality that names one reads as the literal, as if written in place."""
    line = node.start_point.row + 1
    text = source.node_text(node)

    def expected_of(value: Node) -> str:
        value = unwrap(value)
        if value.type == "identifier" and literals:
            found = literals.get(source.node_text(value))
            if found is not None and found[1] <= node.start_byte:
                return found[0]
        return canonical(source.node_text(value))

    if node.type == "assert_statement":
        cond = unwrap(node.named_children[0]) if node.named_children else None
        if cond is None:
            return None
        if cond.type == "comparison_operator" and cond.named_child_count == 2:
            left, right = cond.named_children
            op = " ".join(source.node_text(c) for c in cond.children if not c.is_named)
            tolerance = _approx(source, right) or _approx(source, left)
            if tolerance is not None:
                return Assertion(
                    canonical(source.node_text(left)),
                    "approx",
                    expected_of(_approx_value(right)),
                    line,
                    text,
                    tolerance=tolerance,
                )
            subject = canonical(source.node_text(left))
            expected = expected_of(right) if op == "==" else canonical(source.node_text(right))
            if op in ("==", "!=", "is", "is not") and _swapped(subject, expected):
                # `assert 4 == f(x)`: the constant is the expected side, wherever written
                subject, expected = canonical(source.node_text(right)), expected_of(left)
            return Assertion(subject, op, expected, line, text)
        if cond.type == "not_operator":
            inner = cond.child_by_field_name("argument")
            return Assertion(canonical(source.node_text(inner or cond)), "falsy", None, line, text)
        if cond.type == "call":
            callee = cond.child_by_field_name("function")
            if callee is not None and source.node_text(callee) == "isinstance":
                args = call_arguments(cond)
                if len(args) == 2:
                    return Assertion(
                        canonical(source.node_text(args[0])),
                        "isinstance",
                        canonical(source.node_text(args[1])),
                        line,
                        text,
                    )
        return Assertion(canonical(source.node_text(cond)), "truthy", None, line, text)
    if node.type == "call":
        callee = node.child_by_field_name("function")
        if callee is None:
            return None
        _, method = callee_parts(source, callee)
        args = call_arguments(node)
        if method == "deprecated_call":
            # pytest.deprecated_call(f, *args) and `with pytest.deprecated_call(): f(*args)`
            # check the same thing: a warns() for the deprecation warnings
            pattern = keyword_argument(source, node, "match")
            return Assertion(
                "raises:warns",
                "raises",
                "deprecated_call",
                line,
                text,
                raises=("deprecated_call",),
                match=canonical(source.node_text(pattern)) if pattern is not None else None,
                alias=_with_alias(source, node),
            )
        if method in _RAISES:
            names = _exception_names(source, args[0]) if args else ()
            if names == ("None",):
                return None  # pytest.warns(None) checks nothing (and is gone from pytest 8)
            pattern = keyword_argument(source, node, "match")
            if pattern is None and method.endswith("Regex") and len(args) > 1:
                pattern = args[1]
            # assertRaisesRegex is assertRaises with a pattern: the same assertion, and
            # pytest.raises the same as assertRaises.
            family = "warns" if "arn" in method else "raises"
            return Assertion(
                f"raises:{family}",
                "raises",
                ",".join(names),
                line,
                text,
                raises=names,
                match=canonical(source.node_text(pattern)) if pattern is not None else None,
                alias=_with_alias(source, node),
            )
        if method in _METHODS and args:
            op, subject_index, expected_index = _METHODS[method]
            if subject_index >= len(args):
                return None
            expected = None
            subject = canonical(source.node_text(args[subject_index]))
            if expected_index is not None and expected_index < len(args):
                value = args[expected_index]
                if op in ("==", "approx"):
                    expected = expected_of(value)
                else:
                    expected = canonical(source.node_text(value))
                if op in ("==", "!=", "approx") and _swapped(subject, expected):
                    # assertEqual(expected, actual): unittest does not say which is which
                    subject = canonical(source.node_text(value))
                    expected = expected_of(args[subject_index])
            elif method in ("assertIsNone", "assertIsNotNone"):
                expected = "None"
            if op in ("truthy", "falsy"):
                inner = _comparison_inside(source, args[subject_index], literals)
                if inner is not None:  # assertTrue(a == b) is assert a == b
                    if op == "falsy":
                        inner = _negated(inner)
                    if inner is not None:
                        return Assertion(inner[0], inner[1], inner[2], line, text)
            return Assertion(
                subject,
                op,
                expected,
                line,
                text,
                tolerance=_almost_equal(source, node, args) if op == "approx" else None,
            )
        return Assertion(canonical(text), "call", None, line, text)
    if node.type == "raise_statement":
        return Assertion(squash(text), "raise", None, line, text)
    return None


def _swapped(subject: str, expected: str | None) -> bool:
    """Whether a comparison is written with its expected side on the left: a constant
    there and none on the right (`assert 4 == f(x)`), or a value that calls nothing
    there (`int`, `Annotated[float, "x"]`) and a call on the right."""
    if expected is None:
        return False
    if is_constant(subject):
        return not is_constant(expected)
    return _type_like(subject) and "(" in expected and not is_constant(expected)


_BUILTIN_NAMES = frozenset(dir(builtins))


def _type_like(text: str) -> bool:
    """A value that names a type or a constant and calls nothing: `int`, `None`,
    `Color.RED`, `typing.List[int]`, `Annotated[float, "x"]` (not a local variable:
    those are lower-case and not builtins)."""
    if "(" in text:
        return False
    first = re.match(r"[A-Za-z_]\w*", text)
    if first is None:
        return False
    name = first.group(0)
    return name in _BUILTIN_NAMES or name[:1].isupper() or name in ("typing", "t", "types")


_NEGATED = {"==": "!=", "!=": "==", "in": "not in", "not in": "in", "is": "is not", "is not": "is"}


def _negated(fact: tuple[str, str, str | None]) -> tuple[str, str, str | None] | None:
    op = _NEGATED.get(fact[1])
    return (fact[0], op, fact[2]) if op is not None else None


def _comparison_inside(
    source: SourceFile, node: Node, literals: dict[str, tuple[str, int]] | None
) -> tuple[str, str, str | None] | None:
    """``(subject, op, expected)`` of a plain comparison ``a OP b``, for
    ``assertTrue(a == b)``."""
    node = unwrap(node)
    if node.type != "comparison_operator" or node.named_child_count != 2:
        return None
    left, right = node.named_children
    op = " ".join(source.node_text(c) for c in node.children if not c.is_named)
    if op not in ("==", "!=", "in", "not in", "is", "is not", "<", ">", "<=", ">="):
        return None
    subject, expected = canonical(source.node_text(left)), canonical(source.node_text(right))
    if op == "==" and literals:
        found = literals.get(source.node_text(unwrap(right)))
        if found is not None and found[1] <= node.start_byte:
            expected = found[0]
    if op in ("==", "!=") and _swapped(subject, expected):
        subject, expected = expected, subject
    return subject, op, expected


def _with_alias(source: SourceFile, call: Node) -> str | None:
    """``e`` of ``with pytest.raises(E) as e:`` (or of ``e = pytest.raises(E, f, x)``)."""
    parent = call.parent
    if parent is not None and parent.type == "assignment":
        left = parent.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            return source.node_text(left)
    if parent is not None and parent.type == "as_pattern":
        target = parent.child_by_field_name("alias")
        if target is None and len(parent.named_children) > 1:
            target = parent.named_children[-1]
        if target is not None:
            return source.node_text(target).strip()
    return None


def _assigned_literals(source: SourceFile, fn: Function) -> dict[str, tuple[str, int]]:
    """The test's locals bound exactly once, by a ``name = <literal>`` statement of its
    body: name -> (the literal, canonical; the byte where that statement ends). An
    equality's expected side that names one is that literal (arbitration fixes the
    literal there: checks/arbitration/isolate.py)."""
    candidates: dict[str, tuple[str, int]] = {}
    for stmt in statements(fn.body):
        assign = stmt.named_children[0] if stmt.type == "expression_statement" else None
        if assign is None or assign.type != "assignment":
            continue
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier":
            continue
        value = source.node_text(unwrap(right))
        if not is_constant(canonical(value)):
            continue
        candidates[source.node_text(left)] = (canonical(value), stmt.end_byte)
    if not candidates:
        return {}
    bindings = binding_counts(source, fn.node, candidates)
    return {name: found for name, found in candidates.items() if bindings[name] == 1}


def _exception_names(source: SourceFile, node: Node) -> tuple[str, ...]:
    node = unwrap(node)
    items = node.named_children if node.type == "tuple" else [node]
    return tuple(sorted(source.node_text(i).rsplit(".", 1)[-1] for i in items))


def _approx(source: SourceFile, node: Node) -> tuple[float | None, float | None] | None:
    node = unwrap(node)
    if node.type != "call":
        return None
    callee = node.child_by_field_name("function")
    if callee is None or callee_parts(source, callee)[1] != "approx":
        return None
    return (
        _number(source, keyword_argument(source, node, "rel")),
        _number(source, keyword_argument(source, node, "abs")),
    )


def _almost_equal(source: SourceFile, call: Node, args: list[Node]) -> tuple[None, float | None]:
    """``assertAlmostEqual``'s tolerance as an absolute one: ``delta``, or ``10**-places``
    (``places`` defaults to 7)."""
    delta = _number(source, keyword_argument(source, call, "delta"))
    if delta is not None:
        return None, delta
    places_node = keyword_argument(source, call, "places")
    if places_node is None and len(args) > 2:
        places_node = args[2]
    places = _number(source, places_node) if places_node is not None else 7.0
    return None, (10.0**-places if places is not None else None)


def _approx_value(node: Node) -> Node:
    node = unwrap(node)
    args = call_arguments(node) if node.type == "call" else []
    return args[0] if args else node


def _number(source: SourceFile, node: Node | None) -> float | None:
    if node is None:
        return None
    try:
        return float(source.node_text(node).replace("_", ""))
    except ValueError:
        return None


def _silenced(source: SourceFile, node: Node, fn: Node, early: Node | None) -> str | None:
    """Why an assertion can no longer fail: swallowed, unreachable or under a false
    condition; None when it can."""
    if early is not None and node.start_byte > early.end_byte:
        return f"after the unconditional `return` on line {early.start_point.row + 1}"
    raised = _raises_itself(source, node)
    if raised is not None:
        return raised
    child, parent = node, node.parent
    while parent is not None and parent != fn:
        if parent.type == "function_definition" and not _referenced(source, parent, fn):
            name = parent.child_by_field_name("name")
            return (
                f"in the nested function `{source.node_text(name) if name else '?'}` on line "
                f"{parent.start_point.row + 1}, which the test never calls or passes on"
            )
        if parent.type == "try_statement" and parent.child_by_field_name("body") == child:
            for handler in parent.named_children:
                if handler.type == "except_clause" and handler_swallows(
                    source, handler, _keeps_failure
                ):
                    return (
                        f"inside the `try` on line {parent.start_point.row + 1}, whose "
                        "`except` swallows failures"
                    )
        if parent.type == "if_statement" and parent.child_by_field_name("consequence") == child:
            condition = parent.child_by_field_name("condition")
            if condition is not None and source.node_text(condition).strip() in (
                "False",
                "0",
                "None",
                "''",
                '""',
            ):
                return (
                    f"under `if {source.node_text(condition)}:` on line "
                    f"{parent.start_point.row + 1}, which never runs"
                )
        if parent.type == "with_statement" and "suppress(" in source.node_text(
            parent.named_children[0]
        ):
            return f"inside `contextlib.suppress` on line {parent.start_point.row + 1}"
        child, parent = parent, parent.parent
    return None


def _raises_itself(source: SourceFile, node: Node) -> str | None:
    """``with pytest.raises(E): raise E(...)``: the block raises the exception itself,
    so the assertion passes whatever the code does."""
    item = node.parent
    if node.type != "call" or item is None or item.type != "with_item":
        return None
    statement = item.parent.parent if item.parent is not None else None
    body = statement.child_by_field_name("body") if statement is not None else None
    if statement is None or statement.type != "with_statement" or body is None:
        return None
    stmts = [c for c in body.named_children if c.type != "comment"]
    if stmts and all(c.type == "raise_statement" for c in stmts):
        return (
            f"satisfied by the `raise` in its own `with` block on line "
            f"{stmts[0].start_point.row + 1}, not by the code under test"
        )
    return None


def _referenced(source: SourceFile, nested: Node, fn: Node) -> bool:
    """Whether the test uses a function nested in it (calls it, passes it on): its name
    appears in the test outside its own definition, or a decorator registers it."""
    if nested.parent is not None and nested.parent.type == "decorated_definition":
        return True
    name = nested.child_by_field_name("name")
    if name is None:
        return True
    data = source.data
    outside = data[fn.start_byte : nested.start_byte] + data[nested.end_byte : fn.end_byte]
    pattern = rf"\b{re.escape(source.node_text(name))}\b".encode()
    return re.search(pattern, outside) is not None


def _keeps_failure(name: str) -> bool:
    """A call in an ``except`` body that fails the test again."""
    return name.startswith("assert") or name == "fail"


_MAX_ROWS = 400  # parametrize rows expanded (several tables multiply)


def _decorators(
    source: SourceFile, fn: Function, facts: TestFacts, lookup: Callable[[str], Node | None]
) -> None:
    parent = fn.node.parent
    if parent is None or parent.type != "decorated_definition":
        return
    tables: list[tuple[tuple[str, ...], list[tuple[str, ...]] | None]] = []
    for decorator in (c for c in parent.named_children if c.type == "decorator"):
        expr = decorator.named_children[0] if decorator.named_children else None
        if expr is None:
            continue
        call = expr if expr.type == "call" else None
        target = expr.child_by_field_name("function") if call is not None else expr
        name = source.node_text(target) if target is not None else ""
        text = source.node_text(decorator)
        found = marker(source, expr)
        if found is None and expr.type == "identifier":
            # `skip_py314 = pytest.mark.skipif(...)` at module level, `@skip_py314` here
            value = lookup(source.node_text(expr))
            if value is not None and value.type == "call":
                found = marker(source, value)
                call = value
        if found is not None and found[1] is None:
            kind = found[0]
            if kind == "skip":
                facts.skips.append(text)
            else:
                facts.xfails.append(text)
                strict = keyword_argument(source, call, "strict") if call is not None else None
                if strict is not None and source.node_text(strict) == "False":
                    facts.strict_false = True
        elif found is not None:
            condition = found[1] or ""
            facts.relaxations.append(
                Relaxation(
                    found[0],
                    canonical_condition(condition),
                    condition,
                    decorator.start_point.row + 1,
                )
            )
            strict = keyword_argument(source, call, "strict") if call is not None else None
            if found[0] == "xfail" and strict is not None and source.node_text(strict) == "False":
                facts.strict_false = True
        elif name.endswith("usefixtures") and call is not None:
            for arg in call_arguments(call):  # a parametrized fixture it requests
                value = parse_expression(source.node_text(arg))
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    facts.params += (value.value,)
        elif name.endswith("parametrize") and call is not None:
            args = call_arguments(call)
            names_node = args[0] if args else keyword_argument(source, call, "argnames")
            values = args[1] if len(args) >= 2 else keyword_argument(source, call, "argvalues")
            if values is None:
                continue
            values = unwrap(values)
            if values.type == "identifier":  # a table kept in a module-level constant
                values = lookup(source.node_text(values)) or values
            argnames = _argnames(source, names_node) if names_node is not None else None
            if values.type in ("list", "tuple", "set"):
                cases = [c for c in values.named_children if c.type != "comment"]
                facts.parametrize_cases = (facts.parametrize_cases or 0) + len(cases)
                facts.parametrize_values.extend(_case(source.node_text(c)) for c in cases)
                for case in cases:
                    _case_marks(source, case, facts)
                rows = None
                if argnames:
                    rows = []
                    for case in cases:
                        row = row_values(source.node_text(case), len(argnames))
                        if row is None:
                            rows = None
                            break
                        rows.append(tuple(row))
                tables.append((argnames or (), rows))
            else:
                tables.append((argnames or (), None))
    if tables:
        argnames: tuple[str, ...] = ()
        rows: list[tuple[str, ...]] | None = [()]
        for names, table in tables:
            argnames += names
            if rows is None or table is None or not names or len(rows) * len(table) > _MAX_ROWS:
                rows = None
                continue
            rows = [r + t for r in rows for t in table]
        facts.argnames = argnames
        facts.rows = rows


def _argnames(source: SourceFile, node: Node) -> tuple[str, ...] | None:
    """``"a, b"``, ``("a", "b")`` and ``["a", "b"]`` all give ``("a", "b")``."""
    expr = parse_expression(source.node_text(node))
    items: list[ast.expr]
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        names = tuple(n.strip() for n in expr.value.split(",") if n.strip())
        return names if all(n.isidentifier() for n in names) else None
    if isinstance(expr, (ast.Tuple, ast.List)):
        items = expr.elts
        if all(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items):
            return tuple(i.value.strip() for i in items)  # type: ignore[attr-defined]
    return None


def module_value(source: SourceFile, name: str) -> Node | None:
    """The value last assigned to ``name`` at module level (``CASES = [...]``)."""
    value = None
    for stmt in source.tree.root_node.named_children:
        assign = stmt.named_children[0] if stmt.type == "expression_statement" else None
        if assign is None or assign.type != "assignment":
            continue
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        if left is not None and right is not None and source.node_text(left) == name:
            value = unwrap(right)
    return value


def _case_marks(source: SourceFile, case: Node, facts: TestFacts) -> None:
    """A ``pytest.param(..., marks=...)`` case's skip and xfail marks."""
    if case.type != "call":
        return
    marks = keyword_argument(source, case, "marks")
    if marks is None:
        return
    marks = unwrap(marks)
    exprs = marks.named_children if marks.type in ("list", "tuple") else [marks]
    skips, xfails = _marks(source, exprs)
    facts.skips.extend(skips)
    facts.xfails.extend(xfails)
    label = case_values(source.node_text(case))
    where = f" (case {', '.join(label)})" if label else ""
    for expr in exprs:
        found = marker(source, expr)
        if found is not None and found[1] is not None:
            facts.relaxations.append(
                Relaxation(
                    found[0],
                    canonical_condition(found[1]) + where,
                    found[1] + where,
                    expr.start_point.row + 1,
                )
            )


_PATCH = re.compile(
    r"(?:monkeypatch\.setattr|patch\.object|mock\.patch\.object)\(\s*[\w.]+\s*,\s*['\"](\w+)['\"]"
    r"|(?:monkeypatch\.setattr|patch|mock\.patch)\(\s*['\"][\w.]*?\.?(\w+)['\"]"
)


def _patched_names(source: SourceFile, fn: Function) -> list[str]:
    text = source.node_text(fn.node)
    return [a or b for a, b in _PATCH.findall(text)]
