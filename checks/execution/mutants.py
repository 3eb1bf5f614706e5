"""Mutants of a function: one small change each, spliced into the module's own text.

The changes (:data:`OPERATORS`): a comparison flipped, a boundary moved (``<`` ↔
``<=``), an arithmetic operator swapped, an integer constant ±1, a condition negated, a
``return`` of a constant, a statement dropped. Each mutant is the module's text with
only that change spliced in, checked by parsing the function that holds it back.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

OPERATORS = ("return", "comparison", "arithmetic", "boundary", "constant", "negation", "statement")
Operator = Literal[
    "return", "comparison", "arithmetic", "boundary", "constant", "negation", "statement"
]

_COMPARISON: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.LtE: ast.Gt,
    ast.Gt: ast.LtE,
    ast.GtE: ast.Lt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BOUNDARY: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
}
_ARITHMETIC: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
}
_CMP_TEXT = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.In: "in",
    ast.NotIn: "not in",
}
_OP_TEXT = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}
# What a `return` is replaced with, by the function's return annotation.
_RETURN_CONSTANTS = {
    "bool": ("True", "False"),
    "int": ("0",),
    "float": ("0.0",),
    "str": ('""',),
    "list": ("[]",),
    "List": ("[]",),
    "dict": ("{}",),
    "Dict": ("{}",),
    "tuple": ("()",),
    "Tuple": ("()",),
    "set": ("set()",),
    "Set": ("set()",),
}


@dataclass(frozen=True)
class Mutant:
    """One small change of a target function: the module's text with it applied."""

    operator: str
    function: str
    path: str  # the module, relative to the project root
    line: int  # 1-based, in the module
    before: str  # the line as written
    after: str  # the same line in the mutant
    text: str = field(repr=False)

    @property
    def change(self) -> str:
        return f"`{self.before}` becomes `{self.after}`"


# ---------------------------------------------------------------------------- mutants


def _line_starts(data: bytes) -> list[int]:
    starts = [0]
    for index, byte in enumerate(data):
        if byte == 10:
            starts.append(index + 1)
    return starts


class _Splicer:
    """Byte-exact edits of one module's text (``ast`` offsets are UTF-8 bytes)."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8")
        self.starts = _line_starts(self.data)

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (
            self.offset(node.lineno, node.col_offset),  # type: ignore[attr-defined]
            self.offset(node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    def replace(self, start: int, end: int, text: str) -> str:
        return (self.data[:start] + text.encode("utf-8") + self.data[end:]).decode("utf-8")

    def line(self, text: str, number: int) -> str:
        lines = text.splitlines()
        return lines[number - 1].strip() if 0 < number <= len(lines) else ""


def _dump(tree: ast.AST) -> str:
    return ast.dump(tree, include_attributes=False)


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        return body[1:]
    return body


def _walk_body(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """Every node of a function's body but its docstring, nested definitions included,
    never inside an f-string (whose parts carry no reliable offsets)."""
    stack: list[ast.AST] = list(reversed(_without_docstring(fn.body)))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.JoinedStr):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _annotation_name(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    node = fn.returns
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split("[", 1)[0].strip()
    return None


def _return_constants(fn: ast.FunctionDef | ast.AsyncFunctionDef, value: ast.expr) -> list[str]:
    """Constants of the kind the function returns: by its annotation, else by what the
    returned expression looks like; ``None`` only when nothing says more."""
    name = _annotation_name(fn)
    if name in _RETURN_CONSTANTS:
        return list(_RETURN_CONSTANTS[name])
    if isinstance(value, (ast.Compare, ast.BoolOp)) or (
        isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)
    ):
        return ["True", "False"]
    if isinstance(value, (ast.JoinedStr,)) or (
        isinstance(value, ast.Constant) and isinstance(value.value, str)
    ):
        return ['""']
    if isinstance(value, (ast.List, ast.ListComp)):
        return ["[]"]
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return ["{}"]
    if isinstance(value, ast.Tuple):
        return ["()"]
    if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)):
        return []  # the constant operator moves it already
    return ["None"]


@dataclass
class _Candidate:
    operator: str
    node: ast.AST  # the node in the original tree whose text changes
    replacement: Callable[[ast.AST], ast.AST]  # node copy -> mutated node
    token: tuple[int, int, str] | None = None  # a narrower (start, end, text) splice


def _candidates(
    fn: ast.FunctionDef | ast.AsyncFunctionDef, splicer: _Splicer, operators: Sequence[str]
) -> Iterator[_Candidate]:
    wanted = set(operators)
    for node in _walk_body(fn):
        if isinstance(node, ast.Compare):
            for index, op in enumerate(node.ops):
                for operator, table in (("comparison", _COMPARISON), ("boundary", _BOUNDARY)):
                    new = table.get(type(op))
                    if operator not in wanted or new is None:
                        continue

                    def flip(copy: ast.AST, _i: int = index, _new: type = new) -> ast.AST:
                        assert isinstance(copy, ast.Compare)
                        copy.ops[_i] = _new()
                        return copy

                    left = node.left if index == 0 else node.comparators[index - 1]
                    right = node.comparators[index]
                    gap_start = splicer.offset(left.end_lineno, left.end_col_offset)  # type: ignore[arg-type]
                    gap_end = splicer.offset(right.lineno, right.col_offset)
                    token = _token(splicer, gap_start, gap_end, _CMP_TEXT[type(op)], _CMP_TEXT[new])
                    yield _Candidate(operator, node, flip, token)
        elif isinstance(node, (ast.BinOp, ast.AugAssign)) and "arithmetic" in wanted:
            new_op = _ARITHMETIC.get(type(node.op))
            if new_op is None:
                continue

            def swap(copy: ast.AST, _new: type = new_op) -> ast.AST:
                copy.op = _new()  # type: ignore[attr-defined]
                return copy

            if isinstance(node, ast.BinOp):
                gap_start = splicer.offset(node.left.end_lineno, node.left.end_col_offset)  # type: ignore[arg-type]
                gap_end = splicer.offset(node.right.lineno, node.right.col_offset)
                old, new = _OP_TEXT[type(node.op)], _OP_TEXT[new_op]
            else:
                gap_start = splicer.offset(node.target.end_lineno, node.target.end_col_offset)  # type: ignore[arg-type]
                gap_end = splicer.offset(node.value.lineno, node.value.col_offset)
                old, new = _OP_TEXT[type(node.op)] + "=", _OP_TEXT[new_op] + "="
            yield _Candidate(
                "arithmetic", node, swap, _token(splicer, gap_start, gap_end, old, new)
            )
        elif isinstance(node, ast.Constant):
            value = node.value
            if "negation" in wanted and isinstance(value, bool):
                yield _Candidate("negation", node, lambda c, _v=value: ast.Constant(value=not _v))
            elif "constant" in wanted and isinstance(value, int) and not isinstance(value, bool):
                for delta in (1, -1):
                    yield _Candidate(
                        "constant", node, lambda c, _v=value, _d=delta: ast.Constant(value=_v + _d)
                    )
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            if "negation" in wanted:
                yield _Candidate("negation", node, lambda c: c.operand)  # type: ignore[attr-defined]
        elif isinstance(node, ast.BoolOp) and "negation" in wanted:

            def other(copy: ast.AST) -> ast.AST:
                assert isinstance(copy, ast.BoolOp)
                copy.op = ast.Or() if isinstance(copy.op, ast.And) else ast.And()
                return copy

            yield _Candidate("negation", node, other)
        if isinstance(node, (ast.If, ast.While, ast.IfExp)) and "negation" in wanted:
            test = node.test
            if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
                yield _Candidate("negation", test, lambda c: ast.UnaryOp(op=ast.Not(), operand=c))
        if isinstance(node, ast.Return) and node.value is not None and "return" in wanted:
            for constant in _return_constants(fn, node.value):
                yield _Candidate(
                    "return",
                    node.value,
                    lambda c, _k=constant: ast.parse(_k, mode="eval").body,
                )
        if "statement" in wanted and isinstance(
            node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Raise)
        ):
            yield _Candidate("statement", node, lambda c: ast.Pass())


def _token(
    splicer: _Splicer, start: int, end: int, old: str, new: str
) -> tuple[int, int, str] | None:
    """The operator's own bytes between two operands, to be replaced by ``new``: keeps
    the rest of the line as written. None when the gap holds more than the operator."""
    gap = splicer.data[start:end].decode("utf-8")
    stripped = " ".join(gap.split())
    if stripped != old:
        return None
    at = gap.find(old.split()[0])
    if old == "is not" or old == "not in":
        tail = gap.rfind(old.split()[-1]) + len(old.split()[-1])
        return start + len(gap[:at].encode()), start + len(gap[:tail].encode()), new
    return start + len(gap[:at].encode()), start + len(gap[: at + len(old)].encode()), new


def _replace_in_tree(tree: ast.Module, target: ast.AST, make: Callable[[ast.AST], ast.AST]) -> str:
    """The dump of ``tree`` with ``target`` replaced by ``make(copy of target)``."""
    import copy

    clone = copy.deepcopy(tree)
    path = _path_to(tree, target)
    assert path is not None
    parent: ast.AST = clone
    for field_name, index in path[:-1]:
        value = getattr(parent, field_name)
        parent = value[index] if index is not None else value
    field_name, index = path[-1]
    current = getattr(parent, field_name)
    original = current[index] if index is not None else current
    new = make(original)
    if index is not None:
        current[index] = new
    else:
        setattr(parent, field_name, new)
    return _dump(clone)


def _path_to(root: ast.AST, target: ast.AST) -> list[tuple[str, int | None]] | None:
    for field_name, value in ast.iter_fields(root):
        if isinstance(value, list):
            for index, item in enumerate(value):
                if item is target:
                    return [(field_name, index)]
                if isinstance(item, ast.AST):
                    found = _path_to(item, target)
                    if found is not None:
                        return [(field_name, index), *found]
        elif isinstance(value, ast.AST):
            if value is target:
                return [(field_name, None)]
            found = _path_to(value, target)
            if found is not None:
                return [(field_name, None), *found]
    return None


def _target_functions(
    tree: ast.Module, names: set[str]
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, ast.stmt]]:
    """Top-level functions named in ``names``, and every method of the classes named,
    each with the top-level statement that holds it."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            yield node.name, node, node
        elif isinstance(node, ast.ClassDef) and node.name in names:
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{node.name}.{item.name}", item, node


def mutants(
    text: str, path: str, names: Sequence[str], operators: Sequence[str] = OPERATORS
) -> list[Mutant]:
    """The mutants of the functions ``names`` (and of the methods of the classes
    ``names``) in a module's ``text``: each a one-change copy of the whole text, parsed
    back and checked to hold exactly the intended change."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    splicer = _Splicer(text)
    found: list[Mutant] = []
    seen: set[str] = set()
    for qualname, fn, top in _target_functions(tree, set(names)):
        # Each change is checked on the function that holds it, parsed alone (a method
        # as the body of a stand-in class): the rest of the module is the same bytes, and
        # parsing all of a large module for every mutant took a minute for one class.
        first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
        seg_start = splicer.offset(first, 0)
        seg_end = splicer.offset(fn.end_lineno, fn.end_col_offset)  # type: ignore[arg-type]
        if fn is top:
            header = b""
            holder = ast.Module(body=[fn], type_ignores=[])
        else:
            header = b"class _referee_:\n"
            holder = ast.parse("class _referee_:\n    pass\n")
            holder.body[0].body = [fn]  # type: ignore[attr-defined]
        for candidate in _candidates(fn, splicer, operators):
            try:
                expected = _replace_in_tree(holder, candidate.node, candidate.replacement)
            except (AssertionError, RecursionError):
                continue
            start, end = splicer.span(candidate.node)
            attempts: list[tuple[int, int, str]] = []
            if candidate.token is not None:
                attempts.append(candidate.token)
            if candidate.operator == "statement":
                attempts.append((start, end, "pass"))
            else:
                import copy

                new_node = candidate.replacement(copy.deepcopy(candidate.node))
                attempts.append((start, end, ast.unparse(new_node)))
                attempts.append((start, end, f"({ast.unparse(new_node)})"))
            for a, b, replacement in attempts:
                data = splicer.data
                segment = (
                    header + data[seg_start:a] + replacement.encode() + data[b:seg_end]
                ).decode()
                try:
                    if _dump(ast.parse(segment)) != expected:
                        continue
                except (SyntaxError, ValueError, RecursionError):
                    continue
                mutated = splicer.replace(a, b, replacement)
                if mutated in seen:
                    break
                seen.add(mutated)
                line = candidate.node.lineno  # type: ignore[attr-defined]
                found.append(
                    Mutant(
                        operator=candidate.operator,
                        function=qualname,
                        path=path,
                        line=line,
                        before=splicer.line(text, line),
                        after=splicer.line(mutated, line),
                        text=mutated,
                    )
                )
                break
    return interleaved(found, operators)


def interleaved(found: list[Mutant], operators: Sequence[str]) -> list[Mutant]:
    """One mutant of each operator in turn (in the order of ``operators``), so that a
    budget cut short still tried every kind of change."""
    queues = {op: [m for m in found if m.operator == op] for op in operators}
    ordered: list[Mutant] = []
    while any(queues.values()):
        for op in operators:
            if queues[op]:
                ordered.append(queues[op].pop(0))
    return ordered
