#!/usr/bin/env python3
"""Material for a by-hand false-positive audit of referee on a real test suite.

Not a test: a script whose output a person reads (docs/benchmarks.md, "L0 false
positives"); each run is appended to bench/results/history-fp-audit.json (or
history-l0-realworld.json with --realworld).

    python bench/fp_audit.py                       # CPython's own test suite
    python bench/fp_audit.py --seed 7 --sample 60 PATH

It runs ``referee check --format json --no-cache --exit-zero DIR`` in the corpus's parent
(DIR: the corpus's name, so referee sees a test directory, as when given a path) and prints

1. findings per rule code and severity;
2. every error-level finding with path:line, message and the source lines around it;
3. a seeded random sample of REF110 (test-without-assertion) warnings, each with the
   test's source;
4. the helper-following measurement: how many tests a naive rule would flag (no
   assertion directly in the test body — a call through an alias such as
   ``eq = self.assertEqual`` does not count — and no doctest, computed with
   ``referee.checks.pymodule.PythonModule``) against how many REF110 flags, with the
   reason each naive-only test was let off (a same-file helper, a helper's name, an
   alias, a nested function, a decorator), and a list of the alias, nested-function and
   decorator let-offs to read;
5. the findings that change when the same files are checked from inside the corpus
   (``cd DIR && referee check .``), where no path part says "test".

The output depends only on the corpus, referee's version and ``--seed``.

Real-world mode, on projects nobody here wrote (fetch them; a shallow clone each):

    python bench/fp_audit.py --realworld /tmp/rw/pytest /tmp/rw/click ...

runs the same command on each project (in its parent, on its name) and prints

1. findings per rule and severity, per project and in all;
2. every error-level finding with the source lines around it, numbered E1, E2, ... for
   a by-hand classification (true defect / intentional / false) in docs/benchmarks.md;
3. a seeded random sample of REF110 warnings across the projects (``--sample``), each
   with the test's source.

``--save DIR`` also writes each project's JSON report to DIR/NAME.json, and
``--baseline DIR`` (reports saved by an earlier run, for example of an older commit put
first on ``PYTHONPATH``) adds a before/after table of the counts per rule and severity.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import _results  # bench/_results.py: each run is appended to its area's history
import _tools  # bench/_tools.py: the scripts run from bench/

if TYPE_CHECKING:
    from referee.checks.pymodule import Function, PythonModule

INSTALL_HINT = "pip install referee"


def find_tool(name: str) -> str:
    return _tools.find_tool(name, "fp_audit", INSTALL_HINT)


def run_referee(cwd: Path, target: str) -> dict:
    argv = [find_tool("referee"), "check", "--format", "json", "--no-cache", "--exit-zero", target]
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"fp_audit: {' '.join(argv)} exited {proc.returncode}\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def heading(title: str) -> None:
    print()
    print("=" * 88)
    print(title)
    print("=" * 88)


_lines_cache: dict[Path, list[str]] = {}


def file_lines(path: Path) -> list[str]:
    if path not in _lines_cache:
        try:
            import tokenize

            with tokenize.open(path) as handle:  # honours coding declarations
                _lines_cache[path] = handle.read().splitlines()
        except (OSError, SyntaxError, UnicodeDecodeError):
            _lines_cache[path] = path.read_bytes().decode("utf-8", "replace").splitlines()
    return _lines_cache[path]


def show_lines(path: Path, first: int, last: int, mark: set[int] | frozenset[int] = frozenset()):
    lines = file_lines(path)
    first, last = max(first, 1), min(last, len(lines))
    for number in range(first, last + 1):
        flag = ">" if number in mark else " "
        print(f"  {flag}{number:6d} | {lines[number - 1]}")


# ------------------------------------------------------------------ the in-process pass


class TestFacts:
    """What the naive rule and referee each say about one test function."""

    __slots__ = ("detail", "end", "line", "name", "path", "patterns", "reason")

    def __init__(self, path: str, line: int, end: int, name: str, reason: str) -> None:
        self.path, self.line, self.end, self.name, self.reason = path, line, end, name, reason
        self.patterns: list[str] = []  # unseen-assertion patterns, for REF110 findings
        self.detail = ""  # for an alias let-off: where the alias is bound


# Names that make a call an assertion (the same test as referee.checks.pymodule's).
_ASSERTING = re.compile(r"^(assert|fail(Unless|If)?$|failure)|^_*assert", re.IGNORECASE)
ALIAS = "alias of an assert method (`eq = self.assertEqual`; `eq(...)`)"
NESTED = "assertion in a function or class nested in the test (a callback)"
DECORATOR = "same-file decorator whose code asserts"


def unseen_assertions(module: PythonModule, fn: Function) -> list[str]:
    """Patterns by which a REF110-flagged test may still assert, that referee does not
    follow. A pattern match is a lead for the reader, not a verdict."""
    source = module.source
    asserting = module.asserting_functions
    found = []
    # 1. `eq = self.assertEqual` ... `eq(a, b)`
    aliases = set()
    stack = [fn.body]
    while stack:
        node = stack.pop()
        if node.type == "assignment":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and right is not None and left.type == "identifier":
                tail = source.node_text(right).rsplit(".", 1)[-1]
                if right.type in ("attribute", "identifier") and _ASSERTING.match(tail):
                    aliases.add(source.node_text(left))
        if node.type not in ("function_definition", "class_definition"):
            stack.extend(node.named_children)
    if aliases & {name for name, _ in fn.calls}:
        found.append(ALIAS)
    # 2. a nested def (or a method of a nested class) that asserts
    for other in module.functions:
        parent = other.parent
        while parent is not None and parent is not fn:
            parent = parent.parent
        if parent is fn and (other.assertions or other.name in asserting):
            found.append(NESTED)
            break
    # 3. a decorator defined in this file with an asserting function inside it
    names = {d.rsplit(".", 1)[-1] for d in fn.decorators}
    for deco in (f for f in module.functions if f.name in names):
        inside = [
            f
            for f in module.functions
            if deco.node.start_byte <= f.node.start_byte < deco.node.end_byte
        ]
        if any(f.assertions or f.name in asserting for f in inside):
            found.append(DECORATOR)
            break
    return found


ALIAS_LET_OFF = "alias of an assert method (eq = self.assertEqual)"
NESTED_LET_OFF = "function nested in the test asserts (callback)"
DECORATOR_LET_OFF = "same-file decorator that asserts"


def alias_names(module: PythonModule) -> dict[str, list[int]]:
    """Names bound to an assert method anywhere in the module (`eq = self.assertEqual`),
    as referee.checks.pymodule collects them, with the byte offsets of the bindings."""
    source, found, stack = module.source, {}, [module.source.tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "assignment":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and right is not None and left.type == "identifier":
                attr = right.child_by_field_name("attribute") if right.type == "attribute" else None
                if attr is not None and _ASSERTING.match(source.node_text(attr)):
                    found.setdefault(source.node_text(left), []).append(node.start_byte)
        stack.extend(node.named_children)
    return found


def alias_called(module: PythonModule, node, aliases: dict[str, list[int]]) -> str | None:
    """The alias an assertion node calls, when it asserts only through an alias."""
    if node.type != "call" or not aliases:
        return None
    callee = node.child_by_field_name("function")
    if callee is None:
        return None
    if callee.type == "attribute":
        callee = callee.child_by_field_name("attribute")
    name = module.source.node_text(callee) if callee is not None else ""
    return name if name in aliases and not _ASSERTING.match(name) else None


def analyse(corpus: Path) -> tuple[int, int, int, list[TestFacts], int]:
    """Walk the corpus as `referee check DIR` does and classify every test function.

    Returns (test files, tests, unreadable test files, facts for each naive-flagged test,
    tests with a direct assertion or doctest)."""
    from referee.checks import runner
    from referee.checks.config import discover
    from referee.checks.pymodule import PythonModule
    from referee.checks.shape.placeholders import placeholder_kind
    from referee.checks.source import SourceFile, Unreadable, decode

    test_files = tests = unreadable = direct = 0
    flagged: list[TestFacts] = []
    here = Path.cwd()
    os.chdir(corpus.parent)  # the same display paths as the JSON report's
    try:
        settings = discover(Path(corpus.name))
        for target in runner.collect([Path(corpus.name)], settings):
            if target.path.suffix not in (".py", ".pyi") or not settings.is_test_file(
                target.relpath
            ):
                continue
            test_files += 1
            try:
                text = decode(target.path.read_bytes(), "python", settings.config.max_file_size)
            except Unreadable:
                unreadable += 1
                continue
            module = PythonModule(SourceFile(target.display, text, "python"), is_test_file=True)
            asserting = module.asserting_functions
            aliases = alias_names(module)
            for fn in module.tests:
                tests += 1
                # The naive rule does not know aliases: `eq(a, b)` after
                # `eq = self.assertEqual` is not an assertion to it.
                own = [n for n in fn.assertions if alias_called(module, n, aliases) is None]
                if own or module.has_doctest(fn):
                    direct += 1
                    continue
                # The naive rule flags this test. Why does referee (not) flag it?
                # The order is the order of the rows in docs/benchmarks.md.
                reason = "flagged by REF110"
                helpers = [n for n, _ in fn.calls if module._asserts_through(n, asserting)]
                if any(n in asserting for n in helpers):
                    reason = "same-file helper that asserts"
                elif helpers:
                    reason = "helper defined elsewhere, name says it checks"
                elif fn.assertions:
                    reason = ALIAS_LET_OFF
                elif module.assertion_nodes(fn):
                    # Left: a same-file decorator that asserts (its node stands for it) or
                    # a function nested in the test that asserts.
                    if any(n.type == "decorator" for n in module.assertion_nodes(fn)):
                        reason = DECORATOR_LET_OFF
                    else:
                        reason = NESTED_LET_OFF
                elif placeholder_kind(module, fn) is not None:
                    reason = "placeholder body (REF101's, not REF110's)"
                name_node = fn.node.child_by_field_name("name") or fn.node
                facts = TestFacts(
                    target.display,
                    name_node.start_point.row + 1,
                    fn.node.end_point.row + 1,
                    fn.name,
                    reason,
                )
                if reason == "flagged by REF110":
                    facts.patterns = unseen_assertions(module, fn)
                elif reason == ALIAS_LET_OFF:
                    # referee takes a name bound to an assert method anywhere in the file;
                    # is every alias this test calls bound inside the test itself?
                    first, last = fn.node.start_byte, fn.node.end_byte
                    called = {alias_called(module, n, aliases) for n in fn.assertions} - {None}
                    inside = all(any(first <= b < last for b in aliases[name]) for name in called)
                    facts.detail = "bound in the test" if inside else "bound elsewhere"
                flagged.append(facts)
    finally:
        os.chdir(here)
    return test_files, tests, unreadable, flagged, direct


# ------------------------------------------------------------------------------ report


def source_fingerprint() -> str:
    return _tools.source_fingerprint()


def where(f: dict) -> str:
    start = f["span"]["start"]
    return f"{f['path']}:{start['line']}:{start['column']}"


# ---------------------------------------------------------------- real-world mode


def realworld(projects: list[Path], args: argparse.Namespace) -> int:
    reports: dict[str, dict] = {}
    for project in projects:
        project = project.resolve()
        if not project.is_dir():
            sys.exit(f"fp_audit: {project} is not a directory")
        reports[project.name] = run_referee(project.parent, project.name)
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / f"{project.name}.json").write_text(json.dumps(reports[project.name]))
    bases = {p.name: p.resolve().parent for p in projects}
    print(f"referee sources {source_fingerprint()}; seed {args.seed}")
    for name, report in reports.items():
        print(
            f"  {name}: {report['summary']['files_checked']} files checked, "
            f"{len(report['findings'])} findings; commit {_head(bases[name] / name)}"
        )

    heading("1. Findings per rule and severity, per project")
    counts = {
        n: Counter((f["code"], f["severity"]) for f in r["findings"]) for n, r in reports.items()
    }
    total: Counter = Counter()
    for c in counts.values():
        total.update(c)
    keys = sorted(total)
    names = list(reports)
    print(
        "  "
        + f"{'rule':8} {'severity':9}"
        + "".join(f"{n[:10]:>11}" for n in names)
        + f"{'all':>8}"
    )
    for key in keys:
        row = "".join(f"{counts[n].get(key, 0):11d}" for n in names)
        print(f"  {key[0]:8} {key[1]:9}{row}{total[key]:8d}")
    errors = sum(n for (code, severity), n in total.items() if severity == "error")
    print(f"  error-level findings in all: {errors}")

    before: Counter = Counter()
    if args.baseline:
        heading(f"1b. Before ({args.baseline}) and after, per rule and severity")
        for name in names:
            saved = args.baseline / f"{name}.json"
            if saved.is_file():
                for f in json.loads(saved.read_text())["findings"]:
                    before[(f["code"], f["severity"])] += 1
            else:
                print(f"  (no baseline for {name})")
        for key in sorted(set(before) | set(total)):
            print(f"  {key[0]:8} {key[1]:9} {before.get(key, 0):7d} -> {total.get(key, 0):7d}")
        was = sum(n for (code, severity), n in before.items() if severity == "error")
        print(f"  error-level findings: {was} -> {errors}")

    heading("2. Every error-level finding")
    number = 0
    for name, report in reports.items():
        for f in report["findings"]:
            if f["severity"] != "error":
                continue
            number += 1
            start, end = f["span"]["start"], f["span"]["end"]
            print(f"\n[E{number}] {where(f)}: {f['code']} {f['message']}")
            show_lines(
                bases[name] / f["path"],
                start["line"] - args.context,
                end["line"] + args.context,
                set(range(start["line"], end["line"] + 1)),
            )

    ref110 = sorted(
        (
            (name, f)
            for name, report in reports.items()
            for f in report["findings"]
            if f["code"] == "REF110"
        ),
        key=lambda nf: (nf[1]["path"], nf[1]["span"]["start"]["line"]),
    )
    size = min(args.sample, len(ref110))
    sample = sorted(
        random.Random(args.seed).sample(ref110, size),
        key=lambda nf: (nf[1]["path"], nf[1]["span"]["start"]["line"]),
    )
    heading(f"3. REF110 sample: {size} of {len(ref110)} (seed {args.seed})")
    for number, (name, f) in enumerate(sample, 1):
        line = f["span"]["start"]["line"]
        print(f"\n[S{number}] {f['path']}:{line}: {f['message']}")
        lines = file_lines(bases[name] / f["path"])
        first = line
        while first > 1 and lines[first - 2].lstrip().startswith("@"):
            first -= 1
        last = line
        indent = len(lines[line - 1]) - len(lines[line - 1].lstrip())
        while last < len(lines) and (
            not lines[last].strip() or len(lines[last]) - len(lines[last].lstrip()) > indent
        ):
            last += 1
        last = min(last, line + args.max_test_lines - 1)
        show_lines(bases[name] / f["path"], first, last, {line})
    _results.record(
        "l0-realworld",
        {
            "projects": {
                name: {
                    "commit": _head(bases[name] / name),
                    "files_checked": report["summary"]["files_checked"],
                    "findings": len(report["findings"]),
                }
                for name, report in reports.items()
            },
            "findings_by_rule": {" ".join(key): n for key, n in sorted(total.items())},
            "before_by_rule": {" ".join(key): n for key, n in sorted(before.items())} or None,
            "error_findings": [
                f"{name}/{where(f)} {f['code']}"
                for name, report in reports.items()
                for f in report["findings"]
                if f["severity"] == "error"
            ],
            "ref110_sample": [
                f"S{i} {name}/{f['path']}:{f['span']['start']['line']}"
                for i, (name, f) in enumerate(sample, 1)
            ],
            "seed": args.seed,
        },
        args.argv,
    )
    return 0


def _head(repo: Path) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", type=Path, help="corpus (default: CPython's test/)")
    parser.add_argument("--seed", type=int, default=2024, help="sampling seed (default 2024)")
    parser.add_argument("--sample", type=int, default=40, help="REF110 sample size (default 40)")
    parser.add_argument("--context", type=int, default=4, help="lines around an error (4)")
    parser.add_argument(
        "--max-test-lines",
        type=int,
        default=60,
        help="print at most this many lines of a sampled test (60)",
    )
    parser.add_argument(
        "--helper-sample",
        type=int,
        default=10,
        help="also show this many tests let off by a helper's name (10)",
    )
    parser.add_argument(
        "--no-path-check",
        dest="path_check",
        action="store_false",
        help="skip section 5 (the same run from inside the corpus, `referee check .`)",
    )
    parser.add_argument(
        "--realworld",
        nargs="+",
        type=Path,
        metavar="PROJECT",
        help="real-world mode: audit these project directories (see above)",
    )
    parser.add_argument("--save", type=Path, help="real-world mode: write each report here")
    parser.add_argument(
        "--baseline", type=Path, help="real-world mode: reports of an earlier run to compare"
    )
    args = parser.parse_args(argv)
    args.argv = argv  # the command line, for the run's history entry
    if args.realworld:
        return realworld(args.realworld, args)
    corpus = (args.path or _tools.default_corpus()).resolve()
    if not corpus.is_dir():
        parser.error(f"{corpus} is not a directory")
    base = corpus.parent  # referee runs here on `corpus.name`; report paths are under it

    report = run_referee(base, corpus.name)
    findings = report["findings"]
    print(f"corpus: {corpus}")
    print(f"command: cd {base} && referee check --format json --no-cache --exit-zero {corpus.name}")
    print(
        f"referee {report['version']} (sources {source_fingerprint()}): "
        f"{report['summary']['files_checked']} files checked, "
        f"{report['summary']['files_skipped']} skipped, {len(findings)} findings; "
        f"seed {args.seed}"
    )
    for skipped in report["skipped"]:
        print(f"  skipped {skipped['path']}: {skipped['reason']}")

    # 1 ----------------------------------------------------------------------------
    heading("1. Findings per rule and severity")
    counts = Counter((f["code"], f["name"], f["severity"]) for f in findings)
    print(f"  {'code':7} {'name':28} {'severity':9} {'count':>6}")
    for (code, name, severity), n in sorted(counts.items()):
        print(f"  {code:7} {name:28} {severity:9} {n:6d}")
    print(f"  {'':7} {'total':28} {'':9} {len(findings):6d}")

    # 2 ----------------------------------------------------------------------------
    errors = [f for f in findings if f["severity"] == "error"]
    heading(f"2. Every error-level finding ({len(errors)})")
    for number, f in enumerate(errors, 1):
        start, end = f["span"]["start"], f["span"]["end"]
        print(f"\n[E{number}] {where(f)}: {f['code']} {f['message']}")
        show_lines(
            base / f["path"],
            start["line"] - args.context,
            end["line"] + args.context,
            set(range(start["line"], end["line"] + 1)),
        )

    # 3 ----------------------------------------------------------------------------
    ref110 = sorted(
        (f for f in findings if f["code"] == "REF110"),
        key=lambda f: (f["path"], f["span"]["start"]["line"]),
    )
    size = min(args.sample, len(ref110))
    sample = sorted(
        random.Random(args.seed).sample(ref110, size),
        key=lambda f: (f["path"], f["span"]["start"]["line"]),
    )
    heading(f"3. REF110 sample: {size} of {len(ref110)} (seed {args.seed})")
    test_files, tests, unreadable, naive, direct = analyse(corpus)
    ends = {(t.path, t.line): t.end for t in naive}
    for number, f in enumerate(sample, 1):
        line = f["span"]["start"]["line"]
        print(f"\n[S{number}] {f['path']}:{line}: {f['message']}")
        end = ends.get((f["path"], line), line)
        # Show the decorators above the def, and the whole test up to the limit.
        first = line
        lines = file_lines(base / f["path"])
        while first > 1 and lines[first - 2].lstrip().startswith("@"):
            first -= 1
        last = min(end, line + args.max_test_lines - 1)
        show_lines(base / f["path"], first, last, {line})
        if last < end:
            print(f"  ... ({end - last} more lines)")

    # 4 ----------------------------------------------------------------------------
    heading("4. Helper-following: a naive rule against REF110")
    reasons = Counter(t.reason for t in naive)
    referee_count = len(ref110)
    print(f"  test files: {test_files} ({unreadable} unreadable); test functions: {tests}")
    print(f"  with an assertion or doctest in their own body: {direct}")
    print(f"  naive rule (no assertion in the body, no doctest) flags: {len(naive)}")
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"    {reason:48} {n:6d}")
    print(f"  referee REF110 flags (JSON report): {referee_count}")
    let_off = (
        reasons["same-file helper that asserts"]
        + reasons["helper defined elsewhere, name says it checks"]
        + reasons[ALIAS_LET_OFF]
        + reasons[NESTED_LET_OFF]
        + reasons[DECORATOR_LET_OFF]
    )
    if naive:
        print(
            f"  removed by following helpers, aliases, callbacks and decorators: {let_off} "
            f"({let_off / len(naive):.1%} of the naive rule's findings)"
        )
    if reasons["flagged by REF110"] != referee_count:
        print(
            f"  NOTE: the in-process pass predicts {reasons['flagged by REF110']} REF110 "
            f"findings, the report has {referee_count} (suppression comments, or drift)"
        )

    # The let-offs that follow aliases, callbacks and decorators, for the reader to check.
    alias_off = [t for t in naive if t.reason == ALIAS_LET_OFF]
    where_bound = Counter(t.detail for t in alias_off)
    print(
        f"\n  let off by an alias: {len(alias_off)} "
        f"({', '.join(f'{n} {d}' for d, n in sorted(where_bound.items()))})"
    )
    for t in alias_off:
        if t.detail != "bound in the test":
            print(f"    alias bound outside the test: {t.path}:{t.line}: {t.name}")
    for label in (NESTED_LET_OFF, DECORATOR_LET_OFF):
        let = sorted((t for t in naive if t.reason == label), key=lambda t: (t.path, t.line))
        print(f"  let off by a {label}: {len(let)}")
        for t in let:
            print(f"    {t.path}:{t.line}: {t.name}")

    # Among the REF110 findings: tests that still assert by a pattern referee misses.
    predicted = [t for t in naive if t.reason == "flagged by REF110"]
    hits = [t for t in predicted if t.patterns]
    print(
        f"\n  REF110 findings whose test may assert by a pattern referee does not follow: "
        f"{len(hits)} of {len(predicted)} (pattern matches, not hand-checked)"
    )
    for pattern in (ALIAS, NESTED, DECORATOR):
        n = sum(pattern in t.patterns for t in predicted)
        print(f"    {pattern:70} {n:5d}")
    in_sample = {(f["path"], f["span"]["start"]["line"]): i for i, f in enumerate(sample, 1)}
    marks = [
        f"S{in_sample[(t.path, t.line)]}: {', '.join(p.split(' (')[0] for p in t.patterns)}"
        for t in hits
        if (t.path, t.line) in in_sample
    ]
    if marks:
        print(
            "    in the sample above: "
            + "; ".join(sorted(marks, key=lambda m: int(m[1:].split(":")[0])))
        )

    named = sorted(
        (t for t in naive if t.reason == "helper defined elsewhere, name says it checks"),
        key=lambda t: (t.path, t.line),
    )
    if args.helper_sample and named:
        picked = sorted(
            random.Random(args.seed).sample(named, min(args.helper_sample, len(named))),
            key=lambda t: (t.path, t.line),
        )
        print(f"\n  sample of {len(picked)} tests let off by a helper's name alone:")
        for t in picked:
            print(f"\n  [H] {t.path}:{t.line}: {t.name}")
            show_lines(base / t.path, t.line, min(t.end, t.line + 15), {t.line})

    # 5 ----------------------------------------------------------------------------
    if args.path_check:
        heading("5. Path dependence: the same files checked as `cd CORPUS && referee check .`")
        inside = run_referee(corpus, ".")["findings"]
        prefix = corpus.name + "/"

        def key(f: dict, strip: str) -> tuple:
            start = f["span"]["start"]
            path = f["path"].removeprefix(strip)
            return (path, start["line"], start["column"], f["code"], f["severity"])

        outer = {key(f, prefix): f for f in findings}
        inner = {key(f, ""): f for f in inside}
        only_inner = sorted(set(inner) - set(outer))
        only_outer = sorted(set(outer) - set(inner))
        print(f"  findings: {len(findings)} given the path, {len(inside)} from inside")
        print(f"  only from inside: {len(only_inner)}; only given the path: {len(only_outer)}")
        for label, keys, table in (
            ("only from inside", only_inner, inner),
            ("only given the path", only_outer, outer),
        ):
            by = Counter((k[3], k[4]) for k in keys)
            for (code, severity), n in sorted(by.items()):
                print(f"    {label:20} {code} {severity:8} {n:5d}")
            for k in keys:
                if k[4] == "error":
                    f = table[k]
                    print(f"      {label}: {k[0]}:{k[1]}: {f['code']} {f['message']}")
    _results.record(
        "fp-audit",
        {
            "corpus": str(corpus),
            "referee": report["version"],
            "files_checked": report["summary"]["files_checked"],
            "files_skipped": report["summary"]["files_skipped"],
            "findings": len(findings),
            "findings_by_rule": {" ".join(key): n for key, n in sorted(counts.items())},
            "error_findings": [f"{where(f)} {f['code']}" for f in errors],
            "ref110_sample": [
                f"S{i} {f['path']}:{f['span']['start']['line']}" for i, f in enumerate(sample, 1)
            ],
            "seed": args.seed,
            "naive_rule": len(naive),
            "naive_rule_reasons": dict(reasons),
            "let_off_by_following": let_off,
        },
        argv,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
