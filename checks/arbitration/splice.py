"""Putting a candidate's function into the user's module: the body changes, and what the
body needs comes along — nothing else.

A candidate (an oracle's program, or a patch the model wrote) is a whole little program:
its own signature, maybe type annotations, maybe its own docstring, imports written as
the model likes them (``from typing import *``), helpers beside the function. A fix a
maintainer would merge keeps the function's signature, docstring and decorators as they
are, and takes from the candidate:

- the body (without the candidate's docstring), parameters renamed back to the
  original's names when the candidate named them otherwise;
- the top-level helpers the body uses (functions, classes, constants, transitively),
  placed after the function — refused when one would shadow a name the module binds;
- the imports the body and helpers use, each by name (a star import of a standard
  module becomes ``from module import name`` for the names used), placed in the module's
  import block as isort/ruff would place them — never an import the module already has.

The project's own formatter and import sorter, where it configures them, run afterwards
(:mod:`.style`).
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
import sys
from dataclasses import dataclass

from referee.checks.arbitration.capabilities import PURE_MODULES, find_function

__all__ = ["Refused", "splice"]

_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | PURE_MODULES
_BUILTINS = frozenset(dir(builtins))
_HELPERS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign)


class Refused(Exception):
    """The candidate cannot be spliced in; the message says why."""


@dataclass(frozen=True)
class _Import:
    module: str | None  # None: ``import module`` (``name`` is the module)
    name: str  # what is imported
    alias: str | None

    @property
    def bound(self) -> str:
        if self.alias:
            return self.alias
        return self.name.split(".", 1)[0] if self.module is None else self.name


def _bindings(tree: ast.Module) -> dict[str, ast.AST]:
    """Top-level names a module binds, and the statement binding each."""
    bound: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound[node.name] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    name = alias.asname or alias.name
                    bound[name.split(".", 1)[0] if isinstance(node, ast.Import) else name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        bound[sub.id] = node
    return bound


def _names(nodes: list[ast.AST]) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name)}


def _imports(tree: ast.Module) -> list[_Import]:
    found = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            found += [_Import(None, a.name, a.asname) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module != "__future__":
            found += [_Import(node.module, a.name, a.asname) for a in node.names]
    return found


def _defined_name(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _signature_names(args: ast.arguments) -> list[list[str]]:
    return [
        [a.arg for a in args.posonlyargs],
        [a.arg for a in args.args],
        [args.vararg.arg] if args.vararg else [],
        [a.arg for a in args.kwonlyargs],
        [args.kwarg.arg] if args.kwarg else [],
    ]


def _renames(original: ast.arguments, candidate: ast.arguments) -> dict[str, str]:
    before, after = _signature_names(original), _signature_names(candidate)
    if [len(part) for part in before] != [len(part) for part in after]:
        raise Refused("it changes the function's parameters")
    return {
        new: old
        for old_part, new_part in zip(before, after, strict=True)
        for old, new in zip(old_part, new_part, strict=True)
        if old != new
    }


class _Rename(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names:
            node.id = self.names[node.id]
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        if node.arg in self.names:
            node.arg = self.names[node.arg]
        return node


def _line_starts(text: str) -> list[int]:
    """Byte offset of each line's start (index 0 is line 1)."""
    data = text.encode("utf-8")
    starts = [0]
    starts += [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
    return starts


def _body_text(code: str, function: ast.AST, statements: list[ast.stmt], indent: str) -> str:
    """The candidate's body statements, re-indented to ``indent``: their own lines
    (comments kept) where they start on lines of their own, else as ast writes them."""
    lines = code.splitlines()
    first = statements[0]
    line = lines[first.lineno - 1]
    own = line[: first.col_offset].strip() == "" and first.lineno > function.lineno  # type: ignore[attr-defined]
    if not own:
        return "\n".join(
            indent + text for stmt in statements for text in ast.unparse(stmt).splitlines()
        )
    theirs = line[: len(line) - len(line.lstrip())]
    chunk = lines[first.lineno - 1 : function.end_lineno]  # type: ignore[attr-defined]
    out = []
    for text in chunk:
        if not text.strip():
            out.append("")
        elif text.startswith(theirs):
            out.append(indent + text[len(theirs) :])
        else:
            out.append(text)  # a line inside a multi-line string: as written
    return "\n".join(out).rstrip()


def splice(original: str, name: str, code: str, qualname: str | None = None) -> str:
    """The module ``original`` with the body of its top-level function ``name`` taken
    from the program ``code`` (and what that body needs). ``qualname`` (``Owner.name``):
    the function in the module is that method, re-indented into its class; the
    program's is the top-level ``name``, or ``name`` in its own class ``Owner``. Raises
    :class:`Refused`."""
    tree, module, candidate, target = _parsed(original, name, code, qualname)
    statements, renames = _new_statements(candidate, target)

    # --- the function: the original's decorators, signature and docstring, the new body
    head, body, tail = _function_parts(original, code, target, candidate, statements, renames)

    # --- helpers the body uses, transitively
    bound = _bindings(module)
    helpers, wanted = _helpers_used(tree, bound, name, qualname, statements)
    code_lines = code.splitlines()
    helper_text = "".join(
        "\n\n\n" + "\n".join(code_lines[_first_line(n) - 1 : n.end_lineno]).rstrip()  # type: ignore[attr-defined]
        for n in helpers
    )
    new_text = head + "\n" + body + helper_text + tail
    if not tail.startswith("\n"):
        new_text = head + "\n" + body + helper_text + "\n" + tail

    # --- imports the body and helpers use, by name
    adding = _imports_needed(tree, bound, target, statements, helpers, wanted)
    if adding:
        new_text = _add_imports(new_text, adding)
    return new_text


def _parsed(
    original: str, name: str, code: str, qualname: str | None
) -> tuple[
    ast.Module,
    ast.Module,
    ast.FunctionDef | ast.AsyncFunctionDef,
    ast.FunctionDef | ast.AsyncFunctionDef,
]:
    """(the program's tree, the module's, the program's function, the module's)."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise Refused(f"not valid Python: {exc.msg} (line {exc.lineno})") from None
    try:
        module = ast.parse(original)
    except SyntaxError as exc:
        raise Refused(f"the module does not parse: {exc.msg}") from None
    candidate = find_function(tree, name)
    if candidate is None and qualname:
        candidate = find_function(tree, qualname)  # the method written in its class
    if candidate is None:
        raise Refused(f"does not define `{name}`")
    target = find_function(module, qualname or name)
    if target is None:
        raise Refused(f"the module has no top-level `{qualname or name}`")
    return tree, module, candidate, target


def _new_statements(
    candidate: ast.FunctionDef | ast.AsyncFunctionDef,
    target: ast.FunctionDef | ast.AsyncFunctionDef,
) -> tuple[list[ast.stmt], dict[str, str]]:
    """(the program's function's body without its docstring, its parameters renamed to
    the module's function's; the renames)."""
    statements = list(candidate.body)
    if ast.get_docstring(candidate, clean=False) is not None:
        statements = statements[1:]
    if not statements:
        raise Refused("its function has no body")
    renames = _renames(target.args, candidate.args)
    if renames:
        taken = _names(statements) | {
            a.arg for s in statements for a in ast.walk(s) if isinstance(a, ast.arg)
        }
        clash = sorted(set(renames.values()) & taken)
        if clash:
            raise Refused(f"it renames parameters onto names its body uses (`{clash[0]}`)")
        statements = [_Rename(renames).visit(s) for s in statements]
    return statements, renames


def _function_parts(
    original: str,
    code: str,
    target: ast.FunctionDef | ast.AsyncFunctionDef,
    candidate: ast.FunctionDef | ast.AsyncFunctionDef,
    statements: list[ast.stmt],
    renames: dict[str, str],
) -> tuple[str, str, str]:
    """(the module up to the function's body — its decorators, signature and docstring —,
    the new body, indented as the original's, the module after the function)."""
    starts = _line_starts(original)
    data = original.encode("utf-8")
    kept_docstring = ast.get_docstring(target, clean=False) is not None
    first_kept = target.body[0]
    if first_kept.lineno == target.lineno:  # ``def f(x): return x`` on one line
        indent = " " * (target.col_offset + 4)
    else:
        indent = " " * first_kept.col_offset
    if kept_docstring:
        end = starts[first_kept.end_lineno - 1] + first_kept.end_col_offset  # type: ignore[operator]
        head = data[:end].decode("utf-8")
    else:
        head = data[: _header_end(original, target)].decode("utf-8")
    body = (
        "\n".join(indent + t for s in statements for t in ast.unparse(s).splitlines())
        if renames
        else _body_text(code, candidate, statements, indent)
    )
    # to the end of the function's last line (a comment after its last statement goes too)
    last = target.end_lineno or target.lineno
    function_end = starts[last] - 1 if last < len(starts) else len(data)
    tail = data[function_end:].decode("utf-8")
    return head, body, tail


def _helpers_used(
    tree: ast.Module,
    bound: dict[str, ast.AST],
    name: str,
    qualname: str | None,
    statements: list[ast.stmt],
) -> tuple[list[ast.AST], set[str]]:
    """(the program's helpers — functions, classes, constants — the body uses, directly
    or through another helper, that the module does not have; every name they and the
    body use)."""
    helpers: list[ast.AST] = []
    wanted = _names(statements)
    owner = (qualname or "").rpartition(".")[0]
    pool = [
        n
        for n in tree.body
        if isinstance(n, _HELPERS)
        and name not in _defined_name(n)
        and not (isinstance(n, ast.ClassDef) and n.name == owner)  # the method's own class
    ]
    changed = True
    while changed:
        changed = False
        for node in pool:
            if node in helpers or not set(_defined_name(node)) & wanted:
                continue
            for defined in _defined_name(node):
                if defined in bound and ast.dump(bound[defined]) != ast.dump(node):
                    raise Refused(f"its helper `{defined}` would shadow the module's `{defined}`")
            helpers.append(node)
            wanted |= _names([node])
            changed = True
    helpers = [
        n for n in pool if n in helpers and not all(d in bound for d in _defined_name(n))
    ]  # in the program's order; one the module already has, identical, stays the module's
    return helpers, wanted


def _imports_needed(
    tree: ast.Module,
    bound: dict[str, ast.AST],
    target: ast.FunctionDef | ast.AsyncFunctionDef,
    statements: list[ast.stmt],
    helpers: list[ast.AST],
    wanted: set[str],
) -> list[_Import]:
    """The program's imports of the names the body and helpers use that the module does
    not bind (refused when one would rebind a name of the module's)."""
    local = {a.arg for s in statements for a in ast.walk(s) if isinstance(a, ast.arg)}
    local |= {
        n.id
        for s in statements
        for n in ast.walk(s)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    local |= {arg for part in _signature_names(target.args) for arg in part}
    for helper in helpers:
        local |= set(_defined_name(helper))
        local |= {a.arg for a in ast.walk(helper) if isinstance(a, ast.arg)}
        local |= {
            n.id
            for n in ast.walk(helper)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
    needed = sorted(wanted - local)
    imports = _imports(tree)
    explicit = {imp.bound: imp for imp in imports if imp.name != "*"}
    stars = [imp.module for imp in imports if imp.name == "*" and imp.module]
    adding: list[_Import] = []
    for used in needed:
        imp = explicit.get(used)
        if imp is None:
            if used in bound or used in _BUILTINS:
                continue
            module_name = next((m for m in stars if _exports(m, used)), None)
            if module_name is None:
                continue  # unbound: the run will say so
            imp = _Import(module_name, used, None)
        if used in bound:
            if _same_binding(bound[used], imp):
                continue
            raise Refused(f"its import of `{used}` would shadow the module's `{used}`")
        adding.append(imp)
    return adding


def _first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])  # type: ignore[attr-defined]


def _header_end(text: str, function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Byte offset just after the ``:`` that ends the function's header."""
    starts = _line_starts(text)
    data = text.encode("utf-8")
    if function.body[0].lineno > function.lineno:
        return starts[function.body[0].lineno - 1] - 1  # the header's last newline
    body_start = starts[function.body[0].lineno - 1] + function.body[0].col_offset
    head = data[:body_start].decode("utf-8")
    return len(head.rstrip()[: head.rstrip().rfind(":") + 1].encode("utf-8"))


def _exports(module: str, name: str) -> bool:
    """Whether ``from module import *`` binds ``name`` — asked only of the standard
    library's plain-computation modules, imported here (nothing else is imported)."""
    if module not in PURE_MODULES:
        return False
    try:
        loaded = importlib.import_module(module)
    except ImportError:
        return False
    public = getattr(loaded, "__all__", None)
    if public is not None:
        return name in public
    return not name.startswith("_") and hasattr(loaded, name)


def _same_binding(node: ast.AST, imp: _Import) -> bool:
    if isinstance(node, ast.Import):
        return imp.module is None and any(
            a.name == imp.name and a.asname == imp.alias for a in node.names
        )
    if isinstance(node, ast.ImportFrom):
        return node.module == imp.module and any(
            a.name == imp.name and a.asname == imp.alias for a in node.names
        )
    return False


# ------------------------------------------------------------------------ import block


def _alias(imp: _Import) -> str:
    return f"{imp.name} as {imp.alias}" if imp.alias else imp.name


def _name_key(name: str) -> tuple[int, str]:
    """isort's and ruff's order of imported names (order-by-type): CONSTANTS, Classes,
    functions, each alphabetically."""
    bare = name.split(" as ", 1)[0]
    kind = 0 if bare.isupper() and len(bare) > 1 else 1 if bare[:1].isupper() else 2
    return kind, bare


def _statement_key(line: str) -> tuple[int, str]:
    """isort's and ruff's order in a section: ``import x`` lines, then ``from x import``,
    each by module name."""
    match = re.match(r"\s*(import|from)\s+([\w.]+)", line)
    if match is None:
        return 2, line
    return (0 if match.group(1) == "import" else 1), match.group(2).lower()


def _add_imports(text: str, adding: list[_Import]) -> str:
    """``text`` with ``adding`` written into its top-level import block: a name added to an
    existing one-line ``from module import ...`` of the same module, else a new line in
    the standard library's section, sorted; a new section (or block) where there is none."""
    tree = ast.parse(text)
    lines = text.split("\n")
    block, position = _import_block(tree)
    new_lines = _import_lines(adding, block, lines)
    if not new_lines:
        return "\n".join(lines)
    return _inserted(lines, block, position, new_lines)


def _import_block(tree: ast.Module) -> tuple[list[ast.stmt], int]:
    """(the module's top-level import block, the line after its docstring and imports)."""
    block: list[ast.stmt] = []
    position = 0
    for index, node in enumerate(tree.body):
        is_docstring = (
            index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        )
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            block.append(node)
        elif block or not is_docstring:
            break
        position = node.end_lineno or 0  # type: ignore[assignment]
    return block, position


def _import_lines(adding: list[_Import], block: list[ast.stmt], lines: list[str]) -> list[str]:
    """The import lines to add for ``adding``; a name the block's one-line ``from module
    import ...`` of the same module can take is written into ``lines`` there instead."""
    new_lines: list[str] = []
    for imp in adding:
        if imp.module is None:
            new_lines.append(f"import {_alias(imp)}")
            continue
        existing = next(
            (
                n
                for n in block
                if isinstance(n, ast.ImportFrom)
                and n.module == imp.module
                and not n.level
                and n.lineno == n.end_lineno
                and "*" not in {a.name for a in n.names}
                and "#" not in lines[n.lineno - 1]
            ),
            None,
        )
        if existing is not None:
            row = existing.lineno - 1
            names = [_alias(_Import(imp.module, a.name, a.asname)) for a in existing.names]
            names = sorted({*names, _alias(imp)}, key=_name_key)
            indent = lines[row][: len(lines[row]) - len(lines[row].lstrip())]
            lines[row] = f"{indent}from {imp.module} import {', '.join(names)}"
            continue
        merged = next(
            (i for i, t in enumerate(new_lines) if t.startswith(f"from {imp.module} ")), None
        )
        if merged is not None:
            names = [*new_lines[merged].split(" import ", 1)[1].split(", "), _alias(imp)]
            new_lines[merged] = (
                f"from {imp.module} import {', '.join(sorted(names, key=_name_key))}"
            )
        else:
            new_lines.append(f"from {imp.module} import {_alias(imp)}")
    return new_lines


def _inserted(lines: list[str], block: list[ast.stmt], position: int, new_lines: list[str]) -> str:
    """The module's ``lines`` with ``new_lines`` (sorted) in the standard library's
    section of the import block, or in a section (a block) of their own."""
    new_lines.sort(key=_statement_key)
    if not block:
        # no imports: a block of its own after the docstring, before the code
        after = lines[position:]
        while after and not after[0].strip():
            after.pop(0)
        gap = ["", ""] if after and re.match(r"(def|class|async|@)\b|@", after[0]) else [""]
        before = lines[:position] + ([""] if position else [])
        return "\n".join(before + new_lines + (gap if after else []) + after)
    # the standard library's section: the first run of imports (between blank lines)
    # whose modules are all the standard library's
    sections: list[list[ast.stmt]] = []
    for node in block:
        if sections and node.lineno - (sections[-1][-1].end_lineno or 0) <= 1:
            sections[-1].append(node)
        else:
            sections.append([node])
    stdlib = next(
        (s for s in sections if all(_root(n) in _STDLIB for n in s) and not _future(s)),
        None,
    )
    if stdlib is None:
        row = next(
            (s[0].lineno - 1 for s in sections if not _future(s)),
            (block[-1].end_lineno or 0),
        )
        return "\n".join(
            [*lines[:row], *new_lines, *([""] if row < len(lines) else []), *lines[row:]]
        )
    for new in reversed(new_lines):
        row = next(
            (
                n.lineno - 1
                for n in stdlib
                if not (isinstance(n, ast.ImportFrom) and n.module == "__future__")
                and _statement_key(lines[n.lineno - 1]) > _statement_key(new)
            ),
            stdlib[-1].end_lineno or 0,
        )
        lines[row:row] = [new]
    return "\n".join(lines)


def _root(node: ast.stmt) -> str:
    if isinstance(node, ast.Import):
        return node.names[0].name.split(".", 1)[0]
    assert isinstance(node, ast.ImportFrom)
    return "." if node.level else (node.module or "").split(".", 1)[0]


def _future(section: list[ast.stmt]) -> bool:
    return all(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in section)
