"""Calls through objects and built-in wrappers, as real tests write them.

A test often looks at the call under test through something that is not the callee:

* a built-in wrapper around a value the test assigned: ``value = string("a")`` then
  ``assert str(value) == "a"`` — the call under test is ``string("a")``, wrapped in
  ``str`` (:func:`wrapped_local`);
* the text of an object of a project class: ``str(Bits("101"))``, ``repr(b)`` where the
  test assigns ``b = Bits("101")`` — the call under test is the class's own ``__str__``
  (``__repr__``), a method of an object built from literals, with the oracle contract of
  :mod:`~referee.checks.arbitration.methods` (``def __str__(init_args, init_kwargs)``);
* building the object itself where the test expects it to raise: ``with
  pytest.raises(ValueError): Bits(4, 2)`` — the call under test is the construction, and
  its oracles write ``def build(init_args, init_kwargs)``, returning what
  ``Bits(*init_args, **init_kwargs)`` returns (an outcome: what it raises, if anything).

Which of these a call is depends on what its name is — a class or a function — which only
the run knows: the recorder resolves ``Bits.__init__``, ``Bits.__str__`` beside ``Bits``
(:func:`object_methods`), and :func:`routed` reads the call again with what it resolved to.
Anything else about an object — an attribute of a built object, an object a function or
another object's method builds (``env.from_string(s).render()``) — is UNCLEAR in one line
that says which truth is missing (:func:`receiver_problem`).
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable
from typing import Any

from tree_sitter import Node

from referee.checks.arbitration.sites import (
    Isolated,
    NotIsolated,
    TestRef,
    assignments,
    dotted,
    find_test,
    wrapped_call,
)
from referee.checks.nodes import binding_counts, excerpt, statements, unwrap
from referee.checks.pymodule import Function, PythonModule
from referee.checks.source import SourceFile

# What the recorder says a name that is not a class resolves to.
_NOT_CLASSES = frozenset({"function", "method", "staticmethod", "classmethod", "module"})
# The built-ins that read an object's own text, and the method each calls.
TEXT_METHODS = {"str": "__str__", "repr": "__repr__"}
# The wrappers whose value is only true or false.
BOOLEAN_WRAPPERS = frozenset({"bool", "any", "all"})


def object_methods(source: SourceFile, fn: Function, call: Node) -> list[str]:
    """What the recorder resolves beside a call's name, for when the name is a class:
    ``Bits.__init__`` for ``Bits(5)``; ``Bits.__str__`` for ``str(Bits(5))`` (``repr``:
    ``__repr__``), or for ``str(b)`` where the test assigns ``b = Bits(5)``."""
    name = dotted(source, call.child_by_field_name("function"))
    if name is None or name.startswith("self."):
        return []
    if name not in TEXT_METHODS:
        return [f"{name}.__init__"]
    built = wrapped_call(call)
    argument = _only_argument(call)
    if built is None and argument is not None and argument.type == "identifier":
        body = statements(fn.body)
        values = [v for _, v in assignments(source, body, source.node_text(argument))]
        built = values[0] if len(values) == 1 and values[0].type == "call" else None
    constructor = dotted(source, built.child_by_field_name("function")) if built else None
    if not constructor or constructor.startswith("self."):
        return []
    return [f"{constructor}.{TEXT_METHODS[name]}"]


def wrapped_local(
    source: SourceFile, wrapper: Node, assigned_call: Callable[[str], Node | None]
) -> Node:
    """The call a built-in ``wrapper`` of a name reads (``str(value)``, where the test
    assigns ``value = f(x)`` once and leaves it alone before the assertion:
    ``assigned_call(name)``). Raises :class:`NotIsolated`: the built-in itself is no call
    under test."""
    argument = _only_argument(wrapper)
    assigned = None
    if argument is not None and argument.type == "identifier":
        assigned = assigned_call(source.node_text(argument))
    if assigned is None:
        raise NotIsolated(
            f"cannot isolate the call under test: `{excerpt(source.node_text(wrapper))}` "
            "applies a built-in to a value that is not a call, nor a name assigned from a call "
            "that the assertion reads and left alone before it"
        )
    return assigned


def boolean_op(op: str, wrapper: str | None, expected: str) -> str:
    """The operator of ``bool(f(x)) == False`` (``any``, ``all``): ``falsy``, as for
    ``assert not f(x)``. A value that is only true or false is one many wrong programs
    share, so its agreement never edits a test (a boolean expectation blames the source
    only); an equality of another value is ``op`` itself."""
    if op != "==" or wrapper not in BOOLEAN_WRAPPERS:
        return op
    try:
        value = ast.literal_eval(expected.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        value = None
    if not isinstance(value, bool):
        raise NotIsolated(
            f"cannot isolate the call under test: `{wrapper}(...)` is true or false, and "
            f"the test compares it with `{excerpt(expected)}`, which is neither"
        )
    return "truthy" if value else "falsy"


def _only_argument(call: Node) -> Node | None:
    args = call.child_by_field_name("arguments")
    if args is None or args.type != "argument_list":
        return None
    items = [a for a in args.named_children if a.type != "comment"]
    return unwrap(items[0]) if len(items) == 1 else None


def is_class(resolved: dict[str, Any] | None) -> bool:
    """Whether the recorder resolved a name to a class (of a file it could read)."""
    return bool(
        resolved
        and resolved.get("file")
        and resolved.get("qualname")
        and resolved.get("kind") not in _NOT_CLASSES
    )


def routed(isolated: Isolated, names: dict[str, dict[str, Any]]) -> Isolated:
    """The call under test read again with what the run resolved its name to: when it
    builds an object of a class, the text the test reads of it (``str``, ``repr``) is the
    class's ``__str__`` or ``__repr__``, and a construction the test expects to raise is
    the construction (``__init__``). Anything else is itself. Raises
    :class:`NotIsolated` for an object whose truth no source could compute."""
    cls = names.get(isolated.callee)
    if isolated.constructor is not None or not is_class(cls):
        return isolated
    assert cls is not None
    name = isolated.callee
    if isolated.wrapper in TEXT_METHODS:
        method = TEXT_METHODS[isolated.wrapper]
        form = "object-text"
        wrapper = None
    elif isolated.op == "raises" and not isolated.wrapper and not isolated.projection:
        method, form, wrapper = "__init__", "construction", None
    else:
        raise NotIsolated(
            f"cannot isolate the call under test: `{excerpt(isolated.call)}` builds an object "
            f"of the class `{name}`; arbitration computes truths for what a method of it "
            f"returns (`{name}(...).method()`, `str({name}(...))`) or what building it "
            "raises, not for the object itself"
        )
    own = names.get(f"{name}.{method}") or {}
    if own.get("qualname") != f"{cls['qualname']}.{method}" or own.get("file") != cls["file"]:
        raise NotIsolated(
            f"cannot isolate the call under test: `{excerpt(isolated.call)}` runs "
            f"`{name}.{method}`, which the class `{name}` does not define itself in Python "
            "(it inherits it, or it is built in): arbitration computes truths for a method "
            "the class defines"
        )
    built = "method-of-assigned-object" if "assigned-call" in isolated.forms else None
    forms = [f for f in isolated.forms if f != "assigned-call"]
    forms += [built or "method-of-literal-object", form]
    return dataclasses.replace(
        isolated,
        callee=f"{name}.{method}",
        arguments="",
        wrapper=wrapper,
        constructor=name,
        constructor_arguments=split_arguments(isolated.arguments),
        forms=tuple(forms),
    )


def split_arguments(arguments: str) -> tuple[str, ...]:
    """A call's arguments as referee wrote them (``1, "a, b", sep=","``) taken apart,
    each as written: ``("1", '"a, b"', 'sep=","')``."""
    if not arguments.strip():
        return ()
    text = f"_({arguments})"
    call = ast.parse(text, mode="eval").body
    assert isinstance(call, ast.Call)
    parts = [ast.get_source_segment(text, a) or "" for a in call.args]
    parts += [f"{k.arg}={ast.get_source_segment(text, k.value)}" for k in call.keywords]
    return tuple(parts)


def receiver_problem(
    isolated: Isolated, names: dict[str, dict[str, Any]], source: SourceFile, test: TestRef
) -> str | None:
    """Why the method ``isolated`` calls, which the run did not resolve, has no truth, in
    one line: it is called on an object a function or another object's method builds
    (``t = array()``, ``env.from_string(s).render()``), or on an object the test or a
    fixture holds (``tmpl.render()``, ``tmpl`` a parameter) — else None."""
    head, dot, _ = isolated.callee.partition(".")
    builder = isolated.constructor
    subject = f"`{excerpt(isolated.call)}` calls a method of"
    if builder is None and dot:
        try:
            fn = find_test(PythonModule(source, is_test_file=True), test)
        except NotIsolated:
            return None
        builder = _builder(source, fn, head)
        subject = f"`{isolated.callee}` is a method of `{head}`,"
        if (builder is None or is_class(names.get(builder))) and binding_counts(
            source, fn.node, [head]
        )[head]:
            return (
                f"cannot isolate the call under test: {subject} an object the test or a "
                "fixture holds, not one it builds from a class and literals, in the assignment "
                "the assertion reads, and leaves alone before the assertion"
            )
    if builder is None or is_class(names.get(builder)):
        return None
    if (names.get(builder) or {}).get("kind") == "function":
        built, by = f"the function `{builder}` returns", "a function"
    else:
        built = f"`{excerpt(builder)}(...)` returns (no class the test module imports)"
        by = "another object"
    return (
        f"cannot isolate the call under test: {subject} the object {built}; a method's "
        "oracles are written from its class's constructor and arguments "
        f"(`Cls(...).method()`), and no source computes what {by} builds"
    )


def _builder(source: SourceFile, fn: Function, name: str) -> str | None:
    """The dotted name of what builds ``name`` when the test assigns it once from a call
    (``t = api.array()``: ``api.array``), else None."""
    values = [v for _, v in assignments(source, statements(fn.body), name)]
    if len(values) != 1 or values[0].type != "call":
        return None
    return dotted(source, values[0].child_by_field_name("function"))
