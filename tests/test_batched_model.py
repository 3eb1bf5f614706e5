"""Batched decoding with the real model (Qwen2.5-Coder-0.5B): several answers in one
llama.cpp batch — the judge's perspectives and the arbiter's k oracles."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from referee.checks.judge.answer import answer_forcing, answer_grammar
from referee.checks.judge.backend import (
    THREADS_ENV,
    BackendError,
    BatchCancelled,
    ChatRequest,
    LlamaCppBackend,
    chat_batch,
    default_threads,
)
from referee.checks.judge.core import quote_found
from referee.checks.progress import Work

pytestmark = pytest.mark.model

TEXT = '''def is_even(n: int) -> bool:
    """Whether N is even."""
    return n % 2 == 1
'''


@pytest.fixture(scope="module")
def backend(small_model: Path) -> LlamaCppBackend:
    # In this process, to reach the decoder's internals: so the runtime this CPU needs (on
    # AMX, the fast mode would kill the test process; referee itself uses a worker).
    from referee.checks.judge import runtime

    mode = runtime.choose("auto", runtime.this_cpu()).mode
    # the threads the suite's conftest gives each xdist worker ($REFEREE_JUDGE_THREADS)
    return LlamaCppBackend(small_model, extra_buffers=mode == "fast")


def review(perspective: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You review code. Answer with JSON only."},
        {
            "role": "user",
            "content": f"```python\n{TEXT}```\nDoes it do what its name promises? Reply with "
            f'JSON: "reason", "evidence" (lines copied exactly), "verdict" (PASS or REJECT).\n'
            f"Perspective: {perspective}.",
        },
    ]


def test_a_batch_answers_every_request_in_order_and_honours_each_grammar(backend):
    grammar = answer_grammar(TEXT)
    requests = [
        ChatRequest(review(p), grammar=grammar, max_tokens=120)
        for p in ("strict", "balanced", "lenient")
    ]
    answers = chat_batch(backend, requests)
    assert len(answers) == 3
    for answer in answers:
        data = json.loads(answer.text)  # the grammar makes it parse
        assert data["verdict"] in ("PASS", "REJECT")
        assert data["evidence"] and all(quote_found(q, TEXT) for q in data["evidence"])
        assert 0 < answer.completion_tokens <= 120 and answer.prompt_tokens > 50


def test_seeded_samples_are_reproducible_and_each_stops_after_its_code_block(backend):
    prompt = [
        {"role": "user", "content": "Write a Python function `double(x)` returning 2*x."},
    ]

    def batch() -> list[str]:
        requests = [
            ChatRequest(prompt, max_tokens=200, temperature=0.8, seed=s, until_code_block=True)
            for s in (1, 2, 3)
        ]
        return [g.text for g in chat_batch(backend, requests)]

    first = batch()
    assert batch() == first  # each sequence samples with its own seeded chain
    for text in first:
        assert re.search(r"```[^\n]*\n.*?\n\s*```", text, re.DOTALL), text
        assert text.rstrip().endswith("```"), text  # nothing decoded after the block


def test_a_code_answer_that_loops_is_cut_and_the_batch_stops_waiting_for_it(backend):
    """Asked to repeat 24 lines that differ only in a number, the model copies them:
    as a program-writing answer (until_code_block) it is cut after sixteen of them, as a
    loop (batched.looping), while the answer decoded beside it is whole; asked as a plain
    answer, it goes on to the end."""
    lines = "\n".join(f"seen.add({i})" for i in range(1, 25))
    echo = [
        {
            "role": "user",
            "content": f"Repeat this Python code block exactly:\n```python\n{lines}\n```",
        }
    ]
    other = [{"role": "user", "content": "Write a Python function `double(x)` returning 2*x."}]

    # the loop cut beside a whole answer (`double`, which ends first: the batch stops
    # waiting once the cut one is cut); then the same echo as a plain answer, alone
    cut_batch = [
        ChatRequest(echo, max_tokens=400, until_code_block=True),
        ChatRequest(other, max_tokens=400, until_code_block=True),
    ]
    answers = chat_batch(backend, cut_batch)
    (cut, double), cut_tokens = [a.text for a in answers], answers[0].completion_tokens
    steps = backend._batched.last_steps
    (plain,) = chat_batch(backend, [ChatRequest(echo, max_tokens=400)])
    whole, whole_tokens = plain.text, plain.completion_tokens
    assert "seen.add(24)" in whole and whole.rstrip().endswith("```"), whole
    assert "seen.add(20)" not in cut and not cut.rstrip().endswith("```"), cut
    assert len(re.findall(r"seen\.add\(\d+\)\n", cut)) >= 16
    assert cut_tokens < 0.8 * whole_tokens, (cut_tokens, whole_tokens)
    assert steps <= cut_tokens + 1  # the batch ended with the cut answer
    assert re.search(r"```python\n.*def double.*\n```", double, re.DOTALL), double


DURATION_DOC = '''    """Parse a duration such as ``"1h30m"`` or ``"45s"`` into seconds.

    Units are ``h`` (hours), ``m`` (minutes) and ``s`` (seconds); they may appear
    in any order, each at most once. Whitespace between parts is ignored.

    Raises:
        ValueError: when the text holds no unit, or an unknown one.
    """'''


def test_an_oracle_copying_its_docstring_gets_the_copy_forced(backend):
    """The oracle prompt shows the signature and docstring and asks not to copy it; the
    0.5B copies it anyway. With DocstringCopy the copy is appended, not decoded: the
    answer holds the docstring as written (to its last word: the closing quotes are the
    model's own tokens), in far fewer decoding steps than tokens."""
    from referee.checks.arbitration.oracle_prompts import prompts
    from referee.checks.arbitration.programs import DocstringCopy

    p = prompts()
    signature = "def parse_duration(text: str) -> int:"
    ask = p.oracle.format(signature=signature, docstring=DURATION_DOC, name="parse_duration")
    messages = [
        {"role": "system", "content": p.oracle_system},
        {"role": "user", "content": ask},
    ]
    forcing = DocstringCopy("parse_duration", DURATION_DOC)
    # the docstring is written by the 100th token; what the model writes after it is not
    # this test's (at 400, most of its time was spent on the body)
    request = ChatRequest(messages, max_tokens=180, until_code_block=True, forcing=forcing)
    (answer,) = chat_batch(backend, [request])
    steps = backend._batched.last_steps
    assert "def parse_duration(" in answer.text and '    """Parse' in answer.text, answer.text
    forced = DURATION_DOC[: DURATION_DOC.rindex("one") + len("one")]  # to its last word
    assert forced in answer.text, answer.text  # as written, not paraphrased
    # the docstring is about 80 tokens, appended in a few steps
    assert steps < answer.completion_tokens - 50, (steps, answer.completion_tokens)


def test_max_tokens_bounds_each_answer(backend):
    prompt = [{"role": "user", "content": "Count from 1 to 500, one number per line."}]
    answers = chat_batch(backend, [ChatRequest(prompt, max_tokens=n) for n in (5, 17)])
    assert [a.completion_tokens for a in answers] == [5, 17]


def test_a_cancelled_batch_stops_between_steps(backend):
    prompt = [{"role": "user", "content": "Count from 1 to 500, one number per line."}]
    polls = []

    def cancelled() -> bool:
        polls.append(1)
        return len(polls) > 3

    with pytest.raises(BatchCancelled):
        chat_batch(
            backend, [ChatRequest(prompt, max_tokens=400)] * 2, work=Work(is_cancelled=cancelled)
        )
    assert len(polls) == 4
    # the backend is usable afterwards
    assert chat_batch(backend, [ChatRequest(prompt, max_tokens=4)] * 2)[1].completion_tokens == 4


def test_a_prompt_prefix_kept_from_the_last_batch_gives_the_same_answers(backend):
    """The second batch reuses the first's system prompt from the cache; greedy answers
    must not change because of it."""
    grammar = answer_grammar(TEXT)
    requests = [ChatRequest(review(p), grammar=grammar, max_tokens=60) for p in ("a", "b")]
    backend._batched = None  # a fresh context: nothing kept
    cold = [g.text for g in chat_batch(backend, requests)]
    kept = len(backend._batched._kept)
    assert kept > 50  # the shared prefix stayed in the cache
    warm = [g.text for g in chat_batch(backend, requests)]
    assert warm == cold


def test_the_threads_setting_reaches_the_model(small_model: Path, tmp_path: Path):
    from referee.checks.config import load_file
    from referee.checks.judge.opening import open_backend

    (tmp_path / "referee.toml").write_text(
        f'[judge]\nmodel = "{small_model}"\nthreads = 1\n', encoding="utf-8"
    )
    config = load_file(tmp_path / "referee.toml").config.judge
    assert config.threads == 1
    opened = open_backend(
        config.backend, model=config.model, threads=config.threads, in_process=True
    )
    # prompts and batches too: llama-cpp-python gives those every core unless told
    assert opened._llm.context_params.n_threads == 1
    assert opened._llm.context_params.n_threads_batch == 1
    requests = [ChatRequest(review("strict"), max_tokens=3)] * 2
    assert [g.completion_tokens for g in chat_batch(opened, requests)] == [3, 3]
    import llama_cpp

    ctx = opened._batched.ctx  # the batch context got the same thread counts
    assert (llama_cpp.llama_n_threads(ctx), llama_cpp.llama_n_threads_batch(ctx)) == (1, 1)


def test_the_threads_environment_variable_is_the_default_and_a_bad_value_one_message(
    small_model: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(THREADS_ENV, "1")
    assert default_threads() == 1
    opened = LlamaCppBackend(small_model, n_ctx=512, extra_buffers=False)
    assert opened._llm.context_params.n_threads == 1
    assert opened._llm.context_params.n_threads_batch == 1
    monkeypatch.delenv(THREADS_ENV)
    assert default_threads() == max(1, os.cpu_count() or 1)
    for bad in ("two", "0", "-3", "1.5"):
        monkeypatch.setenv(THREADS_ENV, bad)
        with pytest.raises(BackendError, match=f"REFEREE_JUDGE_THREADS='{re.escape(bad)}' is not"):
            LlamaCppBackend(small_model, n_ctx=512, extra_buffers=False)


def test_a_batch_too_big_for_its_context_is_a_clear_error_and_the_model_stays_usable(backend):
    from referee.checks.judge.backend import BackendError

    prompt = [{"role": "user", "content": "Say hi."}]
    with pytest.raises(BackendError, match="tokens of context"):
        chat_batch(backend, [ChatRequest(prompt, max_tokens=4096)] * 3)
    assert chat_batch(backend, [ChatRequest(prompt, max_tokens=2)] * 2)[0].completion_tokens <= 2


def test_forced_text_is_appended_without_decoding_and_the_answer_is_the_same_kind(backend):
    """The judge's forcing: the JSON between the free parts, the rest of a quote once only
    one line of the item fits, the rest of PASS/REJECT. Fewer decoding steps, and still an
    answer the grammar allows with quotes from the item."""
    grammar = answer_grammar(TEXT)
    plain = [ChatRequest(review(p), grammar=grammar, max_tokens=120) for p in ("strict", "lenient")]
    unforced = chat_batch(backend, plain)
    steps_unforced = backend._batched.last_steps
    forced_requests = [
        ChatRequest(r.messages, grammar=grammar, max_tokens=120, forcing=answer_forcing(TEXT))
        for r in plain
    ]
    forced = chat_batch(backend, forced_requests)
    steps_forced = backend._batched.last_steps
    for answer in forced:
        data = json.loads(answer.text)
        assert answer.text.startswith('{"reason": "') and answer.text.endswith('"}')
        assert data["verdict"] in ("PASS", "REJECT")
        assert data["evidence"] and all(quote_found(q, TEXT) for q in data["evidence"])
        assert answer.completion_tokens > steps_forced  # some tokens were never decoded
    assert [json.loads(a.text)["verdict"] for a in unforced] == [
        json.loads(a.text)["verdict"] for a in forced
    ]
    assert steps_forced < 0.8 * steps_unforced, (steps_forced, steps_unforced)


def test_forced_text_the_grammar_refuses_is_not_forced(backend):
    """Accepting a token the grammar refuses would abort the process: such forcing stops,
    and the model goes on within its grammar."""
    grammar = answer_grammar(TEXT)
    (answer,) = chat_batch(
        backend,
        [ChatRequest(review("strict"), grammar=grammar, max_tokens=120, forcing=lambda _: "}}}")],
    )
    data = json.loads(answer.text)
    assert data["verdict"] in ("PASS", "REJECT")


def _patch_of_is_even(draft: bool) -> ChatRequest:
    from referee.checks.arbitration.oracle_prompts import prompts

    p = prompts()
    ask = p.patch.format(
        call="is_even(2)", produced="False", truth="True", function=TEXT, name="is_even"
    )
    messages = [{"role": "system", "content": p.patch_system}, {"role": "user", "content": ask}]
    return ChatRequest(messages, max_tokens=120, until_code_block=True, draft=draft)


def test_a_patch_copying_its_function_is_drafted_and_the_answer_is_what_decoding_gives(backend):
    """A patch rewrites the function it was shown: the copied stretches are drafted from
    the prompt and kept while the sampler picks them, the changed line is not (the drafts
    after it leave the cache), and the answer is the one decoding token by token gives."""
    from referee.checks.judge import batched

    old = backend._batched
    try:
        backend._batched = batched.BatchedGenerator(backend._llm, n_seq=4, draft=0)
        (plain,) = chat_batch(backend, [_patch_of_is_even(draft=True)])
        plain_steps = backend._batched.last_steps
        backend._batched.close()
        backend._batched = batched.BatchedGenerator(backend._llm, n_seq=4)
        (drafted,) = chat_batch(backend, [_patch_of_is_even(draft=True)])
        steps, (evaluated, kept) = backend._batched.last_steps, backend._batched.last_drafted
        (undrafted,) = chat_batch(backend, [_patch_of_is_even(draft=False)])
        not_asked = backend._batched.last_drafted
    finally:
        if backend._batched is not None:
            backend._batched.close()
        backend._batched = old
    assert "def is_even(n: int) -> bool:" in plain.text and "return" in plain.text, plain.text
    assert drafted.text == plain.text and undrafted.text == plain.text
    assert drafted.completion_tokens == plain.completion_tokens
    assert 0 < kept < evaluated  # the copy was drafted; the draft past the fix was refused
    assert steps < plain_steps - kept / 2, (steps, plain_steps, kept)
    assert not_asked == (0, 0)  # only a request that asks is drafted
