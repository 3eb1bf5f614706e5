"""``referee arbitrate``: a failing test, and whether the test or the code is wrong."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from referee.checks.cache import default_cache_dir
from referee.checks.config import ConfigError, Settings, discover
from referee.checks.models import ArbitrationVerdict
from referee.server import output
from referee.server.cli_common import (
    EXIT_USAGE,
    config_option,
    err,
    fail,
)

# ------------------------------------------------------------------- referee arbitrate

EXIT_UNCLEAR = 3


@click.command()
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
@config_option
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
    .venv/, venv/ or another environment in the root, $CONDA_PREFIX), isolates the call
    under test, computes the expected value from sources that saw neither the function's
    body nor the test (a doctest, a declared reference, k oracle programs the local model
    writes from the signature and the docstring — or, without one, the suite's committed,
    passing assertions), then:
    TEST_WRONG offers the certified value as the test's new expected value, with a
    certificate; SOURCE_WRONG offers a patch that passes the whole test module; UNCLEAR
    goes to the review queue. See docs/arbitration.md.

    \b
    Exit status: 0 a verdict (TEST_WRONG or SOURCE_WRONG), 3 UNCLEAR, 2 usage error.
    Examples:
      referee arbitrate tests/test_text.py::test_vowels
      referee arbitrate 'tests/test_text.py::test_cases[aeiou-4]' --apply
    """
    with _no_verdict_exits(test_id, fmt):
        test_file, rest = _test_of(test_id)
        settings = _settings(test_file, config_path, oracles, model_name)
        node_id = f"{settings.relative(test_file)}::{rest}"
        verdict = _verdict(node_id, settings, apply_fix, no_queue)
    if fmt == "json":
        click.echo(verdict.model_dump_json(indent=2))
    else:
        output.arbitration_text(verdict, Console(highlight=False, soft_wrap=True), apply_fix)
    if verdict.verdict == "UNCLEAR":
        raise click.exceptions.Exit(EXIT_UNCLEAR)


def _test_of(test_id: str) -> tuple[Path, str]:
    """NODEID's test file, and what follows its ``::``."""
    path_part, sep, rest = test_id.partition("::")
    if not sep or not rest:
        raise _NoVerdict(f"{test_id!r} is not a pytest node id like tests/test_x.py::test_name")
    test_file = Path(path_part)
    if not test_file.is_file():
        raise _NoVerdict(f"{path_part}: no such file")
    return test_file, rest


def _settings(
    test_file: Path, config_path: Path | None, oracles: int | None, model_name: str | None
) -> Settings:
    """The test file's project settings, with ``--oracles`` and ``--model`` on top."""
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
    return settings


def _verdict(
    node_id: str, settings: Settings, apply_fix: bool, no_queue: bool
) -> ArbitrationVerdict:
    """Arbitrate the test ``node_id`` (and with ``--apply``, write the fix)."""
    from referee.checks.arbitration import engine
    from referee.checks.atomic import StaleFileError
    from referee.checks.progress import Work

    model = engine.LazyModel.from_settings(settings.config.arbitration, settings.config.judge)
    try:
        with _status() as report:
            result = engine.arbitrate(
                node_id,
                settings,
                backend=lambda: model,
                work=Work(progress=report),
                queue=not no_queue,
                cache_dir=default_cache_dir() / "arbitration",
            )
            if apply_fix and result.verdict.fix is not None:
                report(f"writing {result.verdict.fix.path}")
                result = engine.apply(result)
    except (engine.ArbitrationError, ConfigError) as exc:  # a bad `python`, say
        raise _NoVerdict(str(exc)) from None
    except StaleFileError as exc:
        raise _NoVerdict(str(exc)) from None
    return result.verdict


class _NoVerdict(Exception):
    """``referee arbitrate`` reached no verdict (exit status 2); the message says why."""


@contextmanager
def _no_verdict_exits(test_id: str, fmt: str):
    """No verdict: the reason on stderr and exit status 2 — and, with ``--format json``, a
    machine reading it gets JSON on this exit path too."""
    try:
        yield
    except _NoVerdict as exc:
        if fmt == "json":
            from referee import __version__
            from referee.checks.models import ArbitrationFailure

            failure = ArbitrationFailure(
                version=__version__, test_id=test_id, error=str(exc), exit_status=EXIT_USAGE
            )
            click.echo(failure.model_dump_json(indent=2))
        raise fail(str(exc)) from None


@contextmanager
def _status():
    """A spinner on stderr with the step under way; plain lines where stderr is no
    terminal. Yields the callback the engine reports its steps to."""
    if not err.is_terminal:
        yield lambda message: err.print(f"referee: {escape(message)}", soft_wrap=True)
        return
    with err.status("") as status:
        yield lambda message: status.update(escape(message))
