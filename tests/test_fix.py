"""``referee check --fix``: the fixes the rules offer, written into the files, atomically,
never over an edit made meanwhile; ``--unsafe-fixes`` for the fixes that change what a
test checks."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest

from referee.checks import runner
from referee.checks.config import discover
from referee.checks.engine import check_text
from referee.checks.fixes import apply_fixes
from referee.checks.models import CheckReport, Edit, Finding, Fix, Location, Span

TUPLES = 'def test_total(total):\n    assert (total == 10, "off")\n    assert (total > 1, "big")\n'
FIXED_TUPLES = (
    'def test_total(total):\n    assert total == 10, "off"\n    assert total > 1, "big"\n'
)
MOCK = 'def test_send(sender):\n    sender.send("hi")\n    sender.send.called_once_with("hi")\n'
FIXED_MOCK = MOCK.replace(".called_once_with", ".assert_called_once_with")
PLACEHOLDER = "def helper():\n    pass\n"  # REF101: no fix


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_every_fix_the_rules_offer_is_marked_unsafe():
    """Both fixes make a test check what it only pretended to check, so the test may start
    failing: a change of behaviour, which ruff calls unsafe. `--fix` alone must not make a
    green suite red."""
    fixes = [f.fix for f in check_text(TUPLES + MOCK, "test_x.py") if f.fix is not None]
    assert sorted(f.message for f in fixes) == [
        "Call `assert_called_once_with`",
        "Remove the parentheses so the condition is checked",
        "Remove the parentheses so the condition is checked",
    ]
    assert {f.applicability for f in fixes} == {"unsafe"}


def test_fix_alone_leaves_unsafe_fixes_and_says_how_to_apply_them(invoke, project: Path):
    path = write(project / "test_x.py", TUPLES)
    result = invoke("check", "--fix", cwd=project)
    assert result.exit_code == 1
    assert path.read_text(encoding="utf-8") == TUPLES
    assert result.stdout.splitlines()[-1] == (
        "2 unsafe fixes not applied; add --unsafe-fixes to apply them."
    )


def test_unsafe_fixes_apply_every_fix_in_a_file_together(invoke, project: Path):
    path = write(project / "test_x.py", TUPLES + "\n\n" + MOCK)
    write(project / "clean.py", "X = 1\n")
    result = invoke("check", "--fix", "--unsafe-fixes", cwd=project)
    assert path.read_text(encoding="utf-8") == FIXED_TUPLES + "\n\n" + FIXED_MOCK
    assert result.exit_code == 0, result.stdout
    assert result.stdout.splitlines() == [
        "Fixed 3 findings (0 remaining).",
        "All checks passed! (2 files)",
    ]


def test_the_findings_left_are_reported_and_decide_the_exit_status(invoke, project: Path):
    write(project / "test_x.py", TUPLES)
    write(project / "helper.py", PLACEHOLDER)
    result = invoke("check", "--fix", "--unsafe-fixes", "--fail-on", "warning", cwd=project)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "helper.py:1:5: REF101 function `helper` is a placeholder: its body is only `pass`",
        "Fixed 2 findings (1 remaining).",
        "Found 1 finding (1 warning) in 1 file; 2 files checked.",
    ]


def test_the_json_report_counts_the_fixes(invoke, project: Path):
    write(project / "test_x.py", TUPLES)
    write(project / "helper.py", PLACEHOLDER)
    result = invoke("check", "--fix", "--unsafe-fixes", "--format", "json", cwd=project)
    report = CheckReport.model_validate_json(result.stdout)
    assert report.summary.fixed == 2
    assert [f.code for f in report.findings] == ["REF101"]
    assert report.summary.findings == 1


def test_fix_keeps_what_it_is_not_asked_to_fix(invoke, project: Path):
    # --min-severity hides the info finding and --select leaves REF115 out: neither is fixed.
    write(project / "test_x.py", TUPLES + "\n\n" + MOCK)
    result = invoke("check", "--fix", "--unsafe-fixes", "--select", "REF112", cwd=project)
    assert result.exit_code == 0
    assert (project / "test_x.py").read_text(encoding="utf-8") == FIXED_TUPLES + "\n\n" + MOCK


def test_fix_respects_min_severity(invoke, project: Path):
    write(project / "referee.toml", 'severity = { REF112 = "warning" }\n')
    path = write(project / "test_x.py", TUPLES + "\n\n" + MOCK)
    invoke("check", "--fix", "--unsafe-fixes", "--min-severity", "error", cwd=project)
    assert path.read_text(encoding="utf-8") == TUPLES + "\n\n" + FIXED_MOCK


@pytest.mark.parametrize(
    ("data", "fixed"),
    [
        (TUPLES.replace("\n", "\r\n").encode(), FIXED_TUPLES.replace("\n", "\r\n").encode()),
        (codecs.BOM_UTF8 + TUPLES.encode(), codecs.BOM_UTF8 + FIXED_TUPLES.encode()),
        (
            ("# -*- coding: latin-1 -*-\n" + TUPLES.replace("off", "épais")).encode("latin-1"),
            ("# -*- coding: latin-1 -*-\n" + FIXED_TUPLES.replace("off", "épais")).encode(
                "latin-1"
            ),
        ),
    ],
    ids=["crlf", "bom", "latin-1"],
)
def test_a_fixed_file_keeps_its_line_endings_and_encoding(
    invoke, project: Path, data: bytes, fixed: bytes
):
    path = project / "test_x.py"
    path.write_bytes(data)
    path.chmod(0o640)
    result = invoke("check", "--fix", "--unsafe-fixes", cwd=project)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert path.read_bytes() == fixed
    assert path.stat().st_mode & 0o777 == 0o640


def test_a_file_edited_while_being_fixed_is_left_alone(invoke, project: Path, monkeypatch):
    """An editor saving between referee's read and its write: the save wins, nothing is
    written, and the findings of what was read are still reported, with the reason."""
    path = write(project / "test_x.py", TUPLES)
    saved = TUPLES + "# the user's edit\n"
    real = runner.fix_bytes

    def fix_then_the_editor_saves(*args, **kwargs):
        outcome = real(*args, **kwargs)
        path.write_text(saved, encoding="utf-8")
        return outcome

    monkeypatch.setattr(runner, "fix_bytes", fix_then_the_editor_saves)
    result = invoke("check", "--fix", "--unsafe-fixes", cwd=project)
    assert path.read_text(encoding="utf-8") == saved
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        "referee: not fixed test_x.py: it changed while referee was fixing it, so nothing was "
        "written; run referee again"
    ]
    lines = result.stdout.splitlines()
    assert [line.split(" ")[1] for line in lines[:2]] == ["REF112", "REF112"]
    assert "Fixed" not in result.stdout


def test_fix_file_never_writes_over_an_edit_made_after_the_read(project: Path):
    """The same at the runner, with the edit landing while the fixes are being chosen."""
    path = write(project / "test_x.py", TUPLES)
    settings = discover(project)
    edited = []

    def wanted(finding: Finding) -> bool:
        if not edited:
            path.write_text("# rewritten meanwhile\n", encoding="utf-8")
            edited.append(True)
        return True

    target = runner.Target(path, "test_x.py", "test_x.py")
    result = runner.fix_file(target, settings, wanted)
    assert path.read_text(encoding="utf-8") == "# rewritten meanwhile\n"
    assert result.fixed == 0
    assert result.unfixed is not None and "changed while referee was fixing it" in result.unfixed
    assert [f.code for f in result.findings] == ["REF112", "REF112"]


def test_fix_with_stdin_prints_the_fixed_text(referee, project: Path):
    proc = referee("check", "--fix", "--unsafe-fixes", "-", cwd=project, stdin=TUPLES.encode())
    assert proc.returncode == 0
    assert proc.stdout == FIXED_TUPLES
    assert proc.stderr.splitlines() == [
        "Fixed 2 findings (0 remaining).",
        "All checks passed! (1 file)",
    ]


@pytest.mark.parametrize(
    "data", [b"def f():\n    return 1\n", TUPLES.encode(), b"\0\1binary"], ids=str
)
def test_fix_with_stdin_passes_through_what_it_does_not_fix(invoke, project: Path, data: bytes):
    # An editor filtering its buffer through `referee check --fix -` must get it back whole.
    result = invoke("check", "--fix", "-", cwd=project, stdin=data)
    assert result.stdout_bytes == data


def test_fix_with_stdin_and_an_output_file(invoke, project: Path):
    report = project / "report.json"
    result = invoke(
        "check",
        "--fix",
        "--unsafe-fixes",
        "--stdin-filename",
        "src/x.py",
        "--format",
        "json",
        "-o",
        str(report),
        cwd=project,
        stdin=TUPLES + "\n\n" + PLACEHOLDER,
    )
    assert result.stdout == FIXED_TUPLES + "\n\n" + PLACEHOLDER
    assert [f["code"] for f in json.loads(report.read_text())["findings"]] == ["REF101"]
    assert not (project / "src").exists()  # stdin is never written to disk


# ----------------------------------------------------------------------- applying edits


def _finding(line: int, start: int, end: int, content: str) -> Finding:
    span = Span(start=Location(line=line, column=start), end=Location(line=line, column=end))
    return Finding(
        code="REF112",
        name="tuple-assertion",
        layer="L0",
        severity="error",
        message="m",
        path="x.py",
        span=span,
        fix=Fix(message="m", edits=(Edit(span=span, content=content),)),
        url="u",
    )


def test_overlapping_fixes_wait_for_the_next_pass():
    text = "abcdef\n"
    applied = apply_fixes(
        text, [_finding(1, 3, 5, "XY"), _finding(1, 1, 4, "Q"), _finding(1, 6, 7, "Z")]
    )
    # The first by position wins; the one overlapping it waits; the one apart applies.
    assert (applied.text, applied.applied, applied.deferred) == ("QdeZ\n", 2, 1)


def test_a_fix_for_text_that_is_not_there_is_not_applied():
    applied = apply_fixes("ab\n", [_finding(1, 2, 9, "x"), _finding(5, 1, 1, "y")])
    assert (applied.text, applied.applied) == ("ab\n", 0)


def test_a_refused_output_file_leaves_every_file_unfixed(invoke, project: Path):
    path = write(project / "test_x.py", TUPLES)
    result = invoke("check", "--fix", "--unsafe-fixes", "-o", "test_x.py", cwd=project)
    assert result.exit_code == 2
    assert "-o test_x.py is one of the files being checked" in result.stderr
    assert path.read_text(encoding="utf-8") == TUPLES
