"""The inputs the differential check runs a function on, in order of trust.

The docstring's examples (with the values they give), the literal arguments the
project's tests pass to the function (read from the tests' calls and assertions, never
guessed), the inputs a model proposes from the docstring, and inputs generated from the
signature's annotations with hypothesis, shaped like the known ones and kept inside the
conditions the docstring states (:class:`Precondition`). Nothing here runs project code:
arguments are literals, read with :func:`ast.literal_eval`, or standard-library values
built from literals (``dt.timedelta(minutes=2)``, by the class's own constructor:
:func:`~referee.checks.arbitration.std_values.built_value`), which travel with the
imports their names need (:attr:`Input.definitions`).
"""

from __future__ import annotations

import ast
import re
import string
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from referee.checks.arbitration.examples import docstring_examples
from referee.checks.arbitration.isolate import FunctionSpec
from referee.checks.arbitration.programs import extract_code
from referee.checks.arbitration.std_values import built_value, definitions_for, imported_names
from referee.checks.arbitration.suite_reading import static_examples
from referee.checks.arbitration.truth import prompts

Origin = Literal["docstring", "test", "proposed", "generated"]


@dataclass(frozen=True)
class Input:
    arguments: str  # as written in a call: "15, 0, 10"
    origin: Origin
    expected: str | None = None  # the docstring's value for it
    where: str = ""  # the docstring line, or the test file
    # the imports its arguments need where they are standard-library values built from
    # literals (``dt.timedelta(minutes=2)``: ``import datetime as dt``), else ""
    definitions: str = ""


# ---------------------------------------------------------------------------- inputs


def _arguments(call: ast.Call, value: Callable[[ast.expr], object]) -> str | None:
    """A call's arguments as written, where ``value`` reads each of them (raising where
    it does not); None for a ``*`` or ``**`` argument or one ``value`` does not read."""
    try:
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                return None
            value(arg)
        for keyword in call.keywords:
            if keyword.arg is None:
                return None
            value(keyword.value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, OverflowError):
        return None
    parts = [ast.unparse(a) for a in call.args]
    parts += [f"{k.arg}={ast.unparse(k.value)}" for k in call.keywords]
    return ", ".join(parts)


def _literal_args(call: ast.Call) -> str | None:
    return _arguments(call, ast.literal_eval)


def _value_args(call: ast.Call, names: dict[str, str]) -> str | None:
    """A call's arguments where each is a literal or a standard-library value built from
    literals (:func:`~referee.checks.arbitration.std_values.built_value`)."""
    return _arguments(call, lambda node: built_value(node, names))


def docstring_inputs(spec: FunctionSpec) -> list[Input]:
    """The docstring's examples of calls with literal arguments, or standard-library values
    built from literals (with the imports they need, as the function's module binds the
    names), with their values."""
    found: list[Input] = []
    names: dict[str, str] | None = None
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
            continue
        names = imported_names(spec.text) if names is None else names
        arguments = _value_args(node, names)
        if arguments is not None:  # ``natural_delta(dt.timedelta(minutes=2))``
            found.append(Input(arguments, "docstring", want, line, definitions_for(node, names)))
    return found


def imports_function(tree: ast.Module, name: str, module: str) -> tuple[bool, set[str]]:
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
        direct, aliases = imports_function(tree, name, module)
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
        values = parameter_values(fn, item.arguments)
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


def definition(spec: FunctionSpec) -> ast.FunctionDef | None:
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
    fn = definition(spec)
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


def parameter_values(fn: ast.FunctionDef, arguments: str) -> dict[str, Any] | None:
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
    fn = definition(spec)
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
    found: list[Input] = []
    for example in static_examples(name, module, tests):
        if example.known and not _standard_values(example.arguments, example.definitions):
            continue  # a lambda, a function or an object of the test's: no input of the spec
        found.append(Input(example.arguments, "test", None, example.where, example.definitions))
    return found


def _standard_values(arguments: str, definitions: str) -> bool:
    """Whether ``arguments`` are literals and standard-library values built from them,
    their names bound by ``definitions``' imports."""
    try:
        call = ast.parse(f"f({arguments})", mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return False
    return isinstance(call, ast.Call) and _value_args(call, imported_names(definitions)) is not None


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
