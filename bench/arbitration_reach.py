#!/usr/bin/env python3
"""How much of a real test suite arbitration can take apart: every assertion of every test
in the projects given, put through the isolation step (``isolate``) as if it had failed.

    python bench/arbitration_reach.py ~/src/click ~/src/attrs            # a table
    python bench/arbitration_reach.py ~/src/click --json reach.json --examples 3

What it measures is the syntax alone: the call under test, the expected value, the
arguments — read without running anything. So it is a lower bound of what a failing run
reaches. A run adds what the recorder sees (a loop's current case, a local that reads back
as a literal, the comparison pytest reports) and checks what reading cannot: that the
callee is a Python function of the project, that it is not a class. A parametrized test is
read at its first case.

Which calls are the project's a run learns from where each name resolved to; here it is
read from the test module's imports: a call through a name imported from a module of the
project's own tree (a package or module at its root or under ``src/``) is the project's.
That is what decides an assertion with a call on each side (``list(interleave("ab",
"cd")) == list("acbd")``: the project's side is the call under test). ``--no-imports``
reads without it, as this bench did before 2026-12-06.

Each refusal is counted under its reason with the names taken out (`…`), most frequent
first; ``--examples N`` prints N assertions of each.

The peer is the suite itself: the share of its assertions a person could arbitrate by hand
from the assertion's text is every one of them.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import json
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import _results  # noqa: E402

from referee.checks.arbitration.ast_names import dotted_name  # noqa: E402
from referee.checks.arbitration.isolate import isolate  # noqa: E402
from referee.checks.arbitration.sites import NotIsolated, TestRef  # noqa: E402
from referee.checks.nodes import excerpt  # noqa: E402
from referee.checks.pymodule import PythonModule  # noqa: E402
from referee.checks.source import SourceFile  # noqa: E402

_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "build", "dist", ".tox", ".nox"}


def test_files(project: Path) -> list[Path]:
    found = []
    for path in sorted(project.rglob("*.py")):
        if _SKIP_DIRS & set(path.relative_to(project).parts):
            continue
        if path.name.startswith("test_") or path.name.endswith("_test.py"):
            found.append(path)
    return found


def reason_key(reason: str) -> str:
    """A refusal's reason with its particulars taken out, to count like reasons together."""
    text = reason.removeprefix("cannot isolate the call under test: ")
    text = re.sub(r"`[^`]*`", "`…`", text)
    text = re.sub(r"\bline \d+\b", "line N", text)
    text = re.sub(r"\b(test_\w+|\w+\.\w+)\b", "…", text)
    return excerpt(text.split(" — ")[0].split(" (")[0].strip(), 110)


def _indices(source: SourceFile, fn) -> dict[str, int]:
    """The first case of each parametrize of the test: every argument name at index 0."""
    names: dict[str, int] = {}
    node = fn.node.parent
    if node is None or node.type != "decorated_definition":
        return names
    for child in node.named_children:
        if child.type != "decorator" or "parametrize" not in source.node_text(child):
            continue
        try:
            call = ast.parse(source.node_text(child).lstrip("@")).body[0].value  # type: ignore[attr-defined]
            first = call.args[0] if call.args else call.keywords[0].value
            value = ast.literal_eval(first)
        except (SyntaxError, ValueError, IndexError, AttributeError, TypeError):
            continue
        parts = value.split(",") if isinstance(value, str) else list(value)
        names.update({str(p).strip(): 0 for p in parts if str(p).strip()})
    return names


def _project_modules(project: Path) -> frozenset[str]:
    """The top-level modules and packages of the project's own tree: at its root or under
    ``src/`` (a directory holding ``__init__.py``, or a ``.py`` file)."""
    found = set()
    for base in (project, project / "src"):
        if not base.is_dir():
            continue
        for entry in base.iterdir():
            if entry.name.startswith(".") or entry.name in _SKIP_DIRS:
                continue
            if entry.is_dir() and (entry / "__init__.py").is_file():
                found.add(entry.name)
            elif entry.suffix == ".py" and entry.stem != "setup":
                found.add(entry.stem)
    return frozenset(found)


def project_callees(text: str, modules: frozenset[str]) -> frozenset[str]:
    """The dotted names the test module calls through a name it imports from one of the
    project's ``modules`` (``from toolz import curry``: ``curry``; ``import more_itertools
    as mi``: ``mi.chunked``): the calls a run would resolve to the project's files."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return frozenset()
    bound, elsewhere, star = set(), set(), False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            ours = node.level == 0 and (node.module or "").split(".")[0] in modules
            star |= ours and any(a.name == "*" for a in node.names)
            names = {a.asname or a.name for a in node.names if a.name != "*"}
            (bound if ours else elsewhere).update(names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                (bound if top in modules else elsewhere).add(alias.asname or top)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            elsewhere.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            elsewhere.add(node.id)
    calls = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (name := dotted_name(node.func)) is not None:
            head = name.split(".")[0]
            # ``from funcy.seqs import *``: a name neither built in, nor bound here, nor
            # imported from elsewhere is one of the project's
            if head in bound or (star and head not in elsewhere and not hasattr(builtins, head)):
                calls.add(name)
    return frozenset(calls)


def read_project(
    project: Path, examples: dict[str, list[str]], limit: int, imports: bool = True
) -> Counter[str]:
    tally: Counter[str] = Counter()
    modules = _project_modules(project)
    for path in test_files(project):
        rel = path.relative_to(project).as_posix()
        try:
            source = SourceFile(rel, path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue
        callees = project_callees(source.text, modules) if imports else None
        module = PythonModule(source, is_test_file=True)
        for fn in module.functions:
            if not fn.is_test or fn.is_nested:
                continue
            middle = f"{fn.class_.name}::" if fn.class_ is not None else ""
            test = TestRef.parse(f"{rel}::{middle}{fn.name}")
            indices = _indices(source, fn)
            for assertion in fn.assertions:
                line = assertion.start_point.row + 1
                try:
                    isolated = isolate(source, test, line, indices, None, callees)
                except NotIsolated as exc:
                    key = reason_key(str(exc))
                except Exception as exc:  # a crash is a finding of its own
                    key = f"CRASH {type(exc).__name__}: {excerpt(str(exc), 60)}"
                else:
                    key = "isolated: " + (", ".join(isolated.forms) or "plain")
                tally[key] += 1
                if len(examples[key]) < limit:
                    examples[key].append(f"{rel}:{line}")
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("projects", nargs="+", type=Path, help="project checkouts to read")
    parser.add_argument("--json", type=Path, help="write the counts here")
    parser.add_argument("--examples", type=int, default=0, help="locations shown per reason")
    parser.add_argument("--top", type=int, default=25, help="reasons shown (default 25)")
    parser.add_argument(
        "--no-imports",
        action="store_true",
        help="do not read the project's callees from the test modules' imports (syntax alone)",
    )
    args = parser.parse_args(argv)
    per_project: dict[str, Counter[str]] = {}
    examples: dict[str, list[str]] = defaultdict(list)
    started = time.monotonic()
    for project in args.projects:
        if not project.is_dir():
            parser.error(f"{project} is not a directory")
        print(f"reading {project} ...", file=sys.stderr, flush=True)
        per_project[project.name] = read_project(
            project, examples, args.examples, imports=not args.no_imports
        )
    total: Counter[str] = sum(per_project.values(), Counter())
    count = sum(total.values())
    isolated = sum(n for key, n in total.items() if key.startswith("isolated"))
    print("\n| project | assertions | taken apart | share |\n|---|---:|---:|---:|")
    for name, tally in per_project.items():
        n = sum(tally.values())
        ok = sum(v for k, v in tally.items() if k.startswith("isolated"))
        print(f"| {name} | {n} | {ok} | {ok / n:.1%} |" if n else f"| {name} | 0 | 0 | — |")
    share = isolated / count if count else 0.0
    print(f"| **all** | {count} | {isolated} | {share:.1%} |")
    print("\n| reason (refused) or forms (taken apart) | assertions | share |\n|---|---:|---:|")
    for key, n in total.most_common(args.top):
        print(f"| {key} | {n} | {n / count:.1%} |")
        for where in examples.get(key, []):
            print(f"|   e.g. {where} | | |")
    seconds = round(time.monotonic() - started, 1)
    print(f"\n{count} assertions in {len(per_project)} projects, read in {seconds} s")
    figures = {
        "assertions": count,
        "isolated": isolated,
        "projects": {k: dict(v) for k, v in per_project.items()},
        "seconds": seconds,
    }
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    _results.record("arbitration-reach", figures, argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
