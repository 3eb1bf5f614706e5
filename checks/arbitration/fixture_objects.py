"""An object a pytest fixture builds for the test: ``shell`` in ``def test_or(self, shell)``
where the test's class (or, if it has none of that name, the test's module) defines

    @pytest.fixture
    def shell(self):
        return Fish()

— a fixture whose whole body returns (or yields) one constructor call with literal
arguments, taking no other fixture, of the default (function) scope, not parametrized:
each test gets a fresh object built from the class and literals, as if it wrote ``shell =
Fish()`` itself. The method under test is then arbitrated as a method of that object
(form ``method-of-fixture-object``), and so are the suite's other assertions about it.

Read only where nothing else can have given the name another object: the test takes it
as a parameter that no ``parametrize`` of the test names, and mentions it nowhere before
the assertion. A fixture in a ``conftest.py`` is not read (the module's own are the
tests' next to it; a conftest's may be overridden in between).
"""

from __future__ import annotations

from tree_sitter import Node

from referee.checks.arbitration.sites import dotted, literal_text, mentioned_between
from referee.checks.nodes import is_docstring, statements, unwrap
from referee.checks.pymodule import Function
from referee.checks.source import SourceFile

FORM = "method-of-fixture-object"
_FIXTURE = frozenset({"pytest.fixture", "fixture"})
_RECEIVERS = frozenset({"self", "cls"})


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
    if stmt.type != "decorated_definition" or definition.type != "function_definition":
        return None
    decorators = [d for d in stmt.named_children if d.type == "decorator"]
    if len(decorators) != 1 or not _plain_fixture(source, decorators[0]):
        return None
    if set(_parameters(source, definition)) - _RECEIVERS:
        return None  # it takes other fixtures (``request``, ``tmp_path``...)
    body = definition.child_by_field_name("body")
    steps = [s for s in statements(body) if not is_docstring(s)] if body is not None else []
    if len(steps) != 1:
        return None
    step = steps[0]
    if step.type == "return_statement":
        value = next((c for c in step.named_children if not c.is_extra), None)
    elif step.type == "expression_statement" and step.named_children[0].type == "yield":
        value = next((c for c in step.named_children[0].named_children if not c.is_extra), None)
    else:
        return None
    value = unwrap(value) if value is not None else None
    if value is None or value.type != "call":
        return None
    constructor = dotted(source, value.child_by_field_name("function"))
    if not constructor or constructor.partition(".")[0] in _RECEIVERS:
        return None
    for arg in _arguments(value):
        written = arg.child_by_field_name("value") if arg.type == "keyword_argument" else arg
        if written is None or literal_text(source.node_text(written)) is None:
            return None
    return value


def _plain_fixture(source: SourceFile, decorator: Node) -> bool:
    """``@pytest.fixture``, ``@pytest.fixture()`` or ``@pytest.fixture(scope="function")``:
    a fresh value for each test, under the fixture's own name."""
    expression = next((c for c in decorator.named_children if not c.is_extra), None)
    if expression is None:
        return False
    if expression.type != "call":
        return source.node_text(expression) in _FIXTURE
    if dotted(source, expression.child_by_field_name("function")) not in _FIXTURE:
        return False
    for arg in _arguments(expression):
        if arg.type != "keyword_argument":
            return False
        key = arg.child_by_field_name("name")
        value = arg.child_by_field_name("value")
        if key is None or value is None:
            return False
        if source.node_text(key) == "autouse":
            continue
        if source.node_text(key) != "scope" or literal_text(source.node_text(value)) not in (
            "'function'",
            '"function"',
        ):
            return False
    return True


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
