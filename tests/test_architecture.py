"""The shape of the code base, computed from the code: no import circle, no giant module,
no long function in the engine without a stated reason.

Circles are computed over every import — those inside functions too, since a lazy import
hides a circle rather than removing it — except ``if TYPE_CHECKING:`` blocks, which never
run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (("checks", "referee.checks"), ("server/_root", "referee"), ("server", "referee.server"))

MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80
#: a function in checks/ may be longer only with a comment naming why, starting with this
LONG_REASON = "# long:"
#: modules that must stay one file, and why (each says so in its own docstring too)
ONE_FILE_BY_DESIGN = {
    "checks/_sandbox_boot.py": "shipped to the sandboxed child as the one argument of "
    "`python -c`, which can import nothing but the standard library",
}


def _module_name(path: Path) -> tuple[str, bool]:
    rel = path.relative_to(ROOT).with_suffix("")
    for folder, package in PACKAGES:
        prefix = Path(folder)
        if rel.is_relative_to(prefix):
            parts = list(rel.relative_to(prefix).parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            return ".".join([package, *parts]), is_package
    raise AssertionError(path)


def _sources() -> dict[str, tuple[Path, bool]]:
    modules: dict[str, tuple[Path, bool]] = {}
    for folder in ("checks", "server"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            name, is_package = _module_name(path)
            modules[name] = (path, is_package)
    return modules


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [target, *(f"{target}.{alias.name}" for alias in node.names)]


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def import_graph() -> dict[str, set[str]]:
    modules = _sources()
    graph: dict[str, set[str]] = {name: set() for name in modules}

    def resolve(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    for name, (path, is_package) in modules.items():
        stack: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
        while stack:
            node = stack.pop()
            for child in ast.iter_child_nodes(node):
                if _type_checking_only(child):
                    continue
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target in _imported(child, name, is_package):
                        found = resolve(target)
                        # a module importing its own package's __init__ is not a circle
                        if found and found != name and not name.startswith(found + "."):
                            graph[name].add(found)
                else:
                    stack.append(child)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_imports_inside_functions() -> None:
    graph = import_graph()
    # referee.checks.registry imports the rule modules at module level; the CLI imports
    # commands lazily inside functions — both must be edges
    assert any(target.startswith("referee.checks.") for target in graph["referee.checks.registry"])
    assert any(target.startswith("referee.checks") for target in graph["referee.server.cli"])


def test_no_import_circle() -> None:
    found = circles(import_graph())
    assert found == [], "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_no_module_over_the_limit() -> None:
    # the engine, the server, and the benchmark scripts (outside tests, like them)
    paths = [path for path, _ in _sources().values()] + sorted((ROOT / "bench").rglob("*.py"))
    long = {
        str(path.relative_to(ROOT)): count
        for path in paths
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
        and str(path.relative_to(ROOT)) not in ONE_FILE_BY_DESIGN
    }
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines: {long}"


def _long_functions(path: Path, root: Path = ROOT) -> list[str]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length <= MAX_FUNCTION_LINES:
                continue
            body = lines[node.lineno - 1 : node.end_lineno]
            if not any(line.strip().startswith(LONG_REASON) for line in body):
                out.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)")
    return out


def test_no_long_function_in_the_engine_without_a_reason() -> None:
    long = [
        finding
        for path in sorted((ROOT / "checks").rglob("*.py"))
        for finding in _long_functions(path)
    ]
    assert long == [], "\n".join(long)


@pytest.mark.parametrize(
    ("lines", "reason", "expected"), [(81, False, 1), (81, True, 0), (80, False, 0)]
)
def test_the_length_check_counts_lines_and_reasons(
    tmp_path: Path, lines: int, reason: bool, expected: int
) -> None:
    body = ["def f():"]
    if reason:
        body.append("    # long: one table, read top to bottom")
    body += ["    x = 1"] * (lines - len(body))
    source = tmp_path / "m.py"
    source.write_text("\n".join(body) + "\n")
    assert len(_long_functions(source, tmp_path)) == expected
