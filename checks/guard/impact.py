"""Whether the code a test exercises changed in the same diff: what tells an intended
change of behaviour (the expected value changes together with the function it tests)
from the cheat the guard exists for (the expected value changes and nothing else does).

The changed definitions are read from the changed Python files that are not test
modules (source files, ``conftest.py``, test helpers): a function, method or class whose
text differs from the base, or that is new or gone, and a module-level name bound by a
changed statement. What *reaches* a changed definition is found by name, a few calls
deep: ``git grep`` lists the Python files that mention a changed name, and each function
there that mentions one joins the set (with the changed name it leads to). A test is
affected when a name it mentions (a function it calls, a fixture it takes) is in that
set. Names are matched without resolving imports, so the answer leans to "affected":
it only ever turns an error into a warning in the default mode, never in agent mode.

Files that are neither Python nor documentation (a C or Rust extension, a template, a
data file, the dependency pins) changed in the same diff are named too: the code under
test may live there.
"""

from __future__ import annotations

import builtins
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath

from referee.checks.guard.normal import squash
from referee.checks.pymodule import PythonModule
from referee.checks.source import SourceFile

# Files whose change may change what the code under test does, besides Python ones.
_CODE_SUFFIXES = frozenset(
    {
        ".pyx",
        ".pxd",
        ".pxi",
        ".pyi",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".rs",
        ".go",
        ".js",
        ".ts",
        ".java",
        ".jinja",
        ".jinja2",
        ".j2",
        ".tmpl",
        ".sql",
        ".so",
    }
)
_DATA_SUFFIXES = frozenset(
    {
        ".json",
        ".yaml",
        ".yml",
        ".toml",
        ".csv",
        ".xml",
        ".txt",
        ".ini",
        ".cfg",
        ".html",
        ".bin",
        ".dat",
    }
)
_PINS = re.compile(r"(^|/)(requirements[^/]*\.(txt|in)|[^/]*\.lock|Cargo\.toml)$")
_TEST_DIRS = frozenset({"test", "tests", "testing"})
_TEST_NAME = re.compile(r"(.*/)?(test_[^/]*|[^/]*_test)\.py$")


def other_change(path: str) -> bool:
    """Whether a changed file that is not Python may change what a test observes: code
    in another language, pinned dependencies, or data under a test directory."""
    pure = PurePosixPath(path)
    if pure.parts and pure.parts[0] == ".referee":
        return False  # the certificate ledger: what certifies a change, not a change
    if pure.suffix.lower() in _CODE_SUFFIXES or _PINS.search(path):
        return True
    if "templates" in pure.parts[:-1] or "static" in pure.parts[:-1]:
        return True  # what a web app renders is code too
    in_tests = any(part in _TEST_DIRS for part in pure.parts[:-1])
    return in_tests and pure.suffix.lower() in _DATA_SUFFIXES


def dependencies_changed(before: str | None, after: str | None, name: str) -> bool:
    """Whether a pyproject.toml or setup.cfg changed the project's dependencies."""
    import configparser
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib

    def deps(text: str | None) -> object:
        if text is None:
            return None
        try:
            if name == "pyproject.toml":
                data = tomllib.loads(text)
                project = data.get("project", {})
                poetry = data.get("tool", {}).get("poetry", {})
                return (
                    project.get("dependencies"),
                    project.get("optional-dependencies"),
                    data.get("dependency-groups"),
                    poetry.get("dependencies"),
                    poetry.get("group"),
                )
            parser = configparser.ConfigParser(interpolation=None)
            parser.read_string(text)
            if not parser.has_section("options"):
                return None
            return parser.get("options", "install_requires", fallback=None)
        except Exception:
            return None

    return deps(before) != deps(after)


# Names too common to say which code a mention means (builtins, the methods every
# container or stream has): a changed method with such a name counts through its
# class only, and no such name carries the reach any further.
_GENERIC = frozenset(
    {name for name in dir(builtins) if not name.startswith("_") or name.startswith("__")}
    | {
        "self",
        "cls",
        "get",
        "set",
        "name",
        "value",
        "values",
        "items",
        "keys",
        "append",
        "extend",
        "update",
        "copy",
        "run",
        "call",
        "send",
        "read",
        "write",
        "close",
        "start",
        "stop",
        "format",
        "join",
        "split",
        "strip",
        "replace",
        "add",
        "remove",
        "pop",
        "clear",
        "index",
        "count",
        "find",
        "load",
        "loads",
        "dump",
        "dumps",
        "encode",
        "decode",
        "data",
        "text",
        "path",
        "main",
        "init",
        "setup",
        "teardown",
        "result",
        "response",
        "request",
        "config",
        "args",
        "kwargs",
        "key",
        "default",
        "options",
        "params",
        "kind",
        "type",
        "func",
        "fn",
        "obj",
        "item",
        "other",
        "x",
        "y",
        "test",
        "wrapper",
        "inner",
        "cb",
        "callback",
        "handler",
        "process",
        "execute",
        "apply",
        "render",
        "build",
        "create",
        "make",
        "new",
        "reset",
        "flush",
        "exit",
        "enter",
        "error",
        "warn",
        "log",
        "info",
        "debug",
        "to_dict",
        "from_dict",
        "validate",
        "check",
        "match",
        "search",
        "sub",
    }
)
_DUNDERS = frozenset(
    f"__{n}__"
    for n in (
        "init",
        "call",
        "enter",
        "exit",
        "eq",
        "repr",
        "str",
        "hash",
        "iter",
        "next",
        "getattr",
        "setattr",
        "getitem",
        "len",
        "new",
        "post_init",
    )
)
_WORD = re.compile(r"[A-Za-z_]\w*")
_DEPTH = 6
_MAX_FILES = 400


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text))


def _definitions(text: str, path: str) -> dict[str, tuple[str, frozenset[str]]]:
    """Every definition of a Python file: qualified name -> (its text, the names it is
    known by: its own, and its class's for a method). Module-level statements are one
    definition per statement text, known by the names they bind."""
    try:
        module = PythonModule(SourceFile(path, text), is_test_file=False)
    except Exception:
        return {}
    out: dict[str, tuple[str, frozenset[str]]] = {}
    source = module.source
    in_tests = any(part in _TEST_DIRS for part in PurePosixPath(path).parts[:-1])
    for fn in module.functions:
        if fn.parent is not None or (
            (in_tests or _TEST_NAME.match(path)) and fn.name.startswith("test")
        ):
            continue  # a nested function is part of its encloser's text; a test is no code
        qual = f"{fn.class_.name}.{fn.name}" if fn.class_ is not None else fn.name
        names = {fn.name} | ({fn.class_.name} if fn.class_ is not None else set())
        if fn.class_ is not None and (fn.name in _GENERIC or fn.name.startswith("__")):
            names = {fn.class_.name}  # `open` of FlaskClient: known by FlaskClient
        node = (
            fn.node.parent
            if fn.node.parent is not None and fn.node.parent.type == ("decorated_definition")
            else fn.node
        )
        key = f"def {qual}"
        while key in out:  # a property's getter and setter, overloads: each its own
            key += "'"
        out[key] = (source.node_text(node), frozenset(names))
    for cls in module.classes:
        if cls.nested:
            continue
        body = cls.node.child_by_field_name("body")
        parts: list[str] = []
        if body is not None:
            for stmt in body.named_children:
                if stmt.type in ("function_definition", "decorated_definition"):
                    continue
                parts.append(source.node_text(stmt))
        bases = cls.node.child_by_field_name("superclasses")
        parts.append(source.node_text(bases) if bases is not None else "")
        out[f"class {cls.name}"] = ("\n".join(parts), frozenset({cls.name}))
    for stmt in source.tree.root_node.named_children:
        if stmt.type in ("function_definition", "class_definition", "decorated_definition"):
            continue
        text = source.node_text(stmt)
        if stmt.type in (
            "comment",
            "import_statement",
            "import_from_statement",
            "future_import_statement",
        ) or (stmt.type == "expression_statement" and text[:1] in "\"'"):
            continue  # a comment, a docstring, an import: no behaviour of its own
        left = text.split("=", 1)[0] if "=" in text else text
        left = left.split(":", 1)[0]  # `X: TypeAlias = ...` binds X, not TypeAlias
        bound = frozenset(_WORD.findall(left)) - {"import", "from", "as", "if", "else", "try"}
        out[f"stmt {squash(text)}"] = (text, bound)
    return out


def changed_names(before: str | None, after: str | None, path: str) -> dict[str, str]:
    """Names whose definition differs between two texts of one file: name -> the
    definition that changed (``def parse``, ``class Money``)."""
    old = _definitions(before, path) if before is not None else {}
    new = _definitions(after, path) if after is not None else {}
    out: dict[str, str] = {}
    for key in old.keys() | new.keys():
        was, now = old.get(key), new.get(key)
        if was is not None and now is not None and squash(was[0]) == squash(now[0]):
            continue
        names = (old.get(key) or new.get(key) or ("", frozenset()))[1]
        label = key.rstrip("'") if not key.startswith("stmt ") else "a module-level statement"
        if names & {"__getattr__", "__dir__"} and key.startswith("def __"):
            names = names | {_module_name(path)}  # `attr.__title__` goes through it
        for name in names:
            if name not in _GENERIC:
                out.setdefault(name, label)
    return out


def _module_name(path: str) -> str:
    """The name a module is imported by (its last part): ``src/attr/__init__.py`` is
    ``attr``, ``pkg/util.py`` is ``util``."""
    pure = PurePosixPath(path)
    return pure.parent.name if pure.stem == "__init__" else pure.stem


class Impact:
    """What a diff changed, and what reaches it; computed on first use."""

    def __init__(
        self,
        repo: Path,
        changed: Mapping[str, tuple[str | None, str | None]],
        other_files: Iterable[str],
        is_test: Callable[[str], bool],
        tracked: Callable[[], list[str]],
    ) -> None:
        """``changed``: relpath -> (text at the base, text now) of each changed Python
        file that is not a test module; ``other_files``: the other changed files."""
        self.repo = repo
        self._changed = changed
        self._other = sorted(other_files)
        self._is_test = is_test
        self._tracked = tracked
        self._reach: dict[str, str] | None = None  # name -> why it is affected

    def _compute(self) -> dict[str, str]:
        reach: dict[str, str] = {}
        for path, (before, after) in self._changed.items():
            for name, label in changed_names(before, after, path).items():
                reach.setdefault(name, f"`{name}` ({label.split(' ', 1)[-1]} in {path}) changed")
        frontier = set(reach)
        parsed: dict[str, dict[str, tuple[str, frozenset[str]]]] = {}
        for _ in range(_DEPTH):
            if not frontier:
                break
            files = self._files_mentioning(frontier)
            found: set[str] = set()
            for path in files[:_MAX_FILES]:
                if path not in parsed:
                    try:
                        text = (self.repo / path).read_text(encoding="utf-8")
                    except (OSError, UnicodeDecodeError):
                        text = ""
                    parsed[path] = _definitions(text, path)
                for _key, (body, names) in parsed[path].items():
                    mentioned = {
                        w for w in _words(body) & frontier if w not in _GENERIC and w[:2] != "__"
                    }
                    if not mentioned:
                        continue
                    via = sorted(mentioned)[0]
                    if "__getattr__" in names and "." not in _key:
                        names = names | {_module_name(path)}  # the module's attributes
                    for name in names - _DUNDERS:
                        if name not in reach:
                            reach[name] = f"`{name}` reaches {reach[via]}"
                            if name not in _GENERIC:  # a `get` is reached, never followed
                                found.add(name)
            frontier = found
        return reach

    def _files_mentioning(self, names: set[str]) -> list[str]:
        """Python files (not test modules) that mention one of ``names`` as a word."""
        words = sorted(n for n in names if len(n) > 2)[:300]
        if not words:
            return []
        args = ["git", "grep", "-l", "-w", "-I", "--untracked"]
        for word in words:
            args += ["-e", word]
        args += ["--", "*.py"]
        try:
            proc = subprocess.run(args, cwd=self.repo, capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return []
        paths = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
        # Test modules too, for their helpers and fixtures (their tests are left out by
        # _definitions): a test reaches the code through `callequal()` in its own file.
        return sorted(paths, key=self._is_test)

    def reason(self, names: Iterable[str]) -> str | None:
        """Why a test that mentions ``names`` may have changed on purpose: the changed
        definition it reaches, or the other files that changed; None when nothing it
        reaches changed."""
        if self._reach is None:
            self._reach = self._compute()
        hits = sorted(n for n in names if n in self._reach)
        if hits:
            direct = [n for n in hits if self._reach[n].startswith(f"`{n}` (")]
            return self._reach[(direct or hits)[0]]
        if self._other:
            shown = ", ".join(self._other[:3]) + (" …" if len(self._other) > 3 else "")
            return f"non-Python files changed too ({shown})"
        return None
