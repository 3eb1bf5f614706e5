"""``referee check``: L0/L1 (and, when asked, L2) on files, directories or standard input."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click
from rich.markup import escape

from referee.checks import runner
from referee.checks.cache import default_cache_dir
from referee.checks.config import ConfigError, Settings, discover
from referee.checks.fixes import applicable
from referee.checks.models import CheckReport, Finding, Severity
from referee.server.cli_common import (
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    FORMATS,
    LEVELS,
    STDIN,
    codes,
    config_option,
    emit,
    err,
    fail,
    format_option,
    output_option,
    refuse_to_overwrite,
)


def _keep_new(results: list[runner.FileResult], start: Path, base: str) -> None:
    """Drop the findings that a change since ``base`` did not touch (``--new-only``): a
    finding is new when a line added or changed since then lies in it or, in Python, in
    the function it starts in (a body emptied under an unchanged ``def`` line)."""
    from referee.checks.guard import baseline

    try:
        root = baseline.toplevel(start.resolve())
        baseline.resolve(root, base)
        changed = baseline.new_lines(root, base)
    except baseline.GitError as exc:
        raise fail(f"--new-only: {exc}") from None
    for result in results:
        try:
            relpath = Path(result.display).resolve().relative_to(root).as_posix()
        except ValueError:
            continue  # outside the repository (standard input): every line is new
        if relpath not in changed:
            result.findings = []
            continue
        lines = changed[relpath]
        if lines is not None and result.findings:
            scopes = _function_lines(Path(result.display))
            result.findings = [
                f
                for f in result.findings
                if not lines.isdisjoint(
                    scopes.get(f.span.start.line, range(f.span.start.line, f.span.end.line + 1))
                )
            ]


def _function_lines(path: Path) -> dict[int, range]:
    """1-based line → the lines of the innermost function that starts on it, for a
    Python file (empty for anything else, or a file that cannot be read)."""
    from referee.checks.source import SourceFile, kind_of

    if kind_of(path.name) != "python":
        return {}
    try:
        source = SourceFile(str(path), path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return {}
    found: dict[int, range] = {}
    stack = [source.tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            first, last = node.start_point.row + 1, node.end_point.row + 1
            for row in range(first, (node.child_by_field_name("body") or node).start_point.row + 1):
                found[row] = range(first, last + 1)  # the def line(s): the whole function
        stack.extend(node.children)
    return found


@click.command()
@click.argument(
    "paths", nargs=-1, type=click.Path(exists=True, allow_dash=True), metavar="[PATHS]..."
)
@format_option(
    FORMATS,
    help="Output format: json is the documented schema (`referee schema`); sarif for code "
    "scanning; github prints GitHub Actions annotations. --format is the same option.",
)
@click.option(
    "--fix",
    is_flag=True,
    help="Apply the fixes the findings offer, in place (safe fixes only, unless "
    "--unsafe-fixes); then report what is left.",
)
@click.option(
    "--unsafe-fixes",
    is_flag=True,
    help="With --fix, also apply fixes that may change what the code does (every fix "
    "referee offers today: a test starts checking, and may fail). Without --fix, mark "
    "them [*].",
)
@click.option(
    "--select",
    multiple=True,
    metavar="CODES",
    help="Only these rules (codes or prefixes, comma-separated). Replaces `select`.",
)
@click.option(
    "--extend-select", multiple=True, metavar="CODES", help="Add rules to the configured selection."
)
@click.option("--ignore", multiple=True, metavar="CODES", help="Leave these rules out.")
@config_option
@click.option(
    "--stdin-filename",
    metavar="PATH",
    help="Check standard input as if it were the file PATH: PATH's kind (Python or "
    "text), configuration and rules apply. Implies `-`.",
)
@click.option(
    "--fail-on",
    type=click.Choice(LEVELS),
    default="error",
    show_default=True,
    help="Exit 1 when a finding of this severity or louder is reported.",
)
@click.option(
    "--min-severity",
    type=click.Choice(LEVELS),
    default="info",
    show_default=True,
    help="Report (and with --fix, fix) only findings at least this severe.",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings are reported.")
@click.option("--statistics", is_flag=True, help="Also print how many findings each rule made.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes to use (default: one per core).",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache.")
@click.option(
    "--judge",
    "use_judge",
    is_flag=True,
    help="Also run the L2 judge (local model) on what L0/L1 did not reject; see docs/judge.md.",
)
@click.option(
    "--judge-all",
    is_flag=True,
    help="Judge every function, not only those changed since --base (implies --judge).",
)
@click.option(
    "--base",
    default="HEAD",
    show_default=True,
    metavar="REF",
    help="With --judge: functions unchanged since this git ref are not judged again. "
    "With --new-only: the ref new lines are counted from.",
)
@click.option(
    "--new-only",
    is_flag=True,
    help="Report only findings that start on a line added or changed since --base "
    "(untracked files count as new): what a change, an agent's for one, brought in.",
)
@click.option(
    "--judge-model",
    metavar="MODEL",
    default=None,
    help="The judge's model for this run: a known id (`referee model list`), a GGUF path, or "
    "the server's model name (default: judge.model). Implies --judge.",
)
@click.option(
    "--execution/--no-execution",
    "use_execution",
    default=None,
    help="Run L2's execution checks: changed tests graded by mutants of their targets "
    "(REF410), changed functions run beside their docstring's oracles (REF411, REF412). "
    "With --judge they run by default (execution.enabled); --execution alone runs them "
    "without the reading judge.",
)
@output_option
def check(
    paths: tuple[str, ...],
    fmt: str,
    fix: bool,
    unsafe_fixes: bool,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    config_path: Path | None,
    stdin_filename: str | None,
    fail_on: str,
    min_severity: str,
    exit_zero: bool,
    statistics: bool,
    jobs: int | None,
    no_cache: bool,
    use_judge: bool,
    judge_all: bool,
    base: str,
    new_only: bool,
    judge_model: str | None,
    use_execution: bool | None,
    output_file: Path | None,
) -> None:
    """Run the L0 shape and L1 contract rules on PATHS: files, and directories with
    everything below them. Without PATHS: the current directory and everything below it,
    not the directories above (as ruff does). `-` is standard input.

    The configuration is the nearest referee.toml or [tool.referee] found from the first
    PATH (from the current directory without PATHS; from --stdin-filename's directory)
    upward; `referee config` shows which.

    With --fix, fixes are written into the files (atomically; a file that changed since
    it was read is left alone) and the findings left are reported. With --judge, the L2
    judge (a local model, docs/judge.md) then reads what L0/L1 did not reject; items it
    cannot settle wait in the review queue (`referee review`).

    \b
    Exit status: 0 nothing at --fail-on level, 1 findings, 2 usage or configuration error
    (with --judge: also when the judge could not run and nothing else found an error).
    Examples:
      referee check                         # the current directory and below
      referee check src tests --output-format sarif -o referee.sarif
      referee check --output-format github  # annotations in GitHub Actions
      referee check --select REF11 tests/   # only the assertion rules
      referee check --fix --unsafe-fixes tests/   # apply every fix referee offers
      cat notes.md | referee check --stdin-filename notes.md
      referee check --fix - < test_x.py     # the fixed text on stdout, findings on stderr
      referee check --new-only --base main  # only what the branch added or changed
      referee check --judge src/            # L0/L1, then the local judge on the residual
      referee check --judge-model qwen2.5-coder-0.5b src/   # the same with the fast model
      referee check --execution tests/     # grade changed tests by mutants, no model
    """
    files, start, settings = _check_settings(
        paths, stdin_filename, config_path, select, extend_select, ignore, judge_model
    )
    threshold = Severity(min_severity).rank

    def wanted(finding: Finding) -> bool:
        return finding.severity.rank <= threshold and applicable(finding.fix, unsafe_fixes)

    fixed_text: bytes | None = None
    stdin_texts: dict[str, bytes] | None = None
    if stdin_filename is not None or STDIN in paths:
        results, data, fixed_text = _check_stdin(settings, stdin_filename, fix, wanted)
        stdin_texts = {results[0].display: fixed_text or data}
    else:
        results = _check_files(files, settings, fix, wanted, jobs, no_cache, output_file)

    judge_failed = interrupted = False
    reading = use_judge or judge_all or judge_model is not None
    if reading or use_execution:
        judge_failed, interrupted = _judge(
            results, settings, judge_all, base, stdin_texts, use_execution, reading
        )

    for result in results:
        result.findings = [f for f in result.findings if f.severity.rank <= threshold]
    if new_only:
        _keep_new(results, start, base)
    report = _report(results, files, fixed_text, fmt, output_file, statistics, unsafe_fixes, fix)

    if interrupted:
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    failing = Severity(fail_on).rank
    if not exit_zero and any(f.severity.rank <= failing for f in report.findings):
        raise click.exceptions.Exit(EXIT_FINDINGS)
    if judge_failed:
        raise click.exceptions.Exit(EXIT_USAGE)


def _report(
    results: list[runner.FileResult],
    files: list[Path],
    fixed_text: bytes | None,
    fmt: str,
    output_file: Path | None,
    statistics: bool,
    unsafe_fixes: bool,
    fix: bool,
) -> CheckReport:
    """The report of the results, written; the fixed standard input on stdout first."""
    report = runner.report(results)
    for result in results:
        if result.unfixed:
            err.print(
                f"[yellow]referee: not fixed[/] {escape(result.display)}: {escape(result.unfixed)}",
                soft_wrap=True,
            )
    checked = [*files, *(r.display for r in results)]
    if fixed_text is not None:
        # As ruff does: the text (fixed, or as it came) on stdout, for an editor's filter;
        # the report on stderr, unless -o names a file for it.
        refuse_to_overwrite(output_file, checked)
        sys.stdout.buffer.write(fixed_text)
        sys.stdout.buffer.flush()
    emit(
        report,
        fmt,
        output_file,
        statistics,
        checked=checked,
        unsafe_fixes=unsafe_fixes,
        fixing=fix,
        to_stderr=fixed_text is not None,
    )
    return report


def _check_settings(
    paths: tuple[str, ...],
    stdin_filename: str | None,
    config_path: Path | None,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    judge_model: str | None,
) -> tuple[list[Path], Path, Settings]:
    """The files named, where the configuration is looked for from, and the settings
    (the command line's rules and judge model on top); a usage error says why not."""
    if stdin_filename is not None and not stdin_filename.strip():
        raise fail("--stdin-filename needs a file name: it says how to read stdin (x.py, notes.md)")
    use_stdin = stdin_filename is not None or STDIN in paths
    if STDIN in paths and len(paths) > 1:
        raise fail("`-` (standard input) cannot be checked together with other paths")
    if stdin_filename is not None and paths and paths != (STDIN,):
        raise fail("give either PATHS or --stdin-filename, not both")
    files = [] if use_stdin else [Path(p) for p in paths]
    start = Path(stdin_filename).parent if stdin_filename else (files[0] if files else Path("."))
    try:
        settings = discover(start, config_path).with_overrides(
            codes(select), codes(extend_select), codes(ignore)
        )
    except ConfigError as exc:
        raise fail(str(exc)) from None
    if judge_model is not None:
        if not judge_model.strip():
            raise fail("--judge-model needs a model: a known id, a GGUF path or a model name")
        settings = settings.with_sections(
            judge=settings.config.judge.model_copy(update={"model": judge_model})
        )
    return files, start, settings


def _check_stdin(
    settings: Settings,
    stdin_filename: str | None,
    fix: bool,
    wanted: Callable[[Finding], bool],
) -> tuple[list[runner.FileResult], bytes, bytes | None]:
    """Standard input checked (and fixed, with ``fix``): its result, the text read, and
    the text to write back (fixed, or as it came) when fixing."""
    data = sys.stdin.buffer.read()
    if stdin_filename is not None:
        target = runner.Target(
            Path(stdin_filename), stdin_filename, settings.relative(Path(stdin_filename))
        )
    else:  # unnamed, as in ruff: Python, and no test file (name it to make it one)
        target = runner.Target(Path(STDIN), STDIN, STDIN, kind="python")
    if not fix:
        return [runner.check_bytes(data, target, settings)], data, None
    outcome = runner.fix_bytes(data, target, settings, wanted)
    fixed_text = data if outcome.text is None else outcome.text.encode(outcome.encoding)
    return [outcome.result], data, fixed_text


def _check_files(
    files: list[Path],
    settings: Settings,
    fix: bool,
    wanted: Callable[[Finding], bool],
    jobs: int | None,
    no_cache: bool,
    output_file: Path | None,
) -> list[runner.FileResult]:
    """The files and directories named (the current directory without any) checked, and
    with ``fix`` the files with a wanted fix fixed."""
    targets = runner.collect(files or [Path(".")], settings)
    cache = None
    if settings.config.cache and not no_cache:
        cache = runner.ResultCache(default_cache_dir(), settings)
    results = runner.run(targets, settings, jobs=jobs, cache=cache)
    if fix:
        # Before any file is written: a refused -o must leave everything as it was.
        refuse_to_overwrite(output_file, [*files, *(t.display for t in targets)])
        for index, (target, result) in enumerate(zip(targets, results, strict=True)):
            if any(wanted(f) for f in result.findings):
                results[index] = runner.fix_file(target, settings, wanted)
    return results


def _judge(
    results: list[runner.FileResult],
    settings: Settings,
    judge_all: bool,
    base: str,
    stdin_texts: dict[str, bytes] | None,
    execution: bool | None,
    reading: bool,
) -> tuple[bool, bool]:
    """L2 on the results, in place: (whether the judge failed, whether it was interrupted)."""
    from referee.server.cli_judge import judge_results

    try:
        failed = not judge_results(
            results,
            settings,
            judge_all=judge_all,
            base=base,
            texts=stdin_texts,
            execution=execution,
            reading=reading,
        )
    except KeyboardInterrupt:
        # Whatever happens to the judge, L0/L1's findings (and the judge's so far) are
        # reported: they cost seconds to find and the user asked for them.
        err.print("referee: judge interrupted; the findings so far are reported")
        return False, True
    return failed, False
