"""``referee init``, ``referee mcp``, ``referee hook``: referee where agents work."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from referee.server.cli_common import (
    fail,
)


def _project_root_option(text: str) -> Callable[[Callable[..., object]], Callable[..., object]]:
    return click.option(
        "--root",
        type=click.Path(file_okay=False, exists=True, path_type=Path),
        default=".",
        show_default=True,
        help=text,
    )


@click.command("init")
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
        raise fail(str(exc)) from None


@click.command("mcp")
@_project_root_option("The project the tools work in.")
def mcp_command(root: Path) -> None:
    """Serve referee's checks to agents as a stdio MCP server: check, guard, check_edit,
    arbitrate, explain_rule, review_queue. Set up with `referee init --agent`; see
    docs/agents.md."""
    try:
        from referee.server.mcp_server import serve
    except ImportError as exc:  # pragma: no cover - mcp is a dependency
        raise fail(f"referee mcp needs the mcp package (pip install 'mcp>=2,<3'): {exc}") from None
    from referee.checks.process import name_process

    name_process("referee-mcp")
    serve(root)


@click.command(
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


def agents_report() -> None:
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
