"""Test adequacy by mutation: does a changed test catch a bug in the code it calls?

For one test, :func:`grade_test`

1. finds its *targets*: the project's own functions (and classes) the test calls, through
   the test module's imports (``from mathx import is_even``, ``import mathx`` then
   ``mathx.is_even(...)``);
2. writes *mutants* of each target's body, one small change each (:data:`OPERATORS`):
   a comparison flipped, a boundary moved (``<`` ↔ ``<=``), an arithmetic operator
   swapped, an integer constant ±1, a condition negated, a ``return`` of a constant, a
   statement dropped. Each mutant is the module's text with only that change spliced in,
   checked by parsing it back;
3. runs the test as it is in the sandbox (it must pass there, or it is not graded), then
   against each mutant, two at a time, stopping at the first mutant it kills or when the
   time budget is spent.

A test that kills none of its target's mutants checks nothing about it; the surviving
mutants are the evidence. Results are cached by the contents of the test module, the
target modules and the settings.

Who decides: a mutant is killed when pytest, in the sandbox, fails on it (exit status 1,
a timeout, or an error). The mutants are referee's own edits of the user's code, and the
test and its ``conftest.py`` are the user's — trusted as pytest would trust them
(docs/sandbox.md, "who decides"); no model-written code runs here.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Literal

from referee import __version__
from referee.checks import sandbox
from referee.checks.execution.cache import JsonCache
from referee.checks.interpreter import Interpreter
from referee.checks.progress import Cancelled

# Part of every cached grade's key; raised when grading changes (3: a kill by a crash, a
# hang or a `return None` alone is no kill; 7: the test's own unpacking is a check).
GRADING_VERSION = 7
_SHOWN_FIRST = ("comparison", "boundary", "arithmetic", "constant", "negation", "statement")
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
    return _interleaved(found, operators)


def _interleaved(found: list[Mutant], operators: Sequence[str]) -> list[Mutant]:
    """One mutant of each operator in turn (in the order of ``operators``), so that a
    budget cut short still tried every kind of change."""
    queues = {op: [m for m in found if m.operator == op] for op in operators}
    ordered: list[Mutant] = []
    while any(queues.values()):
        for op in operators:
            if queues[op]:
                ordered.append(queues[op].pop(0))
    return ordered


# ---------------------------------------------------------------------------- targets


PACKAGES = ".referee-packages"  # where a package-dir layout is laid out as imported


def package_dirs(files: dict[str, str]) -> dict[str, str]:
    """``[tool.setuptools.package-dir]`` of the project's pyproject.toml — package →
    directory (``""`` for the root), ``{"": "src"}`` or ``{"pkg.sub": "sub"}`` — or {}."""
    from referee.checks.config import tomllib

    try:
        data = tomllib.loads(files.get("pyproject.toml", ""))
    except (tomllib.TOMLDecodeError, ValueError):
        return {}
    table = data.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    if not isinstance(table, dict):
        return {}
    mapping = {}
    for package, directory in table.items():
        if isinstance(package, str) and isinstance(directory, str):
            folder = directory.strip().removeprefix("./").strip("/")
            mapping[package.strip()] = "" if folder == "." else folder
    return mapping


def _mapped_file(module: str, files: dict[str, str], mapping: dict[str, str]) -> str | None:
    """The file of ``module`` under a package-dir mapping (the most specific package)."""
    for package in sorted(mapping, key=len, reverse=True):
        if package and module != package and not module.startswith(package + "."):
            continue
        rest = module[len(package) :].lstrip(".").replace(".", "/")
        stem = "/".join(part for part in (mapping[package], rest) if part)
        for candidate in (stem + ".py", stem + "/__init__.py"):
            if candidate in files:
                return candidate
        return None
    return None


def _packaged_path(path: str, mapping: dict[str, str]) -> str | None:
    """Where ``path`` lies in the package-dir layout as imported (see
    :func:`packaged_view`), or None when no package holds it."""
    for package, folder in sorted(mapping.items(), key=lambda item: len(item[1]), reverse=True):
        if folder and not path.startswith(folder + "/"):
            continue
        rest = path[len(folder) + 1 :] if folder else path
        return f"{PACKAGES}/" + "/".join(part for part in (package.replace(".", "/"), rest) if part)
    return None


def layout_args(files: dict[str, str], src_layout: bool) -> tuple[list[str], dict[str, str]]:
    """pytest's options for the project laid out in the sandbox as it imports, and the
    package-dir mapping to lay it out with (:func:`packaged_view`; {} when none is
    needed). Without them a test imports the package as installed where the sandbox's
    Python has it — never the copy it is given, a mutant or the code at the base."""
    args: list[str] = []
    if src_layout:
        args += ["-o", "pythonpath=src"]
    mapping = package_dirs(files)
    if any(folder != package.replace(".", "/") for package, folder in mapping.items()):
        # A package-dir layout (``"pkg.checks" = "checks"``): the same, laid out as imported.
        args += ["-o", f"pythonpath={PACKAGES}"]
        return args, mapping
    return args, {}


def packaged_view(files: dict[str, str], mapping: dict[str, str]) -> dict[str, str]:
    """The project's files under a package-dir mapping laid out as Python imports them
    (``checks/x.py`` of ``"pkg.checks" = "checks"`` as ``.referee-packages/pkg/checks/x.py``):
    the sandbox puts that folder first on the path, so a test imports the copy it is
    given — a mutant — never the package as installed. Each file goes with the package
    whose directory holds it most closely."""
    view = {}
    for path, text in files.items():
        if path.endswith(".py") and (target := _packaged_path(path, mapping)) is not None:
            view[target] = text
    return view


# The baseline run records which lines of the target modules the test executes; a mutant
# on a line it never reaches cannot be killed, and proves nothing about the test.
TRACE_PLUGIN = "_referee_trace"
TRACE_MARK = "_REFEREE_TRACE_ "
_TRACE_CODE = """import json, os, sys, threading

_ROOT = os.getcwd() + os.sep
with open(os.path.join(_ROOT, "_referee_trace.json"), encoding="utf-8") as _handle:
    _WANTED = json.load(_handle)
_SEEN = {}


def _tracer(frame, event, arg):
    path = frame.f_code.co_filename
    if not path.startswith(_ROOT):
        return None
    original = _WANTED.get(path[len(_ROOT):])
    if original is None:
        return None
    lines = _SEEN.setdefault(original, set())
    lines.add(frame.f_lineno)

    def local(frame, event, arg):
        if event == "line":
            lines.add(frame.f_lineno)
        return local

    return local


def pytest_configure(config):
    threading.settrace(_tracer)
    sys.settrace(_tracer)


def pytest_unconfigure(config):
    sys.settrace(None)
    seen = {path: sorted(lines) for path, lines in _SEEN.items()}
    sys.__stdout__.write("\\n_REFEREE_TRACE_ " + json.dumps(seen) + "\\n")
    sys.__stdout__.flush()
"""


def _functions_run(text: str, lines: set[int], names: set[str]) -> list[str]:
    """The module's top-level functions, other than ``names``, that the functions and
    classes ``names`` call by name and that hold a line of ``lines`` (ran)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    called: set[str] = set()
    for node in tree.body:
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name in names
        ):
            called.update(
                call.func.id
                for call in ast.walk(node)
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            )
    found = []
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if node.name in names or node.name not in called or node.end_lineno is None:
            continue
        if any(node.lineno < n <= node.end_lineno for n in lines):
            found.append(node.name)
    return found


def traced_lines(stdout: str, paths: Sequence[str]) -> dict[str, set[int]] | None:
    """The lines of ``paths`` the baseline run executed, read from its output, or None
    when it gave none that can be read (the output is untrusted: checked, never run)."""
    for line in reversed(stdout.splitlines()):
        if not line.startswith(TRACE_MARK):
            continue
        try:
            data = json.loads(line[len(TRACE_MARK) :])
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        found: dict[str, set[int]] = {}
        for path, lines in data.items():
            if path in paths and isinstance(lines, list):
                found[path] = {n for n in lines if isinstance(n, int) and not isinstance(n, bool)}
        return found
    return None


def _module_file(
    module: str, files: dict[str, str], near: str, mapping: dict[str, str] | None = None
) -> str | None:
    """The project file that ``import module`` would load: ``a/b.py`` or
    ``a/b/__init__.py``, through the project's package-dir mapping, from the root,
    ``src/`` or the test's own directory."""
    if mapping and (found := _mapped_file(module, files, mapping)) is not None:
        return found
    parts = module.split(".")
    stems = ["/".join(parts) + ".py", "/".join(parts) + "/__init__.py"]
    here = near.rsplit("/", 1)[0] + "/" if "/" in near else ""
    for prefix in ("", "src/", here):
        for stem in stems:
            if prefix + stem in files:
                return prefix + stem
    return None


def _defining_file(path: str, name: str, files: dict[str, str], depth: int = 3) -> str:
    """The module that defines ``name`` when ``path`` (a package's ``__init__.py``, most
    often) only re-exports it: ``from .more import *`` or ``from .more import chunked``,
    followed through relative imports of the same package, a few levels at most."""
    try:
        tree = ast.parse(files[path])
    except (SyntaxError, ValueError, RecursionError):
        return path
    defined = {
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    if name in defined or depth <= 0:
        return path
    package = path.rsplit("/", 1)[0] if "/" in path else ""  # level 1: this package
    for node in tree.body:
        if not (isinstance(node, ast.ImportFrom) and node.level == 1 and node.module):
            continue
        if not any(a.name in (name, "*") and a.asname in (None, name) for a in node.names):
            continue
        stem = (package + "/" if package else "") + node.module.replace(".", "/")
        for candidate in (stem + ".py", stem + "/__init__.py"):
            if candidate in files:
                found = _defining_file(candidate, name, files, depth - 1)
                if found != candidate or _defines(files[candidate], name):
                    return found
    return path


def _defines(text: str, name: str) -> bool:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return False
    return any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name
        for n in tree.body
    )


def _test_nodes(tree: ast.Module, qualname: str) -> list[ast.AST] | None:
    """The classes and the function that ``qualname`` (``test_x``, ``TestX.test_x``) names,
    outermost first, or None when one is missing."""
    body: list[ast.stmt] = tree.body
    found: list[ast.AST] = []
    for part in qualname.split("."):
        node = next(
            (
                n
                for n in body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.name == part
            ),
            None,
        )
        if node is None:
            return None
        found.append(node)
        body = node.body
    return found


def _test_function(tree: ast.Module, qualname: str) -> ast.FunctionDef | None:
    nodes = _test_nodes(tree, qualname)
    return nodes[-1] if nodes and isinstance(nodes[-1], ast.FunctionDef) else None


def _expected_to_fail(test_text: str, qualname: str) -> bool:
    """Whether the test, or a class that holds it, is marked ``xfail`` (a decorator
    ending in ``xfail``, called or not)."""
    try:
        tree = ast.parse(test_text)
    except (SyntaxError, ValueError, RecursionError):
        return False
    for node in _test_nodes(tree, qualname) or []:
        for decorator in getattr(node, "decorator_list", []):
            called = decorator.func if isinstance(decorator, ast.Call) else decorator
            if (_dotted(called) or "").rsplit(".", 1)[-1] == "xfail":
                return True
    return False


def targets(
    test_text: str, test_path: str, qualname: str, files: dict[str, str]
) -> dict[str, list[str]]:
    """Project module (relative path) → names the test ``qualname`` calls from it, or
    passes to a call (``check(f)``), through the test module's imports. Fixtures and
    helpers are not followed."""
    try:
        tree = ast.parse(test_text)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    fn = _test_function(tree, qualname)
    if fn is None:
        return {}
    imported: dict[str, tuple[str, str]] = {}  # local name -> (module, name)
    modules: dict[str, str] = {}  # local name -> module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                imported[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    modules[alias.asname] = alias.name
                else:
                    modules[alias.name.split(".")[0]] = alias.name.split(".")[0]
                    modules[alias.name] = alias.name
    found: dict[str, list[str]] = {}
    mapping = package_dirs(files)

    def add(module: str, name: str, *, defined: bool = False) -> None:
        path = _module_file(module, files, test_path, mapping)
        if path is None:
            return
        path = _defining_file(path, name, files)
        if defined and not _defines(files[path], name):
            return  # a constant handed to a call, not a function
        names = found.setdefault(path, [])
        if name not in names:
            names.append(name)

    for node in ast.walk(fn):
        if not isinstance(node, ast.Call):
            continue
        # a function handed to another that calls it: `check(candidate)`, `map(f, xs)`
        for argument in [*node.args, *(k.value for k in node.keywords)]:
            if isinstance(argument, ast.Name) and argument.id in imported:
                add(*imported[argument.id], defined=True)
        func = node.func
        if isinstance(func, ast.Name) and func.id in imported:
            add(*imported[func.id])
        elif isinstance(func, ast.Attribute):
            base = _dotted(func.value)
            if base is None:
                continue
            if base in modules:
                add(modules[base], func.attr)
            elif base in imported:  # `from pkg import mod` then `mod.f()`
                module, name = imported[base]
                add(f"{module}.{name}", func.attr)
                add(module, name)  # a class: `Stack().push(...)` is `Stack`
    return {path: names for path, names in found.items() if names}


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    return None


# ---------------------------------------------------------------------------- grading


@dataclass
class Grade:
    """What the mutants said about one test."""

    test_id: str
    status: Literal["killed", "survived", "not-graded"]
    reason: str = ""
    targets: list[str] = field(default_factory=list)  # "path:function"
    total: int = 0  # mutants written
    tried: int = 0  # mutants run
    killed_by: dict | None = None  # the first mutant it killed (asdict, without text)
    survivors: list[dict] = field(default_factory=list)
    # mutants it "killed" only because they crashed, hung (the test failed with an
    # exception other than an assertion's) or returned None: the test checks that the
    # code runs and returns something, nothing about the value
    crashed: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False


class GradeCache(JsonCache[Grade]):
    """One JSON file per (test module, target modules, settings)."""

    kind = Grade


_FAILED = re.compile(r"^(?:FAILED|ERROR) \S+(?: - (?P<why>.*))?$")
_CHECKS = ("assert", "AssertionError", "Failed", "DID NOT RAISE", "DID NOT WARN")


_UNPACKED = re.compile(r"ValueError: (?:too many|not enough) values to unpack\b")
_RAISED_AT = re.compile(r"^(?P<path>\S+?):\d+: ValueError$")


def crash_only(result: sandbox.SandboxResult, test_path: str | None = None) -> bool:
    """Whether a test failed on a mutant only because the mutant crashed or hung — an
    exception other than a failed assertion (``IndexError``, ``TypeError`` from a
    ``None``, ``RecursionError``) or a time limit — rather than because a check of the
    test saw a wrong value. ``pytest.raises`` that saw no exception is a check
    (``Failed: DID NOT RAISE``), and so is the test's own unpacking of a result
    (``(finding,) = check(...)`` says "exactly one"): a ``ValueError`` of unpacking raised
    on a line of ``test_path``, not inside the code under test."""
    if result.status == "timeout":
        return True
    lines = result.stdout.splitlines()
    reasons = [
        (match.group("why") or "").strip()
        for line in lines
        if (match := _FAILED.match(line.strip()))
    ]
    if not reasons:
        return False  # no summary to read: a failure of the test, as before
    if not all(why and not why.endswith("...") for why in reasons):
        # The summary cuts the reason to the terminal's width (`- A...`), or leaves it out
        # when the test's id fills it: read the first line of the failure's traceback that
        # names it (`E   ...`).
        reasons = [line[1:].strip() for line in lines if line.startswith("E ")][:1] or [""]
        if not reasons[0]:
            return False  # nothing to read: a failure of the test, as before
    raised_at = [m.group("path") for line in lines if (m := _RAISED_AT.match(line.strip()))]
    unpacked_by_test = bool(
        test_path and raised_at and raised_at[-1].replace("\\", "/").endswith(test_path)
    )
    return not any(
        why.startswith(_CHECKS)
        or "AssertionError" in why
        or (unpacked_by_test and _UNPACKED.search(why) is not None)
        for why in reasons
    )


def _public(mutant: Mutant) -> dict:
    data = asdict(mutant)
    data.pop("text")
    return data


def grade_test(
    test_path: str,
    qualname: str,
    files: dict[str, str],
    *,
    operators: Sequence[str] = OPERATORS,
    max_mutants: int = 40,
    deadline: float | None = None,
    timeout: float = 10.0,
    workers: int = 2,
    cache: GradeCache | None = None,
    cancelled: Callable[[], bool] | None = None,
    progress: Callable[[str], None] | None = None,
    python: Interpreter | None = None,
) -> Grade:
    """Grade the test ``qualname`` (``test_x`` or ``TestX.test_x``) of ``test_path`` by the
    mutants of its targets. ``files`` is the project (relative path → text) as the sandbox
    gets it, the test module among them; ``deadline`` a ``time.monotonic()`` past which no
    new mutant is started; ``python`` the project's interpreter (None: referee's own),
    which must have pytest (:func:`referee.checks.interpreter.pytest_problem`)."""
    started = time.monotonic()
    test_id = f"{test_path}::{qualname.replace('.', '::')}"
    test_text = files.get(test_path)
    if test_text is None:
        return Grade(test_id, "not-graded", f"{test_path} is not among the project's files")
    if _expected_to_fail(test_text, qualname):
        return Grade(test_id, "not-graded", "it is marked xfail: it passes by failing")
    found = targets(test_text, test_path, qualname, files)
    target_names = [f"{path}:{name}" for path, names in found.items() for name in names]
    key_data = json.dumps(
        [
            __version__,
            GRADING_VERSION,
            test_id,
            test_text,
            sorted((path, files[path], names) for path, names in found.items()),
            list(operators),
            max_mutants,
            timeout,
            # another interpreter may grade differently (its versions of the dependencies)
            *([python.path] if python is not None and not python.is_own else []),
        ]
    )
    key = hashlib.sha256(key_data.encode("utf-8")).hexdigest()
    if cache is not None and (known := cache.get(key)) is not None:
        return known
    if not found:
        return Grade(test_id, "not-graded", "it calls no function of the project's own modules", [])
    limits = sandbox.Limits(timeout_s=timeout, cpu_s=max(1, int(timeout)))
    layout, mapping = layout_args(files, any(path.startswith("src/") for path in found))
    args = [test_id, "-q", "-x", "-rfE", "--no-header", "-o", "addopts=", "-p", "no:warnings"]
    args += layout

    def run(text_by_path: dict[str, str], extra: list[str] | None = None) -> sandbox.SandboxResult:
        view = {**files, **text_by_path}
        return sandbox.run_pytest(
            {**view, **packaged_view(view, mapping)},
            [*args, *(extra or [])],
            limits=limits,
            python=python,
        )

    # The test as it is first, its lines traced: one that does not pass is not graded, and
    # no mutant of a large module is written for it.
    if progress is not None:
        progress(f"{test_id}: the test as it is")
    wanted = {(_packaged_path(path, mapping) if mapping else None) or path: path for path in found}
    baseline = run(
        {
            f"{TRACE_PLUGIN}.py": _TRACE_CODE,
            f"{TRACE_PLUGIN}.json": json.dumps(wanted),
        },
        ["-p", TRACE_PLUGIN],
    )
    if baseline.status != "ok":
        return Grade(
            test_id,
            "not-graded",
            f"the test does not pass in the sandbox as it is: {baseline.message}",
            target_names,
            seconds=time.monotonic() - started,
        )
    every: list[Mutant] = []
    for path, names in found.items():
        every.extend(mutants(files[path], path, names, operators))
    if not every:
        why = f"no mutant could be written for {', '.join(target_names)}"
        return Grade(test_id, "not-graded", why, target_names)
    # Only mutants on lines the test ran. A module with no traced line at all is run some
    # other way (a subprocess, say): all of its mutants stay.
    executed = traced_lines(baseline.stdout or "", list(found)) or {}
    reached = [m for m in every if m.path not in executed or m.line in executed[m.path]]
    if not reached:
        why = f"the test runs no line of {', '.join(target_names)} that a mutant changes"
        return Grade(test_id, "not-graded", why, target_names)
    # Then the functions of the same module that the targets call by name, on the lines
    # the test ran (a helper such as `_check` that holds the logic a target only calls);
    # not deeper: a test of one rule runs all of an engine's plumbing, and is no weaker
    # for letting a change there pass.
    helpers: list[Mutant] = []
    for path, names in found.items():
        if lines := executed.get(path):
            extra = _functions_run(files[path], lines, set(names))
            helpers.extend(
                m for m in mutants(files[path], path, extra, operators) if m.line in lines
            )
    chosen = (_interleaved(reached, operators) + _interleaved(helpers, operators))[:max_mutants]
    grade = Grade(test_id, "survived", "", target_names, total=len(chosen))
    lock = threading.Lock()
    stop = threading.Event()

    def one(mutant: Mutant) -> tuple[Mutant, bool, bool, str]:
        result = run({mutant.path: mutant.text})
        if result.status == "refused":
            raise sandbox.SandboxError(result.message)
        survived = result.status == "ok"
        # a mutant that returns None is caught by any "it returned something" check
        trivial = mutant.after.strip() == "return None" or crash_only(result, test_path)
        return mutant, survived, not survived and trivial, result.message

    pending: set[Future] = set()
    queue = list(chosen)
    ran_out = False
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        while queue or pending:
            while queue and len(pending) < max(1, workers) and not stop.is_set():
                if cancelled is not None and cancelled():
                    stop.set()
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    ran_out = True
                    break
                pending.add(pool.submit(one, queue.pop(0)))
            if not pending:
                break
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                try:
                    mutant, survived, crashed, message = future.result()
                except sandbox.SandboxError as exc:
                    stop.set()
                    grade.status, grade.reason = "not-graded", str(exc)
                    continue
                with lock:
                    grade.tried += 1
                    if survived:
                        grade.survivors.append(_public(mutant))
                    elif crashed:
                        # no check of the test saw it: grading goes on
                        grade.crashed.append({**_public(mutant), "message": message})
                    elif grade.killed_by is None:
                        grade.killed_by = {**_public(mutant), "message": message}
                        stop.set()
                if progress is not None:
                    progress(f"{test_id}: mutant {grade.tried}/{len(chosen)}")
            if stop.is_set() or ran_out:
                queue.clear()
    if cancelled is not None and cancelled() and grade.killed_by is None:
        raise Cancelled
    grade.seconds = round(time.monotonic() - started, 3)
    if grade.status == "not-graded":
        return grade
    # Shown in a stable order (runs finish in any order): the changes of a condition or a
    # computation first, a `return` of a constant last (the least telling).
    position = {id(m): i for i, m in enumerate(chosen)}
    shown = {op: i for i, op in enumerate(_SHOWN_FIRST)}
    order = {(m.path, m.line, m.after, m.operator): position[id(m)] for m in chosen}
    grade.survivors.sort(
        key=lambda m: (
            shown.get(m["operator"], len(shown)),
            order.get((m["path"], m["line"], m["after"], m["operator"]), 0),
        )
    )
    if grade.killed_by is None and grade.crashed and not grade.survivors:
        grade.killed_by = grade.crashed[0]  # every mutant crashed: nothing passed unseen
    if grade.killed_by is not None:
        grade.status = "killed"
        grade.survivors = []
    elif grade.tried < len(chosen):
        grade.status = "not-graded"
        grade.reason = (
            f"the time budget ran out after {grade.tried} of {len(chosen)} mutants, none killed"
        )
        return grade  # not cached: the next run may finish it
    if cache is not None:
        cache.put(key, grade)
    return grade


__all__ = [
    "OPERATORS",
    "Cancelled",
    "Grade",
    "GradeCache",
    "Mutant",
    "grade_test",
    "mutants",
    "targets",
]
