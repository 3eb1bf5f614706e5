"""A model's answer read as a program: the fenced code, its definitions (imports,
functions, classes, constants; examples and prints dropped), and the standard-library
imports of the module under test it runs after."""

from __future__ import annotations

import ast
import builtins
import re
import sys
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from referee.checks.arbitration.project_objects import current, module_file


def extract_code(answer: str) -> str:
    """The first fenced Python block of a model's answer, else the answer itself."""
    for pattern in (r"```(?:python|py)[^\n]*\n(.*?)```", r"```[^\n]*\n(.*?)```"):
        match = re.search(pattern, answer, re.DOTALL)
        if match:
            return match.group(1)
    unterminated = re.search(r"```(?:python|py)?[^\n]*\n(.*)$", answer, re.DOTALL)
    return unterminated.group(1) if unterminated else answer


@dataclass(frozen=True)
class DocstringCopy:
    """A forcing (:attr:`ChatRequest.forcing`) for an answer that writes the function
    ``name`` whose docstring its prompt shows: once the model has opened a docstring
    right under ``def name(...):`` and what it wrote of it so far is the start of
    ``docstring`` (as written, quotes included; re-indented as the model indents), the
    rest of it. The small models copy the docstring they were shown — the prompt asks
    them not to — and that copy was half the tokens of some answers; forced, it is
    evaluated as a prompt is, not decoded a token at a time. An answer that writes a
    docstring of its own gets nothing forced.

    An object rather than a closure: it travels to the model process with its request."""

    name: str
    docstring: str

    def __call__(self, written: str) -> str | None:
        start = written.rfind(f"def {self.name}(")
        body = _header_end(written, start + len(self.name) + 5) if start >= 0 else -1
        if body < 0:
            return ""
        mine = written[body:]
        indent = mine[: len(mine) - len(mine.lstrip(" \t"))]
        opened = mine[len(indent) :]
        shown = self.docstring.lstrip(" \t")
        if len(opened) < 3 or len(opened) >= len(shown) or not shown.startswith(opened):
            return ""
        old = self.docstring[: len(self.docstring) - len(shown)]
        rest = shown[len(opened) :]
        # up to its last word: the closing punctuation, quotes and line end are the
        # model's own tokens (``."""\n`` is one), or what it writes next starts from a
        # split no text of its training had, and it writes worse code
        last = _LAST_WORD.search(rest)
        rest = rest[: last.end()] if last else ""
        return rest.replace("\n" + old, "\n" + indent) if old != indent else rest


_LAST_WORD = re.compile(r"\w(?=\W*\Z)", re.DOTALL)
# the rest of a one-line string literal after its opening quote, by quote
_STRING_REST = {q: re.compile(rf"(?:[^{q}\\\n]|\\.)*{q}") for q in "\"'"}
_HEADER_LINE_END = re.compile(r"[^\n:]*:[ \t]*(#[^\n]*)?\n")


def _header_end(text: str, start: int) -> int:
    """Where the body of the ``def`` whose parameter list opens at ``start - 1`` begins:
    after the line that ends the header (``):``, ``) -> int:``), -1 while it is not
    written yet. Parentheses are counted outside quotes (``sep: str = "("``); a header
    this misreads forces nothing, because the text after it is not the docstring's
    start."""
    depth = 1
    i = start
    while i < len(text) and depth:
        ch = text[i]
        if ch in "\"'":
            end = _STRING_REST[ch].match(text, i + 1)
            if end is None:
                return -1
            i = end.end()
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        i += 1
    if depth:
        return -1
    match = _HEADER_LINE_END.match(text, i)
    return match.end() if match else -1


_KEPT = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
)


def module_imports(text: str) -> str:
    """The standard-library imports at the top level of a module: what the
    module's functions take for granted (``from math import pi``). An oracle program runs
    with them in front of its own code — the model sees the signature and docstring, not
    the module, and an oracle that uses ``pi`` as the docstring does is no worse for
    forgetting the import. Its own definitions come after them and win."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return ""
    kept = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            roots = [alias.name.partition(".")[0] for alias in stmt.names]
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
            roots = [stmt.module.partition(".")[0]]
        else:
            continue
        if all(r in sys.stdlib_module_names and r != "__future__" for r in roots):
            kept.append(ast.unparse(stmt))
    return "".join(f"{line}\n" for line in kept)


def program_from(
    answer: str, name: str, preamble: str = "", copied: Collection[str] = ()
) -> tuple[str | None, str]:
    """(program, problem): the definitions of a model's answer — imports, functions,
    classes, constants; examples and prints dropped — or None and why not. ``preamble``
    (:func:`module_imports`) goes in front of them. ``copied``: the function's own
    decorators, which its prompt shows (``for_app("git")``): one the program puts on its
    ``name`` is dropped — what it says is the program's to do, and the sandbox has not
    got it."""
    code = extract_code(answer)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return None, f"is not valid Python: {exc.msg} (line {exc.lineno})"
    body = [
        stmt
        for stmt in tree.body
        if isinstance(stmt, _KEPT)
        and not (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__")
    ]
    if not any(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name for s in body
    ):
        return None, f"does not define `{name}`"
    # each definition as the model wrote it (its comments and quotes: a fix taken from
    # this program reads as written), or as ast writes it when its lines do not stand alone
    lines = code.splitlines()
    parts = []
    for stmt in body:
        decorators = getattr(stmt, "decorator_list", [])
        kept = decorators
        if copied and getattr(stmt, "name", None) == name:
            kept = [d for d in decorators if ast.unparse(d) not in copied]
        first = min([stmt.lineno] + [d.lineno for d in decorators])
        if len(kept) < len(decorators):
            shown = [f"@{ast.unparse(d)}" for d in kept]
            stmt.decorator_list = kept  # type: ignore[union-attr]
            text = "\n".join([*shown, *lines[stmt.lineno - 1 : stmt.end_lineno]]).rstrip()
        else:
            text = "\n".join(lines[first - 1 : stmt.end_lineno]).rstrip()
        try:
            ast.parse(text)
        except SyntaxError:
            text = ast.unparse(stmt)
        parts.append(text)
    code = "\n".join(parts)
    preamble += forgotten_imports(preamble + code)
    program = "from __future__ import annotations\n\n" + preamble + code
    return program + "\n", ""


# Names the small models use from the standard library without importing them, each with
# the module it comes from; a standard-library module used as ``re.sub`` needs no entry.
_FROM = {
    "functools": ("reduce", "lru_cache", "cache", "partial", "cmp_to_key", "wraps"),
    "collections": ("defaultdict", "Counter", "deque", "OrderedDict", "namedtuple"),
    "itertools": (
        *("chain", "combinations", "combinations_with_replacement", "permutations"),
        *("product", "groupby", "accumulate", "islice", "zip_longest", "starmap"),
        *("takewhile", "dropwhile", "filterfalse", "pairwise", "compress"),
    ),
    "typing": (
        *("Any", "Callable", "Dict", "FrozenSet", "Generator", "Iterable", "Iterator"),
        *("List", "Mapping", "Optional", "Sequence", "Set", "Tuple", "Type", "Union"),
    ),
    "math": ("sqrt", "isqrt", "floor", "ceil", "gcd", "lcm", "factorial", "comb", "prod"),
    "heapq": ("heappush", "heappop", "heapify", "nlargest", "nsmallest"),
    "bisect": ("bisect_left", "bisect_right", "insort"),
    "decimal": ("Decimal",),
    "fractions": ("Fraction",),
}
_FROM_MODULE = {name: module for module, names in _FROM.items() for name in names}


def forgotten_imports(code: str) -> str:
    """The imports a program forgot: for each name it reads but never binds (no
    definition, assignment, parameter or import of it anywhere in ``code``) that is a
    standard-library module it takes an attribute of (``re.sub``) or one of the names of
    :data:`_FROM` (``reduce``), the import that binds it. A program that forgot one
    failed with a NameError, an oracle lost and replaced for a line any reader would
    add; the import says nothing of what the function should compute."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return ""
    bound: set[str] = set()
    read: dict[str, bool] = {}  # a name read -> whether only ever as ``name.attr``
    bases = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                read[node.id] = read.get(node.id, True) and id(node) in bases
            else:
                bound.add(node.id)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
    lines = []
    for name, as_module in read.items():
        if name in bound or hasattr(builtins, name):
            continue
        if name in _FROM_MODULE:
            lines.append(f"from {_FROM_MODULE[name]} import {name}")
        elif as_module and name in sys.stdlib_module_names and not name.startswith("_"):
            lines.append(f"import {name}")
    return "".join(f"{line}\n" for line in sorted(lines))


_VALUE_TYPES = frozenset(
    {"int", "float", "complex", "str", "bytes", "bool", "list", "dict", "tuple", "set"}
    | {"frozenset", "List", "Dict", "Tuple", "Set", "FrozenSet"}
)


def value_return(signature: str) -> str | None:
    """The return annotation of ``signature`` (``def f(x) -> int:``) when it names a type
    whose values are never None — a built-in value type, bare or parametrised
    (``list[str]``) — as written; else None (no annotation, ``Optional``, a union, a
    class of the project's)."""
    try:
        tree = ast.parse(signature.strip() + "\n    pass\n")
    except SyntaxError:
        return None
    function = tree.body[0] if tree.body else None
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    returns = function.returns
    if returns is None:
        return None
    return ast.unparse(returns) if _type_name(returns) in _VALUE_TYPES else None


def _type_name(annotation: ast.expr) -> str | None:
    """The type an annotation names, its parameters left out: ``list`` of ``list[str]``,
    ``Dict`` of ``typing.Dict[str, int]`` (``typing.`` and ``builtins.`` only)."""
    base = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
        return base.attr if base.value.id in ("typing", "builtins") else None
    return base.id if isinstance(base, ast.Name) else None


def _is_stub(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A body of ``...`` alone (after a docstring, perhaps): a stub, not an implementation."""
    body = function.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    return (
        len(body) == 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and body[0].value.value is Ellipsis
    )


def _gives_values(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``function``'s own body (not a function or class defined in it) has a
    ``return`` of something other than None, or a ``yield``."""
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if (
            isinstance(node, ast.Return)
            and node.value is not None
            and not (isinstance(node.value, ast.Constant) and node.value.value is None)
        ):
            return True
        pending.extend(ast.iter_child_nodes(node))
    return False


def none_without_opinion(program: str, name: str) -> str | None:
    """Why a program's None is no opinion about the value, or None where it may be one:
    the function ``name`` never returns a value (it prints its answer, or forgets the
    ``return``), or the program copies a stub (``def sub(self, text): ...``, as the
    oracle prompt shows a class) whose empty body is what gave the None. Where neither
    holds, a None is the program's answer like any other value."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return None
    functions = [
        node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    stubs = [f.name for f in functions if _is_stub(f)]
    if stubs:
        return f"copies a stub (`{stubs[0]}` has the body `...`), and the call gave None"
    own = [f for f in tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    mine = next((f for f in reversed(own) if f.name == name), None)
    if mine is not None and not _gives_values(mine):
        return f"`{name}` never returns a value, and the call gave None"
    return None


_HOPS = 3  # ``from m import name`` re-exports followed to the name's definition


def signature_constants(
    text: str, signature: str, module: str = "", root: Path | None = None
) -> str:
    """The module-level names the signature's defaults use (``initial=no_default``,
    ``default=NO_DEFAULT``), each as one line that defines it as its module does —
    ``no_default = '__no__default__'``, ``NO_DEFAULT = object()`` — when the module under
    test binds it once at its top level to a literal or to a bare ``object()`` (with
    ``root``, the project's root, also through ``from pkg.m import name`` to the project's
    file that does). The oracles' prompt shows them above the signature and every oracle
    program runs after them: a sentinel is part of the interface the signature states,
    and a program that writes the signature as shown must not die of a NameError."""
    try:
        header = ast.parse(signature.strip() + "\n    pass\n").body[-1]
    except (SyntaxError, ValueError, IndexError):
        return ""
    if not isinstance(header, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return ""
    defaults = [*header.args.defaults, *(d for d in header.args.kw_defaults if d is not None)]
    names = [n.id for d in defaults for n in ast.walk(d) if isinstance(n, ast.Name)]
    lines = []
    for name in dict.fromkeys(names):
        if hasattr(builtins, name):
            continue
        value = _module_value(text, module, name, root)
        if value is not None:
            lines.append(f"{name} = {value}")
    return "".join(f"{line}\n" for line in lines)


def _module_value(text: str, module: str, name: str, root: Path | None) -> str | None:
    """The literal or ``object()`` ``name`` is bound to once at a module's top level,
    following ``from ... import name`` into the project's files under ``root``."""
    for _ in range(_HOPS):
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
        values: list[ast.expr] = []
        source: tuple[str, str] | None = None  # (module, name) it is imported from
        bound = 0
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in stmt.targets
            ):
                bound += 1
                values.append(stmt.value)
            elif isinstance(stmt, ast.AnnAssign) and getattr(stmt.target, "id", None) == name:
                bound += 1
                values.extend([stmt.value] if stmt.value is not None else [])
            elif isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if (alias.asname or alias.name) == name:
                        bound += 1
                        if stmt.module and not stmt.level:
                            source = (stmt.module, alias.name)
                        elif stmt.module:
                            package = module.split(".")[: len(module.split(".")) - stmt.level]
                            source = (".".join([*package, stmt.module]), alias.name)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound += stmt.name == name
        if bound != 1:
            return None
        if values:
            return _constant_text(values[0])
        if source is None or root is None:
            return None
        module, name = source
        path = module_file(root, module)
        if path is None:
            return None
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
    return None


def _constant_text(value: ast.expr) -> str | None:
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "object"
        and not value.args
        and not value.keywords
    ):
        return "object()"
    try:
        literal = ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return repr(literal)


def viewed_signature_constants(text: str, signature: str, module: str) -> str:
    """:func:`signature_constants`, through the project's files when the arbitration
    views them (the root of its current view)."""
    view = current()
    root = view.root if view is not None else None
    return signature_constants(text, signature, module, root)


def oracle_preamble(text: str, signature: str, module: str) -> str:
    """What every oracle program of a function runs after: its module's standard-library
    imports (:func:`module_imports`) and the constants its signature's defaults name
    (:func:`viewed_signature_constants`)."""
    return module_imports(text) + viewed_signature_constants(text, signature, module)


# The type(s) a value of each built-in return annotation may have (``-> float`` is met by
# an int; ``-> bool`` by 0 and 1, which compare equal to False and True).
_RETURN_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (float, int),
    "complex": (complex, float, int),
    "bool": (bool, int),
    "str": (str,),
    "bytes": (bytes,),
    **dict.fromkeys(("list", "List"), (list,)),
    **dict.fromkeys(("dict", "Dict"), (dict,)),
    **dict.fromkeys(("tuple", "Tuple"), (tuple,)),
    **dict.fromkeys(("set", "Set"), (set,)),
    **dict.fromkeys(("frozenset", "FrozenSet"), (frozenset,)),
}


def other_type(value: str, returns: str) -> str | None:
    """The name of the type of ``value`` (a repr) where it is not one the return annotation
    ``returns`` (from :func:`value_return`) names — ``bytes`` where it says ``str``,
    ``str`` where it says ``int`` —, else None. A program whose value the signature rules
    out misread the function, as one that returns None where it names ``int`` does. Only
    a literal is read (``b'x'``, ``[1]``; an integral float meets ``int``); an object's
    repr is no evidence either way."""
    try:
        annotation = ast.parse(returns, mode="eval").body
        found = ast.literal_eval(value)
    except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
        return None
    name = _type_name(annotation)
    allowed = _RETURN_TYPES.get(name or "")
    if allowed is None or isinstance(found, allowed):
        return None
    if name == "int" and isinstance(found, float) and found.is_integer():
        return None
    return type(found).__name__
