"""A projection: the attribute accesses and literal subscripts a test applies to the value
of the call under test before it compares it — ``parse("2020-01-02").year``, ``f(x)[0]``,
``f(x)["key"].name``, ``f(x)[1:3]``.

The text of a projection comes from the test, and every source of truth's value is
projected the same way inside the sandbox, by harness code: so a projection is never the
test's text copied out. It is read here into its steps — an attribute name that is an
identifier, not a keyword and not a dunder name (``__class__``, ``__globals__``: a way out
of a value, not a part of it); a subscript whose key or index is a literal of an
immutable value, or a slice of literal integers — and written back from them
(:func:`rendered`); :func:`checked` reads a rendered projection again before anything
runs it.
"""

from __future__ import annotations

import ast
import keyword

from tree_sitter import Node

from referee.checks.nodes import excerpt, unwrap
from referee.checks.source import SourceFile

_KEY_TYPES = (bool, int, float, complex, str, bytes, type(None))


def peeled(source: SourceFile, node: Node) -> tuple[Node, str, str | None]:
    """(the value under the projection, the projection as referee writes it, the step it
    cannot apply — None when it can apply them all) of a compared value: ``parse(s).year`` is
    (``parse(s)``, ``".year"``, None); a value that is not projected is (itself, ``""``,
    None)."""
    steps: list[str] = []
    problem: str | None = None
    current = unwrap(node)
    while current.type in ("attribute", "subscript"):
        if current.type == "attribute":
            inner = current.child_by_field_name("object")
            name = current.child_by_field_name("attribute")
            text = source.node_text(name) if name is not None else ""
            step = _attribute(text)
            if step is None:
                problem = f"the attribute `{excerpt(text)}`"
        else:
            inner = current.child_by_field_name("value")
            key = _key_text(source, current, inner)
            step = _subscript(key) if key is not None else None
            if step is None:
                problem = f"the subscript `[{excerpt(key or '')}]`"
        if inner is None:
            break
        steps.append(step or "")
        current = unwrap(inner)
    if not steps:
        return current, "", None
    projection = "".join(reversed(steps))
    if problem is None:
        try:  # as the harness will read it (an identifier Python normalizes: ``.ﬁ``)
            checked(projection)
        except ValueError:
            problem = f"`{excerpt(projection)}`"
    return current, projection, problem


def checked(projection: str) -> str:
    """``projection`` written back from its steps, after each was read again: what the
    harness appends to a call. Raises ValueError for anything else (a call, a name, a
    dunder attribute, a key that is not a literal)."""
    if not projection:
        return ""
    try:
        node = ast.parse(f"_{projection}", mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise ValueError(f"not a projection: {projection!r}") from None
    steps: list[str] = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            step = _attribute(node.attr)
        else:
            step = _subscript(ast.unparse(node.slice))
        if step is None:
            raise ValueError(f"not a projection: {projection!r}")
        steps.append(step)
        node = node.value
    if not (isinstance(node, ast.Name) and node.id == "_"):
        raise ValueError(f"not a projection: {projection!r}")
    written = "".join(reversed(steps))
    if written != projection:
        raise ValueError(f"not a projection as referee writes one: {projection!r}")
    return written


def projected_literal(value: str, projection: str) -> str | None:
    """``repr`` of a literal ``value`` projected by subscripts only (a docstring example's
    value, ``[3, 1]`` with ``[0]``: ``3``); None when it cannot be computed here."""
    try:
        node = ast.parse(f"_{checked(projection)}", mode="eval").body
        got = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    keys: list[ast.expr] = []
    while isinstance(node, ast.Subscript):
        keys.append(node.slice)
        node = node.value
    if not isinstance(node, ast.Name):
        return None  # an attribute: of an object no literal is
    try:
        for key in reversed(keys):
            got = got[_key_value(key)]
    except (LookupError, TypeError, ValueError):
        return None
    return repr(got)


def _attribute(name: str) -> str | None:
    """``.name`` for an attribute a projection may read, else None."""
    if not name.isidentifier() or keyword.iskeyword(name):
        return None
    if name.startswith("__") and name.endswith("__"):
        return None
    return f".{name}"


def _key_text(source: SourceFile, subscript: Node, value: Node | None) -> str | None:
    """What is written between a subscript's brackets."""
    if value is None:
        return None
    text = source.data[value.end_byte : subscript.end_byte].decode("utf-8").strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    return text[1:-1].strip()


def _subscript(key: str) -> str | None:
    """``[key]`` written back from a literal key or index, or a slice of literal integers
    (``[1:3]``, ``[::-1]``); None for anything else."""
    try:
        node = ast.parse(f"_[{key}]", mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(node, ast.Subscript):
        return None
    try:
        value = _key_value(node.slice)
    except ValueError:
        return None
    if isinstance(value, slice):
        parts = [value.start, value.stop] + ([value.step] if value.step is not None else [])
        return "[" + ":".join("" if p is None else repr(p) for p in parts) + "]"
    try:  # a value whose repr is no literal (1e999's ``inf``) is no key referee writes
        ast.literal_eval(repr(value))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return f"[{value!r}]"


def _key_value(node: ast.expr) -> object:
    """The value of a literal key (an immutable literal) or slice of literal integers.
    Raises ValueError for anything else."""
    try:
        if isinstance(node, ast.Slice):
            parts = [node.lower, node.upper, node.step]
            values = [None if p is None else ast.literal_eval(p) for p in parts]
            if not all(v is None or type(v) is int for v in values):
                raise ValueError("a slice of something else than integers")
            return slice(*values)
        value = ast.literal_eval(node)
    except (TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("not a literal") from None
    if not _immutable(value):
        raise ValueError("not an immutable literal")
    return value


def _immutable(value: object) -> bool:
    if isinstance(value, (tuple, frozenset)):
        return all(_immutable(v) for v in value)
    return isinstance(value, _KEY_TYPES)
