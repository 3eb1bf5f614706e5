"""Facts about one Python module that several rules share, computed once per file.

One tree-sitter query pass collects the nodes the rules care about (functions, classes,
assertions, calls, raises, comments); everything else is derived from those captures, so
the cost per file is one parse plus work proportional to what was captured.

A module can also be collected over some top-level statements only (``ranges``), with
the facts that span the whole file (assertion aliases, whether it is a unittest-only
module, which functions assert) given from outside: the incremental check in
``engine.py`` re-collects only what an edit changed.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from tree_sitter import Node, Query, QueryCursor

from referee.checks.nodes import is_docstring, raised_name, statements
from referee.checks.source import PYTHON, SourceFile


@functools.cache
def _query() -> Query:
    """The query every module summary runs (compiled on first use: tree-sitter takes a
    noticeable part of start-up to compile it, and a run may check no Python file)."""
    return Query(PYTHON, _QUERY_TEXT)


_QUERY_TEXT = """
    (function_definition) @function
    (class_definition) @class
    (assert_statement) @assert
    (call function: (identifier) @call.name)
    (call function: (attribute attribute: (identifier) @call.attribute))
    (raise_statement) @raise
    (comment) @comment
    [(print_statement) (exec_statement)] @python2
    (assignment left: (identifier) @alias.name right: (attribute attribute: (identifier)
        @alias.target))
    """

# Names that make a call an assertion wherever they are defined: unittest's assert*/fail*,
# pytest's raises/warns/fail, mock's assert_called*, numpy.testing's assert_*, ...
_ASSERTING_CALL = re.compile(r"^(assert|fail(Unless|If)?$|failure)|^_*assert", re.IGNORECASE)
_PYTEST_ASSERTING = frozenset({"raises", "warns", "deprecated_call", "fail"})
# Methods that check and fail the test whatever object they are called on: pytester's
# LineMatcher (`result.stdout.fnmatch_lines([...])`) and RunResult (`assert_outcomes`,
# `assertoutcome`, which the pattern above covers).
_CHECKING_METHODS = frozenset(
    {
        "fnmatch_lines",
        "fnmatch_lines_random",
        "re_match_lines",
        "re_match_lines_random",
        "no_fnmatch_line",
        "no_re_match_line",
    }
)
# Fixtures whose use is the check: a benchmark measures (pytest-benchmark, codspeed); it
# asserts nothing, and a test that only runs it is a benchmark, not a hollow test.
_CHECKING_FIXTURES = frozenset({"benchmark", "aio_benchmark"})
_FIXTURE_DECORATORS = frozenset({"fixture", "yield_fixture"})
_NAMED_PARAMETERS = frozenset({"typed_parameter", "default_parameter", "typed_default_parameter"})
# A helper defined outside this file (a base class, a support module) is presumed to assert
# when its name says it checks something; see docs/rules/test-without-assertion.md.
_DELEGATING_HELPER = re.compile(
    r"^_*(check|verify|expect|ensure|validate|compare|do_?test|run_?test|_?test)"
    r"|_(check|test|verify)(_|$)|^(check|verify|expect|ensure)",
    re.IGNORECASE,
)
# `import unittest` or `from unittest import TestCase` — not `from unittest import mock`,
# which pytest modules use too — at the start of a line (after white space). Each pattern
# starts with a literal, which the regex engine finds fast; see _at_line_start.
_IMPORTS_UNITTEST = (
    re.compile(r"import\s+unittest\b(?!\.)"),
    re.compile(r"from\s+unittest\s+import\s+(?!mock\b)"),
)
_IMPORTS_PYTEST = (re.compile(r"import\s+_?pytest\b"), re.compile(r"from\s+_?pytest\b"))
# A raise of anything but these fails the test that reaches it, so it is an assertion.
_NOT_FAILURES = frozenset({"NotImplementedError", "SkipTest", "StopIteration"})


def _self_and_ancestors(fn: Function) -> Iterator[Function]:
    current: Function | None = fn
    while current is not None:
        yield current
        current = current.parent


def _empty_body(definition: Node) -> bool:
    body = definition.child_by_field_name("body")
    return body is not None and body.named_child_count == 0


def _position(node: Node) -> tuple[int, int]:
    return node.start_byte, node.end_byte


def imports_only_unittest(text: str) -> bool:
    """unittest collects only TestCase methods; a unittest module's top-level test_*
    functions are helpers or trace subjects, not tests (pytest would collect them)."""
    return _imports(text, _IMPORTS_UNITTEST) and not _imports(text, _IMPORTS_PYTEST)


def _imports(text: str, patterns: tuple[re.Pattern[str], ...]) -> bool:
    """Whether one of ``patterns`` matches at the start of a line, after white space: what
    ``^\\s*(?:...)`` in MULTILINE mode finds, without trying every line."""
    for pattern in patterns:
        match = pattern.search(text)
        while match is not None:
            if _at_line_start(text, match.start()):
                return True
            match = pattern.search(text, match.start() + 1)
    return False


def _at_line_start(text: str, index: int) -> bool:
    """Whether only white space (``\\s``, newlines included) lies between a line start and
    ``index``."""
    while index > 0 and text[index - 1].isspace():
        if text[index - 1] == "\n":
            return True
        index -= 1
    return index == 0


def asserts_through(
    callee: str, asserting: set[str] | frozenset[str], defined: frozenset[str]
) -> bool:
    """Whether a call to ``callee`` is an assertion: a function of this file that asserts,
    or one defined elsewhere whose name says it checks something."""
    if callee in asserting:
        return True
    return callee not in defined and _delegates(callee)


@functools.lru_cache(maxsize=4096)
def _delegates(callee: str) -> bool:
    """Whether a helper defined elsewhere is presumed to assert, by its name."""
    return bool(_DELEGATING_HELPER.search(callee))


def close_asserting(
    asserting: set[str],
    candidates: list[tuple[str, list[str]]],
    defined: frozenset[str],
) -> frozenset[str]:
    """``asserting`` (the functions that assert themselves, with their enclosing
    functions) grown by every candidate ``(name, callees)`` that calls one that asserts,
    until nothing changes."""
    changed = True
    while changed:
        changed = False
        for name, callees in candidates:
            if name in asserting:
                continue
            if any(asserts_through(callee, asserting, defined) for callee in callees):
                asserting.add(name)
                changed = True
    return frozenset(asserting)


@dataclass
class Function:
    node: Node
    name: str
    class_: Class | None
    parent: Function | None  # the enclosing function, for nested functions
    decorators: tuple[str, ...]
    assertions: list[Node] = field(default_factory=list)  # assert, self.assert*, raises, ...
    calls: list[tuple[str, Node]] = field(default_factory=list)  # (callee name, call node)
    comments: list[Node] = field(default_factory=list)
    is_test: bool = False

    @property
    def is_fixture(self) -> bool:
        """``@pytest.fixture`` (with or without arguments), whatever its name."""
        return any(d.rsplit(".", 1)[-1] in _FIXTURE_DECORATORS for d in self.decorators)

    @cached_property
    def parameters(self) -> dict[str, Node]:
        """The names of its parameters (what pytest hands a test as fixtures) → nodes."""
        found: dict[str, Node] = {}
        params = self.node.child_by_field_name("parameters")
        for param in params.named_children if params is not None else ():
            name = param
            if param.type in _NAMED_PARAMETERS and param.named_children:
                name = param.named_children[0]
            if name.type == "identifier" and name.text is not None:
                found[name.text.decode("utf-8", "replace")] = name
        return found

    @cached_property
    def body(self) -> Node:
        body = self.node.child_by_field_name("body")
        assert body is not None, "tree-sitter always gives a function a body"
        return body

    @cached_property
    def statements(self) -> list[Node]:
        """The body's statements, comments left out."""
        return statements(self.body)

    @property
    def is_nested(self) -> bool:
        return self.parent is not None


@dataclass
class Class:
    node: Node
    name: str
    bases: tuple[str, ...]
    nested: bool  # defined inside a function


def callee_parts(source: SourceFile, callee: Node) -> tuple[str, str]:
    """``(receiver, name)`` of a call's function: ``self.assertEqual`` → ("self", "assertEqual")."""
    if callee.type == "attribute":
        obj = callee.child_by_field_name("object")
        attr = callee.child_by_field_name("attribute")
        return (
            source.node_text(obj) if obj is not None else "",
            source.node_text(attr) if attr is not None else "",
        )
    return "", source.node_text(callee)


def decorator_names(source: SourceFile, definition: Node) -> tuple[str, ...]:
    """Dotted names of a definition's decorators, without call arguments."""
    parent = definition.parent
    if parent is None or parent.type != "decorated_definition":
        return ()
    names = []
    for child in parent.named_children:
        if child.type == "decorator":
            # The expression alone: a trailing comment (`@overload  # first`) is a child too.
            expr = next((c for c in child.named_children if c.type != "comment"), None)
            text = source.node_text(expr) if expr is not None else ""
            names.append(text.split("(", 1)[0].strip())
    return tuple(names)


_WARNING_FILTERS = frozenset({"simplefilter", "filterwarnings"})


# Substring tests (fast) that a file may hold either kind of call.
_MAY_CHECK_STATUS = ("check=True", "check = True", "simplefilter", "filterwarnings")


def _checks_status(source: SourceFile, call: Node, name: str) -> bool:
    """``subprocess.run(..., check=True)``: the call raises when the command fails;
    ``warnings.simplefilter("error")``: any warning from here on fails the test."""
    arguments = call.child_by_field_name("arguments")
    if arguments is None:
        return False
    if name in _WARNING_FILTERS:
        first = arguments.named_children[0] if arguments.named_children else None
        return first is not None and source.node_text(first).strip("\"'") == "error"
    for arg in arguments.named_children:
        if arg.type == "keyword_argument":
            key, value = arg.child_by_field_name("name"), arg.child_by_field_name("value")
            if key is not None and value is not None and source.node_text(key) == "check":
                return source.node_text(value) == "True"
    return False


def _strict_xfail_raises(source: SourceFile, decorator: Node, strict: bool = False) -> bool:
    """``@pytest.mark.xfail(raises=E, strict=True)`` (or without ``strict`` where the
    configuration makes xfails strict): the test passes only if ``E`` is raised, so the
    decorator is its assertion."""
    expr = next((c for c in decorator.named_children if c.type != "comment"), None)
    if expr is None or expr.type != "call":
        return False
    callee = expr.child_by_field_name("function")
    if callee is None or not source.node_text(callee).endswith("xfail"):
        return False
    arguments = expr.child_by_field_name("arguments")
    keywords = {}
    for arg in arguments.named_children if arguments is not None else ():
        if arg.type == "keyword_argument":
            key, value = arg.child_by_field_name("name"), arg.child_by_field_name("value")
            if key is not None and value is not None:
                keywords[source.node_text(key)] = source.node_text(value)
    return "raises" in keywords and keywords.get("strict", str(strict)) == "True"


def merged_ranges(chunks: Sequence[Any], indices: Iterable[int]) -> list[tuple[int, int]]:
    """The byte ranges (``start``, ``end``) of the statement chunks ``indices`` picks, in
    ascending order, with neighbouring chunks merged into one range."""
    ranges: list[tuple[int, int]] = []
    previous = -2
    for i in indices:
        if i == previous + 1:
            ranges[-1] = (ranges[-1][0], chunks[i].end)
        else:
            ranges.append((chunks[i].start, chunks[i].end))
        previous = i
    return ranges


class PythonModule:
    """The shared analysis of one parsed Python file."""

    def __init__(
        self,
        source: SourceFile,
        is_test_file: bool,
        *,
        ranges: list[tuple[int, int]] | None = None,
        aliases: frozenset[str] | None = None,
        unittest_only: bool | None = None,
        external: frozenset[str] = frozenset(),
        xfail_strict: bool = False,
    ) -> None:
        """``ranges``: collect only nodes inside these byte ranges (whole top-level
        statements, in file order); ``aliases`` and ``unittest_only``: the whole file's,
        when only part of it is collected. Then :meth:`use_file_facts` must give the
        whole file's defined and asserting function names before any rule asks."""
        self.source = source
        self.is_test_file = is_test_file
        # Names bound here to functions elsewhere in the project that assert: imported
        # helpers, conftest fixtures (the project index's view of this file).
        self.external = external
        self.xfail_strict = xfail_strict  # the pytest configuration makes every xfail strict
        self.unittest_only = (
            imports_only_unittest(source.text) if unittest_only is None else unittest_only
        )
        self._ranges = ranges
        self._given_aliases = aliases
        # `eq = self.assertEqual` in this module (or in its ranges): (alias, byte offset).
        self.alias_sites: list[tuple[str, int]] = []
        self.functions: list[Function] = []
        self.classes: list[Class] = []
        self.comments: list[Node] = []
        self.module_assertions: list[Node] = []
        # Constructs tree-sitter accepts without an error node that CPython 3 rejects.
        self.suspicious: list[Node] = []
        self._assertion_nodes: dict[int, list[Node]] = {}
        self._collect()

    # ------------------------------------------------------------------ collection

    def _captures(self) -> dict[str, list[Node]]:
        """The query's captures by name, each list in document order: the cursor's own
        order is not (and is not even the same from one run to the next on a tree with
        errors), and what the rules report follows this order."""
        root = self.source.tree.root_node
        if self._ranges is None:
            captures = QueryCursor(_query()).captures(root)
        else:
            captures = {}
            for start, end in self._ranges:
                cursor = QueryCursor(_query())
                cursor.set_byte_range(start, end)
                for name, nodes in cursor.captures(root).items():
                    # The cursor also returns nodes that only overlap the range.
                    captures.setdefault(name, []).extend(
                        n for n in nodes if n.start_byte >= start and n.end_byte <= end
                    )
        return {name: sorted(nodes, key=_position) for name, nodes in captures.items()}

    def _collect(self) -> None:
        captures = self._captures()
        self._collect_classes(captures.get("class", []))
        functions = captures.get("function", [])
        starts = self._collect_functions(functions)
        self.suspicious.extend(captures.get("python2", []))
        self.suspicious.extend(
            n for n in (*functions, *captures.get("class", [])) if _empty_body(n)
        )
        for cls in self.classes:
            cls.nested = self._innermost(cls.node.start_byte, cls.node.end_byte, starts) is not None
        self._starts = starts

        for node in captures.get("assert", []):
            self._attach_assertion(node)
        for node in captures.get("raise", []):
            name = raised_name(self.source, node)
            if name is not None and name not in _NOT_FAILURES:
                self._attach_assertion(node)
        self._collect_calls(captures, starts)
        for node in captures.get("comment", []):
            self.comments.append(node)
            fn = self._innermost(node.start_byte, node.end_byte, starts)
            if fn is not None:
                fn.comments.append(node)

        if self.is_test_file:
            for fn in self.functions:
                fn.is_test = self._is_test_function(fn)

    def _collect_classes(self, classes: list[Node]) -> None:
        source = self.source
        for node in classes:
            bases_node = node.child_by_field_name("superclasses")
            bases = (
                tuple(
                    source.node_text(b)
                    for b in bases_node.named_children
                    if b.type != "keyword_argument"
                )
                if bases_node is not None
                else ()
            )
            name_node = node.child_by_field_name("name")
            self.classes.append(
                Class(node, source.node_text(name_node) if name_node else "", bases, False)
            )

    def _collect_functions(self, functions: list[Node]) -> list[int]:
        """Collect the functions, each with its class and enclosing function; return
        their start bytes, in order."""
        source = self.source
        class_starts = [c.node.start_byte for c in self.classes]
        starts: list[int] = []
        for node in functions:
            name_node = node.child_by_field_name("name")
            parent_fn = self._innermost(node.start_byte, node.end_byte, starts)
            owner = self._owner_class(node, class_starts)
            fn = Function(
                node=node,
                name=source.node_text(name_node) if name_node else "",
                class_=owner,
                parent=parent_fn,
                decorators=decorator_names(source, node),
            )
            self.functions.append(fn)
            starts.append(node.start_byte)
        return starts

    def _collect_calls(self, captures: dict[str, list[Node]], starts: list[int]) -> None:
        """Each call: an assertion (a checking call, a call to an assertion alias), or
        a call its function makes."""
        source = self.source
        # `eq = self.assertEqual` makes every `eq(...)` an assertion.
        for name in captures.get("alias.target", []):
            if _ASSERTING_CALL.match(source.node_text(name)):
                assignment = name.parent.parent
                left = assignment.child_by_field_name("left")
                self.alias_sites.append((source.node_text(left), assignment.start_byte))
        aliases = (
            {alias for alias, _ in self.alias_sites}
            if self._given_aliases is None
            else self._given_aliases
        )
        # Cheap test first: most files have neither `check=True` nor a warnings filter.
        text = source.text
        checks_status = any(word in text for word in _MAY_CHECK_STATUS)
        calls = [(n, n.parent) for n in captures.get("call.name", [])]
        calls += [(n, n.parent.parent) for n in captures.get("call.attribute", [])]
        for name_node, call in calls:
            name = source.node_text(name_node)
            fn = self._innermost(call.start_byte, call.end_byte, starts)
            if (
                _ASSERTING_CALL.match(name)
                or name in aliases
                or (name in _CHECKING_METHODS and name_node.parent.type == "attribute")
                or (
                    name in _PYTEST_ASSERTING
                    and name_node.prev_named_sibling is not None
                    and source.node_text(name_node.prev_named_sibling) == "pytest"
                )
                or (checks_status and _checks_status(source, call, name))
            ):
                self._attach_assertion(call, fn)
            elif fn is not None:
                fn.calls.append((name, call))

    def _innermost(self, start: int, end: int, starts: list[int]) -> Function | None:
        """The innermost already-collected function whose range holds [start, end).

        The last function starting before ``start`` either holds it or has an ancestor
        that does: functions nest, so no other candidate exists."""
        index = bisect.bisect_right(starts, start) - 1
        fn = self.functions[index] if index >= 0 else None
        while fn is not None and fn.node.end_byte < end:
            fn = fn.parent
        return fn

    def _owner_class(self, fn_node: Node, class_starts: list[int]) -> Class | None:
        """The class a function is a method of (its direct parent scope), if any."""
        parent = fn_node.parent
        if parent is not None and parent.type == "decorated_definition":
            parent = parent.parent
        if parent is None or parent.type != "block":
            return None
        holder = parent.parent
        if holder is None or holder.type != "class_definition":
            return None
        index = bisect.bisect_left(class_starts, holder.start_byte)
        return self.classes[index] if index < len(self.classes) else None

    def _attach_assertion(self, node: Node, fn: Function | None = None) -> None:
        fn = fn or self._innermost(node.start_byte, node.end_byte, self._starts)
        (fn.assertions if fn is not None else self.module_assertions).append(node)

    def _is_test_function(self, fn: Function) -> bool:
        if not fn.name.startswith("test") or fn.is_nested or fn.is_fixture:
            return False
        if fn.class_ is None:
            return not self.unittest_only
        return not fn.class_.nested and not fn.class_.name.startswith("_")

    # ------------------------------------------------------------------ derived facts

    @cached_property
    def defined_names(self) -> frozenset[str]:
        return frozenset(fn.name for fn in self.functions)

    @cached_property
    def asserting_functions(self) -> frozenset[str]:
        """Names of functions in this file that assert, directly or through each other."""
        by_name: dict[str, list[Function]] = {}
        for fn in self.functions:
            by_name.setdefault(fn.name, []).append(fn)
        # A function whose nested function asserts (a decorator's wrapper, a checker
        # factory) is taken to assert too.
        # A nested function's own name is not: it is visible only in its encloser, and a
        # `client.get(...)` elsewhere in the file is not a call to a nested `def get()`.
        asserting = {
            outer.name
            for fn in self.functions
            if fn.assertions
            for outer in _self_and_ancestors(fn)
            if outer.parent is None
        }
        asserting |= self.external - self.defined_names
        candidates = [
            (fn.name, [name for name, _ in fn.calls]) for fn in self.functions if fn.parent is None
        ]
        return close_asserting(asserting, candidates, self.defined_names)

    def use_file_facts(self, defined: frozenset[str], asserting: frozenset[str]) -> None:
        """The whole file's function names and asserting functions, for a module that
        collected only part of the file."""
        self.__dict__["defined_names"] = defined
        self.__dict__["asserting_functions"] = asserting

    def _asserts_through(self, callee: str, asserting: set[str] | frozenset[str]) -> bool:
        return asserts_through(callee, asserting, self.defined_names)

    @cached_property
    def _nested(self) -> dict[int, list[Function]]:
        children: dict[int, list[Function]] = {}
        for fn in self.functions:
            if fn.parent is not None:
                children.setdefault(id(fn.parent), []).append(fn)
        return children

    def assertion_nodes(self, fn: Function) -> list[Node]:
        """Every node that can make ``fn`` fail: its own assertions, those of functions
        nested in it (callbacks it hands to the code under test), calls to helpers that
        assert (defined here, or presumed to from their names), and a decorator defined
        here that asserts (the decorator node stands for it). Computed once per function:
        four rules ask."""
        cached = self._assertion_nodes.get(id(fn))
        if cached is not None:
            return cached
        asserting = self.asserting_functions
        nodes: list[Node] = []
        stack = [fn]
        while stack:
            current = stack.pop()
            nodes.extend(current.assertions)
            nodes.extend(
                call for name, call in current.calls if self._asserts_through(name, asserting)
            )
            stack.extend(self._nested.get(id(current), ()))
        parent = fn.node.parent
        if parent is not None and parent.type == "decorated_definition":
            for decorator, name in zip(
                (c for c in parent.named_children if c.type == "decorator"),
                fn.decorators,
                strict=False,
            ):
                if name.rsplit(".", 1)[-1] in asserting or _strict_xfail_raises(
                    self.source, decorator, self.xfail_strict
                ):
                    nodes.append(decorator)
        if fn.is_test:
            # A fixture the test requests that asserts (here, in a conftest, imported)
            # checks for it; so does a benchmark fixture: the parameter stands for it.
            fixtures = self._asserting_fixtures
            nodes.extend(
                node
                for name, node in fn.parameters.items()
                if name in fixtures or name in _CHECKING_FIXTURES
            )
        self._assertion_nodes[id(fn)] = nodes
        return nodes

    @cached_property
    def _asserting_fixtures(self) -> frozenset[str]:
        """Fixture names whose function asserts: defined here, or (``external``) anywhere
        the project index sees that pytest would hand them to this module's tests."""
        asserting = self.asserting_functions
        here = {fn.name for fn in self.functions if fn.is_fixture and fn.parent is None}
        return frozenset(here & asserting) | (self.external - self.defined_names)

    def has_doctest(self, fn: Function) -> bool:
        """Whether the function's docstring holds doctest examples (``>>>``)."""
        first = fn.statements[0] if fn.statements else None
        return first is not None and is_docstring(first) and ">>>" in self.source.node_text(first)

    @property
    def tests(self) -> list[Function]:
        return [fn for fn in self.functions if fn.is_test]
