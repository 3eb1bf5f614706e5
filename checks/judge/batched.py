"""Several answers from one in-process model at once: batched decoding with llama.cpp.

The judge asks one question from several perspectives and the arbiter asks for k oracle
programs from one prompt. Decoding one token costs a CPU about as much for three sequences
as for one (it is bound by reading the weights, not by arithmetic), so the requests are
decoded together, one token of each per step, in a context of their own:

* the prompts' common prefix is evaluated once, then shared with every sequence
  (``llama_memory_seq_cp``), so only the differing tails cost prompt time;
* each sequence samples with its own chain (greedy at temperature 0, else top-k/top-p/
  min-p/temperature with its own seed), so a batch of seeded oracles is as independent as
  the same calls made one by one;
* a grammar is checked against the sampled token first and applied to the whole vocabulary
  only when that token breaks it — what llama.cpp's server does — because constraining
  151,000 candidates every step halves the speed, and the model mostly follows the format;
* an answer that copies its prompt and asks for it (a patch rewrites the function it was
  shown) is *drafted*: where its last tokens occur in its prompt, the prompt's next tokens
  are evaluated with the sampled one in the same step, and each is kept only while the
  sequence's own sampler, asked at every position as it would have been, picks it
  (:meth:`BatchedGenerator._verify`). What the sampler picks is the answer whatever was
  drafted. A CPU evaluates several tokens in one call faster than one by one
  (bench/drafting.py: a patch by the 1.5B 11 % sooner on an AMD EPYC; three oracles or
  the judge's three perspectives, which copy less, 4-10 % later: they do not ask for it).

Only :class:`~referee.checks.judge.backend.LlamaCppBackend` uses this, under its lock.
"""

from __future__ import annotations

import ctypes
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from referee.checks.progress import IDLE, Work

# llama_token_data is {int32 id; float logit; float p}: 12 bytes, no padding
_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])


class Stopped(Exception):
    """The work :meth:`BatchedGenerator.generate` did was asked to stop."""


@dataclass(frozen=True)
class Request:
    """One answer to generate."""

    tokens: Sequence[int]
    max_tokens: int
    temperature: float = 0.0
    seed: int = 0
    grammar: str | None = None
    # stop once the answer holds a complete ``` block, or once it loops (:func:`looping`)
    until_code_block: bool = False
    # Given the answer so far, the text that must follow (appended without decoding it
    # token by token), "" where the model chooses, None when the answer is complete.
    forcing: Callable[[str], str | None] | None = None
    # draft the answer's copied stretches from the prompt (see BatchedGenerator._verify)
    draft: bool = False


_MAX_FORCED = 96  # tokens one sequence may have forced in one step (the batch holds 512)
# prompt tokens drafted after a sampled token where the answer copies its prompt, at most:
# a sequence drafts 4 at first, twice as many after a draft it kept whole (up to this), as
# many as it kept after one it did not. (The 1.5B rewriting a 14-line function on an AMD
# EPYC, drafting a fixed number every step: 14 % less time at 16 or 24, 9 % at 8; the rows
# a CPU evaluates together cost it less than one by one, the more of them the less, and a
# refused draft wastes its rows. With the ramp, bench/drafting.py: 11 %.)
DRAFT = 16
_DRAFT_MATCH = 3  # the answer's last tokens that must occur in the prompt to draft from it

_BLOCK = re.compile(rb"```[^\n]*\n.*?\n\s*```", re.DOTALL)

# A code answer in a loop (see :func:`looping`): its last _LOOP_TAIL bytes repeat a unit of
# at most _LOOP_PERIOD bytes, or its last _LOOP_LINES lines are one line with only its
# numbers changed.
_LOOP_TAIL = 200
_LOOP_PERIOD = 100
_LOOP_LINES = 16
_DIGITS = re.compile(rb"\d+")
_WORD = re.compile(rb"[A-Za-z_]{2,}")


def looping(text: bytes) -> bool:
    """Whether a code answer has fallen into a loop a small model does not leave: its
    last 200 bytes repeat a unit of at most 100 (``\\x1b[1m\\x1b[3m…`` in a comment,
    ``)))…``), or its last 16 lines are one line with a word in it and only its numbers
    changed (``discard("UNICODE_9")``, ``discard("UNICODE_10")``, …). Cut there, the
    answer fails to run as one cut at its token limit would, hundreds of tokens sooner, and
    the sequences decoded beside it stop waiting for it.

    Numeric tables (``1,`` a line, rows of a matrix) have no word and are left alone; on
    3,000 modules of CPython's library and its site-packages, only six generated files
    (parser tables, test data) hold such a stretch anywhere."""
    if len(text) > _LOOP_TAIL:
        tail = text[-_LOOP_TAIL:]
        for period in range(1, min(_LOOP_PERIOD, len(text) - _LOOP_TAIL) + 1):
            if text[-_LOOP_TAIL - period : -period] == tail:
                return True
    lines = text.rsplit(b"\n", _LOOP_LINES + 1)[1:-1]  # the last complete lines
    if len(lines) < _LOOP_LINES:
        return False
    shape = _DIGITS.sub(b"0", lines[0])
    return bool(_WORD.search(shape)) and all(_DIGITS.sub(b"0", line) == shape for line in lines[1:])


@dataclass
class Output:
    data: bytes
    completion_tokens: int
    prompt_tokens: int


class _Sequence:
    def __init__(self, lc: Any, vocab: Any, request: Request) -> None:
        self.lc = lc
        self.request = request
        self.tokens: list[int] = []  # the answer's tokens, forced ones included
        self.text = b""  # what the tokens spell, for the stop rule and the forcing
        self.prefix: list[int] = []  # forced before the first decoding step
        self.done = False
        # drafting: where each run of _DRAFT_MATCH tokens of the prompt last occurs (the
        # index after it), the drafts evaluated and not yet verified, and where in the
        # prompt the last accepted draft ended
        self.grams: dict[tuple[int, ...], int] | None = None
        self.pending: list[int] = []
        self.cursor = -1
        self.draft_len = 4  # tokens this sequence drafts next (see DRAFT)
        self.drafted = 0  # draft tokens evaluated, for the record
        self.accepted = 0  # of them, kept
        params = lc.llama_sampler_chain_default_params()
        self.chain = lc.llama_sampler_chain_init(params)
        if request.temperature <= 0.0:
            lc.llama_sampler_chain_add(self.chain, lc.llama_sampler_init_greedy())
        else:
            lc.llama_sampler_chain_add(self.chain, lc.llama_sampler_init_top_k(40))
            lc.llama_sampler_chain_add(self.chain, lc.llama_sampler_init_top_p(0.95, 1))
            lc.llama_sampler_chain_add(self.chain, lc.llama_sampler_init_min_p(0.05, 1))
            lc.llama_sampler_chain_add(self.chain, lc.llama_sampler_init_temp(request.temperature))
            lc.llama_sampler_chain_add(
                self.chain, lc.llama_sampler_init_dist(request.seed & 0xFFFFFFFF)
            )
        self.grammar = None
        if request.grammar is not None:
            self.grammar = lc.llama_sampler_init_grammar(
                vocab, request.grammar.encode("utf-8"), b"root"
            )
            if not self.grammar:
                self.free()
                raise ValueError("the grammar could not be parsed")

    def free(self) -> None:
        if self.chain:
            self.lc.llama_sampler_free(self.chain)
            self.chain = None
        if self.grammar:
            self.lc.llama_sampler_free(self.grammar)
            self.grammar = None


class BatchedGenerator:
    """A second llama.cpp context over an already loaded model, for up to ``n_seq``
    sequences decoded together."""

    def __init__(self, llm: Any, *, n_seq: int = 4, n_ctx: int = 8192, draft: int = DRAFT) -> None:
        import llama_cpp as lc

        self.lc = lc
        self.llm = llm
        self.n_seq = n_seq
        self.draft = max(0, draft)  # tokens drafted a step where the answer copies; 0: off
        self.n_ctx = n_ctx
        self.model = llm.model
        self.vocab = lc.llama_model_get_vocab(self.model)
        self.n_vocab = lc.llama_vocab_n_tokens(self.vocab)
        params = lc.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = 512
        params.n_ubatch = 512
        params.n_seq_max = n_seq
        params.kv_unified = True  # the sequences share one cache: the prefix is stored once
        params.n_threads = llm.context_params.n_threads
        params.n_threads_batch = llm.context_params.n_threads_batch
        self.ctx = lc.llama_init_from_model(self.model, params)
        if not self.ctx:
            raise RuntimeError("llama.cpp could not create a context for batched decoding")
        self.batch = lc.llama_batch_init(512, 0, n_seq)
        self._kept: list[int] = []  # the tokens at positions 0.. of sequence 0, kept
        self.last_steps = 0  # decoding steps the last batch took (after its prompts)
        self.last_drafted = (0, 0)  # the last batch's draft tokens: (evaluated, kept)
        self._candidates = np.empty(self.n_vocab, dtype=_TOKEN_DATA)
        self._candidates["id"] = np.arange(self.n_vocab, dtype=np.int32)

    def close(self) -> None:
        if self.ctx:
            self.lc.llama_batch_free(self.batch)
            self.lc.llama_free(self.ctx)
            self.ctx = None

    def __del__(self) -> None:  # pragma: no cover - interpreter shutdown order varies
        try:  # noqa: SIM105 - no module globals here: they may be gone at shutdown
            self.close()
        except Exception:
            pass

    # ----------------------------------------------------------------- the batch

    def _put(self, index: int, token: int, pos: int, seqs: Sequence[int], logits: bool) -> None:
        b = self.batch
        b.token[index] = token
        b.pos[index] = pos
        b.n_seq_id[index] = len(seqs)
        for j, seq in enumerate(seqs):
            b.seq_id[index][j] = seq
        b.logits[index] = logits

    def _decode(self, count: int) -> None:
        self.batch.n_tokens = count
        status = self.lc.llama_decode(self.ctx, self.batch)
        if status != 0:
            raise RuntimeError(f"llama_decode failed ({status}): the prompts may not fit")

    def _feed(
        self,
        tokens: Sequence[int],
        start: int,
        seqs: Sequence[int],
        work: Work = IDLE,
    ) -> None:
        """Evaluate ``tokens`` at positions from ``start`` for ``seqs``, 512 at a time;
        logits only for the last token. ``work`` is asked to stop between chunks (in the
        model process that question is also the sign of life of a long prompt)."""
        for chunk in range(0, len(tokens), 512):
            if chunk and work.cancelled():
                raise Stopped
            part = tokens[chunk : chunk + 512]
            for i, token in enumerate(part):
                last = chunk + i == len(tokens) - 1
                self._put(i, token, start + chunk + i, seqs, last)
            self._decode(len(part))

    # ----------------------------------------------------------------- sampling

    def _sample(self, seq: _Sequence, index: int) -> int:
        lc = self.lc
        token = lc.llama_sampler_sample(seq.chain, self.ctx, index)
        if self._allowed(seq, token):
            return token
        # the free choice breaks the grammar: constrain the whole vocabulary, sample again
        logits = np.ctypeslib.as_array(lc.llama_get_logits_ith(self.ctx, index), (self.n_vocab,))
        candidates = self._candidates
        candidates["logit"] = logits
        candidates["p"] = 0.0
        pointer = candidates.ctypes.data_as(ctypes.POINTER(lc.llama_token_data))
        array = lc.llama_token_data_array(pointer, self.n_vocab, -1, False)
        lc.llama_sampler_apply(seq.grammar, ctypes.byref(array))
        lc.llama_sampler_apply(seq.chain, ctypes.byref(array))
        if array.selected < 0:
            raise RuntimeError("the grammar allows no token here")
        return int(candidates["id"][array.selected])

    def _allowed(self, seq: _Sequence, token: int) -> bool:
        """Whether the sequence's grammar accepts ``token`` next (without accepting it)."""
        if seq.grammar is None:
            return True
        lc = self.lc
        single = (lc.llama_token_data * 1)(lc.llama_token_data(token, 1.0, 0.0))
        array = lc.llama_token_data_array(single, 1, -1, False)
        lc.llama_sampler_apply(seq.grammar, ctypes.byref(array))
        return not math.isinf(single[0].logit)

    @staticmethod
    def _forcing_says(seq: _Sequence) -> str | None:
        """What the request's forcing says follows the answer so far: the text, "" for
        nothing (no forcing, the answer ends inside a character, or the forcing failed:
        it is an optimisation only), None when the answer is complete."""
        if seq.request.forcing is None:
            return ""
        try:
            return seq.request.forcing(seq.text.decode("utf-8"))
        except Exception:
            return ""

    def _forced(self, seq: _Sequence, limit: int) -> list[int] | None:
        """The tokens the request's forcing appends now, each checked against and accepted
        by the grammar (a token the grammar refuses ends the forcing: accepting it would
        abort the process), at most ``limit``; None when the answer is complete."""
        if limit <= 0:
            return []
        text = self._forcing_says(seq)
        if text is None:
            return None
        if not text:
            return []
        tokens: list[int] = []
        for token in self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False):
            if len(tokens) >= limit or not self._allowed(seq, token):
                break
            if seq.grammar is not None:
                self.lc.llama_sampler_accept(seq.grammar, token)
            tokens.append(token)
        if tokens:
            seq.text += self.llm.detokenize(tokens)
        return tokens

    def generate(self, requests: Sequence[Request], work: Work = IDLE) -> list[Output]:
        """The answers to ``requests``, in order. ``work`` is asked to stop every step."""
        if not requests:
            return []
        if len(requests) > self.n_seq:
            out: list[Output] = []
            for start in range(0, len(requests), self.n_seq):
                out.extend(self.generate(requests[start : start + self.n_seq], work))
            return out
        lc = self.lc
        memory = lc.llama_get_memory(self.ctx)
        prompts = [list(r.tokens) for r in requests]
        if not all(prompts):
            raise ValueError("an empty prompt")
        sequences: list[_Sequence] = []
        try:
            for request in requests:
                sequences.append(_Sequence(lc, self.vocab, request))
            for seq, prompt in zip(sequences, prompts, strict=True):
                # what every answer starts with is evaluated with the prompt
                seq.prefix = self._forced(seq, seq.request.max_tokens - 1) or []
                prompt.extend(seq.prefix)
            return self._generate(sequences, prompts, memory, work)
        finally:
            for seq in sequences:
                seq.free()

    def _generate(
        self,
        sequences: list[_Sequence],
        prompts: list[list[int]],
        memory: Any,
        work: Work,
    ) -> list[Output]:
        lc = self.lc
        common = _common_prefix(prompts)
        self._check_room(prompts, [seq.request for seq in sequences], common)
        reuse = self._reset_memory(memory, prompts, common)
        ok = False
        try:
            rows, positions = self._evaluate_prompts(memory, prompts, common, reuse, work)
            self._decode_answers(sequences, rows, positions, memory, work)
            outputs = [
                Output(
                    data=self.llm.detokenize(seq.prefix + seq.tokens)
                    if seq.prefix or seq.tokens
                    else b"",
                    completion_tokens=len(seq.prefix) + len(seq.tokens),
                    prompt_tokens=len(prompt) - len(seq.prefix),
                )
                for seq, prompt in zip(sequences, prompts, strict=True)
            ]
            ok = True
            return outputs
        finally:
            if ok and lc.llama_memory_seq_rm(memory, 0, common, -1):
                self._kept = prompts[0][:common]
            else:
                lc.llama_memory_clear(memory, True)

    def _check_room(self, prompts: list[list[int]], requests: list[Request], common: int) -> None:
        """ValueError unless the cache can hold the shared prefix once, every tail, and
        every answer."""
        needed = common + sum(len(p) - common for p in prompts)
        needed += sum(r.max_tokens for r in requests)
        if needed > self.n_ctx:
            raise ValueError(
                f"the prompts and their answers need {needed} tokens of context; the batch "
                f"has {self.n_ctx}"
            )

    def _reset_memory(self, memory: Any, prompts: list[list[int]], common: int) -> int:
        """Empty every sequence but what the last call left in sequence 0 (its prompts'
        common prefix), as far as it matches: the system prompt and the instructions
        before the item cost nothing. How many of its tokens are kept."""
        lc = self.lc
        reuse = 0
        while reuse < min(common, len(self._kept)) and self._kept[reuse] == prompts[0][reuse]:
            reuse += 1
        self._kept = []
        if not lc.llama_memory_seq_rm(memory, 0, reuse, -1):
            lc.llama_memory_clear(memory, True)
            reuse = 0
        for s in range(1, self.n_seq):
            lc.llama_memory_seq_rm(memory, s, -1, -1)
        return reuse

    def _evaluate_prompts(
        self,
        memory: Any,
        prompts: list[list[int]],
        common: int,
        reuse: int,
        work: Work,
    ) -> tuple[list[int], list[int]]:
        """Evaluate the prompts: the common prefix once (in sequence 0, copied to the
        others), then the tails, packed into as few decoding calls as the batch allows
        (one, for the judge's perspectives), with logits for the last token of each.
        (each sequence's logits row, each sequence's last position)."""
        lc = self.lc
        if common > reuse:
            self._feed(prompts[0][reuse:common], reuse, [0], work)
        for s in range(1, len(prompts)):
            lc.llama_memory_seq_cp(memory, 0, s, -1, -1)
        positions = [len(p) - 1 for p in prompts]
        body = [(s, pos) for s, p in enumerate(prompts) for pos in range(common, len(p) - 1)]
        lasts = [(s, len(p) - 1) for s, p in enumerate(prompts)]
        if len(body) + len(lasts) > 512:  # the last tokens go in the final call
            for chunk in range(0, len(body), 512):
                if work.cancelled():
                    raise Stopped
                part = body[chunk : chunk + 512]
                for i, (s, pos) in enumerate(part):
                    self._put(i, prompts[s][pos], pos, [s], False)
                self._decode(len(part))
            body = []
        for i, (s, pos) in enumerate(body + lasts):
            self._put(i, prompts[s][pos], pos, [s], i >= len(body))
        self._decode(len(body) + len(lasts))
        return [len(body) + s for s in range(len(prompts))], positions

    def _decode_answers(
        self,
        sequences: list[_Sequence],
        rows: list[int],
        positions: list[int],
        memory: Any,
        work: Work,
    ) -> None:
        """Sample every sequence's answer, one step for all of them at a time, until each
        is done (end of generation, its token limit, its code block, its forcing). A step
        evaluates each sequence's sampled token, what its forcing appends and its drafts."""
        self.last_steps = 0
        active = list(range(len(sequences)))
        rows_of = {s: [row] for s, row in zip(active, rows, strict=True)}
        while active:
            if work.cancelled():
                raise Stopped
            step: list[tuple[int, list[int], int]] = []  # (sequence, tokens, drafts among them)
            for s in active:
                tokens = self._verify(sequences[s], rows_of[s], positions, s, memory)
                if tokens is not None:
                    drafts = self._drafts(sequences[s], len(tokens))
                    sequences[s].pending = drafts
                    step.append((s, tokens + drafts, len(drafts)))
            if not step:
                break
            index = 0
            for s, tokens, drafts in step:
                rows_of[s] = []
                for i, token in enumerate(tokens):
                    positions[s] += 1
                    wanted = i >= len(tokens) - 1 - drafts  # the last sampled one, each draft
                    self._put(index, token, positions[s], [s], wanted)
                    if wanted:
                        rows_of[s].append(index)
                    index += 1
            self._decode(index)
            self.last_steps += 1
            active = [s for s, _, _ in step]
        self.last_drafted = (
            sum(seq.drafted for seq in sequences),
            sum(seq.accepted for seq in sequences),
        )

    def _verify(
        self, seq: _Sequence, rows: list[int], positions: list[int], s: int, memory: Any
    ) -> list[int] | None:
        """The tokens sequence ``s`` evaluates next, after sampling from each of its logits
        ``rows``: the row of its last sampled (or forced) token, then one per draft. While
        the sampler picks the draft evaluated after a row, that draft is the answer's next
        token and is already in the cache; at the first it does not pick, the drafts from
        there on leave the cache and what it picked is evaluated next. None when done."""
        pending, seq.pending = seq.pending, []
        first = positions[s] - len(pending) + 1  # the first draft's position
        for j, row in enumerate(rows):
            tokens = self._next_tokens(seq, row)
            if tokens is None:
                return None  # done: what is left in its cache goes with the batch
            if j < len(pending) and tokens[0] == pending[j]:
                seq.accepted += 1
                if j == len(pending) - 1:
                    seq.draft_len = min(self.draft, 2 * seq.draft_len)  # kept whole
                seq.cursor += 1  # drafts are only made from a cursor in the prompt
                if len(tokens) == 1:
                    continue  # evaluated already: verify the next draft
                tokens, keep = tokens[1:], first + j + 1  # forced text follows it
            else:
                keep = first + j
                if j < len(pending):
                    seq.cursor = -1  # the answer left the copy: look it up again
                    seq.draft_len = max(1, j)
            if keep <= positions[s]:
                if not self.lc.llama_memory_seq_rm(memory, s, keep, -1):
                    raise RuntimeError("llama.cpp kept refused drafts in its cache")
                positions[s] = keep - 1
            return tokens
        raise AssertionError("a sequence verified every draft without a row after them")

    def _drafts(self, seq: _Sequence, evaluated: int) -> list[int]:
        """The prompt's tokens that follow where the answer's last tokens occur in it (the
        answer copies from there), to evaluate after this step's ``evaluated`` tokens; none
        where the answer's tail is not in the prompt, or its forcing is writing."""
        room = seq.request.max_tokens - len(seq.prefix) - len(seq.tokens) - 1
        count = min(self.draft, seq.draft_len, room) if seq.request.draft else 0
        if count <= 0 or len(seq.tokens) < _DRAFT_MATCH or evaluated > 1:
            seq.cursor = -1
            return []
        tail = tuple(seq.tokens[-_DRAFT_MATCH:])
        prompt = seq.request.tokens
        # the copy went on with the token just sampled, or it is looked up in the prompt
        at = seq.cursor + 1 if seq.cursor >= 0 else -1
        if at < _DRAFT_MATCH or tuple(prompt[at - _DRAFT_MATCH : at]) != tail:
            if seq.grams is None:
                seq.grams = {
                    tuple(prompt[i - _DRAFT_MATCH : i]): i for i in range(_DRAFT_MATCH, len(prompt))
                }
            at = seq.grams.get(tail, -1)
        seq.cursor = at if 0 <= at < len(prompt) else -1
        if seq.cursor < 0:
            return []
        drafts = list(prompt[at : at + count])
        seq.drafted += len(drafts)
        return drafts

    def _next_tokens(self, seq: _Sequence, row: int) -> list[int] | None:
        """One step of a sequence: the token sampled from its logits ``row`` and what its
        forcing appends, to be evaluated next; None when the sequence is done."""
        lc = self.lc
        token = self._sample(seq, row)
        if seq.grammar is not None:
            lc.llama_sampler_accept(seq.grammar, token)
        if lc.llama_vocab_is_eog(self.vocab, token):
            seq.done = True
            return None
        seq.tokens.append(token)
        room = seq.request.max_tokens - len(seq.prefix) - len(seq.tokens)
        if room <= 0:
            seq.done = True
            return None
        if seq.request.until_code_block or seq.request.forcing is not None:
            seq.text += self.llm.detokenize([token])
        if seq.request.until_code_block and b"```" in seq.text[-12:] and _BLOCK.search(seq.text):
            seq.done = True
            return None
        forced = self._forced(seq, min(room - 1, _MAX_FORCED))
        if forced is None:
            seq.done = True  # complete: nothing more to decode
            return None
        seq.tokens.extend(forced)
        if forced and self._forcing_says(seq) is None:
            seq.done = True  # complete with the forced text: no need to evaluate it
            return None
        if seq.request.until_code_block and looping(seq.text):
            seq.done = True  # a loop: the rest of its token limit would be more of it
            return None
        return [token, *forced]


def _common_prefix(prompts: list[list[int]]) -> int:
    """The prompts' common prefix, less one token so every sequence has a tail to sample
    from."""
    common = 0
    shortest = min(len(p) for p in prompts)
    while common < shortest - 1 and all(p[common] == prompts[0][common] for p in prompts):
        common += 1
    return common
