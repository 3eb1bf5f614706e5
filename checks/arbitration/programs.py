"""A model's answer read as a program: the fenced code, its definitions (imports,
functions, classes, constants; examples and prints dropped), and the standard-library
imports of the module under test it runs after."""

from __future__ import annotations

import ast
import re
import sys


def extract_code(answer: str) -> str:
    """The first fenced Python block of a model's answer, else the answer itself."""
    for pattern in (r"```(?:python|py)[^\n]*\n(.*?)```", r"```[^\n]*\n(.*?)```"):
        match = re.search(pattern, answer, re.DOTALL)
        if match:
            return match.group(1)
    unterminated = re.search(r"```(?:python|py)?[^\n]*\n(.*)$", answer, re.DOTALL)
    return unterminated.group(1) if unterminated else answer


_KEPT = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
)


def module_imports(text: str) -> str:
    """The standard-library imports at the top level of a module: what the
    module's functions take for granted (``from math import pi``). An oracle program runs
    with them in front of its own code — the model sees the signature and docstring, not
    the module, and an oracle that uses ``pi`` as the docstring does is no worse for
    forgetting the import. Its own definitions come after them and win."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ""
    kept = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            roots = [alias.name.partition(".")[0] for alias in stmt.names]
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
            roots = [stmt.module.partition(".")[0]]
        else:
            continue
        if all(r in sys.stdlib_module_names and r != "__future__" for r in roots):
            kept.append(ast.unparse(stmt))
    return "".join(f"{line}\n" for line in kept)


def program_from(answer: str, name: str, preamble: str = "") -> tuple[str | None, str]:
    """(program, problem): the definitions of a model's answer — imports, functions,
    classes, constants; examples and prints dropped — or None and why not. ``preamble``
    (:func:`module_imports`) goes in front of them."""
    code = extract_code(answer)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return None, f"not valid Python: {exc.msg} (line {exc.lineno})"
    body = [
        stmt
        for stmt in tree.body
        if isinstance(stmt, _KEPT)
        and not (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__")
    ]
    if not any(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name for s in body
    ):
        return None, f"does not define `{name}`"
    # each definition as the model wrote it (its comments and quotes: a fix taken from
    # this program reads as written), or as ast writes it when its lines do not stand alone
    lines = code.splitlines()
    parts = []
    for stmt in body:
        first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
        text = "\n".join(lines[first - 1 : stmt.end_lineno]).rstrip()
        try:
            ast.parse(text)
        except SyntaxError:
            text = ast.unparse(stmt)
        parts.append(text)
    program = "from __future__ import annotations\n\n" + preamble + "\n".join(parts)
    return program + "\n", ""


_VALUE_TYPES = frozenset(
    {"int", "float", "complex", "str", "bytes", "bool", "list", "dict", "tuple", "set"}
    | {"frozenset", "List", "Dict", "Tuple", "Set", "FrozenSet"}
)


def value_return(signature: str) -> str | None:
    """The return annotation of ``signature`` (``def f(x) -> int:``) when it names a type
    whose values are never None — a built-in value type, bare or parametrised
    (``list[str]``) — as written; else None (no annotation, ``Optional``, a union, a
    class of the project's)."""
    try:
        tree = ast.parse(signature.strip() + "\n    pass\n")
    except SyntaxError:
        return None
    function = tree.body[0] if tree.body else None
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    returns = function.returns
    if returns is None:
        return None
    base = returns.value if isinstance(returns, ast.Subscript) else returns
    if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
        name = base.attr if base.value.id in ("typing", "builtins") else None
    else:
        name = base.id if isinstance(base, ast.Name) else None
    return ast.unparse(returns) if name in _VALUE_TYPES else None
