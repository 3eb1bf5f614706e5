"""A method's calls as the suite writes them (:mod:`~referee.checks.arbitration.
suite_reading`, with an ``owner``): the class the method belongs to, and the objects a test
builds from it once — bound to a name in the test, to an attribute in its class's
``setUp``, or returned by a fixture it takes — read at the one line that may take them as
built."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

from referee.checks.arbitration.ast_names import dotted_name
from referee.checks.arbitration.fixture_rule import fixture_value
from referee.checks.arbitration.reaching import assigned_value, readers


class Owner(NamedTuple):
    """The class of a method whose assertions are read: its name, the names a test module
    calls it by, and the method's form (``method``: on an object built from the class,
    read as the oracle's ``m(init_args, init_kwargs, ...)``; ``classmethod``)."""

    name: str
    names: frozenset[str]
    form: str


def built_objects(
    function: ast.FunctionDef | ast.AsyncFunctionDef, is_class: Callable[[ast.expr], bool]
) -> dict[str, list[tuple[ast.Call, int, tuple[int, ...]]]]:
    """The names ``function`` binds at its top level to a building of the method's class
    (``t = Table([[1]])``): each building with its line and the lines of the assertions
    that may take the object as built — the next statement that reads the name, and each
    after it while the ones before only looked at it
    (:func:`~referee.checks.arbitration.reaching.readers`, the one rule the failing call's
    reader applies too). A name built again (``t = Table(...)`` before each assertion) has
    a building for each."""
    found: dict[str, list[tuple[ast.Call, int, tuple[int, ...]]]] = {}
    for index, stmt in enumerate(function.body):
        names = [t.id for t in _targets(stmt)]
        value = assigned_value(stmt, names[0]) if len(names) == 1 else None
        if not (isinstance(value, ast.Call) and is_class(value.func)):
            continue
        lines = tuple(line for _, line, _ in readers(function, names[0], index))
        if lines:
            found.setdefault(names[0], []).append((value, stmt.lineno, lines))
    return found


def _targets(stmt: ast.stmt) -> list[ast.Name]:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, ast.AnnAssign):
        target = stmt.target
    else:
        return []
    return [target] if isinstance(target, ast.Name) else []


def self_attribute(node: ast.AST, name: str | None = None) -> str | None:
    """``x`` for ``self.x`` (or ``cls.x``), when ``name`` is None or ``x``."""
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in ("self", "cls")
        and (name is None or node.attr == name)
    ):
        return node.attr
    return None


def set_up_objects(
    cls: ast.ClassDef, is_class: Callable[[ast.expr], bool]
) -> dict[str, tuple[ast.Call, int]]:
    """The attributes a test class's ``setUp`` (or ``setup_method``) binds to a building of
    the method's class, as :mod:`~referee.checks.arbitration.set_up` reads them for the
    failing call: bound once in the whole class (no other assignment, ``del`` or
    ``setattr``), by a statement of ``setUp``'s own body after which nothing mentions it,
    calls ``super()`` or a method of ``self``. Each with the building and its line."""
    stored: Counter[str] = Counter()
    for node in ast.walk(cls):
        name = self_attribute(node)
        if name is not None and not isinstance(node.ctx, ast.Load):  # type: ignore[attr-defined]
            stored[name] += 1
        if isinstance(node, ast.Call) and dotted_name(node.func) == "setattr":
            return {}
    set_up = next(
        (
            n
            for n in cls.body
            if isinstance(n, ast.FunctionDef) and n.name in ("setUp", "setup_method")
        ),
        None,
    )
    if set_up is None:
        return {}
    found: dict[str, tuple[ast.Call, int]] = {}
    for index, stmt in enumerate(set_up.body):
        if not (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.value, ast.Call)
            and is_class(stmt.value.func)
        ):
            continue
        name = self_attribute(stmt.targets[0])
        if name is None or stored[name] != 1:
            continue
        after = [n for later in set_up.body[index + 1 :] for n in ast.walk(later)]
        if any(
            self_attribute(n, name)
            or (
                isinstance(n, ast.Call)
                and (dotted_name(n.func, calls=True) or "").startswith(("super", "self."))
            )
            for n in after
        ):
            continue
        found[name] = (stmt.value, stmt.lineno)
    return found


def first_reads(
    function: ast.FunctionDef | ast.AsyncFunctionDef, built: dict[str, tuple[ast.Call, int]]
) -> dict[str, tuple[ast.Call, int, int]]:
    """Of the set-up objects ``built``, those ``function`` mentions: each with the line of
    its first mention there (the one assertion that may take it as built)."""
    found: dict[str, tuple[ast.Call, int, int]] = {}
    for name, (building, line) in built.items():
        mentions = [n.lineno for n in ast.walk(function) if self_attribute(n, name)]
        if mentions:
            found[name] = (building, line, min(mentions))
    return found


def fixture_buildings(
    body: list[ast.stmt], is_class: Callable[[ast.expr], bool]
) -> dict[str, tuple[ast.Call, int]]:
    """The fixtures defined in ``body`` (a test class's or module's) that build the
    method's class, as :mod:`~referee.checks.arbitration.fixture_objects` reads them for
    the failing call: plain fixtures (:func:`~referee.checks.arbitration.fixture_rule.
    fixture_value`) whose value is ``Owner(...)``. Each with the building and its line; a
    name defined twice in ``body`` gives none."""
    named = Counter(
        n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    )
    found: dict[str, tuple[ast.Call, int]] = {}
    for node in body:
        if not isinstance(node, ast.FunctionDef) or named[node.name] != 1:
            continue
        value = fixture_value(node)
        if value is not None and is_class(value.func):
            found[node.name] = (value, value.lineno)
    return found


def fixture_reads(
    function: ast.FunctionDef | ast.AsyncFunctionDef, fixtures: dict[str, tuple[ast.Call, int]]
) -> dict[str, tuple[ast.Call, int, int]]:
    """Of the fixtures' objects, those ``function`` takes as a parameter that nothing else
    gives it (no decorator of the test names it: a ``parametrize``) and never binds: each
    with the line of its first read there (the one assertion that may take it as built)."""
    parameters = {a.arg for a in [*function.args.posonlyargs, *function.args.args]}
    decorated = " ".join(ast.unparse(d) for d in function.decorator_list)
    found: dict[str, tuple[ast.Call, int, int]] = {}
    for name, (building, line) in fixtures.items():
        if name not in parameters or name in decorated:
            continue
        names = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name]
        if any(not isinstance(n.ctx, ast.Load) for n in names) or not names:
            continue
        found[name] = (building, line, min(n.lineno for n in names))
    return found
