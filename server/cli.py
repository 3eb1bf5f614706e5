"""The ``referee`` command line: a thin adapter from arguments to engine calls."""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console
from rich.markup import escape

from referee import __version__
from referee.checks.config import ConfigError, Settings, discover
from referee.checks.models import json_schema
from referee.checks.rule import Rule
from referee.server.cli_common import (
    EXIT_INTERRUPTED,
    err,
    fail,
    format_option,
)

# The commands of their own modules, imported when named (click's lazy subcommands): each
# pulls in its part of the engine, and `referee arbitrate` (a hook's, a test's, an
# agent's one call) need not import the checks', the guard's and the judge's as well.
LAZY = {
    "arbitrate": "referee.server.cli_arbitrate:arbitrate",
    "check": "referee.server.cli_check:check",
    "doctor": "referee.server.cli_model:doctor",
    "guard": "referee.server.cli_guard:guard",
    "hook": "referee.server.cli_agents:hook",
    "init": "referee.server.cli_agents:init_command",
    "judge": "referee.server.cli_judge:judge_group",
    "mcp": "referee.server.cli_agents:mcp_command",
    "model": "referee.server.cli_model:model",
    "review": "referee.server.cli_judge:review_group",
}


class _Referee(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = LAZY.get(cmd_name)
        if where is None or cmd_name in self.commands:
            return super().get_command(ctx, cmd_name)
        module, _, name = where.partition(":")
        command = getattr(importlib.import_module(module), name)
        self.add_command(command, cmd_name)
        return command

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


@main.command()
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Print every rule's page.")
@format_option(
    ["text", "json"], help="json: the rules as data, for tools. --format is the same option."
)
def rule(code: str | None, show_all: bool, fmt: str) -> None:
    """Explain a rule by code or name (`referee rule REF101`), or list every rule."""
    from referee.checks.registry import RULES, lookup

    if code is None and not show_all:
        if fmt == "json":
            click.echo(json.dumps([_rule_json(r) for r in RULES], indent=2))
            return
        _rule_table(Console())
        return
    chosen = list(RULES) if show_all else [lookup(code or "")]
    if chosen == [None]:
        raise fail(f"no rule {code!r}; `referee rule` lists them")
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
    from referee.checks.registry import RULES

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
        raise fail(str(exc)) from None
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
            raise fail("--ws needs the websockets package: pip install websockets") from None
    from referee.checks.process import name_process
    from referee.server.lsp import serve as start

    name_process("referee-lsp")
    leave(start(transport, host, port, log_level))


def leave(code: int) -> NoReturn:
    """End the process once the session is over, without the interpreter's teardown of
    every module: for the language server, ~1,000 protocol classes, a quarter of a second
    of CPU after the editor has said goodbye (each editor restart, each test's server).
    What a normal exit does first is done here too: the threads still working are waited
    for, the exit handlers run (the model's process is closed, the logs flushed)."""
    # Python's own first step of an exit: executors are told to stop, then every
    # non-daemon thread is joined.
    finish_threads = getattr(threading, "_shutdown", None)
    if finish_threads is not None:
        finish_threads()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
