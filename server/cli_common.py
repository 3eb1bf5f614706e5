"""What the commands of the ``referee`` command line share: exit statuses, the error
message, the options spelled the same everywhere, and how a report is written."""

from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Iterable
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from referee.checks.atomic import write_text_atomic
from referee.checks.models import CheckReport, Severity
from referee.server import output

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
LEVELS = [s.value for s in Severity]

err = Console(stderr=True, highlight=False)

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Use this referee.toml / pyproject.toml instead of searching for one.",
)
output_option = click.option(
    "-o",
    "--output-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report here instead of to stdout.",
)


def fail(message: str) -> click.exceptions.Exit:
    # Escaped: keys such as "[tool.referee].select" are not markup. Never wrapped: the
    # message is read by people and by tools grepping CI logs.
    err.print(f"[bold red]referee: error:[/] {escape(message)}", soft_wrap=True)
    return click.exceptions.Exit(EXIT_USAGE)


def codes(values: tuple[str, ...]) -> list[str]:
    """``--select REF1,REF2 --select REF3`` → ["REF1", "REF2", "REF3"]."""
    return [c.strip() for value in values for c in value.split(",") if c.strip()]


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


FORMATS = ["text", "json", "sarif", "github"]


def format_option(choices: list[str], help: str | None = None):
    """``--output-format`` as ruff spells it; ``--format``, referee's first spelling, is the
    same option."""
    return click.option(
        "--output-format",
        "--format",
        "fmt",
        type=click.Choice(choices),
        default="text",
        show_default=True,
        help=help,
    )


STDIN = "-"


def write_report(path: Path, text: str) -> None:
    """A regular file (or a new one) is replaced atomically; anything else the user named —
    ``/dev/stdout``, ``/dev/null``, a FIFO a reader waits on — is written to as it is,
    never replaced by a regular file."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    if mode is None or stat.S_ISREG(mode):
        write_text_atomic(path, text)
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def refuse_to_overwrite(output_file: Path | None, checked: Iterable[str | Path]) -> None:
    if output_file is not None:
        target = os.path.realpath(output_file)
        if any(os.path.realpath(path) == target for path in checked):
            raise fail(f"-o {output_file} is one of the files being checked; not overwriting it")


def emit(
    report: CheckReport,
    fmt: str,
    output_file: Path | None,
    statistics: bool,
    checked: Iterable[str | Path] = (),
    *,
    unsafe_fixes: bool = False,
    fixing: bool = False,
    to_stderr: bool = False,
) -> None:
    """Print a report in ``fmt`` to stdout (``to_stderr``: stderr) or ``output_file``, skip
    notes to stderr."""
    # A report file is written whole or not at all (write_text_atomic), never half.
    refuse_to_overwrite(output_file, checked)
    stream = io.StringIO() if output_file else None
    console = (
        Console(file=stream, highlight=False, soft_wrap=True)
        if stream
        else Console(highlight=False, soft_wrap=True, stderr=to_stderr)
    )
    if fmt == "json":
        console.out(output.as_json(report), highlight=False)
    elif fmt == "sarif":
        console.out(output.sarif(report), highlight=False)
    elif fmt == "github":
        annotations = output.github(report)
        if annotations:
            console.out(annotations, highlight=False)
    else:
        output.text(report, console, statistics, unsafe_fixes=unsafe_fixes, fixing=fixing)
    for skipped in report.skipped:
        err.print(
            f"[yellow]referee: skipped[/] {escape(skipped.path)}: {escape(skipped.reason)}",
            soft_wrap=True,
        )
    if output_file and stream:
        try:
            write_report(output_file, stream.getvalue())
        except OSError as exc:
            raise fail(f"cannot write {output_file}: {exc.strerror or exc}") from None
