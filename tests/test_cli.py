"""The ``referee`` command line: exit codes, output formats, options and subcommands."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import jsonschema
import pytest
from guard_catalogue.cases import commit_repo

from referee import __version__
from referee.checks.models import CheckReport, Severity
from referee.checks.registry import RULES

# Each module trips exactly one rule at one severity.
ERROR_MODULE = 'def test_total(total):\n    assert (total == 10, "off")\n'  # REF112 error
WARNING_MODULE = "def helper():\n    pass\n"  # REF101 warning (a bare pass promises nothing)
INFO_MODULE = "LIMIT = 10  # TODO: tune\n"  # REF102 info
CLEAN_MODULE = "def double(x):\n    return 2 * x\n"

FINDING_LINE = re.compile(
    r"^(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<code>REF\d{3}) (?P<msg>.+)$"
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def mixed(project: Path) -> Path:
    """A project with one error, one warning and one info finding, and a clean file."""
    write(project / "test_error.py", ERROR_MODULE)
    write(project / "warning.py", WARNING_MODULE)
    write(project / "info.py", INFO_MODULE)
    write(project / "clean.py", CLEAN_MODULE)
    return project


def report_of(stdout: str) -> CheckReport:
    return CheckReport.model_validate_json(stdout)


# ------------------------------------------------------------------- version and help


def test_version_flag_prints_the_package_version(invoke, tmp_path: Path):
    for flag in ("--version", "-V"):
        result = invoke(flag, cwd=tmp_path)
        assert result.exit_code == 0
        assert result.stdout.strip() == f"referee, version {__version__}"


def test_python_dash_m_referee_runs_the_cli(referee, tmp_path: Path):
    proc = referee("--version", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"referee, version {__version__}"


def test_installed_console_script_runs_the_cli(tmp_path: Path):
    script = Path(sys.executable).parent / "referee"
    if not script.exists():
        script_path = shutil.which("referee")
        if script_path is None:
            pytest.skip("the referee console script is not installed next to this Python")
        script = Path(script_path)
    proc = subprocess.run(
        [str(script), "--version"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0
    assert __version__ in proc.stdout


def test_help_lists_every_command(invoke, tmp_path: Path):
    result = invoke("--help", cwd=tmp_path)
    assert result.exit_code == 0
    assert "Usage:" in result.stdout
    for command in ("check", "rule", "schema", "config"):
        assert re.search(rf"^\s+{command}\s", result.stdout, re.MULTILINE), command


def test_check_help_documents_exit_status(invoke, tmp_path: Path):
    result = invoke("check", "-h", cwd=tmp_path)
    assert result.exit_code == 0
    for option in ("--format", "--select", "--fail-on", "--exit-zero", "--stdin-filename"):
        assert option in result.stdout
    assert "Exit status: 0" in result.stdout


# ---------------------------------------------------------------------------- exit codes


def test_clean_project_exits_0(invoke, project: Path):
    write(project / "clean.py", CLEAN_MODULE)
    result = invoke("check", cwd=project)
    assert result.exit_code == 0
    assert result.stdout == "All checks passed! (1 file)\n"


def test_error_finding_exits_1(invoke, project: Path):
    write(project / "test_error.py", ERROR_MODULE)
    result = invoke("check", cwd=project)
    assert result.exit_code == 1


@pytest.mark.parametrize(
    ("module", "fail_on", "exit_code"),
    [
        (WARNING_MODULE, "error", 0),
        (WARNING_MODULE, "warning", 1),
        (WARNING_MODULE, "info", 1),
        (INFO_MODULE, "error", 0),
        (INFO_MODULE, "warning", 0),
        (INFO_MODULE, "info", 1),
        (ERROR_MODULE, "error", 1),
        (CLEAN_MODULE, "info", 0),
    ],
    ids=lambda value: {
        ERROR_MODULE: "error-finding",
        WARNING_MODULE: "warning-finding",
        INFO_MODULE: "info-finding",
        CLEAN_MODULE: "clean",
    }.get(value, str(value)),
)
def test_fail_on_sets_the_severity_that_exits_1(
    invoke, project: Path, module: str, fail_on: str, exit_code: int
):
    write(project / "mod.py", module)
    result = invoke("check", "--fail-on", fail_on, cwd=project)
    assert result.exit_code == exit_code, result.stdout


def test_exit_zero_reports_findings_but_exits_0(invoke, mixed: Path):
    result = invoke("check", "--exit-zero", cwd=mixed)
    assert result.exit_code == 0
    assert "test_error.py:2:5: REF112" in result.stdout
    assert "Found 3 findings" in result.stdout


def test_min_severity_hides_quieter_findings(invoke, mixed: Path):
    everything = report_of(invoke("check", "--format", "json", cwd=mixed).stdout)
    assert {f.severity for f in everything.findings} == set(Severity)
    for level, shown in (
        ("info", {"error", "warning", "info"}),
        ("warning", {"error", "warning"}),
        ("error", {"error"}),
    ):
        result = invoke("check", "--format", "json", "--min-severity", level, cwd=mixed)
        report = report_of(result.stdout)
        assert {f.severity.value for f in report.findings} == shown
        assert report.summary.findings == len(shown)


def test_min_severity_also_decides_the_exit_code(invoke, project: Path):
    write(project / "warning.py", WARNING_MODULE)
    hidden = invoke("check", "--fail-on", "warning", "--min-severity", "error", cwd=project)
    assert hidden.exit_code == 0
    shown = invoke("check", "--fail-on", "warning", cwd=project)
    assert shown.exit_code == 1


@pytest.mark.parametrize(
    "args",
    [
        ("check", "missing.py"),
        ("check", "--format", "xml"),
        ("check", "--fail-on", "fatal"),
        ("check", "--jobs", "0"),
        ("check", "--select", "NOPE"),
        ("check", "--bogus-option"),
        ("frobnicate",),
    ],
)
def test_usage_errors_exit_2(invoke, project: Path, args: tuple[str, ...]):
    write(project / "test_error.py", ERROR_MODULE)
    result = invoke(*args, cwd=project)
    assert result.exit_code == 2
    assert result.stderr.strip()
    assert "REF112" not in result.stdout


def test_an_empty_stdin_filename_is_a_usage_error(invoke, project: Path):
    result = invoke(
        "check", "--stdin-filename", "", cwd=project, stdin=b"def test_x():\n    pass\n"
    )
    assert result.exit_code == 2
    assert "--stdin-filename needs a file name" in result.stderr


def test_paths_and_stdin_filename_together_exit_2(invoke, project: Path):
    write(project / "clean.py", CLEAN_MODULE)
    result = invoke("check", "clean.py", "--stdin-filename", "x.py", cwd=project, stdin="x = 1\n")
    assert result.exit_code == 2
    assert "give either PATHS or --stdin-filename, not both" in result.stderr


def test_exit_codes_of_the_real_process(referee, mixed: Path):
    assert referee("check", "clean.py", cwd=mixed).returncode == 0
    assert referee("check", "test_error.py", cwd=mixed).returncode == 1
    assert referee("check", "missing.py", cwd=mixed).returncode == 2


# ------------------------------------------------------------------------- text format


def test_text_format_is_path_line_col_code_message(invoke, mixed: Path):
    result = invoke("check", cwd=mixed)
    lines = result.stdout.splitlines()
    # Counted apart: the files with findings, and the files checked (the fourth is clean).
    assert lines[-2] == "Found 3 findings (1 error, 1 warning, 1 info) in 3 files; 4 files checked."
    assert lines[-1] == "No safe fixes; 1 unsafe fix can be applied with --fix --unsafe-fixes."
    findings = [FINDING_LINE.match(line) for line in lines[:-2]]
    assert all(findings), lines
    report = report_of(invoke("check", "--format", "json", cwd=mixed).stdout)
    expected = [
        (f.path, f.span.start.line, f.span.start.column, f.code, f.message) for f in report.findings
    ]
    actual = [(m["path"], int(m["line"]), int(m["col"]), m["code"], m["msg"]) for m in findings]
    assert actual == expected


def test_summary_counts_the_files_with_findings_and_the_files_checked(invoke, project: Path):
    three = "".join(f'    assert (total == {n}, "off")\n' for n in range(3))
    write(project / "test_three.py", "def test_total(total):\n" + three)
    write(project / "clean.py", CLEAN_MODULE)
    result = invoke("check", cwd=project)
    assert "Found 3 findings (3 errors) in 1 file; 2 files checked." in result.stdout.splitlines()


def test_text_format_marks_what_fix_would_fix(invoke, project: Path):
    # `[*]` means "--fix fixes this with these options", as in ruff: REF112's fix is
    # unsafe (the test starts checking, and may fail), so it is marked with --unsafe-fixes.
    write(project / "test_error.py", ERROR_MODULE)
    message = (
        "assertion on a non-empty tuple is always true; did you mean `assert condition, message`?"
    )
    plain = invoke("check", cwd=project).stdout.splitlines()
    assert plain[0] == f"test_error.py:2:5: REF112 {message}"
    assert plain[-1] == "No safe fixes; 1 unsafe fix can be applied with --fix --unsafe-fixes."
    marked = invoke("check", "--unsafe-fixes", cwd=project).stdout.splitlines()
    assert marked[0] == f"test_error.py:2:5: REF112 [*] {message}"
    assert marked[-1] == "[*] 1 fixable with --fix."


def test_text_output_keeps_brackets_in_paths_and_messages(invoke, project: Path):
    write(project / "[draft]" / "mod.py", "X = 1  # TODO: [bold]not markup[/bold]\n")
    result = invoke("check", cwd=project)
    assert result.stdout.splitlines()[0] == (
        "[draft]/mod.py:1:8: REF102 TODO marker: # TODO: [bold]not markup[/bold]"
    )


def test_text_paths_are_relative_to_the_working_directory(invoke, project: Path):
    write(project / "pkg" / "sub" / "warning.py", WARNING_MODULE)
    result = invoke("check", "pkg", cwd=project)
    assert result.stdout.startswith(f"{Path('pkg/sub/warning.py')}:1:5: REF101 ")


def test_statistics_count_findings_per_rule(invoke, mixed: Path):
    write(mixed / "more.py", WARNING_MODULE + "\n\n" + WARNING_MODULE.replace("helper", "other"))
    result = invoke("check", "--statistics", cwd=mixed)
    rows = [line.split() for line in result.stdout.splitlines() if re.match(r"^\s+\d+\s+REF", line)]
    assert rows == [
        ["3", "REF101", "placeholder-body", "warning"],  # as reported, not the default
        ["1", "REF102", "placeholder-marker", "info"],
        ["1", "REF112", "tuple-assertion", "error"],
    ]
    plain = invoke("check", cwd=mixed).stdout
    assert not re.search(r"^\s+\d+\s+REF", plain, re.MULTILINE)


# ------------------------------------------------------------------------- JSON format


def test_json_output_validates_against_the_published_schema(invoke, mixed: Path):
    schema = json.loads(invoke("schema", cwd=mixed).stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    document = json.loads(invoke("check", "--format", "json", cwd=mixed).stdout)
    jsonschema.validate(document, schema, cls=jsonschema.Draft202012Validator)
    assert document["summary"]["findings"] == 3


def test_schema_rejects_a_report_with_a_bad_severity(invoke, mixed: Path):
    schema = json.loads(invoke("schema", cwd=mixed).stdout)
    document = json.loads(invoke("check", "--format", "json", cwd=mixed).stdout)
    document["findings"][0]["severity"] = "catastrophic"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, schema, cls=jsonschema.Draft202012Validator)


def test_json_output_round_trips_into_check_report(invoke, mixed: Path):
    stdout = invoke("check", "--format", "json", cwd=mixed).stdout
    report = report_of(stdout)
    assert json.loads(report.model_dump_json()) == json.loads(stdout)
    assert report.version == __version__
    assert [(f.path, f.code, f.severity) for f in report.findings] == [
        ("info.py", "REF102", Severity.INFO),
        ("test_error.py", "REF112", Severity.ERROR),
        ("warning.py", "REF101", Severity.WARNING),
    ]
    assert report.summary.files_checked == 4
    assert report.summary.files_skipped == 0
    assert report.summary.files_with_findings == 3
    assert report.summary.fixed == 0
    assert report.summary.by_code == {"REF101": 1, "REF102": 1, "REF112": 1}
    assert report.summary.by_severity == {s: 1 for s in Severity}
    (fixable,) = [f for f in report.findings if f.fix is not None]
    assert fixable.code == "REF112"
    assert fixable.evidence == 'assert (total == 10, "off")'
    assert fixable.url.endswith("/tuple-assertion.md")


# ------------------------------------------------------------------------ SARIF format


def test_sarif_output_has_the_fields_github_code_scanning_requires(invoke, mixed: Path):
    result = invoke("check", "--format", "sarif", cwd=mixed)
    assert result.exit_code == 1
    sarif = json.loads(result.stdout)
    assert sarif["version"] == "2.1.0"
    assert "sarif" in sarif["$schema"] and "2.1.0" in sarif["$schema"]
    (run,) = sarif["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "referee"
    assert driver["version"] == __version__
    assert [r["id"] for r in driver["rules"]] == [rule.code for rule in RULES]
    for descriptor, rule in zip(driver["rules"], RULES, strict=True):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.message
        assert descriptor["helpUri"] == rule.url
        assert descriptor["fullDescription"]["text"]
    report = report_of(invoke("check", "--format", "json", cwd=mixed).stdout)
    assert len(run["results"]) == len(report.findings) == 3
    for result_, finding in zip(run["results"], report.findings, strict=True):
        assert result_["ruleId"] == finding.code
        assert driver["rules"][result_["ruleIndex"]]["id"] == finding.code
        assert (
            result_["level"]
            == {"error": "error", "warning": "warning", "info": "note"}[finding.severity.value]
        )
        assert result_["message"]["text"] == finding.message
        (location,) = result_["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == finding.path
        region = physical["region"]
        assert region["startLine"] == finding.span.start.line >= 1
        assert region["startColumn"] == finding.span.start.column >= 1
        assert region["endLine"] >= region["startLine"]


def test_sarif_levels_use_note_for_info(invoke, project: Path):
    write(project / "info.py", INFO_MODULE)
    sarif = json.loads(invoke("check", "--format", "sarif", cwd=project).stdout)
    (result,) = sarif["runs"][0]["results"]
    assert result["level"] == "note"
    rules = {r["id"]: r for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["REF102"]["defaultConfiguration"]["level"] == "note"
    assert rules["REF101"]["defaultConfiguration"]["level"] == "error"


@pytest.mark.parametrize(
    ("name", "uri"),
    [
        ("tests/test_error.py", "tests/test_error.py"),
        # a URI reference: a raw `#` would start a fragment, a raw `%` an escape
        ("tests/my test#1 100%.py", "tests/my%20test%231%20100%25.py"),
    ],
    ids=["posix", "percent-encoded"],
)
def test_sarif_uses_posix_uris_and_carries_fixes(invoke, project: Path, name: str, uri: str):
    write(project / name, ERROR_MODULE)
    sarif = json.loads(invoke("check", "--format", "sarif", cwd=project).stdout)
    (result,) = sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == uri
    (fix,) = result["fixes"]
    (change,) = fix["artifactChanges"]
    (replacement,) = change["replacements"]
    assert replacement["insertedContent"]["text"] == 'total == 10, "off"'
    assert replacement["deletedRegion"]["startLine"] == 2


def test_sarif_reports_skipped_files_as_notifications(invoke, project: Path):
    (project / "blob.py").write_bytes(b"\x00\x01binary")
    write(project / "clean.py", CLEAN_MODULE)
    sarif = json.loads(invoke("check", "--format", "sarif", cwd=project).stdout)
    (invocation,) = sarif["runs"][0]["invocations"]
    (note,) = invocation["toolExecutionNotifications"]
    assert note["message"]["text"] == "skipped: binary file (contains NUL bytes)"
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "blob.py"


# ----------------------------------------------------------------------- GitHub format


def test_github_format_prints_one_workflow_command_per_finding(invoke, mixed: Path):
    result = invoke("check", "--output-format", "github", cwd=mixed)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "::notice file=info.py,line=1,col=13,endLine=1,endColumn=25,"
        "title=REF102 (placeholder-marker)::TODO marker: # TODO: tune",
        "::error file=test_error.py,line=2,col=5,endLine=2,endColumn=32,"
        "title=REF112 (tuple-assertion)::assertion on a non-empty tuple is always true; "
        "did you mean `assert condition, message`?",
        "::warning file=warning.py,line=1,col=5,endLine=1,endColumn=11,"
        "title=REF101 (placeholder-body)::function `helper` is a placeholder: its body is "
        "only `pass`",
    ]


def test_format_is_the_same_option_as_output_format(invoke, mixed: Path):
    for fmt in ("text", "json", "sarif", "github"):
        spelled = invoke("check", "--format", fmt, cwd=mixed)
        assert spelled.stdout == invoke("check", "--output-format", fmt, cwd=mixed).stdout
    assert "--output-format, --format" in invoke("check", "--help", cwd=mixed).stdout


def test_github_format_escapes_what_would_end_a_property_or_the_message(invoke, project: Path):
    # A comma or colon would end a property's value (file=a,b:c.py reads as file=a), and a
    # percent sign starts an escape; in the message only the percent sign is special.
    write(project / "a,b:c.py", "X = 1  # TODO: 100% sure, line\n")
    result = invoke("check", "--output-format", "github", cwd=project)
    assert result.stdout.splitlines() == [
        "::notice file=a%2Cb%3Ac.py,line=1,col=8,endLine=1,endColumn=31,"
        "title=REF102 (placeholder-marker)::TODO marker: # TODO: 100%25 sure, line"
    ]


def test_github_commands_escape_line_breaks():
    # No rule's message holds a line break today; one that did must not end the command.
    from referee.server.output import _github_command

    assert _github_command("error", {"file": "a\nb", "title": "x:y"}, "one\r\ntwo%") == (
        "::error file=a%0Ab,title=x%3Ay::one%0D%0Atwo%25"
    )


def test_github_format_of_a_clean_run_is_empty_and_of_a_skip_a_warning(invoke, project: Path):
    write(project / "clean.py", CLEAN_MODULE)
    assert invoke("check", "--output-format", "github", cwd=project).stdout == ""
    (project / "blob.py").write_bytes(b"\0\1")
    result = invoke("check", "--output-format", "github", cwd=project)
    assert result.stdout.splitlines() == [
        "::warning file=blob.py,title=referee%3A skipped::skipped: binary file (contains NUL bytes)"
    ]


def test_guard_prints_github_annotations(invoke, project: Path):
    write(project / "test_a.py", TWO_ASSERTS.format(comment=""))
    commit_repo(project, {})
    write(project / "test_a.py", ONE_ASSERT.format(comment=""))
    result = invoke("guard", "--output-format", "github", cwd=project)
    assert result.exit_code == 1
    (line,) = result.stdout.splitlines()
    assert line.startswith("::error file=test_a.py,line=1,col=1,")
    assert (
        ",title=REF301 (assertion-removed)::in `test_a`, the assertion `assert g() == 2` " in line
    )


# ---------------------------------------------------------------------- other options


def _ctrl_c_as_in_a_terminal() -> None:
    """A child inherits an ignored SIGINT (a test run started in the background by a
    non-interactive shell has one, by POSIX): give it the terminal's default again."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_exits_130_with_one_line(project: Path):
    """click's own handling said "Aborted!" and exited 1 — the code for "findings"."""
    import signal
    import time

    # stdin left open: the run waits on it until the interrupt comes
    process = subprocess.Popen(
        [sys.executable, "-m", "referee", "check", "--stdin-filename", "x.py"],
        cwd=project,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )
    # Interrupt once it waits in the read (past start-up, where an interrupt would
    # land in an import): /proc says where it sleeps; elsewhere, give it five seconds.
    wchan = Path(f"/proc/{process.pid}/wchan")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if wchan.exists() and "pipe_read" in wchan.read_text():
            break
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err.decode()
    assert err.decode() == "referee: interrupted\n"
    assert out == b""


def test_stdin_filename_checks_stdin_as_that_path(invoke, project: Path):
    # The file on disk is clean; stdin holds the editor's unsaved text.
    write(project / "src" / "mod.py", CLEAN_MODULE)
    result = invoke("check", "--stdin-filename", "src/mod.py", cwd=project, stdin=WARNING_MODULE)
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == (
        "src/mod.py:1:5: REF101 function `helper` is a placeholder: its body is only `pass`"
    )


def test_stdin_filename_applies_the_configuration_around_that_path(invoke, project: Path):
    write(
        project / "referee.toml",
        '[[contract]]\nglob = "docs/*.md"\nmin-lines = 3\n\n'
        '[per-file-ignores]\n"docs/**" = ["REF102"]\n',
    )
    result = invoke(
        "check",
        "--format",
        "json",
        "--stdin-filename",
        "docs/notes.md",
        cwd=project,
        stdin="TODO: one line\n",
    )
    report = report_of(result.stdout)
    assert [(f.code, f.path) for f in report.findings] == [("REF201", "docs/notes.md")]
    assert result.exit_code == 1


def test_dash_checks_stdin_as_python(invoke, project: Path):
    """`referee check -` reads standard input, as ruff does: Python, named `-`."""
    result = invoke("check", "-", cwd=project, stdin=WARNING_MODULE)
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == (
        "-:1:5: REF101 function `helper` is a placeholder: its body is only `pass`"
    )


def test_dash_with_stdin_filename_is_that_file(invoke, project: Path):
    named = invoke("check", "-", "--stdin-filename", "src/mod.py", cwd=project, stdin=ERROR_MODULE)
    implied = invoke("check", "--stdin-filename", "src/mod.py", cwd=project, stdin=ERROR_MODULE)
    assert named.exit_code == implied.exit_code == 1
    assert named.stdout == implied.stdout
    assert named.stdout.startswith("src/mod.py:2:5: REF112 ")


def test_dash_cannot_be_mixed_with_other_paths(invoke, project: Path):
    write(project / "clean.py", CLEAN_MODULE)
    for args in (("-", "clean.py"), ("clean.py", "-"), ("-", "-")):
        result = invoke("check", *args, cwd=project, stdin=ERROR_MODULE)
        assert result.exit_code == 2
        assert result.stderr.strip() == (
            "referee: error: `-` (standard input) cannot be checked together with other paths"
        )


def test_a_file_named_dash_is_checked_as_a_file(invoke, project: Path):
    write(project / "-", "TODO: later\n")
    result = invoke("check", "./-", cwd=project, stdin=ERROR_MODULE)
    assert result.stdout.startswith("-:1:1: REF102 ")


def test_dash_with_the_real_process(referee, project: Path):
    proc = referee("check", "-", cwd=project, stdin=ERROR_MODULE.encode())
    assert proc.returncode == 1
    assert proc.stdout.startswith("-:2:5: REF112 ")


def test_stdin_filename_with_the_real_process(referee, project: Path):
    proc = referee("check", "--stdin-filename", "x.py", cwd=project, stdin=b"def f():\n    pass\n")
    assert proc.returncode == 0
    assert proc.stdout.startswith("x.py:1:5: REF101 ")


def test_select_and_ignore_on_the_command_line(invoke, mixed: Path):
    def found(*args: str) -> list[str]:
        stdout = invoke("check", "--format", "json", *args, cwd=mixed).stdout
        return sorted(f.code for f in report_of(stdout).findings)

    assert found() == ["REF101", "REF102", "REF112"]
    assert found("--select", "REF101") == ["REF101"]
    assert found("--select", "REF101,REF102") == ["REF101", "REF102"]
    assert found("--select", "REF101", "--select", "ref11") == ["REF101", "REF112"]
    assert found("--ignore", "REF10") == ["REF112"]
    assert found("--select", "REF1", "--ignore", "REF112") == ["REF101", "REF102"]
    assert found("--select", "REF102", "--extend-select", "REF112") == ["REF102", "REF112"]


def test_command_line_select_replaces_the_configured_selection(invoke, mixed: Path):
    write(mixed / "referee.toml", 'select = ["REF102"]\n')
    configured = report_of(invoke("check", "--format", "json", cwd=mixed).stdout)
    assert [f.code for f in configured.findings] == ["REF102"]
    overridden = report_of(
        invoke("check", "--format", "json", "--select", "REF112", cwd=mixed).stdout
    )
    assert [f.code for f in overridden.findings] == ["REF112"]


def test_output_file_receives_the_report_instead_of_stdout(invoke, mixed: Path):
    expected = invoke("check", "--format", "json", cwd=mixed).stdout
    out = mixed / "reports" / "referee.json"
    out.parent.mkdir()
    result = invoke("check", "--format", "json", "-o", str(out), cwd=mixed)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert out.read_text(encoding="utf-8") == expected


@pytest.mark.parametrize("command", ["check", "guard"])
def test_an_output_file_that_cannot_be_written_is_one_clear_error(
    invoke, mixed: Path, command: str
):
    if command == "guard":
        commit_repo(mixed, {})
    out = mixed / "no-such-dir" / "referee.sarif"
    result = invoke(command, "--format", "sarif", "-o", str(out), cwd=mixed)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"referee: error: cannot write {out}: No such file or directory"
    )
    assert not out.parent.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_an_output_file_that_is_a_pipe_is_written_to_not_replaced(invoke, mixed: Path):
    """``-o`` into a FIFO (or /dev/stdout, /dev/null) writes to it; replacing it with a
    regular file, as the atomic write of a report file would, leaves its reader hanging
    and, as root, would replace /dev/null itself."""
    fifo = mixed / "report.pipe"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text(encoding="utf-8")))
    reader.start()
    result = invoke("check", "--format", "json", "-o", str(fifo), cwd=mixed)
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert result.exit_code == 1, result.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert report_of(received[0]).summary.by_severity[Severity.ERROR] == 1


@pytest.mark.parametrize("command", ["check", "guard"])
def test_an_output_file_that_is_a_checked_file_is_refused(invoke, mixed: Path, command: str):
    if command == "guard":
        commit_repo(mixed, {})
    before = (mixed / "test_error.py").read_text(encoding="utf-8")
    result = invoke(command, "test_error.py", "-o", "test_error.py", cwd=mixed)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "referee: error: -o test_error.py is one of the files being checked; not overwriting it"
    )
    assert (mixed / "test_error.py").read_text(encoding="utf-8") == before


@pytest.mark.parametrize(
    "tail", [b"#" + b"x" * 3000 + b"\n", b"# \xff\xfe not UTF-8\n"], ids=["padded", "bad-utf8"]
)
def test_guard_fails_on_a_changed_test_it_could_not_compare(invoke, project: Path, tail: bytes):
    """Padding a weakened test past max-file-size (or breaking its encoding) made the guard
    skip it and pass."""
    write(project / "referee.toml", "max-file-size = 2000\n")
    write(project / "test_a.py", "def test_a():\n    assert f() == 1\n")
    commit_repo(project, {})
    (project / "test_a.py").write_bytes(b"def test_a():\n    pass\n" + tail)
    result = invoke("guard", cwd=project)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "referee: error: 1 changed file(s) could not be compared with HEAD, so the guard "
            "cannot pass: test_a.py"
        )
    )


TWO_ASSERTS = "def test_a():{comment}\n    assert f() == 1\n    assert g() == 2\n"
ONE_ASSERT = "def test_a():{comment}\n    assert f() == 1\n"
WAIVER = "  # referee: ignore[REF301]"


def test_guard_ignores_a_waiver_added_with_the_weakening_and_honours_an_old_one(
    invoke, project: Path
):
    write(project / "test_a.py", TWO_ASSERTS.format(comment=""))
    commit_repo(project, {})
    write(project / "test_a.py", ONE_ASSERT.format(comment=WAIVER))
    added = invoke("guard", cwd=project)
    assert added.exit_code == 1, added.stdout
    assert "test_a.py:1:1: REF301" in added.stdout
    # Not silently: one note says why the comment did nothing, and what does.
    assert added.stderr.splitlines() == [
        "referee: guard: test_a.py:1: `referee: ignore[REF301]` not honoured: the line is new "
        "since HEAD, and a change cannot waive its own weakening (a person who accepts it "
        "commits the waiver first; a test proved wrong gets a certificate from "
        "`referee arbitrate`)"
    ]

    write(project / "test_a.py", TWO_ASSERTS.format(comment=WAIVER))
    commit_repo(project, {}, "next")  # the waiver is now part of the base: a person accepted it
    write(project / "test_a.py", ONE_ASSERT.format(comment=WAIVER))
    old = invoke("guard", cwd=project)
    assert old.exit_code == 0, old.stdout
    assert old.stderr == ""


def test_guard_notes_an_unhonoured_waiver_once_per_comment(invoke, project: Path):
    write(project / "test_a.py", "def test_a():\n    assert f() == 1\n")
    write(project / "test_b.py", "def test_b():\n    assert g() == 2\n")
    commit_repo(project, {})
    # Two findings start on the waived line (the test's assertion removed, a skip added);
    # a comment naming another rule is not a waiver of these, and gets no note.
    write(
        project / "test_a.py",
        "import pytest\n\n\n@pytest.mark.skip(reason='later')\n"
        "def test_a():  # referee: ignore\n    pass\n",
    )
    write(project / "test_b.py", "def test_b():  # referee: ignore[REF101]\n    pass\n")
    result = invoke("guard", cwd=project)
    assert result.exit_code == 1
    notes = [line for line in result.stderr.splitlines() if "not honoured" in line]
    assert len(notes) == 1, result.stderr
    assert notes[0].startswith("referee: guard: test_a.py:5: `referee: ignore` not honoured: ")


@pytest.mark.parametrize(
    ("before", "after", "note"),
    [
        (None, 'ignore = ["REF3"]\n', "referee.toml is new since HEAD"),
        ("max-file-size = 100000\n", 'test-files = ["nothing"]\n', "referee.toml changed"),
        ("max-file-size = 100000\n", "max-file-size = 10\n", "referee.toml changed"),
    ],
    ids=["new-file-ignores-the-guard", "no-test-files", "tiny-max-file-size"],
)
def test_guard_runs_with_the_configuration_of_the_base(
    invoke, project: Path, before: str | None, after: str, note: str
):
    """A change cannot switch off the guard that checks it by editing referee's config."""
    write(project / "test_a.py", TWO_ASSERTS.format(comment=""))
    if before is None:
        (project / "referee.toml").unlink()
    else:
        write(project / "referee.toml", before)
    commit_repo(project, {})
    write(project / "test_a.py", ONE_ASSERT.format(comment=""))
    write(project / "referee.toml", after)
    result = invoke("guard", cwd=project)
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "test_a.py:1:1: REF301" in result.stdout
    assert note in result.stderr


def test_guard_uses_an_unchanged_or_equivalent_configuration_silently(invoke, project: Path):
    (project / "referee.toml").unlink()
    write(project / "test_a.py", TWO_ASSERTS.format(comment=""))
    write(
        project / "pyproject.toml", '[project]\nname = "x"\n\n[tool.referee]\nignore = ["REF301"]\n'
    )
    commit_repo(project, {})
    write(project / "test_a.py", ONE_ASSERT.format(comment=""))
    write(  # another table changed; referee's is the same
        project / "pyproject.toml", '[project]\nname = "y"\n\n[tool.referee]\nignore = ["REF301"]\n'
    )
    result = invoke("guard", cwd=project)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "referee: guard:" not in result.stderr


def test_guard_refuses_a_path_that_does_not_exist(invoke, project: Path):
    write(project / "test_a.py", "def test_a():\n    assert f() == 1\n")
    commit_repo(project, {})
    result = invoke("guard", "nonexist.py", cwd=project)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "referee: error: nonexist.py: no such file or directory"
    )
    (project / "test_a.py").unlink()  # a deleted test may still be named
    deleted = invoke("guard", "test_a.py", cwd=project)
    assert deleted.exit_code == 1 and "REF" in deleted.stdout


def test_config_option_uses_the_named_file(invoke, mixed: Path):
    write(mixed / "referee.toml", 'select = ["REF102"]\n')
    write(mixed / "ci.toml", 'select = ["REF101"]\n')
    result = invoke("check", "--format", "json", "--config", "ci.toml", cwd=mixed)
    assert [f.code for f in report_of(result.stdout).findings] == ["REF101"]


def test_check_without_paths_checks_the_current_directory(invoke, mixed: Path):
    implicit = report_of(invoke("check", "--format", "json", cwd=mixed).stdout)
    explicit = report_of(invoke("check", "--format", "json", ".", cwd=mixed).stdout)
    assert implicit.summary.files_checked == 4
    assert implicit.findings == explicit.findings


def test_check_from_a_subdirectory_checks_that_subtree_with_the_project_configuration(
    invoke, project: Path
):
    """As in ruff, and as README and --help say: from tests/, tests/ and what is below it,
    never the project around it; the configuration is still the project's, found upward,
    and its globs still match from the project root."""
    write(project / "referee.toml", '[per-file-ignores]\n"tests/legacy/*" = ["REF112"]\n')
    write(project / "src" / "warning.py", WARNING_MODULE)
    write(project / "tests" / "test_error.py", ERROR_MODULE)
    write(project / "tests" / "legacy" / "test_old.py", ERROR_MODULE)
    result = invoke("check", "--format", "json", cwd=project / "tests")
    report = report_of(result.stdout)
    assert report.summary.files_checked == 2
    assert [(f.path, f.code) for f in report.findings] == [("test_error.py", "REF112")]


# ------------------------------------------------------------------------- subcommands


def test_rule_by_code_prints_the_rule_page(invoke, tmp_path: Path):
    result = invoke("rule", "REF101", cwd=tmp_path)
    assert result.exit_code == 0
    assert "placeholder-body (REF101)" in result.stdout
    assert "What it does" in result.stdout
    assert "default severity error" in result.stdout


def test_rule_by_name_prints_the_same_page_as_by_code(invoke, tmp_path: Path):
    by_name = invoke("rule", "placeholder-body", cwd=tmp_path)
    by_code = invoke("rule", "ref101", cwd=tmp_path)
    assert by_name.exit_code == 0
    assert by_name.stdout == by_code.stdout


def test_rule_without_argument_lists_every_rule(invoke, tmp_path: Path):
    result = invoke("rule", cwd=tmp_path)
    assert result.exit_code == 0
    listed = re.findall(r"^\s*(REF\d{3})\s", result.stdout, re.MULTILINE)
    assert listed == [rule.code for rule in RULES]


def test_rule_list_in_a_pipe_is_one_whole_line_per_rule(referee, tmp_path: Path):
    """Piped (CI logs, `| grep`), names and descriptions are never cut to 80 columns
    ("tested-function-monkeypa…")."""
    proc = referee("rule", cwd=tmp_path)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["code", "name", "layer", "severity", "what", "it", "flags"]
    assert len(lines) == 1 + len(RULES)
    for line, rule in zip(lines[1:], RULES, strict=True):
        code, name, layer, severity, message = line.split(maxsplit=4)
        assert (code, name, layer, severity, message) == (
            rule.code,
            rule.name,
            rule.layer.value,
            rule.severity.value,
            rule.message,
        )
    assert "…" not in proc.stdout


def test_rule_json_lists_every_rule_with_its_documentation(invoke, tmp_path: Path):
    rules = json.loads(invoke("rule", "--format", "json", cwd=tmp_path).stdout)
    assert [r["code"] for r in rules] == [rule.code for rule in RULES]
    assert {r["name"] for r in rules} == {rule.name for rule in RULES}
    assert all(r["documentation"].startswith("## What it does") for r in rules)
    (one,) = json.loads(invoke("rule", "REF130", "--format", "json", cwd=tmp_path).stdout)
    assert one["name"] == "empty-test-run"
    assert one["layer"] == "L0"


def test_rule_all_prints_every_page(invoke, tmp_path: Path):
    result = invoke("rule", "--all", cwd=tmp_path)
    assert result.exit_code == 0
    for rule in RULES:
        assert f"{rule.name} ({rule.code})" in result.stdout


def test_unknown_rule_exits_2(invoke, tmp_path: Path):
    result = invoke("rule", "NOPE", cwd=tmp_path)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "no rule 'NOPE'" in result.stderr


def test_config_command_shows_the_file_and_the_resolved_settings(invoke, project: Path):
    write(project / "referee.toml", 'select = ["REF1"]\nmax-file-size = 1000\n')
    result = invoke("config", cwd=project)
    assert result.exit_code == 0
    assert f"configuration: {project / 'referee.toml'}" in result.stderr
    assert f"project root:  {project}" in result.stderr
    resolved = json.loads(result.stdout)
    assert resolved["select"] == ["REF1"]
    assert resolved["max-file-size"] == 1000
    assert resolved["test-files"] == ["test_*.py", "*_test.py", "tests.py"]


def test_config_command_without_a_file_shows_the_defaults(invoke, tmp_path: Path):
    result = invoke("config", str(tmp_path), cwd=tmp_path)
    assert result.exit_code == 0
    assert "configuration: defaults (no referee.toml or [tool.referee] found)" in result.stderr
    assert json.loads(result.stdout)["select"] == ["ALL"]


def test_schema_command_prints_the_check_report_schema(invoke, tmp_path: Path):
    schema = json.loads(invoke("schema", cwd=tmp_path).stdout)
    assert schema["title"] == "referee check report"
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(schema["required"]) == {"version", "findings", "skipped", "summary"}


def test_pre_commit_hooks_run_existing_commands():
    """Every hook in .pre-commit-hooks.yaml calls a real subcommand of the CLI."""
    import click
    import yaml

    from referee.server.cli import main as cli

    hooks = yaml.safe_load((Path(__file__).parents[1] / ".pre-commit-hooks.yaml").read_text())
    assert {hook["id"] for hook in hooks} == {"referee-check", "referee-guard"}
    for hook in hooks:
        program, command = hook["entry"].split()
        assert program == "referee"
        assert cli.get_command(click.Context(cli), command) is not None, command


MEAN = "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n"


def _judged(name: str, text: str) -> str:
    """The content hash the judge gives function ``name`` of ``text``."""
    from referee.checks.judge import core
    from referee.checks.models import Location, Span

    here = Span(start=Location(line=1, column=1), end=Location(line=1, column=1))
    return core.Subject("function", name, text.rstrip("\n"), here).content_sha256


def test_review_show_prints_why_and_what_each_perspective_said(invoke, tmp_path: Path):
    from referee.checks import review

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "mathx.py").write_text(MEAN)
    item = review.new_item(
        kind="judge",
        path="src/mathx.py",
        line=4,
        subject="mean",
        content_sha256=_judged("mean", MEAN),
        title="mean: the judge could not decide",
        reasons=["perspectives disagree (strict REJECT, balanced PASS, lenient PASS)"],
        evidence=["strict REJECT: Divides by n + 1. — 'return sum(xs) / (len(xs) + 1)'"],
    )
    review.submit(tmp_path, item)
    shown = invoke("review", "show", item.id[:6], "--root", str(tmp_path), cwd=tmp_path)
    assert shown.exit_code == 0, shown.output
    lines = [line.strip() for line in shown.stdout.splitlines()]
    assert lines[:2] == [
        f"mean: the judge could not decide  (judge, id {item.id})",
        "src/mathx.py:4  mean",
    ]
    why = lines.index("Why a person decides")
    assert lines[why + 1] == "- perspectives disagree (strict REJECT, balanced PASS, lenient PASS)"
    said = lines.index("What each perspective said")
    assert lines[said + 1] == f"- {item.evidence[0]}"
    assert lines[-1] == "Status: pending"

    invoke("review", "reject", item.id[:6], "--by", "ada", "--root", str(tmp_path), cwd=tmp_path)
    shown = invoke("review", "show", item.id[:6], "--root", str(tmp_path), cwd=tmp_path)
    assert shown.stdout.splitlines()[-1].startswith("Status: rejected by ada on ")
    invoke("review", "accept", item.id[:6], "--by", "bo", "--root", str(tmp_path), cwd=tmp_path)
    shown = invoke("review", "show", item.id[:6], "--root", str(tmp_path), cwd=tmp_path)
    assert shown.stdout.splitlines()[-1].startswith("Status: accepted by bo on ")  # the latest

    missing = invoke("review", "show", "ffffff", "--root", str(tmp_path), cwd=tmp_path)
    assert missing.exit_code == 2
    assert "no review item 'ffffff'" in missing.stderr


def test_an_unreadable_review_queue_is_an_error_not_an_empty_queue(invoke, project: Path):
    (project / ".referee" / "review.jsonl").mkdir(parents=True)  # not a file
    result = invoke("review", cwd=project)
    assert result.exit_code == 2
    assert "cannot read" in result.stderr and "Is a directory" in result.stderr
    assert "Nothing waits" not in result.stdout


def test_review_queue_lines_that_are_not_items_are_named_for_what_they_are(invoke, project: Path):
    queue = project / ".referee" / "review.jsonl"
    queue.parent.mkdir()
    queue.write_text('[1, 2]\n{"type": "decision", "id": "x", "decision": "maybe"}\n')
    result = invoke("review", cwd=project)
    assert result.exit_code == 0
    assert "line 1: not a JSON object" in result.stderr
    assert "line 2: decision for an unknown item" in result.stderr


def test_review_list_hides_items_whose_code_changed_and_all_shows_them(invoke, tmp_path: Path):
    from referee.checks import review

    project, away = tmp_path / "project", tmp_path / "away"  # --root must do the finding
    project.mkdir()
    away.mkdir()
    (project / "mathx.py").write_text(MEAN)
    items = {
        name: review.new_item(
            kind="judge",
            path="mathx.py",
            line=1,
            subject="mean",
            content_sha256=_judged("mean", text),
            title=f"mean: the judge could not decide ({name})",
        )
        for name, text in [("now", MEAN), ("before", MEAN.replace("+ 1", "+ 2"))]
    }
    for item in items.values():
        review.submit(project, item)

    listed = invoke("review", "--root", str(project), cwd=away)
    assert listed.exit_code == 0, listed.output
    assert items["now"].id[:8] in listed.stdout
    assert items["before"].id[:8] not in listed.stdout
    assert listed.stdout.rstrip().endswith(
        "1 waiting. `referee review show ID` for the evidence. 1 outdated (their code has "
        "changed since): `referee review list --all`."
    )

    every = invoke("review", "list", "--all", "--root", str(project), cwd=away)
    ids = {item.id[:8] for item in items.values()}
    rows = {
        row[0]: row[-1]
        for line in every.stdout.splitlines()
        if (row := line.split())[:1] and row[0] in ids
    }
    assert rows == {items["now"].id[:8]: "pending", items["before"].id[:8]: "outdated"}

    report = invoke("review", "--all", "--format", "json", "--root", str(project), cwd=away)
    statuses = {row["id"]: row["status"] for row in json.loads(report.stdout)}
    assert statuses == {items["now"].id: "pending", items["before"].id: "outdated"}
    # the group's options reach its commands too: --all and --format before `list`
    grouped = invoke(
        "review", "--all", "--format", "json", "list", "--root", str(project), cwd=away
    )
    assert {row["id"] for row in json.loads(grouped.stdout)} == set(statuses)
    shown = invoke("review", "--root", str(project), "show", items["before"].id[:8], cwd=away)
    assert shown.stdout.splitlines()[-1] == (
        "Status: outdated: the code it is about has changed since it was judged"
    )

    (project / "mathx.py").unlink()
    gone = invoke("review", "--root", str(project), cwd=away)
    assert gone.stdout.strip() == (
        "Nothing waits for review. 2 outdated (their code has changed since): "
        "`referee review list --all`."
    )


_WHAT_START_UP_LOADED = """
import sys
from referee.server.cli import main
try:
    main(["check", "--no-cache", sys.argv[1]])
except SystemExit:
    pass
print("\\n".join(sorted(sys.modules)))
"""


def test_a_check_loads_no_module_it_does_not_use(tmp_path: Path) -> None:
    """Start-up is most of a small run (pre-commit on one file, an empty directory): a
    check does not import the Markdown renderer, the model catalogue or the judge's
    progress display, nor build a validator for its default configuration."""
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    proc = subprocess.run(
        [sys.executable, "-c", _WHAT_START_UP_LOADED, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded = set(proc.stdout.split())
    assert "All checks passed!" in proc.stdout
    assert "referee.checks.engine" in loaded  # the probe sees the modules a check needs
    unused = {"rich.markdown", "markdown_it", "referee.checks.judge.models", "rich.progress"}
    assert loaded.isdisjoint(unused), sorted(loaded & unused)


def test_the_default_configuration_is_the_validated_one() -> None:
    """The defaults are built without validation (start-up); they must equal what
    validating an empty configuration gives."""
    from referee.checks.configuration import RefereeConfig, default_config

    built, validated = default_config(), RefereeConfig.model_validate({})
    assert built == validated
    assert built.model_dump() == validated.model_dump()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process names are Linux's")
@pytest.mark.parametrize(("args", "name"), [(["check", "-"], "referee"), (["mcp"], "referee-mcp")])
def test_a_referee_process_is_named_for_ps_top_and_accounting(
    project: Path, args: list[str], name: str
):
    """`python -m referee ...` shows as `referee` (the MCP server as `referee-mcp`), not as
    `python`, while it waits on its standard input."""
    process = subprocess.Popen(
        [sys.executable, "-m", "referee", *args],
        cwd=project,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        seen = ""
        for _ in range(200):  # the name is set once the command line is imported
            with open(f"/proc/{process.pid}/comm", encoding="utf-8") as comm:
                seen = comm.read().strip()
            if seen == name:
                break
            time.sleep(0.05)
        assert seen == name
    finally:
        process.kill()
        process.wait(timeout=30)
