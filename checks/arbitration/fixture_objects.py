"""An object a pytest fixture builds for the test: ``shell`` in ``def test_or(self, shell)``
where the test's class (or, if it has none of that name, the test's module) defines

    @pytest.fixture
    def shell(self):
        return Fish()

— a plain fixture (:mod:`~referee.checks.arbitration.fixture_rule`: function scope,
taking no other fixture, its whole body one ``return`` or ``yield``, the rule the suite's
reader applies too) whose value is one constructor call with literal arguments: each test
gets a fresh object built from the class and literals, as if it wrote ``shell = Fish()``
itself. The method under test is then arbitrated as a method of that object
(form ``method-of-fixture-object``), and so are the suite's other assertions about it.

Read only where nothing else can have given the name another object: the test takes it
as a parameter that no ``parametrize`` of the test names, and mentions it nowhere before
the assertion. A fixture in a ``conftest.py`` is not read (the module's own are the
tests' next to it; a conftest's may be overridden in between).
"""

from __future__ import annotations

import ast

from tree_sitter import Node

from referee.checks.arbitration.fixture_rule import RECEIVERS, fixture_value
from referee.checks.arbitration.sites import dotted, literal_text, mentioned_between
from referee.checks.nodes import statements
from referee.checks.pymodule import Function
from referee.checks.source import SourceFile

FORM = "method-of-fixture-object"


def fixture_object(source: SourceFile, fn: Function, name: str, assertion: Node) -> Node | None:
    """The constructor call the fixture ``name`` returns, when the test ``fn`` takes it
    and leaves it alone before ``assertion`` (see the module's docstring); else None."""
    call = fixture_call(source, fn, name)
    if call is None:
        return None
    if mentioned_between(source, fn.body, name, fn.body.start_byte, assertion.start_byte):
        return None
    return call


def fixture_call(source: SourceFile, fn: Function, name: str) -> Node | None:
    """The constructor call of the fixture ``name`` the test ``fn`` takes, with literal
    arguments; None for a name that is no such fixture's."""
    found = _fixture(source, fn, name)
    if not found or len(found) > 1:
        return None  # defined twice: which one pytest sees is not read here
    return _built(source, *found[0])


def why_not(source: SourceFile, fn: Function, name: str, assertion: Node) -> str | None:
    """Why the object the fixture ``name`` gives the test ``fn`` is not read (the rest of
    a one-line reason: "`shell` is ..."), or None where ``name`` is no fixture the test
    takes."""
    found = _fixture(source, fn, name)
    if found is None:
        return None
    if not found:
        return (
            "an object a fixture gives the test from a conftest.py or a plugin; arbitration "
            "reads the fixtures of the test's class and module only"
        )
    if len(found) > 1:
        return "an object a fixture gives the test that its class or module defines twice"
    if _built(source, *found[0]) is None:
        return (
            "an object a fixture gives the test that is not a fresh one built from a class "
            "and literals (a function-scope `@pytest.fixture`, taking no other fixture, "
            "whose whole body returns or yields one constructor call of literals)"
        )
    if mentioned_between(source, fn.body, name, fn.body.start_byte, assertion.start_byte):
        return "an object a fixture builds that the test uses before the assertion"
    return None


def _fixture(source: SourceFile, fn: Function, name: str) -> list[tuple[Node, Node]] | None:
    """The definitions of ``name`` in the nearest of the test's class and module that has
    one ([] when neither has), or None where the test takes no fixture ``name``."""
    if name not in _parameters(source, fn.node) or _parametrized(source, fn, name):
        return None
    scopes = [fn.class_.node] if fn.class_ is not None else []
    scopes.append(source.tree.root_node)
    for scope in scopes:
        body = scope.child_by_field_name("body") if scope.type == "class_definition" else scope
        found = _definitions(source, body, name) if body is not None else []
        if found:
            return found
    return []


def _definitions(source: SourceFile, body: Node, name: str) -> list[tuple[Node, Node]]:
    """(decorated definition, function definition) of each definition ``name`` in
    ``body``, decorated or not."""
    found = []
    for stmt in statements(body):
        definition = stmt
        if stmt.type == "decorated_definition":
            definition = stmt.child_by_field_name("definition") or stmt.named_children[-1]
        label = definition.child_by_field_name("name") if definition is not None else None
        if label is not None and source.node_text(label) == name:
            found.append((stmt, definition))
    return found


def _built(source: SourceFile, stmt: Node, definition: Node) -> Node | None:
    """The constructor call of literals the plain fixture ``stmt`` returns or yields, or
    None."""
    if stmt.type != "decorated_definition" or definition.type != "function_definition":
        return None
    value = _fixture_value(source, stmt)
    if value is None:
        return None
    constructor = dotted(source, value.child_by_field_name("function"))
    if not constructor or constructor.partition(".")[0] in RECEIVERS:
        return None
    for arg in _arguments(value):
        written = arg.child_by_field_name("value") if arg.type == "keyword_argument" else arg
        if written is None or literal_text(source.node_text(written)) is None:
            return None
    return value


def _fixture_value(source: SourceFile, stmt: Node) -> Node | None:
    """The call node of the decorated definition ``stmt`` that
    :func:`~referee.checks.arbitration.fixture_rule.fixture_value` reads as its value: the
    definition is read with ``ast`` as it stands, at its own indentation (under an ``if``
    when it has one), and the call found again in the tree at the same place."""
    row, column = stmt.start_point
    indent = source.lines[row][:column].decode("utf-8", "replace")
    head = "if 1:\n" if indent else ""  # a class's fixture: its lines as indented
    try:
        tree = ast.parse(head + indent + source.node_text(stmt))
    except (SyntaxError, ValueError):
        return None
    definitions = tree.body[0].body if head and isinstance(tree.body[0], ast.If) else tree.body
    value = fixture_value(definitions[0]) if len(tree.body) == len(definitions) == 1 else None
    if value is None or value.end_lineno is None or value.end_col_offset is None:
        return None
    first = row - head.count("\n") - 1  # the row of the text's line 1
    start = (first + value.lineno, value.col_offset)
    end = (first + value.end_lineno, value.end_col_offset)
    node = source.tree.root_node.descendant_for_point_range(start, end)
    while node is not None and node.type != "call" and node.start_point == start:
        node = node.parent  # the innermost node of the span may be a part of the call
    if node is None or node.type != "call" or (node.start_point, node.end_point) != (start, end):
        return None
    return node


def _parameters(source: SourceFile, definition: Node) -> list[str]:
    parameters = definition.child_by_field_name("parameters")
    names = []
    for p in parameters.named_children if parameters is not None else []:
        if p.type == "identifier":
            names.append(source.node_text(p))
        elif p.type in ("default_parameter", "typed_parameter", "typed_default_parameter"):
            label = p.child_by_field_name("name") or (
                p.named_children[0] if p.named_children else None
            )
            if label is not None:
                names.append(source.node_text(label))
        else:
            names.append("*")  # *args, **kwargs: not a plain fixture
    return names


def _parametrized(source: SourceFile, fn: Function, name: str) -> bool:
    """Whether a decorator of the test (``parametrize``) names ``name``: it overrides a
    fixture of that name."""
    node = fn.node.parent
    if node is None or node.type != "decorated_definition":
        return False
    return any(d.type == "decorator" and name in source.node_text(d) for d in node.named_children)


def _arguments(call: Node) -> list[Node]:
    """Every argument of ``call``, keyword ones included."""
    args = call.child_by_field_name("arguments")
    return [a for a in args.named_children if a.type != "comment"] if args is not None else []
