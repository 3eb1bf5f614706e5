"""What ``self.name`` stands for in a test method: the one value the test's class binds to
it — ``self.name = value`` at the top of its ``setUp`` (unittest) or ``setup_method``
(pytest), or ``name = value`` in the class body — when nothing else in the class binds it.

unittest suites build their inputs and the objects under test there (``self.parser =
DateTimeParser()`` once, then ``self.parser.parse("2013-05-05", "YYYY-MM-DD")`` in each
test). The test runs on an instance of the class its node id names, the one that defines
the test method (:func:`~referee.checks.arbitration.sites.find_test`), so that class's own
``setUp`` is the one that ran. It is read only where nothing can have given the name
another value by the time the assertion ran:

- the class binds ``self.name`` (or ``cls.name``) exactly once — no second assignment, no
  ``+=``, ``del``, loop or ``with`` target in any of its methods — and calls no
  ``setattr``;
- in ``setUp`` the assignment is a statement of its own body (not inside an ``if``, a loop
  or a ``try``), and no statement after it calls ``super()`` or a method of ``self``
  (a base class's ``setUp`` could bind the name again);
- an object the test calls a method of is left alone before the assertion: no statement
  after the assignment in ``setUp``, nor of the test before the assertion, mentions it.

What is read: an immutable literal, as an argument (never edited: other tests read it
too), and a constructor call with literal arguments, as the object a method under test is
called on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from referee.checks.arbitration.sites import (
    assignments,
    dotted,
    immutable_literal,
    literal_text,
    mentioned_between,
)
from referee.checks.nodes import binds, call_arguments, statements, unwrap
from referee.checks.pymodule import Function
from referee.checks.source import SourceFile

SET_UP_METHODS = ("setUp", "setup_method")
SET_UP_ATTRIBUTE = "set-up-attribute"
CLASS_ATTRIBUTE = "class-attribute"
METHOD_OF_SET_UP_OBJECT = "method-of-set-up-object"
_RECEIVERS = ("self", "cls")
# Bases that bind no attribute of a test's on its instances.
_PLAIN_BASES = frozenset({"object", "TestCase", "unittest.TestCase"})


@dataclass(frozen=True)
class ClassBinding:
    """The one value the test's class binds to an attribute: the value's node, the form
    (``set-up-attribute`` or ``class-attribute``), and the statements after it in
    ``setUp`` (empty for a class attribute)."""

    value: Node
    form: str
    after: tuple[Node, ...]


def attribute_of_self(source: SourceFile, node: Node) -> str | None:
    """``name`` for the expression ``self.name``, else None."""
    node = unwrap(node)
    if node.type != "attribute":
        return None
    obj = node.child_by_field_name("object")
    attr = node.child_by_field_name("attribute")
    if obj is None or attr is None or obj.type != "identifier":
        return None
    return source.node_text(attr) if source.node_text(obj) == "self" else None


def class_binding(source: SourceFile, fn: Function, name: str) -> ClassBinding | None:
    """The one binding of ``self.name`` the class of the test method ``fn`` makes, read
    as the module docstring says, else None."""
    if fn.class_ is None:
        return None
    cls = fn.class_.node
    body = cls.child_by_field_name("body")
    if body is None or _calls_setattr(source, cls):
        return None
    targets = [n for n in _attribute_targets(source, cls, name)]
    class_level = assignments(source, statements(body), name)
    if len(targets) + len(class_level) != 1:
        return None
    if class_level:
        if any(base not in _PLAIN_BASES for base in fn.class_.bases):
            return None  # a base class's setUp may bind it on the instance
        return ClassBinding(class_level[0][1], CLASS_ATTRIBUTE, ())
    target = targets[0]
    method = _set_up_method(source, body, target)
    if method is None:
        return None
    steps = statements(method)
    index = next((i for i, s in enumerate(steps) if _holds(s, target)), None)
    if index is None:
        return None
    assigned = assignments(source, [steps[index]], f"self.{name}")
    if not assigned:
        return None
    after = tuple(steps[index + 1 :])
    if any(_calls_up(source, stmt) for stmt in after):
        return None
    return ClassBinding(assigned[0][1], SET_UP_ATTRIBUTE, after)


def named_class(source: SourceFile, fn: Function, constructor: str) -> str | None:
    """The class a constructor written ``self.storage_class`` names, where the test's
    class binds that attribute once, in its own body, to a dotted name (``storage_class =
    ds.LanguageAccept``): ``ds.LanguageAccept``, the name as the test module imports it —
    else None. The test method is the node's own (an inherited one is not arbitrated), so
    its class's binding is the one the run saw."""
    receiver, dot, name = constructor.partition(".")
    if receiver not in _RECEIVERS or not dot or "." in name:
        return None
    binding = class_binding(source, fn, name)
    if binding is None or binding.form != CLASS_ATTRIBUTE:
        return None
    if binding.value.type not in ("identifier", "attribute"):
        return None
    named = dotted(source, binding.value)
    return named if named and named.partition(".")[0] not in _RECEIVERS else None


def literal_of(source: SourceFile, binding: ClassBinding) -> str | None:
    """The binding's value when it is an immutable literal, as one line."""
    return immutable_literal(source.node_text(binding.value))


def built_object(source: SourceFile, fn: Function, name: str, assertion: Node) -> Node | None:
    """The constructor call ``setUp`` builds ``self.name`` from (``Parser("en")``) when
    every argument of it is a literal and nothing touches the object before the
    assertion; else None."""
    binding = class_binding(source, fn, name)
    if binding is None or binding.form != SET_UP_ATTRIBUTE or binding.value.type != "call":
        return None
    call = binding.value
    for arg in call_arguments(call):
        value = arg.child_by_field_name("value") if arg.type == "keyword_argument" else arg
        if value is None or literal_text(source.node_text(value)) is None:
            return None
    mention = f"self.{name}"
    if any(mention in source.node_text(stmt) for stmt in binding.after) or mentioned_between(
        source, fn.body, mention, fn.body.start_byte, assertion.start_byte
    ):
        return None  # anywhere before the assertion: also inside the block that holds it
    return call


def _attribute_targets(source: SourceFile, root: Node, name: str) -> list[Node]:
    """Every ``self.name`` / ``cls.name`` under ``root`` that is bound where it stands."""
    found = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "attribute":
            obj = node.child_by_field_name("object")
            attr = node.child_by_field_name("attribute")
            if (
                obj is not None
                and attr is not None
                and source.node_text(obj) in _RECEIVERS
                and source.node_text(attr) == name
                and binds(node)
            ):
                found.append(node)
        stack.extend(node.named_children)
    return found


def _set_up_method(source: SourceFile, class_body: Node, target: Node) -> Node | None:
    """The body of the class's own ``setUp``/``setup_method`` when ``target`` stands in
    it, else None."""
    for stmt in statements(class_body):
        definition = stmt
        if definition.type != "function_definition":
            continue  # a decorated setUp may not be what runs
        label = definition.child_by_field_name("name")
        body = definition.child_by_field_name("body")
        if (
            label is not None
            and body is not None
            and source.node_text(label) in SET_UP_METHODS
            and body.start_byte <= target.start_byte < body.end_byte
        ):
            return body
    return None


def _holds(stmt: Node, node: Node) -> bool:
    return stmt.start_byte <= node.start_byte < stmt.end_byte


def _calls_up(source: SourceFile, stmt: Node) -> bool:
    """Whether ``stmt`` calls ``super()``, a base class's method or a method of ``self``."""

    def up(text: str) -> bool:
        return (
            text == "super"
            or text.startswith(("self.", "super("))
            or text.rsplit(".", 1)[-1] in SET_UP_METHODS  # Base.setUp(self)
        )

    return _calls(source, stmt, up)


def _calls_setattr(source: SourceFile, root: Node) -> bool:
    return _calls(source, root, lambda text: text in ("setattr", "vars"))


def _calls(source: SourceFile, root: Node, named: Callable[[str], bool]) -> bool:
    """Whether a call under ``root`` calls a function whose text ``named`` takes."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "call":
            function = node.child_by_field_name("function")
            if function is not None and named(source.node_text(function)):
                return True
        stack.extend(node.named_children)
    return False
