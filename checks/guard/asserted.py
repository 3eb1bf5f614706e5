"""One check of a test, as the guard reads it: an ``assert``, a unittest ``assert*``
call, ``pytest.raises``/``approx``, a ``try``/``fail`` — its subject, operator and
expected value, and whether something silences it."""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from referee.checks.guard.normal import canonical, is_constant, squash
from referee.checks.nodes import (
    binding_counts,
    call_arguments,
    handler_swallows,
    keyword_argument,
    statements,
    unwrap,
)
from referee.checks.pymodule import Function, callee_parts
from referee.checks.source import SourceFile

# unittest methods: name -> (op, which argument is the subject, which the expected)
_METHODS: dict[str, tuple[str, int, int | None]] = {
    "assertEqual": ("==", 0, 1),
    "assertEquals": ("==", 0, 1),
    "assertListEqual": ("==", 0, 1),
    "assertDictEqual": ("==", 0, 1),
    "assertTupleEqual": ("==", 0, 1),
    "assertSetEqual": ("==", 0, 1),
    "assertSequenceEqual": ("==", 0, 1),
    "assertMultiLineEqual": ("==", 0, 1),
    "assertCountEqual": ("==", 0, 1),
    "assertAlmostEqual": ("approx", 0, 1),
    "assertNotEqual": ("!=", 0, 1),
    "assertNotAlmostEqual": ("!=", 0, 1),
    "assertIs": ("is", 0, 1),
    "assertIsNot": ("is not", 0, 1),
    "assertIsNone": ("is", 0, None),
    "assertIsNotNone": ("is not", 0, None),
    "assertIn": ("in", 0, 1),
    "assertNotIn": ("not in", 0, 1),
    "assertGreater": (">", 0, 1),
    "assertGreaterEqual": (">=", 0, 1),
    "assertLess": ("<", 0, 1),
    "assertLessEqual": ("<=", 0, 1),
    "assertTrue": ("truthy", 0, None),
    "assertFalse": ("falsy", 0, None),
    "assertIsInstance": ("isinstance", 0, 1),
    "assertRegex": ("matches", 0, 1),
}


_RAISES = frozenset(
    {"raises", "assertRaises", "assertRaisesRegex", "warns", "assertWarns", "assertWarnsRegex"}
)


# How much an operator pins the value down. An edit that moves an assertion to a lower
# rank proves less than before: `==` -> `in` is a weakening, `>` -> `==` is not.
STRENGTH = {
    "==": 4,
    "is": 4,
    "approx": 3,
    "isinstance": 2,
    "matches": 2,
    "in": 2,
    "<": 2,
    ">": 2,
    "<=": 2,
    ">=": 2,
    "not in": 1,
    "!=": 1,
    "is not": 1,
    "truthy": 0,
    "falsy": 0,
}


@dataclass(frozen=True)
class Assertion:
    subject: str
    op: str
    expected: str | None
    line: int  # 1-based
    text: str
    silenced: str | None = None  # why it can no longer fail, if it cannot
    tolerance: tuple[float | None, float | None] | None = None  # approx (rel, abs)
    raises: tuple[str, ...] = ()  # exception names for raises-style assertions
    match: str | None = None  # raises(..., match=) pattern, canonical
    alias: str | None = None  # `with pytest.raises(E) as alias:`
    # The statements of the test before the assertion that feed it (squashed): the ones
    # that bind a name it reads, or call a method of one, transitively. What the test
    # feeds the code and what it compares with are part of the check (see feeds_of).
    # Each as (squashed text, text as written): compared by the first.
    feeds: tuple[tuple[str, str], ...] = ()
    # The condition of the test's own `if`/`while`/`except` it runs under, as written.
    condition: str | None = None

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.subject, self.op, self.expected)

    @property
    def kind(self) -> str:
        """What a message calls it: an assertion, a call to a helper that asserts, or a
        `raise` that fails the test."""
        if self.op == "call":
            return "the checking call"
        if self.op == "raise":
            return "the `raise`"
        return "the assertion"


# The message of a caught exception: str(e), str(e.value), repr(e.value), e.value.args[0],
# e.value.message, str(e.value.args[0]) — the whole side, nothing else around it.
_MESSAGE_OF = re.compile(
    r"^(?:(?:str|repr)\((?P<a>\w+)(?:\.value(?:\.\w+|\.args\[0\])?)?\)"
    r"|(?P<b>\w+)\.value\.(?:args\[0\]|message|msg))$"
)


# A statement that fails the test: what `try: f() / except E: ... / else: <this>` uses to
# say "f must raise E".
_FAILS = re.compile(
    r"^(?:assert\s*\(?\s*(?:False|0|None)\b|(?:pytest|self)\.fail\(|fail\("
    r"|raise\s+(?:AssertionError|(?:pytest\.)?fail\.Exception)\b)"
)


def try_fail_checks(source: SourceFile, fn: Node, assertions: list[Assertion]) -> list[Assertion]:
    """``try: f()`` / ``except E as e: <checks on e>`` / ``else: assert False`` (or the
    failing statement as the ``try`` body's last) is ``with pytest.raises(E) as e: f()``
    followed by the checks on ``e.value``: the failing statement is no assertion of its
    own, the ``try`` is a raises assertion, and the checks inside the handler read the
    exception through ``e.value`` — so rewriting one form as the other changes nothing."""
    body = fn.child_by_field_name("body")
    if body is None:
        return assertions
    out = list(assertions)
    stack = list(body.named_children)
    while stack:
        node = stack.pop()
        if node.type in ("class_definition", "lambda"):
            continue
        stack.extend(node.named_children)  # a nested helper's checks are the test's too
        if node.type != "try_statement":
            continue
        handlers = [c for c in node.named_children if c.type == "except_clause"]
        if len(handlers) != 1:
            continue
        fail = _failing_statement(source, node)
        caught = next((c for c in handlers[0].named_children if c.type != "block"), None)
        if fail is None or caught is None:
            continue
        alias = None
        if caught.type == "as_pattern":
            target = next((c for c in caught.named_children if c.type == "as_pattern_target"), None)
            alias = source.node_text(target).strip() if target is not None else None
            caught = caught.named_children[0]
        names = _exception_names(source, caught)
        failing = fail.start_point.row + 1
        out = [a for a in out if a.line != failing]
        if alias and alias.isidentifier():
            low, high = handlers[0].start_point.row + 1, handlers[0].end_point.row + 1
            through = re.compile(rf"\b{re.escape(alias)}\.(?!value\b)")
            for index, check in enumerate(out):
                if low <= check.line <= high:
                    out[index] = Assertion(
                        **{
                            **check.__dict__,
                            "subject": through.sub(f"{alias}.value.", check.subject),
                            "expected": through.sub(f"{alias}.value.", check.expected)
                            if check.expected is not None
                            else None,
                        }
                    )
        first = " ".join(source.node_text(caught).split())
        out.append(
            Assertion(
                "raises:raises",
                "raises",
                ",".join(names),
                node.start_point.row + 1,
                f"try: ... except {first}: ... (the `try` on line {node.start_point.row + 1})",
                raises=names,
                alias=alias,
            )
        )
    return sorted(out, key=lambda a: a.line)


def _failing_statement(source: SourceFile, try_statement: Node) -> Node | None:
    """The statement that fails the test when the ``try`` body does not raise: the only
    statement of its ``else``, or the body's last statement (after at least one other)."""
    otherwise = next((c for c in try_statement.named_children if c.type == "else_clause"), None)
    if otherwise is not None:
        block = otherwise.child_by_field_name("body") or next(
            (c for c in otherwise.named_children if c.type == "block"), None
        )
        found = statements(block) if block is not None else []
        return found[0] if len(found) == 1 and _FAILS.match(source.node_text(found[0])) else None
    body = try_statement.child_by_field_name("body")
    found = statements(body) if body is not None else []
    if len(found) >= 2 and _FAILS.match(source.node_text(found[-1])):
        return found[-1]
    return None


def fold_message_checks(assertions: list[Assertion]) -> list[Assertion]:
    """``with pytest.raises(E) as e:`` followed by ``assert "x" in str(e.value)`` is
    ``pytest.raises(E, match="x")``: the message check is folded into the raises
    assertion (as its ``match``), so rewriting one as the other changes nothing."""
    if not any(a.op == "raises" and a.alias for a in assertions):
        return assertions
    out = list(assertions)
    dropped: set[int] = set()
    aliases: dict[str, int] = {}  # the closest `raises(...) as alias` before each check
    in_order = sorted(range(len(assertions)), key=lambda i: assertions[i].line)
    for index, check in ((i, assertions[i]) for i in in_order):
        if check.op == "raises" and check.alias:
            aliases[check.alias] = index
            continue
        if check.op not in ("in", "==", "matches", "call") or check.silenced is not None:
            continue
        if check.op == "call":
            match = re.match(r"^(\w+)\.match\((.+)\)$", check.subject)
            if match is None or match.group(1) not in aliases:
                continue
            owner, pattern = aliases[match.group(1)], canonical(match.group(2))
        else:
            sides = (check.subject, check.expected or "")
            owner = pattern = None
            for side, other in (sides, sides[::-1]):
                found = _MESSAGE_OF.search(side)
                name = (found.group("a") or found.group("b")) if found else None
                # `assert msg in str(e)`, `assert str(e) == expected`: a name as the pattern
                named = check.op in ("in", "==") and other.isidentifier()
                if name in aliases and (is_constant(other) or named):
                    owner, pattern = aliases[name], other
                    break
            if owner is None:
                continue
        raises = out[owner]
        if raises.match is None:
            out[owner] = Assertion(**{**raises.__dict__, "match": pattern})
            dropped.add(index)
        elif raises.match == pattern:
            dropped.add(index)  # the same message checked again
    return [a for i, a in enumerate(out) if i not in dropped]


def assertion_of(
    source: SourceFile, node: Node, literals: dict[str, tuple[str, int]] | None = None
) -> Assertion | None:
    """``node`` as a fact. ``literals`` (see :func:`assigned_literals`): the expected
    side of an equality that names one reads as the literal, as if written in place."""
    line = node.start_point.row + 1
    text = source.node_text(node)

    def expected_of(value: Node) -> str:
        value = unwrap(value)
        if value.type == "identifier" and literals:
            found = literals.get(source.node_text(value))
            if found is not None and found[1] <= node.start_byte:
                return found[0]
        return canonical(source.node_text(value))

    if node.type == "assert_statement":
        return _assert_statement(source, node, line, text, expected_of)
    if node.type == "call":
        return _checking_call(source, node, line, text, expected_of, literals)
    if node.type == "raise_statement":
        return Assertion(squash(text), "raise", None, line, text)
    return None


_ExpectedOf = Callable[[Node], str]


def _assert_statement(
    source: SourceFile, node: Node, line: int, text: str, expected_of: _ExpectedOf
) -> Assertion | None:
    cond = unwrap(node.named_children[0]) if node.named_children else None
    if cond is None:
        return None
    if cond.type == "comparison_operator" and cond.named_child_count == 2:
        left, right = cond.named_children
        op = " ".join(source.node_text(c) for c in cond.children if not c.is_named)
        tolerance = _approx(source, right) or _approx(source, left)
        if tolerance is not None:
            return Assertion(
                canonical(source.node_text(left)),
                "approx",
                expected_of(_approx_value(right)),
                line,
                text,
                tolerance=tolerance,
            )
        subject = canonical(source.node_text(left))
        expected = expected_of(right) if op == "==" else canonical(source.node_text(right))
        if op in ("==", "!=", "is", "is not") and _swapped(subject, expected):
            # `assert 4 == f(x)`: the constant is the expected side, wherever written
            subject, expected = canonical(source.node_text(right)), expected_of(left)
        return Assertion(subject, op, expected, line, text)
    if cond.type == "not_operator":
        inner = cond.child_by_field_name("argument")
        return Assertion(canonical(source.node_text(inner or cond)), "falsy", None, line, text)
    if cond.type == "call":
        callee = cond.child_by_field_name("function")
        if callee is not None and source.node_text(callee) == "isinstance":
            args = call_arguments(cond)
            if len(args) == 2:
                return Assertion(
                    canonical(source.node_text(args[0])),
                    "isinstance",
                    canonical(source.node_text(args[1])),
                    line,
                    text,
                )
    return Assertion(canonical(source.node_text(cond)), "truthy", None, line, text)


def _checking_call(
    source: SourceFile,
    node: Node,
    line: int,
    text: str,
    expected_of: _ExpectedOf,
    literals: dict[str, tuple[str, int]] | None,
) -> Assertion | None:
    """A call that checks: ``pytest.raises``/``warns``/``deprecated_call``, a unittest
    ``assert*`` method, or any other call (a helper that may assert)."""
    callee = node.child_by_field_name("function")
    if callee is None:
        return None
    _, method = callee_parts(source, callee)
    args = call_arguments(node)
    if method == "deprecated_call":
        # pytest.deprecated_call(f, *args) and `with pytest.deprecated_call(): f(*args)`
        # check the same thing: a warns() for the deprecation warnings
        pattern = keyword_argument(source, node, "match")
        return Assertion(
            "raises:warns",
            "raises",
            "deprecated_call",
            line,
            text,
            raises=("deprecated_call",),
            match=canonical(source.node_text(pattern)) if pattern is not None else None,
            alias=_with_alias(source, node),
        )
    if method in _RAISES:
        names = _exception_names(source, args[0]) if args else ()
        if names == ("None",):
            return None  # pytest.warns(None) checks nothing (and is gone from pytest 8)
        pattern = keyword_argument(source, node, "match")
        if pattern is None and method.endswith("Regex") and len(args) > 1:
            pattern = args[1]
        # assertRaisesRegex is assertRaises with a pattern: the same assertion, and
        # pytest.raises the same as assertRaises.
        family = "warns" if "arn" in method else "raises"
        return Assertion(
            f"raises:{family}",
            "raises",
            ",".join(names),
            line,
            text,
            raises=names,
            match=canonical(source.node_text(pattern)) if pattern is not None else None,
            alias=_with_alias(source, node),
        )
    if method in _METHODS and args:
        return _unittest_method(source, node, method, args, line, text, expected_of, literals)
    return Assertion(canonical(text), "call", None, line, text)


def _unittest_method(
    source: SourceFile,
    node: Node,
    method: str,
    args: list[Node],
    line: int,
    text: str,
    expected_of: _ExpectedOf,
    literals: dict[str, tuple[str, int]] | None,
) -> Assertion | None:
    """``self.assertEqual(a, b)`` and the other unittest methods in :data:`_METHODS`."""
    op, subject_index, expected_index = _METHODS[method]
    if subject_index >= len(args):
        return None
    expected = None
    subject = canonical(source.node_text(args[subject_index]))
    if expected_index is not None and expected_index < len(args):
        value = args[expected_index]
        if op in ("==", "approx"):
            expected = expected_of(value)
        else:
            expected = canonical(source.node_text(value))
        if op in ("==", "!=", "approx") and _swapped(subject, expected):
            # assertEqual(expected, actual): unittest does not say which is which
            subject = canonical(source.node_text(value))
            expected = expected_of(args[subject_index])
    elif method in ("assertIsNone", "assertIsNotNone"):
        expected = "None"
    if op in ("truthy", "falsy"):
        inner = _comparison_inside(source, args[subject_index], literals)
        if inner is not None:  # assertTrue(a == b) is assert a == b
            if op == "falsy":
                inner = _negated(inner)
            if inner is not None:
                return Assertion(inner[0], inner[1], inner[2], line, text)
    return Assertion(
        subject,
        op,
        expected,
        line,
        text,
        tolerance=_almost_equal(source, node, args) if op == "approx" else None,
    )


def _swapped(subject: str, expected: str | None) -> bool:
    """Whether a comparison is written with its expected side on the left: a constant
    there and none on the right (`assert 4 == f(x)`), or a value that calls nothing
    there (`int`, `Annotated[float, "x"]`) and a call on the right."""
    if expected is None:
        return False
    if is_constant(subject):
        return not is_constant(expected)
    return _type_like(subject) and "(" in expected and not is_constant(expected)


_BUILTIN_NAMES = frozenset(dir(builtins))


def _type_like(text: str) -> bool:
    """A value that names a type or a constant and calls nothing: `int`, `None`,
    `Color.RED`, `typing.List[int]`, `Annotated[float, "x"]` (not a local variable:
    those are lower-case and not builtins)."""
    if "(" in text:
        return False
    first = re.match(r"[A-Za-z_]\w*", text)
    if first is None:
        return False
    name = first.group(0)
    return name in _BUILTIN_NAMES or name[:1].isupper() or name in ("typing", "t", "types")


_NEGATED = {"==": "!=", "!=": "==", "in": "not in", "not in": "in", "is": "is not", "is not": "is"}


def _negated(fact: tuple[str, str, str | None]) -> tuple[str, str, str | None] | None:
    op = _NEGATED.get(fact[1])
    return (fact[0], op, fact[2]) if op is not None else None


def _comparison_inside(
    source: SourceFile, node: Node, literals: dict[str, tuple[str, int]] | None
) -> tuple[str, str, str | None] | None:
    """``(subject, op, expected)`` of a plain comparison ``a OP b``, for
    ``assertTrue(a == b)``."""
    node = unwrap(node)
    if node.type != "comparison_operator" or node.named_child_count != 2:
        return None
    left, right = node.named_children
    op = " ".join(source.node_text(c) for c in node.children if not c.is_named)
    if op not in ("==", "!=", "in", "not in", "is", "is not", "<", ">", "<=", ">="):
        return None
    subject, expected = canonical(source.node_text(left)), canonical(source.node_text(right))
    if op == "==" and literals:
        found = literals.get(source.node_text(unwrap(right)))
        if found is not None and found[1] <= node.start_byte:
            expected = found[0]
    if op in ("==", "!=") and _swapped(subject, expected):
        subject, expected = expected, subject
    return subject, op, expected


def _with_alias(source: SourceFile, call: Node) -> str | None:
    """``e`` of ``with pytest.raises(E) as e:`` (or of ``e = pytest.raises(E, f, x)``)."""
    parent = call.parent
    if parent is not None and parent.type == "assignment":
        left = parent.child_by_field_name("left")
        if left is not None and left.type == "identifier":
            return source.node_text(left)
    if parent is not None and parent.type == "as_pattern":
        target = parent.child_by_field_name("alias")
        if target is None and len(parent.named_children) > 1:
            target = parent.named_children[-1]
        if target is not None:
            return source.node_text(target).strip()
    return None


def assigned_literals(source: SourceFile, fn: Function) -> dict[str, tuple[str, int]]:
    """The test's locals bound exactly once, by a ``name = <literal>`` statement of its
    body: name -> (the literal, canonical; the byte where that statement ends). An
    equality's expected side that names one is that literal (arbitration fixes the
    literal there: checks/arbitration/isolate.py)."""
    candidates: dict[str, tuple[str, int]] = {}
    for stmt in statements(fn.body):
        assign = stmt.named_children[0] if stmt.type == "expression_statement" else None
        if assign is None or assign.type != "assignment":
            continue
        left, right = assign.child_by_field_name("left"), assign.child_by_field_name("right")
        if left is None or right is None or left.type != "identifier":
            continue
        value = source.node_text(unwrap(right))
        if not is_constant(canonical(value)):
            continue
        candidates[source.node_text(left)] = (canonical(value), stmt.end_byte)
    if not candidates:
        return {}
    bindings = binding_counts(source, fn.node, candidates)
    return {name: found for name, found in candidates.items() if bindings[name] == 1}


def _exception_names(source: SourceFile, node: Node) -> tuple[str, ...]:
    node = unwrap(node)
    items = node.named_children if node.type == "tuple" else [node]
    return tuple(sorted(source.node_text(i).rsplit(".", 1)[-1] for i in items))


def _approx(source: SourceFile, node: Node) -> tuple[float | None, float | None] | None:
    node = unwrap(node)
    if node.type != "call":
        return None
    callee = node.child_by_field_name("function")
    if callee is None or callee_parts(source, callee)[1] != "approx":
        return None
    return (
        _number(source, keyword_argument(source, node, "rel")),
        _number(source, keyword_argument(source, node, "abs")),
    )


def _almost_equal(source: SourceFile, call: Node, args: list[Node]) -> tuple[None, float | None]:
    """``assertAlmostEqual``'s tolerance as an absolute one: ``delta``, or ``10**-places``
    (``places`` defaults to 7)."""
    delta = _number(source, keyword_argument(source, call, "delta"))
    if delta is not None:
        return None, delta
    places_node = keyword_argument(source, call, "places")
    if places_node is None and len(args) > 2:
        places_node = args[2]
    places = _number(source, places_node) if places_node is not None else 7.0
    return None, (10.0**-places if places is not None else None)


def _approx_value(node: Node) -> Node:
    node = unwrap(node)
    args = call_arguments(node) if node.type == "call" else []
    return args[0] if args else node


def _number(source: SourceFile, node: Node | None) -> float | None:
    if node is None:
        return None
    try:
        return float(source.node_text(node).replace("_", ""))
    except ValueError:
        return None


def silenced_by(source: SourceFile, node: Node, fn: Node, early: Node | None) -> str | None:
    """Why an assertion can no longer fail: swallowed, unreachable or under a false
    condition; None when it can."""
    if early is not None and node.start_byte > early.end_byte:
        return f"after the unconditional `return` on line {early.start_point.row + 1}"
    raised = _raises_itself(source, node)
    if raised is not None:
        return raised
    child, parent = node, node.parent
    while parent is not None and parent != fn:
        if parent.type == "function_definition" and not _referenced(source, parent, fn):
            name = parent.child_by_field_name("name")
            return (
                f"in the nested function `{source.node_text(name) if name else '?'}` on line "
                f"{parent.start_point.row + 1}, which the test never calls or passes on"
            )
        if parent.type == "try_statement" and parent.child_by_field_name("body") == child:
            for handler in parent.named_children:
                if handler.type == "except_clause" and handler_swallows(
                    source, handler, _keeps_failure
                ):
                    return (
                        f"inside the `try` on line {parent.start_point.row + 1}, whose "
                        "`except` swallows failures"
                    )
        if parent.type == "if_statement" and parent.child_by_field_name("consequence") == child:
            condition = parent.child_by_field_name("condition")
            if condition is not None and source.node_text(condition).strip() in (
                "False",
                "0",
                "None",
                "''",
                '""',
            ):
                return (
                    f"under `if {source.node_text(condition)}:` on line "
                    f"{parent.start_point.row + 1}, which never runs"
                )
        if parent.type == "with_statement" and "suppress(" in source.node_text(
            parent.named_children[0]
        ):
            return f"inside `contextlib.suppress` on line {parent.start_point.row + 1}"
        child, parent = parent, parent.parent
    return None


def _raises_itself(source: SourceFile, node: Node) -> str | None:
    """``with pytest.raises(E): raise E(...)``: the block raises the exception itself,
    so the assertion passes whatever the code does."""
    item = node.parent
    if node.type != "call" or item is None or item.type != "with_item":
        return None
    statement = item.parent.parent if item.parent is not None else None
    body = statement.child_by_field_name("body") if statement is not None else None
    if statement is None or statement.type != "with_statement" or body is None:
        return None
    stmts = [c for c in body.named_children if c.type != "comment"]
    if stmts and all(c.type == "raise_statement" for c in stmts):
        return (
            f"satisfied by the `raise` in its own `with` block on line "
            f"{stmts[0].start_point.row + 1}, not by the code under test"
        )
    return None


def _referenced(source: SourceFile, nested: Node, fn: Node) -> bool:
    """Whether the test uses a function nested in it (calls it, passes it on): its name
    appears in the test outside its own definition, or a decorator registers it."""
    if nested.parent is not None and nested.parent.type == "decorated_definition":
        return True
    name = nested.child_by_field_name("name")
    if name is None:
        return True
    data = source.data
    outside = data[fn.start_byte : nested.start_byte] + data[nested.end_byte : fn.end_byte]
    pattern = rf"\b{re.escape(source.node_text(name))}\b".encode()
    return re.search(pattern, outside) is not None


def _keeps_failure(name: str) -> bool:
    """A call in an ``except`` body that fails the test again."""
    return name.startswith("assert") or name == "fail"
