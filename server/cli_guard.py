"""``referee guard``: what a change since a base did to the tests, checked against the
configuration as it was at that base."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from referee.checks import runner
from referee.checks.config import ConfigError, Settings, discover
from referee.checks.engine import check_source, unhonoured_waivers
from referee.checks.models import Severity
from referee.server.cli_common import (
    EXIT_FINDINGS,
    FORMATS,
    config_option,
    emit,
    err,
    fail,
    format_option,
    output_option,
)


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--base",
    default="HEAD",
    show_default=True,
    metavar="REF",
    help="Compare with this git ref (e.g. the merge base of a pull request).",
)
@format_option(
    FORMATS,
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
@config_option
@output_option
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

    settings, plan = _guard_plan(paths, base, strict, config_path)
    wanted = [p.resolve() for p in paths]
    for named, resolved in zip(paths, wanted, strict=True):
        if not resolved.exists() and not any(
            d == resolved or resolved in d.parents for d in plan.deleted
        ):
            raise fail(f"{named}: no such file or directory")
    results = _compare(plan, settings, wanted, base)
    agent = strict or settings.config.guard.mode == "agent"
    if execute is None:
        choice = settings.config.guard.execute
        execute = choice == "always" or (choice == "agent" and agent)
    if execute:
        _execute(plan, settings, wanted, agent, results)
    for problem in plan.ledger_problems:
        err.print(f"[yellow]referee: certificates:[/] {escape(problem)}", soft_wrap=True)
    emit(
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
        raise fail(
            f"{len(unread)} changed file(s) could not be compared with {base}, so the guard "
            f"cannot pass: {', '.join(unread)}"
        )


def _guard_plan(
    paths: tuple[Path, ...], base: str, strict: bool, config_path: Path | None
) -> tuple[Settings, Any]:
    """The settings the guard runs with and its plan: what changed since ``base``."""
    from referee.checks.guard import baseline, run

    start = paths[0] if paths else Path(".")
    try:
        settings = discover(start, config_path)
        if settings.path is None:
            # No configuration file: the repository is the project, wherever PATH points,
            # so test ids and the ledger are the ones CI sees.
            settings = Settings(settings.config, baseline.toplevel(start.resolve()), None)
        elif config_path is None:
            settings = configuration_at_base(settings, base)
        plan = run.plan(settings, base, start, mode="agent" if strict else None)
        if plan.settings is not None:
            settings = plan.settings  # pytest's own test-file patterns added
    except ConfigError as exc:
        raise fail(str(exc)) from None
    except baseline.GitError as exc:
        raise fail(f"guard needs a git repository and a valid --base: {exc}") from None
    return settings, plan


def _compare(
    plan: Any, settings: Settings, wanted: list[Path], base: str
) -> list[runner.FileResult]:
    """Each changed file (of those named) compared with its version at ``base``; a
    waiver the change added to itself is named on stderr."""
    from referee.checks.guard import run
    from referee.checks.registry import GUARD_CODES

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
    return results


def _execute(
    plan: Any, settings: Settings, wanted: list[Path], agent: bool, results: list[runner.FileResult]
) -> None:
    """The guard's execution checks (the changed tests run), their findings added to
    ``results`` in place."""
    from referee.checks.guard import run
    from referee.checks.progress import IDLE, Work

    by_path = {r.display: r for r in results}

    def progress(text: str) -> None:  # the runs take seconds each: say what runs
        err.print(f"[dim]referee: guard: {escape(text)}[/]", soft_wrap=True)

    work = Work(progress=progress) if err.is_terminal else IDLE
    found, notes = run.execution(plan, settings, strict=agent, work=work)
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


def configuration_at_base(settings: Settings, base: str) -> Settings:
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
