"""One test compared with itself at the baseline, or a baseline test that is gone: which
of its checks were removed, weakened, swallowed, skipped or fed other data."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from referee.checks.guard import codes
from referee.checks.guard.changed_values import (
    case_changed,
    expandable,
    input_note,
    inputs_changed,
    lost_rows,
    quoted,
    table_changed,
    value_changed,
)
from referee.checks.guard.compare import (
    Check,
    checks_of,
    compare_checks,
    is_value,
    row_label,
)
from referee.checks.guard.context import GuardContext
from referee.checks.guard.facts import (
    Assertion,
    Relaxation,
    TestFacts,
    canonical,
    marker_key,
    squash_lines,
)
from referee.checks.guard.normal import (
    callee,
    is_constant,
    one_line,
    parse_expression,
    unparse,
)
from referee.checks.guard.verdict import Found, judge, relaxed, where
from referee.checks.models import Severity


def fingerprint_key(facts: TestFacts) -> str:
    return "|".join(sorted(f"{s}{o}{e}" for s, o, e in facts.fingerprint))


def elsewhere_keys(facts: TestFacts) -> list[str]:
    keys = [f"body:{facts.body_hash}"]
    if facts.fingerprint:
        keys.append(f"asserts:{fingerprint_key(facts)}")
    keys.extend(f"assert:{a.key}" for a in facts.assertions)
    keys.extend(f"assert:{c.key}" for c in checks_of(facts) if c.row is not None)
    return keys


def missing_test(
    guard: GuardContext,
    before: TestFacts,
    after: TestFacts | None,
    base: dict[str, TestFacts],
    current: dict[str, TestFacts],
    present: set[str],
) -> list[Found]:
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
        there = moved.id.split("::", 1)[0]
        return [
            Found(f.code, 1, f"{f.message} (the test now lives in {there}:{f.line})", f.severity)
            for f in compare_test(guard, before, moved)
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
            Found(
                codes.RENAMED_OUT_OF_COLLECTION,
                renamed.line,
                f"test `{before.name}` ({where(guard, before)}) is now `{renamed.name}`, "
                "which pytest does not collect: it no longer runs",
            )
        ]
    counterpart = _counterpart(guard, before, live, base, current)
    if counterpart is not None:
        here = counterpart.id.split("::", 1)[0]
        now = f"`{counterpart.name}`" + (
            f" in {here}" if here != before.id.split("::", 1)[0] else ""
        )
        return [
            replace(f, message=f"{f.message} (the test is now {now})")
            for f in compare_test(guard, before, counterpart)
        ]
    if (
        live
        and all(squash_lines(c.assertion.text) in guard.test_text for c in live if c.row is None)
        and all(c.row is None for c in live)
    ):
        return []  # the same checks, written the same way, in a test file not changed
    if not live:
        return [
            relaxed(
                guard,
                codes.TEST_REMOVED,
                1,
                f"test `{before.name}` ({where(guard, before)}) was removed; it had no "
                "assertion (it checked that what it runs does not raise)",
            )
        ]
    missing = [c for c in live if f"assert:{c.key}" not in available]
    shown = ", ".join(f"`{one_line(check_text(c))}`" for c in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return [
        judge(
            guard,
            (before,),
            codes.TEST_REMOVED,
            1,
            f"test `{before.name}` ({where(guard, before)}) was removed; "
            f"{len(missing)} of its {len(live)} check(s) are made by no test now: {shown}{more}",
        )
    ]


def check_text(check: Check) -> str:
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


def compare_test(guard: GuardContext, before: TestFacts, after: TestFacts) -> list[Found]:
    found: list[Found] = []
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
    rows_lost = lost_rows(guard, before, after)
    changed_rows: dict[int | None, tuple[Check, Check]] = {}
    reported_rows: set[int] = set()
    fed_lines: set[int] = set()
    for change in changes:
        old, new = change.old, change.new
        if change.code == codes.FAILURE_SWALLOWED and new is not None:
            found.append(swallowed(guard, name, before, old.assertion, new.assertion))
        elif change.code == "raises" and new is not None:
            found.extend(compare_raises(guard, tests, name, before, old.assertion, new.assertion))
        elif change.code == "approx" and new is not None:
            found.extend(compare_approx(guard, tests, name, before, old.assertion, new.assertion))
        elif change.code in (codes.COMPARISON_WEAKENED, "inverted") and new is not None:
            how = (
                f"was weakened to `{one_line(check_text(new))}`: `{old.op}` -> `{new.op}`"
                if change.code == codes.COMPARISON_WEAKENED
                else f"was inverted to `{one_line(check_text(new))}`: it now asserts the opposite"
            )
            found.append(
                judge(
                    guard,
                    tests,
                    codes.COMPARISON_WEAKENED,
                    new.assertion.line,
                    f"in {name}, `{one_line(check_text(old))}` "
                    f"({where(guard, before, old.assertion.line)}) {how}",
                )
            )
        elif change.code == "normalised" and new is not None:
            found.append(
                relaxed(
                    guard,
                    codes.COMPARISON_WEAKENED,
                    new.assertion.line,
                    f"in {name}, the value `{one_line(old.subject, 60)}` "
                    f"({where(guard, before, old.assertion.line)}) is now compared as "
                    f"`{one_line(new.subject, 60)}`: normalised until it matches?",
                )
            )
        elif change.code == "call-changed" and new is not None:
            if old.row is not None and old.row in reported_rows:
                continue
            message = (
                f"in {name}, {old.assertion.kind} `{one_line(old.assertion.text, 100)}` "
                f"({where(guard, before, old.assertion.line)}) now checks something "
                f"else: `{one_line(new.assertion.text, 100)}`, without a certificate"
            )
            # as a removed check would be: a warning in a test rewritten against another
            # API (the default mode), else an error unless its code changed too
            if rewritten:
                found.append(
                    relaxed(guard, codes.EXPECTED_VALUE_CHANGED, new.assertion.line, message)
                )
            else:
                found.append(
                    judge(guard, tests, codes.EXPECTED_VALUE_CHANGED, new.assertion.line, message)
                )
        elif change.code == "conditioned" and new is not None:
            found.append(
                relaxed(
                    guard,
                    codes.FAILURE_SWALLOWED,
                    new.assertion.line,
                    f"in {name}, `{one_line(new.assertion.text)}` "
                    f"({where(guard, before, old.assertion.line)}) is now checked only when "
                    f"`{one_line(new.assertion.condition or '', 80)}`",
                )
            )
        elif change.code == "inputs" and new is not None:
            if new.assertion.line in fed_lines:
                continue
            fed_lines.add(new.assertion.line)
            found.extend(inputs_changed(guard, before, after, old, new))
        elif change.code == codes.EXPECTED_VALUE_CHANGED and new is not None:
            if not is_value(old.expected, before) or not (
                is_value(new.expected, after) or is_constant(old.expected or "")
            ):
                # An expected side computed by the test: not a value to compare, but a
                # check that compares with something else now.
                found.append(
                    relaxed(
                        guard,
                        codes.EXPECTED_VALUE_CHANGED,
                        new.assertion.line,
                        f"in {name}, `{one_line(old.subject)}` was compared with "
                        f"`{quoted(old.expected)}` ({where(guard, before, old.assertion.line)})"
                        f" and is now compared with `{quoted(new.expected)}`"
                        + input_note(after, new),
                    )
                )
                continue
            if old.row is not None:
                if old.row not in changed_rows:
                    changed_rows[old.row] = (old, new)
                continue
            found.extend(value_changed(guard, tests, before, after.id, old, new))
        elif change.code in (codes.ASSERTION_REMOVED, codes.PARAMETRIZE_CASES_REMOVED):
            if old.row is not None and old.row in rows_lost:
                if old.row not in reported_rows:
                    reported_rows.add(old.row)
                    found.append(
                        judge(
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
                f"in {name}{in_case}, {old.assertion.kind} `{one_line(check_text(old))}` "
                f"({where(guard, before, old.assertion.line)}) was removed"
            )
            if rewritten and not guard.strict and change.code == codes.ASSERTION_REMOVED:
                found.append(
                    Found(
                        codes.ASSERTION_REMOVED,
                        after.line,
                        f"{message}; the test no longer calls `{stopped[0]}` and makes "
                        f"{len(gained)} new check(s) instead, e.g. "
                        f"`{one_line(check_text(gained[0]), 60)}`: rewritten? (an error in "
                        "agent mode)",
                        Severity.WARNING,
                    )
                )
                continue
            found.append(judge(guard, tests, codes.ASSERTION_REMOVED, after.line, message))
    for old, new in changed_rows.values():
        found.extend(case_changed(guard, tests, before, after, old, new))
    for row in sorted(rows_lost - reported_rows - set(changed_rows)):
        found.append(
            judge(
                guard,
                tests,
                codes.PARAMETRIZE_CASES_REMOVED,
                after.line,
                f"in {name}, the parametrized case "
                f"{one_line(row_label(before, row, guard.fixtures), 120)} ({guard.base}) "
                "was removed",
            )
        )
    if not expandable(guard, before, after):
        found.extend(table_changed(guard, tests, before, after))
    found.extend(marks_changed(guard, name, before, after))
    for patched in after.patched:
        if patched not in before.patched and patched in after.calls:
            found.append(
                Found(
                    codes.TESTED_FUNCTION_MONKEYPATCHED,
                    after.line,
                    f"{name} now monkeypatches `{patched}`, which it also calls: "
                    "the test may be checking its own stand-in",
                )
            )
    return found


def marks_changed(
    guard: GuardContext, name: str, before: TestFacts, after: TestFacts
) -> list[Found]:
    found = []
    skipped_before = {marker_key(m) for m in before.skips}
    for marker in after.skips:
        if marker_key(marker) not in skipped_before:
            message = f"{name} is now skipped: `{one_line(marker)}`"
            found.append(Found(codes.SKIP_ADDED, after.line, message))
    xfailed_before = {marker_key(m) for m in before.xfails}
    for marker in after.xfails:
        if marker_key(marker) not in xfailed_before:
            found.append(
                Found(
                    codes.XFAIL_ADDED,
                    after.line,
                    f"{name} is now expected to fail: `{one_line(marker)}`",
                )
            )
    if after.strict_false and not before.strict_false and (before.xfails or before.relaxations):
        found.append(Found(codes.XFAIL_ADDED, after.line, f"{name}'s xfail is no longer strict"))
    found.extend(relaxations_changed(guard, name, before.relaxations, after.relaxations))
    return found


def relaxations_changed(
    guard: GuardContext,
    name: str,
    before: list[Relaxation],
    after: list[Relaxation],
    line: int | None = None,
) -> list[Found]:
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
            relaxed(
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


def swallowed(
    guard: GuardContext, name: str, before: TestFacts, old: Assertion, new: Assertion
) -> Found:
    return Found(
        codes.FAILURE_SWALLOWED,
        new.line,
        f"in {name}, `{one_line(new.text)}` ({where(guard, before, old.line)}) is now "
        f"{new.silenced}",
    )


def compare_raises(
    guard: GuardContext,
    tests: tuple[TestFacts, ...],
    name: str,
    before: TestFacts,
    old: Assertion,
    new: Assertion,
) -> list[Found]:
    found = []
    broad = {"Exception", "BaseException"}
    if set(new.raises) & broad and not set(old.raises) & broad:
        found.append(
            judge(
                guard,
                tests,
                codes.RAISES_WIDENED,
                new.line,
                f"in {name}, `{one_line(old.text)}` ({where(guard, before, old.line)}) "
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
            judge(
                guard,
                tests,
                codes.RAISES_MATCH_REMOVED,
                new.line,
                f"in {name}, the `match={old.match}` of `{one_line(old.text)}` "
                f"({where(guard, before, old.line)}) became `{new.match}`, which "
                "matches any message",
            )
        )
    if old.match is not None and new.match is None:
        found.append(
            judge(
                guard,
                tests,
                codes.RAISES_MATCH_REMOVED,
                new.line,
                f"in {name}, the `match={old.match}` of `{one_line(old.text)}` "
                f"({where(guard, before, old.line)}) was removed",
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


def compare_approx(
    guard: GuardContext,
    tests: tuple[TestFacts, ...],
    name: str,
    before: TestFacts,
    old: Assertion,
    new: Assertion,
) -> list[Found]:
    for label, was, now in zip(
        ("rel", "abs"),
        _effective_tolerance(old.tolerance),
        _effective_tolerance(new.tolerance),
        strict=True,
    ):
        if now > was:
            return [
                judge(
                    guard,
                    tests,
                    codes.APPROX_LOOSENED,
                    new.line,
                    f"in {name}, the approx tolerance {label} went from {was:g} "
                    f"to {now:g} ({where(guard, before, old.line)})",
                )
            ]
    return []
