"""The judge's answer: its shape (:class:`Answer`) and the three ways a model is held to it
— a JSON schema for servers, a llama.cpp grammar whose quotes can only be the subject's
own lines, and the forcing that writes what the grammar leaves no choice about."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Answer(BaseModel):
    """What the model must return: the JSON schema of its output is generated from this."""

    model_config = ConfigDict(extra="forbid")

    reason: str = Field(max_length=400)
    evidence: list[str] = Field(min_length=1, max_length=2)
    verdict: Literal["PASS", "REJECT"]


MAX_QUOTE = 160
MAX_REASON = 120  # characters the grammar lets a reason run to
MAX_QUOTE_CHOICES = 400


def quotable_lines(text: str) -> list[str]:
    """The lines of ``text`` a quote may be, stripped, each at most MAX_QUOTE characters."""
    seen: dict[str, None] = {}
    for line in text.splitlines():
        line = line.strip()[:MAX_QUOTE].strip()
        if line and len(seen) < MAX_QUOTE_CHOICES:
            seen.setdefault(line)
    return list(seen)


def _gbnf_literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def answer_grammar(text: str | None = None) -> str:
    """The same constraint as :func:`answer_schema`, as a llama.cpp GBNF grammar.

    Written here rather than converted from the schema: the converter shipped with
    llama-cpp-python mis-escapes enum strings holding quotes, and a grammar llama.cpp cannot
    parse crashes the process. Every quote is JSON-encoded, then escaped as a GBNF literal.
    """
    lines = quotable_lines(text) if text is not None else []
    if lines:
        quote = " | ".join(_gbnf_literal(json.dumps(line, ensure_ascii=False)) for line in lines)
    else:
        quote = '"\\"" char+ "\\""'
    return "\n".join(
        (
            'root ::= "{" ws "\\"reason\\":" ws reason ws "," ws "\\"evidence\\":" ws "[" ws '
            'quote (ws "," ws quote)? ws "]" ws "," ws "\\"verdict\\":" ws verdict ws "}"',
            f"quote ::= {quote}",
            # bounded, so a rambling model is made to close its sentence: the reason is the
            # longest part of an answer, and every token of it is a decoding step
            f'reason ::= "\\"" char{{0,{MAX_REASON}}} "\\""',
            'verdict ::= "\\"PASS\\"" | "\\"REJECT\\""',
            'char ::= [^"\\\\\\x00-\\x1F] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})',
            "ws ::= [ ]?",
        )
    )


_OPEN = '{"reason": "'
_TO_EVIDENCE = ', "evidence": ["'
_NEXT_QUOTE = ', "'
_TO_VERDICT = '], "verdict": "'
_VERDICTS = ('PASS"}', 'REJECT"}')


def _string_end(text: str, start: int) -> int:
    """Where the JSON string body starting at ``start`` closes (the index of its closing
    quote), or -1 while it is still open."""
    i = start
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i
        else:
            i += 1
    return -1


def _rest_of(scaffold: str, written: str) -> str | None:
    """What is left of ``scaffold`` after ``written`` (a prefix of it), else None."""
    return scaffold[len(written) :] if scaffold.startswith(written) else None


def answer_forcing(text: str | None = None) -> AnswerForcing:
    """For :func:`answer_grammar`'s answers: given what the model wrote so far, the text
    the grammar leaves no choice about — the JSON between the free parts, the rest of a
    quote once only one of the item's lines starts that way, the rest of ``PASS`` or
    ``REJECT`` after its first letter. The in-process model appends it without decoding it
    token by token (about half of an answer's tokens). None once the answer is complete;
    an empty string where the model has a choice. Written for the canonical spacing it
    forces itself; an answer that left it gets nothing forced from then on.

    An object rather than a closure: it travels to the model process with its request."""
    quotable = quotable_lines(text) if text is not None else []
    return AnswerForcing(tuple(json.dumps(line, ensure_ascii=False)[1:-1] for line in quotable))


@dataclass(frozen=True)
class AnswerForcing:
    """See :func:`answer_forcing`; ``lines`` are the quotable lines, JSON-escaped."""

    lines: tuple[str, ...] = ()

    def __call__(self, written: str) -> str | None:
        lines = self.lines
        if len(written) < len(_OPEN):
            return _rest_of(_OPEN, written) or ""
        if not written.startswith(_OPEN):
            return ""
        end = _string_end(written, len(_OPEN))
        if end < 0:
            return ""  # the reason: the model's own words
        at = end + 1
        rest = written[at:]
        if len(rest) <= len(_TO_EVIDENCE):
            return _rest_of(_TO_EVIDENCE, rest) or ""
        if not rest.startswith(_TO_EVIDENCE):
            return ""
        at += len(_TO_EVIDENCE)
        for quote in range(2):
            end = _string_end(written, at)
            if end < 0:
                begun = written[at:]
                matching = [line for line in lines if line.startswith(begun)]
                if len(matching) == 1 and len(matching[0]) > len(begun):
                    return matching[0][len(begun) :] + '"'
                return ""
            rest = written[end + 1 :]
            if quote == 0 and rest.startswith(_NEXT_QUOTE):
                at = end + 1 + len(_NEXT_QUOTE)
                continue
            if quote == 0 and rest and _NEXT_QUOTE.startswith(rest):
                return _NEXT_QUOTE[len(rest) :]
            if not rest:
                return ""  # another quote, or the end of the list: the model's choice
            if len(rest) <= len(_TO_VERDICT):
                return _rest_of(_TO_VERDICT, rest) or ""
            if not rest.startswith(_TO_VERDICT):
                return ""
            verdict = rest[len(_TO_VERDICT) :]
            for word in _VERDICTS:
                if verdict == word:
                    return None
                if verdict and word.startswith(verdict):
                    return word[len(verdict) :]
            return ""
        return ""


def answer_schema(text: str | None = None) -> dict:
    """The JSON schema of :class:`Answer`; with ``text``, each quote must be one of its lines.

    Small models paraphrase when asked to quote; constraining quotes to the item's own lines
    (llama.cpp grammars and servers that honour ``response_format``) makes them exact. The
    quotes are still checked against the text afterwards, for servers that ignore schemas.
    """
    schema = Answer.model_json_schema()
    items: dict = {"type": "string", "maxLength": MAX_QUOTE}
    if text is not None and (lines := quotable_lines(text)):
        items = {"type": "string", "enum": lines}
    schema["properties"]["evidence"]["items"] = items
    schema["properties"]["reason"]["maxLength"] = MAX_REASON
    return schema
