"""An argument the test computes from literals and names it knows, with operators only —
``"a" * 511``, ``1024 ** 2``, ``"http://[" + host + "]"``, ``f"a{sep}b"``, ``[first, 2]``
(form ``expression-argument``). Each name is read as any argument's name is (a literal
assigned in the test, a parametrize case, a loop's case the run recorded...); the
expression is then written out with the names' values in their place, and evaluated only
where every call under test is: in the sandbox, never in referee's process (``"a" *
10**12`` is a test's text, not a value to build here).

A call, an attribute, a subscript, a comprehension or a conditional anywhere in it, and it
is not one: what those give is not read here.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from tree_sitter import Node

EXPRESSION_ARGUMENT = "expression-argument"

# The nodes an expression of literals and names is built of (tree-sitter-python's types)
_COMPOSITE = frozenset(
    {
        "binary_operator",
        "unary_operator",
        "parenthesized_expression",
        "list",
        "tuple",
        "set",
        "dictionary",
        "pair",
        "string",  # an f-string: its interpolations are read as expressions too
        "concatenated_string",
    }
)
_LEAVES = frozenset(
    {
        "integer",
        "float",
        "true",
        "false",
        "none",
        "ellipsis",
        "string_start",
        "string_content",
        "string_end",
        "escape_sequence",
        "type_conversion",
        "comment",
        "interpolation",
        "format_specifier",
        "format_expression",
    }
)


def is_expression(node: Node) -> bool:
    """Whether ``node`` may be an expression of literals and names with operators."""
    return node.type in _COMPOSITE


def names_in(node: Node) -> list[Node] | None:
    """The identifiers of ``node``, an expression built of literals and names with
    operators only, in the order they are written; None when any part of it is something
    else (a call, an attribute, a subscript, a comprehension, a lambda...)."""
    found: list[Node] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            found.append(current)
            continue
        if current.type not in _COMPOSITE and current.type not in _LEAVES:
            return None
        stack.extend(reversed(current.named_children))
    return found


def written_out(text: str, value_of: Callable[[str], str]) -> str | None:
    """``text`` (an expression) with each name replaced by the expression ``value_of``
    gives for it, written back by :func:`ast.unparse` — which chooses the quotes a value
    inside an f-string needs; None when ``text`` or a value does not parse."""
    try:
        tree = ast.parse(f"(\n{text}\n)", mode="eval")
    except SyntaxError:
        return None

    class _Values(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.expr:
            return ast.parse(value_of(node.id), mode="eval").body

    try:
        return ast.unparse(_Values().visit(tree))
    except (SyntaxError, ValueError, RecursionError, KeyError):  # KeyError: a name not read
        return None
