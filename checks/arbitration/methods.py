"""Methods that take the object or its class, as a subject of arbitration.

A call ``Table([[]]).to_text()`` (or ``t = Table([[]])`` once, then ``t.to_text()``)
tests the method ``Table.to_text`` on an object the test builds from literals; a call
``Table.from_rows(1)`` tests a class method. Neither is a function an oracle can write as
it is — the oracle never sees the class's code — so each gets an oracle contract:

* a method: the oracle writes ``def to_text(init_args: tuple, init_kwargs: dict, ...the
  method's parameters)``, returning what ``Table(*init_args, **init_kwargs).to_text(...)``
  returns; every source of truth (a doctest, a reference, an oracle) is called as
  ``to_text(([[]],), {}, ...)`` (:attr:`Isolated.oracle_arguments`);
* a class method: the oracle writes ``def from_rows(...the method's parameters, cls
  left out)``, returning what ``Table.from_rows(...)`` returns.

The oracles are shown the class as :func:`class_stub` writes it — its decorators, bases,
docstring and class-level fields, the constructor's and the method's signatures and
docstrings — never a body, never the test. A fix replaces the method's body inside its
class (:func:`referee.checks.arbitration.splice.splice` finds ``Table.to_text``).
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import doctest
import inspect
from typing import Any

from tree_sitter import Node

from referee.checks.arbitration.isolate import (
    FunctionSpec,
    definition_parts,
    function_spec,
    located_spec,
)
from referee.checks.arbitration.sites import WRAPPERS, Isolated, NotIsolated
from referee.checks.nodes import statements
from referee.checks.source import SourceFile

# What the oracle of a method takes before the method's own parameters.
INIT_ARGS, INIT_KWARGS = "init_args", "init_kwargs"
# What the oracles of building an object (``Bits(4, 2)`` expected to raise) name their function.
CONSTRUCTION = "build"
_CONSTRUCTORS = ("__init__", "__new__", "__post_init__")


def method_spec(text: str, path: str, module: str, qualname: str, form: str) -> FunctionSpec:
    """The method ``Class.name`` (``form`` ``"method"``: it takes the object;
    ``"classmethod"``) of a top-level class of a module's text, with its oracle
    contract. Raises :class:`NotIsolated`."""
    owner, _, name = qualname.rpartition(".")
    if not owner or "." in owner:
        raise NotIsolated(
            f"`{qualname}` is not a method of a top-level class; arbitration handles "
            "methods of top-level classes"
        )
    source = SourceFile(path, text)
    node = _member(source, owner, name, form)
    definition, _, docstring, method_doc = definition_parts(source, node)
    tree = ast.parse(text)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner)
    method = next(
        n
        for n in cls.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and n.name == name
        and n.lineno == definition.start_point.row + 1
    )
    signature, call = oracle_function(owner, method, form)
    # the method's docstring, and its class's (where usage examples often are)
    value = (
        "\n\n".join(filter(None, [method_doc, _cleaned(ast.get_docstring(cls, clean=False))]))
        or None
    )
    spec = located_spec(
        module,
        qualname,
        text,
        (node, definition),
        (signature, docstring, value),
        form,
        class_stub=class_stub(cls, method),
        oracle_call=call,
    )
    if form == "method" and name == "__init__":
        # a function named ``__init__`` is read as the class's own by a small model (it
        # writes the class, and no function): the oracles write ``build``
        return dataclasses.replace(spec, name=CONSTRUCTION)
    return spec


def _cleaned(docstring: str | None) -> str | None:
    return inspect.cleandoc(docstring) if docstring else None


def _member(source: SourceFile, owner: str, name: str, form: str) -> Node:
    """The definition node (decorated or not) of the method ``name`` of the top-level
    class ``owner`` that is of kind ``form``."""
    for node in source.tree.root_node.named_children:
        cls = (
            node.child_by_field_name("definition") if node.type == "decorated_definition" else node
        )
        if cls is None or cls.type != "class_definition":
            continue
        cls_name, body = cls.child_by_field_name("name"), cls.child_by_field_name("body")
        if cls_name is None or body is None or source.node_text(cls_name) != owner:
            continue
        for member in statements(body):
            definition = member
            decorators: list[str] = []
            if member.type == "decorated_definition":
                definition = member.child_by_field_name("definition")
                decorators = [
                    source.node_text(d).lstrip("@").strip()
                    for d in member.named_children
                    if d.type == "decorator"
                ]
            if definition is None or definition.type != "function_definition":
                continue
            if source.node_text(definition.child_by_field_name("name")) != name:
                continue
            kinds = {"staticmethod", "classmethod", "property"} & set(decorators)
            if (form == "classmethod") == ("classmethod" in kinds) and not kinds - {"classmethod"}:
                return member
    raise NotIsolated(f"no {form} `{name}` in a top-level class `{owner}` of {source.path}")


def oracle_function(
    owner: str, method: ast.FunctionDef | ast.AsyncFunctionDef, form: str
) -> tuple[str, str]:
    """(the signature of the function an oracle writes for ``method``, the call whose
    value it returns): ``def to_text(init_args: tuple, init_kwargs: dict, sep=' '):`` and
    ``Table(*init_args, **init_kwargs).to_text(sep)``."""
    if form == "method" and method.name == "__init__":
        return _construction(owner, method)
    args = copy.deepcopy(method.args)
    positional = args.posonlyargs if args.posonlyargs else args.args
    if not positional:
        raise NotIsolated(f"`{owner}.{method.name}` takes neither the object nor its class")
    del positional[0]  # self, cls
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    passed = [
        *params,
        *([f"*{args.vararg.arg}"] if args.vararg else []),
        *(f"{a.arg}={a.arg}" for a in args.kwonlyargs),
        *([f"**{args.kwarg.arg}"] if args.kwarg else []),
    ]
    if form == "method":
        taken = {INIT_ARGS, INIT_KWARGS} & {a.arg for a in ast.walk(args) if isinstance(a, ast.arg)}
        if taken:
            raise NotIsolated(
                f"`{owner}.{method.name}` has a parameter `{sorted(taken)[0]}`, the name its "
                "oracles give the constructor's arguments"
            )
        added = [
            ast.arg(INIT_ARGS, ast.Name("tuple", ast.Load())),
            ast.arg(INIT_KWARGS, ast.Name("dict", ast.Load())),
        ]
        target = args.posonlyargs if args.posonlyargs else args.args
        target[0:0] = added
        made = f"{owner}(*{INIT_ARGS}, **{INIT_KWARGS})"
    else:
        made = owner
    function = copy.copy(method)
    function.args = args
    function.decorator_list = []
    function.body = [ast.Expr(ast.Constant(...))]
    text = ast.unparse(ast.fix_missing_locations(function))
    return text.rsplit("\n", 1)[0], f"{made}.{method.name}({', '.join(passed)})"


def _construction(owner: str, method: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, str]:
    """The oracle contract of building the object (``Bits(4, 2)`` expected to raise):
    ``def build(init_args: tuple, init_kwargs: dict):``, returning what
    ``Bits(*init_args, **init_kwargs)`` returns — what matters is what it raises."""
    function = copy.copy(method)
    function.name = CONSTRUCTION
    function.args = ast.arguments(
        posonlyargs=[],
        args=[
            ast.arg(INIT_ARGS, ast.Name("tuple", ast.Load())),
            ast.arg(INIT_KWARGS, ast.Name("dict", ast.Load())),
        ],
        kwonlyargs=[],
        kw_defaults=[],
        defaults=[],
    )
    function.returns = None
    function.decorator_list = []
    function.body = [ast.Expr(ast.Constant(...))]
    text = ast.unparse(ast.fix_missing_locations(function))
    return text.rsplit("\n", 1)[0], f"{owner}(*{INIT_ARGS}, **{INIT_KWARGS})"


def class_stub(cls: ast.ClassDef, method: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The class as the oracles see it: decorators, bases, docstring, class-level fields
    and constants, and the signatures and docstrings of its constructor and of
    ``method`` — every body left out (``...``)."""
    body: list[ast.stmt] = []
    for index, stmt in enumerate(cls.body):
        if (index == 0 and _is_docstring(stmt)) or isinstance(stmt, (ast.AnnAssign, ast.Assign)):
            body.append(stmt)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            stmt is method or stmt.name in _CONSTRUCTORS
        ):
            body.append(_stub(stmt))
    stub = copy.copy(cls)
    stub.body = body or [ast.Expr(ast.Constant(...))]
    return ast.unparse(ast.fix_missing_locations(stub))


def _stub(function: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.stmt:
    stub = copy.copy(function)
    kept = [function.body[0]] if function.body and _is_docstring(function.body[0]) else []
    stub.body = [*kept, ast.Expr(ast.Constant(...))]
    return stub


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def oracle_example(spec: FunctionSpec, source: str) -> str | None:
    """A docstring example's call as the oracle's function is called: for a method,
    ``Table([[1]]).to_text()`` is ``to_text(([[1]],), {})`` (under one wrapper too), and
    an example that does not build the object from the class is none; any other
    subject's example as it is."""
    if spec.form != "method":
        return source
    try:
        node = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    wrapper, node = _under_wrapper(node)
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == spec.name
        and isinstance(node.func.value, ast.Call)
    ):
        return None
    built = node.func.value
    if _dotted(built.func).rsplit(".", 1)[-1] != spec.owner or any(
        k.arg is None for k in built.keywords
    ):
        return None
    init = [
        ast.Tuple(list(built.args), ast.Load()),
        ast.Dict([ast.Constant(k.arg) for k in built.keywords], [k.value for k in built.keywords]),
    ]
    call: ast.expr = ast.Call(ast.Name(spec.name, ast.Load()), [*init, *node.args], node.keywords)
    if wrapper is not None:
        call = ast.Call(ast.Name(wrapper, ast.Load()), [call], [])
    return ast.unparse(call)


def suite_owner(spec: FunctionSpec) -> tuple[str, str] | None:
    """(class, form) of a method whose calls the suite's assertions are read for
    (:func:`~referee.checks.arbitration.suite_reading.assertions`): a method of an object
    (``Table([1]).to_text()``) or a class method, not the building itself nor a dunder
    the test reaches through a built-in (``str(b)``)."""
    if spec.class_stub is None or spec.form not in ("method", "classmethod"):
        return None
    if spec.name == CONSTRUCTION or spec.name.startswith("__"):
        return None
    return spec.owner, spec.form


def object_uses(docstring: str, owner: str) -> dict[str, str]:
    """A docstring's doctest examples that use an object the session built once from the
    class and literals, written with the building in place of the name: after
    ``>>> m = MultiReplace({'a': 'b'})``, the example ``>>> m.sub('a')`` is
    ``MultiReplace({'a': 'b'}).sub('a')`` (which :func:`oracle_example` then writes as
    the oracle's call). Only the first example that mentions the name after it was
    built: a call may change the object, and what a later one gives depends on it. An
    example written twice in the docstring (its value may differ each time) is left
    out. Keys are the examples' sources as doctest reads them."""
    try:
        examples = doctest.DocTestParser().get_examples(docstring)
    except ValueError:
        return {}
    sources = [example.source.strip() for example in examples]
    built: dict[str, ast.expr] = {}
    uses: dict[str, str] = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            built.clear()
            continue
        statement = tree.body[0] if len(tree.body) == 1 else None
        made = _built_once(statement, owner)
        if made is not None:
            built[made[0]] = made[1]
            continue
        if isinstance(statement, ast.Expr) and sources.count(source) == 1:
            written = _with_building(statement.value, built)
            if written is not None:
                uses[source] = written
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                built.pop(node.id, None)  # used (or bound again): no longer as built
    return uses


def _built_once(statement: ast.stmt | None, owner: str) -> tuple[str, ast.expr] | None:
    """(name, building) for ``name = Owner(literals)``."""
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and isinstance(statement.value, ast.Call)
        and _dotted(statement.value.func).rsplit(".", 1)[-1] == owner
    ):
        return None
    call = statement.value
    values = [*call.args, *(k.value for k in call.keywords)]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    ):
        return None
    try:
        for value in values:
            ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return statement.targets[0].id, call


def _with_building(node: ast.expr, built: dict[str, ast.expr]) -> str | None:
    """``m.sub(x)`` (under one wrapper too) with ``m``'s building in its place, when
    ``m`` is built and used nowhere else in the example."""
    node = copy.deepcopy(node)
    _, inner = _under_wrapper(node)
    if not (
        isinstance(inner, ast.Call)
        and isinstance(inner.func, ast.Attribute)
        and isinstance(inner.func.value, ast.Name)
        and inner.func.value.id in built
    ):
        return None
    name = inner.func.value.id
    if sum(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node)) != 1:
        return None
    inner.func.value = copy.deepcopy(built[name])
    return ast.unparse(node)


def _under_wrapper(node: ast.expr) -> tuple[str | None, ast.expr]:
    """(the wrapper, what it wraps) for ``sorted(x)`` and the like (one argument, no
    keyword), else (None, the node)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in WRAPPERS
        and len(node.args) == 1
        and not node.keywords
    ):
        return node.func.id, node.args[0]
    return None, node


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def subject_spec(
    isolated: Isolated,
    resolved: dict[str, Any],
    names: dict[str, dict[str, Any]],
    text: str,
    path: str,
) -> FunctionSpec:
    """The function (or static method) the call under test calls; a method of an object
    the test builds from literals, or a class method, with its oracle contract."""
    module, qualname = resolved.get("module") or "", resolved["qualname"]
    if isolated.constructor is not None:
        built = names.get(isolated.constructor) or {}
        owner = qualname.rpartition(".")[0]
        if (built.get("qualname"), built.get("file")) != (owner, resolved.get("file")):
            # an inherited method, or an object a factory function builds: the oracles
            # would be told of another constructor than the one the test calls
            raise NotIsolated(
                f"cannot isolate the call under test: `{isolated.callee}` is "
                f"`{qualname}`, not a method the class `{isolated.constructor}` itself defines"
            )
        return method_spec(text, path, module, qualname, "method")
    if resolved.get("kind") == "classmethod":
        return method_spec(text, path, module, qualname, "classmethod")
    return function_spec(text, path, module, qualname)
