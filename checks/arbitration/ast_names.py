"""Names as ``ast`` writes them: a leaf module, so that any reader of a test's syntax
tree may import it without importing what arbitration builds on it."""

from __future__ import annotations

import ast


def dotted_name(node: ast.expr, *, calls: bool = False) -> str | None:
    """``a.b.c`` for a name or an attribute chain, None for anything else; with ``calls``
    a call stands for what it calls (``a.b().c`` is ``a.b.c``)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value, calls=calls)
        return None if base is None else f"{base}.{node.attr}"
    if calls and isinstance(node, ast.Call):
        return dotted_name(node.func, calls=True)
    return None
