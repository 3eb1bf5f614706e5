"""Whether two values a sandboxed run gave (or their reprs) are the same value.

The values come back from the sandbox as reprs; they are read here as literals, never
run, and compared with a tolerance for floats and without regard to the order of a set.
"""

from __future__ import annotations

import ast
import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from referee.checks.sandbox import SandboxResult

_MISSING = object()


def values_equal(a: SandboxResult | str, b: SandboxResult | str) -> bool:
    """Whether two values (results of ``evaluate``, or reprs) are the same value.

    Reprs are read back as literals (with ``nan``, ``inf``, ``set()`` and
    ``frozenset()`` understood) and compared recursively through lists, tuples, dicts
    and sets, floats with ``math.isclose(rel_tol=1e-9, abs_tol=1e-12)`` and NaN equal to
    NaN. Reprs that are not literals compare as text. A result that is not ``ok`` equals
    nothing."""
    left, right = _repr_of(a), _repr_of(b)
    if left is None or right is None:
        return False
    x, y = _literal(left), _literal(right)
    if x is _MISSING or y is _MISSING:
        return left == right
    try:
        return _equal(x, y)
    except RecursionError:
        return left == right


def _repr_of(value: SandboxResult | str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return value.value if value.status == "ok" else None


_NAMES = {"nan": math.nan, "inf": math.inf, "None": None, "True": True, "False": False}


def _literal(text: str) -> Any:
    try:
        tree = ast.parse(text.strip(), mode="eval")
        return _convert(tree.body)
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return _MISSING


def _convert(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_convert(item) for item in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, ast.Set):
        return _Bag([_convert(item) for item in node.elts])
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise ValueError("dict unpacking")
        return {
            _hashable(_convert(k)): _convert(v) for k, v in zip(node.keys, node.values, strict=True)
        }
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _convert(node.operand)
        if isinstance(operand, (int, float, complex)) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left, right = _convert(node.left), _convert(node.right)
        if isinstance(right, complex) and isinstance(left, (int, float)):
            return left + right if isinstance(node.op, ast.Add) else left - right
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and not node.keywords
        and len(node.args) <= 1
    ):
        name = node.func.id
        args = [_convert(arg) for arg in node.args]
        if name in ("set", "frozenset"):
            if not args:
                return _Bag([])
            items = args[0].items if isinstance(args[0], _Bag) else args[0]
            if not isinstance(items, (list, tuple, str)):
                raise ValueError("set() of a non-iterable")
            return _Bag(list(items))
        if name == "float" and len(args) == 1 and isinstance(args[0], str):
            return float(args[0])
    raise ValueError(f"not a literal: {ast.dump(node)[:60]}")


class _Bag:
    """A set read from a repr: compared by matching elements with tolerance."""

    __slots__ = ("items",)

    def __init__(self, items: list[Any]) -> None:
        self.items = items


def _hashable(key: Any) -> Any:
    if isinstance(key, list):
        return tuple(_hashable(item) for item in key)
    if isinstance(key, _Bag):
        return frozenset(_hashable(item) for item in key.items)
    return key


def _equal(x: Any, y: Any) -> bool:
    """Python's ``==``, with tolerance for floats and NaN equal to NaN."""
    if isinstance(x, (int, float)) and isinstance(y, (int, float)):
        if isinstance(x, int) and isinstance(y, int):
            return x == y
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        if math.isinf(x) or math.isinf(y):
            return x == y
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(x, complex) and isinstance(y, complex):
        return _equal(x.real, y.real) and _equal(x.imag, y.imag)
    if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
        return type(x) is type(y) and len(x) == len(y) and all(map(_equal, x, y))
    if isinstance(x, dict) and isinstance(y, dict):
        if len(x) != len(y):
            return False
        if x.keys() == y.keys():
            return all(_equal(value, y[key]) for key, value in x.items())
        return _matched(list(x.items()), list(y.items()))
    if isinstance(x, _Bag) and isinstance(y, _Bag):
        return len(x.items) == len(y.items) and _matched(x.items, y.items)
    return type(x) is type(y) and x == y


def _matched(xs: list[Any], ys: list[Any]) -> bool:
    """Whether every item of ``xs`` pairs off with an equal item of ``ys``."""
    unmatched = list(ys)
    for item in xs:
        for index, other in enumerate(unmatched):
            if _equal(item, other):
                del unmatched[index]
                break
        else:
            return False
    return not unmatched
