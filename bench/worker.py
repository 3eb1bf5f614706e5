#!/usr/bin/env python3
"""What the model process costs, and what the safe runtime costs: a table for docs/models.md.

Not a test. For each configuration — the model in this process (the peer: how referee ran
it before the worker), in the worker in ``fast`` mode, in the worker in ``safe`` mode
(``use_extra_bufts = False``, what AMX CPUs get) — it measures, with the same model and
threads, interleaved so that a noisy machine hurts all three alike:

* load: starting the process (for the worker) and loading the model;
* decode: tokens per second of a 64-token answer (one sequence, prompt included);
* judge: p50 seconds to judge one edited function of a 150-line module with 3
  perspectives (bench/judge.py's latency), and p50 of an unchanged re-save (the cache).

    python bench/worker.py                       # 1.5B, 3 rounds
    python bench/worker.py --model qwen2.5-coder-0.5b --rounds 5
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import _results  # noqa: E402  (bench/_results.py: each run is appended to its history)
from judge import latency  # noqa: E402  (bench/judge.py)

from referee.checks.configuration import JudgeConfig  # noqa: E402
from referee.checks.judge import models, runtime  # noqa: E402
from referee.checks.judge.backend import LlamaCppBackend  # noqa: E402
from referee.checks.judge.worker import WorkerBackend, WorkerSpec  # noqa: E402

PROMPT = [{"role": "user", "content": "Count from 1 to 40, separated by spaces."}]


def open_config(name: str, path: Path, threads: int):
    if name == "in-process fast":
        return LlamaCppBackend(path, n_threads=threads, extra_buffers=True)
    mode = "fast" if name.endswith("fast") else "safe"
    backend = WorkerBackend(WorkerSpec(str(path), threads=threads, setting=mode))
    backend.start()
    return backend


def decode_rate(backend) -> float:
    started = time.perf_counter()
    answer = backend.chat(PROMPT, max_tokens=64, temperature=0.0, seed=0)
    return answer.completion_tokens / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    path = models.resolve(args.model)
    names = ["in-process fast", "worker fast", "worker safe"]
    results: dict[str, dict[str, list[float]]] = {
        n: {"load": [], "decode": [], "edit": [], "resave": []} for n in names
    }
    judge = JudgeConfig(model=str(path), audit_rate=0.0, threads=args.threads)
    for round_ in range(args.rounds):
        for name in names:
            print(f"round {round_ + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
            started = time.perf_counter()
            backend = open_config(name, path, args.threads)
            results[name]["load"].append(time.perf_counter() - started)
            try:
                results[name]["decode"].append(decode_rate(backend))
                with tempfile.TemporaryDirectory() as tmp:
                    edit, resave = latency(backend, judge, args.latency_runs, Path(tmp))
                results[name]["edit"].append(edit)
                results[name]["resave"].append(resave)
            finally:
                backend.close()

    cpu = runtime.this_cpu()
    print(
        f"\n{args.model}, {args.threads} threads, {platform.python_version()}, "
        f"CPU {cpu.model!r} (AMX: {', '.join(cpu.amx) or 'no'}), {args.rounds} rounds; "
        "medians\n"
    )
    print("| configuration | load (s) | decode (tok/s) | judge an edit, p50 (s) | re-save (ms) |")
    print("|---|---|---|---|---|")
    for name in names:
        r = results[name]
        print(
            f"| {name} | {statistics.median(r['load']):.2f} | "
            f"{statistics.median(r['decode']):.1f} | {statistics.median(r['edit']):.2f} | "
            f"{statistics.median(r['resave']) * 1000:.0f} |"
        )
    base = statistics.median(results["in-process fast"]["edit"])
    for name in names[1:]:
        ratio = statistics.median(results[name]["edit"]) / base
        print(f"\n{name} / in-process fast, judging an edit: {ratio:.2f}×", end="")
    print()
    _results.record(
        "worker",
        {
            "model": args.model,
            "threads": args.threads,
            "rounds": args.rounds,
            "medians": {
                name: {
                    "load_s": round(statistics.median(results[name]["load"]), 2),
                    "decode_tok_s": round(statistics.median(results[name]["decode"]), 1),
                    "edit_p50_s": round(statistics.median(results[name]["edit"]), 2),
                    "resave_ms": round(statistics.median(results[name]["resave"]) * 1000),
                }
                for name in names
            },
        },
    )


if __name__ == "__main__":
    main()
