"""Reading literals, calls and statements off tree-sitter nodes of Python code."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from tree_sitter import Node

from referee.checks.source import SourceFile

MARKER = re.compile(r"\b(TODO|FIXME|XXX|TBD)\b")
_STRING_PREFIX = re.compile(r"^[rRbBuUfF]*")


def excerpt(text: str, limit: int = 80) -> str:
    """Code quoted in a message: whitespace runs folded to one space, cut to ``limit``
    characters with an ellipsis, so a 3,000-character expression does not become the
    message."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unwrap(node: Node) -> Node:
    """Strip redundant parentheses: ``((x))`` → ``x``."""
    while node.type == "parenthesized_expression":
        inner = [c for c in node.named_children if not c.is_extra]  # not a comment
        if len(inner) != 1:
            break
        node = inner[0]
    return node


def string_value(source: SourceFile, node: Node) -> str | None:
    """The literal text of a string without interpolation, else ``None``."""
    if node.type == "concatenated_string":
        parts = [string_value(source, child) for child in node.named_children]
        return None if any(p is None for p in parts) else "".join(parts)  # type: ignore[misc]
    if node.type != "string":
        return None
    if any(child.type == "interpolation" for child in node.named_children):
        return None
    return "".join(
        source.node_text(child) for child in node.named_children if child.type == "string_content"
    )


def literal_truth(source: SourceFile, node: Node) -> bool | None:
    """Whether a literal expression is truthy, falsy, or not a literal (``None``)."""
    node = unwrap(node)
    kind = node.type
    if kind in ("true", "false", "none"):
        return kind == "true"
    if kind in ("integer", "float"):
        text = source.node_text(node).replace("_", "").lower()
        try:
            return (float(int(text, 0)) if kind == "integer" else float(text)) != 0
        except ValueError:
            return True  # 1j and friends: non-zero complex literals
    if kind in ("string", "concatenated_string"):
        value = string_value(source, node)
        if value is None:
            # An f-string with any literal text is truthy whatever it interpolates.
            literal_text = any(
                child.type == "string_content" and child.end_byte > child.start_byte
                for part in (node.named_children if kind == "concatenated_string" else [node])
                for child in part.named_children
            )
            return True if literal_text else None
        return bool(value)
    if kind in ("tuple", "list", "dictionary", "set"):
        return node.named_child_count > 0 if kind != "dictionary" else bool(node.named_children)
    if kind == "not_operator":
        operand = node.child_by_field_name("argument")
        inner = literal_truth(source, operand) if operand is not None else None
        return None if inner is None else not inner
    return None


def is_literal(node: Node) -> bool:
    return unwrap(node).type in {
        "true",
        "false",
        "none",
        "integer",
        "float",
        "string",
        "concatenated_string",
    }


FRESH_OBJECTS = frozenset(
    {
        "list",
        "dictionary",
        "set",
        "list_comprehension",
        "dictionary_comprehension",
        "set_comprehension",
        "generator_expression",
        "lambda",
    }
)

_PURE = frozenset(
    {
        "identifier",
        "attribute",
        "subscript",
        "integer",
        "float",
        "string",
        "true",
        "false",
        "none",
        "concatenated_string",
    }
)


def is_pure(node: Node) -> bool:
    """An expression whose two evaluations give the same object: names, attribute
    chains, subscripts of those, and literals. Calls are not pure (``f() == f()`` tests
    determinism)."""
    node = unwrap(node)
    if node.type not in _PURE:
        return False
    return all(
        is_pure(child)
        for child in node.named_children
        if child.type not in ("identifier", "string_start", "string_content", "string_end")
    )


def same_expression(source: SourceFile, a: Node, b: Node) -> bool:
    return "".join(source.node_text(unwrap(a)).split()) == "".join(
        source.node_text(unwrap(b)).split()
    )


def call_arguments(call: Node) -> list[Node]:
    """Positional arguments of a call, in order (keyword arguments left out)."""
    args = call.child_by_field_name("arguments")
    if args is None:
        return []
    return [a for a in args.named_children if a.type not in ("keyword_argument", "comment")]


def keyword_argument(source: SourceFile, call: Node, name: str) -> Node | None:
    args = call.child_by_field_name("arguments")
    if args is None:
        return None
    for arg in args.named_children:
        if arg.type == "keyword_argument":
            key = arg.child_by_field_name("name")
            if key is not None and source.node_text(key) == name:
                return arg.child_by_field_name("value")
    return None


def statements(block: Node) -> list[Node]:
    """A block's statements, without comments."""
    return [child for child in block.named_children if child.type != "comment"]


def is_docstring(node: Node) -> bool:
    return (
        node.type == "expression_statement"
        and node.named_child_count == 1
        and node.named_children[0].type in ("string", "concatenated_string")
    )


def raised_name(source: SourceFile, raise_node: Node) -> str | None:
    """``NotImplementedError`` for ``raise NotImplementedError("x")``; None for bare raise."""
    if not raise_node.named_children:
        return None
    exc = raise_node.named_children[0]
    if exc.type == "call":
        exc = exc.child_by_field_name("function") or exc
    return source.node_text(exc).rsplit(".", 1)[-1]


# Exception classes an assertion failure is an instance of.
CATCHES_FAILURES = frozenset(
    {"Exception", "BaseException", "AssertionError", "failureException", "TestFailed"}
)


def handler_exception_names(source: SourceFile, handler: Node) -> list[str] | None:
    """Class names an ``except`` clause catches (last dotted part); None for ``except:``."""
    value = handler.child_by_field_name("value")
    if value is None:
        value = next(
            (c for c in handler.named_children if c.type not in ("block", "comment")), None
        )
    if value is None:
        return None
    if value.type == "as_pattern":
        value = value.named_children[0]
    grouped = value.type in ("tuple", "parenthesized_expression")
    items = value.named_children if grouped else [value]
    return [source.node_text(item).rsplit(".", 1)[-1] for item in items]


def handler_swallows(
    source: SourceFile, handler: Node, keeps_failure: Callable[[str], bool]
) -> bool:
    """Whether an ``except`` clause catches an assertion failure and lets it go: it
    catches a class a failure is an instance of, does not raise or assert again, makes
    no call ``keeps_failure`` accepts (by the callee's last name), and does not hand the
    exception on."""
    names = handler_exception_names(source, handler)
    if names is not None and not CATCHES_FAILURES.intersection(names):
        return False
    stack = [handler]
    while stack:
        node = stack.pop()
        if node.type in ("raise_statement", "assert_statement"):
            return False
        if node.type == "call":
            callee = node.child_by_field_name("function")
            if callee is not None and keeps_failure(source.node_text(callee).rsplit(".", 1)[-1]):
                return False
        stack.extend(node.named_children)
    return not handler_passes_on(source, handler)


def handler_passes_on(source: SourceFile, handler: Node) -> bool:
    """Whether an ``except ... as name:`` clause uses ``name`` in its body: the failure
    is handed on (to a future, a queue, a list the test checks), not swallowed."""
    value = handler.child_by_field_name("value")
    if value is None:
        value = next((c for c in handler.named_children if c.type == "as_pattern"), None)
    if value is None or value.type != "as_pattern":
        return False
    alias = value.child_by_field_name("alias")
    if alias is None:
        return False
    name = source.node_text(alias).strip()
    body = handler.child_by_field_name("body") or handler.named_children[-1]
    return re.search(rf"\b{re.escape(name)}\b", source.node_text(body)) is not None


# Nodes a name is bound through (`a, (b, *c) = ...`), and where it is then bound: a
# node type that binds whatever it holds, or the field of a node type that binds.
_TARGET_PARTS = frozenset(
    {
        "pattern_list",
        "tuple_pattern",
        "list_pattern",
        "list_splat_pattern",
        "dictionary_splat_pattern",
        "tuple",
        "list",
        "parenthesized_expression",
    }
)
_BINDS_ALL = frozenset(
    {
        "as_pattern",
        "as_pattern_target",
        "parameters",
        "lambda_parameters",
        "default_parameter",
        "typed_parameter",
        "typed_default_parameter",
        "global_statement",
        "nonlocal_statement",
        "delete_statement",
        "aliased_import",
        "dotted_name",  # imports and `case` patterns
        "splat_pattern",
        "keyword_pattern",
    }
)
_BINDING_FIELDS = {
    "assignment": "left",
    "augmented_assignment": "left",
    "for_statement": "left",
    "for_in_clause": "left",
    "named_expression": "name",
    "function_definition": "name",
    "class_definition": "name",
}


def decorators(definitions: Iterable[Node]) -> Iterator[Node]:
    """The ``decorator`` nodes of these definitions (function or class nodes), in order;
    each has its expression as first named child."""
    for definition in definitions:
        parent = definition.parent
        if parent is None or parent.type != "decorated_definition":
            continue
        for child in parent.named_children:
            if child.type == "decorator" and child.named_children:
                yield child


def innermost_at(
    root: Node, line: int, accept: Callable[[Node], bool], skip: tuple[str, ...]
) -> Node | None:
    """The innermost node below ``root`` whose lines hold ``line`` (1-based) and that
    ``accept`` takes, not looking into nodes of the types ``skip``."""
    row = line - 1
    found: Node | None = None
    stack = [root]
    while stack:
        node = stack.pop()
        if not (node.start_point.row <= row <= node.end_point.row) or node.type in skip:
            continue
        if accept(node):
            found = node
        stack.extend(node.named_children)
    return found


def binds(node: Node) -> bool:
    """Whether the identifier ``node`` is (or may be) bound where it stands, not read."""
    child, parent = node, node.parent
    while parent is not None and parent.type in _TARGET_PARTS:
        child, parent = parent, parent.parent
    if parent is None:
        return False
    if parent.type in _BINDS_ALL:
        return True
    name = _BINDING_FIELDS.get(parent.type)
    return name is not None and parent.child_by_field_name(name) == child


def binding_counts(source: SourceFile, root: Node, names: Iterable[str]) -> dict[str, int]:
    """How many places under ``root`` bind each of ``names`` (assignments, ``+=``, loop
    and ``with`` targets, ``:=``, parameters, imports, ``global``, ``del``, patterns…)."""
    counts: dict[str, int] = dict.fromkeys(names, 0)
    for node in _bindings(source, root, counts.keys()):
        counts[source.node_text(node)] += 1
    return counts


def _bindings(source: SourceFile, root: Node, names: Iterable[str]) -> Iterator[Node]:
    wanted = set(names)
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "identifier":
            if source.node_text(node) in wanted and binds(node):
                yield node
        else:
            stack.extend(node.children)
