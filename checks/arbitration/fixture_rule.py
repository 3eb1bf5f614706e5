"""What a *plain* pytest fixture is, read one way for both of its readers: the failing
call's (:mod:`~referee.checks.arbitration.fixture_objects`, on tree-sitter's tree) and the
suite's (:func:`~referee.checks.arbitration.suite_methods.fixture_buildings`, on ``ast``).

A plain fixture gives each test a fresh object built by one call, as if the test wrote
``shell = Fish()`` itself:

    @pytest.fixture
    def shell(self):
        return Fish()

— one decorator, ``@pytest.fixture`` (``fixture``), bare or called with no argument but
``scope="function"`` and ``autouse``; a function (not ``async``) that takes no other
fixture (``self`` and ``cls`` only, no ``*args``); a body that, strings aside, is one
``return`` or ``yield`` of a call. What the call must build (a class of the method under
test, literal arguments) is each reader's own question.
"""

from __future__ import annotations

import ast

from referee.checks.arbitration.ast_names import dotted_name

DECORATORS = frozenset({"pytest.fixture", "fixture"})
RECEIVERS = frozenset({"self", "cls"})


def plain_decorator(decorator: ast.expr) -> bool:
    """``@pytest.fixture``, ``@pytest.fixture()`` or ``@pytest.fixture(scope="function")``
    (``autouse`` too): a fresh value for each test, under the fixture's own name."""
    if not isinstance(decorator, ast.Call):
        return dotted_name(decorator) in DECORATORS
    if dotted_name(decorator.func) not in DECORATORS or decorator.args:
        return False
    return all(
        k.arg == "autouse"
        or (k.arg == "scope" and isinstance(k.value, ast.Constant) and k.value.value == "function")
        for k in decorator.keywords
    )


def fixture_value(node: ast.stmt) -> ast.Call | None:
    """The call the plain fixture ``node`` returns or yields (see the module's docstring),
    or None where ``node`` is no plain fixture."""
    if not isinstance(node, ast.FunctionDef) or len(node.decorator_list) != 1:
        return None
    if not plain_decorator(node.decorator_list[0]):
        return None
    arguments = node.args
    names = [a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]]
    if set(names) - RECEIVERS or arguments.vararg or arguments.kwarg:
        return None  # it takes other fixtures (``request``, ``tmp_path``...)
    steps = [
        stmt
        for stmt in node.body
        if not (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
        )
    ]
    if len(steps) != 1:
        return None
    step = steps[0]
    value: ast.expr | None = None
    if isinstance(step, ast.Return):
        value = step.value
    elif isinstance(step, ast.Expr) and isinstance(step.value, ast.Yield):
        value = step.value.value
    return value if isinstance(value, ast.Call) else None
