"""A projection of the call under test's value, arbitrated (issue 40): the test compares an
attribute or an item of the call's value — ``parse_date("2020-01-02").month == 1``,
``split_pair("a,b")[0] == "a"`` — and every source of truth's value is projected the same
way, by referee's harness inside the sandboxed run, never by copying the test's text.

End to end through ``referee arbitrate --apply`` with the fake OpenAI-compatible model
server: a wrong function is fixed, a wrong test is fixed and certified, and a projection
referee does not apply (a key that is not a literal, a call, a dunder attribute) is
UNCLEAR with one line that says why — no model asked, nothing run.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from red_team.fake_openai import FakeModel
from test_arbitration_oracles import cli_project

from referee.checks.arbitration.examples import doctest_evidence
from referee.checks.arbitration.isolate import NotIsolated, TestRef, function_spec, isolate
from referee.checks.arbitration.projection import checked, projected_literal
from referee.checks.arbitration.sites import wrapped
from referee.checks.arbitration.truth import reference_evidence
from referee.checks.configuration import ArbitrationConfig
from referee.checks.models import arbitration_schema
from referee.checks.source import SourceFile

MODULE = '''import datetime


def parse_date(text: str) -> datetime.date:
    """The date TEXT writes as year-month-day ("1999-12-31": the last day of 1999)."""
    year, month, day = text.split("-")
    return datetime.date(int(year), int({month}), int({day}))


def split_pair(text: str) -> tuple:
    """TEXT cut at its first comma: (what is before it, what is after it), each with the
    spaces around it taken off.

    >>> split_pair("a, b")
    ('a', 'b')
    """
    before, _, after = text.partition(",")
    return (before.strip(), after.strip())
'''
RIGHT = MODULE.format(month="month", day="day")
WRONG = MODULE.format(month="day", day="month")  # month and day swapped

ORACLE = """import datetime


def parse_date(text):
    year, month, day = (int(part) for part in text.split("-"))
    return datetime.date(year, month, day)


def split_pair(text):
    before, _, after = text.partition(",")
    return (before.strip(), after.strip())
"""
PATCH = """def parse_date(text: str) -> datetime.date:
    year, month, day = text.split("-")
    return datetime.date(int(year), int(month), int(day))
"""


def _tests(lines: str, *, unit: bool = False) -> tuple[str, str]:
    imports = "import unittest\n\nfrom text import parse_date, split_pair\n"
    if unit:
        head = f"{imports}\n\nclass TestText(unittest.TestCase):\n    def test_x(self):\n"
        body = "".join(f"        {line}\n" for line in lines.splitlines())
        return head + body, "tests/test_text.py::TestText::test_x"
    body = "".join(f"    {line}\n" for line in lines.splitlines())
    return f"{imports}\n\ndef test_x():\n{body}", "tests/test_text.py::test_x"


def _cli(referee, tmp_path: Path, module: str, lines: str, model: FakeModel, **kw) -> tuple:
    tests, test_id = _tests(lines, **kw)
    root = cli_project(tmp_path / "p", module, tests, model.url)
    done = referee("arbitrate", test_id, "--format", "json", "--apply", cwd=root)
    assert done.stdout.strip(), (done.returncode, done.stderr)
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    return verdict, root


def _answer(kind: str) -> str:
    return ORACLE if kind == "oracle" else PATCH


# ------------------------------------------------------------------ end to end, --apply


@pytest.mark.parametrize(
    ("line", "unit", "forms", "call"),
    [
        (
            'assert parse_date("2020-01-02").month == 1',
            False,
            ["projection"],
            'parse_date("2020-01-02").month',
        ),
        (
            'self.assertEqual(parse_date("2020-01-02").month, 1)',
            True,
            ["unittest-method", "projection"],
            'parse_date("2020-01-02").month',
        ),
    ],
    ids=["assert", "assertEqual"],
)
def test_cli_fixes_a_wrong_function_whose_attribute_is_asserted(
    tmp_path: Path, referee, line, unit, forms, call
):
    with FakeModel(_answer) as model:
        verdict, root = _cli(referee, tmp_path, WRONG, line, model, unit=unit)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call_forms"] == forms and verdict["call"] == call
    # the oracles' value projected as the test projects the code's: the month, not a date
    assert (verdict["produced"], verdict["truth"]) == ("2", "1")
    assert [o["value"] for o in verdict["oracles"]] == ["1"] * len(verdict["oracles"])
    assert verdict["applied"] is True
    fixed = (root / "text.py").read_text(encoding="utf-8")
    assert "int(day), int(month))" not in fixed  # a body that gives the month back
    namespace: dict = {}
    exec(compile(fixed, "text.py", "exec"), namespace)
    assert namespace["parse_date"]("2020-01-02").month == 1
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == _tests(line, unit=unit)[
        0
    ]
    # the oracles saw the signature and docstring, never the body or the test
    oracle_prompts = [
        json.dumps(r["messages"])
        for r, kind in zip(model.requests, model.kinds(), strict=True)
        if kind == "oracle"
    ]
    assert oracle_prompts
    for prompt in oracle_prompts:
        assert "int(day)" not in prompt and "2020-01-02" not in prompt


def test_cli_fixes_a_wrong_item_the_test_asserts_and_certifies_it(tmp_path: Path, referee):
    line = 'assert split_pair("x , y")[0] == "x "'
    with FakeModel(_answer) as model:
        verdict, root = _cli(referee, tmp_path, RIGHT, line, model)
    assert verdict["verdict"] == "TEST_WRONG", verdict["reason"]
    assert verdict["call_forms"] == ["projection"]
    assert verdict["call"] == 'split_pair("x , y")[0]'
    assert (verdict["produced"], verdict["asserted"], verdict["truth"]) == ("'x'", "'x '", "'x'")
    assert verdict["applied"] is True and verdict["certificate"] is not None
    fixed = (root / "tests" / "test_text.py").read_text(encoding="utf-8")
    assert 'assert split_pair("x , y")[0] == "x"\n' in fixed
    assert (root / "text.py").read_text(encoding="utf-8") == RIGHT


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        (
            'for k in (0, 1):\n    assert split_pair("a,b")[k] == "b"',
            'cannot isolate the call under test: `split_pair("a,b")[k]` reads the call\'s '
            "value through the subscript `[k]`",
        ),
        (
            'assert split_pair("a,b")[0].upper() == "B"',
            'cannot isolate the call under test: `split_pair("a,b")[0].upper` is a method of '
            "an object the test does not build",
        ),
        (
            'assert split_pair("a,b").index("b").real == 0',
            'cannot isolate the call under test: `split_pair("a,b").index("b").real` calls a '
            "method of the value `split_pair` returns",
        ),
    ],
    ids=["name-subscript", "call-in-chain", "method-of-the-value"],
)
def test_cli_refuses_a_projection_it_does_not_apply_in_one_line(
    tmp_path: Path, referee, lines, reason
):
    with FakeModel(_answer) as model:
        verdict, _ = _cli(referee, tmp_path, RIGHT, lines, model)
    assert verdict["verdict"] == "UNCLEAR"
    assert verdict["reason"].startswith(reason), verdict["reason"]
    assert "\n" not in verdict["reason"]
    assert not model.requests  # refused before any oracle was asked
    assert verdict["applied"] is False


def test_cli_refuses_a_dunder_attribute_before_anything_runs(tmp_path: Path, referee):
    # a way out of the value (to its class, its module's globals), not a part of it
    line = 'assert split_pair("a,b").__class__.__init__.__globals__["os"] == 1'
    with FakeModel(_answer) as model:
        verdict, _ = _cli(referee, tmp_path, RIGHT, line, model)
    assert verdict["verdict"] == "UNCLEAR" and "\n" not in verdict["reason"]
    assert "through the attribute `__class__`" in verdict["reason"]
    assert not model.requests and verdict["applied"] is False


# ------------------------------------------------------------------ taken apart


def _iso(body: str):
    text = f"def test_x():\n    {body}\n"
    return isolate(SourceFile("t.py", text), TestRef.parse("t.py::test_x"), text.count("\n"))


@pytest.mark.parametrize(
    ("body", "call", "projection", "forms"),
    [
        ('assert f(1)["key"] == "v"', "f(1)['key']", "['key']", ("projection",)),
        ("assert f(1).a.b == 1", "f(1).a.b", ".a.b", ("projection",)),
        ("assert sorted(f(1))[-1] == 3", "sorted(f(1))[-1]", "[-1]", ("projection",)),
        ("assert f(1)[1:3] == [2]", "f(1)[1:3]", "[1:3]", ("projection",)),
        ("assert f(1)[1, 'a'] == 2", "f(1)[(1, 'a')]", "[(1, 'a')]", ("projection",)),
        ("assert 3 == f(1).n", "f(1).n", ".n", ("projection",)),
        ("assert f(1).ok", "f(1).ok", ".ok", ("boolean", "projection")),
        ("r = f(1)\n    assert r.n == 3", "f(1).n", ".n", ("assigned-call", "projection")),
    ],
)
def test_a_projection_is_written_back_from_its_steps(body, call, projection, forms):
    isolated = _iso(body)
    assert (isolated.call, isolated.projection, isolated.forms) == (call, projection, forms)


@pytest.mark.parametrize(
    ("body", "step"),
    [
        ("assert f(1)[[1]] == 2", "the subscript `[[1]]`"),  # a list: not a key
        ("assert f(1)[g()] == 2", "the subscript `[g()]`"),
        ("assert f(1)[1.5:2] == 2", "the subscript `[1.5:2]`"),
        ("assert f(1)[1e999] == 2", "the subscript `[1e999]`"),  # inf: no literal writes it
        ("assert f(1).__dict__ == {}", "the attribute `__dict__`"),
        ("assert f(1).\ufb01 == 2", "`.\ufb01`"),  # a name Python reads as `fi`
    ],
)
def test_a_projection_referee_does_not_apply_is_refused(body, step):
    with pytest.raises(NotIsolated, match="reads the call's value through") as caught:
        _iso(body)
    assert step in str(caught.value) and "\n" not in str(caught.value)


# ------------------------------------------------------------------ the harness


@pytest.mark.parametrize(
    "hostile",
    [
        ".__class__",
        "[__import__('os').system('true')]",
        ".x; import os",
        ".x\nimport os",
        ".x or __import__('os')",
        "(1)",
        "[0]()",
        ".x[y]",
        ".if",
        "['a' 'b']",  # two literals: referee writes one
        "[0] ",
    ],
)
def test_the_harness_applies_only_a_projection_as_referee_writes_it(hostile):
    with pytest.raises(ValueError, match="not a projection"):
        checked(hostile)
    with pytest.raises(ValueError):
        wrapped(None, "f(1)", hostile)
    # a reference (as the oracles) is never run on one: the call is refused before it is
    with pytest.raises(ValueError):
        reference_evidence("text:f", "1", ArbitrationConfig(), {}, projection=hostile)


def test_the_harness_applies_a_projection_referee_wrote():
    assert wrapped("sorted", "f(1)", "[0].real") == "sorted(f(1))[0].real"
    assert checked("['k'][1:][::-1]") == "['k'][1:][::-1]"


def test_a_docstring_example_is_projected_when_its_value_is_a_literal():
    spec = function_spec(RIGHT, "text.py", "text", "split_pair")
    found = doctest_evidence(spec, "'a, b'", None, "[1]")
    assert found is not None and (found.status, found.value) == ("ok", "'b'")
    assert doctest_evidence(spec, "'a, b'", None, ".real") is None  # no literal has it
    assert projected_literal("{'a': (1, 2)}", "['a'][-1]") == "2"
    assert projected_literal("[1]", "[5]") is None


def test_a_reference_value_is_projected_inside_the_sandbox():
    files = {
        "ref.py": "import datetime\n\n\ndef parse_date(text):\n"
        "    year, month, day = map(int, text.split('-'))\n"
        "    return datetime.date(year, month, day)\n"
    }
    found = reference_evidence(
        "ref.py:parse_date", "'2020-01-02'", ArbitrationConfig(), files, projection=".month"
    )
    assert (found.status, found.value) == ("ok", "1")
