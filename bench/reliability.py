#!/usr/bin/env python3
"""Reliability figures: hostile programs in the sandbox, malformed JSON-RPC against
``referee serve``, writers killed mid-write, and request latency under load.

Not a test: a script whose tables go into docs/reliability.md.

    python bench/reliability.py                       # everything, default sizes
    python bench/reliability.py --only fuzz --fuzz-cases 20000
    python bench/reliability.py --only load --documents 200 --edits 2000
    python bench/reliability.py --only load --with-judge   # load while the L2 judge runs

Sections:

* sandbox — every hostile program of tests/test_sandbox.py's catalogue, with its check
  (the listener got no connection, the file outside did not appear, the secret did not
  come back, we are still alive), once with namespaces and once with the audit hook alone;
* fuzz — tests/lsp/fuzz.py's seeded cases against one ``referee serve`` per seed, a
  normal ``textDocument/diagnostic`` after each that must be answered as at the start;
* crash — a ledger writer SIGKILLed at random moments (records it reported committed
  and then missing), and an atomic rewrite killed the same way (files left partial);
* load — ``referee serve`` with N documents open, a burst of edits, and
  ``textDocument/diagnostic`` latency while the edits stream in and after (target:
  p99 <= 100 ms).

``--with-judge [MODEL]`` adds the L2 judge to the load test: the workspace configures the
judge (default model qwen2.5-coder-0.5b, installed), three documents are saved before the
burst, so the judge works through their tests on its own thread while the edits and
requests stream in; the table says whether it was still running when the burst ended.
Exit status 1 when anything was not contained, crashed or was lost.
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import os
import platform
import random
import signal
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import _results  # noqa: E402  (bench/_results.py: each run is appended to its history)
from _tools import source_fingerprint  # noqa: E402
from lsp.fuzz import RawServer, fuzz  # noqa: E402

from referee import __version__  # noqa: E402
from referee.checks.atomic import write_text_atomic  # noqa: E402
from referee.checks.sandbox import Limits, SandboxResult, evaluate  # noqa: E402

QUICK = Limits(timeout_s=2.0, cpu_s=2, memory_mb=256, output_kb=64)


def table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(c)) for c in column) for column in zip(header, *rows, strict=True)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) + " |")
    print()


# ------------------------------------------------------------------------- sandbox


def _hostile() -> list[tuple[str, Callable[[], tuple[bool, SandboxResult]]]]:
    """(name, run): run returns (contained, result)."""

    def plain(code: str, call: str = "1", **limits: Any) -> Callable[[], tuple[bool, Any]]:
        def run() -> tuple[bool, SandboxResult]:
            result = evaluate(code, call, limits=QUICK.model_copy(update=limits))
            return result.status != "ok", result

        return run

    def network() -> tuple[bool, SandboxResult]:
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            port = listener.getsockname()[1]
            code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
            result = evaluate(code, "1", limits=QUICK)
            listener.settimeout(0.3)
            try:
                listener.accept()[0].close()
                reached = True
            except TimeoutError:
                reached = False
        return result.status != "ok" and not reached, result

    def write_outside() -> tuple[bool, SandboxResult]:
        with tempfile.TemporaryDirectory() as outside:
            target = Path(outside, "escaped.txt")
            result = evaluate(f"open({str(target)!r}, 'w').write('x')\n", "1", limits=QUICK)
            return result.status != "ok" and not target.exists(), result

    def secret() -> tuple[bool, SandboxResult]:
        os.environ["REFEREE_BENCH_SECRET"] = "sentinel-bench"
        try:
            result = evaluate("import os\n", "os.environ['REFEREE_BENCH_SECRET']", limits=QUICK)
        finally:
            del os.environ["REFEREE_BENCH_SECRET"]
        leaked = "sentinel-bench" in (result.value or "") + result.stdout + result.stderr
        return result.status != "ok" and not leaked, result

    def kill_parent() -> tuple[bool, SandboxResult]:
        result = evaluate("import os\nos.kill(os.getppid(), 9)\n", "1", limits=QUICK)
        return result.status != "ok", result  # and we are still here to say so

    return [
        ("infinite loop", plain("while True:\n    pass\n", timeout_s=1)),
        ("CPU-bound past cpu_s", plain("while True:\n    pass\n", timeout_s=5, cpu_s=1)),
        ("fork bomb", plain("import os\nwhile True:\n    os.fork()\n")),
        ("10 GB allocation", plain("x = bytearray(10 * 1024**3)\n")),
        ("deep recursion", plain("def f(n):\n    return f(n + 1)\n", "f(0)")),
        ("network connection", network),
        ("write outside its directory", write_outside),
        ("parent's environment", secret),
        ("kill its parent", kill_parent),
        ("print 1 GB", plain("import sys\nfor _ in range(1024):\n    print('x' * 2**20)\n")),
        ("file past file_size_mb", plain("open('f', 'wb').write(b'x' * 2**21)\n", file_size_mb=1)),
        ("read stdin", plain("", "input()")),
    ]


def bench_sandbox() -> bool:
    print("## Sandbox: hostile programs\n")
    rows, contained_all, totals = [], True, Counter()
    for mode in ("namespaces", "hook only"):
        if mode == "hook only":  # no kernel mechanism at all: the weak mode, allowed here
            os.environ["REFEREE_SANDBOX_NAMESPACES"] = "0"
            os.environ["REFEREE_SANDBOX_DISABLE"] = "landlock,seccomp"
            os.environ["REFEREE_SANDBOX"] = "weak"
        try:
            for name, run in _hostile():
                contained, result = run()
                contained_all &= contained
                totals[mode, contained] += 1
                rows.append(
                    [
                        mode,
                        name,
                        "yes" if contained else "**NO**",
                        result.status,
                        result.message[:60],
                        f"{result.duration_s:.2f}",
                    ]
                )
        finally:
            for name in ("NAMESPACES", "DISABLE", ""):
                os.environ.pop("REFEREE_SANDBOX" + (f"_{name}" if name else ""), None)
    table(["containment", "program", "contained", "status", "message", "seconds"], rows)
    probe = evaluate("", "1")
    for mode in ("namespaces", "hook only"):
        done = totals[mode, True]
        print(f"- {mode}: contained {done}/{done + totals[mode, False]}")
    print(f"- mechanisms in force here: {', '.join(probe.containment)}\n")
    return contained_all


# ------------------------------------------------------------------------- fuzz


def bench_fuzz(cases: int, seed: int, per_server: int, huge_mb: float) -> bool:
    print("## Language server: malformed JSON-RPC\n")
    kinds: Counter[str] = Counter()
    failures: list[str] = []
    unanswered = crashes = run = 0
    unanswered_labels: list[str] = []
    slow: list[str] = []
    started = time.perf_counter()
    servers = 0
    for index in range(0, cases, per_server):
        with tempfile.TemporaryDirectory(prefix="referee-fuzz-") as tmp:
            workspace = Path(tmp)
            (workspace / "referee.toml").write_text("", encoding="utf-8")
            report = fuzz(workspace, min(per_server, cases - index), seed + index, huge_mb=huge_mb)
        servers += 1
        run += report.cases
        kinds.update(report.by_kind)
        failures += report.failures
        unanswered += len(report.unanswered)
        unanswered_labels += [f"seed {seed + index} {u}" for u in report.unanswered]
        slow += [f"seed {seed + index} {u}" for u in report.slow]
        crashes += report.crashed
    elapsed = time.perf_counter() - started
    table(["kind", "cases"], [[k, str(v)] for k, v in sorted(kinds.items())])
    table(
        [
            "cases run",
            "servers",
            "crashes",
            "wrong or missing probe answers",
            "unanswered requests",
            "answered after > 10 s",
            "seconds",
        ],
        [
            [
                str(run),
                str(servers),
                str(crashes),
                str(len(failures) - crashes),
                str(unanswered),
                str(len(slow)),
                f"{elapsed:.1f}",
            ]
        ],
    )
    for failure in failures[:20]:
        print(f"- {failure}")
    for label in unanswered_labels[:20]:
        print(f"- unanswered: {label}")
    for label in slow[:20]:
        print(f"- answered after more than 10 s: {label}")
    return not failures and not unanswered


# ------------------------------------------------------------------------- crash


def _rewrite_forever(path: str, contents: list[str]) -> None:
    n = 0
    while True:
        write_text_atomic(path, contents[n % 2])
        n += 1


def bench_crash(trials: int, seed: int) -> bool:
    from test_ledger import crash_trials

    print("## Crash consistency: writers killed with SIGKILL\n")
    with tempfile.TemporaryDirectory(prefix="referee-crash-") as tmp:
        started = time.perf_counter()
        ran, committed, lost, torn = crash_trials(Path(tmp), trials, seed, window=0.25)
        ledger_seconds = time.perf_counter() - started
    context = multiprocessing.get_context("fork")
    rng = random.Random(seed)
    contents = ["a" * 2_000_000 + "\n", "b" * 1_500_000 + "\n"]
    partial = 0
    with tempfile.TemporaryDirectory(prefix="referee-atomic-") as tmp:
        target = Path(tmp, "file.txt")
        write_text_atomic(target, contents[0])
        started = time.perf_counter()
        for _ in range(trials):
            child = context.Process(target=_rewrite_forever, args=(str(target), contents))
            child.start()
            time.sleep(rng.uniform(0.0, 0.1))
            os.kill(child.pid, signal.SIGKILL)
            child.join()
            partial += target.read_text(encoding="utf-8") not in contents
        atomic_seconds = time.perf_counter() - started
    table(
        [
            "writer",
            "trials",
            "records committed",
            "records lost",
            "torn lines reported",
            "files left partial",
            "seconds",
        ],
        [
            [
                "ledger append (256 KB records)",
                str(ran),
                str(committed),
                str(lost),
                str(torn),
                "-",
                f"{ledger_seconds:.1f}",
            ],
            [
                "write_text_atomic (2 MB file)",
                str(trials),
                "-",
                "-",
                "-",
                str(partial),
                f"{atomic_seconds:.1f}",
            ],
        ],
    )
    return lost == 0 and partial == 0


# ------------------------------------------------------------------------- load


def _document(index: int) -> str:
    lines = [f'"""Generated module {index}."""', "", "import pytest", ""]
    for test in range(12):
        lines += [
            f"def helper_{test}(x):",
            f"    return x * {index + test}",
            "",
            "",
            f"def test_case_{test}():",
            f"    assert helper_{test}(2) == {2 * (index + test)}",
            f"    assert helper_{test}(3) == {3 * (index + test)}",
            "",
            "",
        ]
    lines += ["def test_placeholder():", "    pass  # TODO", ""]
    return "\n".join(lines)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def bench_load(
    documents: int, edits: int, requests: int, seed: int, judge: str | None = None
) -> bool:
    print("## Language server under load" + (f", judge ({judge}) running" if judge else "") + "\n")
    rng = random.Random(seed)
    during: list[float] = []
    after: list[float] = []
    with tempfile.TemporaryDirectory(prefix="referee-load-") as tmp:
        workspace = Path(tmp)
        config = f'[judge]\nmodel = "{judge}"\naudit-rate = 0.0\n' if judge else ""
        (workspace / "referee.toml").write_text(config, encoding="utf-8")
        texts = {}
        for index in range(documents):
            path = workspace / f"test_module_{index}.py"
            texts[path.as_uri()] = _document(index)
            path.write_text(texts[path.as_uri()], encoding="utf-8")
        uris = list(texts)
        versions = dict.fromkeys(uris, 1)
        with RawServer(workspace) as server:
            server.initialize({"judge": {"run": "onSave"}} if judge else None)
            started = time.perf_counter()
            for uri in uris:
                server.notify(
                    "textDocument/didOpen",
                    {
                        "textDocument": {
                            "uri": uri,
                            "languageId": "python",
                            "version": 1,
                            "text": texts[uri],
                        }
                    },
                )
            for uri in uris:  # every document checked once
                server.request("textDocument/diagnostic", {"textDocument": {"uri": uri}}, 60)
            opened = time.perf_counter() - started

            def edit(uri: str) -> None:
                versions[uri] += 1
                line = 5 + 9 * rng.randrange(12)
                change = {
                    "range": {
                        "start": {"line": line, "character": 11},
                        "end": {"line": line, "character": 11},
                    },
                    "text": str(rng.randrange(10)),
                }
                server.notify(
                    "textDocument/didChange",
                    {
                        "textDocument": {"uri": uri, "version": versions[uri]},
                        "contentChanges": [change],
                    },
                )

            def timed(uri: str) -> float:
                sent = time.perf_counter()
                response = server.request(
                    "textDocument/diagnostic", {"textDocument": {"uri": uri}}, 60
                )
                assert "result" in response, response
                return (time.perf_counter() - sent) * 1000

            editable = uris
            if judge:  # the judge reads these documents' tests while the burst runs; an
                # edit would cancel it, so the burst edits the others
                for uri in uris[:3]:
                    server.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
                editable = uris[3:]
            per_request = max(1, edits // max(requests, 1))
            burst_started = time.perf_counter()
            for index in range(edits):
                edit(rng.choice(editable))
                if index % per_request == per_request - 1:
                    during.append(timed(rng.choice(uris)))
            burst = time.perf_counter() - burst_started
            judge_state = server.last_params.get("referee/status", {}).get("judge", "never ran")
            for _ in range(requests):
                after.append(timed(rng.choice(uris)))
            alive = server.alive()
    rows = []
    for label, values in (("while edits stream in", during), ("after the burst", after)):
        rows.append(
            [
                label,
                str(len(values)),
                f"{statistics.median(values):.1f}",
                f"{_percentile(values, 0.99):.1f}",
                f"{max(values):.1f}",
            ]
        )
    table(["textDocument/diagnostic", "requests", "p50 ms", "p99 ms", "max ms"], rows)
    print(
        f"- {documents} documents opened and checked in {opened:.1f} s; {edits} edits sent "
        f"in {burst:.1f} s, one diagnostic request every {per_request} edits"
    )
    if judge:
        print(f"- the judge was {judge_state} when the burst ended")
    p99 = _percentile(during + after, 0.99)
    print(
        f"- p99 over all requests: {p99:.1f} ms (target <= 100 ms: "
        f"{'met' if p99 <= 100 else 'MISSED'}); server alive after: {alive}\n"
    )
    return alive


# ------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["sandbox", "fuzz", "crash", "load"], action="append")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--fuzz-cases", type=int, default=5000)
    parser.add_argument("--fuzz-per-server", type=int, default=1000)
    parser.add_argument("--huge-mb", type=float, default=2.0, help="size of the huge messages")
    parser.add_argument("--trials", type=int, default=200, help="kills per crash test")
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--edits", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument(
        "--with-judge",
        nargs="?",
        const="qwen2.5-coder-0.5b",
        metavar="MODEL",
        help="run the L2 judge during the load test (default model: qwen2.5-coder-0.5b)",
    )
    args = parser.parse_args(argv)
    sections = args.only or ["sandbox", "fuzz", "crash", "load"]
    print(f"# referee {__version__} reliability (sources {source_fingerprint()})\n")
    print(
        f"- {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
    )
    held: dict[str, bool] = {}
    with _Tee() as printed:
        if "sandbox" in sections:
            held["sandbox"] = bench_sandbox()
        if "fuzz" in sections:
            held["fuzz"] = bench_fuzz(
                args.fuzz_cases, args.seed, args.fuzz_per_server, args.huge_mb
            )
        if "crash" in sections:
            held["crash"] = bench_crash(args.trials, args.seed)
        if "load" in sections:
            held["load"] = bench_load(
                args.documents, args.edits, args.requests, args.seed, args.with_judge
            )
    _results.record("reliability", {"held": held, "output": printed.getvalue().splitlines()}, argv)
    return 0 if all(held.values()) else 1


class _Tee(io.StringIO):
    """While entered, what is printed goes to stdout and is kept: each section prints its
    own tables, and the run's history keeps them as printed."""

    def __enter__(self) -> _Tee:
        self._stdout = sys.stdout
        sys.stdout = self
        return self

    def __exit__(self, *exc: object) -> None:
        sys.stdout = self._stdout

    def write(self, text: str) -> int:
        self._stdout.write(text)
        return super().write(text)

    def flush(self) -> None:
        self._stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
