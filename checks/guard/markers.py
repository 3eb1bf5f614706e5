"""Skip and xfail markers (decorators, ``pytestmark``, a class's marks) as the guard
reads them, and the conditions they — and a test's checks — apply under, evaluated
where they can be for every interpreter the guard knows."""

from __future__ import annotations

import ast
import re

from tree_sitter import Node

from referee.checks.guard.normal import canonical, parse_expression, unparse
from referee.checks.nodes import (
    call_arguments,
    keyword_argument,
    literal_truth,
    statements,
    unwrap,
)
from referee.checks.source import SourceFile

_SKIP_DECORATOR = re.compile(r"(^|\.)(skip|skipIf|skipUnless|skipif)$")


_XFAIL_DECORATOR = re.compile(r"(^|\.)(xfail|expectedFailure)$")


def module_marks(source: SourceFile) -> tuple[list[str], list[str]]:
    """(skips, xfails) that the module's ``pytestmark`` gives every test in it."""
    return marks_of(source, pytestmark_of(source, source.tree.root_node))


def pytestmark_of(source: SourceFile, scope: Node) -> list[Node]:
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


def marks_of(source: SourceFile, exprs: list[Node]) -> tuple[list[str], list[str]]:
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


def class_marks(source: SourceFile, class_node: Node) -> tuple[list[str], list[str]]:
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
        exprs.extend(pytestmark_of(source, body))
    return marks_of(source, exprs)


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


def string_literal(text: str) -> str:
    node = parse_expression(text)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return text


def canonical_condition(text: str) -> str:
    return canonical(text) if parse_expression(text) is not None else " ".join(text.split())


def enclosing_condition(source: SourceFile, node: Node, body: Node) -> str | None:
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


def check_condition(source: SourceFile, node: Node, body: Node) -> str | None:
    """The condition an assertion runs under (:func:`enclosing_condition`), but for a
    loop's or a ``try``'s: a loop over cases and a ``try ... else`` check every time."""
    condition = enclosing_condition(source, node, body)
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
