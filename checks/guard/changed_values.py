"""Values a test compares with, and the data it feeds the code, compared with the
baseline: an expected value, a parametrized case or table, a local the assertion reads
(REF302, REF307, REF309, REF314), and the certificates that allow such a change."""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from referee.checks.guard import codes
from referee.checks.guard.compare import (
    Check,
    changed_columns,
    is_value,
    row_label,
    rows_of,
)
from referee.checks.guard.context import GuardContext
from referee.checks.guard.facts import TestFacts
from referee.checks.guard.normal import (
    canonical,
    one_line,
    parse_expression,
    statement_key,
)
from referee.checks.guard.verdict import Found, judge, relaxed, where
from referee.checks.ledger import normalized_text_hash
from referee.checks.models import Certificate, Severity


def input_note(after: TestFacts, new: Check) -> str:
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


def inputs_changed(
    guard: GuardContext,
    before: TestFacts,
    after: TestFacts,
    old: Check,
    new: Check,
) -> list[Found]:
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
                relaxed(
                    guard,
                    codes.EXPECTED_VALUE_CHANGED,
                    new.assertion.line,
                    f"in `{before.name}`, the value `{bound[0]}` that "
                    f"`{one_line(new.assertion.text, 60)}` compares with changed from "
                    f"{quoted(bound[1])} to {quoted(counterpart[1])} without a certificate "
                    f"({where(guard, before, old.assertion.line)})",
                )
            ]
    if gone and added:
        what = f"`{one_line(gone[0], 70)}` is now `{one_line(added[0], 70)}`"
    elif gone:
        what = f"`{one_line(gone[0], 70)}` is gone"
    else:
        what = f"`{one_line(added[0], 70)}` is new before it"
    return [
        relaxed(
            guard,
            codes.TEST_INPUT_CHANGED,
            new.assertion.line,
            f"in `{before.name}`, what `{one_line(new.assertion.text, 60)}` "
            f"({where(guard, before, old.assertion.line)}) is fed changed: {what}",
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


def expandable(guard: GuardContext, before: TestFacts, after: TestFacts) -> bool:
    """Whether both sides' parametrize tables were read row by row (or neither side has
    one): then the checks carry the cases, and the tables need no comparison of their own."""
    old_names, old_rows = rows_of(before, guard.fixtures)
    new_names, new_rows = rows_of(after, guard.fixtures)
    if not before.parametrize_values and not old_names:
        return True
    return old_rows is not None and (new_rows is not None or not new_names)


def lost_rows(guard: GuardContext, before: TestFacts, after: TestFacts) -> set[int]:
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


def case_changed(
    guard: GuardContext,
    tests: tuple[TestFacts, ...],
    before: TestFacts,
    after: TestFacts,
    old: Check,
    new: Check,
) -> list[Found]:
    """A parametrized case whose values changed: which columns, from what to what."""
    columns = changed_columns(before, old.row, after, new.row, guard.fixtures)
    old_case = _case_text(before, old.row)
    new_case = _case_text(after, new.row)
    if old_case is not None and new_case is not None:
        certified, mismatched = _certified_case(guard, before, after.id, old_case, [new_case])
        if certified is not None:
            return [
                *mismatched,
                Found(
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
        what = "; ".join(f"`{n}` {quoted(a)} -> {quoted(b)}" for n, a, b in columns[:3])
    else:
        what = (
            f"`{one_line(old.subject)}` expected {quoted(old.expected)} -> {quoted(new.expected)}"
        )
    return [
        judge(
            guard,
            tests,
            codes.EXPECTED_VALUE_CHANGED,
            after.line,
            f"in `{before.name}`, the parametrized case {label} ({guard.base}) changed "
            f"without a certificate: {what}",
        ),
        *[replace(m, line=after.line) for m in mismatched],
    ]


def quoted(text: str | None) -> str:
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


def table_changed(
    guard: GuardContext, tests: tuple[TestFacts, ...], before: TestFacts, after: TestFacts
) -> list[Found]:
    """Parametrize tables the guard could not read row by row: compared by their cases
    as written (a shorter table is REF307, a case no longer in it REF302)."""
    if (before.parametrize_cases or 0) > (after.parametrize_cases or 0):
        return [
            judge(
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
                Found(
                    codes.EXPECTED_VALUE_CHANGED,
                    after.line,
                    f"in `{before.name}`, parametrized case {old} is now {new[0]}, "
                    f"certified by {new[1]}",
                    severity=Severity.INFO,
                )
            )
            continue
        found.append(
            judge(
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
) -> tuple[tuple[str, str] | None, list[Found]]:
    """(new case, certificate id) when a certificate for this test turns ``old`` into
    one of ``candidates`` by changing its old value to its new one, and the certificates
    that would have but are not bound to the test (REF309)."""
    mismatched: list[Found] = []
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


def value_changed(
    guard: GuardContext,
    tests: tuple[TestFacts, ...],
    before: TestFacts,
    after_id: str,
    old_check: Check,
    new_check: Check,
) -> list[Found]:
    old, new = old_check.assertion, new_check.assertion
    mismatched: list[Found] = []
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
                Found(
                    codes.EXPECTED_VALUE_CHANGED,
                    new.line,
                    f"in `{before.name}`, expected value changed from {old.expected} to "
                    f"{new.expected}, certified by {certificate.id}",
                    severity=Severity.INFO,
                )
            ]
    return [
        judge(
            guard,
            tests,
            codes.EXPECTED_VALUE_CHANGED,
            new.line,
            f"in `{before.name}`, the expected value of `{one_line(old_check.subject)}` changed "
            f"from {quoted(old_check.expected)} to {quoted(new_check.expected)} without a "
            f"certificate ({where(guard, before, old.line)})",
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


def _mismatch(before: TestFacts, certificate: Certificate, problem: str, line: int) -> Found:
    return Found(
        codes.CERTIFICATE_MISMATCH,
        line,
        f"in `{before.name}`, certificate {certificate.id} {problem}; not honoured",
    )


def certified_call(
    guard: GuardContext, before: TestFacts, after_id: str, old: str, new: str
) -> str | None:
    """The id of a certificate that turns the call of a helper that asserts, ``old``, into
    ``new`` by replacing one of its literal arguments (arbitration's fix of an expected
    value passed to a helper: ``check("aeiou", 4)`` → ``check("aeiou", 5)``), bound to
    ``new``; else None."""
    for certificate in guard.certificates:
        if certificate.test_id.split("[", 1)[0] != before.id:
            continue
        fixed = _substituted(
            canonical(old), canonical(certificate.old_value), certificate.new_value
        )
        if canonical(new) in fixed and _unbound(certificate, after_id, new) is None:
            return certificate.id
    return None
