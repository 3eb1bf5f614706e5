"""The `referee` command's entry point. `referee hook` runs before every edit an agent
makes, so it starts without the command line's imports (click, rich, the engine): an
edit of a file that is not Python is answered in the time Python takes to start."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "hook":
        from referee.server.hook import main as hook

        sys.exit(hook(sys.argv[2:]))
    from referee.checks.process import name_process
    from referee.server.cli import main as cli

    name_process("referee")  # in ps, top and process accounting, not `python`
    cli()
