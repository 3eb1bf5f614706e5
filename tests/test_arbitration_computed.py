"""An expected value the test computes (``assert parse_day(s) == datetime(2003, 9, 25)``)
when the call under test raises, so the failing run records no comparison that shows the
expected value: where it is built from literals by standard-library value classes, as a
known argument may be, it is evaluated on its own in the sandbox; and a docstring's
example whose output is such a value's repr (``datetime.datetime(2003, 9, 25, 0, 0)``)
is evidence, compared as doctest compares it: as text."""

from __future__ import annotations

from pathlib import Path

import pytest
from red_team.fake_openai import FakeModel
from test_arbitration import project, run, scripted
from test_arbitration_oracles import cli_project

from referee.checks.arbitration.examples import docstring_examples
from referee.checks.arbitration.isolate import TestRef, isolate
from referee.checks.source import SourceFile

# ``split("/")`` where the docstring says YYYY-MM-DD: every ISO day raises ValueError
DATES = '''from datetime import datetime


class Day:
    """A day of the calendar, as the project writes it."""

    def __init__(self, year: int, month: int, day: int) -> None:
        self.ymd = (year, month, day)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Day) and other.ymd == self.ymd


def parse_day(text: str) -> datetime:
    """Parse an ISO day, YYYY-MM-DD, into a datetime at midnight.{example}
    """
    year, month, day = text.{split}
    return datetime(int(year), int(month), int(day))
'''
EXAMPLE = '\n\n    >>> parse_day("2003-09-25")\n    datetime.datetime(2003, 9, 25, 0, 0)'
WRONG = DATES.format(example=EXAMPLE, split='split("/")')
UNDOCUMENTED = DATES.format(example="", split='split("/")')
RIGHT_BODY = 'split("-")'
ORACLE = (
    "from datetime import datetime\n\n\n"
    "def parse_day(text):\n"
    '    year, month, day = text.split("-")\n'
    "    return datetime(int(year), int(month), int(day))\n"
)
PATCH = (
    "def parse_day(text: str) -> datetime:\n"
    '    """Parse an ISO day, YYYY-MM-DD, into a datetime at midnight."""\n'
    '    year, month, day = text.split("-")\n'
    "    return datetime(int(year), int(month), int(day))\n"
)
NODE = "tests/test_text.py::test_x"


def written(expected: str, head: str = "from datetime import datetime") -> str:
    return (
        f"{head}\n\nfrom text import Day, parse_day\n\n\n"
        f'def test_x():\n    assert parse_day("2003-09-25") == {expected}\n'
    )


def isolated(expected: str, head: str):
    text = written(expected, head)
    return isolate(
        SourceFile("tests/t.py", text),
        TestRef.parse("tests/t.py::test_x"),
        7,
        project_callees=frozenset({"parse_day", "Day"}),  # as the run resolved them
        project_classes=frozenset({"Day"}),
    )


@pytest.mark.parametrize(
    ("head", "expected", "definitions"),
    [
        ("from datetime import datetime", "datetime(2003, 9, 25)", "from datetime import datetime"),
        ("import datetime as dt", "dt.datetime(2003, 9, 25)", "import datetime as dt"),
        ("from decimal import Decimal", 'Decimal("1.5")', "from decimal import Decimal"),
    ],
)
def test_a_computed_expected_value_of_standard_library_values_is_known_on_its_own(
    head: str, expected: str, definitions: str
):
    found = isolated(expected, head)
    assert (found.expected.kind, found.expected.text) == ("computed", expected)
    assert found.expected_known == expected and definitions in found.definitions
    assert found.forms == ("computed-expected",)  # no argument's form is borrowed


@pytest.mark.parametrize(
    "expected",
    [
        "Day(2003, 9, 25)",  # the project's own object: its value is the project's to say
        "datetime.now()",  # a value of the run that computes it
        "sorted([3, 1])",  # another function's value
    ],
)
def test_a_computed_expected_value_not_known_on_its_own_is_not_evaluated(expected: str):
    found = isolated(expected, "from datetime import datetime")
    assert found.expected.kind == "computed" and found.expected_known is None
    assert "text" not in found.definitions  # nothing the refused reading wanted is kept


def test_when_the_call_raises_the_expected_value_is_evaluated_and_the_source_blamed(
    tmp_path: Path,
):
    """No docstring example: the truth is the oracles'; the expected value the test
    computes, evaluated on its own, is what they meet."""
    root = project(tmp_path / "p", UNDOCUMENTED, written("datetime(2003, 9, 25)"))
    result = run(root, NODE, scripted([f"```python\n{ORACLE}```"] * 3))
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.asserted == verdict.truth == "datetime.datetime(2003, 9, 25, 0, 0)"
    assert "ValueError" in (verdict.observation.produced_error or "")
    assert "computed-expected" in verdict.call_forms


def test_when_the_call_raises_a_project_object_expected_is_still_unclear(tmp_path: Path):
    root = project(tmp_path / "p", UNDOCUMENTED, written("Day(2003, 9, 25)"))
    verdict = run(root, NODE, scripted([f"```python\n{ORACLE}```"] * 3)).verdict
    assert verdict.verdict == "UNCLEAR"
    assert "is computed by the test, and the failure recorded no comparison" in verdict.reason


def test_cli_a_raising_call_against_a_docstring_repr_example_is_fixed(
    tmp_path: Path, arbitrate_json
):
    """End to end through ``referee arbitrate --apply``: the truth is the docstring's
    example (a datetime's repr), the expected value the test computes is evaluated on its
    own, the source is blamed and fixed, the test is not touched."""
    with FakeModel(lambda kind: PATCH if kind == "patch" else ORACLE) as model:
        root = cli_project(tmp_path / "p", WRONG, written("datetime(2003, 9, 25)"), model.url)
        test_text = (root / "tests" / "test_text.py").read_text(encoding="utf-8")
        verdict, done = arbitrate_json(root, NODE)
    assert verdict["verdict"] == "SOURCE_WRONG", (verdict["reason"], done.stderr[-2000:])
    assert verdict["truth_source"] == "doctest"
    assert verdict["asserted"] == "datetime.datetime(2003, 9, 25, 0, 0)"
    assert verdict["applied"] is True, verdict["reason"]
    assert RIGHT_BODY in (root / "text.py").read_text(encoding="utf-8")
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == test_text


@pytest.mark.parametrize(
    ("output", "read"),
    [
        ("datetime.datetime(2003, 9, 25, 0, 0)", True),
        ("Decimal('1.5')", True),
        ("[Fraction(1, 2), None]", True),
        ("datetime.datetime(2003, 9, 25, tzinfo=datetime.timezone.utc)", True),
        ("datetime.datetime.now()", False),  # a method's value, not a repr
        ("Day(2003, 9, 25)", False),  # a class no standard-library value module has
        ("os.getcwd()", False),
    ],
)
def test_a_docstring_example_shows_a_standard_library_values_repr(output: str, read: bool):
    docstring = f"Parse.\n\n>>> parse_day('2003-09-25')\n{output}\n"
    found = docstring_examples(docstring, "parse_day")
    assert found == (
        [("parse_day('2003-09-25')", output, ">>> parse_day('2003-09-25')")] if read else []
    )
