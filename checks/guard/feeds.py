"""What feeds an assertion: the statements of a test before it that bind what it reads,
or change an object it reads, written so that renaming a local changes nothing."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from referee.checks.guard.normal import squash
from referee.checks.nodes import (
    unwrap,
)
from referee.checks.source import SourceFile


@dataclass(frozen=True)
class Statement:
    """A simple statement of a test body that is not an assertion: what it binds (its
    assignment targets, or the object whose method it calls) and what it reads."""

    start: int  # byte
    text: str  # squashed
    written: str
    binds: frozenset[str]
    reads: frozenset[str]
    changes: bool = False  # changes the object it binds rather than binding it anew


_COMPOUND_BODIES = ("block", "else_clause", "elif_clause", "except_clause", "finally_clause")


_MAX_FEEDS = 40


def _identifiers(node: Node) -> set[str]:
    """The names ``node`` reads (strings, lambdas and nested definitions left out)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "identifier":
            found.add((current.text or b"").decode("utf-8", "replace"))
        elif current.type == "attribute":  # `a.b` reads a, not a name b
            inner = current.child_by_field_name("object")
            stack.extend([inner] if inner is not None else [])
        elif current.type == "keyword_argument":  # `f(k=v)` reads v
            inner = current.child_by_field_name("value")
            stack.extend([inner] if inner is not None else [])
        elif current.type not in ("string", "comment", "lambda", "function_definition"):
            stack.extend(current.named_children)
    return found


def _receiver(node: Node) -> str | None:
    """``x`` of a call ``x.a.b(...)``: the object a method call may change."""
    node = unwrap(node)
    if node.type == "await":
        node = node.named_children[0] if node.named_children else node
    if node.type != "call":
        return None
    callee = node.child_by_field_name("function")
    if callee is None or callee.type != "attribute":
        return None
    while callee.type in ("attribute", "call", "subscript"):
        inner = (
            callee.child_by_field_name("object")
            or callee.child_by_field_name("function")
            or callee.child_by_field_name("value")
        )
        if inner is None:
            return None
        callee = inner
    if callee.type != "identifier":
        return None
    return (callee.text or b"").decode("utf-8", "replace")


def setup_statements(source: SourceFile, body: Node, checks: set[int]) -> list[Statement]:
    """The simple statements of a test body (compound statements' blocks included,
    nested functions and classes not), in order; ``checks``: where the test's
    assertions start (a checking call is no input)."""
    out: list[Statement] = []
    stack = list(reversed(body.named_children))
    while stack:
        node = stack.pop()
        if node.type in ("function_definition", "class_definition", "decorated_definition"):
            continue
        if node.type in ("assert_statement", "comment"):
            continue
        if node.type in (
            "if_statement",
            "for_statement",
            "while_statement",
            "with_statement",
            "try_statement",
            *_COMPOUND_BODIES,
        ):
            children = [c for c in node.named_children if c.type in ("block", *_COMPOUND_BODIES)]
            if node.type in ("for_statement", "with_statement"):
                binds = set()
                if node.type == "for_statement":
                    left = node.child_by_field_name("left")
                    binds = _identifiers(left) if left is not None else set()
                else:
                    for clause in node.named_children:
                        if clause.type == "with_clause":
                            binds |= {
                                t for item in clause.named_children for t in _alias_targets(item)
                            }
                head_end = children[0].start_byte if children else node.end_byte
                written = source.data[node.start_byte : head_end].decode("utf-8", "replace")
                text = squash(written)
                reads = _identifiers(node.child_by_field_name("right") or node) - binds
                if node.type == "with_statement":
                    reads = set()
                    for clause in node.named_children:
                        if clause.type == "with_clause":
                            reads |= _identifiers(clause)
                    reads -= binds
                out.append(
                    Statement(node.start_byte, text, written, frozenset(binds), frozenset(reads))
                )
            stack.extend(reversed(children))
            continue
        if node.type != "expression_statement" or not node.named_children:
            continue
        inner = node.named_children[0]
        if inner.type in ("assignment", "augmented_assignment"):
            left = inner.child_by_field_name("left")
            right = inner.child_by_field_name("right")
            # `x = v` binds x; `x.attr = v`, `x[k] = v` and `x += v` change x
            binds = _identifiers(left) if left is not None else set()
            reads = _identifiers(right) if right is not None else set()
            changes = inner.type == "augmented_assignment" or (
                left is not None
                and left.type not in ("identifier", "pattern_list", "tuple_pattern")
            )
            if changes:
                reads |= binds
        else:
            receiver = _receiver(inner)
            if receiver is None or inner.start_byte in checks:
                continue
            binds = {receiver}
            reads = _identifiers(inner)
            changes = True
        out.append(
            Statement(
                node.start_byte,
                squash(source.node_text(node)),
                source.node_text(node),
                frozenset(binds),
                frozenset(reads),
                changes,
            )
        )
    return out


def _alias_targets(item: Node) -> set[str]:
    value = item.child_by_field_name("value") or (
        item.named_children[0] if item.named_children else None
    )
    if value is not None and value.type == "as_pattern":
        alias = value.child_by_field_name("alias")
        if alias is None and len(value.named_children) > 1:
            alias = value.named_children[-1]
        return _identifiers(alias) if alias is not None else set()
    return set()


def local_renamer(setup: list[Statement], params: tuple[str, ...]) -> Callable[[str], str]:
    """How a statement's squashed text is compared: the names the test binds written as
    ``_``, so that renaming a local changes nothing."""
    names = {name for s in setup if not s.changes for name in s.binds} | set(params)
    names.discard("")
    if not names:
        return str
    pattern = re.compile(
        r"(?<![\w.])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")(?!\w)"
    )
    return lambda text: pattern.sub("_", text)


def feeds_of(
    source: SourceFile,
    node: Node,
    setup: list[Statement],
    renamed: Callable[[str], str] = str,
    inlined: set[str] | frozenset[str] = frozenset(),
) -> tuple[tuple[str, str], ...]:
    """The statements before ``node`` that feed it (see :class:`Assertion`), sorted: for
    each name it reads, the last statement before it that binds the name and the ones
    after that which change the object (a method call on it, an item or attribute set),
    then the same for what those read."""
    chosen: dict[int, Statement] = {}
    todo = [(name, node.start_byte) for name in _identifiers(node) - inlined]
    seen: set[tuple[str, int]] = set()
    while todo and len(chosen) < _MAX_FEEDS:
        name, at = todo.pop()
        if (name, at) in seen:
            continue
        seen.add((name, at))
        for statement in reversed([s for s in setup if s.start < at and name in s.binds]):
            if statement.start not in chosen:
                chosen[statement.start] = statement
                todo.extend((read, statement.start) for read in statement.reads)
            if not statement.changes:
                break  # a new binding: what came before it no longer reaches here
    return tuple(sorted((renamed(s.text), s.written) for s in chosen.values()))


def in_nested_function(node: Node, fn: Node) -> bool:
    parent = node.parent
    while parent is not None and parent != fn:
        if parent.type in ("function_definition", "lambda"):
            return True
        parent = parent.parent
    return False


def parameters_of(source: SourceFile, fn: Node) -> tuple[str, ...]:
    params = fn.child_by_field_name("parameters")
    names = []
    for param in params.named_children if params is not None else ():
        node = param
        if node.type in ("default_parameter", "typed_default_parameter", "typed_parameter"):
            node = node.child_by_field_name("name") or (
                node.named_children[0] if node.named_children else node
            )
        if node.type == "identifier":
            names.append(source.node_text(node))
    return tuple(names)


def bound_names(source: SourceFile, body: Node) -> frozenset[str]:
    """Names a test body binds: assignment, loop and ``with`` targets (nested functions'
    own bindings included: over-approximation only makes more values "computed")."""
    text = source.node_text(body)
    found = set(re.findall(r"^\s*([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)", text, re.MULTILINE))
    for targets in re.findall(r"\bfor\s+([\w\s,()\[\]]+?)\s+in\b", text):
        found.update(t for t in re.split(r"[\s,()\[\]]+", targets) if t.isidentifier())
    found.update(re.findall(r"\bas\s+([A-Za-z_]\w*)", text))
    for params in re.findall(r"\bdef\s+\w+\s*\(([^)]*)\)|\blambda\s*([^:]*):", text):
        for param in ",".join(params).split(","):
            name = param.split("=", 1)[0].split(":", 1)[0].strip().lstrip("*")
            if name.isidentifier():
                found.add(name)
    for targets in re.findall(r"^\s*([A-Za-z_][\w, ]*?)\s*=(?!=)", text, re.MULTILINE):
        found.update(t.strip() for t in targets.split(",") if t.strip().isidentifier())
    return frozenset(found)
