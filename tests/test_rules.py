"""Per-rule fixture tests, ruff style.

Each rule code has a directory ``tests/fixtures/rules/<CODE>/`` of files whose path says
what they are: ``bad`` files hold code the rule must report, ``good`` files hold
near-misses it must leave alone. ``expected.txt`` is the snapshot of every finding, one
line each: ``file:line:col: CODE severity message``. A ``referee.toml`` in the directory
declares the contracts the L1 rules (REF2xx) check.

Set ``REFEREE_UPDATE_SNAPSHOTS=1`` to rewrite the snapshots, then read every changed line.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest

from referee.checks import runner
from referee.checks.config import Settings, load_file
from referee.checks.configuration import RefereeConfig
from referee.checks.engine import check_text
from referee.checks.models import Severity
from referee.checks.registry import (
    BY_CODE,
    BY_NAME,
    GUARD_CODES,
    MODEL_CODES,
    RULES,
    lookup,
    matching,
)

RULES_DIR = Path(__file__).resolve().parent / "fixtures" / "rules"
SNAPSHOT = "expected.txt"
CONFIG = "referee.toml"
UPDATE = os.environ.get("REFEREE_UPDATE_SNAPSHOTS") == "1"

# The guard's rules (REF3xx) compare a file with its git baseline; their before/after
# catalogue lives in tests/test_guard.py.
CODES = [rule.code for rule in RULES if rule.code not in GUARD_CODES | MODEL_CODES]


def fixture_files(directory: Path) -> list[Path]:
    return sorted(
        path
        for path in directory.rglob("*")
        if path.is_file() and path.name not in (SNAPSHOT, CONFIG)
    )


def fixture_settings(directory: Path, code: str) -> Settings:
    """The fixture's own referee.toml when it has one, else the defaults, rooted at the
    fixture directory (so the repository's own configuration, which excludes
    tests/fixtures/, never applies), with only ``code`` selected."""
    config = directory / CONFIG
    base = load_file(config) if config.is_file() else Settings(RefereeConfig(), directory, None)
    assert base.root == directory
    return base.with_overrides(select=[code])


def findings_by_file(code: str) -> dict[str, list[str]]:
    """Snapshot lines for every fixture file of ``code``, keyed by its posix relpath."""
    directory = RULES_DIR / code
    settings = fixture_settings(directory, code)
    assert settings.enabled == {code}
    out: dict[str, list[str]] = {}
    for path in fixture_files(directory):
        relpath = path.relative_to(directory).as_posix()
        result = runner.check_file(runner.Target(path, relpath, relpath), settings)
        assert result.skipped is None, f"{relpath} was skipped: {result.skipped}"
        out[relpath] = [
            f"{f.path}:{f.span.start.line}:{f.span.start.column}: "
            f"{f.code} {f.severity.value} {f.message}"
            for f in result.findings
        ]
    return out


def test_every_rule_has_a_fixture_directory_and_nothing_else_does():
    directories = {p.name for p in RULES_DIR.iterdir() if p.is_dir()}
    assert directories == set(CODES)


@pytest.mark.parametrize("code", CODES)
def test_fixture_directory_has_bad_and_good_files(code: str):
    relpaths = [p.relative_to(RULES_DIR / code).as_posix() for p in fixture_files(RULES_DIR / code)]
    bad = [r for r in relpaths if "bad" in r]
    good = [r for r in relpaths if "good" in r]
    assert bad, f"{code}: no file that must fire"
    assert good, f"{code}: no near-miss that must stay silent"
    assert sorted(bad + good) == sorted(relpaths), "every fixture is either bad or good"
    assert not set(bad) & set(good)


@pytest.mark.parametrize("code", CODES)
def test_rule_findings_match_snapshot(code: str):
    lines = [line for found in findings_by_file(code).values() for line in found]
    actual = "".join(f"{line}\n" for line in lines)
    snapshot = RULES_DIR / code / SNAPSHOT
    if UPDATE:
        snapshot.write_text(actual, encoding="utf-8")
    assert snapshot.is_file(), f"no snapshot; run with REFEREE_UPDATE_SNAPSHOTS=1 ({snapshot})"
    assert actual == snapshot.read_text(encoding="utf-8")


@pytest.mark.parametrize("code", CODES)
def test_bad_files_fire_and_good_files_stay_silent(code: str):
    for relpath, found in findings_by_file(code).items():
        if "good" in relpath:
            assert found == [], f"{code} fired on near-miss {relpath}"
        else:
            assert found, f"{code} missed every case in {relpath}"
            assert all(f" {code} " in line for line in found)


def test_snapshot_lines_all_name_an_existing_fixture_file():
    for code in CODES:
        directory = RULES_DIR / code
        for line in (directory / SNAPSHOT).read_text(encoding="utf-8").splitlines():
            relpath, row = line.split(":")[:2]
            path = directory / PurePosixPath(relpath)
            assert path.is_file(), line
            assert 1 <= int(row) <= max(1, len(path.read_bytes().splitlines())), line


# ------------------------------------------------------------- behaviour beyond the snapshots


def _only(code: str) -> Settings:
    return Settings(RefereeConfig(select=[code]))


def test_placeholder_body_is_error_when_it_promises_and_warning_for_bare_pass():
    text = "def a():\n    pass\n\n\ndef b() -> int:\n    pass\n"
    found = check_text(text, "mod.py", _only("REF101"))
    assert [(f.span.start.line, f.severity) for f in found] == [
        (1, Severity.WARNING),
        (5, Severity.ERROR),
    ]


def test_placeholder_body_ignores_abstract_methods():
    text = (
        "import abc\n\nclass A(abc.ABC):\n    @abc.abstractmethod\n"
        "    def run(self) -> None:\n        raise NotImplementedError\n"
    )
    assert check_text(text, "mod.py", _only("REF101")) == []
    # The same body without the decorator and outside an ABC is a placeholder.
    plain = "class A:\n    def run(self) -> None:\n        raise NotImplementedError\n"
    assert [f.code for f in check_text(plain, "mod.py", _only("REF101"))] == ["REF101"]


def test_placeholder_body_skips_dummies_in_test_tree_but_not_in_source():
    text = "def fake_clock():\n    pass\n"
    assert check_text(text, "tests/helpers.py", _only("REF101")) == []
    assert len(check_text(text, "src/helpers.py", _only("REF101"))) == 1


def test_tuple_assertion_offers_unsafe_fix_that_removes_parentheses():
    text = 'def test_x(total):\n    assert (total == 10, "off")\n'
    (finding,) = check_text(text, "test_x.py", _only("REF112"))
    assert finding.fix is not None
    assert finding.fix.applicability == "unsafe"
    (edit,) = finding.fix.edits
    assert edit.content == 'total == 10, "off"'
    lines = text.splitlines()
    row = lines[edit.span.start.line - 1]
    replaced = row[: edit.span.start.column - 1] + edit.content + row[edit.span.end.column - 1 :]
    assert replaced == '    assert total == 10, "off"'


def test_mock_lookalike_fix_renames_the_standalone_call():
    text = "def test_x(m):\n    m.send.called_once_with(1)\n"
    (finding,) = check_text(text, "test_x.py", _only("REF115"))
    assert finding.fix is not None
    (edit,) = finding.fix.edits
    assert edit.content == "assert_called_once_with"
    row = text.splitlines()[edit.span.start.line - 1]
    assert row[edit.span.start.column - 1 : edit.span.end.column - 1] == "called_once_with"


def test_mock_lookalike_inside_assert_has_no_fix():
    text = "def test_x(m):\n    assert m.send.called_once_with(1)\n"
    (finding,) = check_text(text, "test_x.py", _only("REF115"))
    assert finding.fix is None


def test_empty_test_run_reads_the_same_words_by_where_they_stand():
    said = "The run said '0 passed'.\n"
    assert [f.code for f in check_text(said, "run.log", _only("REF130"))] == ["REF130"]
    assert check_text(said, "notes.md", _only("REF130")) == []  # a sentence quoting it
    console = "```console\n$ pytest -q\n0 passed in 0.01s\n```\n"
    assert [f.span.start.line for f in check_text(console, "notes.md", _only("REF130"))] == [3]
    source = "```python\nassert out == '0 passed in 0.01s'\n```\n"
    assert check_text(source, "notes.md", _only("REF130")) == []


def test_constant_assertion_is_error_only_when_every_assertion_is_vacuous():
    text = (
        "def test_only_vacuous():\n    assert True\n\n\n"
        "def test_mixed(x):\n    assert x == 1\n    assert True\n"
    )
    found = check_text(text, "test_x.py", _only("REF111"))
    assert [(f.span.start.line, f.severity) for f in found] == [
        (2, Severity.ERROR),
        (7, Severity.WARNING),
    ]


def test_self_comparison_by_equality_stays_a_warning_even_when_alone():
    text = "def test_eq(x):\n    assert x == x\n\n\ndef test_is(x):\n    assert x is x\n"
    found = check_text(text, "test_x.py", _only("REF113"))
    assert [(f.span.start.line, f.severity) for f in found] == [
        (2, Severity.WARNING),
        (6, Severity.ERROR),
    ]


def test_test_rules_do_not_treat_non_test_modules_as_tests():
    text = "def test_connection(host):\n    host.ping()\n"
    assert check_text(text, "network.py", _only("REF110")) == []
    assert [f.code for f in check_text(text, "test_network.py", _only("REF110"))] == ["REF110"]


def test_configured_test_file_pattern_makes_a_module_a_test_module():
    text = "def test_connection(host):\n    host.ping()\n"
    settings = Settings(RefereeConfig(select=["REF110"], test_files=["check_*.py"]))
    assert [f.code for f in check_text(text, "check_network.py", settings)] == ["REF110"]
    assert check_text(text, "test_network.py", settings) == []


# ------------------------------------------------------------------------- the registry


def test_rule_codes_and_names_are_unique_and_well_formed():
    assert len(BY_CODE) == len(RULES)
    assert len(BY_NAME) == len(RULES)
    for rule in RULES:
        assert rule.code.startswith("REF") and len(rule.code) == 6 and rule.code[3:].isdigit()
        assert rule.name == rule.name.lower() and " " not in rule.name


def test_every_rule_documents_what_it_does_and_links_its_page():
    for rule in RULES:
        assert rule.documentation.startswith("## What it does"), rule.code
        assert "## Why it matters" in rule.documentation, rule.code
        assert rule.url.endswith(f"/{rule.name}.md")


def test_lookup_accepts_code_or_name_in_any_case():
    assert lookup("ref101") is BY_CODE["REF101"]
    assert lookup("Placeholder-Body") is BY_CODE["REF101"]
    assert lookup("REF999") is None
    assert lookup("placeholder") is None


def test_matching_understands_all_codes_and_prefixes():
    assert matching("ALL") == list(RULES)
    assert [r.code for r in matching("REF11")] == [
        "REF110",
        "REF111",
        "REF112",
        "REF113",
        "REF114",
        "REF115",
        "REF116",
        "REF117",
    ]
    assert [r.code for r in matching("ref001")] == ["REF001"]
    assert matching("REF9") == []


# ------------------------------------------------------------------------- known gaps
# Cases a rule gets wrong by design or not yet. A strict xfail: the day the rule is fixed,
# the test passes, pytest reports XPASS as a failure, and the marker goes. Below them,
# regressions for gaps that were closed.


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="REF001 asks CPython only when tree-sitter reports an error, and tree-sitter "
    "recovers silently from these",
)
@pytest.mark.parametrize(
    "source",
    [
        "def area(w, h):\n    return w * h\n      print(w)\n",  # unexpected indent
        "X = " + "f(" * 300 + "1" + ")" * 300 + "\n",  # too many nested parentheses
    ],
    ids=["unexpected-indent", "nested-calls"],
)
def test_syntax_error_reports_every_file_cpython_rejects(source: str):
    with pytest.raises(SyntaxError):
        compile(source, "mod.py", "exec")
    assert [f.code for f in check_text(source, "mod.py", _only("REF001"))] == ["REF001"]


@pytest.mark.parametrize(
    "source",
    [
        "def f():\n\nx = 1\n",  # expected an indented block
        "class C:\n\nx = 1\n",
        "print 'hello'\n",  # Python 2 print statement
        "exec 'x = 1'\n",
    ],
    ids=["missing-body", "missing-class-body", "py2-print", "py2-exec"],
)
def test_syntax_error_reports_what_tree_sitter_accepts_but_python_3_rejects(source: str):
    with pytest.raises(SyntaxError):
        compile(source, "mod.py", "exec")
    assert [f.code for f in check_text(source, "mod.py", _only("REF001"))] == ["REF001"]


def test_pytest_module_importing_unittest_mock_still_has_tests():
    text = "from unittest import mock\n\n\ndef test_sends():\n    mock.Mock().send()\n"
    assert [f.code for f in check_text(text, "test_send.py", _only("REF110"))] == ["REF110"]


def test_required_heading_inside_a_code_block_does_not_count():
    from referee.checks.configuration import Contract

    settings = Settings(
        RefereeConfig(
            select=["REF205"], contract=[Contract(glob="*.md", required_headings=["Usage"])]
        )
    )
    text = "# Tool\n\n```sh\n# Usage\ntool --help\n```\n"
    assert [f.code for f in check_text(text, "README.md", settings)] == ["REF205"]


def test_placeholder_body_in_class_whose_base_merely_contains_protocol():
    text = "class Parser(XMLProtocolMixin):\n    def parse(self) -> int:\n        pass\n"
    assert [f.code for f in check_text(text, "parser.py", _only("REF101"))] == ["REF101"]


@pytest.mark.parametrize("root_name", ["test", "tests"])
def test_support_module_stubs_are_fixtures_when_the_project_root_is_a_test_directory(
    tmp_path: Path, root_name: str
):
    """`cd test && referee check .` must judge pydoc fixtures as the parent directory does."""
    root = tmp_path / root_name
    root.mkdir()
    text = 'def documented():\n    """A docstring pydoc should show."""\n'
    settings = Settings(RefereeConfig(select=["REF101"]), root)
    from referee.checks.engine import check_source
    from referee.checks.source import SourceFile

    assert check_source(SourceFile("pydocfodder.py", text), settings, "pydocfodder.py") == []
    outside = Settings(RefereeConfig(select=["REF101"]), tmp_path / "src")
    found = check_source(SourceFile("fodder.py", text), outside, "fodder.py")
    assert [f.code for f in found] == ["REF101"]
