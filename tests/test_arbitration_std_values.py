"""Standard-library values in arbitration.

An expected value the test computes (``assert parse_day(s) == datetime(2003, 9, 25)``)
when the call under test raises, so the failing run records no comparison that shows it:
where it is built from literals by standard-library value classes, as a known argument
may be, it is evaluated on its own in the sandbox. A docstring example whose output is
such a value's repr (``datetime.datetime(2003, 9, 25, 0, 0)``) is evidence, compared as
doctest compares it: as text. And an example whose argument is such a value
(``dt.timedelta(minutes=2)``) is the test's call when both build the same value."""

from __future__ import annotations

import ast
import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from red_team.fake_openai import FakeModel
from test_arbitration import project, run, scripted
from test_arbitration_oracles import cli_project

from referee.checks import sandbox
from referee.checks.arbitration.examples import (
    contradicted_example,
    docstring_examples,
    doctest_evidence,
    example_calls,
)
from referee.checks.arbitration.isolate import TestRef, function_spec, isolate
from referee.checks.arbitration.std_values import built_value
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
    ("expected", "definitions"),
    [
        # the project's own object: evaluated with the project's files and this import
        ("Day(2003, 9, 25)", "from text import Day\n"),
        ("sorted([3, 1])", ""),  # a built-in's value
    ],
)
def test_a_computed_expected_value_of_the_test_modules_imports_is_evaluated_with_them(
    expected: str, definitions: str
):
    found = isolated(expected, "from datetime import datetime")
    assert found.expected.kind == "computed" and found.expected_known == expected
    assert found.expected_definitions == definitions
    assert "text" not in found.definitions  # the oracles' definitions hold no project import


@pytest.mark.parametrize(
    "expected",
    ["helper(2003)", "Day(2003, 9, 25) + delta"],  # unbound: a local, or nothing
)
def test_a_computed_expected_value_that_reads_other_names_is_not_evaluated(expected: str):
    found = isolated(expected, "from datetime import datetime")
    assert found.expected.kind == "computed" and found.expected_known is None


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


def test_when_the_call_raises_a_project_object_expected_is_evaluated_and_meets_no_truth(
    tmp_path: Path,
):
    root = project(tmp_path / "p", UNDOCUMENTED, written("Day(2003, 9, 25)"))
    verdict = run(root, NODE, scripted([f"```python\n{ORACLE}```"] * 3)).verdict
    assert verdict.verdict == "UNCLEAR"
    assert "nor the asserted one (<text.Day object at" in verdict.reason  # built by the project


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


# ------------------------------------------------ a docstring example's value arguments

DELTA = '''import datetime as dt


def natural_delta(delta: dt.timedelta) -> str:
    """How long DELTA is, in words: its largest whole unit.

    >>> natural_delta({written})
    '2 minutes'
    """
    minutes = int(delta.total_seconds() // 60)
    return f"{{minutes}} minutes"
'''


@pytest.mark.parametrize(
    ("written", "call", "definitions", "decided"),
    [
        ("dt.timedelta(seconds=120)", "dt.timedelta(seconds=120)", "import datetime as dt", True),
        (
            "dt.timedelta(minutes=2)",
            "timedelta(seconds=120)",
            "from datetime import timedelta",
            True,
        ),
        (
            "datetime.timedelta(seconds=120)",
            "dt.timedelta(seconds=120)",
            "import datetime as dt",
            True,
        ),
        ("timedelta(seconds=120)", "dt.timedelta(seconds=120)", "import datetime as dt", True),
        ("dt.timedelta(seconds=121)", "dt.timedelta(seconds=120)", "import datetime as dt", False),
        ("dt.timedelta(seconds=120)", "dt.timedelta(seconds=120)", "", False),  # dt unbound
    ],
)
def test_a_docstring_example_whose_argument_is_a_standard_library_value_is_the_truth(
    written: str, call: str, definitions: str, decided: bool
):
    spec = function_spec(DELTA.format(written=written), "timefmt.py", "timefmt", "natural_delta")
    found = doctest_evidence(spec, call, definitions=definitions)
    if decided:
        assert found is not None and (found.status, found.value) == ("ok", "'2 minutes'")
    else:
        assert found is None


@pytest.mark.parametrize(
    "text",
    [
        'Fraction("1e999999999")',  # a string that may expand: not built in referee's process
        "Day(2003, 9, 25)",  # no class of a standard-library value module
        "dt.timedelta(days=dt.MAXYEAR)",  # a name of the module, not a literal
        "dt.datetime(2003, 13, 1)",  # the constructor refuses it
        "dt.timedelta(**{'days': 1})",
    ],
)
def test_an_argument_built_here_is_only_a_value_class_on_literals(text: str):
    with pytest.raises(ValueError):
        built_value(ast.parse(text, mode="eval").body, {"dt": "datetime"})


def test_an_argument_built_here_is_the_value_the_test_builds():
    names = {"dt": "datetime", "D": "decimal.Decimal"}
    assert built_value(ast.parse("[dt.date(2020, 1, 2), D('1.5')]", mode="eval").body, names) == [
        dt.date(2020, 1, 2),
        Decimal("1.5"),
    ]


def test_cli_a_value_argument_matched_to_its_docstring_example_is_fixed(
    tmp_path: Path, arbitrate_json
):
    """End to end through ``referee arbitrate --apply``: a parametrized ``dt.timedelta``
    argument, the docstring's example of the same value written another way; the truth
    is the example's, no oracle is asked, the patch fixes the source."""
    module = DELTA.format(written="dt.timedelta(minutes=2)").replace("// 60", "// 30")
    patch = "def natural_delta(delta):\n    return f'{int(delta.total_seconds() // 60)} minutes'\n"
    suite = (
        "import datetime as dt\n\nimport pytest\n\nfrom text import natural_delta\n\n\n"
        '@pytest.mark.parametrize("delta, words", [(dt.timedelta(seconds=120), "2 minutes")])\n'
        "def test_x(delta, words):\n    assert natural_delta(delta) == words\n"
    )
    with FakeModel(lambda kind: patch if kind == "patch" else "raise SystemExit(3)") as model:
        root = cli_project(tmp_path / "p", module, suite, model.url)
        verdict, done = arbitrate_json(root, "tests/test_text.py::test_x[delta0-2 minutes]")
    assert verdict["verdict"] == "SOURCE_WRONG", (verdict["reason"], done.stderr[-2000:])
    assert verdict["truth_source"] == "doctest" and verdict["truth"] == "'2 minutes'"
    assert verdict["applied"] is True, verdict["reason"]
    assert "// 60" in (root / "text.py").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("written", "definitions"),
    [
        ("dt.timedelta(minutes=2)", "import datetime as dt\n"),  # as the module imports it
        ("timedelta(minutes=2)", "from datetime import timedelta\n"),
        ("datetime.timedelta(minutes=2)", "import datetime\n"),
    ],
)
def test_oracles_are_held_to_an_example_whose_argument_is_a_standard_library_value(
    written: str, definitions: str
):
    spec = function_spec(DELTA.format(written=written), "timefmt.py", "timefmt", "natural_delta")
    (example,) = example_calls(spec)
    assert tuple(example) == (
        f"natural_delta({written})",
        "'2 minutes'",
        f">>> natural_delta({written})",
    )
    assert example.definitions == definitions
    right = "def natural_delta(delta):\n    return f'{int(delta.total_seconds() // 60)} minutes'\n"
    wrong = right.replace("// 60", "// 30")
    limits = sandbox.Limits()
    assert contradicted_example(right, [example], limits) is None
    assert "says '2 minutes'" in (contradicted_example(wrong, [example], limits) or "")


# ------------------------------------ an expected value from the parametrize table

TABLE = """import datetime

import pytest

from text import parse_day


@pytest.mark.parametrize("text, expected", [("2003-09-25", datetime.datetime(2003, 9, 25))])
def test_x(text, expected):
    parsed = parse_day(text)
    assert parsed.year == expected.year
    assert parsed == expected
"""
TABLE_NODE = "tests/test_text.py::test_x[2003-09-25-expected0]"


@pytest.mark.parametrize(
    ("module", "asserted", "forms"),
    [
        # the call raises: the case, projected (``.year``), is evaluated on its own
        (UNDOCUMENTED, "2003", ("assigned-call", "projection", "parametrize", "computed-expected")),
        # the call returns a wrong day: the comparison recorded the case's value
        (
            UNDOCUMENTED.replace('split("/")', 'split("-")').replace("int(day))", "int(day) - 1)"),
            "datetime.datetime(2003, 9, 25, 0, 0)",
            ("assigned-call", "parametrize", "computed-expected"),
        ),
    ],
    ids=["raises", "returns"],
)
def test_an_expected_value_the_parametrize_table_builds_blames_a_wrong_source(
    tmp_path: Path, module: str, asserted: str, forms: tuple[str, ...]
):
    root = project(tmp_path / "p", module, TABLE)
    verdict = run(root, TABLE_NODE, scripted([f"```python\n{ORACLE}```"] * 3)).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.asserted == verdict.truth == asserted
    assert set(forms) <= set(verdict.call_forms), verdict.call_forms
    assert verdict.observation.expected_site == "computed"  # never edited
