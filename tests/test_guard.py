"""The anti-gaming guard end to end: `referee guard` in real git repositories.

The catalogue (tests/guard_catalogue/cases.py) holds before/after pairs: cheats the
guard must catch with the right rule code, and honest edits it must let through with no
error at all. Each pair is committed in a fresh repository, edited in its working tree,
and checked by the command line (``referee guard --format json``) in this interpreter;
a few pairs also by the real command in a new process (``python -m referee``), which
must report the same.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from guard_catalogue.cases import (
    BASIC,
    CHEATS,
    HONEST,
    PROJECT,
    Outcome,
    Pair,
    T,
    certify,
    commit_repo,
    git,
    run_guard,
    run_pair,
    write_files,
)

from referee.checks.guard import facts as guard_facts
from referee.checks.registry import GUARD_CODES
from referee.checks.source import SourceFile

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the guard needs git")

# Every kind of cheat the guard knows, each with the code it must be reported under.
CHEAT_CLASSES = {
    "assertion removed": "REF301",
    "test removed": "REF300",
    "renamed out of collection": "REF308",
    "certificate forged": "REF309",
    "expected value changed": "REF302",
    "comparison weakened": "REF303",
    "approx loosened": "REF304",
    "raises widened": "REF305",
    "match removed": "REF306",
    "parametrize cases removed": "REF307",
    "skip added": "REF310",
    "xfail added": "REF312",
    "failure swallowed": "REF311",
    "config tampered": "REF320",
    "conftest hook": "REF321",
    "exit in tests": "REF322",
    "special-cased input": "REF330",
    "baseline unparsable": "REF313",
    "test input changed": "REF314",
    "source fitted to test": "REF333",
    "source moved to test": "REF334",
    "always-equal override": "REF331",
    "monkeypatched under test": "REF332",
}

EDITED = """
from shop import add, total


def test_add():
    assert add(1, 2) == 3
    assert add(-1, 1) == 0


def test_total():
    assert total([10, 20]) == 31
""".lstrip()


def _errors(outcome: Outcome) -> list[dict]:
    return [f for f in outcome.findings if f["severity"] == "error"]


# ------------------------------------------------------------------------ the catalogue


def test_catalogue_is_complete() -> None:
    assert len(CHEATS) >= 40
    assert len(HONEST) >= 40
    assert {p.cls for p in CHEATS} == set(CHEAT_CLASSES)
    for pair in CHEATS:
        assert pair.code == CHEAT_CLASSES[pair.cls], pair.id
    # every guard rule is exercised by at least one cheat
    assert {p.code for p in CHEATS} == set(GUARD_CODES)
    # no class rests on a single example
    assert min(Counter(p.cls for p in CHEATS).values()) >= 2
    # known gaps stay few
    assert sum(p.gap is not None for p in CHEATS) <= 3
    assert all(p.gap is None for p in HONEST)


def _cheat_params() -> list:
    """The cheats, a known gap expected to fail (strictly: fixing it must update it)."""
    return [
        pytest.param(
            pair,
            id=pair.id,
            marks=[pytest.mark.xfail(strict=True, reason=pair.gap)] if pair.gap else [],
        )
        for pair in CHEATS
    ]


@pytest.mark.parametrize("pair", _cheat_params())
def test_cheat_is_caught(pair: Pair, tmp_path: Path) -> None:
    outcome = run_pair(pair, tmp_path / "repo", in_process=True)
    if pair.agent:  # reported, as a warning: the default mode's reader decides
        assert pair.code in outcome.codes("warning") | outcome.codes("error"), outcome.describe()
        return
    assert outcome.rc == 1, outcome.describe()
    assert pair.code in outcome.codes("error"), outcome.describe()


@pytest.mark.parametrize("pair", HONEST, ids=lambda p: p.id)
def test_honest_edit_passes(pair: Pair, tmp_path: Path) -> None:
    outcome = run_pair(pair, tmp_path / "repo", in_process=True)
    assert outcome.rc == 0, outcome.describe()
    assert not _errors(outcome), outcome.describe()
    if pair.info is not None:
        infos = [f for f in outcome.findings if f["severity"] == "info"]
        assert any(f["code"] == pair.info and "certified by" in f["message"] for f in infos), (
            outcome.describe()
        )
    warnings = [f for f in outcome.findings if f["severity"] == "warning"]
    if pair.warn is not None:
        assert any(
            f["code"] == pair.warn and (pair.warn_text or "") in f["message"] for f in warnings
        ), outcome.describe()
    else:
        assert not warnings, outcome.describe()


@pytest.mark.parametrize("pair", [p for p in CHEATS if not p.gap], ids=lambda p: p.id)
def test_cheat_is_an_error_in_agent_mode_too(pair: Pair, tmp_path: Path) -> None:
    """A cheat the default mode catches is an error in agent mode as well."""
    outcome = run_pair(pair, tmp_path / "repo", None, "--strict", in_process=True)
    assert outcome.rc == 1, outcome.describe()
    assert pair.code in outcome.codes("error"), outcome.describe()


@pytest.mark.parametrize("pair", [p for p in HONEST if p.warn], ids=lambda p: p.id)
def test_what_the_default_mode_warns_about_is_an_error_in_agent_mode(
    pair: Pair, tmp_path: Path
) -> None:
    """Agent mode (--strict) keeps every uncertified weakening an error: an intended
    change and a conditional skip included."""
    outcome = run_pair(pair, tmp_path / "repo", None, "--strict", in_process=True)
    assert outcome.rc == 1, outcome.describe()
    assert pair.warn in outcome.codes("error"), outcome.describe()
    assert not outcome.codes("warning"), outcome.describe()


# Pairs the real command line checks in a new process too: a cheat of each mode's kind, an
# honest edit, a certified one (the ledger read from disk) and one whose tests run.
_END_TO_END = [
    next(p for p in CHEATS if not p.gap and not p.agent and not p.execute),
    next(p for p in CHEATS if p.agent),
    next(p for p in HONEST if p.info is None and not p.warn),
    next(p for p in HONEST if p.info is not None),
    next(p for p in CHEATS if p.execute and not p.gap),
]


@pytest.mark.parametrize("pair", _END_TO_END, ids=lambda p: p.id)
def test_a_new_process_reports_what_the_catalogue_run_in_process_does(
    pair: Pair, tmp_path: Path
) -> None:
    """``python -m referee guard`` as CI runs it, against the in-process run the catalogue
    tests use: the same exit status, findings and output."""
    real = run_pair(pair, tmp_path / "real")
    here = run_pair(pair, tmp_path / "here", in_process=True)
    assert (real.rc, real.findings) == (here.rc, here.findings), real.describe()
    assert real.rc in (0, 1), real.describe()
    assert real.report == here.report


def test_agent_mode_from_the_configuration(tmp_path: Path) -> None:
    """`guard.mode = "agent"` in the configuration at the base is agent mode; the same
    line added by the change under check is not honoured (the base's configuration
    rules)."""
    pair = next(p for p in HONEST if p.slug == "skipif-added")
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, **pair.before, "referee.toml": '[guard]\nmode = "agent"\n'})
    write_files(repo, pair.after)
    outcome = run_guard(repo)
    assert outcome.rc == 1, outcome.describe()
    assert outcome.codes("error") == {"REF310"}

    other = tmp_path / "other"
    commit_repo(other, {**PROJECT, **pair.before})
    write_files(other, {**pair.after, "referee.toml": '[guard]\nmode = "agent"\n'})
    outcome = run_guard(other)
    assert outcome.rc == 0, outcome.describe()
    assert outcome.codes("warning") == {"REF310"}


# ------------------------------------------------------- expected values kept in a local


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("n = 5\n    assert f() == n", "5"),
        ("n: int = (5)\n    assert f() == pytest.approx(n)", "5"),
        ("want = 'a'\n    self.assertEqual(f(), want)", "'a'"),
        ("n = 5\n    n = 6\n    assert f() == n", "n"),
        ("n = 5\n    n += 1\n    assert f() == n", "n"),
        ("n = 5\n    if g():\n        n = 6\n    assert f() == n", "n"),
        ("n = 5\n    for n in g():\n        pass\n    assert f() == n", "n"),
        ("n = 5\n    with g() as (a, n):\n        assert f() == n", "n"),
        ("n = 5\n    def h(n=1):\n        pass\n    assert f() == n", "n"),
        ("n = len(g())\n    assert f() == n", "n"),
        ("n = len('abc')\n    assert f() == n", "3"),
        ("assert f() == n\n    n = 5", "n"),
        ("n = 5\n    assert f() >= n", "n"),
    ],
    ids=[
        "once",
        "annotated-approx",
        "assertEqual",
        "twice",
        "augmented",
        "conditional",
        "loop-target",
        "with-target",
        "nested-parameter",
        "computed",
        "constant-expression",
        "assigned-after",
        "not-equality",
    ],
)
def test_a_local_is_the_expected_literal_only_when_bound_once_to_a_literal(
    body: str, expected: str
) -> None:
    """What REF302 compares: the literal a local is bound to, written in its place, only
    when that is the one binding of the name in the test."""
    text = f"import pytest\n\n\ndef test_x(self):\n    {body}\n"
    facts = guard_facts.test_facts(SourceFile(T, text), T)[f"{T}::test_x"]
    assert [a.expected for a in facts.assertions] == [expected]


# -------------------------------------------------------------------- the command line


def test_base_names_another_ref(tmp_path: Path) -> None:
    """A pull request's merge base: the weakening is committed, the tree is clean."""
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: BASIC})
    git(repo, "branch", "upstream")
    commit_repo(repo, {T: EDITED}, message="make it pass")

    assert run_guard(repo).rc == 0  # nothing changed since HEAD
    outcome = run_guard(repo, "--base", "upstream")
    assert outcome.rc == 1, outcome.describe()
    assert outcome.codes() == {"REF302"}
    assert "(line 10 at upstream)" in _errors(outcome)[0]["message"]


def test_outside_a_git_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    plain = tmp_path / "plain"
    write_files(plain, {**PROJECT, T: BASIC})
    outcome = run_guard(plain)
    assert outcome.rc == 2, outcome.describe()
    assert "git repository" in outcome.stderr
    assert outcome.stdout == ""


def test_unknown_base(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: BASIC})
    outcome = run_guard(repo, "--base", "no-such-ref")
    assert outcome.rc == 2, outcome.describe()
    assert "'no-such-ref' is not a commit" in outcome.stderr


def test_hand_edited_certificate_is_not_honoured(tmp_path: Path) -> None:
    """A certificate for 30 -> 31, edited by hand to cover 30 -> 32 (its id kept)."""
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: BASIC})
    write_files(repo, {T: EDITED.replace("== 31", "== 32")})
    certify(
        repo,
        {
            "test_id": "tests/test_shop.py::test_total",
            "call": "total([10, 20])",
            "old_value": "30",
            "new_value": "31",
        },
    )
    ledger = repo / ".referee" / "certificates.jsonl"
    record = json.loads(ledger.read_text(encoding="utf-8"))
    record["new_value"] = "32"
    ledger.write_text(json.dumps(record, sort_keys=True) + "\n", encoding="utf-8")

    outcome = run_guard(repo)
    assert outcome.rc == 1, outcome.describe()
    assert "REF302" in outcome.codes("error")
    assert not outcome.codes("info")
    assert record["id"] in outcome.stderr
    assert "does not match its content" in outcome.stderr


def test_genuine_certificate_is_honoured_only_for_its_own_change(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: BASIC})
    write_files(repo, {T: EDITED})
    fields = {"call": "total([10, 20])", "old_value": "30", "new_value": "31"}
    certify(repo, {**fields, "test_id": "tests/test_shop.py::test_add"})  # another test
    assert run_guard(repo).rc == 1
    certify(repo, {**fields, "test_id": "tests/test_shop.py::test_total"})
    outcome = run_guard(repo)
    assert outcome.rc == 0, outcome.describe()
    assert outcome.codes("info") == {"REF302"}


def test_sarif_output_is_sarif_2_1_0(tmp_path: Path) -> None:
    from sarif_pydantic import Sarif

    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: BASIC})
    write_files(repo, {T: EDITED})
    outcome = run_guard(repo, fmt="sarif")
    assert outcome.rc == 1, outcome.stderr
    data = json.loads(outcome.stdout)
    sarif = Sarif.model_validate(data)
    assert sarif.version == "2.1.0"
    (run,) = data["runs"]
    assert [r["ruleId"] for r in run["results"]] == ["REF302"]
    location = run["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "tests/test_shop.py"


def test_text_output_names_the_rule_and_the_baseline(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: BASIC})
    write_files(repo, {T: EDITED})
    outcome = run_guard(repo, fmt="text")
    assert outcome.rc == 1
    # The old value, the new one, and the line the old one was on at the base, in words
    # ("HEAD:10" read as git's REV:PATH, and "4 (HEAD:10) to 5" as three values).
    assert (
        "tests/test_shop.py:10:1: REF302 in `test_total`, the expected value of "
        "`total([10, 20])` changed from 30 to 31 without a certificate (line 10 at HEAD)"
    ) in outcome.stdout.splitlines()


def test_paths_restrict_the_check(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    other = "tests/test_other.py"
    commit_repo(repo, {**PROJECT, T: BASIC, other: BASIC, "tests/test_clean.py": BASIC})
    write_files(repo, {T: EDITED, other: BASIC.replace("== 30", ">= 30")})

    everything = run_guard(repo)
    assert {(f["path"], f["code"]) for f in _errors(everything)} == {
        (T, "REF302"),
        (other, "REF303"),
    }
    only_one = run_guard(repo, T)
    assert only_one.rc == 1
    assert {(f["path"], f["code"]) for f in _errors(only_one)} == {(T, "REF302")}
    directory = run_guard(repo, "tests")
    assert {f["path"] for f in _errors(directory)} == {T, other}
    untouched = run_guard(repo, "tests/test_clean.py")
    assert untouched.rc == 0, untouched.describe()
    assert untouched.findings == []


def test_moved_test_is_compared_where_it_now_lives(tmp_path: Path) -> None:
    """A test moved into another file and weakened there is still caught."""
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: BASIC})
    write_files(
        repo,
        {
            T: BASIC.split("\n\n\ndef test_total")[0] + "\n",
            "tests/test_total.py": "from shop import total\n\n\n"
            "def test_total():\n    assert total([10, 20]) >= 30\n",
        },
    )
    outcome = run_guard(repo)
    assert outcome.rc == 1, outcome.describe()
    assert outcome.codes() == {"REF303"}
    assert "tests/test_total.py" in _errors(outcome)[0]["message"]


def test_certificate_honoured_for_a_path_without_a_config_file(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    project = {k: v for k, v in PROJECT.items() if k != "referee.toml"}
    commit_repo(repo, {**project, T: BASIC})
    write_files(repo, {T: EDITED})
    certify(
        repo,
        {
            "test_id": "tests/test_shop.py::test_total",
            "call": "total([10, 20])",
            "old_value": "30",
            "new_value": "31",
        },
    )
    assert run_guard(repo).rc == 0  # from the root: honoured
    outcome = run_guard(repo, T)
    assert outcome.rc == 0, outcome.describe()


# ------------------------------------------------------------------ comparing values


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ('u"x"', '"x"'),
        ("'a'", '"a"'),
        ('("a b"\n " c")', '"a b c"'),
        ('"GET POST".split()', '["GET", "POST"]'),
        ('"{}:{}".format(h, p)', 'f"{h}:{p}"'),
        ('"%s-%r" % (a, b)', 'f"{a}-{b!r}"'),
        ("{'b': 1, 'a': 2}", "{'a': 2, 'b': 1}"),
        ("{3, 1, 2}", "{1, 2, 3}"),
        ("flask.Markup('x')", "Markup('x')"),
        ("'-' * 3", "'---'"),
        ('textwrap.dedent("""\n    a\n    """)', "'\\na\\n'"),
        ("1_000", "1000"),
    ],
)
def test_the_same_value_in_another_spelling_reads_the_same(one: str, other: str) -> None:
    assert guard_facts.canonical(one) == guard_facts.canonical(other)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ('"a b"', '"ab"'),  # whitespace inside a string is part of the value
        ("(1, 2)", "[1, 2]"),  # == tells a tuple from a list
        ("Color.RED", "Shade.RED"),  # a class's attribute keeps its class
        ("self.Markup", "Markup"),
        ('"x" * 100000', "'x'"),  # too large to fold: left as written, still different
    ],
)
def test_different_values_stay_different(one: str, other: str) -> None:
    assert guard_facts.canonical(one) != guard_facts.canonical(other)


def test_a_huge_constant_expression_is_not_evaluated() -> None:
    assert guard_facts.canonical("'x' * 10**9") == "'x' * 1000000000"  # the small part
    assert guard_facts.canonical("2 ** 10 ** 10") == "2 ** 10000000000"


def test_quoted_code_keeps_the_whitespace_of_its_strings() -> None:
    from referee.checks.guard.normal import one_line

    assert one_line('assert f(\n    x)  ==  "a   b"') == 'assert f(x) == "a   b"'
    assert one_line('x == """a\n b"""') == 'x == """a\\n b"""'


def test_a_changed_case_names_the_column_that_changed(tmp_path: Path) -> None:
    from guard_catalogue.cases import PARAM

    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: PARAM})
    write_files(repo, {T: PARAM.replace('("aeiou", 5)', '("aeiou", 4)')})
    outcome = run_guard(repo)
    assert outcome.rc == 1, outcome.describe()
    (finding,) = _errors(outcome)
    assert finding["code"] == "REF302"
    assert "the parametrized case ('aeiou', 5)" in finding["message"]
    assert "`n` 5 -> 4" in finding["message"]


def test_a_removed_call_is_not_called_an_assertion(tmp_path: Path) -> None:
    before = (
        "from unittest import mock\n\n\ndef test_a():\n    m = mock.Mock()\n    m(1)\n"
        "    m.assert_called_once_with(1)\n"
    )
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: before})
    write_files(repo, {T: before.replace("    m.assert_called_once_with(1)\n", "")})
    outcome = run_guard(repo)
    (finding,) = _errors(outcome)
    assert "the checking call `m.assert_called_once_with(1)`" in finding["message"]
    assert "the assertion" not in finding["message"]


def test_a_test_rewritten_against_the_public_api_is_a_warning(tmp_path: Path) -> None:
    """httpx 'test same_origin via public api': the private helper's checks go, the
    public API's come; in agent mode it stays an error."""
    before = (
        "from shop import lookup, parse_qty\n\n\ndef test_a():\n"
        "    assert lookup({'q': '3'}, 'q') == '3'\n    assert lookup({1: 2}, 1) == 2\n"
    )
    after = "from shop import parse_qty\n\n\ndef test_a():\n    assert parse_qty('3') == 3\n"
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: before})
    write_files(repo, {T: after})
    outcome = run_guard(repo)
    assert outcome.rc == 0, outcome.describe()
    assert outcome.codes("warning") == {"REF301"}
    assert "no longer calls `lookup`" in outcome.findings[0]["message"]
    assert run_guard(repo, "--strict").rc == 1


def test_a_tox_command_reads_pytests_arguments_only() -> None:
    from referee.checks.guard.pytestconfig import tox_pytest_arguments

    text = (
        "[testenv]\ncommands = python -m pytest {posargs:-n auto}\n"
        "[testenv:slow]\ncommands =\n    coverage run -m pytest -k 'not slow' tests\n"
    )
    assert tox_pytest_arguments(text) == {
        "testenv": "{posargs:-n auto}",
        "testenv:slow": "-k 'not slow' tests",
    }


def test_the_code_a_test_reaches_is_found_a_few_calls_deep(tmp_path: Path) -> None:
    from referee.checks.guard.impact import Impact, changed_names

    before = (
        "def _cents(v):\n    return round(v, 2)\n\n\ndef total(xs):\n    return _cents(sum(xs))\n"
    )
    after = before.replace("round(v, 2)", "round(v, 1)")
    assert changed_names(before, after, "shop.py") == {"_cents": "def _cents"}
    commit_repo(tmp_path, {"shop.py": after, "other.py": "def unrelated():\n    return 1\n"})
    impact = Impact(tmp_path, {"shop.py": (before, after)}, [], lambda p: False, lambda: [])
    assert "`total` reaches `_cents`" in (impact.reason({"total", "x"}) or "")
    assert impact.reason({"unrelated", "x"}) is None


def test_deprecated_call_in_call_form_and_as_a_context_manager_check_the_same(
    tmp_path: Path,
) -> None:
    """pytest's 'avoid legacy forms of warns, raises, deprecated_call': the call form
    becomes the `with` form, which checks the same; dropping it is still a removal."""
    before = (
        "import pytest\n\nfrom shop import parse_qty\n\n\ndef test_a():\n"
        "    pytest.deprecated_call(parse_qty, '3')\n"
    )
    after = (
        "import pytest\n\nfrom shop import parse_qty\n\n\ndef test_a():\n"
        "    with pytest.deprecated_call():\n        parse_qty('3')\n"
    )
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: before})
    write_files(repo, {T: after})
    outcome = run_guard(repo)
    assert outcome.rc == 0, outcome.describe()
    assert not outcome.findings, outcome.describe()
    write_files(repo, {T: after.replace("    with pytest.deprecated_call():\n        ", "    ")})
    outcome = run_guard(repo)
    assert outcome.rc == 1, outcome.describe()
    assert outcome.codes("error") == {"REF301"}, outcome.describe()


_TRY_FORM = (
    "from shop import parse_qty\n\n\ndef test_a():\n"
    "    try:\n        parse_qty('x')\n    except ValueError as e:\n"
    "        assert str(e) == 'not a number'\n"
    "    else:\n        assert False, 'expected an error'\n"
)
_WITH_FORM = (
    "import pytest\n\nfrom shop import parse_qty\n\n\ndef test_a():\n"
    "    with pytest.raises(ValueError, match='not a number'):\n        parse_qty('x')\n"
)


def test_try_except_else_fail_and_pytest_raises_check_the_same(tmp_path: Path) -> None:
    """jinja's 'replaced try...catch within tests with pytest.raises': the `try` whose
    `else` fails is a raises check, the message check inside its handler is its match."""
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: _TRY_FORM})
    write_files(repo, {T: _WITH_FORM})
    outcome = run_guard(repo)
    assert outcome.rc == 0, outcome.describe()
    assert not outcome.findings, outcome.describe()


@pytest.mark.parametrize(
    ("after", "code"),
    [
        # the raises check dropped: the call is all that is left
        ("from shop import parse_qty\n\n\ndef test_a():\n    parse_qty('x')\n", "REF301"),
        # any exception now passes
        (_WITH_FORM.replace("ValueError", "Exception"), "REF305"),
        # the message no longer checked
        (_WITH_FORM.replace(", match='not a number'", ""), "REF306"),
    ],
)
def test_weakening_a_try_except_else_fail_check_is_still_caught(
    tmp_path: Path, after: str, code: str
) -> None:
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: _TRY_FORM})
    write_files(repo, {T: after})
    outcome = run_guard(repo)
    assert outcome.rc == 1, outcome.describe()
    assert code in outcome.codes("error"), outcome.describe()
