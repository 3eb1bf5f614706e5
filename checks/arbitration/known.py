"""Arguments that are no literals but are known without running the test: a name of a
built-in or an exception (``f(xs, LookupError)``, ``compose(str, inc)``); a function or
class of the standard library the test module imports, or one it defines itself (at its
top level, or once in the test) that needs nothing but built-ins and the standard library;
a lambda of the same kind; an object of a standard-library value class built from known
arguments (``dt.timedelta(seconds=1)``, ``Decimal("1.0")``, ``Path("a/b")``), or of a class
of the project's the test module imports (``Command("git push", "")``:
:mod:`~referee.checks.arbitration.project_objects`).

Every source of truth is called with such an argument in the sandbox, with no test module
beside it: what the argument's text needs — the test module's imports of the names it uses
and the definitions it names — travels with the call as its *definitions*
(:func:`with_definitions`). Any other name the test module imports from the project or
another distribution cannot travel: the oracles' sandbox holds the standard library only,
and the project's files only for a call that builds the project's objects."""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import inspect
import os
import sys
import sysconfig
from collections import Counter
from functools import cache

from referee.checks.arbitration.project_objects import FORM, current, project_class
from referee.checks.arbitration.sites import NotIsolated, immutable, round_trips
from referee.checks.nodes import excerpt

# Built-ins whose value depends on the run that calls them, or that reach outside it: not
# an argument every source of truth sees the same.
_UNSTABLE_BUILTINS = frozenset(
    {
        "id", "hash", "input", "open", "print", "breakpoint", "exec", "eval", "compile",
        "__import__", "globals", "locals", "vars", "dir", "help", "exit", "quit",
        "copyright", "credits", "license", "__build_class__", "__loader__", "__spec__",
    }
)  # fmt: skip
# Built-in classes an argument may not be built from: their objects are identities or
# descriptors, not values (``object()`` is equal to nothing, its repr is an address).
_NO_VALUE_CLASSES = frozenset(
    {"object", "type", "super", "property", "classmethod", "staticmethod", "memoryview"}
)
# Standard-library modules whose classes build plain values from their arguments — no
# clock, no randomness, no file, process or network — an argument may be built from.
VALUE_MODULES = frozenset(
    {
        "datetime", "decimal", "fractions", "pathlib", "collections", "uuid", "ipaddress",
        "typing", "functools", "operator", "array", "numbers",
    }
)  # fmt: skip
# Where a standard-library value that is no function or class (``timezone.utc``,
# ``math.pi``) is the same in every run: not ``os.environ`` or ``sys.argv``.
_CONSTANT_MODULES = VALUE_MODULES | {"math", "cmath", "string"}
# Standard-library modules never imported here to look at a name (importing them acts).
_NOT_IMPORTED = frozenset(
    {
        "antigravity", "this", "tkinter", "turtle", "turtledemo", "idlelib", "__hello__",
        "__phello__", "webbrowser", "pydoc", "ensurepip", "venv", "lib2to3", "test",
    }
)  # fmt: skip


def with_definitions(call: str, definitions: str) -> str:
    """``call`` as an expression that first runs ``definitions`` (the imports and
    definitions its arguments need) in a copy of the namespace it is evaluated in: the
    program's own names (an oracle's helper called like the test's function) are never
    replaced, and the arguments see the test module's."""
    if not definitions:
        return call
    return (
        f"(lambda _referee_ns: (exec({definitions!r}, _referee_ns), "
        f"eval({call!r}, _referee_ns))[1])(dict(globals()))"
    )


class ModuleNames:
    """What the top-level names of a test module stand for, read from its text: its
    imports and its definitions, each bound once."""

    def __init__(self, text: str) -> None:
        self.text = text
        try:
            self.tree: ast.Module | None = ast.parse(text)
        except (SyntaxError, ValueError):
            self.tree = None
        self.bound: Counter[str] = Counter()
        self.imported: dict[str, tuple[str, str]] = {}  # name -> (dotted target, statement)
        self.defined: dict[str, ast.FunctionDef | ast.ClassDef] = {}
        for stmt in _top_level(self.tree.body if self.tree is not None else []):
            self._read(stmt)

    def _read(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                local = alias.asname or alias.name.partition(".")[0]
                target = alias.name if alias.asname else local
                self.bound[local] += 1
                self.imported[local] = (target, ast.unparse(ast.Import(names=[alias])))
        elif isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                local = alias.asname or alias.name
                self.bound[local] += 1
                if stmt.level == 0 and stmt.module and alias.name != "*":
                    single = ast.ImportFrom(module=stmt.module, names=[alias], level=0)
                    self.imported[local] = (f"{stmt.module}.{alias.name}", ast.unparse(single))
        elif isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            self.bound[stmt.name] += 1
            self.defined[stmt.name] = stmt
        else:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                    self.bound[node.id] += 1
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self.bound[node.name] += 1


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of a module's top level, those inside its ``if``/``try`` blocks
    included (``try: import x`` binds a top-level name too)."""
    found: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, (ast.If, ast.Try, ast.With)):
            parts = [stmt.body, getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])]
            parts += [h.body for h in getattr(stmt, "handlers", [])]
            for part in parts:
                found.extend(_top_level(part))
            if isinstance(stmt, ast.With):
                found.append(stmt)  # its targets bind names too
        else:
            found.append(stmt)
    return found


class Known:
    """Reads arguments as known values: each reading adds the definitions they need
    (:attr:`definitions`, in order) and says its form."""

    def __init__(
        self,
        names: ModuleNames,
        nested: dict[str, str] | None = None,
        test_bound: frozenset[str] = frozenset(),
    ) -> None:
        self.names = names
        self.nested = nested or {}  # a function the test defines once: its text
        self.test_bound = test_bound  # every name the test binds: a lambda's may be one
        self.definitions: dict[str, None] = {}
        self._visiting: set[str] = set()  # definitions being read: one naming itself
        self.project_classes: set[str] = set()  # the project's classes arguments build

    def text(self) -> str:
        return "".join(f"{d}\n" for d in self.definitions)

    # ------------------------------------------------------------------ names

    def name(self, dotted: str, shown: str, local: bool = True) -> str | None:
        """The form of an argument that is a (dotted) name, its definitions added; None
        when the name is nothing known here; NotIsolated with the reason when it is a
        name that cannot travel to the sandbox. ``local``: the name is read in the test's
        scope (where the functions it defines are seen), not the module's."""
        head, _, rest = dotted.partition(".")
        if local and head in self.nested and not rest:
            self._define_text(self.nested[head], head, shown, local=True)
            return "function-argument"
        count = self.names.bound[head]
        if count == 0:
            if _stable_builtin(head) and (not rest or _builtin_callable(dotted)):
                return "builtin-argument"  # abs, LookupError, str.upper
            return None
        if count > 1:
            return None
        if head in self.names.imported:
            obj = self._imported(head, rest, shown)
            if callable(obj):
                return "function-argument"
            if self.names.imported[head][0].partition(".")[0] in _CONSTANT_MODULES:
                return "constructed-argument"  # dt.timezone.utc, math.pi: values as built
            raise NotIsolated(
                f"cannot isolate the call under test: an argument `{excerpt(shown)}` is "
                "a standard-library value that is no function or class, and may differ "
                "between the test's run and the sandbox's"
            )
        definition = self.names.defined.get(head)
        if definition is not None and not rest:
            self._define(definition, shown)
            return "function-argument"
        return None

    def constructor(self, dotted: str, shown: str) -> bool:
        """Whether ``dotted`` names a class an argument may be built from — a built-in
        value class or exception, or a class of a standard-library value module the test
        module imports — its definitions added. NotIsolated when it names a class the
        sandbox cannot import."""
        head, _, rest = dotted.partition(".")
        count = self.names.bound[head]
        if count == 0 and not rest:
            obj = getattr(builtins, head, None)
            return (
                inspect.isclass(obj) and head not in _NO_VALUE_CLASSES and not head.startswith("_")
            )
        if count != 1 or head not in self.names.imported:
            return False
        target = self.names.imported[head][0]
        root = target.partition(".")[0]
        project = root not in sys.stdlib_module_names  # refused with its own reason
        if project and not rest and self._project_class(head):
            return True
        obj = self._imported(head, rest, shown) if root in VALUE_MODULES or project else None
        if not inspect.isclass(obj):
            raise NotIsolated(
                f"cannot isolate the call under test: an argument `{excerpt(shown)}` is "
                f"built by `{dotted}`, which is no value class of the standard library "
                f"({', '.join(sorted(VALUE_MODULES))})"
            )
        return True

    def constructed_form(self, dotted: str) -> str:
        """The form of an argument built by ``dotted`` (:meth:`constructor`)."""
        return FORM if dotted in self.project_classes else "constructed-argument"

    def _project_class(self, head: str) -> bool:
        """Whether ``head`` is a class the test module imports from the project, read
        statically (:func:`~referee.checks.arbitration.project_objects.project_class`):
        its import joins the definitions, which then run with the project's files."""
        view = current()
        target, statement = self.names.imported[head]
        module, _, name = target.rpartition(".")
        if view is None or not statement.startswith("from") or not module:
            return False
        if project_class(view.root, module, name) is None:
            return False
        self.project_classes.add(head)
        self.definitions.setdefault(statement)
        return True

    def _imported(self, head: str, rest: str, shown: str) -> object:
        target, statement = self.names.imported[head]
        root = target.partition(".")[0]
        if root not in sys.stdlib_module_names or root in _NOT_IMPORTED:
            origin = target.rpartition(".")[0] if statement.startswith("from") else target
            raise NotIsolated(
                f"cannot isolate the call under test: an argument `{excerpt(shown)}` uses "
                f"`{head}`, which the test module imports from `{origin}`; "
                "the oracles run in a sandbox that holds the standard library only"
            )
        obj = _resolve(f"{target}.{rest}" if rest else target)
        if obj is _MISSING:
            raise NotIsolated(
                f"cannot isolate the call under test: an argument `{excerpt(shown)}` names "
                f"`{head}.{rest}` which the standard library here does not have"
            )
        self.definitions.setdefault(statement)
        return obj

    # ------------------------------------------------------------- definitions

    def lambda_(self, text: str) -> str:
        """The form of a lambda argument whose free names are known, its definitions
        added; NotIsolated otherwise."""
        try:
            tree = ast.parse(f"({text})", mode="eval")
        except SyntaxError:
            raise NotIsolated(f"cannot read the argument `{excerpt(text)}`") from None
        self._free_names(tree, text, local=True)
        return "function-argument"

    def _define(self, node: ast.FunctionDef | ast.ClassDef, shown: str) -> None:
        text = ast.get_source_segment(self.names.text, node)
        if node.decorator_list or text is None:
            raise NotIsolated(
                f"cannot isolate the call under test: an argument `{excerpt(shown)}` is a "
                f"decorated {'class' if isinstance(node, ast.ClassDef) else 'function'} of "
                "the test module; only plain definitions are carried to the sandbox"
            )
        self._define_text(text, node.name, shown, local=False)

    def _define_text(self, text: str, name: str, shown: str, local: bool) -> None:
        marker = f"{name}\0{text}"
        if text in self.definitions or marker in self._visiting:
            return
        self._visiting.add(marker)
        try:
            self._free_names(ast.parse(text), shown, local)
        except SyntaxError:
            raise NotIsolated(f"cannot read the definition of `{name}`") from None
        finally:
            self._visiting.discard(marker)
        self.definitions.setdefault(text)

    def _free_names(self, tree: ast.AST, shown: str, local: bool) -> None:
        """Adds what each free name of ``tree`` needs; NotIsolated for one that is no
        built-in, standard-library import or plain definition of the test module. In the
        test's scope (``local``: a lambda, a function the test defines) a name the test
        binds is its local, whatever the module binds."""
        bound = _bound_names(tree)
        loaded = {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        for free in sorted(loaded - bound):
            if local and free in self.nested:
                self._define_text(self.nested[free], free, shown, local=True)
                continue
            if local and free in self.test_bound:
                raise NotIsolated(
                    f"cannot isolate the call under test: an argument `{excerpt(shown)}` "
                    f"uses `{free}`, a local of the test: what it holds is not read here"
                )
            if self.names.bound[free] == 0 and hasattr(builtins, free):
                continue
            if self.names.bound[free] == 1 and (
                free in self.names.imported or free in self.names.defined
            ):
                self.name(free, shown, local=False)
                continue
            raise NotIsolated(
                f"cannot isolate the call under test: an argument `{excerpt(shown)}` uses "
                f"`{free}`, which is no built-in, standard-library import or plain definition "
                "of the test module"
            )


_MISSING = object()


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name ``tree`` binds anywhere: parameters, assignment targets, definitions,
    imports, handlers (an over-reading: a name bound in an inner scope only is taken for
    bound, and a program that needs it fails to run, which decides nothing)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound


def _stable_builtin(name: str) -> bool:
    return (
        hasattr(builtins, name)
        and not name.startswith("_")
        and name not in _UNSTABLE_BUILTINS
        and callable(getattr(builtins, name))
    )


def _builtin_callable(dotted: str) -> bool:
    """Whether ``dotted`` (``str.upper``) is a callable attribute of a built-in class."""
    obj: object = builtins
    for attr in dotted.split("."):
        if attr.startswith("_"):
            return False
        obj = getattr(obj, attr, _MISSING)
    return obj is not _MISSING and callable(obj)


@cache
def _from_stdlib(root: str) -> bool:
    """Whether the module ``root`` would be imported from the standard library's own
    directories (or is built in): never a file of the project that shadows its name,
    which would run here, outside the sandbox."""
    if root in sys.modules:
        origin = getattr(sys.modules[root], "__file__", None)
    else:
        try:
            spec = importlib.util.find_spec(root)
        except (ImportError, ValueError):
            return False
        if spec is None:
            return False
        origin = spec.origin if spec.origin not in ("built-in", "frozen") else None
    if origin is None:
        return True  # built into the interpreter
    stdlib = {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")}
    path = os.path.realpath(origin)
    return any(path.startswith(os.path.realpath(d) + os.sep) for d in stdlib) and (
        "site-packages" not in path and "dist-packages" not in path
    )


@cache
def _resolve(dotted: str) -> object:
    """The object a dotted standard-library name stands for, imported here; a missing
    one is ``_MISSING``."""
    parts = dotted.split(".")
    if not _from_stdlib(parts[0]):
        return _MISSING
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        except Exception:  # a module that fails to import is not known
            return _MISSING
        for attr in parts[cut:]:
            obj = getattr(obj, attr, _MISSING)
            if obj is _MISSING:
                return _MISSING
        return obj
    return _MISSING


def module_constants(tree: ast.Module) -> dict[str, tuple[object, int, int]]:
    """The test module's constants: a name its top level binds once, to an immutable
    literal (``OUTPUT = "fatal: no upstream"``), and nothing else in the module binds (no
    second assignment, loop target, parameter, ``global``, import, ``from m import *``) —
    (its value, the assignment's first and last lines). The rules the failing call's
    argument is read by (form ``module-constant``: :mod:`~referee.checks.arbitration.
    bindings`)."""
    bound: Counter[str] = Counter()  # anywhere in the module, as the failing call's are
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound[node.id] += 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update({n: 2 for n in node.names})
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound[node.name] += 1
        elif isinstance(node, ast.alias):
            if node.name == "*":
                return {}  # ``from m import *`` may bind any of them again
            bound[(node.asname or node.name).partition(".")[0]] += 1
        elif isinstance(node, ast.arg):
            bound[node.arg] += 1
    found: dict[str, tuple[object, int, int]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        elif isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        else:
            continue
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            continue
        name = targets[0].id
        if bound[name] != 1:
            continue
        try:
            literal = _literal_of(value)
        except ValueError:
            continue
        if round_trips(literal) and immutable(literal):
            found[name] = (literal, stmt.lineno, stmt.end_lineno or stmt.lineno)
    return found


def _literal_of(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise ValueError(str(exc)) from None
