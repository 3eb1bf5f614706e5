"""The differential check: a changed function against independent implementations of its spec.

For one function with a docstring (or a declared reference), :func:`check_function`

1. gathers inputs, in this order: the docstring's examples (with the values they give),
   the literal arguments the project's tests pass to the function (read from the tests'
   calls, not guessed), and inputs generated from the signature's annotations with
   hypothesis (bounded in number and time);
2. runs the function on all of them in one sandbox run, and each source of truth — the
   declared reference, or the k oracle programs arbitration writes from the signature and
   docstring (its prompt, its program cache) — in a sandbox run of its own;
3. compares the values here, in the parent, input by input:

   - the docstring's own example, the reference, or every oracle (``agreement``) gives a
     value and the function returns another (or raises) → **REJECT** with that input as
     a counterexample; a generated one is first shrunk (simpler candidates, run in
     batches), and the counterexample is run once more, alone, before it is reported;
   - oracles that disagree among themselves on an input → **UNCLEAR** (the docstring can
     be read two ways there), with the input and the competing answers;
   - no disagreement on any input → supporting evidence beside the reading judge's verdict.

No verdict is read from a process that ran the function or an oracle: each run returns a
list of ``[status, repr]`` pairs, checked for shape, and compared here.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import string
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any, Literal

from referee import __version__
from referee.checks import sandbox
from referee.checks.arbitration.examples import PROBE, docstring_examples, probe_cap, probe_values
from referee.checks.arbitration.isolate import FunctionSpec
from referee.checks.arbitration.programs import extract_code, module_imports, program_from
from referee.checks.arbitration.suite_reading import static_examples
from referee.checks.arbitration.truth import (
    ProgramCache,
    agreed_value,
    generate_many,
    oracle_messages,
    prompts,
)
from referee.checks.execution.cache import JsonCache
from referee.checks.interpreter import Interpreter
from referee.checks.models import ArbitrationConfig, ExecutionConfig, OracleResult

Origin = Literal["docstring", "test", "proposed", "generated"]

# Part of every cached result's key: raised when the way results are decided changes, so
# that a result cached by an older rule is not reused (2: oracles contradicting the
# docstring's examples are set aside).
DECISION_VERSION = 4

_IMPORT = """
import importlib.util as _referee_util, os as _referee_os, sys as _referee_sys
_referee_sys.path.insert(0, _referee_os.path.join(_referee_os.getcwd(), {entry!r}))
try:
    import {module} as _referee_m
except ImportError:
    _referee_spec = _referee_util.spec_from_file_location(
        {module!r}, _referee_os.path.join(_referee_os.getcwd(), {relpath!r})
    )
    _referee_m = _referee_util.module_from_spec(_referee_spec)
    _referee_sys.modules[{module!r}] = _referee_m
    _referee_spec.loader.exec_module(_referee_m)
"""


@dataclass(frozen=True)
class Input:
    arguments: str  # as written in a call: "15, 0, 10"
    origin: Origin
    expected: str | None = None  # the docstring's value for it
    where: str = ""  # the docstring line, or the test file


@dataclass
class Differential:
    """What running a function beside its spec's implementations showed."""

    function: str
    path: str
    line: int
    status: Literal["REJECT", "UNCLEAR", "PASS", "SKIPPED"]
    reason: str
    call: str | None = None
    produced: str | None = None
    truth: str | None = None
    truth_source: str | None = None  # "docstring", "reference", "oracles"
    answers: list[list[str]] = field(default_factory=list)  # [[source, value], ...]
    inputs: dict[str, int] = field(default_factory=dict)  # origin -> count
    sources: list[dict[str, Any]] = field(default_factory=list)  # each oracle/reference
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cached: bool = False

    @property
    def evidence(self) -> str:
        lines = [f"{source}: {value}" for source, value in self.answers]
        counted = ", ".join(f"{n} {origin}" for origin, n in self.inputs.items() if n)
        if counted:
            lines.append(f"inputs: {counted}")
        return "\n".join(lines)


# ---------------------------------------------------------------------------- inputs


def _literal_args(call: ast.Call) -> str | None:
    try:
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                return None
            ast.literal_eval(arg)
        for keyword in call.keywords:
            if keyword.arg is None:
                return None
            ast.literal_eval(keyword.value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    parts = [ast.unparse(a) for a in call.args]
    parts += [f"{k.arg}={ast.unparse(k.value)}" for k in call.keywords]
    return ", ".join(parts)


def docstring_inputs(spec: FunctionSpec) -> list[Input]:
    """The docstring's examples of calls with literal arguments, with their values."""
    found: list[Input] = []
    for source, want, line in docstring_examples(spec.docstring_value or "", spec.name):
        try:
            node = ast.parse(source, mode="eval").body
        except SyntaxError:
            continue
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if name != spec.name:
            continue
        arguments = _literal_args(node)
        if arguments is not None:
            found.append(Input(arguments, "docstring", want, line))
    return found


def _imports_function(tree: ast.Module, name: str, module: str) -> tuple[bool, set[str]]:
    """Whether a test module imports ``name`` from ``module`` (or a module whose last part
    is the same), and the local names it gives ``module`` itself."""
    last = module.rsplit(".", 1)[-1]
    direct = False
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == module or node.module.rsplit(".", 1)[-1] == last:
                direct = direct or any(a.name == name and a.asname is None for a in node.names)
            for alias in node.names:
                if f"{node.module}.{alias.name}" == module or alias.name == last:
                    aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == module or alias.name.rsplit(".", 1)[-1] == last:
                    aliases.add(alias.asname or alias.name)
    return direct, aliases


def _expected_to_raise(tree: ast.Module) -> set[int]:
    """The calls written where the test expects an exception: inside ``with
    pytest.raises(...)`` / ``self.assertRaises(...)``, or as the callable and arguments of
    ``pytest.raises(E, f, x)``. Those arguments are outside the function's domain by the
    test's own word: an oracle returning a value there proves nothing."""
    found: set[int] = set()

    def raises(call: ast.expr) -> bool:
        if not isinstance(call, ast.Call):
            return False
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in ("raises", "assertRaises", "assertRaisesRegex")

    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(
            raises(item.context_expr) for item in node.items
        ):
            for statement in node.body:
                found.update(id(n) for n in ast.walk(statement) if isinstance(n, ast.Call))
        elif raises(node):
            found.update(id(n) for n in ast.walk(node) if isinstance(n, ast.Call))
    return found


def observed_inputs(name: str, module: str, tests: dict[str, str]) -> list[Input]:
    """The literal arguments the project's tests pass to ``module.name``: every call of
    it, by the name the test module imported it under, whose arguments are literals —
    except where the test expects it to raise (:func:`_expected_to_raise`)."""
    found: list[Input] = []
    for path, text in sorted(tests.items()):
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        direct, aliases = _imports_function(tree, name, module)
        expecting = _expected_to_raise(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or id(node) in expecting:
                continue
            func = node.func
            if isinstance(func, ast.Name):
                ours = direct and func.id == name
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
                ours = func.attr == name and func.value.id in aliases
            else:
                ours = False
            if ours and (arguments := _literal_args(node)) is not None:
                found.append(Input(arguments, "test", None, path))
    return found


_TEXT = string.ascii_letters + string.digits + " ,.!?-"


@dataclass
class Shape:
    """What the known inputs (the docstring's examples, the tests' calls) of one parameter
    look like, to keep generated ones alike: the least number seen (generated numbers
    start at 0 or 1 when no known one is negative or zero), the characters a string is
    made of (the classes seen: lower-case letters, upper-case, digits, and each other
    character itself), and the same for a container's items, keys and values."""

    least: float | None = None
    characters: set[str] | None = None
    kinds: set[type] | None = None  # the scalar types seen (a bare container's items)
    item: Shape | None = None
    key: Shape | None = None
    value: Shape | None = None

    def add(self, value: Any) -> None:
        if isinstance(value, (bool, int, float, str)):
            self.kinds = self.kinds or set()
            self.kinds.add(type(value))
        if isinstance(value, bool):
            return
        if isinstance(value, (int, float)):
            self.least = value if self.least is None else min(self.least, value)
        elif isinstance(value, str):
            self.characters = self.characters or set()
            for ch in value:
                if ch in string.ascii_lowercase:
                    self.characters.update(string.ascii_lowercase)
                elif ch in string.ascii_uppercase:
                    self.characters.update(string.ascii_uppercase)
                elif ch in string.digits:
                    self.characters.update(string.digits)
                else:
                    self.characters.add(ch)
        elif isinstance(value, (list, tuple, set, frozenset)):
            self.item = self.item or Shape()
            for element in value:
                self.item.add(element)
        elif isinstance(value, dict):
            self.key, self.value = self.key or Shape(), self.value or Shape()
            for k, v in value.items():
                self.key.add(k)
                self.value.add(v)


def input_shapes(fn: ast.FunctionDef, inputs: Sequence[Input]) -> dict[str, Shape]:
    """Each positional parameter's :class:`Shape` over ``inputs``' literal arguments."""
    shapes: dict[str, Shape] = {}
    for item in inputs:
        values = _parameter_values(fn, item.arguments)
        for name, value in (values or {}).items():
            shapes.setdefault(name, Shape()).add(value)
    return shapes


# What an annotation may name: built-in types and the typing / collections.abc aliases,
# resolved to the type objects themselves (never run: names, attributes, subscripts only).
_ANNOTATION_NODES = (
    ast.Expression,
    ast.Name,
    ast.Load,
    ast.Attribute,
    ast.Subscript,
    ast.Tuple,
    ast.BinOp,
    ast.BitOr,
    ast.Constant,
)
_MAX_SIZE = {list: 6, tuple: 5, set: 5, frozenset: 5, dict: 4}


@cache
def _namespace() -> dict[str, Any]:
    import builtins
    import collections
    import collections.abc
    import typing

    names: dict[str, Any] = {
        n: getattr(builtins, n)
        for n in (
            "int",
            "float",
            "str",
            "bool",
            "bytes",
            "complex",
            "list",
            "dict",
            "set",
            "frozenset",
            "tuple",
        )
    }
    names.update({n: getattr(typing, n) for n in typing.__all__ if n[:1].isupper()})
    names.update({n: getattr(collections.abc, n) for n in collections.abc.__all__})
    names.update({"typing": typing, "collections": collections, "None": None})
    return names


def _annotation_type(node: ast.expr) -> Any:
    """The type an annotation names (``list[int]``, ``Sequence[str]``, ``dict``), or
    None when it names anything else. Only names, attributes and subscripts of the
    built-in types and the typing / collections.abc names are read: nothing is called."""
    if not all(
        isinstance(n, _ANNOTATION_NODES)
        and (not isinstance(n, ast.BinOp) or isinstance(n.op, ast.BitOr))
        and (not isinstance(n, ast.Constant) or n.value is None or n.value is Ellipsis)
        for n in ast.walk(node)
    ):
        return None
    try:
        code = compile(ast.Expression(body=node), "<annotation>", "eval")
        return eval(code, {"__builtins__": {}}, dict(_namespace()))  # names only
    except Exception:  # an unknown name, a subscript the type refuses
        return None


def _literal_value(value: Any) -> bool:
    """Whether a drawn value reads back from its repr (what an input is written as)."""
    try:
        return ast.literal_eval(repr(value)) == value
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


def _scalar(tp: Any, shape: Shape | None) -> Any:
    """A strategy for int, float, str, bool or None shaped like ``shape``, else None."""
    from hypothesis import strategies as st

    least = shape.least if shape is not None else None
    low = -20 if least is None or least < 0 else (0 if least < 1 else 1)
    if tp is bool:
        return st.booleans()
    if tp is int:
        return st.integers(low, 50)
    if tp is float:
        return st.floats(max(low, -100), 100, allow_nan=False, allow_infinity=False, width=32)
    if tp is str:
        chars = shape.characters if shape is not None and shape.characters else None
        return st.text("".join(sorted(chars)) if chars else _TEXT, max_size=12)
    if tp is None or tp is type(None):
        return st.none()
    return None


def _typed(tp: Any, shape: Shape | None) -> Any:
    """A strategy for the type ``tp``: hypothesis's own resolution (``from_type``) of the
    container, with bounded sizes, its items drawn the same way, and its scalars shaped
    like the known inputs' (see :class:`Shape`). A bare container (``xs: list``) holds
    the kinds of items the known inputs hold (else integers and strings)."""
    import typing

    from hypothesis import strategies as st

    scalar = _scalar(tp, shape)
    if scalar is not None:
        return scalar
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or (origin is not None and origin.__name__ == "UnionType"):
        parts = [_typed(a, shape) for a in args]
        return None if any(p is None for p in parts) else st.one_of(*parts)
    if origin is typing.Literal:
        return st.sampled_from(args) if args else None
    if tp is typing.Any:
        return _typed(_seen_kinds(shape), shape)
    target = origin or tp
    if not isinstance(target, type):
        return None
    if target in (bytes, complex):
        # hypothesis's own strategy for the type, bounded, written as a literal
        return st.from_type(target).map(lambda v: v[:12] if isinstance(v, bytes) else v)
    if not _iterable(target) or issubclass(target, str):
        return None
    import collections.abc

    # bounded: ``tuple[int, ...]`` is any length, ``tuple[int, str]`` exactly two
    any_length = bool(args) and args[-1] is Ellipsis
    if any_length:
        args = args[:1]
    item = shape.item if shape is not None else None
    if issubclass(target, tuple) and args and not any_length:
        parts = [_typed(a, item) for a in args]
        return None if any(p is None for p in parts) else st.tuples(*parts)
    if issubclass(target, collections.abc.Mapping):
        key_shape = shape.key if shape is not None else None
        value_shape = shape.value if shape is not None else None
        key_type = args[0] if args else _seen_kinds(key_shape, str)
        value_type = args[1] if len(args) > 1 else _seen_kinds(value_shape)
        key, value = _typed(key_type, key_shape), _typed(value_type, value_shape)
        if key is None or value is None:
            return None
        return st.dictionaries(key, value, max_size=_MAX_SIZE[dict])
    element = _typed(args[0] if args else _seen_kinds(item), item)
    if element is None:
        return None
    if issubclass(target, collections.abc.Set):
        kind = frozenset if issubclass(target, frozenset) else set
        return st.sets(element, max_size=_MAX_SIZE[set]).map(kind)
    if issubclass(target, tuple):
        return st.lists(element, max_size=_MAX_SIZE[tuple]).map(tuple)
    return st.lists(element, max_size=_MAX_SIZE[list])


def _iterable(target: type) -> bool:
    import collections.abc

    return issubclass(target, collections.abc.Iterable)


def _seen_kinds(shape: Shape | None, default: Any = None) -> Any:
    """The union of the scalar types the known inputs' values have, else ``default``
    (int | str when none is given)."""
    import typing

    kinds = sorted(shape.kinds, key=lambda t: t.__name__) if shape and shape.kinds else []
    if not kinds:
        return default if default is not None else int | str
    return typing.Union[tuple(kinds)] if len(kinds) > 1 else kinds[0]  # noqa: UP007


def _strategy(node: ast.expr | None, shape: Shape | None = None) -> Any:
    """A hypothesis strategy for an annotation (:func:`_typed` of the type it names), or
    None when it names no type this resolves; values shaped like ``shape`` when it is
    given."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _strategy(ast.parse(node.value, mode="eval").body, shape)
        except SyntaxError:
            return None
    if isinstance(node, ast.Constant) and node.value is None:
        return _scalar(None, shape)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        from hypothesis import strategies as st

        left, right = _strategy(node.left, shape), _strategy(node.right, shape)
        return None if left is None or right is None else st.one_of(left, right)
    tp = _annotation_type(node)
    if tp is None and not (isinstance(node, ast.Constant) and node.value is None):
        return None
    try:
        return _typed(tp, shape)
    except Exception:  # a type hypothesis cannot resolve: no generated inputs for it
        return None


def _is_ellipsis(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _definition(spec: FunctionSpec) -> ast.FunctionDef | None:
    try:
        tree = ast.parse(spec.text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == spec.name:
            return node
    return None


_OPERAND = r"(?:len\(\s*[A-Za-z_]\w*\s*\)|-?\d+(?:\.\d+)?|[A-Za-z_]\w*)"
_COMPARE = r"(?:<=|>=|==|!=|<|>|≤|≥)"
_CHAIN = re.compile(rf"{_OPERAND}(?:\s*{_COMPARE}\s*{_OPERAND})+")
_CASE = re.compile(r"\b(if|when|whenever|unless|else|otherwise|while|until|returns?)\b")
_INTERVAL = re.compile(r"[\[(]\s*([A-Za-z_]\w*)\s*,\s*([A-Za-z_]\w*)\s*[\])]")
_WORDS = {
    "non-negative": (">=", 0),
    "nonnegative": (">=", 0),
    "positive": (">", 0),
    "non-empty": ("len>", 0),
    "nonempty": ("len>", 0),
}


@dataclass(frozen=True)
class Precondition:
    """A condition on the parameters the docstring states (``lo <= hi``, ``[lo, hi]``,
    "n is a positive integer"), read from its text, never run as code."""

    text: str  # as shown: "lo <= hi"
    terms: tuple[str, ...]  # operand, op, operand, op, operand ...

    def holds(self, values: dict[str, Any]) -> bool | None:
        """Whether the values meet it; None when it cannot say (a type it does not
        compare, a parameter it does not name)."""

        def value(term: str) -> Any:
            if term.startswith("len("):
                return len(values[term[4:-1].strip()])
            if re.fullmatch(r"-?\d+", term):
                return int(term)
            if re.fullmatch(r"-?\d+\.\d+", term):
                return float(term)
            return values[term]

        compare = {
            "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b,
            "≤": lambda a, b: a <= b,
            ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b,
            "≥": lambda a, b: a >= b,
            "==": lambda a, b: a == b,
            "!=": lambda a, b: a != b,
        }
        try:
            operands = [value(t) for t in self.terms[::2]]
            return all(
                bool(compare[op](a, b))
                for a, op, b in zip(operands, self.terms[1::2], operands[1:], strict=False)
            )
        except (KeyError, TypeError, ValueError, OverflowError):
            return None


def preconditions(spec: FunctionSpec) -> list[Precondition]:
    """The conditions on its parameters the docstring states in forms this reads:
    comparisons of parameters, numbers and ``len(parameter)`` (``0 <= i < len(xs)``), an
    interval of two parameters (``[lo, hi]``: lo <= hi), and "non-negative", "positive",
    "non-empty" said of a parameter ("n is a positive integer", "a non-empty list xs")."""
    fn = _definition(spec)
    text = spec.docstring_value or ""
    if fn is None or not text:
        return []
    names = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
    found: dict[str, Precondition] = {}

    def named(term: str) -> str | None:
        inner = term[4:-1].strip() if term.startswith("len(") else term
        return inner if re.fullmatch(r"[A-Za-z_]\w*", inner) else None

    # doctest lines are examples, not conditions
    prose = "\n".join(
        line for line in text.splitlines() if not line.lstrip().startswith((">>>", "..."))
    )
    for match in _CHAIN.finditer(prose):
        before = prose[max(0, match.start() - 24) : match.start()].lower()
        if _CASE.search(before):
            continue  # "a if a > b", "when n < 0": a case the spec covers, no condition
        terms = tuple(t for t in re.split(rf"\s*({_COMPARE})\s*", match.group(0)) if t)
        operands = terms[::2]
        idents = [n for t in operands if (n := named(t)) is not None]
        if not idents or any(n not in names for n in idents):
            continue  # a word that is no parameter: not a condition on the inputs
        if all(named(t) is None for t in operands):
            continue
        found.setdefault(" ".join(terms), Precondition(" ".join(terms), terms))
    for match in _INTERVAL.finditer(prose):
        low, high = match.group(1), match.group(2)
        if low in names and high in names and low != high:
            terms = (low, "<=", high)
            found.setdefault(" ".join(terms), Precondition(" ".join(terms), terms))
    lowered = prose.lower()
    for word, (op, bound) in _WORDS.items():
        for name in sorted(names):
            near = (
                rf"\b{word}\b[\w\s]{{0,25}}?\b{re.escape(name.lower())}\b"
                rf"|\b{re.escape(name.lower())}\b[^.;\n]{{0,30}}?\b{word}\b"
            )
            if re.search(near, lowered):
                terms = (
                    (f"len({name})", op[3:], str(bound))
                    if op.startswith("len")
                    else (name, op, str(bound))
                )
                found.setdefault(" ".join(terms), Precondition(" ".join(terms), terms))
    return list(found.values())


def _parameter_values(fn: ast.FunctionDef, arguments: str) -> dict[str, Any] | None:
    try:
        values = ast.literal_eval(f"({arguments},)")
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
    return dict(zip(params, values, strict=False))


def generated_inputs(
    spec: FunctionSpec, count: int, seconds: float, known: Sequence[Input] = ()
) -> tuple[list[Input], str]:
    """Up to ``count`` inputs drawn from the annotations' strategies (derandomized: the
    same function gets the same inputs), shaped like the ``known`` inputs (the docstring's
    examples and the tests' calls: see :class:`Shape`) — a generated input unlike any the
    spec shows is where independent readings of it part ways, the function's included —
    and a note when none could be."""
    if count <= 0:
        return [], ""
    fn = _definition(spec)
    if fn is None:
        return [], "no definition to read the annotations from"
    try:
        from hypothesis import HealthCheck, Phase, given, settings
        from hypothesis import strategies as st
    except ImportError:
        return [], "hypothesis is not installed: no generated inputs"
    params = [*fn.args.posonlyargs, *fn.args.args]
    if fn.args.vararg or (fn.args.kwonlyargs and any(d is None for d in fn.args.kw_defaults)):
        return [], "variadic or keyword-only parameters: no generated inputs"
    if not params:
        return [], ""
    shapes = input_shapes(fn, known)
    strategies = [_strategy(p.annotation, shapes.get(p.arg)) for p in params]
    missing = [p.arg for p, s in zip(params, strategies, strict=True) if s is None]
    if missing:
        return [], f"no strategy for the annotation of {', '.join(missing)}: no generated inputs"
    drawn: list[str] = []
    seen: set[str] = set()
    stop_at: list[float] = []  # from the first example: hypothesis's start-up is not counted

    @settings(
        max_examples=max(count * 3, 10),
        database=None,
        derandomize=True,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.tuples(*strategies))
    def collect(values: tuple) -> None:
        if not stop_at:
            stop_at.append(time.monotonic() + seconds)
        if len(drawn) >= count or time.monotonic() > stop_at[0]:
            return
        text = ", ".join(repr(v) for v in values)
        if text not in seen:
            seen.add(text)
            drawn.append(text)

    try:
        collect()
    except Exception as exc:  # hypothesis refusing a strategy is not a verdict
        return [], f"input generation failed: {type(exc).__name__}"
    return [Input(text, "generated") for text in drawn], ""


def suite_inputs(name: str, module: str, tests: dict[str, str]) -> list[Input]:
    """The arguments of the project's own assertions about ``module.name`` (``assert
    f(1) == 2``, parametrize rows included: see :mod:`referee.checks.arbitration.suite`):
    the inputs its author checked it on, values left out (they may be another red test)."""
    return [Input(f.arguments, "test", None, f.where) for f in static_examples(name, module, tests)]


def proposal_messages(spec: FunctionSpec, count: int) -> list[dict[str, str]]:
    """The one request for inputs that exercise what the docstring says."""
    p = prompts()
    return [
        {"role": "system", "content": p.inputs_system},
        {
            "role": "user",
            "content": p.inputs.format(
                signature=spec.signature, docstring=spec.docstring or "", count=count
            ),
        },
    ]


def parse_proposals(answer: str, fn: ast.FunctionDef | None, count: int) -> list[Input]:
    """The argument tuples of the model's answer — a JSON (or Python literal) list of
    argument lists, read with :func:`ast.literal_eval`, never run — that fit the
    signature's positional parameters; at most ``count``, without repeats."""
    text = extract_code(answer).strip()
    # JSON's words as Python's (outside strings it is the only difference that matters)
    for word, literal in (("true", "True"), ("false", "False"), ("null", "None")):
        text = re.sub(rf"(?<![\w'\"]){word}(?![\w'\"])", literal, text)
    try:
        entries = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return []
    if not isinstance(entries, (list, tuple)):
        return []
    params = [*fn.args.posonlyargs, *fn.args.args] if fn is not None else []
    most = len(params)
    least = most - len(fn.args.defaults) if fn is not None else 0
    found: list[Input] = []
    seen: set[str] = set()
    for entry in entries:
        values = entry if isinstance(entry, (list, tuple)) else [entry]
        if most == 1 and not (isinstance(entry, list) and len(entry) == 1):
            values = [entry]  # one parameter: the entry is its value
        if fn is not None and not least <= len(values) <= most:
            continue
        arguments = ", ".join(repr(v) for v in values)
        if len(arguments) > 2000 or arguments in seen:
            continue
        seen.add(arguments)
        found.append(Input(arguments, "proposed", None, "proposed by the model"))
        if len(found) >= count:
            break
    return found


# ---------------------------------------------------------------------------- running


@dataclass
class _Run:
    source: str
    status: str  # the sandbox run's status
    detail: str
    values: list[tuple[str, str]] | None  # (status, repr) per input
    program: str | None = None
    cached: bool = False


def _module_of(relpath: str) -> tuple[str, str]:
    """(sys.path entry, module name) of a project file."""
    entry = "."
    rest = relpath
    if relpath.startswith("src/"):
        entry, rest = "src", relpath[4:]
    parts = rest.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return entry, ".".join(parts)


def _expression(callee: str, inputs: Sequence[Input]) -> str:
    return "[" + ", ".join(f"_referee_probe(lambda: {callee}({i.arguments}))" for i in inputs) + "]"


def _run_code(
    source: str,
    code: str,
    callee: str,
    inputs: Sequence[Input],
    limits: sandbox.Limits,
    files: dict[str, str] | None = None,
    python: Interpreter | None = None,
) -> _Run:
    cap = probe_cap(limits, len(inputs))
    result = sandbox.evaluate(
        code + PROBE.format(cap=cap),
        _expression(callee, inputs),
        limits=limits,
        files=files,
        python=python,
    )
    values = probe_values(result, len(inputs), cap)
    if values is None:
        detail = (
            result.message
            if result.status != "ok"
            else "the sandbox answered something other than values"
        )
        return _Run(source, result.status if result.status != "ok" else "error", detail, None)
    return _Run(source, "ok", "", values)


# ---------------------------------------------------------------------------- deciding


@dataclass
class _Finding:
    index: int
    kind: Literal["reject", "unclear", "agree"]  # agree: compared, and the same
    truth: str | None
    truth_source: str
    answers: list[list[str]]


def _shown(status: str, text: str) -> str:
    return f"raised {text}" if status == "error" else f"returned {text}"


def _contradicting_examples(inputs: Sequence[Input], runs: Sequence[_Run]) -> dict[str, str]:
    """The oracle programs that contradict the docstring's own examples (a different
    value, or an exception, where an example gives the value), each with why. Several
    programs that share one misreading of the words would otherwise outvote the example
    the docstring spells out."""
    found: dict[str, str] = {}
    examples = [(index, item) for index, item in enumerate(inputs) if item.expected is not None]
    for run in runs:
        if not run.source.startswith("oracle-") or run.values is None:
            continue
        for index, item in examples:
            status, value = run.values[index]
            if status != "ok" or not sandbox.values_equal(value, item.expected):
                found[run.source] = (
                    f"set aside: it {_shown(status, value)} where the docstring's example "
                    f"says {item.expected} ({item.where or item.arguments})"
                )
                break
    return found


def _decide_input(
    index: int,
    item: Input,
    produced: tuple[str, str],
    truths: list[_Run],
    required: int,
    reference: bool,
) -> _Finding | None:
    status, value = produced
    if item.origin == "generated" and status != "ok":
        # A generated input may lie outside the function's domain; raising there (an
        # assert, a ValueError guard) is no counterexample.
        return None
    if item.expected is not None:
        if status == "ok" and sandbox.values_equal(value, item.expected):
            return _Finding(index, "agree", item.expected, "docstring", [])
        return _Finding(index, "reject", item.expected, "docstring", [["docstring", item.expected]])
    results: list[OracleResult] = []
    answers: list[list[str]] = []
    for run in truths:
        if run.values is None:
            continue
        answer_status, text = run.values[index]
        ok = answer_status == "ok"
        results.append(
            OracleResult(
                source=run.source, status="ok" if ok else "error", value=text if ok else None
            )
        )
        answers.append([run.source, text if ok else _shown("error", text)])
    if not results:
        return None
    if item.origin == "generated" and (
        len(results) < len(truths) or any(r.status != "ok" for r in results)
    ):
        # A source of truth that raises or fails on a generated input says the spec does
        # not cover it: no verdict from that input.
        return None
    if reference:
        ref = results[0]
        if ref.status != "ok" or ref.value is None:
            return None
        if status == "ok" and sandbox.values_equal(value, ref.value):
            return _Finding(index, "agree", ref.value, "reference", answers)
        return _Finding(index, "reject", ref.value, "reference", answers)
    truth = agreed_value(results, required)
    ok_values = [r.value for r in results if r.status == "ok" and r.value is not None]
    distinct: list[str] = []
    for v in ok_values:
        if not any(sandbox.values_equal(v, d) for d in distinct):
            distinct.append(v)
    if truth is not None and len(distinct) == 1:
        if status == "ok" and sandbox.values_equal(value, truth):
            return _Finding(index, "agree", truth, "oracles", answers)
        return _Finding(index, "reject", truth, "oracles", answers)
    if len(distinct) > 1:
        return _Finding(index, "unclear", None, "oracles", answers)
    return None


def _example_in_doubt(
    found: _Finding, produced: tuple[str, str], written: Sequence[_Run], required: int
) -> _Finding:
    """A docstring example the function contradicts is a counterexample — unless every
    oracle program, written from the same docstring, gives the function's value there
    too (at least ``required`` of them, all of them running). Then the example is as
    likely the mistake (a docstring erratum: HumanEval's ``median`` example says 15.0
    where the median is 8.0): UNCLEAR, for a person, never a rejection of a function
    that agrees with every independent reading but one line of its docstring."""
    if found.kind != "reject" or found.truth_source != "docstring" or produced[0] != "ok":
        return found
    oracles = [r for r in written if r.source.startswith("oracle-")]
    if len(oracles) < max(1, required) or any(r.values is None for r in oracles):
        return found
    answers = [r.values[found.index] for r in oracles]  # type: ignore[index]
    if all(s == "ok" and sandbox.values_equal(v, produced[1]) for s, v in answers):
        return _Finding(
            found.index,
            "unclear",
            None,
            "docstring",
            [
                ["docstring", found.truth or ""],
                *([r.source, v] for r, (_, v) in zip(oracles, answers, strict=True)),
            ],
        )
    return found


# ---------------------------------------------------------------------------- shrinking


def _simpler(value: Any) -> list[Any]:
    if isinstance(value, bool):
        return [False] if value else []
    if isinstance(value, int):
        return [
            v
            for v in dict.fromkeys([0, 1, -1, value // 2, value - 1 if value > 0 else value + 1])
            if abs(v) < abs(value) or (abs(v) == abs(value) and v > value)
        ]
    if isinstance(value, float):
        return [
            v
            for v in dict.fromkeys([0.0, 1.0, float(round(value)), value / 2])
            if abs(v) < abs(value) or (v == round(value) and v != value)
        ]
    if isinstance(value, str):
        return [
            v
            for v in dict.fromkeys(["", value[: len(value) // 2], value[1:], value[:-1]])
            if len(v) < len(value)
        ]
    if isinstance(value, (list, tuple)):
        kind = type(value)
        shorter = [kind(value[: len(value) // 2]), kind(value[1:]), kind(value[:-1])]
        if not value:
            return []
        deeper = []
        for i, item in enumerate(value):
            for simple in _simpler(item)[:2]:
                copy = list(value)
                copy[i] = simple
                deeper.append(kind(copy))
        return [*([kind()] if value else []), *shorter, *deeper]
    if isinstance(value, dict):
        keys = list(value)
        return [{}, *({k: value[k] for k in keys if k != key} for key in keys)] if value else []
    if isinstance(value, (set, frozenset)):
        items = list(value)
        return [type(value)(items[:i] + items[i + 1 :]) for i in range(len(items))]
    return []


def _shrink_candidates(arguments: str) -> list[str]:
    try:
        values = ast.literal_eval(f"({arguments},)")
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return []
    out: list[str] = []
    for i, value in enumerate(values):
        for simple in _simpler(value):
            copy = list(values)
            copy[i] = simple
            text = ", ".join(repr(v) for v in copy)
            if text != arguments and text not in out:
                out.append(text)
    return out[:40]


# ---------------------------------------------------------------------------- the check


class DifferentialCache(JsonCache[Differential]):
    """Outcomes by (function's module, inputs, the sources' programs, settings)."""

    kind = Differential


def check_function(
    spec: FunctionSpec,
    relpath: str,
    files: dict[str, str],
    tests: dict[str, str],
    execution: ExecutionConfig,
    arbitration: ArbitrationConfig,
    *,
    model: Any = None,
    reference: str | None = None,
    program_cache: ProgramCache | None = None,
    cache: DifferentialCache | None = None,
    cancelled: Callable[[], bool] | None = None,
    progress: Callable[[str], None] | None = None,
    python: Interpreter | None = None,
) -> Differential:
    """Run ``spec``'s function beside the independent implementations of its spec (see
    the module's docstring). ``files`` is the project as the sandbox gets it (the
    function's module at ``relpath`` among them), ``tests`` the project's test modules
    (where the arguments the tests pass are read), ``model`` the oracles' model (a
    :class:`~referee.checks.arbitration.truth.LazyModel`; asked only for programs the
    cache lacks), ``reference`` a declared ``module:function`` or ``path.py:function``.
    ``python``: the project's interpreter, which runs the function and the reference (the
    project's code, with its site-packages); the model's programs run in referee's own."""
    started = time.monotonic()
    result = Differential(spec.name, relpath, spec.line, "SKIPPED", "")

    def say(message: str) -> None:
        if progress is not None:
            progress(f"{spec.name}: {message}")

    if not spec.docstring_value and reference is None:
        result.reason = "no docstring and no declared reference: no spec to run it against"
        return result
    # --- inputs, in order of trust, without repeats
    gathered: list[Input] = []
    seen: set[str] = set()
    notes: list[str] = []
    budget = execution.inputs
    doc = docstring_inputs(spec) if spec.docstring_value else []
    observed = observed_inputs(spec.name, spec.module, tests)
    suite = suite_inputs(spec.name, spec.module, tests)
    for item in [*doc, *suite, *observed]:
        if item.arguments not in seen and len(gathered) < budget:
            seen.add(item.arguments)
            gathered.append(item)
    room = min(execution.generated_inputs, budget - len(gathered))
    conditions = preconditions(spec) if room > 0 else []
    generated, note = generated_inputs(
        spec, (room * 3 if conditions else room) + 5, execution.generation_time, gathered
    )
    if note:
        notes.append(note)
    fn = _definition(spec)

    def inside(arguments: str) -> bool:
        """Whether a generated input meets the docstring's stated conditions (or they
        cannot be checked on it)."""
        values = _parameter_values(fn, arguments) if conditions and fn else None
        return values is None or all(c.holds(values) is not False for c in conditions)

    outside = 0
    for item in generated:
        if item.arguments in seen or room <= 0:
            continue
        if not inside(item.arguments):
            outside += 1  # outside what the docstring says the function takes
            continue
        seen.add(item.arguments)
        gathered.append(item)
        room -= 1
    if outside:
        said = ", ".join(c.text for c in conditions)
        notes.append(f"{outside} generated inputs left out: the docstring asks for {said}")
    result.notes = notes
    result.inputs = _counted(gathered)
    if not gathered:
        result.reason = (
            "no input to run it on: no docstring example, no test call with "
            "literal arguments, no annotations to generate from"
        )
        return result
    limits = sandbox.Limits(
        timeout_s=arbitration.timeout,
        cpu_s=max(1, int(arbitration.timeout)),
        memory_mb=arbitration.memory_mb,
    )
    # --- the sources of truth: a reference, else the k oracles (programs cached)
    programs: list[tuple[str, str | None, str, bool]] = []  # (source, program, problem, cached)
    needs_oracles = reference is None and any(i.expected is None for i in gathered)
    # inputs beyond the docstring's examples: the oracles will be asked for values anyway
    beyond_examples = needs_oracles
    if not needs_oracles and reference is None and model is not None and spec.docstring_value:
        # Only the docstring's examples: the oracles are written only when the function
        # contradicts one of them, to tell a wrong function from a wrong example (REF412).
        entry, module = _module_of(relpath)
        alone = _run_code(
            "function",
            _IMPORT.format(entry=entry, module=module, relpath=relpath),
            f"_referee_m.{spec.name}",
            gathered,
            limits,
            {**files, relpath: files.get(relpath, spec.text)},
            python,
        )
        needs_oracles = alone.values is not None and any(
            status != "ok" or not sandbox.values_equal(value, item.expected or "")
            for (status, value), item in zip(alone.values, gathered, strict=True)
        )
    if needs_oracles:
        if not spec.docstring_value:
            result.reason = "no docstring to write oracles from"
            return result
        if model is None:
            result.reason = "the oracles need a model; none is set up"
            return result
        say(f"oracles ({arbitration.oracles}) from the signature and docstring")
        answers = generate_many(
            model,
            oracle_messages(spec),
            seeds=list(range(1, arbitration.oracles + 1)),
            temperature=arbitration.temperature,
            cache=program_cache or ProgramCache(None),
            cancelled=cancelled,
        )
        preamble = module_imports(spec.text)
        for seed, (answer, was_cached) in enumerate(answers, start=1):
            program, problem = program_from(answer, spec.name, preamble)
            programs.append((f"oracle-{seed}", program, problem, was_cached))
        # The cases the docstring names, proposed by the model in one more request:
        # random inputs seldom hold the mixed case, the punctuation, the empty list it
        # speaks of. Asked only when oracles are written (they give the values).
        wanted = min(execution.proposed_inputs, max(0, budget - len(gathered)))
        if wanted and beyond_examples:
            say(f"asking for up to {wanted} inputs from the docstring")
            (reply, _), *_ = generate_many(
                model,
                proposal_messages(spec, wanted),
                seeds=[1],
                temperature=arbitration.temperature,
                cache=program_cache or ProgramCache(None),
                cancelled=cancelled,
                max_tokens=512,
            )
            proposed = [
                i
                for i in parse_proposals(reply, fn, wanted)
                if i.arguments not in seen and inside(i.arguments)
            ]
            if not proposed:
                notes.append("the model proposed no input that fits the signature")
            for item in proposed:
                seen.add(item.arguments)
                # before the generated ones: what the docstring names comes first
                first_generated = next(
                    (n for n, g in enumerate(gathered) if g.origin == "generated"), len(gathered)
                )
                gathered.insert(first_generated, item)
            result.inputs = _counted(gathered)
    key = hashlib.sha256(
        json.dumps(
            [
                __version__,
                DECISION_VERSION,
                prompts().version,
                relpath,
                files.get(relpath, spec.text),
                spec.name,
                [asdict(i) for i in gathered],
                [(s, p) for s, p, _, _ in programs],
                reference,
                files.get(reference.rpartition(":")[0], "") if reference else "",
                arbitration.required_agreement,
                python.path if python is not None else None,
            ]
        ).encode("utf-8")
    ).hexdigest()
    if cache is not None and (known := cache.get(key)) is not None:
        known.seconds = round(time.monotonic() - started, 3)
        return known

    entry, module = _module_of(relpath)
    function_code = _IMPORT.format(entry=entry, module=module, relpath=relpath)
    project = {**files, relpath: files.get(relpath, spec.text)}
    # An oracle that contradicts the docstring's own examples misread the docstring: it is
    # no source of truth on any input (source -> why), here and in every later run.
    disqualified: dict[str, str] = {}

    def run_all(inputs: Sequence[Input]) -> tuple[_Run, list[_Run]]:
        jobs: list[Callable[[], _Run]] = [
            lambda: _run_code(
                "function",
                function_code,
                f"_referee_m.{spec.name}",
                inputs,
                limits,
                project,
                python,
            )
        ]
        if reference is not None:
            target, _, name = reference.rpartition(":")
            if target.endswith(".py"):
                code, callee = project.get(target, ""), name
            else:
                code = (
                    "import os, sys\nsys.path.insert(0, os.getcwd())\n"
                    f"from {target} import {name} as __referee_reference__\n"
                )
                callee = "__referee_reference__"
            jobs.append(
                lambda: _run_code("reference", code, callee, inputs, limits, project, python)
            )
        for source, program, problem, _ in programs:
            if program is None:
                jobs.append(
                    lambda s=source, p=problem: _Run(s, "error", f"the model's program {p}", None)
                )
            else:
                jobs.append(lambda s=source, p=program: _run_code(s, p, spec.name, inputs, limits))
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = list(pool.map(lambda job: job(), jobs))
        runs = [
            _Run(r.source, "error", disqualified[r.source], None) if r.source in disqualified else r
            for r in runs
        ]
        return runs[0], runs[1:]

    say(f"running it and its spec's implementations on {len(gathered)} inputs")
    function_run, truth_runs = run_all(gathered)
    written_runs = list(truth_runs)  # before any is set aside for contradicting an example
    if programs:
        disqualified.update(_contradicting_examples(gathered, truth_runs))
        truth_runs = [
            _Run(r.source, "error", disqualified[r.source], None) if r.source in disqualified else r
            for r in truth_runs
        ]
    result.sources = [
        {
            "source": r.source,
            "status": r.status,
            "detail": r.detail,
            **({"program": p} if (p := _program(programs, r.source)) else {}),
        }
        for r in truth_runs
    ]
    if function_run.status == "refused" or any(r.status == "refused" for r in truth_runs):
        result.reason = (
            function_run.detail
            if function_run.status == "refused"
            else next(r.detail for r in truth_runs if r.status == "refused")
        )
        return result
    if function_run.values is None:
        result.status = "SKIPPED"
        result.reason = f"the function's module did not run in the sandbox: {function_run.detail}"
        return result
    required = arbitration.required_agreement
    findings = [
        f
        for index, item in enumerate(gathered)
        if (
            f := _decide_input(
                index, item, function_run.values[index], truth_runs, required, reference is not None
            )
        )
        is not None
    ]
    if programs and reference is None:
        findings = [
            _example_in_doubt(f, function_run.values[f.index], written_runs, required)
            for f in findings
        ]
    rejects = [f for f in findings if f.kind == "reject"]
    unclear = [f for f in findings if f.kind == "unclear"]
    if rejects:
        first = rejects[0]
        item = gathered[first.index]
        if item.origin == "generated":
            say("shrinking the counterexample")
            item = _shrink(item, run_all, required, reference is not None, cancelled, inside)
        # Run once more, alone, before it is shown.
        say(f"re-running {spec.name}({item.arguments})")
        again_function, again_truths = run_all([item])
        confirm = (
            _decide_input(
                0, item, again_function.values[0], again_truths, required, reference is not None
            )
            if again_function.values is not None
            else None
        )
        if confirm is not None and confirm.kind == "reject":
            produced = again_function.values[0]  # type: ignore[index]
            result.status = "REJECT"
            result.call = f"{spec.name}({item.arguments})"
            result.produced = _shown(*produced)
            result.truth = confirm.truth
            result.truth_source = confirm.truth_source
            result.answers = confirm.answers
            result.reason = _reject_reason(result, confirm, len(programs), item)
        else:
            notes.append(
                f"{spec.name}({item.arguments}) differed once and not when run again: not reported"
            )
            rejects = []
    if not rejects and unclear:
        first = unclear[0]
        item = gathered[first.index]
        result.status = "UNCLEAR"
        result.call = f"{spec.name}({item.arguments})"
        result.produced = _shown(*function_run.values[first.index])
        result.answers = first.answers
        competing = ", ".join(f"{s} {v}" for s, v in first.answers)
        if first.truth_source == "docstring":
            result.reason = (
                f"{result.call}: the docstring's example says {item.expected}, but the "
                f"function and {len(first.answers) - 1} independent implementations of the "
                f"docstring all {result.produced}: the example itself may be wrong"
            )
        else:
            result.reason = (
                f"{result.call}: the oracles disagree ({competing}); the function "
                f"{result.produced}: the docstring can be read more than one way here"
            )
    elif not rejects and not any(f.kind == "agree" for f in findings):
        # Nothing was compared: every source of truth raised or did not run (an oracle
        # that calls a helper the docstring names, say), or the function raised on every
        # generated input. That is no evidence either way.
        result.status = "SKIPPED"
        result.reason = (
            f"no input of {len(gathered)} was compared: the sources of truth gave no value "
            "the function could be held to (they raised or did not run), or the function "
            "raised on every generated input"
        )
    elif not rejects:
        result.status = "PASS"
        agreed = sum(f.kind == "agree" for f in findings)
        usable = sum(1 for r in truth_runs if r.values is not None and r.source != "reference")
        sources = (
            "the declared reference"
            if reference is not None
            else f"{usable} of {len(programs)} oracles"
            if usable < len(programs)
            else f"{len(programs)} oracles"
            if programs
            else "the docstring's examples"
        )
        if not usable and reference is None:
            sources = "the docstring's examples"
        counted = ", ".join(f"{n} {o}" for o, n in result.inputs.items() if n)
        result.reason = f"agrees with {sources} on {agreed} inputs ({counted})"
        if agreed < len(gathered):
            result.reason = (
                f"agrees with {sources} on {agreed} of {len(gathered)} inputs ({counted}); "
                f"no verdict on {len(gathered) - agreed} (the function or a source raised)"
            )
    result.seconds = round(time.monotonic() - started, 3)
    if cache is not None and result.status in ("REJECT", "UNCLEAR", "PASS"):
        cache.put(key, result)
    return result


def _counted(gathered: Sequence[Input]) -> dict[str, int]:
    """How many inputs of each origin (proposed ones only when there are some)."""
    counts = {
        origin: sum(i.origin == origin for i in gathered)
        for origin in ("docstring", "test", "proposed", "generated")
    }
    if not counts["proposed"]:
        del counts["proposed"]
    return counts


def _program(programs: list[tuple[str, str | None, str, bool]], source: str) -> str | None:
    return next((p for s, p, _, _ in programs if s == source), None)


def _reject_reason(result: Differential, found: _Finding, k: int, item: Input) -> str:
    if found.truth_source == "docstring":
        said = f"the docstring says {found.truth} ({item.where.strip()})"
    elif found.truth_source == "reference":
        said = f"the declared reference returns {found.truth}"
    else:
        agreeing = sum(1 for _, v in found.answers if sandbox.values_equal(v, found.truth or ""))
        said = f"{agreeing} independent implementations of the docstring return {found.truth}"
    origin = {
        "docstring": "a docstring example",
        "test": "an input the tests use",
        "proposed": "an input the model proposed from the docstring",
        "generated": "a generated input",
    }[item.origin]
    return f"{result.call} {result.produced}; {said} ({origin})"


def _shrink(
    item: Input,
    run_all: Callable[[Sequence[Input]], tuple[_Run, list[_Run]]],
    required: int,
    reference: bool,
    cancelled: Callable[[], bool] | None,
    inside: Callable[[str], bool] = lambda arguments: True,
    rounds: int = 6,
) -> Input:
    """A simpler input on which the function still differs from an agreed truth: simpler
    candidates are run in one batch per round, the shortest counterexample kept."""
    best = item
    for _ in range(rounds):
        if cancelled is not None and cancelled():
            break
        candidates = [
            Input(a, "generated") for a in _shrink_candidates(best.arguments) if inside(a)
        ]
        if not candidates:
            break
        function_run, truth_runs = run_all(candidates)
        if function_run.values is None:
            break
        still = [
            c
            for index, c in enumerate(candidates)
            if (
                f := _decide_input(
                    index, c, function_run.values[index], truth_runs, required, reference
                )
            )
            is not None
            and f.kind == "reject"
        ]
        if not still:
            break
        best = min(still, key=lambda c: (len(c.arguments), c.arguments))
    return best


__all__ = [
    "Differential",
    "DifferentialCache",
    "Input",
    "check_function",
    "docstring_inputs",
    "generated_inputs",
    "observed_inputs",
    "parse_proposals",
    "preconditions",
    "suite_inputs",
]
