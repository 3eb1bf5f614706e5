#!/usr/bin/env python3
"""The floor of a cold check that parses with tree-sitter: every ``.py`` file under PATH
parsed, and referee's capture query run on its tree, on every core, and nothing else
(no rule, no project index, no output).

    python bench/_parse_floor.py PATH

``bench/check_speed.py`` times it beside referee and ruff: what referee's cold check
could take if all of its own Python work cost nothing. It prints the number of files
and captures, so that a run that read nothing does not pass for a fast one.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor

import _tools  # bench/_tools.py: the scripts run from bench/
from tree_sitter import QueryCursor

from referee.checks.pymodule import _query
from referee.checks.source import python_parser


def parse_and_query(paths: list[str]) -> int:
    parser, query = python_parser(), _query()
    captured = 0
    for path in paths:
        with open(path, "rb") as handle:
            tree = parser.parse(handle.read())
        captured += sum(
            len(nodes) for nodes in QueryCursor(query).captures(tree.root_node).values()
        )
    return captured


def main() -> int:
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: python bench/_parse_floor.py DIRECTORY", file=sys.stderr)
        return 2
    paths = _tools.python_files(sys.argv[1])
    jobs = max(1, os.cpu_count() or 1)
    chunks = [paths[i :: jobs * 4] for i in range(jobs * 4)]  # as referee's pool shares work
    context = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    with ProcessPoolExecutor(jobs, context) as pool:
        captured = sum(pool.map(parse_and_query, chunks))
    print(f"{len(paths)} files, {captured} captures, {jobs} processes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
