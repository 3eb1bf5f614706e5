"""What a test checks, compared between the baseline and now.

A test's *checks* are its assertions as facts (checks/guard/facts.py), expanded over its
parametrize cases: ``assert f(x) == y`` with rows ``(1, 2), (2, 3)`` checks ``f(1) == 2``
and ``f(2) == 3``. Two tests are compared by their checks, so the form a check is
written in does not matter: two asserts turned into one parametrized test, an argname
renamed, a column added, rows reordered, deduplicated or wrapped in ``pytest.param`` all
check the same things. A check that is gone from one test but still made as often as
before somewhere in the changed test tree moved; it was not removed.

What is left is what changed, each with what it was and what it is now:

* the same subject, another expected value — REF302 (a constant compared as the value it
  evaluates to; an expected side computed from the test's own variables is not a value);
* the same subject, a comparison that pins it down less — REF303;
* a parametrize case whose values changed — REF302, naming the columns that changed;
* a case with no counterpart — REF307; a check with none — REF301;
* the same check fed other data ("inputs": what the statements before it bind or change),
  put under a condition ("conditioned"), inverted, its compared value normalised
  (`f(x)` -> `f(x).strip()`), or a checking helper called with other arguments
  ("call-changed") — the shapes real agents used on impossible tests (changed_tests.py
  says how each is reported).
"""

from __future__ import annotations

import ast
import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from referee.checks.guard import codes
from referee.checks.guard.asserted import STRENGTH, Assertion
from referee.checks.guard.facts import TestFacts
from referee.checks.guard.normal import (
    callee,
    is_constant,
    names_in,
    parse_expression,
    statement_key,
    substitute,
    unparse,
)

_MAX_CHECKS = 3000  # expanded checks per test; a larger table is compared as written


@dataclass(frozen=True)
class Check:
    subject: str
    op: str
    expected: str | None
    assertion: Assertion  # the written assertion it comes from
    row: int | None = None  # the parametrize row it was expanded for

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.subject, self.op, self.expected)


def rows_of(
    facts: TestFacts, fixtures: Mapping[str, list[str]] | None = None
) -> tuple[tuple[str, ...], list[tuple[str, ...]] | None]:
    """The test's argnames and rows, a parametrized fixture's ``params`` (for a
    parameter that no parametrize table gives) counted as one more table."""
    names, rows = facts.argnames, facts.rows
    if fixtures:
        for param in facts.params:
            values = fixtures.get(param)
            if values is None or param in names:
                continue
            if rows is None and names:
                break
            base = rows if rows is not None else [()]
            if len(base) * len(values) > 400:
                break
            names = (*names, param)
            rows = [(*r, v) for r in base for v in values]
    return names, rows


def checks_of(facts: TestFacts, fixtures: Mapping[str, list[str]] | None = None) -> list[Check]:
    """The test's checks (see the module's docstring), silenced assertions included.
    Kept on the facts (which never change once made) for the fixtures given."""
    cache = facts.__dict__.setdefault("_checks", {})
    key = id(fixtures) if fixtures else 0
    found = cache.get(key)
    if found is None or found[0] is not fixtures:
        found = cache[key] = (fixtures, _checks_of(facts, fixtures))
    return found[1]


def _checks_of(facts: TestFacts, fixtures: Mapping[str, list[str]] | None) -> list[Check]:
    names, rows = rows_of(facts, fixtures)
    assertions = facts.assertions
    if not rows or not names or len(rows) * max(1, len(assertions)) > _MAX_CHECKS:
        return [Check(a.subject, a.op, a.expected, a) for a in assertions]
    out: list[Check] = []
    seen: set[tuple[object, ...]] = set()
    for a in assertions:
        used = names_in(a.subject) | (names_in(a.expected) if a.expected else frozenset())
        if used.isdisjoint(names):
            out.append(Check(a.subject, a.op, a.expected, a))
            continue
        wanted = [i for i, n in enumerate(names) if n in used]
        for index, row in enumerate(rows):
            values = tuple((names[i], row[i]) for i in wanted)
            subject = substitute(a.subject, values)
            expected = substitute(a.expected, values) if a.expected is not None else None
            key = (subject, a.op, expected, a.line)
            if key in seen:
                continue
            seen.add(key)
            out.append(Check(subject, a.op, expected, a, index))
    return out


def is_value(expected: str | None, facts: TestFacts) -> bool:
    """Whether an expected side is a value (a constant, or built from constants and
    names the test does not bind: ``Color.RED``, ``Money(30)``), not computed from the
    test's own variables and fixtures."""
    if expected is None:
        return False
    if is_constant(expected):
        return True
    node = parse_expression(expected)
    if node is None or not names_in(expected).isdisjoint(facts.local_names):
        return False
    for inner in ast.walk(node):
        if isinstance(inner, ast.Call):
            arguments = [*inner.args, *(k.value for k in inner.keywords)]
            if not all(is_constant(unparse(a)) for a in arguments):
                return False
        elif isinstance(inner, (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.DictComp)):
            return False
    return True


@dataclass
class Change:
    """One difference between a test's checks at the base and now."""

    code: str  # REF301 removed, REF302 value changed, REF303 weakened, REF307 case removed,
    #            REF311 silenced, "raises"/"approx" (compared by the caller), "moved",
    #            "inputs", "conditioned", "inverted", "normalised", "call-changed"
    old: Check
    new: Check | None = None


def compare_checks(
    before: TestFacts,
    after: TestFacts,
    fixtures: Mapping[str, list[str]] | None = None,
    still_made: Callable[[tuple[str, str, str | None]], bool] | None = None,
) -> list[Change]:
    """The changes between the checks of ``before`` and ``after`` (the same test, or its
    counterpart after a rename or a move). ``still_made(key)``: whether a check missing
    here is still made as often as before elsewhere in the changed test tree.

    A check made now as it was is compared in place; the others are paired, in turn,
    with a new check on the same subject, with the same expected value, or calling the
    same function; what stays unpaired was removed."""
    old = checks_of(before, fixtures)
    new = checks_of(after, fixtures)
    changes: list[Change] = []
    unmatched = _compare_kept(old, new, changes)
    pool = _Pool(old, new)
    remaining = _pair_by_subject(unmatched, pool, still_made, changes)
    removed = _pair_by_expected(remaining, pool, changes)
    leftover = _pair_by_callee(removed, pool, before, after, changes)
    changes.extend(_removals(leftover, pool, before, after, fixtures))
    # What the test checks now that it did not: a removal next to as many new checks,
    # in a test that stopped calling something, is a test rewritten (see changed_tests.py).
    changes.extend(
        Change("gained", c)
        for c in pool.checks
        if c.assertion.silenced is None and c.op not in ("call", "raise") and not _trivial(c)
    )
    return changes


def _compare_kept(old: list[Check], new: list[Check], changes: list[Change]) -> list[Check]:
    """Add the changes of the base's checks that are still made (the same key): now
    silenced, conditioned or fed other data; return those that are not."""
    by_key: dict[tuple[str, str, str | None], list[Check]] = {}
    for check in new:
        by_key.setdefault(check.key, []).append(check)
    unmatched: list[Check] = []
    for check in old:
        if check.assertion.silenced is not None:
            continue  # it could not fail at the base either
        found = by_key.get(check.key)
        if found is None:
            unmatched.append(check)
            continue
        # Of several equal checks, the counterpart is the one written alike (the same
        # `match=`, tolerance and exceptions), then the nearest.
        live = min(
            (c for c in found if c.assertion.silenced is None),
            key=lambda c, o=check: (
                (c.assertion.match, c.assertion.tolerance, c.assertion.raises)
                != (o.assertion.match, o.assertion.tolerance, o.assertion.raises),
                c.row != o.row,
                abs(c.assertion.line - o.assertion.line),
            ),
            default=None,
        )
        if live is None:
            changes.append(Change(codes.FAILURE_SWALLOWED, check, found[0]))
            continue
        if check.op in ("raises", "approx"):
            changes.append(Change(check.op, check, live))
        if check.assertion.condition is None and all(
            c.assertion.condition is not None for c in found
        ):
            changes.append(Change("conditioned", check, live))
        if all(not same_feeds(check.assertion.feeds, c.assertion.feeds) for c in found):
            # fed other data (of several equal checks, none is fed as this one was)
            changes.append(Change("inputs", check, live))
    return unmatched


class _Pool:
    """New checks beyond the ones the base already made (a second `assert out == x`
    where the base had one): free to pair with the base's unmatched checks, each once."""

    def __init__(self, old: list[Check], new: list[Check]) -> None:
        made = Counter(c.key for c in old)
        self.checks: list[Check] = []
        for check in new:
            if made[check.key] > 0:
                made[check.key] -= 1
            else:
                self.checks.append(check)

    def take(self, match: Callable[[Check], bool]) -> Check | None:
        for index, candidate in enumerate(self.checks):
            if match(candidate):
                return self.checks.pop(index)
        return None


def _pair_by_subject(
    unmatched: list[Check],
    pool: _Pool,
    still_made: Callable[[tuple[str, str, str | None]], bool] | None,
    changes: list[Change],
) -> list[Check]:
    """Pair each unmatched check with a new one on the same subject (the same case
    first) and add how it changed; return those with no such counterpart."""
    remaining: list[Check] = []
    for check in unmatched:
        if still_made is not None and still_made(check.key):
            continue  # moved to another test
        other = pool.take(
            lambda c, o=check: c.subject == o.subject and c.row == o.row
        ) or pool.take(lambda c, o=check: c.subject == o.subject)
        if other is None:
            remaining.append(check)
            continue
        changes.extend(_same_subject(check, other))
    return remaining


def _pair_by_expected(remaining: list[Check], pool: _Pool, changes: list[Change]) -> list[Check]:
    """Pair each check with a new one that compares with the same expected value (the
    subject was rewritten); return those with none."""
    removed: list[Check] = []
    for check in remaining:
        other = pool.take(
            lambda c, o=check: c.op == o.op and o.expected is not None and c.expected == o.expected
        )
        if other is not None:  # the subject was rewritten, the expected value kept
            if other.assertion.silenced is not None:
                changes.append(Change(codes.FAILURE_SWALLOWED, check, other))
            elif check.op in ("raises", "approx"):
                changes.append(Change(check.op, check, other))
            elif normalised(check.subject, other.subject):
                changes.append(Change("normalised", check, other))
            continue
        removed.append(check)
    return removed


def _pair_by_callee(
    removed: list[Check],
    pool: _Pool,
    before: TestFacts,
    after: TestFacts,
    changes: list[Change],
) -> list[Check]:
    """Pair each check with a new one that calls the same function (input and expected
    value both rewritten, or a checking helper called on other values); return those
    with none."""
    leftover: list[Check] = []
    for check in removed:
        function = callee(check.subject)
        other = None
        if function is not None and check.op in ("==", "is", "approx", "raises"):
            other = pool.take(
                lambda c, o=check, f=function: (
                    c.op == o.op and callee(c.subject) == f and c.assertion.silenced is None
                )
            )
        if other is None and check.op == "call" and function is not None:
            # the same checking helper called on other values: `assert_outcomes(failed=1)`
            # became `assert_outcomes(xfailed=1)`
            other = pool.take(
                lambda c, f=function: (
                    c.op == "call" and callee(c.subject) == f and c.assertion.silenced is None
                )
            )
            if other is not None:
                if _arguments(check.subject) != _arguments(other.subject):
                    changes.append(Change("call-changed", check, other))
                continue  # the same arguments, another receiver: the same check
        if other is not None:  # input and expected value both rewritten
            if (
                check.op != "raises"
                and is_value(check.expected, before)
                and is_value(other.expected, after)
                and check.expected != other.expected
            ):
                changes.append(Change(codes.EXPECTED_VALUE_CHANGED, check, other))
            continue
        leftover.append(check)
    return leftover


def _removals(
    leftover: list[Check],
    pool: _Pool,
    before: TestFacts,
    after: TestFacts,
    fixtures: Mapping[str, list[str]] | None,
) -> list[Change]:
    """The checks no new check stands for: removed (a parametrized case, when the table
    has fewer rows), unless a new call to a helper that asserts took them over."""
    changes: list[Change] = []
    helper_calls = sum(1 for c in pool.checks if c.op == "call" and c.assertion.silenced is None)
    rows_before = len(before.rows) if before.rows else 0
    rows_after = len(rows_of(after, fixtures)[1] or [])
    for check in leftover:
        if helper_calls and check.op != "call":
            helper_calls -= 1  # moved into a helper that asserts
            continue
        if check.row is not None and rows_after < rows_before:
            changes.append(Change(codes.PARAMETRIZE_CASES_REMOVED, check))
        else:
            changes.append(Change(codes.ASSERTION_REMOVED, check))
    return changes


def _trivial(check: Check) -> bool:
    """A check that cannot fail whatever the code does: a constant asserted."""
    return check.op in ("truthy", "falsy") and is_constant(check.subject)


def same_feeds(old: tuple[tuple[str, str], ...], new: tuple[tuple[str, str], ...]) -> bool:
    """Whether two assertions are fed the same: the same statements, whitespace, quote
    style, string concatenation and the names of the test's own locals aside."""
    if tuple(text for text, _ in old) == tuple(text for text, _ in new):
        return True
    return _feed_key(tuple(w for _, w in old)) == _feed_key(tuple(w for _, w in new))


@functools.lru_cache(maxsize=4096)
def _feed_key(written: tuple[str, ...]) -> tuple[str, ...]:
    """The statements as :func:`statement_key` reads them, the names they bind as ``_``."""
    keys = [statement_key(text) for text in written]
    bound: set[str] = set()
    for key in keys:
        try:
            tree = ast.parse(key)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        bound |= {
            n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
    if not bound:
        return tuple(sorted(keys))
    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, sorted(bound))) + r")(?!\w)")
    return tuple(sorted(pattern.sub("_", key) for key in keys))


# A comparison and the one that asserts the opposite.
_INVERSE = {
    ("truthy", "falsy"),
    ("falsy", "truthy"),
    ("==", "!="),
    ("!=", "=="),
    ("in", "not in"),
    ("not in", "in"),
    ("is", "is not"),
    ("is not", "is"),
}

# What turns a value into a looser one before it is compared: whitespace, case, order,
# type and precision thrown away.
_NORMALISING_METHODS = frozenset(
    {
        "strip",
        "rstrip",
        "lstrip",
        "lower",
        "upper",
        "casefold",
        "title",
        "splitlines",
        "split",
        "replace",
        "round",
        "item",
        "tolist",
        "keys",
        "values",
    }
)
_NORMALISING_FUNCTIONS = frozenset(
    {
        "sorted",
        "set",
        "frozenset",
        "str",
        "repr",
        "int",
        "float",
        "round",
        "abs",
        "bool",
        "len",
        "list",
        "tuple",
        "type",
        "Counter",
        "dedent",
        "normalize",
        "normalise",
    }
)


def normalised(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` passed through something that forgets part of it
    (``f(x).strip()``, ``sorted(f(x))``, ``str(f(x)).lower()``), so that more values pass."""
    node = parse_expression(new)
    if node is None or old == new:
        return False
    seen = 0
    while node is not None and seen < 6:
        seen += 1
        if unparse(node) == old:
            return seen > 1
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _NORMALISING_METHODS:
            node = func.value
        elif node.args and _name_of(func) in _NORMALISING_FUNCTIONS:
            node = node.args[0]
        else:
            return False
    return False


def _arguments(call: str) -> str | None:
    """A call's arguments as Python prints them (``f(1, k=2)`` -> ``1, k=2``)."""
    node = parse_expression(call)
    if not isinstance(node, ast.Call):
        return None
    return ast.unparse(ast.Call(func=ast.Name("f"), args=node.args, keywords=node.keywords))


def _name_of(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _same_subject(old: Check, new: Check) -> list[Change]:
    if new.assertion.silenced is not None:
        return [Change(codes.FAILURE_SWALLOWED, old, new)]
    if (old.op, new.op) in _INVERSE and old.expected == new.expected:
        return [Change("inverted", old, new)]
    if old.op == new.op == "raises":
        return [Change("raises", old, new)]
    if old.op == new.op == "approx" and old.expected == new.expected:
        return [Change("approx", old, new)]
    if old.op == new.op and old.op in ("==", "is", "approx"):
        return [Change(codes.EXPECTED_VALUE_CHANGED, old, new)]
    if STRENGTH.get(new.op, 0) < STRENGTH.get(old.op, 0):
        return [Change(codes.COMPARISON_WEAKENED, old, new)]
    return []


def key_counts(tests: Iterable[TestFacts], fixtures: Mapping[str, list[str]] | None) -> Counter:
    """How often each check is made by ``tests`` (collected ones), as a multiset."""
    counts: Counter = Counter()
    for facts in tests:
        if facts.collected:
            counts.update(
                {c.key for c in checks_of(facts, fixtures) if c.assertion.silenced is None}
            )
    return counts


def row_label(facts: TestFacts, row: int | None, fixtures: Mapping[str, list[str]] | None) -> str:
    rows = rows_of(facts, fixtures)[1]
    if row is None or rows is None or row >= len(rows):
        return ""
    values = rows[row]
    return "(" + ", ".join(values) + ("," if len(values) == 1 else "") + ")"


def changed_columns(
    before: TestFacts,
    old_row: int | None,
    after: TestFacts,
    new_row: int | None,
    fixtures: Mapping[str, list[str]] | None,
) -> list[tuple[str, str, str]]:
    """(argname, old value, new value) of each column that differs between a case at
    the base and its counterpart now (argnames matched by name, then by position)."""
    old_names, old_rows = rows_of(before, fixtures)
    new_names, new_rows = rows_of(after, fixtures)
    if old_row is None or new_row is None or not old_rows or not new_rows:
        return []
    old_values = dict(zip(old_names, old_rows[old_row], strict=True))
    new_values = dict(zip(new_names, new_rows[new_row], strict=True))
    renamed = {}
    lost = [n for n in old_names if n not in new_values]
    gained = [n for n in new_names if n not in old_values]
    if len(lost) == len(gained):
        renamed = dict(zip(lost, gained, strict=True))
    out = []
    for name in old_names:
        now_name = renamed.get(name, name)
        if now_name not in new_values:
            continue
        if old_values[name] != new_values[now_name]:
            out.append((now_name, old_values[name], new_values[now_name]))
    return out
