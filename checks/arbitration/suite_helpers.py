"""The calls of a test module's assertion helpers, read as the rows of a table: a helper
(``def _check(self, inp, out): self.assertEqual(strip_jsonp(inp), out)``, or a module
function the tests call) asserts about the function with its parameters, and each test
that calls it with literals (``self._check("cb(1)", "1")``) states one example. The
helper's assertions are read once per such call, its parameters bound to that call's
values, as a ``@pytest.mark.parametrize`` row binds a test's — what
:func:`~referee.checks.arbitration.suite_reading.assertions` reads; nothing runs here."""

from __future__ import annotations

import ast
from dataclasses import dataclass

_NOT_HELPERS = frozenset({"setUp", "tearDown", "setUpClass", "tearDownClass", "setup_method",
                          "teardown_method", "setup_class", "teardown_class"})  # fmt: skip

Where = tuple[str | None, str]  # (the class or None, the function's name)


@dataclass(frozen=True)
class Site:
    """One call of a helper from a test: its parameters' values, its lines, its test."""

    values: dict[str, object]
    first: int
    last: int
    test: Where


def helper_sites(tree: ast.Module) -> dict[Where, list[Site]]:
    """Each helper of the module — a function or a method of a test class that is not a
    test (``test*``) nor a set-up hook, with plain parameters — and the calls of it, as a
    statement of a test of the module (``self._check(...)`` in a method of its class,
    ``check(...)`` for a module function), whose every argument is a literal."""
    helpers: dict[Where, ast.FunctionDef] = {}
    tests: list[tuple[Where, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in tree.body:
        scopes = [(None, node)] if isinstance(node, ast.FunctionDef) else []
        if isinstance(node, ast.ClassDef):
            scopes = [(node.name, f) for f in node.body if isinstance(f, ast.FunctionDef)]
        for cls, function in scopes:
            if function.name.startswith("test"):
                tests.append(((cls, function.name), function))
            elif function.name not in _NOT_HELPERS and not function.name.startswith("__"):
                helpers[(cls, function.name)] = function
    sites: dict[Where, list[Site]] = {}
    for (cls, name), test in tests:
        for statement in ast.walk(test):
            if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
                continue
            call = statement.value
            key = _helper_of(call.func, cls)
            if key is None or (helper := helpers.get(key)) is None:
                continue
            values = _bound(helper, call, method=key[0] is not None)
            if values is not None:
                last = getattr(statement, "end_lineno", None) or statement.lineno
                sites.setdefault(key, []).append(Site(values, statement.lineno, last, (cls, name)))
    return sites


def _helper_of(func: ast.expr, cls: str | None) -> Where | None:
    """The helper a call names: ``self.name`` in a method of ``cls``, a bare ``name``."""
    if isinstance(func, ast.Name):
        return (None, func.id)
    if (
        cls is not None
        and isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    ):
        return (cls, func.attr)
    return None


def _bound(helper: ast.FunctionDef, call: ast.Call, *, method: bool) -> dict[str, object] | None:
    """The helper's parameters bound to the call's literal arguments (and the defaults it
    leaves, when literal), as Python binds them; None for any other call or helper."""
    arguments = helper.args
    if arguments.vararg or arguments.kwarg or helper.decorator_list:
        return None
    positional = [*arguments.posonlyargs, *arguments.args]
    if method:
        if not positional:
            return None
        positional = positional[1:]  # self
    names = [a.arg for a in positional]
    first = len(names) - len(arguments.defaults)
    defaults = dict(zip(names[first:], arguments.defaults, strict=True))
    defaults.update(
        (a.arg, d)
        for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
        if d is not None
    )
    if len(call.args) > len(names) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    given: dict[str, ast.expr] = dict(zip(names, call.args, strict=False))  # fewer args
    for keyword in call.keywords:
        allowed = keyword.arg in names or keyword.arg in {a.arg for a in arguments.kwonlyargs}
        if keyword.arg is None or keyword.arg in given or not allowed:
            return None
        given[keyword.arg] = keyword.value
    values: dict[str, object] = {}
    for name in [*names, *(a.arg for a in arguments.kwonlyargs)]:
        node = given.get(name, defaults.get(name))
        if node is None:
            return None  # a required parameter the call leaves out: not a call Python runs
        try:
            values[name] = ast.literal_eval(node)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return values
