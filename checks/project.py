"""One view of the project: what each module defines, asserts, imports and subclasses.

Several findings cannot be decided from one file: a test that calls a helper imported
from ``helpers.py`` or requests a fixture from a ``conftest.py`` that asserts, a base
class whose ``raise NotImplementedError`` methods a subclass in another module overrides.
The index is plain data — a :class:`ModuleFacts` per module, made by :func:`summarize`
from the module's text alone — and :meth:`ProjectIndex.view` answers, for one file, the
few facts its rules may ask (a :class:`FileView`). The engine takes the view as an input
like the settings: index in, findings out. The CLI builds the index from the files it
checks (cached with the results), the language server from the workspace's files.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from tree_sitter import Node

from referee.checks.pymodule import PythonModule
from referee.checks.source import SourceFile


@dataclass(frozen=True)
class ClassFacts:
    name: str
    bases: tuple[str, ...]  # as written, less subscripts and keywords: `Base`, `mod.Base`
    methods: frozenset[str]
    asserting: frozenset[str]  # the methods that assert


@dataclass(frozen=True)
class ModuleFacts:
    """What one module offers the others, and what it takes from them."""

    relpath: str
    asserting: frozenset[str]  # top-level functions that assert (directly or locally)
    fixtures: frozenset[str]  # top-level pytest fixtures
    classes: tuple[ClassFacts, ...]
    # (local name, module as written, name there); a plain ``import a.b as m`` is
    # (m, "a.b", ""). Relative modules are resolved against this module's package.
    imports: tuple[tuple[str, str, str], ...]
    aliases: tuple[tuple[str, str], ...] = ()  # top-level ``Alias = Base`` / ``Base[int]``
    requested: frozenset[str] = frozenset()  # parameter names of its tests: fixtures
    called: frozenset[str] = frozenset()  # names its functions call (`f(...)`, `x.f(...)`)

    @property
    def dotted(self) -> str:
        return dotted_name(self.relpath)


@dataclass(frozen=True)
class FileView:
    """The project-wide facts one file's rules may ask; part of its cache key."""

    # Names usable in this module (imported, or fixtures pytest hands its tests) that
    # refer to functions elsewhere which assert.
    asserting: frozenset[str] = frozenset()
    # (class defined here, method) pairs that a subclass in another module defines.
    overridden: frozenset[tuple[str, str]] = frozenset()
    # What the pytest configuration that governs the file says of it (read at the I/O
    # edge: ``Settings.pytest_view``): whether pytest collects it as a test module
    # (None: no pytest configuration, the `test-files` globs decide), and whether every
    # xfail is strict.
    collected: bool | None = None
    xfail_strict: bool = False


EMPTY_VIEW = FileView()


def dotted_name(relpath: str) -> str:
    """``src/pkg/mod.py`` → ``src.pkg.mod``; ``pkg/__init__.py`` → ``pkg``."""
    pure = PurePosixPath(relpath)
    parts = list(pure.parent.parts) if pure.parent != PurePosixPath(".") else []
    if pure.stem != "__init__":
        parts.append(pure.stem)
    return ".".join(p for p in parts if p not in ("", ".", ".."))


def base_name(base: str) -> str:
    """The class a base expression names: ``Base[int]`` → ``Base``, ``mod.Base`` →
    ``Base``."""
    return base.split("[", 1)[0].rsplit(".", 1)[-1].strip()


def _text(source: SourceFile, node: Node | None) -> str:
    return source.node_text(node) if node is not None else ""


def _imports(source: SourceFile, package: str) -> list[tuple[str, str, str]]:
    found: list[tuple[str, str, str]] = []
    for stmt in source.tree.root_node.named_children:
        if stmt.type == "import_from_statement":
            module_node = stmt.child_by_field_name("module_name")
            module = _text(source, module_node)
            if module.startswith("."):
                dots = len(module) - len(module.lstrip("."))
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (dots - 1)] if dots > 1 else parts
                module = ".".join([*parts, module.lstrip(".")]).strip(".")
            for child in stmt.children_by_field_name("name"):
                name, local = _imported_name(source, child)
                found.append((local, module, name))
        elif stmt.type == "import_statement":
            for child in stmt.children_by_field_name("name"):
                module, local = _imported_name(source, child)
                found.append((local, module, ""))
    return found


def _imported_name(source: SourceFile, child: Node) -> tuple[str, str]:
    """(what is imported, the name it is bound to) of one name of an import statement
    (``a.b``, ``x as y``)."""
    if child.type == "aliased_import":
        name = _text(source, child.child_by_field_name("name"))
        return name, _text(source, child.child_by_field_name("alias"))
    name = _text(source, child)
    return name, name


def module_aliases(source: SourceFile) -> dict[str, str]:
    """Top-level ``Name = other`` / ``Name = Base[int]`` / ``Name = mod.Base``: name → the
    expression (a class alias, or any other binding; callers look up what they need)."""
    found: dict[str, str] = {}
    for stmt in source.tree.root_node.named_children:
        if stmt.type != "expression_statement" or not stmt.named_children:
            continue
        assignment = stmt.named_children[0]
        if assignment.type != "assignment":
            continue
        left, right = (
            assignment.child_by_field_name("left"),
            assignment.child_by_field_name("right"),
        )
        if left is not None and right is not None and left.type == "identifier":
            found[source.node_text(left)] = source.node_text(right)
    return found


def summarize(source: SourceFile, relpath: str, module: PythonModule | None = None) -> ModuleFacts:
    """The index entry of one Python module, from its text alone."""
    module = module or PythonModule(source, is_test_file=False)
    asserting = module.asserting_functions
    top = [fn for fn in module.functions if fn.parent is None and fn.class_ is None]
    classes = []
    for cls in module.classes:
        if cls.nested:
            continue
        methods = [fn for fn in module.functions if fn.class_ is cls]
        classes.append(
            ClassFacts(
                name=cls.name,
                bases=tuple(b.split("[", 1)[0].strip() for b in cls.bases),
                methods=frozenset(fn.name for fn in methods),
                asserting=frozenset(
                    fn.name for fn in methods if fn.assertions or fn.name in asserting
                ),
            )
        )
    package = dotted_name(relpath)
    if PurePosixPath(relpath).stem != "__init__":
        package = package.rpartition(".")[0]
    aliases = module_aliases(source)
    return ModuleFacts(
        relpath=relpath,
        asserting=frozenset(fn.name for fn in top if fn.name in asserting),
        fixtures=frozenset(fn.name for fn in top if fn.is_fixture),
        classes=tuple(classes),
        imports=tuple(_imports(source, package)),
        requested=frozenset(
            name for fn in module.functions if fn.name.startswith("test") for name in fn.parameters
        ),
        called=frozenset(name for fn in module.functions for name, _ in fn.calls),
        aliases=tuple(
            (name, value.split("[", 1)[0].strip())
            for name, value in aliases.items()
            if value.split("[", 1)[0].replace(".", "").replace("_", "").isalnum()
        ),
    )


@dataclass
class ProjectIndex:
    """Every indexed module's facts, by relpath, and the questions rules ask of them."""

    modules: dict[str, ModuleFacts] = field(default_factory=dict)

    @classmethod
    def of(cls, facts: Iterable[ModuleFacts]) -> ProjectIndex:
        return cls({f.relpath: f for f in facts})

    def update(self, facts: ModuleFacts) -> None:
        """Replace one module's entry (an edit in the editor)."""
        self.modules[facts.relpath] = facts
        self._forget()

    def remove(self, relpath: str) -> None:
        self.modules.pop(relpath, None)
        self._forget()

    def _forget(self) -> None:
        """Drop the tables derived from the modules (they are rebuilt on demand)."""
        for table in ("_by_dotted", "_subclasses", "_imported_names"):
            self.__dict__.pop(table, None)

    # ------------------------------------------------------------------ lookups

    def _dotted(self) -> dict[str, list[ModuleFacts]]:
        table = self.__dict__.get("_by_dotted")
        if table is None:
            table = {}
            for facts in self.modules.values():
                parts = facts.dotted.split(".")
                # `src.pkg.mod` answers to `pkg.mod` and `mod` too (src layouts, sys.path
                # entries such as `testing/`).
                for i in range(len(parts)):
                    table.setdefault(".".join(parts[i:]), []).append(facts)
            self.__dict__["_by_dotted"] = table
        return table

    def resolve(self, module: str, importer: str) -> ModuleFacts | None:
        """The indexed module an import names, preferring the importer's neighbours."""
        candidates = self._dotted().get(module, [])
        if not candidates:
            return None
        here = PurePosixPath(importer).parent
        return min(
            candidates,
            key=lambda f: (not PurePosixPath(f.relpath).is_relative_to(here), len(f.relpath)),
        )

    def _conftests(self, relpath: str) -> list[ModuleFacts]:
        """The conftest.py files pytest loads for a module: in its directory and above."""
        found = []
        directory = PurePosixPath(relpath).parent
        while True:
            name = "conftest.py" if str(directory) == "." else f"{directory}/conftest.py"
            if name in self.modules and name != relpath:
                found.append(self.modules[name])
            if str(directory) in (".", "/", ""):
                return found
            directory = directory.parent

    def _class_asserting(self, facts: ModuleFacts, name: str, seen: set[str]) -> set[str]:
        """The asserting methods of class ``name`` as seen from ``facts``, with its bases'."""
        key = f"{facts.relpath}:{name}"
        if key in seen:
            return set()
        seen.add(key)
        name = dict(facts.aliases).get(name, name)
        for cls in facts.classes:
            if cls.name == base_name(name):
                found = set(cls.asserting)
                for base in cls.bases:
                    found |= self._class_asserting(facts, base, seen)
                return found
        target = self._imported(facts, base_name(name))
        if target is not None:
            return self._class_asserting(target[0], target[1], seen)
        return set()

    def _imported(self, facts: ModuleFacts, local: str) -> tuple[ModuleFacts, str] | None:
        for name, module, original in facts.imports:
            if name == local and original:
                found = self.resolve(module, facts.relpath)
                if found is not None:
                    return found, original
        return None

    def _subclass_table(self) -> dict[str, list[tuple[ModuleFacts, ClassFacts]]]:
        table = self.__dict__.get("_subclasses")
        if table is None:
            table = {}
            for facts in self.modules.values():
                aliases = dict(facts.aliases)
                # `from .sansio import App as BaseApp`: `BaseApp` means `App`
                renamed = {local: name for local, _, name in facts.imports if name}
                for cls in facts.classes:
                    for base in cls.bases:
                        resolved = base_name(aliases.get(base, base))
                        resolved = renamed.get(resolved, resolved)
                        table.setdefault(resolved, []).append((facts, cls))
            self.__dict__["_subclasses"] = table
        return table

    def _refers_to(self, facts: ModuleFacts, name: str) -> bool:
        """Whether a module can mean another module's class ``name``: it imports the
        name, or names it through a module it imports."""
        table = self.__dict__.setdefault("_imported_names", {})
        names = table.get(facts.relpath)
        if names is None:
            names = table[facts.relpath] = (
                frozenset(local for local, _, original in facts.imports if original),
                any(not original for _, _, original in facts.imports),
            )
        return (
            names[1]
            or name in names[0]
            or any(original == name for _, _, original in facts.imports)
        )

    # ------------------------------------------------------------------ the view

    def view(self, relpath: str) -> FileView:
        """What the rules of module ``relpath`` may ask of the rest of the project."""
        facts = self.modules.get(relpath)
        if facts is None:
            return EMPTY_VIEW
        asserting: set[str] = set()
        for local, module, original in facts.imports:
            target = self.resolve(module, relpath)
            if target is None or target.relpath == relpath:
                continue
            if original:
                if original in target.asserting:
                    asserting.add(local)
            else:  # `import helpers`: `helpers.compare(...)` is a call to `compare`
                asserting |= target.asserting
        for conftest in self._conftests(relpath):
            # Only the fixtures its tests request: a view names what the file depends on.
            asserting |= conftest.fixtures & conftest.asserting & facts.requested
        for cls in facts.classes:
            for base in cls.bases:
                resolved = dict(facts.aliases).get(base, base)
                target = self._imported(facts, base_name(resolved))
                if target is not None:
                    asserting |= self._class_asserting(target[0], target[1], set())
        # Only what the module uses: a view names what the file's findings depend on.
        return FileView(
            asserting=frozenset(asserting & (facts.called | facts.requested)),
            overridden=frozenset(self._overridden(facts)),
        )

    def _overridden(self, facts: ModuleFacts) -> Iterable[tuple[str, str]]:
        """(class here, method) that a subclass in another module (or a subclass of a
        subclass, anywhere) defines. Subclasses are found by the name of their base; one
        in another module counts when it imports that name or names it through a module
        (``mod.Base``)."""
        table = self._subclass_table()
        for cls in facts.classes:
            methods = set(cls.methods)
            if not methods:
                continue
            seen: set[tuple[str, str]] = set()
            todo = [(facts, cls.name)]
            while todo and methods:
                owner, name = todo.pop()
                for sub_facts, sub in table.get(name, ()):
                    key = (sub_facts.relpath, sub.name)
                    if key in seen or sub is cls:
                        continue
                    if sub_facts is not owner and not self._refers_to(sub_facts, name):
                        continue
                    seen.add(key)
                    if sub_facts is not facts:
                        for method in methods & sub.methods:
                            yield cls.name, method
                        methods -= sub.methods
                    todo.append((sub_facts, sub.name))
