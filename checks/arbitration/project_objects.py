"""Arguments that are objects of the project's own classes, built from known arguments
(``match(Command("git push", "fatal: no upstream"))``): the form ``project-object-argument``.

The class is found without importing anything here: the test module's ``from pkg.types
import Command`` is read as a file of the project (``pkg/types.py``, ``src/pkg/...``) whose
top level defines ``class Command`` (re-exports followed a few steps). Every source of
truth then runs with the project's files (a copy, in the sandbox's own directory) and its
interpreter's site-packages, as candidate fixes do — only for such a call: oracles of
plain literal calls keep the standard-library-only sandbox.

An oracle must never compute its value by calling the code under test. Its program is
read before it runs (:func:`reads_code_under_test`): one that imports the project's
package or module under test, or reaches for modules, frames, ``exec``/``eval``/``open``,
is refused, counted as an oracle that failed to run. In the sandbox the program runs
after :func:`guard`, which replaces the function under test, wherever a loaded module
holds it, by a stub that raises: an indirect call fails too."""

from __future__ import annotations

import ast
import contextlib
import copy
import re
import sys
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORM = "project-object-argument"
_SOURCE_DIRS = ("", "src", "lib")  # where a project's packages are found
_HOPS = 4  # re-exports followed from the imported module to the class


@dataclass(frozen=True)
class ProjectView:
    """What a run that builds the project's objects needs: the project's root (to read
    its classes), its files (copied into the sandbox) and its interpreter."""

    root: Path
    files: Callable[[], dict[str, str]]
    python: Callable[[], Any]  # the project's referee.checks.interpreter.Interpreter


_VIEW: ContextVar[ProjectView | None] = ContextVar("referee_project_view", default=None)


@contextlib.contextmanager
def viewing(view: ProjectView) -> Iterator[None]:
    """Within the block, arguments may be the project's objects (:func:`current`)."""
    token = _VIEW.set(view)
    try:
        yield
    finally:
        _VIEW.reset(token)


def current() -> ProjectView | None:
    return _VIEW.get()


# ------------------------------------------------------------------- the class, statically


def module_file(root: Path, module: str) -> Path | None:
    parts = module.split(".")
    for base in _SOURCE_DIRS:
        where = root.joinpath(base, *parts) if base else root.joinpath(*parts)
        for candidate in (where.with_suffix(".py"), where / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def project_class(root: Path, module: str, name: str) -> ast.ClassDef | None:
    """The top-level ``class name`` that ``from module import name`` reaches in the
    project's files under ``root`` — following ``from x import name`` re-exports, each
    under the name it has there (the same class imported twice, ``from .a import C`` then
    ``from .b import C``, is one class) — or None (a function, a module, a name bound by
    anything else, a file outside it)."""
    found = _class_at(root, module, name, _HOPS)
    return found[1] if found is not None else None


def _class_at(
    root: Path, module: str, name: str, hops: int
) -> tuple[tuple[Path, int], ast.ClassDef] | None:
    """((its file, its line), the class) :func:`project_class` reaches, at most ``hops``
    re-exports on."""
    path = module_file(root, module) if hops > 0 else None
    if path is None:
        return None
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
    classes = [s for s in tree.body if isinstance(s, ast.ClassDef) and s.name == name]
    onward: list[tuple[str | None, str]] = []  # (module, the name there) of each re-export
    others = 0
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name:
            others += 1
        elif isinstance(stmt, ast.ImportFrom):
            onward += [
                (_absolute(module, path, stmt, alias.name), alias.name)
                for alias in stmt.names
                if (alias.asname or alias.name) == name
            ]
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Import)):
            targets = [n for n in ast.walk(stmt) if isinstance(n, ast.Name)]
            aliases = getattr(stmt, "names", [])
            if any(t.id == name for t in targets) or any(
                (a.asname or a.name) == name for a in aliases
            ):
                others += 1
    if others or len(classes) + bool(onward) != 1 or len(classes) > 1:
        return None
    if classes:
        return (path, classes[0].lineno), classes[0]
    reached = [_class_at(root, m, n, hops - 1) if m else None for m, n in onward]
    first = reached[0]
    if first is None or any(r is None or r[0] != first[0] for r in reached[1:]):
        return None
    return first


def _absolute(module: str, path: Path, stmt: ast.ImportFrom, name: str) -> str | None:
    """The module ``from ... import name`` reads, absolute; None for a submodule import
    (``from pkg import types``) or an unreadable one."""
    if stmt.level == 0:
        return stmt.module
    package = module.split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    if stmt.level > 1:
        package = package[: len(package) - (stmt.level - 1)]
    return ".".join([*package, *([stmt.module] if stmt.module else [])]) or None


def class_outline(cls: ast.ClassDef) -> str:
    """The class as an oracle sees an argument of it: decorators, bases, docstring,
    class-level fields, its constructor's signature and docstring — no body — and the
    attributes the constructor sets (``self.script = ...``): an oracle reads the object's
    data; its methods are the project's code (:func:`seal`)."""
    body: list[ast.stmt] = []
    for index, stmt in enumerate(cls.body):
        if (index == 0 and _is_docstring(stmt)) or isinstance(stmt, (ast.AnnAssign, ast.Assign)):
            body.append(stmt)
        elif isinstance(stmt, ast.FunctionDef) and stmt.name in accessors(cls):
            body.append(_signature(stmt))
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in (
            "__init__",
            "__new__",
        ):
            stub = copy.copy(stmt)
            kept = [stmt.body[0]] if stmt.body and _is_docstring(stmt.body[0]) else []
            attributes = sorted(
                {
                    t.attr
                    for t in ast.walk(stmt)
                    if isinstance(t, ast.Attribute)
                    and isinstance(t.ctx, ast.Store)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                    and not t.attr.startswith("_")
                }
            )
            sets = [ast.Expr(ast.Constant(f"sets: {', '.join(attributes)}"))] if attributes else []
            stub.body = [*kept, *sets, ast.Expr(ast.Constant(...))]
            body.append(stub)
    outline = copy.copy(cls)
    outline.body = body or [ast.Expr(ast.Constant(...))]
    return ast.unparse(ast.fix_missing_locations(outline))


def _signature(function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.stmt:
    stub = copy.copy(function)
    kept = [function.body[0]] if function.body and _is_docstring(function.body[0]) else []
    stub.body = [*kept, ast.Expr(ast.Constant(...))]
    return stub


def accessors(cls: ast.ClassDef) -> frozenset[str]:
    """The class's plain accessors: properties whose whole body (after a docstring) is
    ``return self.attribute`` — the object's data under another name
    (``body`` reading ``self._body``), left to the oracles by :func:`seal`."""
    found = set()
    for stmt in cls.body:
        if not isinstance(stmt, ast.FunctionDef) or len(stmt.decorator_list) != 1:
            continue
        decorator = stmt.decorator_list[0]
        body = stmt.body[1:] if stmt.body and _is_docstring(stmt.body[0]) else stmt.body
        if (
            isinstance(decorator, ast.Name)
            and decorator.id == "property"
            and len(body) == 1
            and isinstance(body[0], ast.Return)
            and isinstance(body[0].value, ast.Attribute)
            and isinstance(body[0].value.value, ast.Name)
            and body[0].value.value.id == "self"
        ):
            found.add(stmt.name)
    return frozenset(found)


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _project_imports(definitions: str) -> list[tuple[str, str]]:
    """(module, name) of each ``from module import name`` of ``definitions`` that is no
    standard library's."""
    try:
        tree = ast.parse(definitions)
    except SyntaxError:
        return []
    found = []
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.ImportFrom)
            and stmt.module
            and stmt.level == 0
            and stmt.module.partition(".")[0] not in sys.stdlib_module_names
        ):
            found.extend((stmt.module, alias.name) for alias in stmt.names)
    return found


def needs_project(definitions: str) -> bool:
    """Whether the call's definitions import from the project: its sources of truth run
    with the project's files."""
    return bool(_project_imports(definitions))


def _accessors(definitions: str, root: Path) -> dict[str, list[str]]:
    kept = {}
    for module, name in _project_imports(definitions):
        cls = project_class(root, module, name)
        if cls is not None:
            kept[f"{module}:{name}"] = sorted(accessors(cls))
    return kept


def class_outlines(definitions: str, root: Path) -> list[str]:
    """The outlines of the project's classes the call's arguments are built from."""
    outlines = []
    for module, name in _project_imports(definitions):
        cls = project_class(root, module, name)
        if cls is not None:
            outlines.append(class_outline(cls))
    return outlines


# ------------------------------------------------------------ the oracle never calls it

# Names whose use reaches code or data an oracle must not: modules, frames, other code.
_REFUSED_NAMES = frozenset(
    {"__import__", "exec", "eval", "compile", "open", "globals", "locals", "vars",
     "breakpoint", "__builtins__"}
)  # fmt: skip
_REFUSED_MODULES = frozenset(
    {"importlib", "imp", "runpy", "pkgutil", "inspect", "gc", "ctypes", "sys", "builtins",
     "code", "codeop", "zipimport", "subprocess", "marshal", "pickle"}
)  # fmt: skip
_REFUSED_ATTRIBUTES = frozenset(
    {"modules", "__globals__", "__code__", "__closure__", "__subclasses__", "__dict__",
     "__module__", "__builtins__", "f_globals", "f_back", "gi_frame", "cr_frame",
     "tb_frame", "__loader__", "__spec__", "__wrapped__", "__func__", "__self__"}
)  # fmt: skip


def reads_code_under_test(
    program: str, module: str, packages: frozenset[str], preamble: str = ""
) -> str | None:
    """Why an oracle's program may reach the code under test — it imports ``module``
    (the function's), one of the project's ``packages``, a module that loads or inspects
    code, or uses ``exec``/``eval``/``open``/``__import__`` and the like — or None. The
    ``preamble`` put in front of it (the module's standard-library imports) is not the
    model's: its statements are not read."""
    try:
        tree = ast.parse(program)
        given = {ast.dump(stmt) for stmt in ast.parse(preamble).body}
    except SyntaxError:
        return None  # it fails to run anyway
    project = packages | {module.partition(".")[0]}
    own = [stmt for stmt in tree.body if ast.dump(stmt) not in given]
    for node in (n for stmt in own for n in ast.walk(stmt)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if node.level == 0
                else ["."]
            )
            for name in names:
                root = name.partition(".")[0]
                if name == "." or root in project or root in _REFUSED_MODULES:
                    return f"imports `{name}`"
        elif isinstance(node, ast.Name) and node.id in _REFUSED_NAMES:
            return f"uses `{node.id}`"
        elif isinstance(node, ast.Attribute) and node.attr in _REFUSED_ATTRIBUTES:
            return f"uses `.{node.attr}`"
    return None


_GUARD = """\
import sys as _referee_sys, os as _referee_os
_referee_sys.path[:0] = [_p for _p in (_referee_os.getcwd(), \
_referee_os.path.join(_referee_os.getcwd(), "src"), \
_referee_os.path.join(_referee_os.getcwd(), "lib")) if _referee_os.path.isdir(_p)]
def _referee_guard(module, owner, name):
    import importlib
    try:
        found = importlib.import_module(module)
        holder = getattr(found, owner) if owner else found
        real = holder.__dict__[name] if owner else getattr(holder, name)
    except BaseException:
        return
    class ReadsTheCodeUnderTest(BaseException):  # no `except Exception` hides it
        pass
    def _referee_stub(*args, **kwargs):
        raise ReadsTheCodeUnderTest("the oracle called the function under test")
    if owner:
        setattr(holder, name, _referee_stub)
    for loaded in list(_referee_sys.modules.values()):
        try:
            names = [k for k, v in vars(loaded).items() if v is real]
            for key in names:
                setattr(loaded, key, _referee_stub)
        except BaseException:
            pass
_referee_guard({module!r}, {owner!r}, {name!r})
del _referee_guard, _referee_sys, _referee_os
"""


def guard(module: str, qualname: str) -> str:
    """The code an oracle's program runs after, with the project's files: the project's
    source directories importable, and the function under test (``qualname`` of
    ``module``) replaced wherever a loaded module holds it by a stub that raises."""
    owner, _, name = qualname.rpartition(".")
    return _GUARD.format(module=module, owner=owner, name=name)


_SEAL = """
def _referee_sealing(function, classes, keep):
    import functools, importlib
    done = []
    class ReadsTheCodeUnderTest(BaseException):  # no `except Exception` hides it
        pass
    def stub(*args, **kwargs):
        raise ReadsTheCodeUnderTest("the oracle called a method of the project's class")
    def seal():
        for module, name in classes:
            try:
                cls = getattr(importlib.import_module(module), name)
            except BaseException:
                continue
            kept = keep.get(module + ":" + name, ())
            for klass in cls.__mro__[:-1]:
                for attr, value in list(vars(klass).items()):
                    if (attr.startswith("__") and attr.endswith("__")) or attr in kept:
                        continue
                    if isinstance(value, (property, functools.cached_property)):
                        setattr(cls, attr, property(stub))
                    elif isinstance(value, (staticmethod, classmethod)) or (
                        callable(value) and not isinstance(value, type)
                    ):
                        setattr(cls, attr, stub)
    def sealed(*args, **kwargs):
        if not done:
            done.append(seal())
        return function(*args, **kwargs)
    return sealed
if callable(globals().get({name!r})):
    {name} = _referee_sealing({name}, {classes!r}, {keep!r})
del _referee_sealing
"""


def seal(
    name: str, classes: list[tuple[str, str]], keep: dict[str, list[str]] | None = None
) -> str:
    """The code run after an oracle's program: its function ``name``, once called — the
    arguments built — finds every method and property of the project's ``classes``
    (module, name) replaced by a stub that raises. The objects' data is the test's; their
    behaviour is the project's code, which an oracle must not borrow: a bug there would
    be in its value as in the code's. ``keep``: each class's (``module:name``) plain
    accessors (:func:`accessors`), left as they are."""
    if not name.isidentifier() or not classes:
        return ""
    return _SEAL.format(name=name, classes=classes, keep=keep or {})


_FUTURE = re.compile(r"^from __future__ import [^\n]*\n?", re.MULTILINE)


def guarded(guard_text: str, program: str, seal_text: str = "") -> str:
    """``program`` run after ``guard_text`` and before ``seal_text``, its ``from
    __future__`` imports kept first."""
    futures = "".join(m.group(0).rstrip("\n") + "\n" for m in _FUTURE.finditer(program))
    return futures + guard_text + _FUTURE.sub("", program) + "\n" + seal_text


def project_packages(definitions: str) -> frozenset[str]:
    """The top-level packages of the project's imports in ``definitions``."""
    return frozenset(m.partition(".")[0] for m, _ in _project_imports(definitions))


# ----------------------------------------------------------------- the oracles' runs


@dataclass(frozen=True)
class ProjectRun:
    """How oracles run on a call that builds the project's objects
    (:mod:`~referee.checks.arbitration.project_objects`): after the guard that stubs the
    function under test, with the project's files and interpreter; shown the outlines of
    the arguments' classes; refused when they import the project."""

    guard: str
    seal: str
    packages: frozenset[str]
    files: dict[str, str]
    python: Any
    outlines: tuple[str, ...]


def project_run(module: str, qualname: str, definitions: str, name: str = "") -> ProjectRun | None:
    """The project's side of the oracles' runs, when the call's definitions import from
    the project and arbitration runs with its view; else None (the standard library
    only: such a call's oracles fail to run). ``name``: the oracle's function."""
    view = current()
    if view is None or not needs_project(definitions):
        return None
    return ProjectRun(
        guard=guard(module, qualname),
        seal=seal(name, _project_imports(definitions), _accessors(definitions, view.root)),
        packages=project_packages(definitions),
        files=view.files(),
        python=view.python(),
        outlines=tuple(class_outlines(definitions, view.root)),
    )


def with_outlines(
    messages: list[dict[str, str]], project: ProjectRun | None
) -> list[dict[str, str]]:
    """The oracle prompt with the classes of the call's arguments shown (signatures and
    docstrings, no body) after the last question: what ``command.script`` is."""
    if project is None or not project.outlines:
        return messages
    shown = "\n\n".join(project.outlines)
    more = (
        "The arguments are objects of these classes of the project (bodies left out); "
        "the function receives them as built and reads their attributes; their methods "
        "and properties are not available, and it must not import the project:\n"
        f"```python\n{shown}\n```"
    )
    *before, last = messages
    return [*before, {**last, "content": f"{last['content']}\n\n{more}"}]
