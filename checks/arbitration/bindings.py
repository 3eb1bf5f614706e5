"""What the names in a failing assertion stand for: a parametrize case's values, the literal
assigned in the test that the assertion reads, or a local whose value the recorder saw
in the failing frame (a loop's current case); and the arguments that are no literals but
are known without running the test (:mod:`~referee.checks.arbitration.known`)."""

from __future__ import annotations

import ast
from dataclasses import replace
from functools import cached_property

from tree_sitter import Node

from referee.checks.arbitration import set_up
from referee.checks.arbitration.expressions import (
    EXPRESSION_ARGUMENT,
    is_expression,
    names_in,
    written_out,
)
from referee.checks.arbitration.known import Known, ModuleNames
from referee.checks.arbitration.sites import (
    NotIsolated,
    Site,
    assignments,
    dotted,
    identifiers,
    immutable,
    immutable_literal,
    is_literal,
    literal_text,
    mentioned_between,
    parameter_names,
    reaching_assignment,
    rebound_after,
    round_trips,
)
from referee.checks.models import SiteKind
from referee.checks.nodes import (
    binding_counts,
    call_arguments,
    decorators,
    excerpt,
    keyword_argument,
    statements,
    unwrap,
)
from referee.checks.pymodule import Function, PythonModule
from referee.checks.source import SourceFile

# The sites a test fix may replace: a literal in the assertion, a case, an assignment
_EDITABLE = frozenset({"assertion", "parametrize", "assignment"})
# How a computed expected value may be read to be evaluated on its own (known_expected)
_KNOWN_EXPECTED = frozenset({"constructed-argument", "expression-argument"})


class Bindings:
    """What the names in an assertion stand for: a parametrize case's values, or the literal
    assigned in the test that the assertion reads."""

    def __init__(
        self,
        source: SourceFile,
        module: PythonModule,
        fn: Function,
        indices: dict[str, int],
        row: int,
        frame_locals: dict[str, str] | None = None,
    ) -> None:
        self.source = source
        self.module = module
        self.fn = fn
        self.indices = indices
        self.row = row
        self.frame_locals = frame_locals or {}
        self.forms: list[str] = []  # how the names were bound: parametrize, local, loop-table
        self._known: Known | None = None  # read on the first argument that is no literal
        self._inputs: set[tuple[int, int]] = set()  # where the call's arguments are written
        self._call: Node | None = None  # the call under test, once its arguments are read
        self._opened: set[str] = set()  # names whose assigned value is being read

    @property
    def definitions(self) -> str:
        """What the known arguments need to be evaluated with no test module beside them:
        the test module's imports of the names they use, the definitions they name."""
        return self._known.text() if self._known is not None else ""

    def built_object(
        self, built: tuple[str, Node, tuple[str, ...]] | None, forms: list[str]
    ) -> tuple[str | None, tuple[str, ...]]:
        """(the class as written, its constructor's arguments) of the object a method
        under test is called on — ``built`` as ``callee_and_object`` found it: (class,
        constructor call, forms), the forms added to ``forms``; (None, ()) for a
        function."""
        if built is None:
            return None, ()
        constructor, call, built_forms = built
        parts = tuple(self.argument_parts(call))
        forms.extend(built_forms)
        return constructor, parts

    def arguments(self, call: Node) -> str:
        """The arguments of ``call``, the call under test, each as its value."""
        self._call = call
        return ", ".join(self.argument_parts(call))

    def argument_parts(self, call: Node) -> list[str]:
        """Each argument of ``call`` as its literal (``name=literal`` for a keyword)."""
        args = call.child_by_field_name("arguments")
        parts = []
        for arg in args.named_children if args is not None else []:
            if arg.type == "comment":
                continue
            if arg.type == "keyword_argument":
                name = arg.child_by_field_name("name")
                value = arg.child_by_field_name("value")
                if name is None or value is None:
                    raise NotIsolated("cannot read a keyword argument of the call")
                what = f"the value of the keyword argument `{self.source.node_text(name)}`,"
                site = self.site(value, what, argument=True)
                parts.append(f"{self.source.node_text(name)}={site.text}")
            elif arg.type in ("list_splat", "dictionary_splat"):
                parts.extend(self._unpacked(arg))
            elif arg.type == "generator_expression":
                raise NotIsolated(
                    f"cannot isolate the call under test: `{excerpt(self.source.node_text(arg))}` "
                    "is not a literal argument"
                )
            else:
                parts.append(self.site(arg, "an argument", argument=True).text)
        return parts

    def _unpacked(self, splat: Node) -> list[str]:
        """The items ``*args`` or ``**kwargs`` gives the call, written out (``1, 'a'``;
        ``sep='-'``), when the unpacked value is a literal list or tuple, or a literal dict
        whose keys are identifiers: written in the call, a parametrize case's, a literal
        assigned once in the test, or a recorded local (form ``unpacked-argument``)."""
        written = excerpt(self.source.node_text(splat))
        inner = next((c for c in splat.named_children if c.type != "comment"), None)
        if inner is None:
            raise NotIsolated(f"cannot isolate the call under test: cannot read `{written}`")
        site = self.site(inner, f"the value unpacked by `{written}`,", argument=True)
        try:
            value = ast.literal_eval(site.text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            value = None  # a known value (a name, a construction): not a literal
        if splat.type == "list_splat":
            if not isinstance(value, (list, tuple)):
                raise NotIsolated(
                    f"cannot isolate the call under test: `{written}` unpacks a value that is "
                    "no literal list or tuple (a set's or a string's items are not the "
                    "test's to give in order)"
                )
            items = [repr(item) for item in value]
        else:
            if not parameter_names(value):
                raise NotIsolated(
                    f"cannot isolate the call under test: `{written}` unpacks a value that is "
                    "no literal dict whose keys are names of parameters"
                )
            items = [f"{k}={v!r}" for k, v in value.items()]
        values = value if isinstance(value, (list, tuple)) else value.values()
        if not all(round_trips(item) for item in values):
            raise NotIsolated(
                f"cannot isolate the call under test: `{written}` holds a value that does "
                "not read back as a literal"
            )
        self._form("unpacked-argument")
        return items

    def site(self, node: Node, what: str, *, argument: bool = False) -> Site:
        """Where the value of ``node`` (an argument, or the expected value) is written, and
        what it is. An expected value written where an argument of the call is (``xs =
        [1]``, then ``assert f(xs) == xs``) is an ``input``: the call may have changed it,
        and replacing it would change the call."""
        found = self._site(node, what, argument=argument)
        span = (found.start_byte, found.end_byte)
        if argument and found.kind in _EDITABLE:
            self._inputs.add(span)
        elif not argument and found.kind in _EDITABLE and span in self._inputs:
            return replace(found, kind="input", case=None)
        return found

    def _site(self, node: Node, what: str, *, argument: bool = False) -> Site:
        node = unwrap(node)
        text = self.source.node_text(node)
        literal = literal_text(text)
        if literal is not None:
            # a literal over lines, ``"a"\n"b"``, is read (and an expected value replaced)
            # as one line; an argument over lines is its value, never edited
            kind: SiteKind = "computed" if argument and literal != text else "assertion"
            return Site(kind, node.start_byte, node.end_byte, literal, node.start_point.row + 1)
        unreadable: NotIsolated | None = None  # parametrize values written as a name...
        if node.type == "identifier":
            try:
                found = self._parametrized(text, argument)
            except NotIsolated as exc:
                found, unreadable = None, exc
            if found is not None and self._changed_before(
                text, found.text, self.fn.body.start_byte, argument
            ):
                found = None  # ``xs.append(3)`` on a case's list: read as it ran, below
            if found is not None:
                self._form("parametrize")
                return found
            found = self._assigned(text, argument)
            if found is not None:
                self._form("local")
                return found
        if node.type in ("identifier", "subscript"):
            changed: NotIsolated | None = None  # a mutable value the recorder saw after
            try:
                found = self._recorded(node, what, argument)
            except NotIsolated as exc:
                found, changed = None, exc
            if found is not None:
                return found
            if node.type == "identifier" and argument:
                # a value known without running the test, assigned: what the call was given
                found = self._assigned_known(text)
                if found is not None:
                    self._form("local")
                    return found
            if changed is not None:
                raise changed
        if unreadable is not None:
            raise unreadable
        if argument and node.type == "identifier":
            found = self._module_constant(node, text)
            if found is not None:
                return found
        if argument and node.type == "attribute":
            found = self._class_bound(node)
            if found is not None:
                return found
        known = self._known_value(node) if argument else None
        if known is not None:
            return known
        if argument and is_expression(node):
            found = self._expression(node, what)
            if found is not None:
                return found
        raise NotIsolated(
            f"cannot isolate the call under test: {what} `{excerpt(text)}` is not a literal, a "
            "parametrized value, a literal assigned in the test (or once in its class's "
            "setUp), a local whose value the failing run recorded as a literal, or a value "
            "known without running the test "
            "(a built-in, a function, an object of a standard-library value class)"
        )

    def _known_value(self, node: Node) -> Site | None:
        """An argument that is no literal but is known without running the test — a
        built-in's or exception's name, a function or class of the standard library or
        of the test module, a lambda, an object of a standard-library value class built
        from known arguments — as written; None when it is none of them, NotIsolated
        when it is one that cannot be carried to the sandbox."""
        node = unwrap(node)
        text = self.source.node_text(node)
        known = self._reader()
        form: str | None = None
        if node.type in ("identifier", "attribute"):
            name = dotted(self.source, node)
            head = (name or "").partition(".")[0]
            if name is None or (
                head not in known.nested and binding_counts(self.source, self.fn.node, [head])[head]
            ):
                if self._defines(head):
                    raise NotIsolated(
                        f"cannot isolate the call under test: an argument `{excerpt(text)}` "
                        "is a function or class the test defines more than once, or after "
                        "the assertion: which definition the call saw is not read here"
                    )
                return None  # a local of the test: what it holds is not read here
            form = known.name(name, text)
        elif node.type == "lambda":
            form = known.lambda_(text)
        elif node.type == "call":
            name = dotted(self.source, node.child_by_field_name("function"))
            head = (name or "").partition(".")[0]
            if (
                name is None
                or binding_counts(self.source, self.fn.node, [head])[head]
                or not known.constructor(name, text)
            ):
                return None
            text = f"{name}({', '.join(self.argument_parts(node))})"
            form = known.constructed_form(name)
        if form is None:
            return None
        self._form(form)
        return Site("computed", node.start_byte, node.end_byte, text, node.start_point.row + 1)

    def _expression(self, node: Node, what: str) -> Site | None:
        """An argument computed from literals and names with operators only (``"a" *
        511``, ``f"a{sep}b"``, ``[first, 2]``: :mod:`~referee.checks.arbitration.expressions`),
        written out with each name's value in its place; None when it is not one. A name
        that is read as no value raises NotIsolated, naming it."""
        names = names_in(node)
        if names is None:
            return None
        values: dict[str, str] = {}
        for name in names:
            text = self.source.node_text(name)
            if text not in values:
                values[text] = self.site(name, what, argument=True).text
        written = written_out(self.source.node_text(node), values.__getitem__)
        if written is None:
            return None
        self._form(EXPRESSION_ARGUMENT)
        return Site("computed", node.start_byte, node.end_byte, written, node.start_point.row + 1)

    def _defines(self, name: str) -> bool:
        """Whether a ``def`` or ``class`` statement of the test binds ``name``."""
        stack = [self.fn.body]
        while stack:
            current = stack.pop()
            if current.type in ("function_definition", "class_definition"):
                label = current.child_by_field_name("name")
                if label is not None and self.source.node_text(label) == name:
                    return True
            stack.extend(current.named_children)
        return False

    def _reader(self) -> Known:
        """The reader of known arguments, made on first use: the test module's top-level
        names, and the functions the test defines once before the assertion."""
        if self._known is None:
            nested = {}
            for stmt in statements(self.fn.body):
                definition = stmt
                if stmt.type == "decorated_definition":
                    continue  # a decorator may make it anything
                name = definition.child_by_field_name("name")
                if (
                    definition.type in ("function_definition", "class_definition")
                    and name is not None
                    and stmt.start_point.row < self.row
                ):
                    label = self.source.node_text(name)
                    if binding_counts(self.source, self.fn.node, [label])[label] == 1:
                        nested[label] = _dedented(self.source, definition)
            names = identifiers(self.source, self.fn.node)
            counts = binding_counts(self.source, self.fn.node, names)
            bound = frozenset(n for n, count in counts.items() if count and n not in nested)
            self._known = Known(ModuleNames(self.source.text), nested, bound)
        return self._known

    def known_expected(self, node: Node) -> str | None:
        """The expected value ``node``, which the test computes, written out where it is
        known without running the test as an argument may be (an object of a
        standard-library value class built from literals, ``datetime(2003, 9, 25)``; an
        expression of literals), its definitions kept; None, with nothing kept, otherwise
        (a project's object, a local, a call of anything else)."""
        known = self._reader()
        kept = (list(self.forms), dict(known.definitions), set(known.project_classes))
        try:
            site = self.site(node, "the expected value", argument=True)
        except NotIsolated:
            site = None
        added = set(self.forms) - set(kept[0])
        if site is None or site.kind != "computed" or not added <= _KNOWN_EXPECTED:
            site = None
            known.definitions, known.project_classes = kept[1], kept[2]
        self.forms[:] = kept[0]
        return site.text if site is not None else None

    def _form(self, form: str) -> None:
        if form not in self.forms:
            self.forms.append(form)

    def _recorded(self, node: Node, what: str, argument: bool) -> Site | None:
        """A name (``inp``) or a subscript of one with a literal key (``case["in"]``,
        ``case[0]``) whose value the recorder saw in the failing test frame — the current
        case of a loop over a table, a local variable — when that value reads back as a
        literal. An argument must also be immutable: the call may have changed a list it
        was given, and the recorded value is the one after the call."""
        base = node
        keys: list[object] = []
        while base.type == "subscript":
            index = base.child_by_field_name("subscript")
            inner = base.child_by_field_name("value")
            if index is None or inner is None or not is_literal(self.source.node_text(index)):
                return None
            keys.insert(0, ast.literal_eval(self.source.node_text(index)))
            base = unwrap(inner)
        if base.type != "identifier":
            return None
        name = self.source.node_text(base)
        recorded = self.frame_locals.get(name)
        if recorded is None:
            return None
        try:
            value = ast.literal_eval(recorded)
            for key in keys:
                value = value[key]  # type: ignore[index]
        except (
            ValueError,
            SyntaxError,
            TypeError,
            KeyError,
            IndexError,
            MemoryError,
            RecursionError,
        ):
            return None
        text = repr(value)
        if not is_literal(text):
            return None
        if argument and not immutable(value):
            raise NotIsolated(
                f"cannot isolate the call under test: {what} "
                f"`{excerpt(self.source.node_text(node))}` is a {type(value).__name__} the "
                "recorder saw after the call, which may have changed it"
            )
        if name in self.indices:
            self._form("parametrize")  # a case of a table the decorator names: read as it ran
        else:
            self._form("loop-table" if self._loop_target(name) else "local")
        return Site("local", node.start_byte, node.end_byte, text, node.start_point.row + 1)

    def _loop_target(self, name: str) -> bool:
        """Whether ``name`` is bound by a ``for`` loop of the test that holds the assertion."""
        stack = [self.fn.body]
        while stack:
            current = stack.pop()
            if current.type in ("function_definition", "class_definition", "lambda"):
                continue
            if current.type == "for_statement" and (
                current.start_point.row <= self.row <= current.end_point.row
            ):
                left = current.child_by_field_name("left")
                if left is not None and name in identifiers(self.source, left):
                    return True
            stack.extend(current.named_children)
        return False

    def _assigned(self, name: str, argument: bool = False) -> Site | None:
        """The literal of the ``name = <literal>`` statement in the test's body whose value
        the assertion reads (:func:`~referee.checks.arbitration.sites.reaching_assignment`:
        the last before it, where nothing else — ``+=``, a loop or ``with`` target, ``:=``
        — can have bound the name in between)."""
        found = self._reaching(name)
        if found is None:
            return None
        value = found[1]
        literal = literal_text(self.source.node_text(value))
        if literal is None:
            return None
        if self._changed_before(name, literal, value.end_byte, argument):
            return None  # ``xs.append(3)`` before the assertion: not the literal any more
        row = value.start_point.row + 1
        return Site("assignment", value.start_byte, value.end_byte, literal, row)

    def assigned_value(self, node: Node) -> Node | None:
        """The expression of the ``name = value`` statement the assertion reads (by the rule
        of :meth:`_assigned`), for ``node`` a name the test assigns something that is no
        literal and does not mention again before the assertion; else None."""
        node = unwrap(node)
        if node.type != "identifier":
            return None
        found = self._assigned_expression(self.source.node_text(node), argument=False)
        return found[1] if found is not None else None

    def _assigned_expression(self, name: str, argument: bool) -> tuple[int, Node] | None:
        """(statement index, value) of the ``name = value`` statement the assertion reads,
        where the value is no literal (a literal is read as one, and not once changed:
        ``xs.append``) and nothing mentions the name after it — for an argument, nothing
        but the call under test."""
        found = self._reaching(name)
        if found is None or literal_text(self.source.node_text(found[1])) is not None:
            return None
        if self._mentioned(name, found[1].end_byte, argument):
            return None
        return found[0], unwrap(found[1])

    def _reaching(self, name: str) -> tuple[int, Node] | None:
        """The ``name = value`` statement whose value the assertion reads, or None."""
        holder = self._holder
        return (
            reaching_assignment(self.source, self.fn, name, holder.start_byte)
            if holder is not None
            else None
        )

    @cached_property
    def _holder(self) -> Node | None:
        """The statement of the test's body that holds the assertion."""
        return next(
            (
                s
                for s in statements(self.fn.body)
                if s.start_point.row <= self.row <= s.end_point.row
            ),
            None,
        )

    def _assigned_known(self, name: str) -> Site | None:
        """The value known without running the test that the ``name = value`` statement the
        call reads assigns (``day = date(2020, 1, 1)``, ``cmd = Command("ls", "")``, ``key =
        lambda w: w.lower()``, ``n = 2 ** 10``), as written and never edited — when nothing
        but the call under test mentions the name after it (an object may be changed by
        whatever is handed it); else None."""
        found = self._assigned_expression(name, argument=True)
        if found is None:
            return None
        index, node = found
        read = identifiers(self.source, node)
        holder = self._holder
        if read and (
            holder is None or rebound_after(self.source, self.fn, read, index, holder.start_byte)
        ):
            return None  # ``x = 5`` after ``y = x + 1``: its names are read at the assertion
        if name in read or name in self._opened:
            return None  # ``a = a + 1``: the name's earlier value, not read here
        self._opened.add(name)
        try:
            known = self._known_value(node)
            if known is None and is_expression(node):
                known = self._expression(node, f"the value assigned to `{name}`,")
        finally:
            self._opened.discard(name)
        return known

    def _changed_before(self, name: str, literal: str, start: int, argument: bool = False) -> bool:
        """Whether ``name``, bound to the mutable ``literal``, is mentioned between the byte
        ``start`` and the assertion (a method call on it may have changed it); an
        immutable literal cannot change. An argument's mention in the call under test
        itself (``r = f(xs)``, then ``assert r == …``) is the one that reads it."""
        return immutable_literal(literal) is None and self._mentioned(name, start, argument)

    def _mentioned(self, name: str, start: int, argument: bool) -> bool:
        """Whether ``name`` is written between the byte ``start`` and the assertion — for
        an argument, outside the call under test."""
        end, call = self._statement_start, self._call
        if not argument or call is None or call.start_byte >= end or call.end_byte <= start:
            return mentioned_between(self.source, self.fn.body, name, start, end)
        return mentioned_between(
            self.source, self.fn.body, name, start, call.start_byte
        ) or mentioned_between(self.source, self.fn.body, name, call.end_byte, end)

    @cached_property
    def _statement_start(self) -> int:
        """The first byte of the line the assertion starts on (read once: every name of
        the assertion asks)."""
        return sum(len(line) + 1 for line in self.source.data.split(b"\n")[: self.row])

    def _module_constant(self, node: Node, name: str) -> Site | None:
        """The literal of ``NAME = <literal>`` at the test module's top level, when the
        module binds the name there once and nowhere else (no second assignment, loop
        target, ``global``, import...), the test does not bind it, and its value is
        immutable (another test could have changed a list before this one ran): an
        argument only, read as written (form ``module-constant``) and never edited — other
        tests may use it."""
        if binding_counts(self.source, self.fn.node, [name])[name]:
            return None  # a local of the test's, or a parameter
        root = self.source.tree.root_node
        body = statements(root)
        if any(
            stmt.type == "import_from_statement"
            and any(c.type == "wildcard_import" for c in stmt.named_children)
            for stmt in body
        ):
            return None  # ``from m import *`` may bind it again
        found = [value for _, value in assignments(self.source, body, name)]
        if len(found) != 1 or binding_counts(self.source, root, [name])[name] != 1:
            return None
        literal = immutable_literal(self.source.node_text(found[0]))
        if literal is None:
            return None
        self._form("module-constant")
        return Site("computed", node.start_byte, node.end_byte, literal, node.start_point.row + 1)

    def _class_bound(self, node: Node) -> Site | None:
        """The literal of ``self.name`` when the test's class binds it once, in its
        ``setUp`` or its body (:mod:`~referee.checks.arbitration.set_up`), and it is
        immutable: an argument only, read as written and never edited (forms
        ``set-up-attribute``, ``class-attribute``)."""
        name = set_up.attribute_of_self(self.source, node)
        binding = set_up.class_binding(self.source, self.fn, name) if name else None
        literal = set_up.literal_of(self.source, binding) if binding is not None else None
        if binding is None or literal is None:
            return None
        self._form(binding.form)
        return Site("computed", node.start_byte, node.end_byte, literal, node.start_point.row + 1)

    def _parametrized(self, name: str, argument: bool = False) -> Site | None:
        found = self.case_value(name)
        if found is None:
            return None
        value, case = found
        text = self.source.node_text(value)
        if not is_literal(text):
            # an argument's case may be a known value: ``typing.ForwardRef("X")``
            return self._known_value(value) if argument else None
        return Site(
            "parametrize",
            value.start_byte,
            value.end_byte,
            text,
            value.start_point.row + 1,
            case=(case.start_byte, case.end_byte),
        )

    def case_value(self, name: str) -> tuple[Node, Node] | None:
        """(the value, its whole case) the parametrize decorator gives the argument
        ``name`` in the case that ran; None when ``name`` is no parametrized argument or
        its case is not written out; NotIsolated when its values are no written list."""
        if name not in self.indices:
            return None
        for decorator in self._parametrize_decorators():
            names, values = self._parametrize_arguments(decorator)
            if names is None or name not in names:
                continue
            if values is None or values.type not in ("list", "tuple"):
                raise NotIsolated(
                    f"cannot isolate the call under test: the values of `{name}` are not "
                    "written as a list in the parametrize decorator"
                )
            cases = [c for c in values.named_children if c.type != "comment"]
            index = self.indices[name]
            if index >= len(cases):
                return None
            case = unwrap(cases[index])
            if case.type == "call" and (
                dotted(self.source, case.child_by_field_name("function")) or ""
            ).endswith("param"):
                items = call_arguments(case)
            elif len(names) == 1:
                items = [case]
            elif case.type in ("tuple", "list"):
                items = [c for c in case.named_children if c.type != "comment"]
            else:
                return None
            position = names.index(name)
            if position >= len(items):
                return None
            return unwrap(items[position]), cases[index]
        return None

    def case_lines(self) -> list[tuple[int, int]]:
        """(first, last) lines, 1-based, of the case ``indices`` names in each parametrize
        decorator of the test (or of its class): what that case's values are written on."""
        found = []
        for decorator in self._parametrize_decorators():
            names, values = self._parametrize_arguments(decorator)
            if not names or values is None or values.type not in ("list", "tuple"):
                continue
            index = next((self.indices[n] for n in names if n in self.indices), None)
            cases = [c for c in values.named_children if c.type != "comment"]
            if index is not None and index < len(cases):
                found.append((cases[index].start_point.row + 1, cases[index].end_point.row + 1))
        return found

    def _parametrize_decorators(self) -> list[Node]:
        holders = [self.fn.node]
        if self.fn.class_ is not None:
            holders.append(self.fn.class_.node)
        found = []
        for decorator in decorators(holders):
            expr = decorator.named_children[0]
            if expr.type != "call":
                continue
            name = dotted(self.source, expr.child_by_field_name("function")) or ""
            if name.endswith("parametrize"):
                found.append(expr)
        return found

    def _parametrize_arguments(self, call: Node) -> tuple[list[str] | None, Node | None]:
        args = call_arguments(call)
        names_node = args[0] if args else keyword_argument(self.source, call, "argnames")
        values = args[1] if len(args) > 1 else keyword_argument(self.source, call, "argvalues")
        if names_node is None:
            return None, None
        try:
            raw = ast.literal_eval(self.source.node_text(names_node))
        except (ValueError, SyntaxError):
            return None, None
        if isinstance(raw, str):
            names = [n.strip() for n in raw.split(",") if n.strip()]
        elif isinstance(raw, (list, tuple)) and all(isinstance(n, str) for n in raw):
            names = list(raw)
        else:
            return None, None
        return names, unwrap(values) if values is not None else None


def _dedented(source: SourceFile, node: Node) -> str:
    """A nested definition's text as a top-level one: its lines less the indentation of
    its first."""
    indent = node.start_point.column
    lines = source.node_text(node).split("\n")
    return "\n".join(
        [lines[0]]
        + [line[indent:] if line[:indent].isspace() else line.lstrip() for line in lines[1:]]
    )
