"""What a method under test is called on: an object the test builds from a class and
literals — in the call (``Table([[]]).to_text()``), once in the test (``table =
Table([[]])``), once in its class's ``setUp`` (``self.table = Table([[]])``) or by a
fixture it takes (:mod:`~referee.checks.arbitration.fixture_objects`) — and the dotted
names the recorder is asked to resolve for it."""

from __future__ import annotations

from tree_sitter import Node

from referee.checks.arbitration import fixture_objects, set_up
from referee.checks.arbitration.projection import peeled
from referee.checks.arbitration.sites import (
    NotIsolated,
    assertion_reads,
    assignments,
    dotted,
    is_literal,
    reaching_assignment,
)
from referee.checks.nodes import binding_counts, excerpt, statements, unwrap
from referee.checks.pymodule import Function
from referee.checks.source import SourceFile


def built_method(source: SourceFile, fn: Function, call: Node) -> tuple[str, ...]:
    """(``Table``, ``Table.to_text``) for a call ``Table(...).to_text(...)``, or
    ``t.to_text(...)`` where the test assigns ``t = Table(...)``, or ``self.t.to_text(...)``
    where its class's ``setUp`` does: what the recorder resolves; () for another call."""
    function = call.child_by_field_name("function")
    if function is None or function.type != "attribute":
        return ()
    obj = function.child_by_field_name("object")
    attribute = function.child_by_field_name("attribute")
    if obj is None or attribute is None:
        return ()
    obj = unwrap(obj)
    built: Node | None = obj if obj.type == "call" else None
    if obj.type == "identifier":
        body = statements(fn.body)
        name = source.node_text(obj)
        values = [v for _, v in assignments(source, body, name)]
        if len(values) > 1:  # assigned again: the one the call reads
            reaching = reaching_assignment(source, fn, name, call.start_byte)
            values = values if reaching is None else [reaching[1]]
        built = values[0] if len(values) == 1 and values[0].type == "call" else None
        if not values:
            built = fixture_objects.fixture_call(source, fn, name)
    elif (held := set_up.attribute_of_self(source, obj)) is not None:
        binding = set_up.class_binding(source, fn, held)
        built = binding.value if binding is not None and binding.value.type == "call" else None
    constructor = (
        dotted(source, built.child_by_field_name("function")) if built is not None else None
    )
    if constructor and constructor.startswith("self."):
        constructor = set_up.named_class(source, fn, constructor)
    if not constructor:
        return ()
    return constructor, f"{constructor}.{source.node_text(attribute)}"


def callee_and_object(
    source: SourceFile, fn: Function, call: Node, assertion: Node
) -> tuple[str, tuple[str, Node, tuple[str, ...]] | None]:
    """The dotted name ``call`` calls, and — for a method of an object the test builds
    from a constructor call (``Table([[]]).to_text()``, ``table = Table([[]])`` once
    then ``table.to_text()``, or ``self.table = Table([[]])`` in the class's ``setUp``
    then ``self.table.to_text()``; the class written ``self.storage_class`` where the test's
    class binds ``storage_class = Table``) — (the class as written, the constructor call,
    the call's forms). The callee of a method is ``Class.method``. Raises
    :class:`NotIsolated`."""
    function_node = call.child_by_field_name("function")
    obj = function_node.child_by_field_name("object") if function_node is not None else None
    attribute = function_node.child_by_field_name("attribute") if function_node else None
    if function_node is not None and function_node.type == "attribute" and obj is not None:
        obj = unwrap(obj)
        built, form = None, "method-of-literal-object"
        named: tuple[str, ...] = ()
        if obj.type == "call":
            built = obj
        elif obj.type == "identifier" and source.node_text(obj) not in ("self", "cls"):
            name = source.node_text(obj)
            built = assigned_call(source, fn, name, assertion)
            form = "method-of-assigned-object"
            if built is None:
                built = fixture_objects.fixture_object(source, fn, name, assertion)
                form = fixture_objects.FORM
            if built is None and binding_counts(source, fn.node, [name])[name]:
                reason = fixture_objects.why_not(source, fn, name, assertion)
                if reason is not None:
                    raise NotIsolated(
                        f"cannot isolate the call under test: `{excerpt(name)}` is {reason}"
                    )
                raise NotIsolated(
                    f"cannot isolate the call under test: `{excerpt(name)}` is an object the "
                    "test does not build from a class and literals, in the assignment the "
                    "assertion reads, and leave alone before the assertion (nor a fixture of "
                    "its class or module that returns one so built)"
                )
        elif (held := set_up.attribute_of_self(source, obj)) is not None:
            built = set_up.built_object(source, fn, held, assertion)
            form = set_up.METHOD_OF_SET_UP_OBJECT
            if built is None:
                raise NotIsolated(
                    f"cannot isolate the call under test: `self.{excerpt(held)}` is an object "
                    "the test's class does not build once in its setUp, from a class and "
                    "literals, and leave alone before the assertion"
                )
        constructor = (
            dotted(source, built.child_by_field_name("function")) if built is not None else None
        )
        if constructor and constructor.startswith("self."):
            # ``self.storage_class(...)``: the class the test's class names so
            constructor = set_up.named_class(source, fn, constructor)
            named = (set_up.CLASS_ATTRIBUTE,) if constructor else ()
        if built is not None and constructor and not constructor.startswith("self."):
            method = source.node_text(attribute) if attribute is not None else ""
            return f"{constructor}.{method}", (constructor, built, (form, *named))
    callee = dotted(source, function_node)
    if callee is None and function_node is not None and function_node.type == "attribute":
        raise NotIsolated(
            "cannot isolate the call under test: "
            f"`{excerpt(source.node_text(function_node))}` is a method of an object the test "
            "does not build from a class and literals; arbitration computes truths for "
            "functions, static and class methods, and methods of objects built from literals"
        )
    if callee is None or callee.startswith("self."):
        raise NotIsolated(
            "cannot isolate the call under test: "
            f"`{excerpt(source.node_text(function_node))}` "
            "is not a plain function name"
        )
    return callee, None


def assigned_call(source: SourceFile, fn: Function, name: str, assertion: Node) -> Node | None:
    """The call of the ``name = f(...)`` statement of the test's body whose value the
    assertion takes as built, by the one rule the suite's reader applies too
    (:func:`~referee.checks.arbitration.sites.assertion_reads`): the last assignment
    before it, where nothing else can have bound the name in between, and nothing between
    them but assertions that only look at the value (``assert len(stmts) == 2``, then
    ``assert stmts[0] == 'select foo;'``) — a method call on it, an append, could have
    changed the value the assertion sees; else None."""
    found = reaching_assignment(source, fn, name, assertion.start_byte)
    if found is None or found[1].type != "call":
        return None
    index, call = found
    return call if assertion_reads(source, fn, name, index, assertion) else None


def projected_call(
    source: SourceFile, fn: Function, name: str, assertion: Node
) -> tuple[Node, str] | None:
    """(the call, the projection) of a ``name = f(...)[0]`` or ``name = f(...).tokens``
    statement — an attribute or a literal item of the call's value assigned — read by
    the rules of :func:`assigned_call`; None for any other, or a projection referee does
    not apply (:func:`~referee.checks.arbitration.projection.peeled`)."""
    found = reaching_assignment(source, fn, name, assertion.start_byte)
    if found is None or found[1].type not in ("attribute", "subscript"):
        return None
    index, value = found
    base, projection, problem = peeled(source, value)
    if base.type != "call" or not projection or problem is not None:
        return None
    if is_literal(source.node_text(base)):
        return None
    return (base, projection) if assertion_reads(source, fn, name, index, assertion) else None
