"""Which assignment a read of a name in a test takes its value from: one rule, on ``ast``,
for both readers that ask it — the failing call's (:func:`~referee.checks.arbitration.sites.
reaching_assignment`, which reads the test's text with ``ast`` and maps the answer back to
tree-sitter's tree) and the suite's (:func:`~referee.checks.arbitration.suite_methods.
built_objects`).

A read in the test's top-level statement ``position`` holds the value of the last
``name = value`` statement at the test's top level before it (``r = parse(a)``, ``assert
r == …``, ``r = parse(b)``: the test may assign the name again, before or after). Nothing
else is certain to hold it there, so there is no answer, where the name is also bound:

- between the two statements, or inside the one that holds the read (a loop goes round to
  it; ``+=``, a ``for`` or ``with`` target, an import, ``except … as``, ``del``);
- inside the assignment's own value (``r = f(r := …)``);
- in a nested function, lambda or class (a parameter, a definition of that name), or by a
  ``global`` or ``nonlocal`` of it;

nor where a nested function, lambda or class reads it: it may run at any later time — once
the name holds another value, or between the assignment and the read, changing the object
the read takes as built.

A leaf module: it imports nothing of referee's but unittest's table of assertion methods.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from referee.checks.arbitration.assertion_methods import ALIASES, METHODS

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
FunctionAst = ast.FunctionDef | ast.AsyncFunctionDef


def assigned_value(stmt: ast.stmt, name: str) -> ast.expr | None:
    """The value of ``stmt`` when it is ``name = value`` (or ``name: T = value``), or
    unpacks it into names one of which is ``name`` (``a, name = value``:
    :func:`unpacked_position`)."""
    if (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and stmt.targets[0].id == name
    ):
        return stmt.value
    if unpacked_position(stmt, name) is not None:
        return stmt.value  # type: ignore[attr-defined]
    if (
        isinstance(stmt, ast.AnnAssign)
        and isinstance(stmt.target, ast.Name)
        and stmt.target.id == name
    ):
        return stmt.value
    return None


def unpacked_position(stmt: ast.stmt, name: str) -> tuple[int, int] | None:
    """(the place of ``name``, how many names) where ``stmt`` unpacks its value into plain
    names, ``name`` once among them (``a, name = value``, ``[a, name] = value``); None for
    anything else (a starred or nested target, a name twice)."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return None
    target = stmt.targets[0]
    if not isinstance(target, (ast.Tuple, ast.List)):
        return None
    names = [e.id if isinstance(e, ast.Name) else None for e in target.elts]
    if None in names or names.count(name) != 1:
        return None
    return names.index(name), len(names)


def reaching(function: FunctionAst, name: str, position: int) -> int | None:
    """The index in ``function.body`` of the assignment whose value ``name`` holds in the
    top-level statement ``position`` (see the module's docstring), or None."""
    found = [
        i
        for i, stmt in enumerate(function.body[:position])
        if assigned_value(stmt, name) is not None
    ]
    if not found or position >= len(function.body):
        return None
    index = found[-1]
    value = assigned_value(function.body[index], name)
    for held, node, nested in _bindings(function, name):
        if nested:
            return None  # a nested scope's, a ``global`` or ``nonlocal``
        if held == index and value is not None and _inside(node, value):
            return None  # ``r = f(r := …)``
        if index < held <= position:
            return None
    return index


def _inside(node: ast.AST, outer: ast.AST) -> bool:
    return any(node is inner for inner in ast.walk(outer))


def _bindings(function: FunctionAst, name: str) -> Iterator[tuple[int, ast.AST, bool]]:
    """Each binding of ``name`` in the body of ``function``, and each read of it in a
    nested scope: (the index of the top-level statement that holds it, the node, whether
    it is not the test's own — in a nested scope, or a ``global``/``nonlocal``)."""
    for index, stmt in enumerate(function.body):
        stack: list[tuple[ast.AST, bool]] = [(stmt, False)]
        while stack:
            node, nested = stack.pop()
            if _binds(node, name) or (nested and _reads(node, name)):
                yield index, node, nested or isinstance(node, (ast.Global, ast.Nonlocal))
            inner = nested or isinstance(node, SCOPES)
            definition = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            if definition and node.name == name:  # type: ignore[attr-defined]
                yield index, node, True  # a definition of that name: not a value
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))


def _reads(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)


def _binds(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name and not isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.arg):
        return node.arg == name
    if isinstance(node, ast.alias):
        return (node.asname or node.name.partition(".")[0]) == name
    if isinstance(node, ast.ExceptHandler):
        return node.name == name
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return name in node.names
    if isinstance(node, (ast.MatchAs, ast.MatchStar)):
        return node.name == name
    if isinstance(node, ast.MatchMapping):
        return node.rest == name
    return False


# Built-ins an assertion may apply to the value without changing it or using it up: not
# ``list``, ``sorted`` or ``sum``, which exhaust an iterator a later read would find empty.
_LOOKING = frozenset({"len", "isinstance", "type", "repr", "str", "bool", "id"})


def readers(function: FunctionAst, name: str, index: int) -> list[tuple[int, int, int]]:
    """The top-level statements after the assignment ``index`` of ``name`` that read the
    value it left: (statement, line, column) of each one's first read of ``name``. The
    first that reads it takes it as built; so does each after it while every one before
    only looked at it — an assertion that compares it, its attributes or items under
    literal keys, or its ``len`` (:func:`only_looks`: ``assert len(stmts) == 2``, then
    ``assert stmts[0] == 'select foo;'``). A call of one of its methods, an argument to
    another function, anything but such an assertion, may have changed it: the statement
    reads it, the ones after it do not take it as built. Nor does anything from a statement
    that binds a name the assignment's value reads on (``r = f(x)``, then ``x = 3``): the
    call, read as written, would no longer be the one that made the value."""
    found: list[tuple[int, int, int]] = []
    value = assigned_value(function.body[index], name)
    inputs = (
        {n.id for n in ast.walk(value) if isinstance(n, ast.Name) and _reads(n, n.id)}
        if value is not None
        else set()
    )
    for position in range(index + 1, len(function.body)):
        stmt = function.body[position]
        if rebound(function, inputs, position - 1, position):
            break  # ``x = 3`` after ``r = f(x)``: the call as written no longer says what it got
        reads = [(node.lineno, node.col_offset) for node in ast.walk(stmt) if _reads(node, name)]
        if not reads:
            continue
        if reaching(function, name, position) != index:
            break
        found.append((position, *min(reads)))
        if not only_looks(stmt, name):
            break
    return found


def rebound(function: FunctionAst, names: set[str], start: int, end: int) -> bool:
    """Whether a top-level statement after ``start`` and up to ``end`` (included) binds
    one of ``names`` (``x = 5`` after ``y = x + 1``: ``y`` no longer reads as ``x + 1``
    with ``x`` read at the assertion)."""
    return any(
        _binds(node, name)
        for stmt in function.body[start + 1 : end + 1]
        for node in ast.walk(stmt)
        for name in names
    )


def only_looked_at(function: FunctionAst, names: list[str], start: int, end: int) -> bool:
    """Whether the top-level statements between ``start`` and ``end`` (both left out)
    mention each of ``names`` only in assertions that look (:func:`only_looks`): the other
    names a statement unpacked (``a, b = f(x)``: a call on ``b`` may change ``a`` when they
    share an object)."""
    for stmt in function.body[start + 1 : end]:
        for name in names:
            if _mentions(stmt, name) and not only_looks(stmt, name):
                return False
    return True


def only_looks(stmt: ast.stmt, name: str) -> bool:
    """Whether ``stmt`` is an assertion (``assert``, or a unittest assertion method other
    than ``assertIn``'s container) that mentions ``name`` only to look at it: compared, or
    its attribute read, or its item under a literal key, or given to a built-in that
    looks (``len``, ``isinstance``)."""
    if isinstance(stmt, ast.Assert):
        roots: list[ast.AST] = [stmt.test, *([stmt.msg] if stmt.msg is not None else [])]
    elif (method := _assertion_method(stmt)) is not None:
        call = stmt.value  # type: ignore[attr-defined]
        arguments = list(call.args)
        container = arguments[1] if len(arguments) > 1 else None
        if method in ("assertIn", "assertNotIn") and container and _mentions(container, name):
            return False  # the container is iterated
        roots = [*arguments, *(k.value for k in call.keywords)]
    else:
        return False
    return all(_looks(root, name) for root in roots)


def _assertion_method(stmt: ast.stmt) -> str | None:
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    func = stmt.value.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return None
    if func.value.id != "self":
        return None
    method = ALIASES.get(func.attr, func.attr)
    return method if method in METHODS else None


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _looks(node: ast.AST, name: str) -> bool:
    """Whether every mention of ``name`` under ``node`` only looks at its value."""
    if not _mentions(node, name):
        return True
    if isinstance(node, (ast.Attribute, ast.Subscript)) or (
        isinstance(node, ast.Name) and node.id == name
    ):
        return _looked_at(node, name)
    if isinstance(node, ast.Compare):
        sides = [node.left, *node.comparators]
        containers = {i + 1 for i, op in enumerate(node.ops) if isinstance(op, (ast.In, ast.NotIn))}
        return all(
            _looks(side, name) and not (i in containers and _mentions(side, name))
            for i, side in enumerate(sides)
        )
    if isinstance(node, ast.BoolOp):
        return all(_looks(value, name) for value in node.values)
    if isinstance(node, ast.UnaryOp):
        return _looks(node.operand, name)
    if isinstance(node, ast.Call):
        looking = isinstance(node.func, ast.Name) and node.func.id in _LOOKING
        return looking and not node.keywords and all(_looks(a, name) for a in node.args)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_looks(element, name) for element in node.elts)
    return False


def _looked_at(node: ast.AST, name: str) -> bool:
    """``name``, ``name.attr``, ``name[0]``, ``name["k"].attr[1:2]``: a chain of attribute
    reads and literal subscripts down to the name itself."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript) and _mentions(node.slice, name):
            return False
        if isinstance(node, ast.Subscript) and not _literal_key(node.slice):
            return False
        node = node.value
    return isinstance(node, ast.Name) and node.id == name


def _literal_key(node: ast.expr) -> bool:
    if isinstance(node, ast.Slice):
        parts = (node.lower, node.upper, node.step)
        return all(p is None or _literal_key(p) for p in parts)
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True
