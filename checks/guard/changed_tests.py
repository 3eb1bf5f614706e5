"""One test compared with itself at the baseline, or a baseline test that is gone: which
of its checks were removed, weakened, swallowed, skipped or fed other data."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from referee.checks.guard import codes
from referee.checks.guard.asserted import Assertion
from referee.checks.guard.changed_values import (
    case_changed,
    certified_call,
    expandable,
    input_note,
    inputs_changed,
    lost_rows,
    quoted,
    table_changed,
    value_changed,
)
from referee.checks.guard.compare import (
    Change,
    Check,
    checks_of,
    compare_checks,
    is_value,
    row_label,
)
from referee.checks.guard.context import GuardContext
from referee.checks.guard.facts import Relaxation, TestFacts
from referee.checks.guard.markers import marker_key
from referee.checks.guard.normal import (
    callee,
    canonical,
    is_constant,
    one_line,
    parse_expression,
    squash_lines,
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
    live = [c for c in checks_of(before, guard.fixtures) if c.assertion.silenced is None]
    if _checks_still_made(guard, before, live, available):
        return []
    became = _what_it_became(guard, before, after, live, base, current)
    if became is not None:
        return became
    if (
        live
        and all(squash_lines(c.assertion.text) in guard.test_text for c in live if c.row is None)
        and all(c.row is None for c in live)
    ):
        return []  # the same checks, written the same way, in a test file not changed
    return _removed(guard, before, live, available)


def _checks_still_made(
    guard: GuardContext, before: TestFacts, live: list[Check], available: set[str]
) -> bool:
    """Whether the test's checks are all made now, by a test of another name or file."""
    if f"body:{before.body_hash}" in available or (
        before.fingerprint and f"asserts:{fingerprint_key(before)}" in available
    ):
        return True  # renamed or moved, assertions intact
    # split into several tests, merged into one, or parametrized
    return bool(live) and all(
        f"assert:{c.key}" in available or guard.counts_now.get(c.key, 0) > 0 for c in live
    )


def _what_it_became(
    guard: GuardContext,
    before: TestFacts,
    after: TestFacts | None,
    live: list[Check],
    base: dict[str, TestFacts],
    current: dict[str, TestFacts],
) -> list[Found] | None:
    """The findings of the test a missing one became — moved to another file, renamed
    out of collection, or renamed and edited — or None when it became none of them."""
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
    if counterpart is None:
        return None
    here = counterpart.id.split("::", 1)[0]
    now = f"`{counterpart.name}`" + (f" in {here}" if here != before.id.split("::", 1)[0] else "")
    return [
        replace(f, message=f"{f.message} (the test is now {now})")
        for f in compare_test(guard, before, counterpart)
    ]


def _removed(
    guard: GuardContext, before: TestFacts, live: list[Check], available: set[str]
) -> list[Found]:
    """A test removed with its checks: which of them no test makes now."""
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
    """What a test that is still there lost since the baseline: each change of its checks
    (compare.compare_checks) reported under its rule, then its parametrize cases and
    table, its marks, and what it newly monkeypatches."""

    def still_made(key: tuple[str, str, str | None]) -> bool:
        was = guard.counts_before.get(key, 0)
        return was > 0 and guard.counts_now.get(key, 0) >= was

    changes = compare_checks(before, after, guard.fixtures, still_made)
    comparison = _TestComparison(guard, before, after, changes)
    for change in changes:
        comparison.report(change)
    comparison.report_cases()
    comparison.report_marks_and_patches()
    return comparison.found


class _TestComparison:
    """One test's changes being reported, with what the reports share: whether the test
    was rewritten against another API, and the parametrized cases already reported."""

    def __init__(
        self, guard: GuardContext, before: TestFacts, after: TestFacts, changes: list[Change]
    ) -> None:
        self.guard, self.before, self.after = guard, before, after
        self.name = f"`{before.name}`"
        self.tests = (before, after)
        self.found: list[Found] = []
        self.gained = [c.old for c in changes if c.code == "gained"]
        removed = [c for c in changes if c.code == codes.ASSERTION_REMOVED]
        # A test rewritten against another API (a private helper replaced by the public
        # one): it no longer calls something it called, and makes at least half as many
        # new checks as it lost. Its removals are warnings in the default mode,
        # errors in agent mode.
        self.stopped = sorted(before.calls - after.calls)
        self.rewritten = (
            bool(removed)
            and bool(self.stopped)
            and bool(self.gained)
            and 2 * len(self.gained) >= len(removed)
        )
        self.rows_lost = lost_rows(guard, before, after)
        self.changed_rows: dict[int | None, tuple[Check, Check]] = {}
        self.reported_rows: set[int] = set()
        self.fed_lines: set[int] = set()

    def where(self, line: int) -> str:
        return where(self.guard, self.before, line)

    # ------------------------------------------------------------------ one change each

    def report(self, change: Change) -> None:
        old, new = change.old, change.new
        if change.code in (codes.ASSERTION_REMOVED, codes.PARAMETRIZE_CASES_REMOVED):
            self._removed(change.code, old)
            return
        if new is None:
            return
        if change.code == codes.FAILURE_SWALLOWED:
            self._swallowed(old.assertion, new.assertion)
        elif change.code == "raises":
            self._raises(old.assertion, new.assertion)
        elif change.code == "approx":
            self._approx(old.assertion, new.assertion)
        elif change.code in (codes.COMPARISON_WEAKENED, "inverted"):
            self._weakened(change.code, old, new)
        elif change.code == "normalised":
            self._normalised(old, new)
        elif change.code == "call-changed":
            self._call_changed(old, new)
        elif change.code == "conditioned":
            self._conditioned(old, new)
        elif change.code == "inputs":
            self._fed(old, new)
        elif change.code == codes.EXPECTED_VALUE_CHANGED:
            self._expected_changed(old, new)

    def _judged(self, code: str, line: int, message: str) -> None:
        self.found.append(judge(self.guard, self.tests, code, line, message))

    def _swallowed(self, old: Assertion, new: Assertion) -> None:
        self.found.append(
            Found(
                codes.FAILURE_SWALLOWED,
                new.line,
                f"in {self.name}, `{one_line(new.text)}` ({self.where(old.line)}) is now "
                f"{new.silenced}",
            )
        )

    def _raises(self, old: Assertion, new: Assertion) -> None:
        broad = {"Exception", "BaseException"}
        if set(new.raises) & broad and not set(old.raises) & broad:
            self._judged(
                codes.RAISES_WIDENED,
                new.line,
                f"in {self.name}, `{one_line(old.text)}` ({self.where(old.line)}) "
                f"now accepts any exception: {', '.join(new.raises)}",
            )
        if (
            old.match is not None
            and new.match is not None
            and _matches_anything(new.match)
            and not _matches_anything(old.match)
        ):
            self._judged(
                codes.RAISES_MATCH_REMOVED,
                new.line,
                f"in {self.name}, the `match={old.match}` of `{one_line(old.text)}` "
                f"({self.where(old.line)}) became `{new.match}`, which "
                "matches any message",
            )
        if old.match is not None and new.match is None:
            self._judged(
                codes.RAISES_MATCH_REMOVED,
                new.line,
                f"in {self.name}, the `match={old.match}` of `{one_line(old.text)}` "
                f"({self.where(old.line)}) was removed",
            )

    def _approx(self, old: Assertion, new: Assertion) -> None:
        for label, was, now in zip(
            ("rel", "abs"),
            _effective_tolerance(old.tolerance),
            _effective_tolerance(new.tolerance),
            strict=True,
        ):
            if now > was:
                self._judged(
                    codes.APPROX_LOOSENED,
                    new.line,
                    f"in {self.name}, the approx tolerance {label} went from {was:g} "
                    f"to {now:g} ({self.where(old.line)})",
                )
                return

    def _weakened(self, code: str, old: Check, new: Check) -> None:
        how = (
            f"was weakened to `{one_line(check_text(new))}`: `{old.op}` -> `{new.op}`"
            if code == codes.COMPARISON_WEAKENED
            else f"was inverted to `{one_line(check_text(new))}`: it now asserts the opposite"
        )
        self._judged(
            codes.COMPARISON_WEAKENED,
            new.assertion.line,
            f"in {self.name}, `{one_line(check_text(old))}` "
            f"({self.where(old.assertion.line)}) {how}",
        )

    def _normalised(self, old: Check, new: Check) -> None:
        self.found.append(
            relaxed(
                self.guard,
                codes.COMPARISON_WEAKENED,
                new.assertion.line,
                f"in {self.name}, the value `{one_line(old.subject, 60)}` "
                f"({self.where(old.assertion.line)}) is now compared as "
                f"`{one_line(new.subject, 60)}`: normalised until it matches?",
            )
        )

    def _call_changed(self, old: Check, new: Check) -> None:
        if old.row is not None and old.row in self.reported_rows:
            return
        certified = certified_call(
            self.guard, self.before, self.after.id, old.assertion.text, new.assertion.text
        )
        if certified is not None:  # arbitration's fix of a value passed to a helper
            self.found.append(
                Found(
                    codes.EXPECTED_VALUE_CHANGED,
                    new.assertion.line,
                    f"in {self.name}, `{one_line(old.assertion.text, 100)}` became "
                    f"`{one_line(new.assertion.text, 100)}`, certified by {certified}",
                    severity=Severity.INFO,
                )
            )
            return
        message = (
            f"in {self.name}, {old.assertion.kind} `{one_line(old.assertion.text, 100)}` "
            f"({self.where(old.assertion.line)}) now checks something "
            f"else: `{one_line(new.assertion.text, 100)}`, without a certificate"
        )
        # as a removed check would be: a warning in a test rewritten against another
        # API (the default mode), else an error unless its code changed too
        code, line = codes.EXPECTED_VALUE_CHANGED, new.assertion.line
        if self.rewritten:
            self.found.append(relaxed(self.guard, code, line, message))
        else:
            self._judged(code, line, message)

    def _conditioned(self, old: Check, new: Check) -> None:
        self.found.append(
            relaxed(
                self.guard,
                codes.FAILURE_SWALLOWED,
                new.assertion.line,
                f"in {self.name}, `{one_line(new.assertion.text)}` "
                f"({self.where(old.assertion.line)}) is now checked only when "
                f"`{one_line(new.assertion.condition or '', 80)}`",
            )
        )

    def _fed(self, old: Check, new: Check) -> None:
        if new.assertion.line in self.fed_lines:
            return
        self.fed_lines.add(new.assertion.line)
        self.found.extend(inputs_changed(self.guard, self.before, self.after, old, new))

    def _expected_changed(self, old: Check, new: Check) -> None:
        before, after = self.before, self.after
        if not is_value(old.expected, before) or not (
            is_value(new.expected, after) or is_constant(old.expected or "")
        ):
            # An expected side computed by the test: not a value to compare, but a
            # check that compares with something else now.
            self.found.append(
                relaxed(
                    self.guard,
                    codes.EXPECTED_VALUE_CHANGED,
                    new.assertion.line,
                    f"in {self.name}, `{one_line(old.subject)}` was compared with "
                    f"`{quoted(old.expected)}` ({self.where(old.assertion.line)})"
                    f" and is now compared with `{quoted(new.expected)}`" + input_note(after, new),
                )
            )
            return
        if old.row is not None:
            if old.row not in self.changed_rows:
                self.changed_rows[old.row] = (old, new)
            return
        self.found.extend(value_changed(self.guard, self.tests, before, after.id, old, new))

    def _removed(self, code: str, old: Check) -> None:
        guard, before, after = self.guard, self.before, self.after
        if old.row is not None and old.row in self.rows_lost:
            if old.row not in self.reported_rows:
                self.reported_rows.add(old.row)
                self._case_removed(old.row)
            return
        case = row_label(before, old.row, guard.fixtures)
        in_case = f" (case {one_line(case, 60)})" if case else ""
        message = (
            f"in {self.name}{in_case}, {old.assertion.kind} `{one_line(check_text(old))}` "
            f"({self.where(old.assertion.line)}) was removed"
        )
        if self.rewritten and not guard.strict and code == codes.ASSERTION_REMOVED:
            self.found.append(
                Found(
                    codes.ASSERTION_REMOVED,
                    after.line,
                    f"{message}; the test no longer calls `{self.stopped[0]}` and makes "
                    f"{len(self.gained)} new check(s) instead, e.g. "
                    f"`{one_line(check_text(self.gained[0]), 60)}`: rewritten? (an error in "
                    "agent mode)",
                    Severity.WARNING,
                )
            )
            return
        self._judged(codes.ASSERTION_REMOVED, after.line, message)

    def _case_removed(self, row: int) -> None:
        self._judged(
            codes.PARAMETRIZE_CASES_REMOVED,
            self.after.line,
            f"in {self.name}, the parametrized case "
            f"{one_line(row_label(self.before, row, self.guard.fixtures), 120)} "
            f"({self.guard.base}) was removed",
        )

    # ------------------------------------------------------------------ the whole test

    def report_cases(self) -> None:
        """The parametrized cases whose values changed, those lost, and a table the guard
        could not read row by row."""
        guard, before, after = self.guard, self.before, self.after
        for old, new in self.changed_rows.values():
            self.found.extend(case_changed(guard, self.tests, before, after, old, new))
        for row in sorted(self.rows_lost - self.reported_rows - set(self.changed_rows)):
            self._case_removed(row)
        if not expandable(guard, before, after):
            self.found.extend(table_changed(guard, self.tests, before, after))

    def report_marks_and_patches(self) -> None:
        before, after = self.before, self.after
        self.found.extend(marks_changed(self.guard, self.name, before, after))
        for patched in after.patched:
            if patched not in before.patched and patched in after.calls:
                self.found.append(
                    Found(
                        codes.TESTED_FUNCTION_MONKEYPATCHED,
                        after.line,
                        f"{self.name} now monkeypatches `{patched}`, which it also calls: "
                        "the test may be checking its own stand-in",
                    )
                )


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
