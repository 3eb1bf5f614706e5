#!/usr/bin/env python3
"""Language-server latency: didChange → publishDiagnostics, referee against pylsp and ruff.

Not a test: a script whose table goes into docs/benchmarks.md.

    python bench/lsp_latency.py --pylsp /tmp/bench-pylsp/bin/pylsp   # 200 edits per server
    python bench/lsp_latency.py --samples 50                          # quicker
    python bench/lsp_latency.py --servers referee                     # one server alone
    python bench/lsp_latency.py --servers referee --git               # with the guard live

Each server is found as given (--referee, --pylsp, --ruff PATH), else next to this
interpreter, else on PATH; a missing one is reported with its install command and the
others are still measured. pylsp belongs in its own environment (its pyflakes pin
conflicts with flake8's):

    python3 -m venv /tmp/bench-pylsp
    /tmp/bench-pylsp/bin/pip install 'python-lsp-server[pyflakes]'

What it does:

* writes a generated pytest module of about 2,000 lines (150 tests, fixtures, helpers, a
  handful of placeholders, unfailable assertions and unused names, so that every server
  has something to report) into a temporary workspace, as ``tests/test_inventory.py``;
* starts each server over stdio with a minimal JSON-RPC client (``_lsp_client.py``),
  advertising push diagnostics only (no ``textDocument.diagnostic`` capability, so every
  server publishes):

  - referee   ``referee serve`` with initializationOptions ``{"debounceMs": 0, "run": "onType"}``
  - pylsp     ``pylsp`` (python-lsp-server) with every plugin disabled but pyflakes, in
              initializationOptions and again in workspace/didChangeConfiguration
  - ruff      ``ruff server`` with its default settings;

* opens the file in every server and waits for its first diagnostics;
* sends one probe edit that must add a diagnostic in every server (``assert total == 6``
  becomes ``assert 6 == 6``: a constant assertion for referee, an unused local for
  pyflakes and ruff) and its undo, to show that each server re-checks on didChange;
* then, round by round, sends every server the same small incremental edit (one 5-digit
  literal in a different test each time, spread over the file; every edit changes the
  text) and times it from writing didChange to reading the publishDiagnostics for that
  version (or, from a server that sends no version, the first publish after the change).
  The first ``--warmup`` rounds are not counted. The servers take turns within a round,
  in a rotating order, so a noisy neighbour slows each of them alike. Each server
  therefore gets its edit after sitting idle while the others worked (about 0.7 s with
  pylsp in the run), as between bursts of typing; a server measured alone
  (``--servers referee``) gets its edits back to back, with warm caches, and is faster.

With ``--git`` the workspace is a git repository with the file committed before any
server starts (every server gets the same workspace): referee's guard (REF3xx) then
compares every edit with the committed file, as in a real project. Without it there is
no baseline and the guard is off.

referee checks an open document incrementally (``Incremental`` in checks/engine.py): an
edit inside one test re-runs the rules on that test alone, so the timed edits measure that
path. A whole-file check is what "first diagnostics ... after didOpen" reports.

pylsp debounces linting by a hard-coded 500 ms (``LINT_DEBOUNCE_S`` in pylsp/python_lsp.py;
no setting changes it), so its latency as shipped is mostly that wait. Unless
``--no-pylsp-undebounced`` is given, a fourth row runs the same pylsp with the debounce
patched to 0 at start-up, to show the cost of pyflakes itself.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _results  # bench/_results.py: each run is appended to its area's history
from _lsp_client import Client
from _lsp_workspace import Generated, Site, generate

TARGET_P50_MS = 15.0
REL_PATH = "tests/test_inventory.py"
SAMPLE_TIMEOUT_S = 10.0  # one edit's diagnostics; longer is a failure, not a sample
OPEN_TIMEOUT_S = 60.0
MAX_TIMEOUTS = 3  # a server that misses this many edits is dropped from the run

REFEREE_OPTIONS = {"debounceMs": 0, "run": "onType"}
# Every plugin python-lsp-server 1.x registers, off but pyflakes. Plugins that are not
# installed are simply never loaded; the setting is harmless for them.
PYLSP_PLUGINS = [
    "autopep8", "flake8", "folding", "jedi", "jedi_completion", "jedi_definition",
    "jedi_highlight", "jedi_hover", "jedi_references", "jedi_rename",
    "jedi_signature_help", "jedi_symbols", "jedi_type_definition", "mccabe", "preload",
    "pycodestyle", "pydocstyle", "pyflakes", "pylint", "rope_autoimport",
    "rope_completion", "yapf",
    # third-party plugins, in case the environment has them
    "pylsp_mypy", "pylsp_black", "pylsp_isort", "ruff", "pylsp_rope", "black", "isort",
    "mypy",
]  # fmt: skip
PYLSP_SETTINGS = {
    "pylsp": {
        "configurationSources": [],
        "plugins": {name: {"enabled": name == "pyflakes"} for name in PYLSP_PLUGINS},
    }
}
# Started with ``python -c``: pylsp with its lint debounce at 0 instead of 500 ms.
PYLSP_UNDEBOUNCED = (
    "import pylsp._utils as u\n"
    "_debounce = u.debounce\n"
    "u.debounce = lambda interval_s, keyed_by=None: _debounce(0, keyed_by)\n"
    "import sys\n"
    "from pylsp.__main__ import main\n"
    "sys.argv = ['pylsp']\n"
    "main()\n"
)

INSTALL = {
    "referee": "pip install -e .   (in this repository, into this interpreter's environment)",
    "pylsp": (
        "python3 -m venv /tmp/bench-pylsp && "
        "/tmp/bench-pylsp/bin/pip install 'python-lsp-server[pyflakes]'   "
        "(its own environment: its pyflakes pin conflicts with flake8's), "
        "then --pylsp /tmp/bench-pylsp/bin/pylsp"
    ),
    "ruff": "pip install 'referee[bench]'   (or: pip install ruff)",
}


# ---------------------------------------------------------------------- servers


@dataclass
class Server:
    key: str
    label: str
    argv: list[str]
    init_options: Any
    settings: Any = None  # sent in workspace/didChangeConfiguration when not None
    section_config: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    # filled in by the run
    version: str = "?"
    client: Client | None = None
    uri: str = ""
    doc_version: int = 1
    lines: list[str] = field(default_factory=list)
    times_ms: list[float] = field(default_factory=list)
    timeouts: int = 0
    first_ms: float = 0.0
    first_count: int = 0
    last_count: int = 0
    probe: str = "?"
    sources: set[str] = field(default_factory=set)
    unversioned: int = 0
    failed: str | None = None

    def config(self, section: str | None) -> Any:
        return self.section_config.get(section or "", None)


def find_executable(name: str, given: str | None) -> tuple[str | None, str]:
    """An executable: the given path, or next to this interpreter, or on PATH."""
    if given:
        path = shutil.which(given) or (given if os.access(given, os.X_OK) else None)
        return path, f"{given} is not an executable"
    here = Path(sys.executable).parent  # not resolved: a venv's python is often a symlink
    for candidate in (here / name, here / f"{name}.exe"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate), ""
    found = shutil.which(name)
    if found:
        return found, ""
    return None, f"`{name}` was found neither next to {sys.executable} nor on PATH"


def interpreter_of(script: str) -> str | None:
    """The Python a console script runs under: its shebang, else a python beside it."""
    try:
        with open(script, "rb") as handle:
            first = handle.readline().decode(errors="replace").strip()
    except OSError:
        first = ""
    if first.startswith("#!"):
        parts = shlex.split(first[2:])
        if parts and "python" in Path(parts[-1]).name and os.access(parts[-1], os.X_OK):
            return parts[-1]
        if parts and Path(parts[0]).name == "env" and len(parts) > 1:
            return shutil.which(parts[1])
    for name in ("python3", "python"):
        candidate = Path(script).parent / name
        if candidate.exists():
            return str(candidate)
    return None


def version_of(argv: list[str]) -> str:
    try:
        proc = subprocess.run(
            [*argv, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    text = (proc.stdout or proc.stderr).strip()
    match = re.search(r"\d+\.\d+(?:\.\d+)?\S*", text)
    return match.group(0) if match else "?"


def pyflakes_version(python: str) -> str:
    try:
        proc = subprocess.run(
            [python, "-c", "import pyflakes; print(pyflakes.__version__)"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return proc.stdout.strip() or "not installed"


def build_servers(args: argparse.Namespace) -> tuple[list[Server], list[str]]:
    servers: list[Server] = []
    missing: list[str] = []

    def lookup(name: str, given: str | None) -> str | None:
        path, why = find_executable(name, given)
        if path is None:
            missing.append(
                f"{name}: {why}; it is left out of this run.\n    Install it: {INSTALL[name]}"
            )
        return path

    if "referee" in args.servers:
        referee = lookup("referee", args.referee)
        if referee:
            servers.append(
                Server(
                    "referee",
                    "referee",
                    [referee, "serve"],
                    REFEREE_OPTIONS,
                    section_config={"referee": REFEREE_OPTIONS},
                    note="debounceMs 0",
                )
            )
    if "pylsp" in args.servers:
        pylsp = lookup("pylsp", args.pylsp)
        if pylsp:
            servers.append(
                Server(
                    "pylsp",
                    "pylsp",
                    [pylsp],
                    PYLSP_SETTINGS,
                    settings=PYLSP_SETTINGS,
                    section_config={"pylsp": PYLSP_SETTINGS["pylsp"]},
                    note="pyflakes only; built-in 500 ms lint debounce",
                )
            )
            python = interpreter_of(pylsp) if args.pylsp_undebounced else None
            if python:
                servers.append(
                    Server(
                        "pylsp-0",
                        "pylsp, debounce 0",
                        [python, "-c", PYLSP_UNDEBOUNCED],
                        PYLSP_SETTINGS,
                        settings=PYLSP_SETTINGS,
                        section_config={"pylsp": PYLSP_SETTINGS["pylsp"]},
                        note="the same, debounce patched to 0 (not a shipped setting)",
                    )
                )
            elif args.pylsp_undebounced:
                missing.append(
                    f"pylsp, debounce 0: no Python interpreter found for {pylsp}; left out"
                )
    if "ruff" in args.servers:
        ruff = lookup("ruff", args.ruff)
        if ruff:
            servers.append(
                Server(
                    "ruff",
                    "ruff server",
                    [ruff, "server"],
                    {"settings": {}},
                    note="its default rule selection",
                )
            )
    for server in servers:
        server.version = version_of(server.argv[:1]) if server.key != "pylsp-0" else "?"
    for server in servers:
        if server.key == "pylsp-0":
            server.version = next(s.version for s in servers if s.key == "pylsp")
        if server.key.startswith("pylsp"):
            python = interpreter_of(next(s.argv[0] for s in servers if s.key == "pylsp"))
            flakes = pyflakes_version(python) if python else "?"
            server.note += f"; pyflakes {flakes} (from {python})"
    return servers, missing


CAPABILITIES = {
    "general": {"positionEncodings": ["utf-16"]},
    "textDocument": {
        "synchronization": {"dynamicRegistration": False, "didSave": True},
        # Push only: no "diagnostic" key, so no server switches to pull diagnostics.
        "publishDiagnostics": {"versionSupport": True, "relatedInformation": False},
    },
    "workspace": {"workspaceFolders": True},
}


def count_publish(server: Server, params: dict[str, Any]) -> int:
    diagnostics = params.get("diagnostics") or []
    for diagnostic in diagnostics:
        server.sources.add(str(diagnostic.get("source", "?")))
    if params.get("version") is None:
        server.unversioned += 1
    return len(diagnostics)


async def start_server(server: Server, root: Path, text: str, logs: Path) -> None:
    client = Client(server.key, server.argv, root, logs / f"{server.key}.log", server.config)
    server.client = client
    await client.start()
    init = await client.request(
        "initialize",
        {
            "processId": os.getpid(),
            "clientInfo": {"name": "referee-bench", "version": "1"},
            "rootUri": root.as_uri(),
            "rootPath": str(root),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "capabilities": CAPABILITIES,
            "initializationOptions": server.init_options,
        },
        timeout=OPEN_TIMEOUT_S,
    )
    info = (init or {}).get("serverInfo") or {}
    if server.version == "?" and info.get("version"):
        server.version = str(info["version"])
    await client.notify("initialized", {})
    if server.settings is not None:
        await client.notify("workspace/didChangeConfiguration", {"settings": server.settings})
    server.uri = (root / REL_PATH).as_uri()
    server.lines = text.split("\n")
    sent = await client.notify(
        "textDocument/didOpen",
        {
            "textDocument": {
                "uri": server.uri,
                "languageId": "python",
                "version": server.doc_version,
                "text": text,
            }
        },
    )
    arrived, params = await client.wait_publish(server.uri, server.doc_version, OPEN_TIMEOUT_S)
    server.first_ms = (arrived - sent) * 1000
    server.first_count = count_publish(server, params)


async def edit(server: Server, line: int, character: int, old: str, new: str) -> tuple[float, int]:
    """Replace ``old`` at (line, character) with ``new``; returns (ms, diagnostics)."""
    client = server.client
    assert client is not None
    current = server.lines[line]
    if current[character : character + len(old)] != old:
        raise RuntimeError(f"{server.key}: expected {old!r} at {line}:{character}: {current!r}")
    server.lines[line] = current[:character] + new + current[character + len(old) :]
    server.doc_version += 1
    client.drain_publishes()  # late extras from the previous version are not this edit's
    sent = await client.notify(
        "textDocument/didChange",
        {
            "textDocument": {"uri": server.uri, "version": server.doc_version},
            "contentChanges": [
                {
                    "range": {
                        "start": {"line": line, "character": character},
                        "end": {"line": line, "character": character + len(old)},
                    },
                    "text": new,
                }
            ],
        },
    )
    arrived, params = await client.wait_publish(server.uri, server.doc_version, SAMPLE_TIMEOUT_S)
    return (arrived - sent) * 1000, count_publish(server, params)


async def probe(server: Server, generated: Generated) -> None:
    """One edit that must add a diagnostic, then its undo."""
    row, character, old, new = generated.probe
    before = server.first_count
    _, during = await edit(server, row, character, old, new)
    _, after = await edit(server, row, character, new, old)
    if during > before and after == before:
        server.probe = f"yes ({before}→{during}→{after})"
    else:
        server.probe = f"NO ({before}→{during}→{after})"


def site_edit(generated: Generated, step: int) -> tuple[Site, str, str]:
    """The edit of round ``step``: a different test each time, spread over the file."""
    sites = generated.sites
    site = sites[(step * 37) % len(sites)]
    old = str(site.value)
    site.value = site.value + 1 if site.value < 99_999 else 10_000
    return site, old, str(site.value)


async def run(args: argparse.Namespace) -> int:
    generated = generate(args.tests)
    servers, missing = build_servers(args)
    for message in missing:
        print(f"lsp_latency: {message}", file=sys.stderr)
    if not servers:
        print("lsp_latency: no server to measure", file=sys.stderr)
        return 2
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="referee-lsp-bench-") as tmp_name:
        root = Path(tmp_name) / "workspace"
        (root / "tests").mkdir(parents=True)
        (root / REL_PATH).write_text(generated.text, encoding="utf-8")
        if args.git:
            commit_workspace(root)
        logs = Path(tmp_name) / "logs"
        logs.mkdir()
        if args.keep_file:
            Path(args.keep_file).write_text(generated.text, encoding="utf-8")
        try:
            for server in servers:
                print(f"starting {server.label} ...", file=sys.stderr, flush=True)
                try:
                    await start_server(server, root, generated.text, logs)
                    await probe(server, generated)
                except Exception as exc:  # reported; the others go on
                    fail(server, f"did not start or open the file: {describe(exc)}")
            live = [s for s in servers if s.failed is None]
            rounds = args.warmup + args.samples
            for step in range(rounds):
                site, old, new = site_edit(generated, step)
                order = live[step % len(live) :] + live[: step % len(live)] if live else []
                for server in order:
                    if server.failed:
                        continue
                    try:
                        ms, count = await edit(server, site.line, site.character, old, new)
                    except asyncio.TimeoutError:
                        server.timeouts += 1
                        # resynchronise: the document text is already updated on our side
                        if server.timeouts >= MAX_TIMEOUTS:
                            fail(
                                server,
                                f"no diagnostics within {SAMPLE_TIMEOUT_S:.0f} s, "
                                f"{server.timeouts} times",
                            )
                        continue
                    except Exception as exc:
                        fail(server, describe(exc))
                        continue
                    server.last_count = count
                    if step >= args.warmup:
                        server.times_ms.append(ms)
                if (step + 1) % 50 == 0 or step + 1 == rounds:
                    phase = "warm-up" if step < args.warmup else "measured"
                    print(f"round {step + 1}/{rounds} ({phase})", file=sys.stderr, flush=True)
        finally:
            for server in servers:
                if server.client:
                    await server.client.stop()
    elapsed = time.perf_counter() - started
    load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    report(args, generated, servers, missing, (load_before, load_after), elapsed)
    return 0


def commit_workspace(root: Path) -> None:
    """Make ``root`` a git repository with everything in it committed."""
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    git += ["-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "--no-verify", "-m", "base"]):
        subprocess.run([*git, *command], cwd=root, check=True, capture_output=True, timeout=60)


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def fail(server: Server, why: str) -> None:
    tail = server.client.stderr_tail() if server.client else ""
    server.failed = why
    print(f"lsp_latency: {server.label}: {why}", file=sys.stderr)
    if tail:
        print(f"  its stderr ends:\n{tail}", file=sys.stderr)


# ---------------------------------------------------------------------- the report


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    rank = max(1, int(-(-q * len(ordered) // 100)))  # ceil
    return ordered[min(rank, len(ordered)) - 1]


def row(server: Server) -> list[str]:
    t = server.times_ms
    if not t:
        return [server.label, "?" if server.failed else server.version, *"----", "0"]
    return [
        server.label,
        server.version,
        f"{statistics.median(t):.1f}",
        f"{percentile(t, 90):.1f}",
        f"{percentile(t, 99):.1f}",
        f"{max(t):.1f}",
        str(len(t)),
    ]


HEADER = ["server", "version", "p50 ms", "p90 ms", "p99 ms", "max ms", "samples"]


def verdict(servers: list[Server]) -> list[str]:
    by = {s.key: statistics.median(s.times_ms) for s in servers if s.times_ms}
    if "referee" not in by:
        return ["targets: not assessed (referee was not measured)"]
    p50 = by["referee"]
    first = p50 <= TARGET_P50_MS
    lines = [
        f"target 1, referee p50 ≤ {TARGET_P50_MS:.0f} ms: "
        f"{'MET' if first else 'NOT MET'} (p50 {p50:.1f} ms)"
    ]
    if "pylsp" in by:
        second: bool | None = p50 < by["pylsp"]
        lines.append(
            f"target 2, referee p50 below pylsp's: {'MET' if second else 'NOT MET'} "
            f"({p50:.1f} ms vs {by['pylsp']:.1f} ms for pylsp as shipped)"
        )
    else:
        second = None
        lines.append("target 2, referee p50 below pylsp's: not assessed (pylsp was not measured)")
    if first and second:
        overall = "MET"
    elif not first or second is False:
        overall = "NOT MET"
    else:
        overall = "not assessed"
    lines.append(
        f"targets (referee p50 ≤ {TARGET_P50_MS:.0f} ms and below pylsp's): {overall} in this run"
    )
    context = []
    if "pylsp-0" in by:
        context.append(
            f"pylsp with its debounce patched to 0, p50 {by['pylsp-0']:.1f} ms "
            f"(referee {ratio(p50, by['pylsp-0'])})"
        )
    if "ruff" in by:
        context.append(f"ruff server p50 {by['ruff']:.1f} ms (referee {ratio(p50, by['ruff'])})")
    if context:
        lines.append("context, no target: " + "; ".join(context))
    return lines


def ratio(mine: float, theirs: float) -> str:
    if theirs <= 0 or mine <= 0:
        return "-"
    factor = mine / theirs
    return f"{factor:.1f}x slower" if factor >= 1 else f"{1 / factor:.1f}x faster"


def report(
    args: argparse.Namespace,
    generated: Generated,
    servers: list[Server],
    missing: list[str],
    load: tuple[str, str],
    elapsed: float,
) -> None:
    rows = [row(s) for s in servers]
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    out: list[str] = []
    for cells in [HEADER, ["-" * w for w in widths], *rows]:
        out.append(
            "  ".join(
                cell.ljust(w) if i < 2 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
            )
        )
    print("didChange → publishDiagnostics latency, milliseconds")
    print("\n".join(out))
    print()
    cores = os.cpu_count() or 0
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = cores
    lines = generated.text.count("\n")
    command = " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv])
    print(f"command: {command}")
    print(
        f"date: {dt.datetime.now().astimezone().isoformat(timespec='seconds')}; "
        f"wall time {elapsed:.0f} s; load average before/after: {load[0]} / {load[1]}"
    )
    print(
        f"machine: {cores} cores ({usable} usable), {platform.machine()}, "
        f"{platform.system()} {platform.release()}; client Python {platform.python_version()}"
    )
    print(
        f"file: {REL_PATH}, {lines:,} lines, {generated.tests} tests; one edit per round "
        f"(a 5-digit literal in a different test), {args.warmup} warm-up rounds not counted, "
        f"{args.samples} measured; servers take turns within a round"
    )
    print(
        "workspace: "
        + (
            "a git repository with the file committed (referee's guard compares each edit with it)"
            if args.git
            else "not a git repository (no baseline: referee's guard is off)"
        )
    )
    print("servers:")
    for s in servers:
        argv = " ".join(shlex.quote(a) for a in s.argv)
        if s.key == "pylsp-0":
            argv = f"{shlex.quote(s.argv[0])} -c <pylsp with LINT debounce patched to 0>"
        print(f"  {s.label}: {argv}")
        if s.failed:
            print(f"    FAILED: {s.failed}")
            continue
        print(
            f"    {s.note}; first diagnostics {s.first_ms:.0f} ms after didOpen "
            f"({s.first_count} diagnostics; {s.last_count} after the last edit); "
            f"re-checks on didChange: {s.probe}; diagnostic sources: "
            f"{', '.join(sorted(s.sources)) or '-'}"
            + (f"; {s.timeouts} edits timed out" if s.timeouts else "")
            + (f"; {s.unversioned} publishes without a version" if s.unversioned else "")
        )
    if any(s.key == "pylsp" for s in servers):
        print(
            "note: pylsp lints on didChange (pyflakes runs for every change, not only on "
            "save), but after a hard-coded 500 ms debounce (pylsp/python_lsp.py "
            "LINT_DEBOUNCE_S) that no setting changes; its p50 is that wait plus pyflakes."
        )
    for message in missing:
        print(f"missing: {message}")
    print()
    print("\n".join(verdict(servers)))
    print()
    print("Markdown, for docs/benchmarks.md:")
    print()
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "|".join(["---", "---"] + ["---:"] * (len(HEADER) - 2)) + "|")
    for cells in rows:
        print("| " + " | ".join(cells) + " |")
    print()
    print(
        f"`{command}` on {dt.date.today().isoformat()}: {cores} cores, "
        f"{platform.system()} {platform.machine()}, Python {platform.python_version()}; "
        f"a generated {lines:,}-line pytest module"
        + (" committed in a git repository (the guard live)" if args.git else "")
        + f", {args.samples} edits per server after {args.warmup} warm-up edits, "
        "servers interleaved."
    )
    print()
    for line in verdict(servers):
        print(f"- {line}")
    _results.record(
        "lsp-latency",
        {
            "git": args.git,
            "samples": args.samples,
            "warmup": args.warmup,
            "file_lines": lines,
            "tests": generated.tests,
            "load_before_after": list(load),
            "servers": {cells[0]: dict(zip(HEADER, cells, strict=True)) for cells in rows},
            "verdict": verdict(servers),
        },
        getattr(args, "argv", None),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=200, help="timed edits per server")
    parser.add_argument("--warmup", type=int, default=20, help="untimed edits first")
    parser.add_argument("--tests", type=int, default=150, help="tests in the generated file")
    parser.add_argument("--referee", metavar="PATH", help="referee executable")
    parser.add_argument("--pylsp", metavar="PATH", help="pylsp executable")
    parser.add_argument("--ruff", metavar="PATH", help="ruff executable")
    parser.add_argument(
        "--servers",
        default="referee,pylsp,ruff",
        help="comma-separated subset of referee,pylsp,ruff (default: all)",
    )
    parser.add_argument(
        "--no-pylsp-undebounced",
        dest="pylsp_undebounced",
        action="store_false",
        help="leave out the pylsp row with its lint debounce patched to 0",
    )
    parser.add_argument("--keep-file", metavar="PATH", help="also write the generated file here")
    parser.add_argument(
        "--git",
        action="store_true",
        help="commit the workspace into a git repository first, so referee's guard is live",
    )
    args = parser.parse_args(argv)
    if args.samples < 1 or args.warmup < 0:
        parser.error("--samples must be at least 1 and --warmup at least 0")
    if args.tests < 10:
        parser.error("--tests must be at least 10")
    args.servers = {s.strip() for s in args.servers.split(",") if s.strip()}
    unknown = args.servers - {"referee", "pylsp", "ruff"}
    if unknown:
        parser.error(f"unknown server(s): {', '.join(sorted(unknown))}")
    args.argv = argv  # the command line, for the run's history entry
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
