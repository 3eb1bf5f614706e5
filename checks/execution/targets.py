"""What a test exercises, and the project laid out in the sandbox as it imports.

The test's *targets* (:func:`targets`): the project's own functions and classes it
calls, through the test module's imports. The layout (:func:`layout_args`,
:func:`packaged_view`): pytest's options and the files for a ``src/`` or package-dir
project, so that a test imports the copy it is given (a mutant), never the package as
installed. The trace (:data:`TRACE_CODE`, :func:`traced_lines`): which lines of the
targets' modules the test ran.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence

from referee.checks.arbitration.ast_names import dotted_name

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


def packaged_path(path: str, mapping: dict[str, str]) -> str | None:
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


def import_root(relpath: str, module: str) -> str | None:
    """The folder Python imports ``module`` from, given its file ``relpath``: ``"src"``
    for ``src/pkg/mod.py`` as ``pkg.mod``, ``"lib"`` for ``lib/pkg/mod.py``, ``""`` at the
    project's root; None when the path does not end with the module's own (a package-dir
    mapping that renames it)."""
    stem = relpath.removesuffix(".py").removesuffix("/__init__")
    dotted = module.replace(".", "/")
    if stem == dotted:
        return ""
    if stem.endswith("/" + dotted):
        return stem[: -len(dotted) - 1]
    return None


def laid_out(
    files: dict[str, str], args: list[str], relpath: str, module: str
) -> tuple[dict[str, str], list[str]]:
    """``files`` and pytest's ``args`` for a run of the project's tests in the sandbox
    with a copy of ``module`` (file ``relpath``) it is given, a patch: the folder it is
    imported from first on the path (``src``, ``lib``), or the package-dir layout of
    :func:`layout_args` and :func:`packaged_view`. Without them, a project installed in
    development mode imports its package from the checkout its ``.pth`` names, so the
    patched copy is never the code the test runs."""
    root = import_root(relpath, module)
    if root:
        return files, [*args, "-o", f"pythonpath={root}"]
    layout, mapping = layout_args(files, False) if root is None else ([], {})
    view = {**files, **packaged_view(files, mapping)} if mapping else files
    return view, [*args, *layout]


def packaged_view(files: dict[str, str], mapping: dict[str, str]) -> dict[str, str]:
    """The project's files under a package-dir mapping laid out as Python imports them
    (``checks/x.py`` of ``"pkg.checks" = "checks"`` as ``.referee-packages/pkg/checks/x.py``):
    the sandbox puts that folder first on the path, so a test imports the copy it is
    given — a mutant — never the package as installed. Each file goes with the package
    whose directory holds it most closely."""
    view = {}
    for path, text in files.items():
        if path.endswith(".py") and (target := packaged_path(path, mapping)) is not None:
            view[target] = text
    return view


# The baseline run records which lines of the target modules the test executes; a mutant
# on a line it never reaches cannot be killed, and proves nothing about the test.
TRACE_PLUGIN = "_referee_trace"
TRACE_MARK = "_REFEREE_TRACE_ "
TRACE_CODE = """import json, os, sys, threading

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


def functions_run(text: str, lines: set[int], names: set[str]) -> list[str]:
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


def expected_to_fail(test_text: str, qualname: str) -> bool:
    """Whether the test, or a class that holds it, is marked ``xfail`` (a decorator
    ending in ``xfail``, called or not)."""
    try:
        tree = ast.parse(test_text)
    except (SyntaxError, ValueError, RecursionError):
        return False
    for node in _test_nodes(tree, qualname) or []:
        for decorator in getattr(node, "decorator_list", []):
            called = decorator.func if isinstance(decorator, ast.Call) else decorator
            if (dotted_name(called, calls=True) or "").rsplit(".", 1)[-1] == "xfail":
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
            base = dotted_name(func.value, calls=True)
            if base is None:
                continue
            if base in modules:
                add(modules[base], func.attr)
            elif base in imported:  # `from pkg import mod` then `mod.f()`
                module, name = imported[base]
                add(f"{module}.{name}", func.attr)
                add(module, name)  # a class: `Stack().push(...)` is `Stack`
    return {path: names for path, names in found.items() if names}
