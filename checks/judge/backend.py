"""The model behind the judge and the oracles: one interface, two real backends.

* :class:`LlamaCppBackend` runs a GGUF file in this process with llama-cpp-python (the
  embedded default). Consecutive prompts that share a prefix reuse its KV cache, so the
  judge puts the text under review first and the perspective's instruction last.
* :class:`OpenAIBackend` talks to any OpenAI-compatible HTTP server (llama-server, vLLM,
  Ollama, ``python -m llama_cpp.server``): the path by which a team shares one GPU.

Both answer :meth:`Backend.chat` with plain text; when a JSON schema is given, the output is
constrained to it (llama.cpp grammar / the server's ``response_format``). Callers still
validate what comes back: a server may ignore the constraint.

:func:`~referee.checks.judge.opening.open_backend` builds one from
:class:`~referee.checks.configuration.JudgeConfig` and turns every way that can fail
(llama-cpp-python not installed, model missing or corrupt, server unreachable) into one
:class:`BackendError` whose message says what to do.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from referee.checks.judge import models as model_files
from referee.checks.progress import IDLE, Work

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": "..."}


class BackendError(Exception):
    """The judge's model cannot be used; the message says why and what to do."""


class BatchCancelled(Exception):
    """:func:`chat_batch` stopped because its work was asked to stop."""


@dataclass(frozen=True)
class Generation:
    """One answer: its text and what it cost."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class ChatRequest:
    """One question: to :meth:`Backend.chat`, or one of a batch (see :func:`chat_batch`)."""

    messages: Sequence[Message]
    schema: dict[str, Any] | None = None
    grammar: str | None = None
    max_tokens: int = 256
    temperature: float = 0.0
    seed: int | None = None
    # Stop once the answer holds a complete fenced code block (the part a caller uses of a
    # program-writing answer), or once it falls into a loop (batched.looping). Only the
    # in-process model honours it; others answer in full.
    until_code_block: bool = False
    # Given the answer so far, the text its grammar forces next ("" where the model
    # chooses, None once complete): the in-process model appends it without decoding it
    # token by token. An optimisation only — other backends ignore it.
    forcing: Callable[[str], str | None] | None = None
    # An answer that mostly copies its prompt (a patch rewriting the function it was
    # shown): the in-process model drafts the copied stretches (batched.DRAFT). Others
    # ignore it. Off by default: where an answer copies little, the drafts cost time.
    draft: bool = False


class Backend:
    """What the judge and the oracle writer need from a model.

    ``schema`` constrains the answer to a JSON schema; ``grammar`` (llama.cpp GBNF), where
    the backend can use it, is the same constraint written out — a backend that cannot use
    a grammar uses the schema. The backends here answer :meth:`chat`'s question as one
    :class:`ChatRequest`, in :meth:`ask`; any object with an ``identity`` and a ``chat`` of
    this signature serves as well (the tests' fakes).
    """

    @property
    def identity(self) -> str:
        """Stable id of the weights behind this backend (part of every cache key)."""
        raise NotImplementedError

    def chat(
        self,
        messages: Sequence[Message],
        *,
        schema: dict[str, Any] | None = None,
        grammar: str | None = None,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> Generation:
        return self.ask(ChatRequest(messages, schema, grammar, max_tokens, temperature, seed))

    def ask(self, request: ChatRequest) -> Generation:
        """The answer to one question."""
        raise NotImplementedError


def chat_batch(
    backend: Any,
    requests: Sequence[ChatRequest],
    *,
    work: Work = IDLE,
) -> list[Generation]:
    """Answers to several questions, decoded together where the backend can (llama.cpp in
    process: one batch; an HTTP server: concurrent requests it batches itself), else one by
    one. ``work`` is asked to stop between decoding steps (or between questions); when it
    is, :class:`BatchCancelled` is raised."""
    if not requests:
        return []
    batch = getattr(backend, "chat_batch", None)
    if batch is not None and (
        len(requests) > 1 or requests[0].until_code_block or requests[0].forcing is not None
    ):
        return list(batch(requests, work=work))
    out = []
    for r in requests:
        if work.cancelled():
            raise BatchCancelled
        out.append(ask_one(backend, r))
    return out


def ask_one(backend: Any, r: ChatRequest) -> Generation:
    """One request through :meth:`Backend.chat`."""
    return backend.chat(
        r.messages,
        schema=r.schema,
        grammar=r.grammar,
        max_tokens=r.max_tokens,
        temperature=r.temperature,
        seed=r.seed,
    )


# ------------------------------------------------------------------------ llama-cpp


class LlamaCppBackend(Backend):
    """A GGUF model loaded in this process. Thread-safe: calls are serialised."""

    def __init__(
        self,
        path: Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        identity: str | None = None,
        extra_buffers: bool = True,
    ) -> None:
        try:
            import llama_cpp
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise BackendError(
                "the judge needs llama-cpp-python: pip install 'referee[judge]' "
                '(or set judge.backend = "openai" and judge.url to a model server)'
            ) from exc
        self.path = Path(path)
        self._identity = identity or _file_identity(self.path)
        self._lock = threading.Lock()
        threads = n_threads or default_threads()
        try:
            with _model_params(extra_buffers=extra_buffers):
                self._llm = llama_cpp.Llama(
                    model_path=str(self.path),
                    n_ctx=n_ctx,
                    n_threads=threads,
                    # prompts and batches of several sequences decode on these threads;
                    # left out, llama-cpp-python gives them every core, whatever
                    # judge.threads says (they spin beside the other processes)
                    n_threads_batch=threads,
                    verbose=False,
                )
        except (ValueError, RuntimeError, OSError) as exc:
            raise BackendError(
                f"cannot load the model {self.path}: {exc}. Reinstall it with "
                "`referee model install` or point judge.model at a valid GGUF file"
            ) from exc
        # What llama.cpp was actually given (the safe runtime turns it off).
        self.extra_buffers = bool(getattr(self._llm.model_params, "use_extra_bufts", True))
        self._grammars: dict[str, Any] = {}
        self._batched: Any = None
        self._formatter: Any = None

    @property
    def identity(self) -> str:
        return self._identity

    def close(self) -> None:
        """Free the batch context and the model now (also done at interpreter exit, while
        llama-cpp-python's module is still there to free them)."""
        with self._lock:
            if self._batched is not None:
                self._batched.close()
                self._batched = None
            close = getattr(self._llm, "close", None)
            if close is not None:
                close()

    def _prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        """The chat as the model's own template lays it out, as tokens — what
        ``create_chat_completion`` feeds the model."""
        if self._formatter is None:
            from llama_cpp import llama_chat_format

            llm = self._llm
            template = llm.metadata.get("tokenizer.chat_template")
            if template is None:
                raise BackendError("the model has no chat template; batched decoding needs one")
            eos, bos = llm.token_eos(), llm.token_bos()
            self._formatter = llama_chat_format.Jinja2ChatFormatter(
                template=template,
                eos_token=llm._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llm._model.token_get_text(bos) if bos != -1 else "",
                stop_token_ids=[eos],
            )
        result = self._formatter(messages=list(messages))
        return self._llm.tokenize(
            result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True
        )

    def chat_batch(
        self,
        requests: Sequence[ChatRequest],
        *,
        work: Work = IDLE,
    ) -> list[Generation]:
        """Several answers decoded as one batch (see :mod:`referee.checks.judge.batched`)."""
        from referee.checks.judge import batched

        with self._lock:
            try:
                if self._batched is None:
                    self._batched = batched.BatchedGenerator(self._llm, n_seq=4)
                jobs = []
                for r in requests:
                    grammar = r.grammar
                    if grammar is None and r.schema is not None:
                        from llama_cpp.llama_grammar import json_schema_to_gbnf

                        grammar = json_schema_to_gbnf(json.dumps(r.schema))
                    jobs.append(
                        batched.Request(
                            tokens=self._prompt_tokens(r.messages),
                            max_tokens=r.max_tokens,
                            temperature=r.temperature,
                            seed=r.seed if r.seed is not None else 0,
                            grammar=grammar,
                            until_code_block=r.until_code_block,
                            forcing=r.forcing,
                            draft=r.draft,
                        )
                    )
                outputs = self._batched.generate(jobs, work)
            except batched.Stopped:
                raise BatchCancelled from None
            except (ValueError, RuntimeError) as exc:
                raise BackendError(f"the model could not answer: {exc}") from exc
        return [
            Generation(
                text=o.data.decode("utf-8", errors="replace"),
                prompt_tokens=o.prompt_tokens,
                completion_tokens=o.completion_tokens,
            )
            for o in outputs
        ]

    def _grammar(self, schema: dict[str, Any] | None, grammar: str | None) -> Any:
        from llama_cpp import LlamaGrammar

        key = grammar if grammar is not None else json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            if len(self._grammars) > 64:
                self._grammars.clear()
            self._grammars[key] = (
                LlamaGrammar.from_string(grammar, verbose=False)
                if grammar is not None
                else LlamaGrammar.from_json_schema(key, verbose=False)
            )
        return self._grammars[key]

    def ask(self, request: ChatRequest) -> Generation:
        kwargs: dict[str, Any] = {
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.temperature == 0.0:
            kwargs["top_k"] = 1
        with self._lock:
            if request.schema is not None or request.grammar is not None:
                kwargs["grammar"] = self._grammar(request.schema, request.grammar)
            try:
                out = self._llm.create_chat_completion(messages=list(request.messages), **kwargs)
            except ValueError as exc:  # e.g. the prompt does not fit the context
                raise BackendError(f"the model could not answer: {exc}") from exc
        return _completion(out["choices"][0]["message"]["content"] or "", out)


def _completion(text: str, answer: dict[str, Any]) -> Generation:
    """An OpenAI-shaped chat completion's answer (llama.cpp's and the servers'), with the
    tokens its ``usage`` counts (none where it counts none)."""
    usage = answer.get("usage") or {}
    return Generation(
        text=text,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
    )


_PARAMS_LOCK = threading.Lock()


@contextlib.contextmanager
def _model_params(*, extra_buffers: bool):
    """While a model loads: llama.cpp's default model parameters with ``use_extra_bufts``
    set as asked. ``Llama()`` takes no such argument; it reads the defaults from
    ``llama_model_default_params``, so that is what is wrapped (under a lock, for the
    duration of the load only). ``extra_buffers=False`` is the ``safe`` runtime: no
    repacked (AMX) weight buffers — see :mod:`referee.checks.judge.runtime`."""
    if extra_buffers:
        yield
        return
    import llama_cpp.llama_cpp as native

    with _PARAMS_LOCK:
        original = native.llama_model_default_params

        def safe_defaults() -> Any:
            params = original()
            params.use_extra_bufts = False
            return params

        native.llama_model_default_params = safe_defaults
        try:
            yield
        finally:
            native.llama_model_default_params = original


THREADS_ENV = "REFEREE_JUDGE_THREADS"


def default_threads() -> int:
    """The CPU threads a local model decodes on when ``judge.threads`` is not set: every
    core, or what :data:`THREADS_ENV` says — for a machine the model shares with other
    busy processes (a CI that runs tests in parallel), where llama.cpp's threads, which
    spin while they wait for one another, are slowed many times over by one more
    runnable process than there are cores. Raises :class:`BackendError` for a value
    that is not a positive whole number."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return max(1, os.cpu_count() or 1)
    try:
        threads = int(raw)
    except ValueError:
        threads = 0
    if not 1 <= threads <= 512:
        raise BackendError(f"{THREADS_ENV}={raw!r} is not a number of threads from 1 to 512")
    return threads


def _file_identity(path: Path) -> str:
    """The pinned sha256 for a known model, else a cheap fingerprint of the file."""
    for model in model_files.MODELS.values():
        if path.name == model.filename:
            return model.sha256[:16]
    try:
        stat = path.stat()
    except OSError:
        return path.name
    head = hashlib.sha256()
    with path.open("rb") as handle:
        head.update(handle.read(1 << 20))
    head.update(str(stat.st_size).encode())
    return head.hexdigest()[:16]


# --------------------------------------------------------------------------- OpenAI


class OpenAIBackend(Backend):
    """An OpenAI-compatible chat-completions endpoint (``{url}/chat/completions``)."""

    def __init__(
        self,
        url: str,
        *,
        model: str = "default",
        api_key: str | None = None,
        timeout_s: float = 120.0,
    ) -> None:
        self.url = url.rstrip("/")
        if not self.url.endswith("/v1"):
            self.url += "/v1"
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s
        self._format_index = 0  # which response_format shape this server took

    @property
    def identity(self) -> str:
        return f"openai:{self.url}:{self.model}"

    def ask(self, request: ChatRequest) -> Generation:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(request.messages),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        formats = [None]
        if request.schema is not None:
            formats = [
                # OpenAI, vLLM, llama-server:
                {
                    "type": "json_schema",
                    "json_schema": {"name": "answer", "schema": request.schema, "strict": True},
                },
                # llama-cpp-python's server and older llama-server builds:
                {"type": "json_object", "schema": request.schema},
            ]
            if self._format_index:
                formats = formats[self._format_index :]
        last: BackendError | None = None
        for index, response_format in enumerate(formats):
            if response_format is not None:
                body["response_format"] = response_format
            try:
                data = self._post(body)
            except _Rejected as exc:  # this server does not take that response_format
                last = BackendError(str(exc))
                continue
            if index:
                self._format_index += index
            break
        else:
            raise last or BackendError(f"model server {self.url} refused the request")
        try:
            text = data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError(f"model server {self.url} gave no answer: {data!r:.200}") from exc
        return _completion(text, data)

    def chat_batch(
        self,
        requests: Sequence[ChatRequest],
        *,
        work: Work = IDLE,
    ) -> list[Generation]:
        """The requests sent at once: a server with parallel slots decodes them together.
        (``work`` is asked to stop before sending; an HTTP request in flight runs out.)"""
        if work.cancelled():
            raise BatchCancelled
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(8, len(requests))) as pool:
            return list(pool.map(self.ask, requests))

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.url}/chat/completions",
            data=json.dumps(body).encode("utf-8"),
            headers={
                "Content-Type": "application/json",
                **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}),
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                data = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read(500).decode("utf-8", "replace")
            message = f"model server {self.url} answered {exc.code}: {detail}"
            # llama-cpp-python's server answers a response_format it does not know with 500
            if "response_format" in body and (
                exc.code in (400, 422) or "response_format" in detail
            ):
                raise _Rejected(message) from exc
            raise BackendError(message) from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise BackendError(f"cannot reach the model server {self.url}: {reason}") from exc
        except json.JSONDecodeError as exc:
            raise BackendError(f"model server {self.url} did not answer JSON") from exc
        if not isinstance(data, dict):
            raise BackendError(f"model server {self.url} gave no answer: {data!r:.200}")
        return data


class _Rejected(Exception):
    """The server refused a request's shape (e.g. its response_format); try the next one."""


# ----------------------------------------------------------------------------- fake


@dataclass
class ScriptedBackend(Backend):
    """For unit tests of the logic around the model: answers come from a function.

    ``answer(messages, schema)`` returns the text; every call is recorded in ``calls``.
    Never used outside tests.
    """

    answer: Callable[[Sequence[Message], dict[str, Any] | None], str]
    identity: str = "scripted"
    calls: list[Sequence[Message]] = field(default_factory=list)

    def ask(self, request: ChatRequest) -> Generation:
        self.calls.append(list(request.messages))
        return Generation(text=self.answer(request.messages, request.schema))
