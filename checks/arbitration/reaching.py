"""Which assignment a read of a name in a test takes its value from: one rule, on ``ast``,
for both readers that ask it — the failing call's (:func:`~referee.checks.arbitration.sites.
reaching_assignment`, which reads the test's text with ``ast`` and maps the answer back to
tree-sitter's tree) and the suite's (:func:`~referee.checks.arbitration.suite_methods.
built_objects`).

A read in the test's top-level statement ``position`` holds the value of the last
``name = value`` statement at the test's top level before it (``r = parse(a)``, ``assert
r == …``, ``r = parse(b)``: the test may assign the name again, before or after). Nothing
else is certain to hold it there, so there is no answer, where the name is also bound:

- between the two statements, or inside the one that holds the read (a loop goes round to
  it; ``+=``, a ``for`` or ``with`` target, an import, ``except … as``, ``del``);
- inside the assignment's own value (``r = f(r := …)``);
- in a nested function, lambda or class (a parameter, a definition of that name), or by a
  ``global`` or ``nonlocal`` of it;

nor where a nested function, lambda or class reads it: it may run at any later time — once
the name holds another value, or between the assignment and the read, changing the object
the read takes as built.

A leaf module: it imports nothing of referee's.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
FunctionAst = ast.FunctionDef | ast.AsyncFunctionDef


def assigned_value(stmt: ast.stmt, name: str) -> ast.expr | None:
    """The value of ``stmt`` when it is ``name = value`` (or ``name: T = value``)."""
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id == name
    ):
        return stmt.value
    if (
        isinstance(stmt, ast.AnnAssign)
        and isinstance(stmt.target, ast.Name)
        and stmt.target.id == name
    ):
        return stmt.value
    return None


def reaching(function: FunctionAst, name: str, position: int) -> int | None:
    """The index in ``function.body`` of the assignment whose value ``name`` holds in the
    top-level statement ``position`` (see the module's docstring), or None."""
    found = [
        i
        for i, stmt in enumerate(function.body[:position])
        if assigned_value(stmt, name) is not None
    ]
    if not found or position >= len(function.body):
        return None
    index = found[-1]
    value = assigned_value(function.body[index], name)
    for held, node, nested in _bindings(function, name):
        if nested:
            return None  # a nested scope's, a ``global`` or ``nonlocal``
        if held == index and value is not None and _inside(node, value):
            return None  # ``r = f(r := …)``
        if index < held <= position:
            return None
    return index


def _inside(node: ast.AST, outer: ast.AST) -> bool:
    return any(node is inner for inner in ast.walk(outer))


def _bindings(function: FunctionAst, name: str) -> Iterator[tuple[int, ast.AST, bool]]:
    """Each binding of ``name`` in the body of ``function``, and each read of it in a
    nested scope: (the index of the top-level statement that holds it, the node, whether
    it is not the test's own — in a nested scope, or a ``global``/``nonlocal``)."""
    for index, stmt in enumerate(function.body):
        stack: list[tuple[ast.AST, bool]] = [(stmt, False)]
        while stack:
            node, nested = stack.pop()
            if _binds(node, name) or (nested and _reads(node, name)):
                yield index, node, nested or isinstance(node, (ast.Global, ast.Nonlocal))
            inner = nested or isinstance(node, SCOPES)
            definition = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            if definition and node.name == name:  # type: ignore[attr-defined]
                yield index, node, True  # a definition of that name: not a value
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def _reads(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)


def _binds(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name and not isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.arg):
        return node.arg == name
    if isinstance(node, ast.alias):
        return (node.asname or node.name.partition(".")[0]) == name
    if isinstance(node, ast.ExceptHandler):
        return node.name == name
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return name in node.names
    if isinstance(node, (ast.MatchAs, ast.MatchStar)):
        return node.name == name
    if isinstance(node, ast.MatchMapping):
        return node.rest == name
    return False
