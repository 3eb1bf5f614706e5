"""The oracle programs' prompts: the prompt file (its version is part of every cached
program's key) and the conversations built from it — the signature (with the function's
decorators, as comments) and the docstring, or the suite's assertions for a function with
none; never the function's body, never the failing test or its expected value."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from referee.checks.arbitration.isolate import FunctionSpec
from referee.checks.arbitration.programs import viewed_signature_constants
from referee.checks.config import tomllib

PROMPTS = Path(__file__).with_name("prompts") / "arbitration-v1.toml"


@dataclass(frozen=True)
class Prompts:
    version: str
    oracle_system: str
    oracle: str
    oracle_examples: str
    oracle_suite: str
    oracle_method: str
    oracle_method_suite: str
    oracle_suite_more: str
    oracle_repair: str
    patch_system: str
    patch: str
    inputs_system: str
    inputs: str


@cache
def prompts() -> Prompts:
    raw = PROMPTS.read_bytes()
    data = tomllib.loads(raw.decode("utf-8"))
    return Prompts(
        version="arbitration-v1-" + hashlib.sha256(raw).hexdigest()[:8],
        oracle_system=data["oracle_system"],
        oracle=data["oracle"],
        oracle_examples=data["oracle_examples"],
        oracle_suite=data["oracle_suite"],
        oracle_method=data["oracle_method"],
        oracle_method_suite=data["oracle_method_suite"],
        oracle_suite_more=data["oracle_suite_more"],
        oracle_repair=data["oracle_repair"],
        patch_system=data["patch_system"],
        patch=data["patch"],
        inputs_system=data["inputs_system"],
        inputs=data["inputs"],
    )


def assertion_line(call: str, want: str) -> str:
    """An example as the prompt states it: ``assert f(1) == 2``; a boolean expectation
    (``bool(f(x))``, ``True`` or ``False``: :mod:`~referee.checks.arbitration.suite_reading`)
    as a test writes it, ``assert f(x)`` or ``assert not f(x)``."""
    if want in ("True", "False") and call.startswith("bool(") and call.endswith(")"):
        inner = call[len("bool(") : -1]
        return f"assert {inner}" if want == "True" else f"assert not {inner}"
    return f"assert {call} == {want}"


def shown_signature(spec: FunctionSpec) -> str:
    """The signature as an oracle's prompt shows it: below the constants its defaults name
    (``no_default = '__no__default__'``), and with the function's decorators
    (``@for_app("git")`` says what it answers for) as comments — a program that wrote
    them would name what its sandbox lacks."""
    notes = [f"# decorated with @{d}" for d in spec.decorators]
    constants = viewed_signature_constants(spec.text, spec.signature, spec.module)
    if constants:
        # the sentinels its defaults name, as its module defines them (every program runs
        # after them: programs.oracle_preamble)
        notes = [
            *(f"{line}  # defined in its module" for line in constants.splitlines()),
            "",
            *notes,
        ]
    return "\n".join([*notes, spec.signature])


def oracle_messages(
    spec: FunctionSpec, suite: Sequence[tuple[str, str, str]] | None = None
) -> list[dict[str, str]]:
    """The oracle prompt: the signature and the docstring, never the body or a test. For
    a function with no docstring, ``suite`` — the project's passing, uncommitted-to-change
    assertions about it (:mod:`referee.checks.arbitration.suite`), never the failing one —
    is the specification: the signature and those assertions. For a documented one, the
    same assertions follow the docstring (``oracle_suite_more``): they must pass too."""
    p = prompts()
    lines = "\n".join(assertion_line(call, want) for call, want, _ in suite or ())
    more = (
        "\n\n" + p.oracle_suite_more.format(examples=lines, name=spec.name)
        if suite and spec.docstring_value
        else ""
    )
    if spec.class_stub is not None:
        # a method that takes the object or its class: the class without its bodies, and
        # the function the oracle writes for it (referee.checks.arbitration.methods) —
        # with no docstring, the suite's assertions about it in the contract's calls
        content = p.oracle_method.format(
            class_stub=spec.class_stub,
            signature=spec.signature,
            call=spec.oracle_call,
            name=spec.name,
        )
        if suite and not spec.docstring_value:
            content += "\n\n" + p.oracle_method_suite.format(examples=lines, name=spec.name)
        return [
            {"role": "system", "content": p.oracle_system},
            {"role": "user", "content": content + more},
        ]
    signature = shown_signature(spec)
    if suite and not spec.docstring_value:
        return [
            {"role": "system", "content": p.oracle_system},
            {
                "role": "user",
                "content": p.oracle_suite.format(
                    signature=signature, examples=lines, name=spec.name
                ),
            },
        ]
    return [
        {"role": "system", "content": p.oracle_system},
        {
            "role": "user",
            "content": p.oracle.format(
                signature=signature, docstring=spec.docstring or "", name=spec.name
            )
            + more,
        },
    ]


def examples_messages(
    spec: FunctionSpec,
    examples: Sequence[tuple[str, str, str]],
    suite: Sequence[tuple[str, str, str]] | None = None,
) -> list[dict[str, str]]:
    """The prompt of a fresh oracle in place of one that failed: the oracle prompt, with
    the docstring's own examples (:func:`example_calls`) written out as assertions the
    function must pass — still the signature and docstring only (and ``suite``: the
    suite's assertions a documented function's prompt shows after its docstring).
    Without examples it is the plain oracle prompt; without a docstring, the suite's
    prompt (which shows them already)."""
    if not examples:
        return oracle_messages(spec, suite)
    if not spec.docstring_value:
        return oracle_messages(spec, examples)
    lines = "\n".join(assertion_line(call, want) for call, want, _ in examples)
    system, user = oracle_messages(spec, suite)
    more = prompts().oracle_examples.format(examples=lines)
    return [system, {"role": "user", "content": f"{user['content']}\n\n{more}"}]
