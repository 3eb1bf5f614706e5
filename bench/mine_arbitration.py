#!/usr/bin/env python3
"""Mine arbitration cases from real projects' git history: red tests whose right blame
the history itself tells.

Not a test: a script that writes a corpus for ``bench/arbitration.py --corpus DIR``.

    git clone -q /work/.mirror/pallets+click/repo /tmp/hist-bench/click   # full history
    python bench/mine_arbitration.py /tmp/hist-bench/click /tmp/hist-bench/attrs \\
        --out /tmp/arb-corpus --commits 400 --jobs 2
    # a saved run's cases again (its commits only, however old):
    python bench/mine_arbitration.py /tmp/hist-bench/* --out /tmp/arb-corpus \
        --commits-from bench/results/arbitration-real.json --jobs 2

Two kinds of case, from the newest ``--commits`` non-merge commits of each repository:

- ``real-bug`` (expected SOURCE_WRONG): a commit that changes both source (non-test
  ``.py``) and tests, where a test function it adds or changes passes at the commit and
  fails (pytest's FAILED, not a collection error) with the commit's tests on the parent's
  source. The case is the repository at the commit with every non-test file the commit
  changed put back as the parent had it (the changelog too: it would tell the fix).
- ``wrong-test`` (expected TEST_WRONG): a test-only commit whose only change to a test
  function is a literal inside an assertion, where that test fails at the parent and passes
  at the commit. The case is the parent's tree: the old, wrong expected value.

Each case is DIR/<repo>-<commit>-<kind>/ with ``case.json`` and ``tree/`` (the project).
Pytest runs with ``--python`` (default: this repository's .venv), each bounded by
``--pytest-timeout``; a project whose dependencies are missing just yields no case, and
``DIR/mining-report.json`` counts why candidate commits were dropped. The mined trees are
fetched code: never commit them.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent

# Projects whose history other benchmarks are judged on: never mined here.
HELD_OUT = frozenset(
    {"youtube-dl", "thefuck", "ansible", "tqdm", "scrapy", "arrow", "humanize", "dateutil",
     "python-dateutil"}
)  # fmt: skip

TEST_DIRS = frozenset({"tests", "test", "testing"})
NOT_SOURCE_DIRS = frozenset({"docs", "doc", "examples", "benchmarks", "scripts", ".github"})


# ------------------------------------------------------------------ paths and git


def is_test_path(path: str) -> bool:
    """A test file: under tests/ (test/, testing/), test_*.py, *_test.py, conftest.py."""
    parts = PurePosixPath(path).parts
    name = parts[-1]
    return (
        any(p in TEST_DIRS for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


def is_source_path(path: str) -> bool:
    """Project source: a non-test .py outside docs/, examples/... and not setup.py."""
    parts = PurePosixPath(path).parts
    return (
        path.endswith(".py")
        and not is_test_path(path)
        and parts[0] not in NOT_SOURCE_DIRS
        and parts[-1] not in {"setup.py", "noxfile.py", "conf.py"}
    )


def git(repo: Path, *args: str, binary: bool = False) -> str | bytes:
    out = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, check=True, timeout=120
    ).stdout
    return out if binary else out.decode("utf-8", "replace")


def export_tree(repo: Path, commit: str, dest: Path) -> None:
    """The commit's tree, written out under ``dest`` (git archive: no .git)."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", commit],
        capture_output=True, check=True, timeout=120,
    ).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True, timeout=120)


def file_at(repo: Path, commit: str, path: str) -> bytes | None:
    try:
        data = git(repo, "show", f"{commit}:{path}", binary=True)
    except subprocess.CalledProcessError:
        return None
    assert isinstance(data, bytes)
    return data


def changes(repo: Path, parent: str, commit: str) -> list[tuple[str, str]]:
    """(status letter, path) of every file the commit changes, renames as delete + add."""
    out = git(repo, "diff", "--no-renames", "--name-status", parent, commit)
    assert isinstance(out, str)
    return [
        (line.split("\t", 1)[0][0], line.split("\t", 1)[1])
        for line in out.splitlines()
        if "\t" in line
    ]


# ------------------------------------------------------------------ test functions


def test_functions(text: str) -> dict[str, ast.AST]:
    """Module-level ``test_*`` functions and classes' ``test_*`` methods, by
    the node id's tail (``test_x`` or ``TestY::test_x``)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    found: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(
            "test"
        ):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):  # Test*, or a unittest.TestCase of any name
            for item in node.body:
                if isinstance(
                    item, (ast.FunctionDef, ast.AsyncFunctionDef)
                ) and item.name.startswith("test"):
                    found[f"{node.name}::{item.name}"] = item
    return found


def changed_tests(old: str, new: str) -> list[str]:
    """Tails of the test functions ``new`` adds or changes (the AST, not the layout)."""
    before, after = test_functions(old), test_functions(new)
    return [
        name for name, node in after.items()
        if name not in before or ast.dump(before[name]) != ast.dump(node)
    ]  # fmt: skip


class _Mask(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        return ast.Constant(value="<literal>")


def _in_assertion(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """``node`` lies in an ``assert`` statement, a call of an ``assert*`` method, or the
    value assigned to an ``expected`` (``want``) variable."""
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name.lower().startswith("assert"):
                return True
        if isinstance(node, ast.Assign):  # expected = ...; assert f(x) == expected
            return any(
                isinstance(t, ast.Name) and re.search(r"expect|want", t.id, re.IGNORECASE)
                for t in node.targets
            )
        if isinstance(node, ast.stmt):
            return False
    return False


def literal_only_change(old: ast.AST, new: ast.AST) -> list[tuple[int, str, str]]:
    """When ``new`` differs from ``old`` only in literals, all inside assertions: the
    changed literals as (line in old, old value, new value); else []."""
    if ast.dump(_Mask().visit(copy.deepcopy(old))) != ast.dump(_Mask().visit(copy.deepcopy(new))):
        return []
    a, b = list(ast.walk(old)), list(ast.walk(new))
    parents = {child: parent for parent in a for child in ast.iter_child_nodes(parent)}
    changed = []
    for x, y in zip(a, b, strict=True):
        if not (isinstance(x, ast.Constant) and isinstance(y, ast.Constant)):
            continue
        if type(x.value) is not type(y.value) or x.value != y.value:
            if not _in_assertion(x, parents):
                return []
            changed.append((x.lineno, repr(x.value)[:200], repr(y.value)[:200]))
    return changed


# ------------------------------------------------------------------ pytest


def pytest_env(tree: Path) -> dict[str, str]:
    """The project importable from its tree (src/ layout or not), not from site-packages."""
    paths = [str(tree / "src")] if (tree / "src").is_dir() else []
    env = {k: v for k, v in os.environ.items() if k not in {"PYTEST_ADDOPTS", "PYTHONPATH"}}
    env.update(
        PYTHONPATH=os.pathsep.join([*paths, str(tree)]),
        PYTHONDONTWRITEBYTECODE="1",
        NO_COLOR="1",
        # as referee's sandbox runs pytest: no plugin of this venv (pytest-asyncio's
        # warning, under a project's filterwarnings = error, stops every run)
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        COLUMNS="400",  # pytest cuts the short summary's messages at the terminal's width
    )
    return env


@dataclass
class PytestRun:
    rc: int | None  # None: timed out
    passed: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)  # node id -> pytest's short message
    errors: list[str] = field(default_factory=list)
    output: str = ""

    def why(self) -> str:
        """Why nothing ran, in a few words, for the drop counts."""
        if self.rc is None:
            return "pytest timed out"
        text = self.output
        if re.search(r"ModuleNotFoundError|No module named", text):
            module = re.search(r"No module named '([\w.]+)'", text)
            return f"missing module {module.group(1).split('.')[0]}" if module else "missing module"
        if "ImportError" in text:
            return "import error"
        if self.rc == 4 or "unrecognized arguments" in text or "INTERNALERROR" in text:
            return "pytest usage/config error"
        if self.rc == 0 and re.search(r"\d+ skipped", text):
            return "test skipped here"  # gated on the Python version, a tool not installed
        if self.rc == 5 or "not found" in text:
            return "test not collected"
        if self.errors:
            return "collection/fixture error"
        return f"pytest exit {self.rc}"


_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED) (\S+)(?: - (.*))?$")


def run_pytest(python: str, tree: Path, nodes: list[str], timeout: float) -> PytestRun:
    command = [
        python, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "--tb=line",
        "-o", "console_output_style=classic", *nodes,
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, cwd=tree, env=pytest_env(tree), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        raw, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return PytestRun(None)
    text = raw.decode("utf-8", "replace")
    run = PytestRun(proc.returncode, output=text[-4000:])
    for line in text.splitlines():
        match = _SUMMARY.match(line.strip())
        if not match:
            continue
        kind, node, message = match.groups()
        if kind == "PASSED":
            run.passed.add(node)
        elif kind == "FAILED":
            run.failed[node] = (message or "")[:300]
        elif kind == "ERROR":
            run.errors.append(node)
    return run


# A test that fails only because the name or parameter it calls is new in the commit
# tests a feature, not a bug: nothing on the source side is wrong to arbitrate.
NEW_API = re.compile(
    r"has no attribute|ImportError|ModuleNotFoundError|NameError|cannot import name"
    r"|unexpected keyword argument|takes \d+ positional arguments? but|missing \d+ required"
)


def _family(node: str) -> str:
    return node.split("[", 1)[0]


# ------------------------------------------------------------------ mining


@dataclass
class Case:
    id: str
    repo: str
    commit: str
    parent: str
    kind: str  # real-bug | wrong-test
    expected: str  # SOURCE_WRONG | TEST_WRONG
    node: str  # the node id arbitrated
    failing: list[str]  # every node of the commit's changed tests that fails in the case
    failure: str  # pytest's one-line message for ``node``
    subject: str  # the commit's first line
    test_files: list[str]
    source_files: list[str]  # the non-test .py files the commit changes (put back)
    test_functions: list[str]
    literals: list[dict[str, object]] = field(default_factory=list)  # wrong-test only


class Miner:
    def __init__(self, repo: Path, out: Path, args: argparse.Namespace) -> None:
        self.repo, self.out, self.args = repo, out, args
        self.name = repo.resolve().name
        self.drops: Counter[str] = Counter()
        self.cases: list[Case] = []
        self.lock = threading.Lock()
        self.candidates: Counter[str] = Counter()
        self.stopped = False

    def full(self, kind: str) -> bool:
        if kind not in self.args.kind:
            return True
        with self.lock:
            return sum(c.kind == kind for c in self.cases) >= self.args.max_cases

    def drop(self, kind: str, reason: str) -> None:
        with self.lock:
            self.drops[f"{kind}: {reason}"] += 1

    def commits(self) -> list[tuple[str, str, str]]:
        # --commit: the whole history (a known case may be older than the newest N)
        newest = [] if self.args.only else [f"-n{self.args.commits}"]
        out = git(
            self.repo,
            "log",
            *newest,
            "--no-merges",
            "--format=%H%x00%P%x00%s",
            "HEAD",
        )
        assert isinstance(out, str)
        found = []
        only = self.args.only
        for line in out.splitlines():
            commit, parents, subject = line.split("\x00", 2)
            if only and not any(commit.startswith(c) for c in only):
                continue
            if parents and " " not in parents:
                found.append((commit, parents, subject))
        return found

    def plan(
        self, commit: str, parent: str
    ) -> tuple[str, dict[str, list[str]], list[tuple[str, str]], dict] | None:
        """The kind of case the commit might give, its candidate test functions by file,
        its changes, and (wrong-test) the changed literals; None when it gives none."""
        changed = changes(self.repo, parent, commit)
        source = [p for s, p in changed if is_source_path(p)]
        tests = [(s, p) for s, p in changed if p.endswith(".py") and is_test_path(p) and s in "AM"]
        if not tests:
            return None
        kind = "real-bug" if source else "wrong-test"  # wrong-test: the source unchanged
        wanted: dict[str, list[str]] = {}
        literals: dict[str, list] = {}
        for status, path in tests:
            new = (file_at(self.repo, commit, path) or b"").decode("utf-8", "replace")
            old = (
                (file_at(self.repo, parent, path) or b"").decode("utf-8", "replace")
                if status == "M"
                else ""
            )
            if kind == "real-bug":
                names = changed_tests(old, new)
            else:
                before, after = test_functions(old), test_functions(new)
                names = []
                for name in changed_tests(old, new):
                    if name not in before:
                        continue
                    found = literal_only_change(before[name], after[name])
                    if found:
                        names.append(name)
                        literals[f"{path}::{name}"] = found
            if names:
                wanted[path] = names
        if not wanted:
            return None
        return kind, wanted, changed, literals

    def mine_commit(self, commit: str, parent: str, subject: str) -> None:
        try:
            planned = self.plan(commit, parent)
        except (subprocess.SubprocessError, UnicodeError) as exc:
            self.drop("?", f"git: {type(exc).__name__}")
            return
        if planned is None:
            return
        kind, wanted, changed, literals = planned
        if self.full(kind):
            return
        with self.lock:
            self.candidates[kind] += 1
        nodes = [f"{path}::{name}" for path, names in wanted.items() for name in names]
        if len(nodes) > self.args.max_tests:
            nodes = nodes[: self.args.max_tests]
        case_id = f"{self.name}-{commit[:10]}-{kind}"
        work = Path(tempfile.mkdtemp(prefix=f"mine-{case_id}-", dir=self.args.scratch))
        try:
            self._build(case_id, kind, commit, parent, subject, nodes, changed, literals, work)
        except (subprocess.SubprocessError, OSError) as exc:
            self.drop(kind, f"build: {type(exc).__name__}")
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _build(
        self, case_id, kind, commit, parent, subject, nodes, changed, literals, work
    ) -> None:
        timeout = self.args.pytest_timeout
        python = self.args.python
        fixed, broken = work / "fixed", work / "tree"
        export_tree(self.repo, commit, fixed)
        at_commit = run_pytest(python, fixed, nodes, timeout)
        if not at_commit.passed:
            self.drop(kind, f"nothing passes at the commit ({at_commit.why()})")
            return
        if kind == "real-bug":
            shutil.copytree(fixed, broken, symlinks=True)
            for status, path in changed:
                if is_test_path(path):
                    continue
                target = broken / path
                if status == "A":
                    target.unlink(missing_ok=True)
                    continue
                data = file_at(self.repo, parent, path)
                if data is None:
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        else:
            export_tree(self.repo, parent, broken)
        passing = sorted({_family(n) for n in at_commit.passed})
        at_parent = run_pytest(python, broken, passing, timeout)
        failing = sorted(n for n in at_parent.failed if n in at_commit.passed)
        new_api = [n for n in failing if NEW_API.search(at_parent.failed[n])]
        if new_api and len(new_api) == len(failing):
            self.drop(kind, "fails only as a new API would (missing name or parameter)")
            return
        failing = [n for n in failing if n not in new_api]
        if not failing:
            if at_parent.rc is None:
                self.drop(kind, "pytest timed out on the broken side")
            elif at_parent.errors or (at_parent.rc not in (0, 1)):
                self.drop(kind, f"broken side does not run the test ({at_parent.why()})")
            else:
                self.drop(kind, "passes on the broken side")
            return
        with self.lock:
            if sum(c.kind == kind for c in self.cases) >= self.args.max_cases:
                return
            node = failing[0]
            test_files = sorted({n.split("::", 1)[0] for n in nodes})
            case = Case(
                id=case_id, repo=self.name, commit=commit, parent=parent, kind=kind,
                expected="SOURCE_WRONG" if kind == "real-bug" else "TEST_WRONG",
                node=node, failing=failing, failure=at_parent.failed[node], subject=subject,
                test_files=test_files,
                source_files=sorted(p for _, p in changed if is_source_path(p)),
                test_functions=nodes,
                literals=[
                    {"test": k, "line": line, "old": old, "new": new}
                    for k, found in literals.items() for line, old, new in found
                ],
            )  # fmt: skip
            self.cases.append(case)
        dest = self.out / case_id
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        shutil.move(str(broken), dest / "tree")
        (dest / "case.json").write_text(json.dumps(asdict(case), indent=1) + "\n", encoding="utf-8")
        print(f"  case {case_id}: {node}  ({case.failure[:80]})", file=sys.stderr)

    def run(self) -> None:
        started = time.monotonic()
        commits = self.commits()
        print(f"{self.name}: {len(commits)} commits", file=sys.stderr)

        def one(item: tuple[str, str, str]) -> None:
            if time.monotonic() - started > self.args.repo_seconds:
                return
            if self.full("real-bug") and self.full("wrong-test"):
                return
            self.mine_commit(*item)

        with ThreadPoolExecutor(max_workers=self.args.jobs) as pool:
            list(pool.map(one, commits))
        self.stopped = time.monotonic() - started > self.args.repo_seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "repos", nargs="+", type=Path, metavar="PATH", help="git clones, full history"
    )
    parser.add_argument("--out", type=Path, required=True, help="the corpus directory")
    parser.add_argument("--commits", type=int, default=400, help="newest non-merge commits walked")
    parser.add_argument("--jobs", type=int, default=1, help="commits mined at once")
    parser.add_argument(
        "--kind",
        action="append",
        choices=["real-bug", "wrong-test"],
        help="mine only this kind (repeatable; default both)",
    )
    parser.add_argument("--max-cases", type=int, default=8, help="cases of each kind per repo")
    parser.add_argument("--max-tests", type=int, default=20, help="test functions run per commit")
    parser.add_argument("--pytest-timeout", type=float, default=60, help="seconds per pytest run")
    parser.add_argument("--repo-seconds", type=float, default=1200, help="mining time per repo")
    default_python = ROOT / ".venv" / "bin" / "python"
    parser.add_argument(
        "--python",
        default=str(default_python) if default_python.exists() else sys.executable,
        help="interpreter that runs pytest (default: this repository's .venv)",
    )
    parser.add_argument(
        "--commit",
        dest="only",
        action="append",
        default=[],
        metavar="SHA",
        help="mine only this commit (a prefix will do; repeatable): rebuilds known cases",
    )
    parser.add_argument(
        "--commits-from",
        type=Path,
        metavar="JSON",
        help="mine only the commits of a saved run (bench/results/arbitration-real.json): "
        "its corpus again, after /tmp lost it",
    )
    args = parser.parse_args(argv)
    args.kind = args.kind or ["real-bug", "wrong-test"]
    if args.commits_from is not None:
        try:
            saved = json.loads(args.commits_from.read_text(encoding="utf-8"))
            args.only += [case["commit"] for case in saved["cases"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            parser.error(f"--commits-from {args.commits_from}: not a saved run ({exc})")
    args.out.mkdir(parents=True, exist_ok=True)
    report_path = args.out / "mining-report.json"
    report = json.loads(report_path.read_text()) if report_path.exists() else {}
    with tempfile.TemporaryDirectory(prefix="referee-mine-") as scratch:
        args.scratch = scratch
        for repo in args.repos:
            name = repo.resolve().name
            if name.lower() in HELD_OUT:
                print(f"{name}: held out, not mined", file=sys.stderr)
                continue
            if not (repo / ".git").exists():
                print(f"{repo}: not a git clone with a work tree", file=sys.stderr)
                continue
            miner = Miner(repo, args.out, args)
            miner.run()
            kinds = Counter(c.kind for c in miner.cases)
            head = str(git(repo, "rev-parse", "HEAD")).strip()
            for kind in args.kind:  # a later run for one kind leaves the other's counts
                report.setdefault(name, {})[kind] = {
                    "commits": args.commits,
                    "head": head,
                    "stopped_early": miner.stopped,  # --repo-seconds ran out
                    "candidates": miner.candidates[kind],
                    "cases": kinds[kind],
                    "dropped": {
                        why.split(": ", 1)[1]: n
                        for why, n in miner.drops.most_common()
                        if why.startswith(f"{kind}: ")
                    },
                }
            report_path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
            stopped = " (stopped: --repo-seconds ran out)" if miner.stopped else ""
            print(
                f"{name}: {dict(kinds)}; dropped {dict(miner.drops.most_common())}{stopped}",
                file=sys.stderr,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
