"""What a candidate patch could do beyond computing: refused before it ever runs.

A candidate patch is model-written code that, once offered and applied, runs in the
user's program with the user's rights — outside any sandbox. A fix of a pure function
has no business opening files, starting processes, reaching the network, loading native
code, importing modules by name, evaluating strings, or walking frames and object
internals; a model that was prompt-injected (by a docstring, by a hostile repository)
reaches for exactly those. So a candidate that uses a capability the original function
did not use is refused with the list of what it added, before the sandbox runs it.

This is a static filter over the candidate's syntax tree: defence in depth, not a
boundary. It cannot prove code harmless (Python offers too many roads to the same
place); it refuses the roads a forged verdict, an escape or a persistent implant has
used, and anything it does not recognise as plain computation among the imports.
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Iterable

# Modules that compute and nothing else: a patch may add imports of these freely.
PURE_MODULES = frozenset(
    {
        "__future__",
        "abc",
        "array",
        "base64",
        "binascii",
        "bisect",
        "calendar",
        "cmath",
        "collections",
        "colorsys",
        "copy",
        "dataclasses",
        "datetime",
        "decimal",
        "difflib",
        "enum",
        "fractions",
        "functools",
        "graphlib",
        "hashlib",
        "heapq",
        "html",
        "ipaddress",
        "itertools",
        "json",
        "keyword",
        "math",
        "numbers",
        "operator",
        "random",
        "re",
        "reprlib",
        "statistics",
        "string",
        "struct",
        "textwrap",
        "typing",
        "typing_extensions",
        "unicodedata",
        "zlib",
    }
)

# Modules that reach the system, the interpreter or the test runner: refused whenever the
# original function did not use them, even when the original module imports them.
SYSTEM_MODULES = frozenset(
    {
        "_ctypes",
        "_io",
        "_posixsubprocess",
        "_pytest",
        "_socket",
        "_thread",
        "asyncio",
        "atexit",
        "builtins",
        "cffi",
        "code",
        "codeop",
        "concurrent",
        "ctypes",
        "dbm",
        "dis",
        "faulthandler",
        "fcntl",
        "fileinput",
        "ftplib",
        "gc",
        "glob",
        "http",
        "imp",
        "importlib",
        "inspect",
        "io",
        "marshal",
        "mmap",
        "multiprocessing",
        "nt",
        "os",
        "pathlib",
        "pickle",
        "pkgutil",
        "platform",
        "pluggy",
        "posix",
        "pty",
        "py",
        "pytest",
        "referee",
        "resource",
        "runpy",
        "select",
        "selectors",
        "shelve",
        "shutil",
        "signal",
        "site",
        "smtplib",
        "socket",
        "sqlite3",
        "ssl",
        "subprocess",
        "sys",
        "sysconfig",
        "tempfile",
        "termios",
        "threading",
        "traceback",
        "tracemalloc",
        "tty",
        "types",
        "urllib",
        "weakref",
        "webbrowser",
        "zipimport",
    }
)

# Built-in names that read or write files, run strings as code, import by name, or reach
# namespaces and attributes by computed names.
SYSTEM_NAMES = frozenset(
    {
        "__build_class__",
        "__builtins__",
        "__import__",
        "__loader__",
        "__spec__",
        "breakpoint",
        "compile",
        "delattr",
        "eval",
        "exec",
        "exit",
        "globals",
        "help",
        "input",
        "locals",
        "open",
        "quit",
        "setattr",
        "vars",
    }
)

# Attributes of frames, code objects, generators and tracebacks: the road from a value to
# the interpreter's state (the caller's frame, pytest's reporter, the sandbox's own code).
FRAME_ATTRIBUTES = frozenset(
    {
        "_current_frames",
        "_getframe",
        "ag_code",
        "ag_frame",
        "co_code",
        "co_consts",
        "co_names",
        "cr_code",
        "cr_frame",
        "f_back",
        "f_builtins",
        "f_code",
        "f_globals",
        "f_locals",
        "f_trace",
        "gi_code",
        "gi_frame",
        "gi_yieldfrom",
        "setprofile",
        "settrace",
        "tb_frame",
        "tb_next",
    }
)

# Dunder attributes a plain computation may read.
HARMLESS_DUNDERS = frozenset({"__name__", "__qualname__", "__doc__"})

_DUNDER = re.compile(r"__[A-Za-z_][A-Za-z0-9_]*__")


def _root(module: str | None) -> str:
    return (module or "").split(".", 1)[0]


def _from_root(node: ast.ImportFrom) -> str:
    """``os`` for ``from os.path import join``; ``.helpers`` for ``from .helpers import x``
    (a relative import names a module of the project)."""
    if node.level:
        return "." * node.level + (node.module or "")
    return _root(node.module)


class _Scan(ast.NodeVisitor):
    """Every capability one piece of code uses, as readable items: ``import os``,
    ``open()``, ``.__globals__``, ``getattr with a computed name``..."""

    def __init__(self, modules: dict[str, str]) -> None:
        self.modules = dict(modules)  # name bound by an import -> the module's root
        self.found: dict[str, int] = {}  # capability -> first line

    def add(self, what: str, node: ast.AST) -> None:
        self.found.setdefault(what, getattr(node, "lineno", 0))

    # imports ---------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            root = _root(alias.name)
            self.modules[(alias.asname or alias.name).split(".", 1)[0]] = root
            self.add(f"import {root}", node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        root = _from_root(node)
        for alias in node.names:
            self.modules[alias.asname or alias.name] = root
        self.add(f"import {root}", node)

    # names and attributes --------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in SYSTEM_NAMES:
            self.add(node.id if node.id.startswith("__") else f"{node.id}()", node)
        elif node.id == "getattr":
            self.add("getattr with a computed name", node)
        elif _DUNDER.fullmatch(node.id) and node.id not in HARMLESS_DUNDERS:
            self.add(node.id, node)
        elif node.id in self.modules:
            self.add(f"import {self.modules[node.id]}", node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if _dangerous(node.attr) or node.attr in ("format_map", "Formatter"):
            self.add(f".{node.attr}", node)
        elif node.attr == "format" and not (
            isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        ):
            self.add(".format on a computed format string", node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr":
            name = node.args[1] if len(node.args) > 1 else None
            constant = isinstance(name, ast.Constant) and isinstance(name.value, str)
            if not (constant and name.value.isidentifier() and not _dangerous(name.value)):
                self.add("getattr with a computed name", node)
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                self.visit(arg)
            return
        if (
            isinstance(func, ast.Attribute)
            and func.attr in ("attrgetter", "methodcaller")
            and not all(
                isinstance(a, ast.Constant) and isinstance(a.value, str) and not _dangerous(a.value)
                for a in node.args[:1]
            )
        ):
            self.add(f"operator.{func.attr} with a computed name", node)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # "{0.__globals__}".format(f), attrgetter("f_back"): attribute names in strings
        if isinstance(node.value, str) and _dangerous_text(node.value):
            self.add(f"the string {_short(node.value)!r}", node)


def _dangerous(name: str) -> bool:
    return name in FRAME_ATTRIBUTES or (
        _DUNDER.fullmatch(name) is not None and name not in HARMLESS_DUNDERS
    )


def _dangerous_text(text: str) -> bool:
    names = {m.group(0) for m in _DUNDER.finditer(text)}
    if names - HARMLESS_DUNDERS:
        return True
    return any(word in FRAME_ATTRIBUTES for word in re.findall(r"[A-Za-z_]\w*", text))


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _without_docstring(node: ast.AST) -> ast.AST:
    body = getattr(node, "body", None)
    if (
        isinstance(body, list)
        and body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        stripped = copy.copy(node)
        stripped.body = body[1:]  # type: ignore[attr-defined]
        return stripped
    return node


def module_imports(tree: ast.Module) -> dict[str, str]:
    """Names the module's top-level imports bind, and the root module of each."""
    bound: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound[(alias.asname or alias.name).split(".", 1)[0]] = _root(alias.name)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                bound[alias.asname or alias.name] = _from_root(node)
    return bound


def used(code: Iterable[ast.AST], modules: dict[str, str]) -> dict[str, int]:
    """The capabilities ``code`` uses (first line of each), names bound to modules by
    ``modules`` counting as uses of those modules."""
    scan = _Scan(modules)
    for node in code:
        scan.visit(_without_docstring(node))
    return scan.found


def find_function(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The top-level function ``name``, or, for ``Owner.name``, the method ``name`` of the
    top-level class ``Owner``."""
    owner, _, name = name.rpartition(".")
    body: list[ast.stmt] = tree.body
    if owner:
        cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner), None)
        body = cls.body if cls is not None else []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return node
    return None


def added_capabilities(original_module: str, patched_module: str, name: str) -> list[str]:
    """What the patched module's function ``name`` (with the imports and helpers the
    patch added) can do that the original module's ``name`` did not: ``["import os (line 3)",
    "open() (line 5)"]``; empty when the patch computes and nothing else.

    A module the patch imports that is neither plain computation (:data:`PURE_MODULES`)
    nor imported by the original module counts too: a new dependency is a new capability."""
    try:
        original = ast.parse(original_module)
        patched = ast.parse(patched_module)
    except SyntaxError as exc:
        return [f"code that does not parse ({exc.msg})"]
    before_fn = find_function(original, name)
    after_fn = find_function(patched, name)
    if after_fn is None:
        return [f"no function `{name}`"]
    original_imports = module_imports(original)
    patched_imports = module_imports(patched)
    before = used([before_fn] if before_fn is not None else [], original_imports)
    # every top-level statement the patch adds or changes: its imports, and the helpers
    # (functions, classes, constants) it brings along with the function
    new_nodes = [
        node
        for node in patched.body
        if ast.unparse(node) not in {ast.unparse(n) for n in original.body}
        # a static method's class changed with it: the method itself is after_fn
        and not (isinstance(node, ast.ClassDef) and node.name == name.rpartition(".")[0])
    ]
    after = used([*new_nodes, after_fn], patched_imports)
    known = set(original_imports.values())
    added = []
    for what, line in sorted(after.items(), key=lambda item: (item[1], item[0])):
        if what in before:
            continue
        if what.startswith("import "):
            module = what[len("import ") :]
            if module in PURE_MODULES:
                continue
            if module not in SYSTEM_MODULES and module in known:
                continue  # a project or third-party module the module already uses
        added.append(f"{what} (line {line})")
    return added
