"""Expressions as the guard compares them: what a test checks, not how it is written.

:func:`canonical` prints an expression as Python itself would (layout, quote style,
redundant parentheses and numeric spelling no longer matter) after two rewrites that do
not change its value:

* a constant expression is replaced by its value: ``u"x"``, ``"a" "b"``, ``"a b".split()``,
  ``"-" * 3``, ``textwrap.dedent("...")``, ``"{}-{}".format(1, 2)``, ``(1, 2) + (3,)`` and
  ``{"b": 1, "a": 2}`` (a dict or a set prints its items in a fixed order) are compared
  as the values they evaluate to. Evaluation is bounded: only literals, operators and a
  fixed list of pure functions and ``str``/``bytes`` methods, on values of at most
  :data:`MAX_VALUE` characters; anything else is left as written;
* ``"...{}...".format(a, b)`` and ``"...%s..." % (a, b)`` read as the f-string
  ``f"...{a}...{b}..."`` they are equal to.
"""

from __future__ import annotations

import ast
import functools
import math
import re
import textwrap
from typing import Any

MAX_VALUE = 10_000  # characters (or items) a folded constant may have

_STR_METHODS = frozenset(
    {
        "capitalize",
        "casefold",
        "center",
        "count",
        "decode",
        "encode",
        "endswith",
        "expandtabs",
        "find",
        "format",
        "index",
        "join",
        "ljust",
        "lower",
        "lstrip",
        "partition",
        "removeprefix",
        "removesuffix",
        "replace",
        "rjust",
        "rpartition",
        "rsplit",
        "rstrip",
        "split",
        "splitlines",
        "startswith",
        "strip",
        "swapcase",
        "title",
        "upper",
        "zfill",
    }
)
_FUNCTIONS: dict[str, Any] = {
    "list": list,
    "tuple": tuple,
    "set": set,
    "frozenset": frozenset,
    "dict": dict,
    "str": str,
    "int": int,
    "float": float,
    "bytes": bytes,
    "bool": bool,
    "sorted": sorted,
    "len": len,
    "repr": repr,
    "chr": chr,
    "ord": ord,
    "abs": abs,
    "min": min,
    "max": max,
    "dedent": textwrap.dedent,
    "textwrap.dedent": textwrap.dedent,
    "inspect.cleandoc": None,  # filled below (inspect is slow to import for nothing)
}


def _cleandoc(text: str) -> str:
    import inspect

    return inspect.cleandoc(text)


_FUNCTIONS["inspect.cleandoc"] = _cleandoc
_FUNCTIONS["cleandoc"] = _cleandoc


class _NotConstant(Exception):
    pass


def _size(value: Any) -> int:
    if isinstance(value, (str, bytes, list, tuple, set, frozenset, dict)):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() // 3
    return 1


def _check(value: Any) -> Any:
    if _size(value) > MAX_VALUE:
        raise _NotConstant
    return value


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner is not None else None
    return None


def _evaluate(node: ast.AST, budget: list[int]) -> Any:
    """The value of a constant expression, or _NotConstant."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _NotConstant
    if isinstance(node, ast.Constant):
        if node.value is Ellipsis:
            raise _NotConstant
        return node.value
    if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
        return _evaluate_collection(node, budget)
    if isinstance(node, ast.UnaryOp):
        return _evaluate_unary(node, budget)
    if isinstance(node, ast.BinOp):
        return _binop(node, _evaluate(node.left, budget), _evaluate(node.right, budget))
    if isinstance(node, ast.JoinedStr):
        return _evaluate_fstring(node, budget)
    if isinstance(node, ast.Subscript):
        container = _evaluate(node.value, budget)
        if isinstance(node.slice, ast.Slice):
            bounds = [
                _evaluate(b, budget) if b is not None else None
                for b in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            return container[slice(*bounds)]
        return container[_evaluate(node.slice, budget)]
    if isinstance(node, ast.Call):
        return _evaluate_call(node, budget)
    raise _NotConstant


def _evaluate_collection(node: ast.Tuple | ast.List | ast.Set | ast.Dict, budget: list[int]) -> Any:
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _NotConstant
        return {
            _evaluate(k, budget): _evaluate(v, budget)  # type: ignore[arg-type]
            for k, v in zip(node.keys, node.values, strict=True)
        }
    if any(isinstance(e, ast.Starred) for e in node.elts):
        raise _NotConstant
    items = [_evaluate(e, budget) for e in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(items)
    if isinstance(node, ast.List):
        return items
    return set(items)


def _evaluate_unary(node: ast.UnaryOp, budget: list[int]) -> Any:
    operand = _evaluate(node.operand, budget)
    if isinstance(node.op, ast.USub):
        return -operand
    if isinstance(node.op, ast.UAdd):
        return +operand
    if isinstance(node.op, ast.Invert) and isinstance(operand, int):
        return ~operand
    raise _NotConstant


def _evaluate_fstring(node: ast.JoinedStr, budget: list[int]) -> Any:
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
        elif isinstance(value, ast.FormattedValue):
            inner = _evaluate(value.value, budget)
            spec = ""
            if value.format_spec is not None:
                spec = _evaluate(value.format_spec, budget)
            if value.conversion == ord("r"):
                inner = repr(inner)
            elif value.conversion == ord("s"):
                inner = str(inner)
            elif value.conversion == ord("a"):
                inner = ascii(inner)
            parts.append(format(inner, spec))
        else:
            raise _NotConstant
    return _check("".join(parts))


def _evaluate_call(node: ast.Call, budget: list[int]) -> Any:
    """A call of a string method on a constant, or of a known pure function."""
    if any(isinstance(a, ast.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords
    ):
        raise _NotConstant
    args = [_evaluate(a, budget) for a in node.args]
    kwargs = {k.arg: _evaluate(k.value, budget) for k in node.keywords}
    for value in (*args, *kwargs.values()):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_VALUE:
            raise _NotConstant  # "x".ljust(10**9)
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in _STR_METHODS:
        try:
            receiver = _evaluate(func.value, budget)
        except _NotConstant:
            receiver = None
        if isinstance(receiver, (str, bytes)):
            if func.attr == "replace" and len(args) >= 2:
                grow = max(1, _size(args[1]))
                if _size(receiver) * grow > 100 * MAX_VALUE:
                    raise _NotConstant
            return _check(getattr(receiver, func.attr)(*args, **kwargs))
    name = _dotted(func)
    function = _FUNCTIONS.get(name) if name is not None else None
    if function is None:
        raise _NotConstant
    return _check(function(*args, **kwargs))


def _binop(node: ast.BinOp, left: Any, right: Any) -> Any:
    op = node.op
    if isinstance(op, ast.Mult):
        for seq, times in ((left, right), (right, left)):
            if (
                isinstance(seq, (str, bytes, list, tuple))
                and isinstance(times, int)
                and _size(seq) * max(times, 0) > MAX_VALUE
            ):
                raise _NotConstant
        return _check(left * right)
    if isinstance(op, ast.Pow):
        if not isinstance(right, (int, float)) or abs(right) > 256:
            raise _NotConstant
        if isinstance(left, (int, float)) and abs(left) > 2**64:
            raise _NotConstant
        return _check(left**right)
    if isinstance(op, (ast.LShift, ast.RShift)):
        if not isinstance(right, int) or right > 4096:
            raise _NotConstant
        return left << right if isinstance(op, ast.LShift) else left >> right
    if isinstance(op, ast.Mod) and isinstance(left, (str, bytes)):
        return _check(left % right)
    operators = {
        ast.Add: lambda a, b: a + b,
        ast.Sub: lambda a, b: a - b,
        ast.Div: lambda a, b: a / b,
        ast.FloorDiv: lambda a, b: a // b,
        ast.Mod: lambda a, b: a % b,
        ast.BitOr: lambda a, b: a | b,
        ast.BitAnd: lambda a, b: a & b,
        ast.BitXor: lambda a, b: a ^ b,
    }
    apply = operators.get(type(op))
    if apply is None:
        raise _NotConstant
    return _check(apply(left, right))


def _dump(value: Any) -> str:
    """A constant's canonical text: Python's own for scalars; a dict's or a set's items
    in a fixed order (their comparison does not see order)."""
    if isinstance(value, (list, tuple)):
        items = ", ".join(_dump(v) for v in value)
        if isinstance(value, list):
            return f"[{items}]"
        return f"({items},)" if len(value) == 1 else f"({items})"
    if isinstance(value, (set, frozenset)):
        if not value:
            return "set()" if isinstance(value, set) else "frozenset()"
        items = ", ".join(sorted(_dump(v) for v in value))
        return "{" + items + "}" if isinstance(value, set) else f"frozenset({{{items}}})"
    if isinstance(value, dict):
        pairs = sorted(f"{_dump(k)}: {_dump(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return f"float({str(value)!r})"
    return repr(value)


def constant_text(node: ast.AST) -> str | None:
    """The canonical text of ``node``'s value when it is a constant expression."""
    try:
        value = _evaluate(node, [500])
    except _NotConstant:
        return None
    except Exception:
        return None
    try:
        return _dump(value)
    except (TypeError, ValueError, RecursionError):
        return None


class _Normalise(ast.NodeTransformer):
    """Rewrites that keep an expression's value: constants folded to their value,
    ``str.format`` and ``%`` formatting read as f-strings."""

    def visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and not isinstance(node, (ast.Name, ast.Constant)):
            text = constant_text(node)
            if text is not None:
                try:
                    return ast.parse(text, mode="eval").body
                except (SyntaxError, ValueError, RecursionError):
                    pass
        node = super().visit(node)
        if isinstance(node, ast.Constant):
            node.kind = None  # u"x" is "x"
        if isinstance(node, ast.Attribute) and _module_qualified(node):
            return ast.Name(node.attr, ast.Load())  # flask.Markup is Markup
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("all", "any", "sum", "min", "max")
            and len(node.args) == 1
            and isinstance(node.args[0], ast.ListComp)
        ):  # all([x for x in xs]) is all(x for x in xs)
            comp = node.args[0]
            node.args = [ast.GeneratorExp(comp.elt, comp.generators)]
        if (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Eq, ast.NotEq))
            and isinstance(node.left, ast.Call)
            and isinstance(node.left.func, ast.Name)
            and node.left.func.id == "type"
        ):  # type(x) == T is type(x) is T
            node.ops = [ast.Is() if isinstance(node.ops[0], ast.Eq) else ast.IsNot()]
        if isinstance(node, ast.Call):
            formatted = _format_as_fstring(node)
            if formatted is not None:
                return formatted
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            formatted = _percent_as_fstring(node)
            if formatted is not None:
                return formatted
        return node


def _module_qualified(node: ast.Attribute) -> bool:
    """``flask.Markup``, ``enum.Enum``, ``decimal.Decimal``: a class or constant (a name
    that starts upper-case) reached through module names (lower-case, not ``self``),
    which reads the same as the name imported."""
    if not node.attr[:1].isupper():
        return False
    value: ast.expr = node.value
    while isinstance(value, ast.Attribute):
        if not value.attr[:1].islower():
            return False
        value = value.value
    return (
        isinstance(value, ast.Name)
        and value.id[:1].islower()
        and value.id
        not in (
            "self",
            "cls",
        )
    )


def _fstring(parts: list[tuple[str, ast.expr | None, int]]) -> ast.JoinedStr:
    values: list[ast.expr] = []
    for text, expr, conversion in parts:
        if text:
            values.append(ast.Constant(text))
        if expr is not None:
            values.append(ast.FormattedValue(expr, conversion, None))
    return ast.JoinedStr(values)


def _format_as_fstring(node: ast.Call) -> ast.JoinedStr | None:
    func = node.func
    if not (
        isinstance(func, ast.Attribute)
        and func.attr == "format"
        and isinstance(func.value, ast.Constant)
        and isinstance(func.value.value, str)
    ):
        return None
    if any(isinstance(a, ast.Starred) for a in node.args) or any(
        k.arg is None for k in node.keywords
    ):
        return None
    import string

    keywords = {k.arg: k.value for k in node.keywords}
    parts: list[tuple[str, ast.expr | None, int]] = []
    position = 0
    try:
        for text, field, spec, conversion in string.Formatter().parse(func.value.value):
            if field is None:
                parts.append((text, None, -1))
                continue
            if spec or not re.fullmatch(r"\d*|[A-Za-z_]\w*", field):
                return None  # a format spec or an attribute/index lookup: left as written
            if field == "":
                expr = node.args[position]
                position += 1
            elif field.isdigit():
                expr = node.args[int(field)]
            else:
                expr = keywords[field]
            parts.append(
                (
                    text,
                    expr,
                    {"r": ord("r"), "s": ord("s"), "a": ord("a")}.get(conversion or "", -1),
                )
            )
    except (ValueError, IndexError, KeyError):
        return None
    return _fstring(parts)


def _percent_as_fstring(node: ast.BinOp) -> ast.JoinedStr | None:
    if not (isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)):
        return None
    template = node.left.value
    args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
    pieces = re.split(r"(%[sr%])", template)
    if re.search(r"%[^sr%]", template) or any(isinstance(a, ast.Starred) for a in args):
        return None
    parts: list[tuple[str, ast.expr | None, int]] = []
    position = 0
    text = ""
    for piece in pieces:
        if piece == "%%":
            text += "%"
        elif piece in ("%s", "%r"):
            if position >= len(args):
                return None
            parts.append((text, args[position], -1 if piece == "%s" else ord("r")))
            position += 1
            text = ""
        else:
            text += piece
    if position != len(args):
        return None
    parts.append((text, None, -1))
    return _fstring(parts)


_STRING = re.compile(
    r"""(?s)[rRbBuUfF]{0,2}('''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*")"""
)


def _fold_outside_strings(text: str) -> str:
    """``text`` with whitespace removed except inside string literals."""
    out = []
    last = 0
    for match in _STRING.finditer(text):
        out.append("".join(text[last : match.start()].split()))
        out.append(match.group(0))
        last = match.end()
    out.append("".join(text[last:].split()))
    return "".join(out)


def one_line(text: str, limit: int = 80) -> str:
    """Code quoted in a message: whitespace runs outside string literals folded to one
    space (inside them kept: `"a  b"` is not `"a b"`; a newline shown as `\\n`), cut to
    ``limit`` characters."""
    pieces = []
    last = 0
    for match in _STRING.finditer(text):
        pieces.append(re.sub(r"\s+", " ", text[last : match.start()]))
        pieces.append(match.group(0).replace("\n", "\\n"))
        last = match.end()
    pieces.append(re.sub(r"\s+", " ", text[last:]))
    folded = re.sub(r"([(\[{]) | ([)\]}])", r"\1\2", "".join(pieces).strip())
    return folded if len(folded) <= limit else folded[: limit - 1] + "…"


def parse_expression(text: str) -> ast.expr | None:
    """``text`` as an expression (a multi-line implicit concatenation included)."""
    text = text.strip()
    for candidate in (text, f"(\n{text}\n)"):
        try:
            return ast.parse(candidate, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return None


def normalise(node: ast.expr) -> ast.expr:
    try:
        return _Normalise().visit(node)  # type: ignore[return-value]
    except RecursionError:
        return node


def unparse(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except (ValueError, RecursionError, AttributeError, TypeError):
        return ""


@functools.lru_cache(maxsize=16384)
def canonical(text: str) -> str:
    """An expression as the guard compares it (see the module's docstring). Text that
    does not parse on its own keeps its form with whitespace outside strings removed."""
    text = text.strip().removeprefix("@").strip()
    node = parse_expression(text)
    if node is None:
        return _fold_outside_strings(text)
    printed = unparse(normalise(node))
    return printed or _fold_outside_strings(text)


@functools.lru_cache(maxsize=16384)
def is_constant(text: str) -> bool:
    """Whether the expression (canonical text) is a constant: a value, not a computation."""
    node = parse_expression(text)
    return node is not None and constant_text(node) is not None


@functools.lru_cache(maxsize=65536)
def substitute(text: str, values: tuple[tuple[str, str], ...]) -> str:
    """``text`` (canonical) with each name of ``values`` (``(name, value)`` pairs)
    replaced by its value (canonical text), canonical again: a parametrized assertion
    for one case."""
    if not values:
        return text
    node = parse_expression(text)
    if node is None:
        return text
    parsed: dict[str, ast.expr] = {}
    for name, value in values:
        expr = parse_expression(value)
        if expr is not None:
            parsed[name] = expr

    class _Substitute(ast.NodeTransformer):
        def visit_Name(self, name: ast.Name) -> ast.AST:
            replacement = parsed.get(name.id)
            if replacement is None or not isinstance(name.ctx, ast.Load):
                return name
            return replacement

    try:
        node = _Substitute().visit(node)
    except RecursionError:
        return text
    printed = unparse(normalise(node))
    return printed or text


def names_in(text: str) -> frozenset[str]:
    """The names an expression reads."""
    node = parse_expression(text)
    if node is None:
        return frozenset(re.findall(r"[A-Za-z_]\w*", text))
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))


def callee(text: str) -> str | None:
    """The name of the function an expression's outermost call calls: ``parse`` for
    ``parse("x").hours`` and for ``mod.parse("x")``."""
    node = parse_expression(text)
    while node is not None:
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute):
                return func.attr
            if isinstance(func, ast.Name):
                return func.id
            node = func
        elif isinstance(node, (ast.Attribute, ast.Subscript, ast.Await)):
            node = node.value
        else:
            return None
    return None


@functools.lru_cache(maxsize=8192)
def statement_key(written: str) -> str:
    """A statement (or a compound statement's head, ``with f() as x:``) as Python prints
    it: layout, comments, quote style and string prefixes aside."""
    text = textwrap.dedent(written).strip()
    for candidate in (text, f"{text}\n    pass"):
        try:
            tree = ast.parse(candidate)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant):
                node.kind = None
        # constant expressions read as their values (`"a b".split()` is `["a", "b"]`)
        return unparse(_Normalise().visit(tree)) or "".join(text.split())
    return "".join(text.split())


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
