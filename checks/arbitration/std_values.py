"""Standard-library values written as their classes' calls on literals — a docstring
example's output ``datetime.datetime(2003, 9, 25, 0, 0)``, an argument
``dt.timedelta(seconds=1001)`` — read without running anything of the project's.

A docstring's example and the test's call are the same call when their arguments are the
same values; where an argument is no literal but such a value, it is built here, in
referee's process, from its literals by the class's own constructor: the classes of
:data:`REPR_MODULES` compute their value and nothing else (no file, clock, process or
network) — a :class:`fractions.Fraction` from a string excepted, which may expand an
exponent, so it is not built. Each name is resolved through the imports of the text it
is written in (``dt`` is ``datetime`` after ``import datetime as dt``), else as the
module of that name, else as the one class of these modules with that name."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
from collections.abc import Mapping

from referee.checks.arbitration.ast_names import dotted_name
from referee.checks.arbitration.known import ModuleNames

# Standard-library modules whose classes' reprs rebuild their values from literals
REPR_MODULES = ("datetime", "decimal", "fractions", "pathlib", "collections", "uuid", "ipaddress")
_LONGEST_TEXT = 200  # characters of a string an argument built here may hold


@functools.cache
def _classes() -> dict[str, type]:
    """``datetime.timedelta`` → the class, for every public class of :data:`REPR_MODULES`."""
    found: dict[str, type] = {}
    for name in REPR_MODULES:
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            if inspect.isclass(value) and not attribute.startswith("_"):
                found[f"{name}.{attribute}"] = value
    return found


@functools.cache
def _bare() -> dict[str, str]:
    """``timedelta`` → ``datetime.timedelta``: the class names only one module has."""
    seen: dict[str, dict[type, str]] = {}
    for dotted, cls in _classes().items():  # a class another module imports is one class
        seen.setdefault(dotted.rpartition(".")[2], {}).setdefault(cls, dotted)
    return {name: next(iter(found.values())) for name, found in seen.items() if len(found) == 1}


def is_value_repr(node: ast.expr) -> bool:
    """Whether ``node`` is literals and calls of these classes all the way down, written as
    a repr writes them (``datetime.datetime(...)``, ``Decimal('1.5')``) — read as text."""
    if isinstance(node, ast.Call):
        name = dotted_name(node.func) or ""
        return (
            (name in _classes() or name in _bare())
            and all(is_value_repr(a) for a in node.args)
            and all(k.arg is not None and is_value_repr(k.value) for k in node.keywords)
        )
    if isinstance(node, ast.Attribute):  # datetime.timezone.utc
        return (dotted_name(node) or "").partition(".")[0] in REPR_MODULES
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(is_value_repr(item) for item in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and is_value_repr(k) for k in node.keys) and all(
            is_value_repr(v) for v in node.values
        )
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def imported_names(text: str) -> dict[str, str]:
    """What the top-level imports of ``text`` bind (:class:`~referee.checks.arbitration.
    known.ModuleNames`): ``{"dt": "datetime", "timedelta": "datetime.timedelta"}``; {} for
    text that does not parse."""
    return {name: target for name, (target, _) in ModuleNames(text).imported.items()}


def _resolved(name: str, names: Mapping[str, str]) -> str:
    head, _, rest = name.partition(".")
    if head in names:
        target = names[head]
    elif head in REPR_MODULES:
        target = head
    else:
        target = _bare().get(head, head) if not rest else head
    return f"{target}.{rest}" if rest else target


def built_value(node: ast.expr, names: Mapping[str, str]) -> object:
    """The value ``node`` writes — a literal, or these classes called on literals
    (``dt.timedelta(seconds=1001)``) — built; ValueError for anything else."""
    if isinstance(node, ast.Call):
        cls = _classes().get(_resolved(dotted_name(node.func) or "", names))
        if cls is None or any(k.arg is None for k in node.keywords):
            raise ValueError("no value class of the standard library")
        args = [built_value(a, names) for a in node.args]
        kwargs = {str(k.arg): built_value(k.value, names) for k in node.keywords}
        values = [*args, *kwargs.values()]
        if any(isinstance(v, str) and len(v) > _LONGEST_TEXT for v in values) or (
            cls.__module__ == "fractions" and any(isinstance(v, str) for v in values)
        ):
            raise ValueError("not built here")
        try:
            return cls(*args, **kwargs)
        except Exception as exc:  # the constructor refused its arguments
            raise ValueError(str(exc)) from None
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [built_value(item, names) for item in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    return ast.literal_eval(node)


def definitions_for(node: ast.expr, names: Mapping[str, str]) -> str:
    """The imports that bind, where ``node`` is evaluated on its own, the names its values
    are built by as ``names`` (or the fallbacks of :func:`built_value`) bind them:
    ``import datetime as dt``, ``from datetime import timedelta``."""
    lines: dict[str, None] = {}
    for sub in ast.walk(node):
        if not isinstance(sub, (ast.Name, ast.Attribute)):
            continue
        head = (dotted_name(sub) or "").partition(".")[0]
        target = _resolved(head, names) if head else ""
        if target in REPR_MODULES:
            lines.setdefault(f"import {target}" + (f" as {head}" if head != target else ""))
        elif target in _classes():
            module, _, name = target.rpartition(".")
            alias = f" as {head}" if head != name else ""
            lines.setdefault(f"from {module} import {name}{alias}")
    return "".join(f"{line}\n" for line in lines)
