"""Inputs of the differential check from the specification: hypothesis's resolution of
the annotation's type (a bare ``list`` included), the arguments of the suite's own
assertions, and the inputs the model proposes from what the docstring says. The sandbox
is real; the model is a fake OpenAI-compatible server."""

from __future__ import annotations

import ast
import json

import pytest
from red_team.fake_openai import FakeModel

from referee.checks import sandbox
from referee.checks.arbitration.isolate import function_spec
from referee.checks.arbitration.truth import LazyModel, prompts
from referee.checks.configuration import ArbitrationConfig, ExecutionConfig
from referee.checks.execution.differential import check_function
from referee.checks.execution.inputs import (
    Input,
    docstring_inputs,
    generated_inputs,
    parse_proposals,
    suite_inputs,
)
from referee.checks.execution.running import run_code

needs_sandbox = pytest.mark.skipif(
    sandbox.boundary_problem() is not None, reason="needs the sandbox's kernel boundary"
)


def _values(annotation: str, count: int = 12) -> list:
    text = f"import typing\nfrom typing import *\n\ndef f(xs: {annotation}):\n    return xs\n"
    spec = function_spec(text, "m.py", "m", "f")
    inputs, note = generated_inputs(spec, count, 5.0)
    assert not note, note
    return [ast.literal_eval(i.arguments) for i in inputs]


def test_a_bare_list_gets_inputs_and_their_sizes_are_bounded():
    values = _values("list")
    assert len(values) >= 6 and all(isinstance(v, list) for v in values)
    assert any(v for v in values) and all(len(v) <= 6 for v in values)


def test_parametrised_containers_resolve_through_their_type():
    maps = _values("dict[str, int]")
    assert maps and all(isinstance(m, dict) and len(m) <= 4 for m in maps)
    assert any(m for m in maps)
    assert all(isinstance(k, str) and type(v) is int for m in maps for k, v in m.items())
    rows = _values("typing.Sequence[tuple[int, str]]")
    assert any(rows) and all(isinstance(t, tuple) and len(t) == 2 for r in rows for t in r)
    # no strategy for a callable: no inputs, and a note that says why
    spec = function_spec("def f(g: typing.Callable):\n    return g\n", "m.py", "m", "f")
    assert generated_inputs(spec, 5, 2.0) == (
        [],
        "no strategy for the annotation of g: no generated inputs",
    )


def test_the_suites_assertions_give_their_arguments_parametrize_rows_included():
    tests = {
        "tests/test_p.py": (
            "import pytest\nfrom pal import is_palindrome\n\n"
            '@pytest.mark.parametrize("s, want", [("Abba", True), ("ab", False)])\n'
            "def test_p(s, want):\n    assert is_palindrome(s) is want\n\n"
            'def test_q():\n    assert is_palindrome("x y x") == True\n'
        )
    }
    # `is want` is no literal comparison: rows that feed `is` are read by `==` only
    found = [i.arguments for i in suite_inputs("is_palindrome", "pal", tests)]
    assert found == ["'x y x'"]
    tests["tests/test_p.py"] = tests["tests/test_p.py"].replace("is want", "== want")
    found = [i.arguments for i in suite_inputs("is_palindrome", "pal", tests)]
    assert found == ["'Abba'", "'ab'", "'x y x'"]


def test_proposals_are_literal_argument_lists_that_fit_the_signature():
    fn = ast.parse("def f(s, n=1):\n    pass\n").body[0]
    answer = '```json\n[["A, b"], ["", 2], [true, null], [1, 2, 3], "__import__(\'os\')"]\n```'
    assert [i.arguments for i in parse_proposals(answer, fn, 8)] == [
        "'A, b'",
        "'', 2",
        "True, None",
        "\"__import__('os')\"",  # a string, data: nothing in an answer is run
    ]
    assert parse_proposals("[[1], [2], [3]]", fn, 2)[-1].arguments == "2"
    assert parse_proposals("__import__('os').system('x')", fn, 8) == []


PALINDROME = '''def is_palindrome(text: str) -> bool:
    """Whether TEXT reads the same backwards, ignoring case and punctuation."""
    return text == text[::-1]
'''
ORACLE = """def is_palindrome(text):
    kept = [c.lower() for c in text if c.isalnum()]
    return kept == kept[::-1]
"""
PROPOSED = json.dumps([["A man, a plan, a canal: Panama"], ["Abba"], ["racecar"]])
TESTS = {
    "tests/test_pal.py": (
        "from pal import is_palindrome\n\n\ndef test_simple():\n"
        '    assert is_palindrome("abcba")\n    assert not is_palindrome("abc")\n'
    )
}


def _check(config: ExecutionConfig):
    asked: list[dict] = []

    def answer_for(body: dict) -> str:
        asked.append(body)
        if body["messages"][0]["content"] == prompts().inputs_system:
            return PROPOSED
        return ORACLE

    with FakeModel(lambda kind: "", answer_for=answer_for) as server:
        model = LazyModel("openai", "fake", server.url, None, timeout=30)
        result = check_function(
            function_spec(PALINDROME, "pal.py", "pal", "is_palindrome"),
            "pal.py",
            {"pal.py": PALINDROME},
            TESTS,
            config,
            ArbitrationConfig(),
            model=model,
        )
    return result, asked


@needs_sandbox
def test_a_function_that_ignores_what_its_docstring_names_is_caught_by_proposed_inputs():
    # random inputs shaped like the tests' (lower-case letters) never hold case or
    # punctuation: the function that ignores neither passes them
    today, asked = _check(ExecutionConfig(generated_inputs=12, proposed_inputs=0))
    assert today.status == "PASS", today
    assert "proposed" not in today.inputs
    assert all(b["messages"][0]["content"] == prompts().oracle_system for b in asked)
    # the model's proposed inputs, what the docstring names, catch it
    result, asked = _check(ExecutionConfig(generated_inputs=12))
    assert result.status == "REJECT", result
    assert result.call == "is_palindrome('A man, a plan, a canal: Panama')"
    assert result.produced == "returned False" and result.truth == "True"
    assert result.reason.endswith("(an input the model proposed from the docstring)")
    assert result.inputs["proposed"] == 3
    (request,) = [b for b in asked if b["messages"][0]["content"] == prompts().inputs_system]
    prompt = request["messages"][1]["content"]
    assert "ignoring case and punctuation" in prompt and "text[::-1]" not in prompt


# A docstring whose examples pass standard-library values built from literals, as real
# projects' docstrings do (``humanize``-style formatters of a ``timedelta``).
MINUTES = '''import datetime as dt


def in_minutes(delta: dt.timedelta) -> str:
    """How long ``delta`` is in whole minutes, rounded down, days included.

    >>> in_minutes(dt.timedelta(minutes=2))
    '2 minutes'
    >>> in_minutes(dt.timedelta(days=1, minutes=1))
    '1441 minutes'
    """
    return f"{delta.seconds // 60} minutes"
'''
MINUTES_ORACLE = (  # the fake server fences it
    "from datetime import timedelta as dt\n\n"  # `dt` means another thing here
    "def in_minutes(delta):\n"
    "    assert dt is not None\n"
    "    return f'{int(delta.total_seconds()) // 60} minutes'\n"
)


def test_docstring_examples_of_standard_library_values_are_inputs_with_their_imports():
    spec = function_spec(MINUTES, "span.py", "span", "in_minutes")
    found = docstring_inputs(spec)
    assert [(i.arguments, i.expected, i.definitions) for i in found] == [
        ("dt.timedelta(minutes=2)", "'2 minutes'", "import datetime as dt\n"),
        ("dt.timedelta(days=1, minutes=1)", "'1441 minutes'", "import datetime as dt\n"),
    ]
    # nothing of the project's, and no call that is not a value class's, is read
    text = MINUTES.replace("dt.timedelta(minutes=2)", "dt.timedelta(minutes=two())")
    text = text.replace("dt.timedelta(days=1, minutes=1)", "Span(days=1)")
    assert docstring_inputs(function_spec(text, "span.py", "span", "in_minutes")) == []


def test_the_suites_assertions_on_standard_library_values_carry_their_imports():
    tests = {
        "tests/test_span.py": (
            "from datetime import timedelta\nfrom span import in_minutes\n\n\n"
            "def test_hour():\n"
            '    assert in_minutes(timedelta(hours=1)) == "60 minutes"\n'
        )
    }
    (found,) = suite_inputs("in_minutes", "span", tests)
    assert found.arguments == "timedelta(hours=1)"
    assert "from datetime import timedelta" in found.definitions


@needs_sandbox
def test_an_input_s_imports_never_replace_the_program_s_own_names():
    # the program binds `datetime` to the class; the input's `import datetime` binds the
    # module, for the argument alone
    code = (
        "from datetime import datetime\n\n"
        "def f(d):\n    return datetime(2020, 1, 1).year - d.year\n"
    )
    item = Input("datetime.date(2019, 5, 5)", "docstring", None, "", "import datetime\n")
    run = run_code("oracle-1", code, "f", [item], sandbox.Limits())
    assert run.values == [("ok", "1")], run


def _minutes_checked(text: str):
    with FakeModel(lambda kind: MINUTES_ORACLE) as server:
        model = LazyModel("openai", "fake", server.url, None, timeout=30)
        return check_function(
            function_spec(text, "span.py", "span", "in_minutes"),
            "span.py",
            {"span.py": text},
            {},
            ExecutionConfig(generated_inputs=0, proposed_inputs=0),
            ArbitrationConfig(),
            model=model,
        )


@needs_sandbox
def test_a_function_contradicting_a_docstring_example_of_a_timedelta_is_rejected():
    result = _minutes_checked(MINUTES)
    assert result.status == "REJECT", result
    assert result.call == "in_minutes(dt.timedelta(days=1, minutes=1))"
    assert result.produced == "returned '1 minutes'" and result.truth == "'1441 minutes'"
    # the right function passes the same examples
    fixed = MINUTES.replace("delta.seconds // 60", "int(delta.total_seconds()) // 60")
    result = _minutes_checked(fixed)
    assert result.status == "PASS", result  # the oracles ran on both and agree
    assert result.inputs.get("docstring") == 2, result
