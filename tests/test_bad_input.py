"""Files referee cannot read or parse never stop a run: each becomes a skip note with a
reason (or one finding), the other files are still checked, and nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from referee.checks import runner
from referee.checks.config import discover

# A module with exactly one finding, so every test can tell that the run went on.
NEIGHBOUR = "def helper() -> int:\n    pass\n"
NEIGHBOUR_LINE = "ok.py:1:5: REF101 function `helper` is a placeholder: its body is only `pass`"


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` with its bytes and modification time."""
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def checked(project: Path, invoke):
    """Run ``referee check .`` on ``project`` (holding ok.py plus whatever the test wrote),
    asserting that no file was modified, and return the CLI result."""

    def run(*extra: str):
        (project / "ok.py").write_text(NEIGHBOUR, encoding="utf-8")
        before = snapshot(project)
        result = invoke("check", "--no-cache", *extra, ".", cwd=project)
        assert snapshot(project) == before, "checking must never write to the checked files"
        assert NEIGHBOUR_LINE in result.stdout.splitlines(), "the run stopped early"
        return result

    return run


def skip_notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("referee: skipped ")]


def test_binary_file_is_skipped_with_a_note(checked, project: Path):
    (project / "blob.py").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)))
    result = checked()
    assert skip_notes(result.stderr) == [
        "referee: skipped blob.py: binary file (contains NUL bytes)"
    ]


def test_file_over_max_file_size_is_skipped_with_a_note(checked, project: Path):
    line = b"VALUE = 'x'  # filler line for size\n"
    (project / "huge.py").write_bytes(line * (10_485_760 // len(line) + 1))
    size = (project / "huge.py").stat().st_size
    assert size > 10_000_000
    result = checked()
    assert skip_notes(result.stderr) == [
        f"referee: skipped huge.py: larger than max-file-size ({size:,} > 2,000,000 bytes)"
    ]


def test_a_huge_file_is_skipped_without_being_read_into_memory(project: Path):
    """A 4 GiB file (sparse: it costs no disk) under a 1 GiB address-space limit: reading it
    would fail with MemoryError; its size is known before reading."""
    import resource
    import subprocess
    import sys

    (project / "ok.py").write_text(NEIGHBOUR, encoding="utf-8")
    with (project / "dump.py").open("wb") as handle:
        handle.truncate(4 * 2**30)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    run = subprocess.run(
        [sys.executable, "-m", "referee", "check", "--no-cache", "."],
        cwd=project,
        capture_output=True,
        text=True,
        preexec_fn=limit,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    assert NEIGHBOUR_LINE in run.stdout.splitlines()
    assert skip_notes(run.stderr) == [
        f"referee: skipped dump.py: larger than max-file-size ({4 * 2**30:,} > 2,000,000 bytes)"
    ]


def test_a_fifo_found_in_a_directory_is_skipped_not_waited_on(checked, project: Path):
    import os

    os.mkfifo(project / "pipe_test.py")  # nothing ever writes to it: reading would block
    result = checked()
    assert skip_notes(result.stderr) == [
        "referee: skipped pipe_test.py: not a regular file (a FIFO, socket or device)"
    ]


def test_a_pipe_named_on_the_command_line_is_read(invoke, project: Path):
    """`referee check <(git show HEAD:x.py)` names a pipe: the user asked for it."""
    import os
    import threading

    os.mkfifo(project / "given.py")

    def write() -> None:
        with (project / "given.py").open("w") as pipe:
            pipe.write("def helper() -> int:\n    pass\n")

    writer = threading.Thread(target=write)
    writer.start()
    result = invoke("check", "--no-cache", "given.py", cwd=project)
    writer.join(timeout=10)
    assert "given.py:1:5: REF101 function `helper` is a placeholder" in result.stdout


def test_max_file_size_is_configurable(checked, project: Path):
    (project / "referee.toml").write_text("max-file-size = 40\n", encoding="utf-8")
    (project / "big.py").write_text("X = 1\n" * 10, encoding="utf-8")
    result = checked()
    assert skip_notes(result.stderr) == [
        "referee: skipped big.py: larger than max-file-size (60 > 40 bytes)"
    ]


def test_invalid_utf8_markdown_is_skipped_with_a_note(checked, project: Path):
    (project / "referee.toml").write_text('extend-include = ["*.md"]\n', encoding="utf-8")
    (project / "notes.md").write_bytes(b"# Notes\n\ncaf\xe9 au lait\n")
    result = checked()
    assert skip_notes(result.stderr) == [
        "referee: skipped notes.md: not valid utf-8: byte 0xe9 at offset 12"
    ]


@pytest.mark.parametrize(
    ("data", "offset"),
    [
        (b"NAME = 'caf\xe9'\n", 11),  # on the first line, where a coding cookie could be
        (b"X = 1\nY = 2\nNAME = 'caf\xe9'\n", 23),  # past the lines a cookie may be on
    ],
    ids=["first-line", "third-line"],
)
def test_invalid_utf8_python_without_coding_cookie_is_skipped(
    checked, project: Path, data: bytes, offset: int
):
    (project / "legacy.py").write_bytes(data)
    result = checked()
    assert skip_notes(result.stderr) == [
        f"referee: skipped legacy.py: not valid utf-8: byte 0xe9 at offset {offset}"
    ]


def test_latin1_python_with_coding_cookie_is_checked(checked, project: Path):
    source = "# -*- coding: latin-1 -*-\ndef café() -> str:\n    pass  # TODO: é\n"
    (project / "latin.py").write_bytes(source.encode("latin-1"))
    result = checked()
    assert skip_notes(result.stderr) == []
    lines = result.stdout.splitlines()
    # Columns count characters, not bytes: the marker comment starts at column 11.
    assert (
        "latin.py:2:5: REF101 function `café` is a placeholder: its body is only `pass` "
        "with a TODO marker" in lines
    )
    assert "latin.py:3:11: REF102 TODO marker: # TODO: é" in lines


def test_unknown_coding_cookie_is_skipped_with_a_note(checked, project: Path):
    (project / "klingon.py").write_bytes(b"# -*- coding: klingon -*-\nX = 1\n")
    result = checked()
    (note,) = skip_notes(result.stderr)
    assert note.startswith("referee: skipped klingon.py: bad coding declaration: ")
    assert "klingon" in note.removeprefix("referee: skipped klingon.py: ")


def test_utf8_bom_python_is_checked(checked, project: Path):
    (project / "bom.py").write_bytes(b"\xef\xbb\xbfX = 1  # TODO: drop the BOM\n")
    result = checked()
    assert skip_notes(result.stderr) == []
    assert "bom.py:1:8: REF102 TODO marker: # TODO: drop the BOM" in result.stdout.splitlines()


def test_syntax_error_is_one_finding_with_cpythons_message(checked, project: Path):
    source = "def total(items)\n    return sum(items)\n\n\ndef later() -> int:\n    pass\n"
    (project / "broken.py").write_text(source, encoding="utf-8")
    try:
        compile(source, "broken.py", "exec")
    except SyntaxError as exc:
        cpython = exc
    else:  # pragma: no cover - the source above never compiles
        pytest.fail("the fixture source compiled")
    result = checked()
    lines = result.stdout.splitlines()
    assert (
        f"broken.py:{cpython.lineno}:{cpython.offset}: REF001 syntax error: {cpython.msg}" in lines
    )
    assert [line for line in lines if "REF001" in line] == [lines[0]]
    # The other rules still run on the part of the file that parses.
    assert (
        "broken.py:5:5: REF101 function `later` is a placeholder: its body is only `pass`" in lines
    )
    assert result.exit_code == 1


def test_syntax_error_finding_carries_the_offending_line_as_evidence(project: Path):
    (project / "broken.py").write_text("VALUES = [1, 2\n", encoding="utf-8")
    settings = discover(project)
    (result,) = runner.run(runner.collect([project / "broken.py"], settings), settings, jobs=1)
    (finding,) = [f for f in result.findings if f.code == "REF001"]
    assert finding.message == "syntax error: '[' was never closed"
    assert finding.evidence == "VALUES = [1, 2"
    assert (finding.span.start.line, finding.span.start.column) == (1, 10)


def test_too_deeply_nested_parentheses_are_a_syntax_error(checked, project: Path):
    depth = 3000
    (project / "nested.py").write_text(
        "X = " + "(" * depth + "1" + ")" * (depth - 1) + "\n", encoding="utf-8"
    )
    result = checked()
    nested = [line for line in result.stdout.splitlines() if line.startswith("nested.py:")]
    assert len(nested) == 1
    assert " REF001 syntax error: too many nested parentheses" in nested[0]


@pytest.mark.parametrize(
    "source",
    [
        "def test_x():\n    assert " + "not " * 5000 + "True\n",
        "def test_x(a):\n    assert a" + ".b" * 5000 + " == a" + ".b" * 5000 + "\n",
    ],
    ids=["not-chain", "attribute-chain"],
)
def test_code_nested_past_the_recursion_limit_is_skipped_with_a_note(
    checked, project: Path, source: str
):
    (project / "test_deep.py").write_text(source, encoding="utf-8")
    result = checked()
    assert skip_notes(result.stderr) == [
        "referee: skipped test_deep.py: nested too deeply to analyse"
    ]
    assert "test_deep.py:" not in result.stdout


def test_deep_but_valid_nesting_is_checked(checked, project: Path):
    # 90 levels: deep, but under CPython's limit of 100 indentation levels.
    ladder = "".join("    " * i + "if x:\n" for i in range(90))
    inner = "    " * 90
    source = f"def test_deep(x):\n{ladder.replace('if', '    if')}{inner}    assert True\n"
    (project / "test_deep.py").write_text(source, encoding="utf-8")
    compile(source, "test_deep.py", "exec")
    result = checked()
    assert skip_notes(result.stderr) == []
    deep = [line for line in result.stdout.splitlines() if line.startswith("test_deep.py:")]
    row = source.splitlines().index(f"{inner}    assert True") + 1
    column = len(inner) + 4 + 1
    assert deep == [
        f"test_deep.py:{row}:{column}: REF111 `True` is always true: the assertion cannot fail"
    ]


def test_a_huge_expression_is_quoted_in_the_message_cut_to_one_short_line(
    checked, invoke, project: Path
):
    # A string literal in 10,000 pieces over 10,000 lines compared with itself: the
    # message quotes its start on one line, cut with an ellipsis; the evidence keeps it all.
    operand = "(" + "\n        ".join(['"ab"'] * 10_000) + ")"
    source = f"def test_huge():\n    assert {operand} == {operand}\n"
    (project / "test_huge.py").write_text(source, encoding="utf-8")
    result = checked()
    huge = [line for line in result.stdout.splitlines() if line.startswith("test_huge.py:")]
    assert len(huge) == 1
    assert ' REF111 `assert ("ab" "ab" "ab" ' in huge[0]
    assert "…` compares a literal with itself: the assertion cannot fail" in huge[0]
    assert len(huge[0]) < 200
    report = invoke("check", "--no-cache", "--format", "json", "test_huge.py", cwd=project)
    (finding,) = [f for f in json.loads(report.stdout)["findings"] if f["path"] == "test_huge.py"]
    assert len(finding["message"]) < 160
    assert finding["evidence"].count("ab") == 20_000


def test_empty_directory_checks_nothing_and_exits_0(invoke, project: Path):
    (project / "empty").mkdir()
    result = invoke("check", "empty", cwd=project)
    assert result.exit_code == 0
    assert result.stdout == "All checks passed! (0 files)\n"
    assert result.stderr == ""


def test_nonexistent_path_exits_2_and_names_it(invoke, project: Path):
    (project / "ok.py").write_text(NEIGHBOUR, encoding="utf-8")
    result = invoke("check", "ok.py", "missing.py", cwd=project)
    assert result.exit_code == 2
    assert "missing.py" in result.stderr
    assert "does not exist" in result.stderr
    assert result.stdout == ""


def test_file_that_vanishes_before_reading_is_skipped(project: Path):
    settings = discover(project)
    (project / "ok.py").write_text(NEIGHBOUR, encoding="utf-8")
    gone = runner.Target(project / "gone.py", "gone.py", "gone.py")
    targets = [gone, *runner.collect([project / "ok.py"], settings)]
    results = runner.run(targets, settings, jobs=1)
    assert results[0].skipped == "no such file"
    assert [f.code for f in results[1].findings] == ["REF101"]
    report = runner.report(results)
    assert report.summary.files_checked == 1
    assert report.summary.files_skipped == 1


def test_skipped_files_appear_in_json_but_not_as_findings(invoke, project: Path):
    from referee.checks.models import CheckReport

    (project / "ok.py").write_text(NEIGHBOUR, encoding="utf-8")
    (project / "blob.py").write_bytes(b"\x00" * 16)
    result = invoke("check", "--format", "json", ".", cwd=project)
    report = CheckReport.model_validate_json(result.stdout)
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("blob.py", "binary file (contains NUL bytes)")
    ]
    assert [f.path for f in report.findings] == ["ok.py"]
    assert (report.summary.files_checked, report.summary.files_skipped) == (1, 1)
