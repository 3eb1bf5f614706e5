"""The suite's assertions about a function, read from a test module's text (nothing
runs): ``assert f(1, "a") == 3``, ``self.assertEqual(f(2), [1])``, parametrize rows, each
as a :class:`Found` with its call of the bare name, its arguments and expected value.

Arguments are literals, or — for the arbitration's scan (``known=True``) — values known
without running the test by :mod:`~referee.checks.arbitration.known`'s rules, the same
the failing call is isolated by: a built-in's name, a standard-library function the
module imports, a plain function or lambda of the test module, an object of a
standard-library value class built from known arguments (``dt.timedelta(seconds=1)``).
Such an assertion carries its *definitions* (the module's imports of the names it uses,
the definitions it names), and its expected value may be such an object too
(``parse("...") == datetime(2019, 3, 29)``): that one is compared by the repr the
sandbox gives it, never evaluated here.

What both the arbitration's suite scan (:mod:`referee.checks.arbitration.suite`) and the
differential check's inputs (:func:`static_examples`) read; it imports neither.
"""

from __future__ import annotations

import ast
import textwrap
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from referee.checks.arbitration.ast_names import dotted_name
from referee.checks.arbitration.known import Known, ModuleNames, _bound_names, module_constants
from referee.checks.arbitration.sites import (
    WRAPPERS,
    NotIsolated,
    immutable,
    parameter_names,
    round_trips,
)
from referee.checks.arbitration.suite_helpers import helper_sites
from referee.checks.arbitration.suite_methods import (
    Owner,
    built_objects,
    first_reads,
    fixture_buildings,
    fixture_reads,
    self_attribute,
    set_up_objects,
)

_EQUAL_METHODS = {"assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual",
                  "assertDictEqual", "assertSetEqual", "assertMultiLineEqual",
                  "assertIs"}  # fmt: skip
_NONE_METHODS = {"assertIsNone"}
# a boolean expectation: the call's value is true (false), stated as ``bool(f(x)) == True``
_TRUE_METHODS = {"assertTrue", "assert_", "failUnless"}
_FALSE_METHODS = {"assertFalse", "failIf"}


class Example(tuple[str, str, str]):
    """(call, want, where) as the assertion writes them — what an oracle's prompt shows —
    with what running it needs: ``definitions`` (:func:`~referee.checks.arbitration.known.
    with_definitions`) and ``compared``, the repr the sandbox gave an expected value
    written as a construction (``datetime(2019, 3, 29)``), which results are compared to."""

    definitions: str
    compared: str

    def __new__(
        cls, call: str, want: str, where: str, definitions: str = "", compared: str = ""
    ) -> Example:
        self = super().__new__(cls, (call, want, where))
        self.definitions, self.compared = definitions, compared
        return self


@dataclass(frozen=True)
class Found:
    """One assertion about the function: its call of the bare name (``f(1, 'a')``, or
    ``sorted(f(1))`` through a wrapper), the literal arguments, the expected value's repr,
    where it is written and the lines it spans."""

    call: str
    arguments: str
    want: str
    path: str
    line: int
    spans: tuple[tuple[int, int], ...]  # (first, last) lines: the assertion, a row
    text: str  # the assertion as written (one line of it), for the evidence
    # another assertion of the failing test itself: the suite's word only where git says
    # it was committed before (the failing assertion's own call never is)
    in_failing_test: bool = False
    # what known arguments (or expected value) need in the sandbox: imports, definitions
    definitions: str = ""
    known: bool = False  # an argument or the expected value is no literal
    want_built: bool = False  # the expected value is a construction, compared by its repr
    compared: str = ""  # that repr, as the sandbox gave it (:func:`suite.passing_examples`)
    # lines of other files it rests on, (path, first, last): a conftest.py fixture the
    # case took (:mod:`~referee.checks.arbitration.siblings`)
    elsewhere: tuple[tuple[str, int, int], ...] = ()

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"

    @property
    def example(self) -> Example:
        return Example(self.call, self.want, self.where, self.definitions, self.compared)


# ---------------------------------------------------------------------------- reading


def local_names(tree: ast.Module, name: str, module: str) -> tuple[set[str], set[str]]:
    """The names a test module calls ``module.name`` by: (the function's own local names —
    ``from pkg.mod import f`` / ``... import f as g`` —, the local names of its module —
    ``import pkg.mod as m`` / ``from pkg import mod``). A module given by its last part
    only (``from mod import f`` where the project runs tests from its package dir) counts,
    and so does a package above it (``import humanize; humanize.naturaltime(...)`` for
    ``humanize.time.naturaltime``)."""
    last = module.rsplit(".", 1)[-1]
    parts = module.split(".")
    # the packages above it, which re-export it (``import humanize`` for ``humanize.time``):
    # an assertion about another function of the name fails on this one, and is dropped
    # when the suite is run on the current code (:func:`suite.passing_examples`)
    packages = {".".join(parts[:n]) for n in range(1, len(parts))}
    functions: set[str] = set()
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            same = (
                node.module == module
                or node.module.rsplit(".", 1)[-1] == last
                or node.module in packages
            )
            for alias in node.names:
                if same and alias.name == name:
                    functions.add(alias.asname or alias.name)
                if f"{node.module}.{alias.name}" == module:
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if (
                    alias.name in (module, last)
                    or alias.name in packages
                    or (alias.asname and alias.name.endswith("." + last))
                ):
                    modules.add(alias.asname or alias.name)
    return functions, modules


def literal_of(node: ast.expr) -> object:
    """The value of a literal node; raises ValueError for anything else."""
    try:
        return ast.literal_eval(node)
    except (SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise ValueError(str(exc)) from None


class _Reader:
    """Reads one module's assertions about the function. With ``names`` (the module's
    imports and definitions) an argument may be a value known without running the test
    (:class:`~referee.checks.arbitration.known.Known`), read afresh for each call."""

    def __init__(
        self,
        name: str,
        functions: set[str],
        modules: set[str],
        names: ModuleNames | None,
        owner: Owner | None = None,
    ) -> None:
        self.name, self.functions, self.modules = name, functions, modules
        self.names = names
        self.owner = owner  # a method's class: its calls are read in the oracle contract
        # names the test binds once to ``Owner(...)``: (the building, its line, the line
        # the name is next read on)
        self.objects: dict[str, list[tuple[ast.Call, int, tuple[int, ...]]]] = {}
        self.values: dict[str, list[tuple[ast.Call, int, tuple[int, ...]]]] = {}
        # attributes the test's class's setUp binds once to one: the same, the line of
        # the first mention in the test
        self.set_up: dict[str, tuple[ast.Call, int, int]] = {}
        self.building: tuple[int, int] | None = None  # the current call's object's lines
        self.scope: frozenset[str] = frozenset()  # every name the test function binds
        # the functions and classes it defines once, plainly: (line, text as top-level)
        self.defined: dict[str, tuple[int, str]] = {}
        self.line = self.end_line = 0  # the assertion's first and last
        # the line each name of the test function is first read on (a row's list the test
        # changes before the assertion, ``xs.append(3)``, is not the row's literal there)
        self.mentions: dict[str, int] = {}
        self.known: Known | None = None  # the current call's reading
        self.is_known = False  # the current call or value read a known expression
        # the module's constants (:func:`module_constants`) and the lines of those the
        # current call and value read: they are written there, and committed to as the
        # assertion is
        self.constants: dict[str, tuple[object, int, int]] = {}
        self.constant_lines: list[tuple[int, int]] = []

    def ours(self, func: ast.expr) -> bool:
        if self.owner is not None:
            return self._method(func) is not None
        if isinstance(func, ast.Name):
            return func.id in self.functions
        if isinstance(func, ast.Attribute) and func.attr == self.name:
            return dotted_name(func.value) in self.modules
        return False

    def enter(
        self,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        text: str,
        set_up: dict[str, tuple[ast.Call, int]],
        fixtures: dict[str, tuple[ast.Call, int]] | None = None,
    ) -> None:
        """Read ``function``'s assertions next: what it binds, defines, reads first, and
        (for a method's reading) the objects it, its class's setUp and the ``fixtures``
        it takes build."""
        self.scope = frozenset(_bound_names(function))
        self.defined = _defined_once(function, text)
        self.mentions = _first_mentions(function)
        self.objects = built_objects(function, self._is_class) if self.owner is not None else {}
        # a function's values the test assigns (``r = f(1)``), read at the name's next read
        self.values = built_objects(function, self.ours) if self.owner is None else {}
        if fixtures:
            taken = {
                name: [(building, line, (read,))]
                for name, (building, line, read) in fixture_reads(function, fixtures).items()
            }
            self.objects = {**taken, **self.objects}
        self.set_up = first_reads(function, set_up)

    def _is_class(self, node: ast.expr) -> bool:
        assert self.owner is not None
        if isinstance(node, ast.Name):
            return node.id in self.owner.names
        return (
            isinstance(node, ast.Attribute)
            and node.attr == self.owner.name
            and dotted_name(node.value) in self.modules
        )

    def _method(self, func: ast.expr) -> ast.Call | bool | None:
        """For a method's reading: the building ``Owner(...)`` the called method ``func``
        is taken from (``Owner(1).m``, or ``o.m`` for ``o`` built once and not read since);
        True for the class method ``Owner.m``; None for any other call."""
        owner = self.owner
        if owner is None or not (isinstance(func, ast.Attribute) and func.attr == self.name):
            return None
        receiver = func.value
        if owner.form == "classmethod":
            return True if self._is_class(receiver) else None
        if isinstance(receiver, ast.Call) and self._is_class(receiver.func):
            return receiver
        if isinstance(receiver, ast.Name) and (bound := self._object(receiver.id)) is not None:
            return bound[0]
        attribute = self_attribute(receiver)
        if attribute is not None and attribute in self.set_up:
            building, _, first_read = self.set_up[attribute]
            return building if self.line <= first_read <= self.end_line else None
        return None

    def _object(self, name: str) -> tuple[ast.Call, int, tuple[int, ...]] | None:
        """The building of ``name`` the current assertion takes as built, if any."""
        return next((b for b in self.objects.get(name, ()) if self._reads(b[2])), None)

    def _reads(self, lines: tuple[int, ...]) -> bool:
        """Whether the current assertion is one of the reads on ``lines``."""
        return any(self.line <= line <= self.end_line for line in lines)

    def _receiver(self, func: ast.expr, env: dict[str, object]) -> list[str]:
        """A method's call's first arguments in the oracle contract: the building's
        positional arguments as a tuple, its keyword arguments as a dict (raises
        ValueError for one that is not read)."""
        building = self._method(func)
        if not isinstance(building, ast.Call):
            return []
        receiver = func.value if isinstance(func, ast.Attribute) else None
        bound = None
        if isinstance(receiver, ast.Name):
            bound = self._object(receiver.id)
        elif receiver is not None and self_attribute(receiver) is not None:
            bound = self.set_up[self_attribute(receiver) or ""]
        if bound is not None:
            line = bound[1]
            self.building = (line, getattr(building, "end_lineno", None) or line)
        if any(isinstance(a, ast.Starred) for a in building.args) or any(
            k.arg is None for k in building.keywords
        ):
            raise ValueError("a building with *args or **kwargs")
        args = [self.text(a, env) for a in building.args]
        kwargs = [f"{k.arg!r}: {self.text(k.value, env)}" for k in building.keywords]
        init = "(" + ", ".join(args) + ("," if len(args) == 1 else "") + ")"
        return [init, "{" + ", ".join(kwargs) + "}"]

    def call_of(self, node: ast.expr, env: dict[str, object]) -> tuple[str, str] | None:
        """(call of the bare name, its arguments) when ``node`` calls the function with
        literal or known arguments (names bound by ``env``: a parametrize row), perhaps
        under one wrapper (``sorted(f(x))``)."""
        wrapper = None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in WRAPPERS
            and node.func.id not in self.functions
            and len(node.args) == 1
            and not node.keywords
        ):
            wrapper, node = node.func.id, node.args[0]
        assigned = None
        if isinstance(node, ast.Name):  # ``r = f(1)`` before: ``assert r == 2``
            assigned = next((v for v in self.values.get(node.id, ()) if self._reads(v[2])), None)
            node = assigned[0] if assigned is not None else node
        if not isinstance(node, ast.Call) or not self.ours(node.func):
            return None
        self.known = None
        if self.names is not None:
            # as the failing call's: what the test defined once before the assertion
            nested = {n: text for n, (line, text) in self.defined.items() if line < self.line}
            self.known = Known(self.names, nested, self.scope - nested.keys())
        self.is_known = False
        self.building = None
        if assigned is not None:  # the assignment's lines are the example's too
            self.building = (assigned[1], getattr(node, "end_lineno", None) or assigned[1])
        self.constant_lines = []
        try:
            args = self._receiver(node.func, env)
            for arg in node.args:
                if isinstance(arg, ast.Starred):  # ``*args``: a literal list or tuple
                    items = self.value(arg.value, env)
                    if not isinstance(items, (list, tuple)):
                        return None
                    args += [repr(item) for item in items]
                else:
                    args.append(self.text(arg, env))
            kwargs = []
            for keyword in node.keywords:
                if keyword.arg is None:  # ``**kwargs``: a literal dict of parameter names
                    named = self.value(keyword.value, env)
                    if not parameter_names(named):
                        return None
                    kwargs += [f"{k}={v!r}" for k, v in named.items()]
                    continue
                kwargs.append(f"{keyword.arg}={self.text(keyword.value, env)}")
        except ValueError:
            return None
        arguments = ", ".join([*args, *kwargs])
        call = f"{self.name}({arguments})"
        return (f"{wrapper}({call})" if wrapper else call), arguments

    @property
    def definitions(self) -> str:
        return self.known.text() if self.known is not None else ""

    def value(self, node: ast.expr, env: dict[str, object]) -> object:
        if isinstance(node, ast.Starred):
            raise ValueError("starred")
        if isinstance(node, ast.Name) and node.id in env:
            if isinstance(env[node.id], _Written):
                raise ValueError("a row's value that is no literal")
            if not immutable(env[node.id]) and self.mentions.get(node.id, self.line) < self.line:
                raise ValueError("a row's list the test may change before the assertion")
            return env[node.id]
        if isinstance(node, ast.Name) and node.id in self.constants and node.id not in self.scope:
            value, first, last = self.constants[node.id]
            self.constant_lines.append((first, last))
            return value
        value = literal_of(node)
        if not round_trips(value):
            raise ValueError("not a literal that reads back")
        return value

    def text(self, node: ast.expr, env: dict[str, object], *, want: bool = False) -> str:
        """A literal's repr, or a known expression as written (:meth:`known_text`)."""
        try:
            return repr(self.value(node, env))
        except ValueError:
            if self.known is None or isinstance(node, ast.Starred):
                raise
        text = self.known_text(node, env, want=want)
        self.is_known = True
        return text

    def known_text(self, node: ast.expr, env: dict[str, object], *, want: bool) -> str:
        """``node`` as written when it is known by :class:`Known`'s rules — a name, a
        lambda (an argument only) or an object of a value class built from known
        arguments — its definitions added; ValueError for anything else, and for a name
        the test function binds (what it holds is not read here)."""
        assert self.known is not None
        if isinstance(node, ast.Name) and isinstance(env.get(node.id), _Written):
            written = env[node.id]
            assert isinstance(written, _Written)
            return self.known_text(written.node, {}, want=want)  # the row's, as written
        shown = ast.unparse(node)
        try:
            if isinstance(node, ast.Call):
                name = dotted_name(node.func)
                if name is None or self._local(name) or not self.known.constructor(name, shown):
                    raise ValueError("no value class")
                parts = [self.text(a, env) for a in node.args]
                for keyword in node.keywords:
                    if keyword.arg is None:
                        raise ValueError("a ** argument")
                    parts.append(f"{keyword.arg}={self.text(keyword.value, env)}")
                return f"{name}({', '.join(parts)})"
            if want:
                raise ValueError("an expected value is a literal or a construction")
            if isinstance(node, (ast.Name, ast.Attribute)):
                name = dotted_name(node)
                if name is None or self._local(name) or self.known.name(name, shown) is None:
                    raise ValueError("not a known name")
                return name
            if isinstance(node, ast.Lambda):
                self.known.lambda_(shown)
                return shown
        except NotIsolated as exc:
            raise ValueError(str(exc)) from None
        raise ValueError("not a known value")

    def _local(self, dotted: str) -> bool:
        """Whether ``dotted``'s head is a local of the test (a definition of it read by
        :class:`Known` is not)."""
        assert self.known is not None
        head = dotted.partition(".")[0]
        return head in self.scope and head not in self.known.nested

    def want(self, node: ast.expr, env: dict[str, object]) -> tuple[str, bool] | None:
        """(the expected value's text, whether it is a construction) or None."""
        try:
            return repr(self.value(node, env)), False
        except ValueError:
            row = isinstance(node, ast.Name) and isinstance(env.get(node.id), _Written)
            if self.known is None or not (isinstance(node, ast.Call) or row):
                return None
        try:
            text = self.known_text(node, env, want=True)
        except ValueError:
            return None
        self.is_known = True
        return text, True


class _Check(NamedTuple):
    call: str
    arguments: str
    want: str
    node: ast.stmt
    definitions: str  # what the known arguments and value need
    known: bool  # an argument or the value is no literal
    want_built: bool  # the value is a construction, compared by the sandbox's repr
    building: tuple[int, int] | None  # the lines of the method's object's building
    constants: tuple[tuple[int, int], ...] = ()  # the lines of the module constants read

    def found(self, path: str, spans: tuple[tuple[int, int], ...], text: str, mine: bool) -> Found:
        if self.building is not None:
            spans = (*spans, self.building)
        spans = (*spans, *(c for c in dict.fromkeys(self.constants) if c not in spans))
        return Found(
            self.call,
            self.arguments,
            self.want,
            path,
            spans[0][0],
            spans,
            text,
            mine,
            self.definitions,
            self.known,
            self.want_built,
        )


def _checks(statement: ast.stmt, reader: _Reader, env: dict[str, object]) -> Iterable[_Check]:
    """The assertion about the function ``statement`` makes, if it makes one."""
    reader.line = statement.lineno
    reader.end_line = getattr(statement, "end_lineno", None) or statement.lineno

    def check(call: tuple[str, str], want: tuple[str, bool]) -> _Check:
        return _Check(
            *call,
            want[0],
            statement,
            reader.definitions,
            reader.is_known,
            want[1],
            reader.building,
            tuple(reader.constant_lines),
        )

    test: ast.expr | None = None
    if isinstance(statement, ast.Assert):
        test = statement.test
    elif (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Attribute)
        and statement.value.func.attr == "assertTrue"
        and statement.value.args
        and isinstance(statement.value.args[0], ast.Compare)
    ):
        test = statement.value.args[0]  # ``self.assertTrue(f(x) == 3)``: as ``assert`` says it
    if test is not None:
        negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
        truth = _truth_check(test.operand if negated else test, reader, env)
        if truth is not None:
            yield check(truth, (repr(not negated), False))
            return
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, left, right = test.ops[0], test.left, test.comparators[0]
            if isinstance(op, ast.Eq):
                for call_side, value_side in ((left, right), (right, left)):
                    call = reader.call_of(call_side, env)
                    want = reader.want(value_side, env) if call else None
                    if call and want is not None:
                        yield check(call, want)
                        return
            elif (
                isinstance(op, ast.Is)
                and isinstance(right, ast.Constant)
                and (right.value is None or isinstance(right.value, bool))
            ):
                call = reader.call_of(left, env)
                if call:
                    yield check(call, (repr(right.value), False))
        return
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return
    method = statement.value
    name = method.func.attr if isinstance(method.func, ast.Attribute) else None
    if name in _EQUAL_METHODS and len(method.args) >= 2:
        first, second = method.args[0], method.args[1]
        for call_side, value_side in ((first, second), (second, first)):
            call = reader.call_of(call_side, env)
            want = reader.want(value_side, env) if call else None
            if call and want is not None:
                if name == "assertIs" and want[0] not in ("None", "True", "False"):
                    return
                yield check(call, want)
                return
    elif name in _NONE_METHODS and len(method.args) >= 1:
        call = reader.call_of(method.args[0], env)
        if call:
            yield check(call, ("None", False))
    elif name in _TRUE_METHODS | _FALSE_METHODS and method.args:
        truth = _truth_check(method.args[0], reader, env)
        if truth is not None:
            yield check(truth, (repr(name in _TRUE_METHODS), False))


def _truth_check(node: ast.expr, reader: _Reader, env: dict[str, object]) -> tuple[str, str] | None:
    """``assert f(x)``, ``assert not f(x)``, ``assertTrue(f(x))``: (the call as the example
    ``bool(f(x))``, its arguments) — what the test states is the truth of the value, which
    ``bool`` gives every source of truth alike. Only a bare call of the function, or one
    under ``bool``: a value under another wrapper (``len``) is a comparison in disguise
    that the example would not show."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in WRAPPERS
        and node.func.id not in reader.functions
    ):
        if node.func.id != "bool":
            return None
        node = node.args[0] if len(node.args) == 1 and not node.keywords else node
    if not isinstance(node, (ast.Call, ast.Name)):
        return None  # a name: the value the test assigned from the call (``r = f(x)``)
    call = reader.call_of(node, env)
    if call is None:
        return None
    return f"bool({call[0]})", call[1]


def _parametrize_rows(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
) -> list[tuple[dict[str, object], int, int]] | None:
    """The rows of a ``@pytest.mark.parametrize`` with literal values, each as (names →
    values, its first line, its last line); None when the function has none, [] when it
    has one this cannot read (then its assertions are not read either)."""
    rows: list[tuple[dict[str, object], int, int]] | None = None
    for decorator in function.decorator_list:
        if not (
            isinstance(decorator, ast.Call)
            and (dotted_name(decorator.func) or "").endswith("parametrize")
            and len(decorator.args) >= 2
        ):
            continue
        if rows is not None:
            return []  # stacked parametrize: a product, not read here
        try:
            names_value = literal_of(decorator.args[0])
        except ValueError:
            return []
        if isinstance(names_value, str):
            names = [n.strip() for n in names_value.split(",") if n.strip()]
        elif isinstance(names_value, (list, tuple)) and all(
            isinstance(n, str) for n in names_value
        ):
            names = list(names_value)
        else:
            return []
        table = decorator.args[1]
        if not isinstance(table, (ast.List, ast.Tuple)):
            return []
        rows = []
        for row in table.elts:
            try:
                value = literal_of(row)
            except ValueError:
                value = _written_row(row, len(names))
                if value is None:
                    continue  # pytest.param(...), a computed row: not read
            values = [value] if len(names) == 1 else value
            if not isinstance(values, (list, tuple)) or len(values) != len(names):
                continue
            end = getattr(row, "end_lineno", None) or row.lineno
            rows.append((dict(zip(names, values, strict=True)), row.lineno, end))
    return rows


def _first_mentions(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, int]:
    """The first line each name is read on in the body of ``fn``."""
    first: dict[str, int] = {}
    for statement in fn.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name):
                first[node.id] = min(first.get(node.id, node.lineno), node.lineno)
    return first


def _defined_once(
    function: ast.FunctionDef | ast.AsyncFunctionDef, text: str
) -> dict[str, tuple[int, str]]:
    """The undecorated functions and classes a test defines in its body, each once (no
    other binding of its name in the test), with their line and text as a top-level
    definition — what :class:`Known` carries to the sandbox for one used as an
    argument (the same rule as the failing call's, ``bindings.Bindings._reader``)."""
    counts: Counter[str] = Counter()
    for node in ast.walk(function):
        if node is function:
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            counts[node.id] += 1
        elif isinstance(node, ast.arg):
            counts[node.arg] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            counts[node.name] += 1
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            counts.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            counts[node.name] += 1
    found: dict[str, tuple[int, str]] = {}
    for stmt in function.body:
        if (
            isinstance(stmt, (ast.FunctionDef, ast.ClassDef))
            and not stmt.decorator_list
            and counts[stmt.name] == 1
        ):
            segment = ast.get_source_segment(text, stmt, padded=True)
            if segment is not None:
                found[stmt.name] = (stmt.lineno, textwrap.dedent(segment))
    return found


@dataclass(frozen=True)
class _Written:
    """A parametrize row's value that is no literal (``dt.timedelta(seconds=1)``): read
    where the test uses it, by :meth:`_Reader.known_text`'s rules, or not at all."""

    node: ast.expr


def _written_row(row: ast.expr, count: int) -> object:
    """A row that is no literal, each value a literal's or a :class:`_Written`; None for
    a row of another shape (``pytest.param(...)``, a computed table)."""
    if count == 1:
        return _Written(row)
    if not isinstance(row, (ast.Tuple, ast.List)) or len(row.elts) != count:
        return None
    values: list[object] = []
    for item in row.elts:
        try:
            values.append(literal_of(item))
        except ValueError:
            values.append(_Written(item))
    return tuple(values)


def _subject_names(
    tree: ast.Module, name: str, module: str, owner: tuple[str, str] | None
) -> tuple[set[str], set[str], Owner | None] | None:
    """(the function's local names, its module's, the method's class as read) a test
    module calls the subject by — for a method, ``owner`` = (its class, its form), the
    class's names — or None when it names neither."""
    if owner is None:
        functions, modules = local_names(tree, name, module)
        return (functions, modules, None) if functions or modules else None
    classes, modules = local_names(tree, owner[0], module)
    if not classes and not modules:
        return None
    return set(), modules, Owner(owner[0], frozenset(classes), owner[1])


def assertions(
    text: str,
    path: str,
    name: str,
    module: str,
    skip: tuple[str | None, str] | None = None,
    *,
    known: bool = False,
    owner: tuple[str, str] | None = None,
) -> tuple[list[Found], int]:
    """The assertions about ``module.name`` in one test module's text (through its
    helpers too: :mod:`.suite_helpers`), and how many are in the failing test ``skip`` =
    (class or None, name), marked ``in_failing_test``; with ``known``, values known
    without running the test too (see the module's docstring)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return [], 0
    subject = _subject_names(tree, name, module, owner)
    if subject is None:
        return [], 0
    functions, modules, reading = subject
    reader = _Reader(name, functions, modules, ModuleNames(text) if known else None, reading)
    reader.constants = module_constants(tree)
    lines, sites = text.splitlines(), helper_sites(tree)
    found: list[Found] = []
    skipped = 0

    def shown(node: ast.AST) -> str:
        line = lines[n - 1].strip() if 0 < (n := getattr(node, "lineno", 0)) <= len(lines) else ""
        return line if len(line) <= 160 else line[:157] + "..."

    def read(
        body: Sequence[ast.stmt], rows: list[tuple[dict[str, object], int, int]] | None, mine: bool
    ) -> None:
        nonlocal skipped
        for statement in body:
            for node in ast.walk(statement):
                if not isinstance(node, ast.stmt):
                    continue
                for env, first, last in rows if rows is not None else [({}, 0, 0)]:
                    for check in _checks(node, reader, env):
                        skipped += mine
                        at = check.node
                        start = at.lineno
                        end = getattr(at, "end_lineno", None) or start
                        spans = ((start, end),)
                        text = shown(at)
                        if first:
                            # a parametrized case: its row, and the assertion it feeds
                            spans = ((first, last), (start, end))
                            text = f"{lines[first - 1].strip()[:100]} -> {text}"
                        found.append(check.found(path, spans, text, mine))

    set_up: dict[str, tuple[ast.Call, int]] = {}
    # the fixtures that build the method's class: the module's, and its class's over them
    module_fixtures = fixture_buildings(tree.body, reader._is_class) if reading is not None else {}
    fixtures = module_fixtures

    def visit(body: Sequence[ast.stmt], cls: str | None) -> None:
        nonlocal set_up, fixtures
        for node in body:
            if isinstance(node, ast.ClassDef) and cls is None:
                set_up = set_up_objects(node, reader._is_class) if reading is not None else {}
                if reading is not None:
                    fixtures = {**module_fixtures, **fixture_buildings(node.body, reader._is_class)}
                visit(node.body, node.name)
                set_up, fixtures = {}, module_fixtures
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                mine = skip is not None and skip == (cls, node.name)
                rows = _parametrize_rows(node)
                if rows == []:
                    continue
                reader.enter(node, text, set_up, fixtures)
                read(node.body, rows, mine)
                for site in sites.get((cls, node.name), ()):  # a helper: once per call
                    read(node.body, [(site.values, site.first, site.last)], skip == site.test)

    visit(tree.body, None)
    return found, skipped


def static_examples(name: str, module: str, tests: dict[str, str]) -> list[Found]:
    """Every assertion about ``module.name`` in ``tests`` (path → text), unfiltered, known
    values included (each with its definitions): the inputs the differential check takes
    from the suite."""
    found: list[Found] = []
    for path, text in sorted(tests.items()):
        found.extend(assertions(text, path, name, module, known=True)[0])
    return found
