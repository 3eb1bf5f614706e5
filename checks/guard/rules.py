"""The anti-gaming guard (L1, REF300–REF332): a test that asserted something at the
baseline (git HEAD, or ``--base``) may not quietly assert less now.

Each rule compares facts (checks/guard/facts.py), never text, so reformatting, moving
and renaming are not flagged. An expected value may change only with a certificate from
arbitration; a certified change is reported as information.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import operator
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from tree_sitter import Node

from referee.checks.guard import codes, fitted, pytestconfig
from referee.checks.guard.compare import (
    Check,
    changed_columns,
    checks_of,
    compare_checks,
    is_value,
    row_label,
    rows_of,
)
from referee.checks.guard.context import GuardContext
from referee.checks.guard.facts import (
    Assertion,
    Relaxation,
    TestFacts,
    canonical,
    marker_key,
    module_relaxations,
    squash,
    squash_lines,
)
from referee.checks.guard.fitted import TestWords
from referee.checks.guard.live import Baseline, CurrentFacts, FunctionText, baseline
from referee.checks.guard.normal import (
    callee,
    is_constant,
    one_line,
    parse_expression,
    statement_key,
    unparse,
)
from referee.checks.ledger import normalized_text_hash
from referee.checks.models import Certificate, Location, Severity, Span
from referee.checks.rule import Context, Violation


def fingerprint_key(facts: TestFacts) -> str:
    return "|".join(sorted(f"{s}{o}{e}" for s, o, e in facts.fingerprint))


def elsewhere_keys(facts: TestFacts) -> list[str]:
    keys = [f"body:{facts.body_hash}"]
    if facts.fingerprint:
        keys.append(f"asserts:{fingerprint_key(facts)}")
    keys.extend(f"assert:{a.key}" for a in facts.assertions)
    keys.extend(f"assert:{c.key}" for c in checks_of(facts) if c.row is not None)
    return keys


@dataclass(frozen=True)
class _Found:
    code: str
    line: int  # 1-based line in the current file
    message: str
    severity: Severity | None = None


def _span(line: int) -> Span:
    location = Location(line=max(line, 1), column=1)
    return Span(start=location, end=location)


def _baseline(ctx: Context) -> Baseline | None:
    """The file's baseline and what the guard derives from it, computed once per text."""
    guard = ctx.guard
    if guard is None or guard.baseline is None:
        return None
    return baseline(ctx.source.path, ctx.relpath, ctx.source.kind, guard.baseline)


def _current(ctx: Context) -> CurrentFacts:
    """The current text's facts: kept between checks of an open document."""
    store = ctx.store if ctx.store is not None else ctx.memo
    current = store.get("guard-current")
    if current is None:
        current = store["guard-current"] = CurrentFacts()
    return current  # type: ignore[return-value]


def _functions(ctx: Context) -> list[FunctionText]:
    """Every function of the file (nested ones and methods included), in file order."""
    return _current(ctx).functions(ctx.source, ctx.relpath, ctx.memo.get("chunks"))  # type: ignore[arg-type]


def _facts(ctx: Context) -> tuple[dict[str, TestFacts], dict[str, TestFacts]]:
    """(baseline, current) facts of the file's tests, computed once per file."""
    cached = ctx.memo.get("guard-facts")
    if cached is None:
        base = _baseline(ctx)
        guard = ctx.guard
        planned = guard.current_tests.get(ctx.relpath) if guard is not None else None
        if planned is not None and planned[0] == ctx.source.text:
            now = dict(planned[1])  # read by the plan from the same text
        else:
            now = _current(ctx).tests(ctx.source, ctx.relpath, ctx.memo.get("chunks"))  # type: ignore[arg-type]
        cached = (base.tests if base is not None else {}, now)
        ctx.memo["guard-facts"] = cached
    return cached  # type: ignore[return-value]


def _where(guard: GuardContext, facts: TestFacts, line: int | None = None) -> str:
    """Where something was at the base, in words: ``line 6 at HEAD`` (``HEAD:6`` read as
    git's ``REV:PATH``, and a value followed by it as another value)."""
    return f"line {line or facts.line} at {guard.base}"


def _compare(ctx: Context) -> list[_Found]:
    cached = ctx.memo.get("guard")
    if cached is not None:
        return cached  # type: ignore[return-value]
    guard = ctx.guard
    store = ctx.store
    # The same text against the same baseline, checked again (a save, a new setting).
    key = (ctx.source.text, ctx.relpath, ctx.source.kind, ctx.is_test_file)
    last = store.get("guard-compared") if store is not None else None
    if last is not None and last[0] is guard and last[1] == key:  # type: ignore[index]
        ctx.memo["guard"] = last[2]  # type: ignore[index]
        return last[2]  # type: ignore[index]
    found: list[_Found] = []
    if guard is not None and ctx.source.kind == "python" and ctx.is_test_file:
        base, current = _facts(ctx)
        present: set[str] | None = None
        # A test's findings, kept while its facts on both sides are the same objects
        # (the facts of a test whose text did not change are reused, see live.py).
        compared: dict[str, Any] = (store or {}).get("guard-tests", {})  # type: ignore[assignment]
        now: dict[str, Any] = {}
        inherited = _inherited_classes(ctx)
        for test_id, before in base.items():
            if not before.collected and _class_of(test_id) not in inherited:
                continue
            after = current.get(test_id)
            if after is not None and (after.collected or _class_of(test_id) in inherited):
                known = compared.get(test_id)
                if known is None or not all(map(operator.is_, known[:3], (guard, before, after))):
                    known = (guard, before, after, _compare_test(guard, before, after))
                now[test_id] = known
                found.extend(known[3])
            else:
                if present is None:
                    present = {
                        k for f in current.values() if f.collected for k in elsewhere_keys(f)
                    }
                found.extend(_missing_test(guard, before, after, base, current, present))
        if store is not None:
            store["guard-tests"] = now
        found.extend(_module_relaxations(ctx))
        found.extend(_fixtures_changed(ctx, current))
    ctx.memo["guard"] = found
    if store is not None:
        store["guard-compared"] = (guard, key, found)
    return found


_CLASS_BASES = re.compile(r"^[ \t]*class\s+(\w+)\s*\(([^)]*)\)\s*:", re.MULTILINE)


def _inherited_classes(ctx: Context) -> frozenset[str]:
    """Classes whose tests pytest runs through a collected subclass in the same module
    (``class TestVariable(VariableSubclassobjects)``): a mixin's test methods are tests.
    Read at the baseline and now."""
    base = _baseline(ctx)
    found: set[str] = set()
    for text in (ctx.source.text, base.source.text if base is not None else ""):
        for name, bases in _CLASS_BASES.findall(text):
            if name.startswith("Test"):
                found.update(b.strip().rsplit(".", 1)[-1] for b in bases.split(","))
    return frozenset(found)


def _class_of(test_id: str) -> str | None:
    parts = test_id.split("::")
    return parts[1] if len(parts) == 3 else None


def _judge(
    guard: GuardContext, tests: tuple[TestFacts, ...], code: str, line: int, message: str
) -> _Found:
    """A weakening of a check: an error, unless (in the default mode) the code the test
    exercises changed in the same diff: then a warning that names what changed."""
    if guard.strict or guard.impact is None:
        return _Found(code, line, message)
    names: set[str] = set()
    for facts in tests:
        names |= facts.names
    reason = guard.impact.reason(names)
    if reason is None:
        return _Found(code, line, message)
    return _Found(
        code,
        line,
        f"{message}; changed together with the code it tests ({reason}): an intended "
        "change? (an error in agent mode)",
        Severity.WARNING,
    )


def _relaxed(guard: GuardContext, code: str, line: int, message: str) -> _Found:
    """A skip or xfail that applies under a condition: a warning a reviewer reads (the
    condition quoted), an error in agent mode."""
    return _Found(code, line, message, None if guard.strict else Severity.WARNING)


def _missing_test(
    guard: GuardContext,
    before: TestFacts,
    after: TestFacts | None,
    base: dict[str, TestFacts],
    current: dict[str, TestFacts],
    present: set[str],
) -> list[_Found]:
    """A baseline test whose id no longer names a collected test here."""
    available = present | set(guard.elsewhere)
    if f"body:{before.body_hash}" in available or (
        before.fingerprint and f"asserts:{fingerprint_key(before)}" in available
    ):
        return []  # renamed or moved, assertions intact
    live = [c for c in checks_of(before, guard.fixtures) if c.assertion.silenced is None]
    if live and all(
        f"assert:{c.key}" in available or guard.counts_now.get(c.key, 0) > 0 for c in live
    ):
        return []  # split into several tests, merged into one, or parametrized
    moved = guard.by_name.get(before.name)
    if after is None and moved is not None and moved.id != before.id:
        # Moved to another file and edited there: compare with it, located there.
        where = moved.id.split("::", 1)[0]
        return [
            _Found(f.code, 1, f"{f.message} (the test now lives in {where}:{f.line})", f.severity)
            for f in _compare_test(guard, before, moved)
        ]
    renamed = (
        after
        if after is not None
        else next(
            (f for f in current.values() if not f.collected and f.body_hash == before.body_hash),
            None,
        )
    )
    if renamed is not None:
        return [
            _Found(
                codes.RENAMED_OUT_OF_COLLECTION,
                renamed.line,
                f"test `{before.name}` ({_where(guard, before)}) is now `{renamed.name}`, "
                "which pytest does not collect: it no longer runs",
            )
        ]
    counterpart = _counterpart(guard, before, live, base, current)
    if counterpart is not None:
        here = counterpart.id.split("::", 1)[0]
        where = f"`{counterpart.name}`" + (
            f" in {here}" if here != before.id.split("::", 1)[0] else ""
        )
        return [
            replace(f, message=f"{f.message} (the test is now {where})")
            for f in _compare_test(guard, before, counterpart)
        ]
    if (
        live
        and all(squash_lines(c.assertion.text) in guard.test_text for c in live if c.row is None)
        and all(c.row is None for c in live)
    ):
        return []  # the same checks, written the same way, in a test file not changed
    if not live:
        return [
            _relaxed(
                guard,
                codes.TEST_REMOVED,
                1,
                f"test `{before.name}` ({_where(guard, before)}) was removed; it had no "
                "assertion (it checked that what it runs does not raise)",
            )
        ]
    missing = [c for c in live if f"assert:{c.key}" not in available]
    shown = ", ".join(f"`{one_line(_check_text(c))}`" for c in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return [
        _judge(
            guard,
            (before,),
            codes.TEST_REMOVED,
            1,
            f"test `{before.name}` ({_where(guard, before)}) was removed; "
            f"{len(missing)} of its {len(live)} check(s) are made by no test now: {shown}{more}",
        )
    ]


def _check_text(check: Check) -> str:
    """A check as written, or (for one parametrized case) as it reads for that case."""
    if check.row is None:
        return check.assertion.text
    if check.op in ("call", "raise", "truthy", "falsy"):
        return check.subject
    return f"{check.subject} {check.op} {check.expected}"


def _counterpart(
    guard: GuardContext,
    before: TestFacts,
    live: list[Check],
    base: dict[str, TestFacts],
    current: dict[str, TestFacts],
) -> TestFacts | None:
    """The new test a removed one most likely became (renamed and edited): the one that
    makes most of its checks, or calls most of what it called."""
    keys = {c.key for c in live}
    callees = {callee(c.subject) for c in live} - {None}
    candidates = [f for i, f in current.items() if f.collected and i not in base]
    candidates += [f for i, f in guard.new_tests.items() if i not in current]
    best, score = None, 0.0
    for facts in candidates:
        theirs = checks_of(facts, guard.fixtures)
        shared = len(keys & {c.key for c in theirs})
        called = callees & {callee(c.subject) for c in theirs}
        value = shared + (0.5 * len(called) / max(1, len(callees)) if called else 0)
        if facts.name == before.name:
            value += 1
        if value > score:
            best, score = facts, value
    if best is None or (score < 1 and not (callees and score >= 0.5)):
        return None
    return best


def _compare_test(guard: GuardContext, before: TestFacts, after: TestFacts) -> list[_Found]:
    found: list[_Found] = []
    name = f"`{before.name}`"
    tests = (before, after)

    def still_made(key: tuple[str, str, str | None]) -> bool:
        was = guard.counts_before.get(key, 0)
        return was > 0 and guard.counts_now.get(key, 0) >= was

    changes = compare_checks(before, after, guard.fixtures, still_made)
    gained = [c.old for c in changes if c.code == "gained"]
    removed = [c for c in changes if c.code == codes.ASSERTION_REMOVED]
    # A test rewritten against another API (a private helper replaced by the public
    # one): it no longer calls something it called, and makes at least half as many new
    # checks as it lost. Its removals are warnings in the default mode,
    # errors in agent mode.
    stopped = sorted(before.calls - after.calls)
    rewritten = bool(removed) and bool(stopped) and bool(gained) and 2 * len(gained) >= len(removed)
    rows_lost = _rows_lost(guard, before, after)
    changed_rows: dict[int | None, tuple[Check, Check]] = {}
    reported_rows: set[int] = set()
    fed_lines: set[int] = set()
    for change in changes:
        old, new = change.old, change.new
        if change.code == codes.FAILURE_SWALLOWED and new is not None:
            found.append(_swallowed(guard, name, before, old.assertion, new.assertion))
        elif change.code == "raises" and new is not None:
            found.extend(_compare_raises(guard, tests, name, before, old.assertion, new.assertion))
        elif change.code == "approx" and new is not None:
            found.extend(_compare_approx(guard, tests, name, before, old.assertion, new.assertion))
        elif change.code in (codes.COMPARISON_WEAKENED, "inverted") and new is not None:
            how = (
                f"was weakened to `{one_line(_check_text(new))}`: `{old.op}` -> `{new.op}`"
                if change.code == codes.COMPARISON_WEAKENED
                else f"was inverted to `{one_line(_check_text(new))}`: it now asserts the opposite"
            )
            found.append(
                _judge(
                    guard,
                    tests,
                    codes.COMPARISON_WEAKENED,
                    new.assertion.line,
                    f"in {name}, `{one_line(_check_text(old))}` "
                    f"({_where(guard, before, old.assertion.line)}) {how}",
                )
            )
        elif change.code == "normalised" and new is not None:
            found.append(
                _relaxed(
                    guard,
                    codes.COMPARISON_WEAKENED,
                    new.assertion.line,
                    f"in {name}, the value `{one_line(old.subject, 60)}` "
                    f"({_where(guard, before, old.assertion.line)}) is now compared as "
                    f"`{one_line(new.subject, 60)}`: normalised until it matches?",
                )
            )
        elif change.code == "call-changed" and new is not None:
            if old.row is not None and old.row in reported_rows:
                continue
            message = (
                f"in {name}, {old.assertion.kind} `{one_line(old.assertion.text, 100)}` "
                f"({_where(guard, before, old.assertion.line)}) now checks something "
                f"else: `{one_line(new.assertion.text, 100)}`, without a certificate"
            )
            # as a removed check would be: a warning in a test rewritten against another
            # API (the default mode), else an error unless its code changed too
            if rewritten:
                found.append(
                    _relaxed(guard, codes.EXPECTED_VALUE_CHANGED, new.assertion.line, message)
                )
            else:
                found.append(
                    _judge(guard, tests, codes.EXPECTED_VALUE_CHANGED, new.assertion.line, message)
                )
        elif change.code == "conditioned" and new is not None:
            found.append(
                _relaxed(
                    guard,
                    codes.FAILURE_SWALLOWED,
                    new.assertion.line,
                    f"in {name}, `{one_line(new.assertion.text)}` "
                    f"({_where(guard, before, old.assertion.line)}) is now checked only when "
                    f"`{one_line(new.assertion.condition or '', 80)}`",
                )
            )
        elif change.code == "inputs" and new is not None:
            if new.assertion.line in fed_lines:
                continue
            fed_lines.add(new.assertion.line)
            found.extend(_inputs_changed(guard, before, after, old, new))
        elif change.code == codes.EXPECTED_VALUE_CHANGED and new is not None:
            if not is_value(old.expected, before) or not (
                is_value(new.expected, after) or is_constant(old.expected or "")
            ):
                # An expected side computed by the test: not a value to compare, but a
                # check that compares with something else now.
                found.append(
                    _relaxed(
                        guard,
                        codes.EXPECTED_VALUE_CHANGED,
                        new.assertion.line,
                        f"in {name}, `{one_line(old.subject)}` was compared with "
                        f"`{_value(old.expected)}` ({_where(guard, before, old.assertion.line)})"
                        f" and is now compared with `{_value(new.expected)}`"
                        + _input_note(after, new),
                    )
                )
                continue
            if old.row is not None:
                if old.row not in changed_rows:
                    changed_rows[old.row] = (old, new)
                continue
            found.extend(_value_changed(guard, tests, before, after.id, old, new))
        elif change.code in (codes.ASSERTION_REMOVED, codes.PARAMETRIZE_CASES_REMOVED):
            if old.row is not None and old.row in rows_lost:
                if old.row not in reported_rows:
                    reported_rows.add(old.row)
                    found.append(
                        _judge(
                            guard,
                            tests,
                            codes.PARAMETRIZE_CASES_REMOVED,
                            after.line,
                            f"in {name}, the parametrized case "
                            f"{one_line(row_label(before, old.row, guard.fixtures), 120)} "
                            f"({guard.base}) was removed",
                        )
                    )
                continue
            case = row_label(before, old.row, guard.fixtures)
            in_case = f" (case {one_line(case, 60)})" if case else ""
            message = (
                f"in {name}{in_case}, {old.assertion.kind} `{one_line(_check_text(old))}` "
                f"({_where(guard, before, old.assertion.line)}) was removed"
            )
            if rewritten and not guard.strict and change.code == codes.ASSERTION_REMOVED:
                found.append(
                    _Found(
                        codes.ASSERTION_REMOVED,
                        after.line,
                        f"{message}; the test no longer calls `{stopped[0]}` and makes "
                        f"{len(gained)} new check(s) instead, e.g. "
                        f"`{one_line(_check_text(gained[0]), 60)}`: rewritten? (an error in "
                        "agent mode)",
                        Severity.WARNING,
                    )
                )
                continue
            found.append(_judge(guard, tests, codes.ASSERTION_REMOVED, after.line, message))
    for old, new in changed_rows.values():
        found.extend(_case_changed(guard, tests, before, after, old, new))
    for row in sorted(rows_lost - reported_rows - set(changed_rows)):
        found.append(
            _judge(
                guard,
                tests,
                codes.PARAMETRIZE_CASES_REMOVED,
                after.line,
                f"in {name}, the parametrized case "
                f"{one_line(row_label(before, row, guard.fixtures), 120)} ({guard.base}) "
                "was removed",
            )
        )
    if not _expandable(guard, before, after):
        found.extend(_table_changed(guard, tests, before, after))
    found.extend(_marks_changed(guard, name, before, after))
    for patched in after.patched:
        if patched not in before.patched and patched in after.calls:
            found.append(
                _Found(
                    codes.TESTED_FUNCTION_MONKEYPATCHED,
                    after.line,
                    f"{name} now monkeypatches `{patched}`, which it also calls: "
                    "the test may be checking its own stand-in",
                )
            )
    return found


def _input_note(after: TestFacts, new: Check) -> str:
    """When the new expected side is a name the test feeds the code with: say so."""
    expected = new.expected or ""
    if not expected.isidentifier():
        return ""
    reads = any(
        expected in re.findall(r"[A-Za-z_]\w*", written) and not squashed.startswith(expected + "=")
        for squashed, written in new.assertion.feeds
    )
    if reads or expected in after.params:
        return ", which the test also feeds the code: it passes when the code returns its input"
    return ""


def _inputs_changed(
    guard: GuardContext,
    before: TestFacts,
    after: TestFacts,
    old: Check,
    new: Check,
) -> list[_Found]:
    """The same assertion, fed other data: a statement before it that binds what it reads
    (or changes an object it reads) changed. A value the assertion compares with is
    REF302; anything else it reads (the input, a pytester source) is REF314."""
    was = {statement_key(written): written for _, written in old.assertion.feeds}
    now = {statement_key(written): written for _, written in new.assertion.feeds}
    gone = [written for key, written in was.items() if key not in now]
    added = [written for key, written in now.items() if key not in was]
    if not gone and not added:  # only the locals' names differ
        return []
    compared = _compared_names(new)
    for text in gone:
        bound = _assigned(text)
        if bound is None or bound[0] not in compared:
            continue
        counterpart = next((a for a in map(_assigned, added) if a and a[0] == bound[0]), None)
        if counterpart is None:
            continue
        if bound[1] == counterpart[1]:
            return []  # the same value, spelled another way
        if is_value(bound[1], before) and is_value(counterpart[1], after):
            return [
                _relaxed(
                    guard,
                    codes.EXPECTED_VALUE_CHANGED,
                    new.assertion.line,
                    f"in `{before.name}`, the value `{bound[0]}` that "
                    f"`{one_line(new.assertion.text, 60)}` compares with changed from "
                    f"{_value(bound[1])} to {_value(counterpart[1])} without a certificate "
                    f"({_where(guard, before, old.assertion.line)})",
                )
            ]
    if gone and added:
        what = f"`{one_line(gone[0], 70)}` is now `{one_line(added[0], 70)}`"
    elif gone:
        what = f"`{one_line(gone[0], 70)}` is gone"
    else:
        what = f"`{one_line(added[0], 70)}` is new before it"
    return [
        _relaxed(
            guard,
            codes.TEST_INPUT_CHANGED,
            new.assertion.line,
            f"in `{before.name}`, what `{one_line(new.assertion.text, 60)}` "
            f"({_where(guard, before, old.assertion.line)}) is fed changed: {what}",
        )
    ]


def _assigned(text: str) -> tuple[str, str] | None:
    """(name, value) of a statement ``name = value``."""
    try:
        tree = ast.parse(text.strip())
    except (SyntaxError, ValueError, RecursionError):
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assign):
        return None
    assign = tree.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Name):
        return None
    return assign.targets[0].id, canonical(ast.unparse(assign.value))


def _compared_names(check: Check) -> set[str]:
    """The names an assertion compares with: its expected side's, or a checking call's
    direct arguments."""
    if check.op == "call":
        node = parse_expression(check.assertion.subject)
        if isinstance(node, ast.Call):
            values = [*node.args, *(k.value for k in node.keywords)]
            return {v.id for v in values if isinstance(v, ast.Name)}
        return set()
    if check.expected is None:
        return set()
    node = parse_expression(check.expected)
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} if node is not None else set()


def _expandable(guard: GuardContext, before: TestFacts, after: TestFacts) -> bool:
    """Whether both sides' parametrize tables were read row by row (or neither side has
    one): then the checks carry the cases, and the tables need no comparison of their own."""
    old_names, old_rows = rows_of(before, guard.fixtures)
    new_names, new_rows = rows_of(after, guard.fixtures)
    if not before.parametrize_values and not old_names:
        return True
    return old_rows is not None and (new_rows is not None or not new_names)


def _rows_lost(guard: GuardContext, before: TestFacts, after: TestFacts) -> set[int]:
    """Rows of the base table with no equal row now (columns matched by name, a renamed
    argname by position), when the table has fewer distinct rows than it had."""
    old_names, old_rows = rows_of(before, guard.fixtures)
    new_names, new_rows = rows_of(after, guard.fixtures)
    if not old_rows or not old_names:
        return set()
    new_rows = new_rows or []
    if len(set(new_rows)) >= len(set(old_rows)):
        return set()
    lost = [n for n in old_names if n not in new_names]
    gained = [n for n in new_names if n not in old_names]
    mapping = {n: n for n in old_names if n in new_names}
    if len(lost) == len(gained):
        mapping.update(zip(lost, gained, strict=True))
    index = {n: i for i, n in enumerate(new_names)}
    common = [(i, index[mapping[n]]) for i, n in enumerate(old_names) if n in mapping]
    now = {tuple(r[j] for _, j in common) for r in new_rows}
    missing = [i for i, r in enumerate(old_rows) if tuple(r[k] for k, _ in common) not in now]
    budget = len(set(old_rows)) - len(set(new_rows))
    if not common:
        return set(range(len(old_rows))[:budget])
    return set(missing[:budget])


def _case_changed(
    guard: GuardContext,
    tests: tuple[TestFacts, ...],
    before: TestFacts,
    after: TestFacts,
    old: Check,
    new: Check,
) -> list[_Found]:
    """A parametrized case whose values changed: which columns, from what to what."""
    columns = changed_columns(before, old.row, after, new.row, guard.fixtures)
    old_case = _case_text(before, old.row)
    new_case = _case_text(after, new.row)
    if old_case is not None and new_case is not None:
        certified, mismatched = _certified_case(guard, before, after.id, old_case, [new_case])
        if certified is not None:
            return [
                *mismatched,
                _Found(
                    codes.EXPECTED_VALUE_CHANGED,
                    after.line,
                    f"in `{before.name}`, parametrized case {old_case} is now {certified[0]}, "
                    f"certified by {certified[1]}",
                    severity=Severity.INFO,
                ),
            ]
    else:
        mismatched = []
    label = one_line(row_label(before, old.row, guard.fixtures), 100)
    if columns:
        what = "; ".join(f"`{n}` {_value(a)} -> {_value(b)}" for n, a, b in columns[:3])
    else:
        what = (
            f"`{one_line(old.subject)}` expected {_value(old.expected)} -> {_value(new.expected)}"
        )
    return [
        _judge(
            guard,
            tests,
            codes.EXPECTED_VALUE_CHANGED,
            after.line,
            f"in `{before.name}`, the parametrized case {label} ({guard.base}) changed "
            f"without a certificate: {what}",
        ),
        *[replace(m, line=after.line) for m in mismatched],
    ]


def _value(text: str | None) -> str:
    """A value quoted in a message: as Python prints it (whitespace inside a string
    kept, escaped), cut when long."""
    if text is None:
        return "nothing"
    return text if len(text) <= 80 else text[:79] + "…"


def _case_text(facts: TestFacts, row: int | None) -> str | None:
    """The case as written in the table (canonical), when there is one table."""
    if row is None or facts.rows is None or len(facts.rows) != len(facts.parametrize_values):
        return None
    return facts.parametrize_values[row]


def _marks_changed(
    guard: GuardContext, name: str, before: TestFacts, after: TestFacts
) -> list[_Found]:
    found = []
    skipped_before = {marker_key(m) for m in before.skips}
    for marker in after.skips:
        if marker_key(marker) not in skipped_before:
            message = f"{name} is now skipped: `{one_line(marker)}`"
            found.append(_Found(codes.SKIP_ADDED, after.line, message))
    xfailed_before = {marker_key(m) for m in before.xfails}
    for marker in after.xfails:
        if marker_key(marker) not in xfailed_before:
            found.append(
                _Found(
                    codes.XFAIL_ADDED,
                    after.line,
                    f"{name} is now expected to fail: `{one_line(marker)}`",
                )
            )
    if after.strict_false and not before.strict_false and (before.xfails or before.relaxations):
        found.append(_Found(codes.XFAIL_ADDED, after.line, f"{name}'s xfail is no longer strict"))
    found.extend(_relaxations_changed(guard, name, before.relaxations, after.relaxations))
    return found


def _relaxations_changed(
    guard: GuardContext,
    name: str,
    before: list[Relaxation],
    after: list[Relaxation],
    line: int | None = None,
) -> list[_Found]:
    """Conditional skips and xfails that are new, or whose condition now holds more
    often: each a warning (an error in agent mode) that quotes the condition."""
    found = []
    old = {(r.kind, r.condition) for r in before}
    for relaxation in after:
        if (relaxation.kind, relaxation.condition) in old:
            continue
        same_kind = [r for r in before if r.kind == relaxation.kind]
        if any(_narrower(relaxation.condition, r.condition) for r in same_kind):
            continue
        code = codes.SKIP_ADDED if relaxation.kind == "skip" else codes.XFAIL_ADDED
        verb = "skipped" if relaxation.kind == "skip" else "expected to fail"
        was = ""
        if same_kind:
            was = f" (at {guard.base}: when {_condition_text(same_kind[0].text)})"
        found.append(
            _relaxed(
                guard,
                code,
                line if line is not None else relaxation.line,
                f"{name} is now {verb} when {_condition_text(relaxation.text)}{was}",
            )
        )
    return found


def _condition_text(text: str) -> str:
    """A skip's condition in a message: ``import numpy fails`` reads "`import numpy`
    fails", anything else is quoted whole (one line, cut when long)."""
    match = re.fullmatch(r"import (\S+) fails(.*)", text)
    if match:
        return f"`import {match.group(1)}` fails{match.group(2)}"
    return f"`{one_line(text, 120)}`"


def _narrower(new: str, old: str) -> bool:
    """Whether condition ``new`` holds only where ``old`` does (``old and more``), so
    the skip applies less often than before."""
    node = parse_expression(new)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return any(canonical(unparse(v)) == old for v in node.values)
    return False


def _module_relaxations(ctx: Context) -> list[_Found]:
    """Conditional skips and xfails that apply to a whole module or class
    (``pytestmark``, a class decorator, a module-level ``importorskip``), compared once."""
    guard = ctx.guard
    assert guard is not None
    base = _baseline(ctx)
    before = module_relaxations(base.source) if base is not None else []
    after = module_relaxations(ctx.source)
    found = []
    for scope in sorted({r.text.split("\0", 1)[0] for r in after}):
        now = [_strip_scope(r) for r in after if r.text.split("\0", 1)[0] == scope]
        was = [_strip_scope(r) for r in before if r.text.split("\0", 1)[0] == scope]
        label = "every test in this module" if scope == "" else f"every test in class `{scope}`"
        found.extend(_relaxations_changed(guard, label, was, now))
    return found


_SETUP_METHODS = frozenset({"setUp", "setUpClass", "setup_method", "setup_class", "setup"})
_FIXTURE_DECORATOR = re.compile(r"^\s*@\s*(pytest\.)?fixture\b")


def _fixtures_changed(ctx: Context, current: dict[str, TestFacts]) -> list[_Found]:
    """A fixture (or a unittest ``setUp``) of this file whose body changed, that tests
    existing at the base use: what those tests feed the code is not what it was (REF314:
    a warning by default, an error in agent mode)."""
    guard = ctx.guard
    base = _baseline(ctx)
    if guard is None or base is None:
        return []
    before: dict[str, set[str]] = {}
    for name, body in base.bodies:
        before.setdefault(name, set()).add(body)
    lines = ctx.source.text.split("\n")
    found = []
    canonical_before: dict[str, set[str]] | None = None
    canonical_now: dict[str, set[str]] = {}
    for fn in _functions(ctx):
        if fn.name not in before or fn.squashed in before[fn.name]:
            continue
        if fn.name not in _SETUP_METHODS and not any(
            _FIXTURE_DECORATOR.match(line) for line in lines[max(0, fn.line - 4) : fn.line - 1]
        ):
            continue
        if canonical_before is None:
            canonical_before = _function_keys(base.source.text)
            canonical_now = _function_keys(ctx.source.text)
        if canonical_now.get(fn.name, set()) <= canonical_before.get(fn.name, set()):
            continue  # reformatted
        above = lines[max(0, fn.line - 4) : fn.line - 1]
        if fn.name in _SETUP_METHODS:
            users = [
                f for f in current.values() if f.collected and "::" in f.id[len(ctx.relpath) + 2 :]
            ]
            what = f"`{fn.name}`"
        elif any(_FIXTURE_DECORATOR.match(line) for line in above):
            users = [f for f in current.values() if f.collected and fn.name in f.params]
            what = f"the fixture `{fn.name}`"
        else:
            continue
        if not users:
            continue
        names = ", ".join(f"`{f.name}`" for f in users[:3]) + (
            f" and {len(users) - 3} more" if len(users) > 3 else ""
        )
        found.append(
            _relaxed(
                guard,
                codes.TEST_INPUT_CHANGED,
                fn.line,
                f"{what} changed since {guard.base}, and {names} "
                f"{'uses' if len(users) == 1 else 'use'} it: what the test feeds the code is "
                "not what it was",
            )
        )
    return found


@functools.lru_cache(maxsize=64)
def _function_keys(text: str) -> dict[str, set[str]]:
    """Each function's body as :func:`statement_key` reads it, by name."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    lines = text.split("\n")
    out: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first, last = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
            body = "\n".join(lines[first - 1 : last])
            out.setdefault(node.name, set()).add(statement_key(body))
    return out


def _strip_scope(relaxation: Relaxation) -> Relaxation:
    return replace(relaxation, text=relaxation.text.split("\0", 1)[-1])


def _swallowed(
    guard: GuardContext, name: str, before: TestFacts, old: Assertion, new: Assertion
) -> _Found:
    return _Found(
        codes.FAILURE_SWALLOWED,
        new.line,
        f"in {name}, `{one_line(new.text)}` ({_where(guard, before, old.line)}) is now "
        f"{new.silenced}",
    )


def _table_changed(
    guard: GuardContext, tests: tuple[TestFacts, ...], before: TestFacts, after: TestFacts
) -> list[_Found]:
    """Parametrize tables the guard could not read row by row: compared by their cases
    as written (a shorter table is REF307, a case no longer in it REF302)."""
    if (before.parametrize_cases or 0) > (after.parametrize_cases or 0):
        return [
            _judge(
                guard,
                tests,
                codes.PARAMETRIZE_CASES_REMOVED,
                after.line,
                f"`{before.name}` has {after.parametrize_cases or 0} parametrized case(s), "
                f"{before.parametrize_cases} at {guard.base}",
            )
        ]
    remaining = list(after.parametrize_values)
    gone = []
    for case in before.parametrize_values:
        if case in remaining:
            remaining.remove(case)
        else:
            gone.append(case)
    found = []
    for old in gone:
        new, mismatched = _certified_case(guard, before, after.id, old, remaining)
        found.extend(replace(m, line=after.line) for m in mismatched)
        if new is not None:
            remaining.remove(new[0])
            found.append(
                _Found(
                    codes.EXPECTED_VALUE_CHANGED,
                    after.line,
                    f"in `{before.name}`, parametrized case {old} is now {new[0]}, "
                    f"certified by {new[1]}",
                    severity=Severity.INFO,
                )
            )
            continue
        found.append(
            _judge(
                guard,
                tests,
                codes.EXPECTED_VALUE_CHANGED,
                after.line,
                f"in `{before.name}`, the parametrized case {one_line(old)} ({guard.base}) was "
                "changed without a certificate",
            )
        )
    return found


def _certified_case(
    guard: GuardContext, before: TestFacts, after_id: str, old: str, candidates: list[str]
) -> tuple[tuple[str, str] | None, list[_Found]]:
    """(new case, certificate id) when a certificate for this test turns ``old`` into
    one of ``candidates`` by changing its old value to its new one, and the certificates
    that would have but are not bound to the test (REF309)."""
    mismatched: list[_Found] = []
    for certificate in guard.certificates:
        if certificate.test_id.split("[", 1)[0] != before.id:
            continue
        fixed = _substituted(old, canonical(certificate.old_value), certificate.new_value)
        new = next((c for c in candidates if c in fixed), None)
        if new is None:
            continue
        problem = _unbound(certificate, after_id, new)
        if problem is not None:
            mismatched.append(_mismatch(before, certificate, problem, 0))
            continue
        return (new, certificate.id), mismatched
    return None, mismatched


def _substituted(case: str, was: str, now: str) -> set[str]:
    """``case`` (canonical) with one of its values that reads ``was`` replaced by ``now``."""
    try:
        tree = ast.parse(case, mode="eval")
        replacement = ast.parse(now.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return set()
    node = tree.body
    if isinstance(node, (ast.Tuple, ast.List)):
        items = node.elts
    elif isinstance(node, ast.Call):
        items = node.args
    else:
        items = None
    if items is None:
        return (
            {canonical(ast.unparse(replacement))} if canonical(ast.unparse(node)) == was else set()
        )
    out = set()
    for index, item in enumerate(items):
        if canonical(ast.unparse(item)) == was:
            items[index] = replacement
            out.add(canonical(ast.unparse(tree)))
            items[index] = item
    return out


def _value_changed(
    guard: GuardContext,
    tests: tuple[TestFacts, ...],
    before: TestFacts,
    after_id: str,
    old_check: Check,
    new_check: Check,
) -> list[_Found]:
    old, new = old_check.assertion, new_check.assertion
    mismatched: list[_Found] = []
    for certificate in guard.certificates:
        if (
            certificate.test_id.split("[", 1)[0] == before.id
            and canonical(certificate.old_value) == old.expected
            and canonical(certificate.new_value) == new.expected
        ):
            problem = _unbound(certificate, after_id, new.text)
            if problem is not None:
                mismatched.append(_mismatch(before, certificate, problem, new.line))
                continue
            return [
                _Found(
                    codes.EXPECTED_VALUE_CHANGED,
                    new.line,
                    f"in `{before.name}`, expected value changed from {old.expected} to "
                    f"{new.expected}, certified by {certificate.id}",
                    severity=Severity.INFO,
                )
            ]
    return [
        _judge(
            guard,
            tests,
            codes.EXPECTED_VALUE_CHANGED,
            new.line,
            f"in `{before.name}`, the expected value of `{one_line(old_check.subject)}` changed "
            f"from {_value(old_check.expected)} to {_value(new_check.expected)} without a "
            f"certificate ({_where(guard, before, old.line)})",
        ),
        *mismatched,
    ]


def _unbound(certificate: Certificate, test_id: str, text: str) -> str | None:
    """Why ``certificate`` does not cover the test ``test_id`` whose changed assertion
    (or parametrized case) now reads ``text``; None when it does. Anyone can recompute a
    certificate's id, so a certificate is honoured only when it is bound to the file."""
    if certificate.test_id.split("[", 1)[0] != test_id:
        return f"names `{certificate.test_id}`, which is no longer a test (it is now `{test_id}`)"
    if certificate.test_sha256 is None:
        return "has no `test_sha256`, so it is bound to no assertion"
    if certificate.test_sha256 != normalized_text_hash(text):
        return f"was not issued for `{one_line(text)}` (its `test_sha256` differs)"
    return None


def _mismatch(before: TestFacts, certificate: Certificate, problem: str, line: int) -> _Found:
    return _Found(
        codes.CERTIFICATE_MISMATCH,
        line,
        f"in `{before.name}`, certificate {certificate.id} {problem}; not honoured",
    )


def _compare_raises(
    guard: GuardContext,
    tests: tuple[TestFacts, ...],
    name: str,
    before: TestFacts,
    old: Assertion,
    new: Assertion,
) -> list[_Found]:
    found = []
    broad = {"Exception", "BaseException"}
    if set(new.raises) & broad and not set(old.raises) & broad:
        found.append(
            _judge(
                guard,
                tests,
                codes.RAISES_WIDENED,
                new.line,
                f"in {name}, `{one_line(old.text)}` ({_where(guard, before, old.line)}) "
                f"now accepts any exception: {', '.join(new.raises)}",
            )
        )
    if (
        old.match is not None
        and new.match is not None
        and _matches_anything(new.match)
        and not _matches_anything(old.match)
    ):
        found.append(
            _judge(
                guard,
                tests,
                codes.RAISES_MATCH_REMOVED,
                new.line,
                f"in {name}, the `match={old.match}` of `{one_line(old.text)}` "
                f"({_where(guard, before, old.line)}) became `{new.match}`, which "
                "matches any message",
            )
        )
    if old.match is not None and new.match is None:
        found.append(
            _judge(
                guard,
                tests,
                codes.RAISES_MATCH_REMOVED,
                new.line,
                f"in {name}, the `match={old.match}` of `{one_line(old.text)}` "
                f"({_where(guard, before, old.line)}) was removed",
            )
        )
    return found


# pytest.approx's tolerances when none is given. With `abs` alone, `rel` is not used.
_APPROX_REL, _APPROX_ABS = 1e-6, 1e-12


def _effective_tolerance(
    tolerance: tuple[float | None, float | None] | None,
) -> tuple[float, float]:
    rel, abs_ = tolerance or (None, None)
    if rel is None:
        rel = 0.0 if abs_ is not None else _APPROX_REL
    return rel, _APPROX_ABS if abs_ is None else abs_


def _matches_anything(pattern: str) -> bool:
    """A `match=` pattern every message matches: "", ".*", "(?s).*" and the like."""
    try:
        value = ast.literal_eval(pattern.strip())
    except (SyntaxError, ValueError):
        return False
    if not isinstance(value, str):
        return False
    core = value.removeprefix("(?s)").removeprefix("^").removesuffix("$")
    return core in ("", ".*", ".+", ".", ".*?", "[\\s\\S]*", "(.*)", "(?:.*)")


def _compare_approx(
    guard: GuardContext,
    tests: tuple[TestFacts, ...],
    name: str,
    before: TestFacts,
    old: Assertion,
    new: Assertion,
) -> list[_Found]:
    for label, was, now in zip(
        ("rel", "abs"),
        _effective_tolerance(old.tolerance),
        _effective_tolerance(new.tolerance),
        strict=True,
    ):
        if now > was:
            return [
                _judge(
                    guard,
                    tests,
                    codes.APPROX_LOOSENED,
                    new.line,
                    f"in {name}, the approx tolerance {label} went from {was:g} "
                    f"to {now:g} ({_where(guard, before, old.line)})",
                )
            ]
    return []


def _report(ctx: Context, code: str) -> Iterator[Violation]:
    for item in _compare(ctx):
        if item.code == code:
            yield Violation(span=_span(item.line), message=item.message, severity=item.severity)


# ----------------------------------------------------------------------------- rules


def test_removed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test that existed at the baseline and is gone, when its checks are not made
    by any test now. Renaming a test, moving it to another file, splitting, merging or
    parametrizing tests keep the checks and are not flagged; nor is deleting a duplicate
    whose copy lives in a test file the change did not touch. A test renamed and edited
    is compared with the new test it became (REF301/REF302/… name it).

    A warning, not an error, in the default mode when the code the test exercised
    changed in the same diff (the feature went with its test), or when the test had no
    assertion at all; an error in agent mode. The message lists the checks no test
    makes any more.

    ## Why it matters
    Deleting the red test is the bluntest way to make a suite pass.

    ## Example
    `tests/test_cart.py::test_total_with_discount` existed at `HEAD`; the working tree
    no longer has it, nor an assertion like its `assert total(...) == 90`.

    ## Use instead
    Fix the code, or — if the test is wrong — change its expected value with an
    arbitration certificate: the test stays.
    """
    yield from _report(ctx, codes.TEST_REMOVED)


def assertion_removed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an assertion (or a call to a helper that asserts, or a `raise` that fails the
    test) that a test had at the baseline and no longer has. Not flagged: the same check
    in another form (`assert 4 == f(x)` for `assert f(x) == 4`, `assertEqual` for
    `assert ==`, `raises(match=)` for `assert "x" in str(e.value)`), a check moved to
    another test of the change (it is still made as often as before), into a helper
    the test calls, or into a parametrize table, and an assertion whose subject was
    rewritten with its expected value kept.

    A warning in the default mode when the code the test exercises changed in the same
    diff, or when the test was rewritten against another API (it stopped calling
    something and makes at least half as many new checks); an error in agent mode.

    ## Why it matters
    A test that still runs but checks less is harder to spot than a deleted one.

    ## Example
    ```python
    def test_parse():
        result = parse("1h30m")
        assert result.hours == 1
        # `assert result.minutes == 30` was here at HEAD
    ```

    ## Use instead
    Keep the assertion and fix the code it catches.
    """
    yield from _report(ctx, codes.ASSERTION_REMOVED)


def expected_value_changed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an equality assertion whose expected value changed since the baseline
    (`assert f(x) == 4` became `assert f(x) == 5`) without a certificate in
    `.referee/certificates.jsonl`. A change a certificate covers (same test id, old and
    new value) is reported as information: "certified by …".

    A value changed inside a `@pytest.mark.parametrize` table (without removing the
    case) is the same change, and the message names the columns that changed;
    reordering, deduplicating or wrapping cases in `pytest.param(..., id=)`, renaming an
    argname, adding a column and moving the table to a parametrized fixture are not.
    So is a value changed in a local the test assigns a literal to once and compares
    with (`==`, `assertEqual`, `pytest.approx`); renaming the local is not.

    Values are compared as the values they evaluate to when they are constants:
    `u"x"` and `"x"`, `"a" "b"` and `"ab"`, `"a b".split()` and `["a", "b"]`,
    `"{}:{}".format(h, p)` and `f"{h}:{p}"`, `flask.Markup` and `Markup` are the same.
    An expected side computed from the test's own variables or fixtures is not a value
    and is not compared.

    In the default mode the change is a warning when the code the test exercises
    changed in the same diff — the function it calls, or one that function reaches
    (found by name, a few calls deep), or a non-Python file the code may live in:
    "changed together with the code it tests (`parse` (def parse in src/p.py)
    changed): an intended change?". With nothing it exercises changed it is an error:
    that is the cheat. In agent mode every uncertified change is an error.

    ## Why it matters
    Rewriting the expected value to whatever the code returns turns every test green and
    every bug into a specification. Only an independent oracle may decide that the test
    was the wrong side.

    ## Example
    ```python
    assert count_vowels("aeiou") == 4   # HEAD
    assert count_vowels("aeiou") == 5   # now, no certificate

    expected = 4   # HEAD; now `expected = 5`, no certificate
    assert count_vowels("aeiou") == expected
    ```

    ## Use instead
    Change an expected value only with a certificate: guarded arbitration fixes the test
    only when an independent oracle proves it wrong, and writes the certificate to
    `.referee/certificates.jsonl`.
    """
    yield from _report(ctx, codes.EXPECTED_VALUE_CHANGED)


def comparison_weakened(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an assertion on the same subject whose comparison now pins the value down less:
    `==` became `in`, `>=`, `<=`, `!=`, `is not None` or a bare truth test. Strengthening
    (`>` to `==`) is not flagged. In a parametrized test each case is compared.
    A warning in the default mode when the code the test exercises changed in the same
    diff; an error otherwise, and always in agent mode.

    ## Why it matters
    `assert total == 90` fails for a wrong total; `assert total >= 0` passes for almost
    all of them.

    ## Example
    ```python
    assert total(cart) == 90    # HEAD
    assert total(cart)          # now
    ```

    ## Use instead
    Keep the exact comparison.
    """
    yield from _report(ctx, codes.COMPARISON_WEAKENED)


def test_input_changed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an assertion that is written as it was at the baseline but is fed other data
    now: a statement of the test before it that binds a name it reads, or calls a method
    of an object it reads, changed, was removed or was added — the input the test gives
    the code (`data = [...]`, a `pytester.makepyfile(...)` source, a seed), or how it
    computes the value it compares with (`expected = compute(...)`). A value the
    assertion compares with that changed from one constant to another
    (`expected = Grid(1)` → `Grid(2)`) is `expected-value-changed` instead. A fixture
    of the test module (`@pytest.fixture`) or a unittest `setUp` whose body changed, used
    by tests that existed at the baseline, is reported the same way.

    A warning in the default mode, where changing a test's data together with its
    expectation is ordinary maintenance; an error in agent mode, where an agent that
    changes what an existing test feeds the code has changed the test, not the code.

    ## Why it matters
    A test is its inputs and its expectation together. An agent facing an impossible
    expectation can keep the assertion and change the input until the expectation
    holds: add one more case to the generated source so that "2 skipped" matches, or
    compute the reference another way.

    ## Example
    ```python
    def test_summary(pytester):
        pytester.makepyfile("def test_a(): pass")   # HEAD
        pytester.makepyfile("def test_a(): pass\\ndef test_b(): pass")   # now
        result = pytester.runpytest()
        result.assert_outcomes(passed=2)
    ```

    ## Use instead
    Fix the code so that the test's own inputs give its expectation, or arbitrate the
    test (`referee arbitrate`) if the expectation is wrong.
    """
    yield from _report(ctx, codes.TEST_INPUT_CHANGED)


def baseline_unparsable(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Reports a changed test file whose baseline does not parse: the guard cannot read
    what its tests checked, so it cannot say what the change weakened. Where one line
    of the baseline is only mis-indented (a statement pulled out of its block), the
    guard reads the baseline with that line put back in its block, compares with that,
    and says so (a warning). Where it cannot, it compares what it could read of the
    baseline and reports that the rest was not seen: an error in agent mode, a warning in
    the default mode.

    ## Why it matters
    "All checks passed" must mean the checks ran. A broken baseline is also the moment
    an agent is most tempted to rewrite an assertion while it "fixes the syntax".

    ## Example
    ```python
    def test_copy():
        w = v.copy()
    assert not v.identical(w)   # HEAD: de-indented, the module does not parse
        assert v.dtype == w.dtype
    ```

    ## Use instead
    Fix the baseline's syntax in a commit of its own, then change the test.
    """
    guard = ctx.guard
    if guard is None or ctx.source.kind != "python" or not ctx.is_test_file:
        return
    base = _baseline(ctx)
    if base is None or base.unparsable is None:
        return
    line, problem, repaired = base.unparsable
    if repaired is not None:
        yield Violation(
            span=_span(1),
            message=f"this file at {guard.base} does not parse (line {line}: {problem}); "
            f"it was compared as if line {repaired} were indented as its block",
            severity=Severity.WARNING,
        )
        return
    yield Violation(
        span=_span(1),
        message=f"this file at {guard.base} does not parse (line {line}: {problem}): its "
        "tests were compared as far as they could be read, and a change to the rest is not "
        "seen",
        severity=None if guard.strict else Severity.WARNING,
    )


def approx_loosened(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a `pytest.approx` (or `assertAlmostEqual`) whose `rel` or `abs` tolerance grew
    since the baseline. Tightening is not flagged.

    A missing tolerance means pytest's defaults (`rel=1e-6`, `abs=1e-12`), so adding a
    tighter one is not flagged; `assertAlmostEqual` losing `places` or gaining a larger
    `delta` is.

    ## Why it matters
    A tolerance wide enough accepts any answer.

    ## Example
    ```python
    assert mean(xs) == pytest.approx(2.5, rel=1e-6)   # HEAD
    assert mean(xs) == pytest.approx(2.5, rel=0.5)    # now
    ```

    ## Use instead
    Keep the tolerance the computation needs.
    """
    yield from _report(ctx, codes.APPROX_LOOSENED)


def raises_widened(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags `pytest.raises` / `assertRaises` that expected a specific exception at the
    baseline and now accepts `Exception` or `BaseException`.

    ## Why it matters
    `pytest.raises(Exception)` passes when the code fails for any reason — a typo, a
    `TypeError` — instead of the error the test was about.

    ## Example
    ```python
    with pytest.raises(ValueError): parse("")   # HEAD
    with pytest.raises(Exception): parse("")    # now
    ```

    ## Use instead
    Keep the specific exception.
    """
    yield from _report(ctx, codes.RAISES_WIDENED)


def raises_match_removed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a `pytest.raises(..., match=...)` (or `assertRaisesRegex`) whose message
    pattern was dropped since the baseline.

    Also flagged: `assertRaisesRegex` turned into `assertRaises`, and a pattern replaced
    by one that matches anything (`match=".*"`).

    ## Why it matters
    The pattern is what tells this `ValueError` from any other.

    ## Example
    ```python
    with pytest.raises(ValueError, match="empty"): parse("")   # HEAD
    with pytest.raises(ValueError): parse("")                  # now
    ```

    ## Use instead
    Keep the pattern, or make it match the real message.
    """
    yield from _report(ctx, codes.RAISES_MATCH_REMOVED)


def parametrize_cases_removed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a `@pytest.mark.parametrize` case that is gone: the table has fewer distinct
    cases than at the baseline, and this one has no counterpart now. Each removed case
    is named. Removing an exact duplicate, renaming an argname, adding a column and
    moving the table to a parametrized fixture (`@pytest.fixture(params=[...])`) remove
    nothing.

    Tables kept in a module constant (`CASES = [...]` used as
    `@pytest.mark.parametrize("x, y", CASES)`) are read too. A warning in the default
    mode when the code the test exercises changed in the same diff.

    ## Why it matters
    Deleting the failing case from a table is deleting a test.

    ## Example
    ```python
    @pytest.mark.parametrize("text, n", [("a", 1), ("aeiou", 5), ("", 0)])   # HEAD
    @pytest.mark.parametrize("text, n", [("a", 1), ("", 0)])                 # now
    ```

    ## Use instead
    Keep the case and fix the code, or arbitrate it.
    """
    yield from _report(ctx, codes.PARAMETRIZE_CASES_REMOVED)


def renamed_out_of_collection(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test that was renamed to a name pytest does not collect (`test_x` to
    `_test_x`, `check_x`, `xtest_x`) with its body intact.

    Renaming a class from `Test*` to a name pytest does not collect (with no base class
    that would make it a unittest case) takes all its methods out of collection and is
    flagged the same way.

    ## Why it matters
    The test still reads as a test in review, and never runs.

    ## Example
    ```python
    def test_refund(): ...    # HEAD
    def _test_refund(): ...   # now
    ```

    ## Use instead
    Keep the `test` prefix; skip with a reason if it must not run for now.
    """
    yield from _report(ctx, codes.RENAMED_OUT_OF_COLLECTION)


def certificate_mismatch(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a certificate in `.referee/certificates.jsonl` that would cover a changed
    expected value (same test, same old and new value) but is not bound to the test as
    it is written now: its `test_sha256` is missing or is not the hash of the changed
    assertion statement (whitespace removed; for a value in a local, of the assertion
    that compares with it; for a parametrized case, of the case as Python prints it), or
    its `test_id` no longer names the test. The certificate is not honoured, so the
    change is also reported as REF302.

    ## Why it matters
    A certificate's id is a hash anyone can recompute. What makes it evidence is that
    arbitration issued it for this assertion; a certificate copied from another test, or
    written by hand for the value the code happens to return, proves nothing.

    ## Example
    ```json
    {"test_id": "tests/test_shop.py::test_total", "old_value": "30", "new_value": "31",
     "test_sha256": "0000000000000000000000000000000000000000000000000000000000000000", ...}
    ```

    ## Use instead
    Let arbitration fix the test: it writes the certificate with the assertion's hash.
    If the assertion was reformatted or changed again since, arbitrate it again.
    """
    yield from _report(ctx, codes.CERTIFICATE_MISMATCH)


def skip_added(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test that is skipped now and was not at the baseline: `@pytest.mark.skip`,
    `@unittest.skip`, `pytest.skip()`, `self.skipTest()`, `raise SkipTest` — an error.

    Unconditional forms count wherever they are written: `skipif(True)`,
    `skipUnless(False)`, a module- or class-level `pytestmark`, a class decorator, and
    `pytest.param(..., marks=pytest.mark.skip)`. A condition that reads only the Python
    version, the platform and the implementation and holds on all of them
    (`skipif(sys.version_info > (3,))`) is unconditional too.

    A skip that applies only sometimes is a warning that quotes its condition (an error
    in agent mode): a new or widened `skipif(cond)` / `skipUnless(cond)`,
    `pytest.importorskip("x")` in a test or at module level, a `pytest.skip()` under an
    `if`, an `else` or an `except`, and a conditional mark on a case, a class or
    `pytestmark`: "`test_a` is now skipped when `sys.platform == "win32"`". A condition
    narrowed (`cond and more`) is not flagged; a reworded `reason=` is not a new skip.

    ## Why it matters
    A skipped test reports nothing, and CI stays green.

    ## Example
    ```python
    @pytest.mark.skip(reason="flaky")
    def test_refund(): ...
    ```

    ## Use instead
    Fix the test or the code; a skip that must stay deserves a reviewer's eyes.
    """
    yield from _report(ctx, codes.SKIP_ADDED)


def failure_swallowed(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags an assertion that could fail at the baseline and now cannot: newly wrapped in a
    `try` whose `except` swallows the failure, in `contextlib.suppress`, after an
    unconditional `return`, or under a condition that is always false (`if False:`).

    Also: assertions moved into a nested function the test never calls, and a
    `pytest.raises(E)` block whose body raises `E` itself. An assertion newly placed
    under a condition that may be false (`if result is not None: assert ...`, an
    `except` clause) is checked only sometimes: a warning quoting the condition in the
    default mode, an error in agent mode.

    ## Why it matters
    The assertion is still there for a reviewer to see; it just never fails.

    ## Example
    ```python
    try:
        assert total(cart) == 90
    except AssertionError:
        pass
    ```

    ## Use instead
    Let the assertion fail.
    """
    yield from _report(ctx, codes.FAILURE_SWALLOWED)


def xfail_added(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test newly marked as expected to fail (`@pytest.mark.xfail`,
    `@unittest.expectedFailure`, `pytest.xfail()`), or an xfail that became
    `strict=False` (so an unexpected pass no longer fails the run) — an error.

    xfail marks are read in the same places as skips (see `skip-added`), and as there,
    an xfail under a condition (`xfail(sys.platform == "win32")`, a `pytest.xfail()`
    inside an `if` or a `try`'s `else`) is a warning quoting the condition (an error in
    agent mode). Rewording an xfail's `reason=` changes nothing.

    ## Why it matters
    An xfail turns a red test into a yellow one that nobody reads.

    ## Example
    ```python
    @pytest.mark.xfail
    def test_refund(): ...
    ```

    ## Use instead
    Fix the code, or record the known bug with `reason=` and `strict=True`.
    """
    yield from _report(ctx, codes.XFAIL_ADDED)


# ---- the test run itself


_DESELECTING = re.compile(
    r"^(-k|--deselect|--ignore|--ignore-glob|-m|--co|--collect-only)"
    r"(=|$)|^-p$"
)
_COLLECTION_KEYS = (
    "testpaths",
    "python_files",
    "python_classes",
    "python_functions",
    "norecursedirs",
)


def test_config_tampered(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a change to pytest's configuration (`pyproject.toml`'s
    `[tool.pytest.ini_options]` or `[tool.pytest]`, `pytest.ini`, `.pytest.ini`,
    `setup.cfg`'s `[tool:pytest]` or legacy `[pytest]`, `tox.ini`'s `[pytest]`) that runs
    fewer tests: `addopts` gaining `-k`, `-m`, `--deselect`, `--ignore`, `--ignore-glob` or
    `-p`, or a changed `testpaths`, `python_files`, `python_classes`,
    `python_functions` or `norecursedirs`; and a tox environment whose `commands` now run
    pytest with one of those options.

    The settings compared are those in effect, read as pytest reads them (the first of
    those files that has a pytest section): moving the configuration from one file to
    another with the same effect is not flagged, and neither is pytest 9's
    `strict = true` replacing `xfail_strict = true`.

    `testpaths` and `python_files`/`_classes`/`_functions` are flagged when an entry is
    removed (adding one runs more tests), `norecursedirs` when one is added, a changed
    value of `-k`, `-m`, `--ignore` or `-p` in `addopts` (including the attached form
    `-kexpr`), and `xfail_strict` turned off.

    ## Why it matters
    The tests are all still there; pytest just no longer looks at the red ones.

    ## Example
    ```toml
    [tool.pytest.ini_options]
    addopts = "--deselect tests/test_cart.py::test_refund"
    ```

    ## Use instead
    Leave collection alone; fix the failing test's cause.
    """
    guard = ctx.guard
    name = ctx.relpath.rsplit("/", 1)[-1]
    if guard is None or name not in pytestconfig.CONFIG_FILES:
        return
    text = ctx.source.text
    before, now = _settings_compared(ctx, name)
    if before is not None and now is not None:
        added = _deselecting_options(now.get("addopts", "")) - _deselecting_options(
            before.get("addopts", "")
        )
        for option in sorted(added):
            if not _deselects_existing(guard, option):
                continue
            yield Violation(
                span=_span(_line_of(text, option.split(" ", 1)[0])),
                message=f"pytest addopts now include `{option}` ({guard.base} did "
                "not): fewer tests run",
            )
        if pytestconfig.xfail_strict(before) and not pytestconfig.xfail_strict(now):
            was = before.get("xfail_strict", before.get("strict"))
            yield Violation(
                span=_span(_line_of(text, "strict")),
                message=f"pytest `xfail_strict` is no longer true ({guard.base}: {was!r}): an "
                "xfail test that passes no longer fails the run",
            )
        for key in _COLLECTION_KEYS:
            if not _narrowed(key, before.get(key), now.get(key)):
                continue
            lost = _no_longer_collected(guard.test_files, key, before, now)
            if lost == []:
                continue  # every test module is collected as before
            which = f": {lost[0]} is no longer collected" if lost else ": which tests run changed"
            yield Violation(
                span=_span(_line_of(text, key)),
                message=f"pytest `{key}` changed from {before.get(key)!r} "
                f"({guard.base}) to {now.get(key)!r}{which}",
            )
    if name == "tox.ini":
        old_envs = pytestconfig.tox_pytest_arguments(guard.baseline or "")
        for env, arguments in pytestconfig.tox_pytest_arguments(text).items():
            was = _deselecting_options(old_envs.get(env, old_envs.get("testenv", "")))
            for option in sorted(_deselecting_options(arguments) - was):
                if not _deselects_existing(guard, option):
                    continue
                yield Violation(
                    span=_span(_line_of(text, option.split(" ", 1)[-1])),
                    message=f"tox `[{env}]` now runs pytest with `{option}` ({guard.base} "
                    "did not): fewer tests run",
                )


_EXPRESSION_WORDS = frozenset({"and", "or", "not"})


def _deselects_existing(guard: GuardContext, option: str) -> bool:
    """Whether a new deselecting option can leave out a test that existed at the base:
    `-m` naming a marker some test used, `-k` a word some test's text holds, `--deselect`
    a test that was there, `--ignore` a path that held test files. With no picture of
    the base's tests (a check without a plan) every such option counts."""
    text = guard.base_test_text
    if not text:
        return True
    flag, _, value = option.partition(" ")
    if not value and len(flag) > 2 and flag[:2] in ("-k", "-m"):
        flag, value = flag[:2], flag[2:]
    value = value.strip("'\"")
    if flag == "-m":
        names = set(re.findall(r"[A-Za-z_]\w*", value)) - _EXPRESSION_WORDS
        return any(f"mark.{name}" in text for name in names)
    if flag == "-k":
        words = set(re.findall(r"[A-Za-z_]\w*", value)) - _EXPRESSION_WORDS
        lowered = text.lower()
        return any(word.lower() in lowered for word in words)
    if flag == "--deselect" or flag.startswith("--deselect="):
        target = value or flag.partition("=")[2]
        name = target.rsplit("::", 1)[-1].split("[", 1)[0]
        return f"def{name}(" in text or "::" not in target
    if flag.startswith("--ignore"):
        target = (value or flag.partition("=")[2]).rstrip("/")
        return not guard.test_files or any(
            p == target or p.startswith(target + "/") or fnmatch.fnmatch(p, target)
            for p in guard.test_files
        )
    return True


def _settings_compared(
    ctx: Context, name: str
) -> tuple[dict[str, str] | None, dict[str, str] | None]:
    """The pytest settings to compare for this configuration file, at the base and now:
    the settings in effect for the project (whichever file holds them, so settings moved
    from pytest.ini to pyproject.toml with the same effect compare equal), compared on
    the file that holds them now; (None, None) for a file not in effect on either side.
    Without the project's picture (a file outside the root, a check without a plan)
    the file's own settings are compared."""
    guard = ctx.guard
    assert guard is not None
    own_now = pytestconfig.settings_of(name, ctx.source.text)
    own_before = pytestconfig.settings_of(name, guard.baseline or "") if guard.baseline else None
    if "/" in ctx.relpath or (guard.pytest_before is None and guard.pytest_now is None):
        return own_before or {}, own_now or {}
    before_file, before = guard.pytest_before or (None, {})
    now_file, now = guard.pytest_now or (None, {})
    if now_file == name and own_now is not None:
        now = own_now  # the text being checked (an editor's unsaved one) is the one in effect
    owner = now_file or before_file
    if owner != name:
        return None, None
    return dict(before), dict(now)


def _deselecting_options(addopts: str) -> set[str]:
    """The options in ``addopts`` that deselect or ignore tests, each with its value
    (``-k expr``, ``--ignore=path``): a changed value is a new option."""
    try:
        tokens = shlex.split(addopts)
    except ValueError:
        return set()
    found = set()
    for index, token in enumerate(tokens):
        if _DESELECTING.match(token) is None and not _ATTACHED.match(token):
            continue
        takes_value = token in ("-k", "-m", "-p", "--deselect", "--ignore", "--ignore-glob")
        value = tokens[index + 1] if takes_value and index + 1 < len(tokens) else None
        found.add(token if value is None else f"{token} {value}")
    return found


_ATTACHED = re.compile(r"^-[kmp]\S")  # -k'not slow', -pno:randomly: the value attached


# pytest's values for the collection settings a configuration leaves out.
_COLLECTION_DEFAULTS = {
    "python_files": "test_*.py *_test.py",
    "python_classes": "Test",
    "python_functions": "test",
}


def _narrowed(key: str, before: str | None, now: str | None) -> bool:
    """Whether a collection setting changed so that some tests may no longer be
    collected: an entry of `testpaths` / `python_*` gone, or a `norecursedirs` entry
    added. Adding a test path or a file pattern only collects more."""
    if before == now:
        return False
    if key == "norecursedirs":
        # Setting it for the first time replaces pytest's defaults with what it lists.
        return now is not None and (before is None or bool(set(now.split()) - set(before.split())))
    if key == "testpaths":
        if now is None:
            return False  # back to collecting from the root directory: nothing lost
        if before is None:
            return True
    default = _COLLECTION_DEFAULTS.get(key, "")
    old = set((before if before is not None else default).split())
    new = set((now if now is not None else default).split())
    return bool(old - new)


def _no_longer_collected(
    test_files: tuple[str, ...], key: str, before: dict[str, str], now: dict[str, str]
) -> list[str] | None:
    """The project's test modules (files that define tests) that pytest collected with
    the ``before`` settings and does not with ``now``'s (`testpaths`, `python_files`,
    `norecursedirs`); None when the guard cannot tell (no list of test files, or
    another setting)."""
    if not test_files or key not in ("testpaths", "python_files", "norecursedirs"):
        return None
    if key == "norecursedirs":
        added = set(now.get(key, "").split()) - set(before.get(key, "").split())
        return sorted(
            path
            for path in test_files
            if any(
                fnmatch.fnmatch(part, pattern) or path.startswith(pattern.rstrip("/") + "/")
                for pattern in added
                for part in path.split("/")[:-1]
            )
        )
    old_patterns, old_paths = pytestconfig.test_file_patterns(before)
    new_patterns, new_paths = pytestconfig.test_file_patterns(now)
    return sorted(
        path
        for path in test_files
        if pytestconfig.is_pytest_file(path, old_patterns, old_paths)
        and not pytestconfig.is_pytest_file(path, new_patterns, new_paths)
    )


def _line_of(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    return 1


_FORGING_HOOKS = frozenset(
    {
        "pytest_runtest_makereport",
        "pytest_runtest_call",
        "pytest_pyfunc_call",
        "pytest_runtest_protocol",
        "pytest_report_teststatus",
        "pytest_sessionfinish",
        "pytest_ignore_collect",
    }
)
_COLLECT_IGNORE = re.compile(r"^collect_ignore(_glob)?\b")
_DROPS_ITEMS = re.compile(r"items\[:\]\s*=|items\.(remove|clear|pop)\(|del\s+items|deselect")


def _new_functions(ctx: Context) -> list[FunctionText]:
    """Functions (nested ones and methods included) that are new or whose body changed."""
    cached = ctx.memo.get("guard-new-functions")
    if cached is None:
        base = _baseline(ctx)
        before = base.bodies if base is not None else frozenset()
        cached = ctx.memo["guard-new-functions"] = [
            fn for fn in _functions(ctx) if (fn.name, fn.squashed) not in before
        ]
    return cached  # type: ignore[return-value]


def outcome_forging_hook(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a new or changed pytest hook in `conftest.py` (or a plugin module) whose edit
    adds a way to forge outcomes or drop tests: `pytest_runtest_makereport` (or
    `_call`, `_setup`, …) setting an outcome to anything but `"failed"`, clearing
    `longrepr`/`excinfo`, setting `wasxfail` or forcing a result; `pytest_pyfunc_call`,
    `pytest_runtest_protocol` or `pytest_runtest_call` returning `True` without running
    the test; `pytest_sessionfinish` setting a zero exit status; a
    `pytest_collection_modifyitems` that removes items (sorting them does not); a
    `pytest_report_teststatus`. A hook that only makes the run stricter (records the
    report on the item, fails the session on a warning) is not flagged.

    Also flagged: `collect_ignore`, `collect_ignore_glob` and a `pytest_ignore_collect`
    that returns something, added to a conftest.

    ## Why it matters
    Ten lines in `conftest.py` can report every failure as a pass.

    ## Example
    ```python
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        outcome.get_result().outcome = "passed"
    ```

    ## Use instead
    Let pytest report what happened.
    """
    if ctx.guard is None or not ctx.relpath.endswith("conftest.py"):
        return
    for _, line, text in _new_module_statements(ctx):
        match = _COLLECT_IGNORE.match(text)
        if match:
            yield Violation(
                span=_span(line),
                message=f"new or changed `{match.group(0)}` keeps pytest from collecting "
                "the files it names",
            )
    base = _baseline(ctx)
    old_bodies = base.hook_bodies if base is not None else {}
    for fn in _new_functions(ctx):
        if fn.name not in _FORGING_HOOKS and fn.name != "pytest_collection_modifyitems":
            continue
        now = _forging(fn.name, fn.body)
        was: set[str] = set()
        for body in old_bodies.get(fn.name, ()):
            was |= _forging(fn.name, body)
        added = sorted(now - was)
        if added:
            yield Violation(
                span=_span(fn.line),
                message=f"new or changed hook `{fn.name}` can change which tests run "
                f"or how they are reported: {', '.join(added)}",
            )


# What lets a hook forge an outcome or drop tests, by what it writes or returns.
# Making an outcome worse (`report.outcome = "failed"`, a non-zero exit status) is
# a stricter conftest, not a forged one.
_FORGES = {
    "sets an outcome": re.compile(
        r"\.outcome\s*=(?!=)(?!\s*[\"']failed[\"'])|\.(longrepr|excinfo)\s*=\s*None\b"
        r"|\.wasxfail\s*=(?!=)"
    ),
    "replaces the result": re.compile(r"\bforce_(result|exception)\s*\("),
    "sets the exit status": re.compile(
        r"\bexitstatus\s*=(?!=)(?!\s*(?:[1-9]|(?:pytest\.)?ExitCode\.(?!OK)))"
        r"|\b(os\._exit|sys\.exit)\s*\(\s*0?\s*\)"
    ),
    "clears the exception": re.compile(r"\bexcinfo\s*=\s*None\b"),
}
_RUNS_TEST = re.compile(r"\.runtest\s*\(|runtestprotocol\s*\(|\.obj\s*\(|\bfuncargs\b|\byield\b")


def _forging(name: str, body: str) -> set[str]:
    """The outcome-forging constructs a hook's body holds (see _FORGES)."""
    found = {label for label, pattern in _FORGES.items() if pattern.search(body)}
    if name == "pytest_collection_modifyitems":
        found = set()
        if _DROPS_ITEMS.search(body) and not re.search(
            r"items\[:\]\s*=\s*(sorted\(|reversed\(|list\(reversed)", body
        ):
            found.add("removes collected items")
    elif name in ("pytest_pyfunc_call", "pytest_runtest_protocol", "pytest_runtest_call"):
        if re.search(r"\breturn\s+(True|1|\w+\s+or\s+True)\b", body) and not _RUNS_TEST.search(
            body
        ):
            found.add("reports the test as run without running it")
    elif name == "pytest_ignore_collect":
        if re.search(r"\breturn\b(?!\s*(None|False)?\s*$)", body, re.MULTILINE):
            found.add("keeps files out of collection")
    elif name == "pytest_report_teststatus":
        found.add("rewrites how outcomes are reported")
    return found


def exit_in_tests(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a new `sys.exit(...)`, `os._exit(...)`, `pytest.exit(...)` or builtin
    `exit(...)` / `quit(...)` in a test module or `conftest.py`.

    Module-level calls count too; an `if __name__ == "__main__":` block is exempt, and
    so is a method that happens to be called `exit` (`ctx.exit()`, `def exit(self)`).

    ## Why it matters
    `os._exit(0)` ends the test process with success before the failures are reported.

    ## Example
    ```python
    def test_refund():
        os._exit(0)
    ```

    ## Use instead
    Let the test run to its end.
    """
    if ctx.guard is None or not (ctx.is_test_file or ctx.relpath.endswith("conftest.py")):
        return
    new = [(fn.name, fn.line, fn.body) for fn in _new_functions(ctx)]
    for _name, line, body in [*new, *_new_module_statements(ctx)]:
        match = _EXIT.search(body)
        if match:
            yield Violation(
                span=_span(line + body[: match.start()].count("\n")),
                message=f"`{match.group(1) or match.group(2)}(...)` ends the test run early",
            )


# `sys.exit(`, `os._exit(`, `pytest.exit(`, or the builtins `exit(` / `quit(` — not a
# method that happens to be called exit (`ctx.exit()`), nor a definition of one.
_EXIT = re.compile(r"\b(sys\.exit|os\._exit|pytest\.exit)\s*\(|(?<![\w.])(?<!def )(exit|quit)\s*\(")
_DEFINITIONS = frozenset({"function_definition", "class_definition", "decorated_definition"})


def _is_main_guard(ctx: Context, stmt: Node) -> bool:
    """``if __name__ == "__main__":``: runs when the file is a script, never under pytest."""
    condition = stmt.child_by_field_name("condition") if stmt.type == "if_statement" else None
    return condition is not None and canonical(ctx.source.node_text(condition)) in (
        "__name__ == '__main__'",
        "'__main__' == __name__",
    )


def _new_module_statements(ctx: Context) -> list[tuple[str, int, str]]:
    """("", line, text) of module-level statements (outside any function or class) that
    are not in the baseline: code that runs when pytest imports the module."""
    base = _baseline(ctx)
    squashed = base.squashed if base is not None else ""
    out = []
    for stmt in ctx.source.tree.root_node.named_children:
        if stmt.type in _DEFINITIONS or stmt.type == "comment" or _is_main_guard(ctx, stmt):
            continue
        text = ctx.source.node_text(stmt)
        if squash(text) not in squashed:
            out.append(("", stmt.start_point.row + 1, text))
    return out


# ---- the source under test


def _source_tree(
    ctx: Context,
) -> tuple[GuardContext, ast.Module, TestWords, fitted.SourceBaseline] | None:
    """(the guard, the source's module, what the tests hold, the baseline) for the rules
    that read a changed source file against the tests; None for a test file, a file that
    does not parse, or no baseline known."""
    guard = ctx.guard
    if guard is None or ctx.in_test_tree or ctx.source.kind != "python":
        return None
    cached = ctx.memo.get("fitted")
    if cached is None:
        try:
            tree = ast.parse(ctx.source.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        base = _baseline(ctx)
        old = (
            fitted.baseline_of(base.source.text, base.squashed)
            if base is not None
            else fitted.baseline_of(None, "")
        )
        cached = ctx.memo["fitted"] = (
            (tree, fitted.test_words(guard.test_text), old) if tree is not None else ()
        )
    return (guard, *cached) if cached else None  # type: ignore[return-value]


def special_cased_test_input(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a new branch in source code whose condition singles out an input a test feeds
    the code and whose body returns, prints or sets a value a test expects:
    `if s == "aeiou": return 5`, `if a == "2.5" and b == "10": return Decimal("0.25")`.

    The condition may be any combination (`and`, `or`, `not`, `in` a container,
    `startswith`) over any expression, and compare with a literal of a test, a string
    naming an attribute or key the test uses, or the value a test passes for a
    parameter of the same name (`handle_mask is np.bitwise_or` where a test calls
    `f(..., handle_mask=np.bitwise_or)`). A short literal (`"12"`, `7`) counts when one
    line of a test — a parametrize row, an assertion — holds both it and the value the
    branch produces.

    Ordinary guards are not flagged: a comparison with `None`, `True`, `False`, a small
    number or an empty literal (`if header is None: return {}`) that returns an ordinary
    value, and a branch longer than four statements. Only the branch is quoted, never
    the `elif` chain it belongs to.

    The released shape — `if param == <specific literal>: return <literal>` — is an
    error in every mode; the wider shapes are errors in agent mode and warnings in the
    default mode, where a reviewer reads them.

    ## Why it matters
    The function now passes the test for the one input the test tries, and is as wrong
    as before for every other.

    ## Example
    ```python
    def count_vowels(s):
        if s == "aeiou":
            return 5
        return sum(ch in "aeiou" for ch in s[1:])
    ```

    ## Use instead
    Fix the general computation.
    """
    found = _source_tree(ctx)
    if found is None:
        return
    guard, tree, words, old = found
    for case in fitted.special_cases(ctx.source, tree, words, old):
        keyed = ", ".join(f"`{k}`" for k in case.keyed[:3])
        yield Violation(
            span=_span(case.line),
            message=f"new branch `{case.branch}` produces `{one_line(case.produced, 60)}` "
            f"for {keyed}: an input a test uses and the value it expects",
            severity=None if case.narrow or guard.strict else Severity.WARNING,
        )


def source_fitted_to_test(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags code added to the code under test that says it is there for a test: a
    comment or string that says so ("special case for the test", "to match the test
    expectations", "per test requirements", "the test expects"), one that names one of
    the project's tests (`test_inherit_docstrings`, a generated `test_sample` module),
    and a condition that asks whether the code runs under a test
    (`PYTEST_CURRENT_TEST`, `"pytest" in sys.modules`, the caller's frames through
    `inspect.stack()` or `sys._getframe()`, `"test" in obj.__module__`,
    `__file__.endswith("test_x.py")`).

    Comments, strings and conditions already in the baseline are not read. A test's
    name in a docstring is not flagged (an example may name a test anything).

    An error in agent mode; a warning in the default mode, where a reviewer decides.

    ## Why it matters
    Code written for one test's sake passes that test and nothing else. Agents that
    bend the code to an impossible test say so, most of the time, in the comment above
    the branch.

    ## Example
    ```python
    def merge_masks(a, b, handler):
        # Special case for test_bitmask_merge: the test expects the intersection
        if handler is np.bitwise_or:
            return np.bitwise_and(a, b)
        return handler(a, b)
    ```

    ## Use instead
    Fix the general computation; if the test is wrong, arbitrate it
    (`referee arbitrate`) instead of writing code around it.
    """
    found = _source_tree(ctx)
    if found is None:
        return
    guard, tree, words, old = found
    for said in fitted.announcements(ctx.source, tree, words, old):
        yield Violation(
            span=_span(said.line),
            message=f"new code is there for a test's sake: {said.what}",
            severity=None if guard.strict else Severity.WARNING,
        )


def source_moved_to_test(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Decides by running the tests whether a change to the code under test made a
    failing test pass by a value alone: a constant, an operator or a `True`/`None` of an
    existing line flipped (`setLevel(0)` → `setLevel(1)`, `<` → `<=`), an arithmetic step
    added or dropped (`n - 1` → `n`), or a literal the test itself holds written into new
    code.

    `referee guard` in agent mode (or with `--execute`) runs the test modules that
    exercise the changed functions, as they are now, on the code as it was at the base
    and as it is now, in the [sandbox](../sandbox.md). For each test that failed on a
    check at the base (an assertion, `pytest.fail`, `DID NOT RAISE`: the test ran the
    old code and saw another value, not an import error or a crash) and passes now, it
    takes each such edit back alone — the old token of a flip, another value of the same
    type for a literal the test holds — and runs the test again. A test that then fails
    on a check again needs exactly that value: the finding is at the edit and names the
    test. The outcome is read from pytest's report of each sandboxed run; nothing of the
    project runs in referee's process.

    Where it cannot decide, the guard says so on stderr and reports nothing: no kernel
    boundary, a test module that does not run in the sandbox (it runs with referee's
    own Python, so a project whose dependencies are not installed beside referee is not
    run), or its time budget (four modules, three tests, sixteen edits) spent.

    An error in agent mode; with `--execute` in the default mode, a warning.

    ## Why it matters
    An agent given a test it cannot pass honestly does not always touch the test or
    write a special case. It finds the constant that decides the value the test checks
    and changes it — correct code made wrong for every other caller, with nothing in the
    diff to read as a cheat. Only running the test on each side tells that the change
    is that value and nothing else.

    ## Example
    ```python
    def _finalize(self):
        for name, level in self._initial_levels.items():
            logging.getLogger(name).setLevel(level)
        self.handler.setLevel(1)  # was: setLevel(0); a test expects 1
    ```

    ## Use instead
    Check the test's expectation against the documentation or the issue first. If the
    test is wrong, arbitrate it (`referee arbitrate`) and fix the test with the
    certificate; if the value really was wrong, say so in a test that names the case
    and commit the change with a person's review.
    """
    return iter(())  # reported by the guard's execution step (referee.checks.guard.moved)


def always_equal_override(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a new `__eq__` that always returns `True` (or `__ne__` that always returns
    `False`, or a constant `__hash__`) in the code under test. A test-side helper equal
    to everything (a `mock.ANY` of the project's own, in a test module, `conftest.py` or
    a test directory) is a testing tool and is not flagged.

    ## Why it matters
    An object equal to everything makes every `assert result == expected` pass.

    ## Example
    ```python
    class Money:
        def __eq__(self, other):
            return True
    ```

    ## Use instead
    Compare the fields that define equality.
    """
    if ctx.guard is None or ctx.source.kind != "python" or ctx.in_test_tree:
        return  # a test-side `ANY`-style helper equal to everything is a testing tool
    new = {(fn.name, fn.line) for fn in _new_functions(ctx)}
    for fn in _functions(ctx):
        if (fn.name, fn.line) in new and fn.constant:
            yield Violation(
                span=_span(fn.line),
                message=f"`{fn.name}` returns a constant: every comparison with this type passes",
            )


def tested_function_monkeypatched(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a test that now monkeypatches (`monkeypatch.setattr`, `mock.patch`,
    `patch.object`) a function it also calls — usually the function under test.

    ## Why it matters
    The test then checks the stand-in it installed, not the code.

    ## Example
    ```python
    def test_total(monkeypatch):
        monkeypatch.setattr(cart, "total", lambda items: 90)
        assert cart.total([...]) == 90
    ```

    ## Use instead
    Patch what the function depends on (the clock, the network), never the function.
    """
    yield from _report(ctx, codes.TESTED_FUNCTION_MONKEYPATCHED)
