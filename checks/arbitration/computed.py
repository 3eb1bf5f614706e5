"""An expected value the test computes rather than writes: an expression that does not
call the function under test (``datetime(2003, 9, 25)``, ``other_total(xs)``), in the
assertion or assigned to the name it reads; or a parametrized argument whose case is no
literal (``expected_datetime``, a ``datetime.datetime(...)`` in the table), or an
attribute or literal item of one (``expected_datetime.year``). Its value is the one the
failing comparison recorded, and it is never edited: there is no literal to replace.
Where it reads nothing but literals, built-ins and the test module's imports, it is also
written out to be evaluated on its own when the call raised (:data:`Evaluable`): with the
standard library alone where it is known without running the test
(:meth:`Bindings.known_expected`), else with the project's files and the imports it needs
— the test's own expression, computed as the test would compute it."""

from __future__ import annotations

import ast
import builtins

from tree_sitter import Node

from referee.checks.arbitration.bindings import Bindings
from referee.checks.arbitration.known import ModuleNames
from referee.checks.arbitration.projection import peeled
from referee.checks.arbitration.sites import Site, dotted, is_literal
from referee.checks.nodes import binding_counts, unwrap
from referee.checks.source import SourceFile

# (the expected value written out to be evaluated on its own, the test module's imports
# it needs beside the call's definitions: "" where it needs only the standard library's)
Evaluable = tuple[str, str]


def computed_expected(
    source: SourceFile, bindings: Bindings, node: Node, callee: str, forms: list[str]
) -> tuple[Site, Evaluable | None] | None:
    """(the expected value ``node`` as computed, written out where it can be evaluated on
    its own), the forms added to ``forms``; None when it is not one the test computes
    independently of the function under test."""
    case = _parametrized_case(source, bindings, node, callee)
    if case is not None:
        forms.extend(f for f in ("parametrize", "computed-expected") if f not in forms)
        return case
    # an expression the test evaluates, in the assertion or assigned to the name it reads
    # (``want = datetime(2003, 9, 25)``, then ``assert parse(s) == want``)
    computed = bindings.assigned_value(node) or unwrap(node)
    expected = _computed(source, computed, callee)
    if expected is None:
        return None
    forms.append("computed-expected")
    known = bindings.known_expected(computed)
    if known is not None:
        return expected, (known, "")
    return expected, _with_imports(source, bindings, expected.text)


def _parametrized_case(
    source: SourceFile, bindings: Bindings, node: Node, callee: str
) -> tuple[Site, Evaluable | None] | None:
    """``expected_datetime`` or ``expected_datetime.year``, a parametrized argument whose
    case in the table is no literal, perhaps projected by attributes and literal items:
    the case as written, projected (``datetime.datetime(2007, 6, 23).year``); None for
    anything else, or a case that calls the function under test."""
    base, projection, problem = peeled(source, node)
    if problem is not None or base.type != "identifier":
        return None
    found = bindings.case_value(source.node_text(base))
    if found is None or _computed(source, found[0], callee) is None:
        return None
    value = found[0]
    written = source.node_text(value)
    text = f"({written}){projection}" if projection else written
    site = Site("computed", node.start_byte, node.end_byte, text, node.start_point.row + 1)
    known = written if is_literal(written) else bindings.known_expected(value)
    if known is None:
        return site, _with_imports(source, bindings, text)
    return site, ((f"({known}){projection}" if projection else known), "")


def _with_imports(source: SourceFile, bindings: Bindings, text: str) -> Evaluable | None:
    """``text`` and the test module's imports of every name it reads, where each is such
    an import (bound once, in the module and not in the test) or a built-in; else None."""
    try:
        tree = ast.parse(f"({text})", mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    loaded = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)})
    names = ModuleNames(source.text)
    local = binding_counts(source, bindings.fn.node, loaded)
    needed: dict[str, None] = {}
    for name in loaded:
        if local[name]:
            return None
        if names.bound[name] == 0 and hasattr(builtins, name):
            continue
        if names.bound[name] != 1 or name not in names.imported:
            return None
        needed.setdefault(names.imported[name][1])
    return text, "".join(f"{statement}\n" for statement in needed)


def _computed(source: SourceFile, node: Node, callee: str) -> Site | None:
    """The expected value as an expression the test evaluates — a constructor of literals
    (``datetime(2003, 9, 25)``), another function's value — when it does not call the
    function under test itself: its value is the one the failing comparison recorded, and
    it is never edited (there is no literal to replace)."""
    node = unwrap(node)
    if node.type in ("identifier", "attribute", "subscript"):
        return None  # a name: where its value came from is not read here
    name = callee.rsplit(".", 1)[-1]
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in ("lambda", "generator_expression", "list_comprehension",
                            "set_comprehension", "dictionary_comprehension", "await"):  # fmt: skip
            return None
        if current.type == "call":
            called = dotted(source, current.child_by_field_name("function")) or ""
            if called == callee or called.rsplit(".", 1)[-1] == name:
                return None
        stack.extend(current.named_children)
    return Site(
        "computed", node.start_byte, node.end_byte, source.node_text(node), node.start_point.row + 1
    )
