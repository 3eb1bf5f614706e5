"""Assertions that cannot fail, and tests that have none (REF110–REF114, REF117)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

from tree_sitter import Node

from referee.checks.models import Edit, Fix, Severity
from referee.checks.nodes import (
    FRESH_OBJECTS,
    call_arguments,
    excerpt,
    is_literal,
    is_pure,
    keyword_argument,
    literal_truth,
    same_expression,
    unwrap,
)
from referee.checks.pymodule import Function, callee_parts
from referee.checks.rule import Context, Violation
from referee.checks.shape.lookalikes import discarded_comparisons
from referee.checks.shape.placeholders import placeholder_kind
from referee.checks.source import SourceFile


def test_without_assertion(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test function that contains no assertion. Tests are the `test*` functions
    and methods of a test module (see below); in a module that imports `unittest` and not
    `pytest`, only methods. These count as assertions: `assert`, `self.assert*`,
    `self.fail()`, `pytest.raises`/`warns`/`deprecated_call`/`fail`, mock's
    `assert_called*`, any `assert_*` function (numpy, pandas, snapshot libraries'
    `snapshot.assert_match`), pytester's checks (`fnmatch_lines`, `re_match_lines`,
    `no_fnmatch_line`, `no_re_match_line`, `assert_outcomes`, `assertoutcome`), a
    `raise` (of anything but `NotImplementedError`, `SkipTest` or `StopIteration`), a
    strict `@pytest.mark.xfail(raises=E, strict=True)`, a requested fixture that
    asserts (defined in the file, or in a `conftest.py` above it), a `benchmark`
    fixture (the test is a benchmark), and a call to a helper that itself asserts — a
    helper in the same file is followed through any number of calls; one imported from
    another module of the project, or a method of a base class defined there, is
    followed through the project index; any other helper counts when its name says it
    checks (such as `check_*`, `verify*`, `expect*`, `ensure*`, `validate*`, `do_test`,
    `run_test`, `*_check`). Also followed: an alias of an assertion method
    (`eq = self.assertEqual; eq(a, b)`), a decorator defined in the same file whose
    wrapper asserts, and assertions in callbacks the test defines and hands to the code
    under test. A docstring with doctest examples counts as a test body. A test module
    is one pytest would collect, by the pytest configuration that governs the file
    (`python_files`, `testpaths`, `norecursedirs`, read from pytest.ini, pyproject.toml,
    tox.ini or setup.cfg at the project's root); without one, a file `test-files`
    matches (a `tests.py` only when it imports a test framework). A fixture named
    `test_*` is not a test.

    Warning level: a test that only calls code does check that it does not raise.

    ## Why it matters
    A test without an assertion passes for every implementation that does not crash,
    including a wrong one. It is the most common way a generated test suite looks
    thorough and checks nothing. (pytest and flake8 never shipped this rule because of
    false positives from helper functions; referee follows the helpers. Its
    false-positive rate on CPython's test suite is in docs/benchmarks.md.)

    ## Example
    ```python
    def test_slugify():
        slugify("Hello World")
    ```

    ## Use instead
    ```python
    def test_slugify():
        assert slugify("Hello World") == "hello-world"
    ```
    """
    module = ctx.module
    for fn in module.tests:
        if module.assertion_nodes(fn) or module.has_doctest(fn):
            continue
        if placeholder_kind(module, fn) is not None or discarded_comparisons(fn):
            continue  # REF101's placeholder, REF116's comparison without `assert`: errors
        name = fn.node.child_by_field_name("name") or fn.node
        yield Violation(
            span=ctx.source.node_span(name),
            message=f"test `{fn.name}` has no assertion: it passes whenever it does not raise",
            evidence=ctx.source.node_text(fn.node).split("\n", 1)[0],
        )


# unittest methods whose single argument is checked for truth (True) or falsehood (False).
_TRUTH_METHODS = {
    "assertTrue": True,
    "assert_": True,
    "failUnless": True,
    "assertFalse": False,
    "failIf": False,
}
_SELF_COMPARE_METHODS = {
    "assertEqual": "==",
    "assertEquals": "==",
    "assertIs": "is",
    "assertLessEqual": "<=",
    "assertGreaterEqual": ">=",
    "assertCountEqual": "==",
    "assertListEqual": "==",
    "assertDictEqual": "==",
    "assertSetEqual": "==",
    "assertTupleEqual": "==",
    "assertSequenceEqual": "==",
    "assertMultiLineEqual": "==",
    "assertAlmostEqual": "==",
}
_IDENTITY_METHODS = {"assertIs": True, "assertIsNot": False}


@dataclass(frozen=True)
class _Vacuous:
    """An assertion whose outcome does not depend on the code under test."""

    code: str
    fn: Function | None
    node: Node
    message: str
    always_warning: bool = False  # `x == x` may be a test of __eq__ itself
    fix: Fix | None = None


def _assertions(ctx: Context) -> Iterator[tuple[Function | None, Node]]:
    module = ctx.module
    for fn in module.functions:
        for node in fn.assertions:
            yield fn, node
    for node in module.module_assertions:
        yield None, node


def _method(source: SourceFile, call: Node) -> str:
    callee = call.child_by_field_name("function")
    return callee_parts(source, callee)[1] if callee is not None else ""


def _condition(node: Node) -> Node | None:
    return node.named_children[0] if node.named_children else None


def _operator(source: SourceFile, comparison: Node) -> str:
    return " ".join(source.node_text(c) for c in comparison.children if not c.is_named)


def _comparison(node: Node) -> Node | None:
    cond = _condition(node)
    cond = unwrap(cond) if cond is not None else None
    if cond is None or cond.type != "comparison_operator" or cond.named_child_count != 2:
        return None
    return cond


_REFLEXIVE = frozenset({"==", "is", "<=", ">="})

# unittest methods that compare their first two arguments, and the operator that must hold.
_ORDER_METHODS = {
    "assertGreater": ">",
    "assertGreaterEqual": ">=",
    "assertLess": "<",
    "assertLessEqual": "<=",
    "assertNotEqual": "!=",
    "assertNotEquals": "!=",
    "assertEqual": "==",
    "assertEquals": "==",
}
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_NEVER_NEGATIVE = "a length is never negative"


def _number(source: SourceFile, node: Node) -> float | None:
    """The value of a numeric literal, signed or not (``0``, ``-1``, ``+0.0``)."""
    node = unwrap(node)
    sign = 1.0
    if node.type == "unary_operator":
        operator = node.child_by_field_name("operator")
        operand = node.child_by_field_name("argument")
        if operator is None or operand is None or source.node_text(operator) not in ("-", "+"):
            return None
        sign = -1.0 if source.node_text(operator) == "-" else 1.0
        node = unwrap(operand)
    if node.type not in ("integer", "float"):
        return None
    text = source.node_text(node).replace("_", "").lower()
    try:
        return sign * (float(int(text, 0)) if node.type == "integer" else float(text))
    except ValueError:
        return None  # 1j: a complex number has no order


def _is_len_call(source: SourceFile, node: Node) -> bool:
    """``len(x)``: the builtin on one positional argument."""
    node = unwrap(node)
    callee = node.child_by_field_name("function") if node.type == "call" else None
    if callee is None or callee.type != "identifier" or source.node_text(callee) != "len":
        return False
    arguments = node.child_by_field_name("arguments")
    named = [a for a in arguments.named_children if a.type != "comment"] if arguments else []
    return len(named) == 1 and named[0].type not in (
        "keyword_argument",
        "list_splat",
        "dictionary_splat",
    )


def _length_comparison(source: SourceFile, op: str, left: Node, right: Node) -> bool | None:
    """The answer of ``len(x) OP n`` (or ``n OP len(x)``) when the number alone settles
    it: a length is 0, 1, 2, ..., so `>= 0` and `> -1` always hold and `< 0` never does.
    None when the answer depends on ``x``."""
    if _is_len_call(source, left):
        number = _number(source, right)
    elif _is_len_call(source, right):
        number, op = _number(source, left), _FLIPPED.get(op, "")
    else:
        return None
    if number is None:
        return None
    if number < 0 or (number == 0 and op in (">=", "<")):
        return {">": True, ">=": True, "!=": True, "<": False, "<=": False, "==": False}.get(op)
    if op in ("==", "!=") and not number.is_integer():
        return op == "!="
    return None


def _known_truth(source: SourceFile, node: Node) -> tuple[bool, str] | None:
    """Whether ``node`` is true or false before the test runs, and why when it is not
    because it is a literal (``len(x) >= 0``: a length is never negative); else None."""
    node = unwrap(node)
    if node.type == "not_operator":
        operand = node.child_by_field_name("argument")
        found = _known_truth(source, operand) if operand is not None else None
        return None if found is None else (not found[0], found[1])
    if node.type == "comparison_operator" and node.named_child_count == 2:
        left, right = node.named_children
        answer = _length_comparison(source, _operator(source, node), left, right)
        return None if answer is None else (answer, _NEVER_NEGATIVE)
    truth = literal_truth(source, node)
    return None if truth is None else (truth, "")


def _assert_statement_vacuity(
    source: SourceFile, fn: Function | None, node: Node
) -> _Vacuous | None:
    cond = _condition(node)
    if cond is None:
        return None
    inner = unwrap(cond)
    text = source.node_text(node)
    if inner.type == "tuple":
        if inner.named_child_count == 0:
            return None
        fix = None
        if inner.named_child_count in (1, 2) and inner is cond:
            parts = [source.node_text(c) for c in inner.named_children]
            fix = Fix(
                message="Remove the parentheses so the condition is checked",
                edits=(Edit(span=source.node_span(inner), content=", ".join(parts)),),
                applicability="unsafe",
            )
        return _Vacuous(
            "REF112",
            fn,
            node,
            "assertion on a non-empty tuple is always true; "
            "did you mean `assert condition, message`?",
            fix=fix,
        )
    known = _known_truth(source, cond)
    if known is not None and known[0]:
        why = f"{known[1]}, so " if known[1] else ""
        return _Vacuous(
            "REF111",
            fn,
            node,
            f"`{excerpt(source.node_text(cond))}` is always true: {why}the assertion cannot fail",
        )
    chained = _chained_self_comparison(source, unwrap(cond))
    if chained is not None:
        return _self_compared(fn, node, *chained)
    comparison = _comparison(node)
    if comparison is None:
        return None
    op = _operator(source, comparison)
    left, right = comparison.named_children
    if op in ("is", "is not"):
        fresh = [c for c in (left, right) if unwrap(c).type in FRESH_OBJECTS]
        if fresh:
            return _fresh(fn, node, op == "is", source.node_text(fresh[0]))
    if op in _REFLEXIVE and is_pure(left) and same_expression(source, left, right):
        if is_literal(left):
            return _Vacuous(
                "REF111",
                fn,
                node,
                f"`{excerpt(text)}` compares a literal with itself: the assertion cannot fail",
            )
        return _self_compared(fn, node, op, source.node_text(left))
    return None


def _chained_self_comparison(source: SourceFile, cond: Node) -> tuple[str, str] | None:
    """``a == a == b``: a chain of comparisons in which one link compares an expression
    with itself; (operator, operand) of that link."""
    if cond.type != "comparison_operator" or cond.named_child_count < 3:
        return None
    operands = cond.named_children
    operators = [source.node_text(c) for c in cond.children if not c.is_named]
    for (left, right), op in zip(pairwise(operands), operators, strict=False):
        if op in _REFLEXIVE and is_pure(left) and same_expression(source, left, right):
            return op, source.node_text(left)
    return None


def _assert_call_vacuity(source: SourceFile, fn: Function | None, call: Node) -> _Vacuous | None:
    method = _method(source, call)
    args = call_arguments(call)
    if method in _TRUTH_METHODS and args:
        known = _known_truth(source, args[0])
        if known is not None and known[0] is _TRUTH_METHODS[method]:
            given = f"`{method}({excerpt(source.node_text(args[0]))})`"
            if known[1]:
                message = f"{given} cannot fail: {known[1]}"
            else:
                message = f"{given} is given a constant: the assertion cannot fail"
            return _Vacuous("REF111", fn, call, message)
        return None
    if len(args) < 2:
        return None
    if method in _ORDER_METHODS and _length_comparison(
        source, _ORDER_METHODS[method], args[0], args[1]
    ):
        compared = ", ".join(source.node_text(a) for a in args[:2])
        return _Vacuous(
            "REF111",
            fn,
            call,
            f"`{method}({excerpt(compared)})` cannot fail: {_NEVER_NEGATIVE}",
        )
    if method in _IDENTITY_METHODS:
        fresh = [a for a in args[:2] if unwrap(a).type in FRESH_OBJECTS]
        if fresh:
            return _fresh(fn, call, _IDENTITY_METHODS[method], source.node_text(fresh[0]))
    if (
        method in _SELF_COMPARE_METHODS
        and is_pure(args[0])
        and same_expression(source, args[0], args[1])
    ):
        if is_literal(args[0]):
            return _Vacuous(
                "REF111",
                fn,
                call,
                f"`{method}` compares the literal "
                f"`{excerpt(source.node_text(args[0]))}` with itself: the assertion cannot fail",
            )
        return _self_compared(fn, call, _SELF_COMPARE_METHODS[method], source.node_text(args[0]))
    return None


def _self_compared(fn: Function | None, node: Node, op: str, operand: str) -> _Vacuous:
    if op == "is":
        return _Vacuous(
            "REF113",
            fn,
            node,
            f"`{excerpt(operand)}` is compared with itself by identity: always true",
        )
    return _Vacuous(
        "REF113",
        fn,
        node,
        f"`{excerpt(operand)}` is compared with itself (`{op}`): "
        "true for any value with a reflexive __eq__",
        always_warning=True,
    )


def _fresh(fn: Function | None, node: Node, positive: bool, fresh: str) -> _Vacuous:
    outcome = "always fails" if positive else "always passes"
    return _Vacuous(
        "REF114",
        fn,
        node,
        f"identity check against the new object `{excerpt(fresh)}` {outcome}; use `==`",
    )


def _vacuous(ctx: Context) -> list[_Vacuous]:
    """Every vacuous assertion in the file, computed once for the four rules."""
    cached = ctx.memo.get("vacuous")
    if cached is None:
        source = ctx.source
        cached = []
        for fn, node in _assertions(ctx):
            if node.type == "assert_statement":
                found = _assert_statement_vacuity(source, fn, node)
            elif node.type == "call":
                found = _assert_call_vacuity(source, fn, node)
            else:
                found = None
            if found is not None:
                cached.append(found)
        ctx.memo["vacuous"] = cached
    return cached  # type: ignore[return-value]


def _report(ctx: Context, code: str) -> Iterator[Violation]:
    findings = _vacuous(ctx)
    vacuous_nodes = {item.node.start_byte for item in findings}
    module = ctx.module
    for item in findings:
        if item.code != code:
            continue
        proves_nothing = (
            item.fn is not None
            and item.fn.is_test
            and all(n.start_byte in vacuous_nodes for n in module.assertion_nodes(item.fn))
        )
        # A tuple assertion never checks, and an identity check against a new object
        # always has the same answer: each is a slip a maintainer fixes, whatever else
        # the test checks.
        louder = code in ("REF112", "REF114") or (proves_nothing and not item.always_warning)
        yield Violation(
            span=ctx.source.node_span(item.node),
            message=item.message,
            evidence=ctx.source.node_text(item.node),
            severity=None if louder else Severity.WARNING,
            fix=item.fix,
        )


def constant_assertion(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an assertion whose truth is known before the test runs: one on a constant —
    `assert True`, `assert 1`, `assert "message"`, `assert [x]`, `assert not None`,
    `self.assertTrue(1)`, `self.assertFalse("")`, `self.assertEqual(3, 3)` — and one that
    compares a length with zero or a negative number so that it holds for every length:
    `assert len(items) >= 0`, `assert 0 <= len(items)`, `assert not len(items) < 0`,
    `self.assertFalse(len(items) < 0)`, `self.assertTrue(len(items) > -1)`,
    `self.assertGreaterEqual(len(items), 0)`. `len(items) > 0` and `len(items) >= 1` are
    real checks and are not flagged.

    Severity: an error when the test's every assertion is vacuous (the test proves
    nothing); a warning when the test also checks something real, or outside a test.

    ## Why it matters
    The assertion passes for every implementation: it is there to look like a check.
    (`assert False`, which always fails, is a different matter and is not flagged.)

    ## Example
    ```python
    def test_saves():
        save(record)
        assert True


    def test_lists_orders():
        assert len(list_orders()) >= 0
    ```

    ## Use instead
    ```python
    def test_saves():
        save(record)
        assert load(record.id) == record


    def test_lists_orders():
        assert len(list_orders()) == 2
    ```
    """
    yield from _report(ctx, "REF111")


def tuple_assertion(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags `assert (condition, "message")`: an assertion on a non-empty tuple, which is
    always true. Python itself warns (`SyntaxWarning: assertion is always true`) but only
    when the file is compiled, and the warning is easy to miss.

    For a tuple of one or two items the fix (unsafe: the assertion starts checking, and
    may fail) removes the parentheses.

    ## Why it matters
    The author meant `assert condition, "message"`; as written the condition is never
    checked.

    ## Example
    ```python
    assert (total == 10, "total is off")
    ```

    ## Use instead
    ```python
    assert total == 10, "total is off"
    ```
    """
    yield from _report(ctx, "REF112")


def self_comparison(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an assertion that compares an expression with itself: `assert x == x`,
    `assert a.b is a.b`, `self.assertEqual(result, result)`, `self.assertIs(x, x)`.
    `<=` and `>=` count too, and so does one link of a chain (`assert x == x == y`).
    Only names, attributes and subscripts are compared —
    `f() == f()` checks that `f` is deterministic and is not flagged; a literal compared
    with itself is `constant-assertion` (REF111).

    An equality check is always a warning: it holds for every value whose `__eq__` is
    reflexive, so it only proves something when the test is *about* `__eq__` (NaN,
    custom types). An identity check (`is`) holds for every object: it is an error when
    the test's every assertion is vacuous (the test proves nothing), and a warning when
    the test also checks something real, or outside a test.

    ## Why it matters
    A copy-paste slip (`assertEqual(expected, expected)`) turns a real check into one
    that passes for any result.

    ## Example
    ```python
    expected = compute()
    assert expected == expected
    ```

    ## Use instead
    ```python
    assert compute() == expected
    ```
    """
    yield from _report(ctx, "REF113")


def fresh_object_identity(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an identity assertion against an object created on the spot: `assert x is []`,
    `assert x is not {}`, `self.assertIs(result, [])`, `self.assertIsNot(y, {1})`. A
    list, dict or set display, a comprehension, a generator expression or a lambda is a
    new object that nothing else can be, so `is` is always false and `is not` always
    true. (Calls such as `set()` are not flagged.)

    Always an error: the answer is the same for every value, so the assertion is a slip
    a maintainer fixes even when the test also checks something real.

    ## Why it matters
    `assertIs(result, [])` fails for every result, and `assert x is not {}` passes for
    every `x`. Either way the assertion says nothing about the code; the author meant
    `==`.

    ## Example
    ```python
    self.assertIs(parse(""), [])
    ```

    ## Use instead
    ```python
    self.assertEqual(parse(""), [])
    ```
    """
    yield from _report(ctx, "REF114")


def duplicate_parametrize_case(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a case of `@pytest.mark.parametrize` that repeats an earlier case of the same
    decorator, written the same way (white space aside; ruff's PT014). Cases that call
    anything but `pytest.param` are left alone: two calls may give different values.

    ## Why it matters
    The duplicate runs the same check twice and usually stands where another case was
    meant (a copy-paste slip): the input it should have tested is not tested.

    ## Example
    ```python
    @pytest.mark.parametrize("n", [1, 2, 2])
    def test_square(n): ...
    ```

    ## Use instead
    ```python
    @pytest.mark.parametrize("n", [1, 2, 3])
    def test_square(n): ...
    ```
    """
    source = ctx.source
    if "parametrize" not in source.text:
        return
    for fn in ctx.module.functions:
        parent = fn.node.parent
        if parent is None or parent.type != "decorated_definition":
            continue
        for decorator in parent.named_children:
            cases = _parametrize_cases(source, decorator) if decorator.type == "decorator" else []
            seen: dict[str, Node] = {}
            for case in cases:
                if _calls_other_than_param(source, case):
                    continue
                key = _tokens(source, case)
                first = seen.setdefault(key, case)
                if first is not case:
                    yield Violation(
                        span=source.node_span(case),
                        message=f"parametrize case `{excerpt(source.node_text(case))}` repeats "
                        f"the case on line {first.start_point.row + 1}",
                        evidence=source.node_text(case),
                    )


def _parametrize_cases(source: SourceFile, decorator: Node) -> list[Node]:
    expr = next((c for c in decorator.named_children if c.type != "comment"), None)
    if expr is None or expr.type != "call":
        return []
    callee = expr.child_by_field_name("function")
    if callee is None or not source.node_text(callee).endswith("parametrize"):
        return []
    values = keyword_argument(source, expr, "argvalues")
    if values is None:
        args = call_arguments(expr)
        values = args[1] if len(args) > 1 else None
    if values is None or values.type not in ("list", "tuple"):
        return []
    return [c for c in values.named_children if c.type != "comment"]


def _tokens(source: SourceFile, node: Node) -> tuple[str, ...]:
    """The node's text as tokens (a string literal is one): equal for two spellings
    that differ only in white space between tokens."""
    if node.type in ("string", "concatenated_string") or not node.children:
        return (source.node_text(node),)
    return tuple(token for child in node.children for token in _tokens(source, child))


def _calls_other_than_param(source: SourceFile, node: Node) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "call":
            callee = current.child_by_field_name("function")
            if callee is None or source.node_text(callee) not in ("pytest.param", "param"):
                return True
        stack.extend(current.named_children)
    return False
