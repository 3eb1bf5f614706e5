#!/usr/bin/env python3
"""Drafting from the prompt in the batched decoder: what it saves, on this machine.

Not a test. The in-process model answers the same requests with drafting off (the peer:
every answer token decoded one step at a time) and on (``checks/judge/batched.py``: where
the answer's last tokens occur in its prompt, the prompt's next tokens are evaluated in
the same step and kept while the sampler picks them), in interleaved rounds. Every request
below asks for drafting (``ChatRequest.draft``); referee asks for it for patches alone:

* patch — arbitration's patch prompt for a 14-line function (the answer rewrites the
  function it was shown: mostly a copy), greedy, as the first candidate patch is asked;
* oracle — arbitration's oracle prompt from a signature and docstring (new code: little
  to copy), three seeded samples in one batch, as the oracles are asked;
* review — a JSON verdict that quotes the code's lines as evidence, under the judge's
  answer grammar, three perspectives in one batch.

For each: the answer's tokens, the decoding steps, the drafts kept of those evaluated,
seconds (median over the rounds), the ratio on/off, and whether the answers were the same
text (what the sampler picks is the answer; only the floating-point order of a batch can
tell the two runs apart).

    python bench/drafting.py                              # 1.5B, 2 rounds
    python bench/drafting.py --model qwen2.5-coder-0.5b --rounds 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import _results  # noqa: E402  (bench/_results.py: each run is appended to its history)

from referee.checks.arbitration.oracle_prompts import prompts  # noqa: E402
from referee.checks.judge import batched, models  # noqa: E402
from referee.checks.judge.answer import answer_grammar  # noqa: E402
from referee.checks.judge.backend import ChatRequest, LlamaCppBackend, chat_batch  # noqa: E402

FUNCTION = '''def parse_duration(text):
    """Seconds in a duration: '1:30', '1:01:30', '2h', '3m', '45s' or '1h 2m 3s'."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    m = re.match(r"^(?:(\\d+):)?(\\d+):(\\d+)$", text)
    if m:
        hours, minutes, seconds = m.groups()
        return int(hours or 0) * 3600 + int(minutes) * 60 + int(seconds)
    m = re.match(r"^(?:(\\d+)h)?\\s*(?:(\\d+)m)?\\s*(?:(\\d+)s)?$", text)
    if m and any(m.groups()):
        hours, minutes, seconds = m.groups()
        return int(hours or 0) * 3600 + int(minutes or 0) * 60 + int(seconds or 0)
    return None
'''

ORACLE_SIGNATURE = "def merge_ranges(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:"
ORACLE_DOCSTRING = '''    """Merge overlapping or touching closed ranges (start, end), start <= end,
    and return them sorted by start. An empty list gives an empty list.
    """'''


def requests() -> dict[str, list[ChatRequest]]:
    p = prompts()
    patch = [
        {"role": "system", "content": p.patch_system},
        {
            "role": "user",
            "content": p.patch.format(
                call="parse_duration('1h30')",
                produced="None",
                truth="5400",
                function=FUNCTION,
                name="parse_duration",
            ),
        },
    ]
    oracle = [
        {"role": "system", "content": p.oracle_system},
        {
            "role": "user",
            "content": p.oracle.format(
                signature=ORACLE_SIGNATURE, docstring=ORACLE_DOCSTRING, name="merge_ranges"
            ),
        },
    ]
    grammar = answer_grammar(FUNCTION)

    def review(perspective: str) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": "You review code. Answer with JSON only."},
            {
                "role": "user",
                "content": f"```python\n{FUNCTION}```\nDoes it do what its docstring says? "
                'Reply with JSON: "reason", "evidence" (lines copied exactly), "verdict" '
                f"(PASS or REJECT).\nPerspective: {perspective}.",
            },
        ]

    return {
        "patch (1, greedy)": [
            ChatRequest(patch, max_tokens=400, until_code_block=True, draft=True)
        ],
        "oracle (3, sampled)": [
            ChatRequest(
                oracle,
                max_tokens=400,
                temperature=0.8,
                seed=s,
                until_code_block=True,
                draft=True,
            )
            for s in (1, 2, 3)
        ],
        "review (3, grammar)": [
            ChatRequest(review(p), grammar=grammar, max_tokens=200, draft=True)
            for p in ("strict", "balanced", "lenient")
        ],
    }


def run(backend: LlamaCppBackend, draft: int, asked: list[ChatRequest]) -> dict:
    if backend._batched is not None:
        backend._batched.close()
    backend._batched = batched.BatchedGenerator(backend._llm, n_seq=4, draft=draft)
    started = time.perf_counter()
    answers = chat_batch(backend, asked)
    seconds = time.perf_counter() - started
    generator = backend._batched
    return {
        "seconds": seconds,
        "texts": [a.text for a in answers],
        "tokens": sum(a.completion_tokens for a in answers),
        "steps": generator.last_steps,
        "drafted": generator.last_drafted,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="model id or GGUF path")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--draft", type=int, default=batched.DRAFT, help="drafting on: at most")
    args = parser.parse_args(argv)
    path = models.resolve(args.model)
    backend = LlamaCppBackend(path, n_threads=args.threads)
    chat_batch(backend, [ChatRequest([{"role": "user", "content": "Hi"}], max_tokens=2)])
    results: dict[str, dict[str, list[dict]]] = {}
    for round_ in range(args.rounds):
        for name, asked in requests().items():
            print(f"round {round_ + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
            for label, draft in (("off", 0), ("on", args.draft)):
                results.setdefault(name, {}).setdefault(label, []).append(
                    run(backend, draft, asked)
                )
    print(
        f"\n{args.model}, {args.threads} threads, drafting at most {args.draft}, "
        f"{args.rounds} rounds (medians)\n"
    )
    print(
        "| request | answer tokens | steps off | steps on | drafts kept | s off | s on "
        "| on / off | same text |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    figures = {}
    for name, by in results.items():
        off, on = by["off"], by["on"]
        s_off = statistics.median(r["seconds"] for r in off)
        s_on = statistics.median(r["seconds"] for r in on)
        drafted = sum(r["drafted"][0] for r in on)
        kept = sum(r["drafted"][1] for r in on)
        same = all(a["texts"] == b["texts"] for a, b in zip(off, on, strict=True))
        print(
            f"| {name} | {off[0]['tokens']} | {off[0]['steps']} | {on[0]['steps']} | "
            f"{kept}/{drafted} | {s_off:.1f} | {s_on:.1f} | {s_on / s_off:.2f}x | "
            f"{'yes' if same else 'no'} |"
        )
        figures[name] = {
            "tokens": off[0]["tokens"],
            "steps_off": off[0]["steps"],
            "steps_on": on[0]["steps"],
            "drafts_kept": kept,
            "drafts_evaluated": drafted,
            "seconds_off": round(s_off, 2),
            "seconds_on": round(s_on, 2),
            "same_text": same,
        }
    backend.close()
    _results.record(
        "worker",
        {
            "kind": "drafting",
            "model": args.model,
            "threads": args.threads,
            "rounds": args.rounds,
            "draft": args.draft,
            "requests": figures,
        },
        argv,
    )


if __name__ == "__main__":
    main()
