"""The spec from the suite reads assertions whose arguments (and expected values) are
known without running the test, by the rules the failing call is isolated by
(checks/arbitration/known.py): ``ago(dt.timedelta(seconds=5)) == "5 s ago"``,
``parse("2019-03-29") == datetime(2019, 3, 29)``, ``total(add, [1, 2])``. Each carries
its definitions (the test module's imports of the names it uses, the plain functions it
names) into the sandbox; an expected value built from a value class is compared by the
repr the sandbox gives it. Real pytest, the real sandbox; the model is scripted (the
engine) or a fake OpenAI-compatible server (the command line)."""

from __future__ import annotations

import json
from pathlib import Path

from red_team.fake_openai import FakeModel
from test_arbitration import project, run
from test_arbitration_oracles import body, cli_project
from test_arbitration_suite import Recorder, misread_first

from referee.checks import sandbox
from referee.checks.arbitration.examples import contradicted_example
from referee.checks.arbitration.suite import (
    _same_arguments,
    passing_examples,
    suite_examples,
)
from referee.checks.arbitration.suite_reading import assertions, static_examples
from referee.checks.arbitration.truth import prompts
from referee.checks.execution.inputs import suite_inputs

BUGGY = """import datetime as dt


def ago(delta: dt.timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds <= 60:  # BODY-MARKER
        return f"{seconds} s ago"
    return f"{seconds // 60} min ago"
"""
CORRECT = BUGGY.replace("<= 60:  # BODY-MARKER", "< 60:")
SUITE = """import datetime as dt
from datetime import timedelta

from text import ago


def test_seconds():
    assert ago(dt.timedelta(seconds=5)) == "5 s ago"


def test_minutes():
    assert ago(dt.timedelta(minutes=2)) == "2 min ago"


def test_half():
    assert ago(timedelta(seconds=30)) == "30 s ago"


def test_one_minute():
    assert ago(dt.timedelta(seconds=60)) == "1 min ago"
"""
NODE = "tests/test_text.py::test_one_minute"
# the failing call's arguments written another way: never the suite's word for that call
OLD_WORDING = (
    SUITE + '\n\ndef test_old_wording():\n    assert ago(timedelta(seconds=60)) == "60 s ago"\n'
)
ORACLE = (
    "```python\nimport datetime as dt\n\n\ndef ago(delta: dt.timedelta) -> str:\n"
    "    seconds = int(delta.total_seconds())\n    if seconds < 60:\n"
    '        return f"{seconds} s ago"\n    return f"{seconds // 60} min ago"\n```'
)
# reads minutes as seconds: contradicts the suite's ``dt.timedelta(minutes=2)``
MISREAD = '```python\ndef ago(delta):\n    return f"{int(delta.total_seconds())} s ago"\n```'
PATCH = ORACLE

MODULE = """import datetime as dt
import os
from datetime import datetime, timedelta
from decimal import Decimal
from operator import add

from pkg import human
from pkg.human import ago, parse


def double(x):
    return x * 2


def cwd(x):
    return os.getcwd()


@staticmethod
def decorated(x):
    return x


def test_known():
    assert ago(dt.timedelta(seconds=1)) == "1 s ago"
    assert ago(timedelta(days=2), short=True) == "2 d"
    assert ago(Decimal("1.0")) == "1.0"
    assert ago(str) == "str"
    assert ago(add) == "add"
    assert ago(double) == "double"
    assert ago(lambda x: x + 1) == "lambda"
    assert parse("2019-03-29") == datetime(2019, 3, 29)


def test_refused():
    assert ago(cwd) == "os"
    assert ago(decorated) == "decorated"
    assert ago(human.other) == "project"
    assert ago(os.environ) == "environment"
    assert ago(open) == "unstable"
    assert ago(object()) == "no value"
    assert parse("x") == double
    t = dt.timedelta(1)
    assert ago(t) == "local"
    assert ago(lambda: t) == "a lambda over a local"
    assert ago(dt.timedelta(seconds=t)) == "built from a local"


class TestCase:
    def test_method(self):
        self.assertEqual(ago(dt.timedelta(days=3)), "3 d")
        self.assertEqual(ago(self.delta), "an attribute of the test")
"""


# ------------------------------------------------------------------ reading


def _read(name: str) -> dict[str, tuple[str, str, bool]]:
    found, _ = assertions(MODULE, "tests/test_h.py", name, "pkg.human", known=True)
    return {f.call: (f.want, f.definitions, f.want_built) for f in found}


def test_known_arguments_are_read_with_their_definitions():
    assert _read("ago") == {
        "ago(dt.timedelta(seconds=1))": ("'1 s ago'", "import datetime as dt\n", False),
        "ago(timedelta(days=2), short=True)": ("'2 d'", "from datetime import timedelta\n", False),
        "ago(Decimal('1.0'))": ("'1.0'", "from decimal import Decimal\n", False),
        "ago(str)": ("'str'", "", False),
        "ago(add)": ("'add'", "from operator import add\n", False),
        "ago(double)": ("'double'", "def double(x):\n    return x * 2\n", False),
        "ago(lambda x: x + 1)": ("'lambda'", "", False),
        "ago(dt.timedelta(days=3))": ("'3 d'", "import datetime as dt\n", False),
    }


def test_an_expected_value_built_from_a_value_class_is_read_as_written():
    # and never a function as an expected value: its repr is an address
    assert _read("parse") == {
        "parse('2019-03-29')": ("datetime(2019, 3, 29)", "from datetime import datetime\n", True)
    }


def test_the_differential_checks_inputs_are_literals_and_standard_library_values():
    # a built-in, a function, a lambda of the test module's: no input of the spec
    found = suite_inputs("ago", "pkg.human", {"tests/test_h.py": MODULE})
    assert [(i.arguments, i.definitions) for i in found] == [
        ("dt.timedelta(seconds=1)", "import datetime as dt\n"),
        ("timedelta(days=2), short=True", "from datetime import timedelta\n"),
        ("Decimal('1.0')", "from decimal import Decimal\n"),
        ("dt.timedelta(days=3)", "import datetime as dt\n"),
    ]
    plain = "from pkg.human import ago\n\ndef test_x():\n    assert ago(1) == 'x'\n"
    assert [f.call for f in static_examples("ago", "pkg.human", {"t.py": plain})] == ["ago(1)"]


# ------------------------------------------------------------------ the failing call


def test_the_failing_calls_known_arguments_are_left_out_however_the_class_is_named():
    failing = "dt.timedelta(seconds=60)"
    assert _same_arguments("timedelta(seconds=60)", failing)
    assert _same_arguments("datetime.timedelta( seconds = 60 )", failing)
    assert not _same_arguments("dt.timedelta(seconds=61)", failing)
    assert not _same_arguments("dt.timedelta(minutes=60)", failing)
    assert not _same_arguments("60", failing)
    # matched by parameter as literals are
    from referee.checks.arbitration.suite import parameters

    signature = parameters("def ago(delta, short=False):")
    assert _same_arguments("delta=timedelta(seconds=60), short=False", failing, signature)


def test_the_scan_leaves_out_the_failing_calls_arguments_written_another_way(tmp_path: Path):
    root = project(tmp_path / "p", CORRECT, OLD_WORDING)
    scan = suite_examples(
        root, "ago", "text", "tests/test_text.py", (None, "test_one_minute"),
        "dt.timedelta(seconds=60)",
    )  # fmt: skip
    assert [f.call for f in scan.found] == [
        "ago(dt.timedelta(seconds=5))",
        "ago(dt.timedelta(minutes=2))",
        "ago(timedelta(seconds=30))",
    ]
    assert scan.excluded == {"the failing call's arguments": 1, "in the failing test": 1}


# ------------------------------------------------------------------ running them


def _limits() -> sandbox.Limits:
    return sandbox.Limits(timeout_s=10)


def test_passing_examples_run_with_their_definitions_and_compare_built_values(tmp_path: Path):
    module = (
        "import datetime\n\n\ndef parse(text):\n"
        "    y, m, d = map(int, text.split('-'))\n"
        "    return datetime.datetime(y, m, d)\n"
    )
    tests = (
        "from datetime import datetime\nimport datetime as dt\nfrom text import parse\n\n\n"
        "def test_ok():\n    assert parse('2019-03-29') == datetime(2019, 3, 29)\n\n\n"
        "def test_wrong_day():\n    assert parse('2019-03-30') == datetime(2019, 3, 29)\n\n\n"
        "def test_plus():\n    assert parse('2019-01-01') == dt.datetime(2019, 1, 1, 0, 0)\n"
    )
    root = project(tmp_path / "p", module, tests)
    scan = suite_examples(root, "parse", "text", "tests/test_text.py", (None, "x"), "'0'")
    files = {"text.py": module}
    kept = passing_examples(scan, "parse", "text.py", files, _limits())
    assert [(f.call, f.want, f.compared) for f in kept] == [
        ("parse('2019-03-29')", "datetime(2019, 3, 29)", "datetime.datetime(2019, 3, 29, 0, 0)"),
        (
            "parse('2019-01-01')",
            "dt.datetime(2019, 1, 1, 0, 0)",
            "datetime.datetime(2019, 1, 1, 0, 0)",
        ),
    ]
    assert scan.excluded == {"fails on the current code": 1}
    # an oracle is held to them by the same repr, run with the same definitions
    example = kept[0].example
    assert example == ("parse('2019-03-29')", "datetime(2019, 3, 29)", kept[0].where)
    good = module
    wrong = "import datetime\n\n\ndef parse(text):\n    return datetime.date(2019, 3, 29)\n"
    assert contradicted_example(good, [example], _limits(), "the suite") is None
    why = contradicted_example(wrong, [example], _limits(), "the suite")
    assert why is not None and "returned datetime.date(2019, 3, 29)" in why


def test_an_example_with_a_known_argument_is_run_in_the_sandbox_with_its_imports(tmp_path):
    root = project(tmp_path / "p", CORRECT, OLD_WORDING)
    scan = suite_examples(root, "ago", "text", "tests/test_text.py", (None, "x"), "'0'")
    kept = passing_examples(scan, "ago", "text.py", {"text.py": CORRECT}, _limits())
    # the old wording fails on the right code; the failing test's own is not the failing
    # call here ('0'), and passes
    assert [f.call for f in kept] == [
        "ago(dt.timedelta(seconds=5))",
        "ago(dt.timedelta(minutes=2))",
        "ago(timedelta(seconds=30))",
        "ago(dt.timedelta(seconds=60))",
    ]
    assert scan.excluded == {"fails on the current code": 1}
    program = body(MISREAD)
    why = contradicted_example(program, [f.example for f in kept], _limits(), "the suite")
    assert why == (
        "contradicts the suite's example: ago(dt.timedelta(minutes=2)) returned '120 s ago', "
        "the suite says '2 min ago'"
    )


# ------------------------------------------------------------------ through the engine


def test_no_docstring_known_arguments_spec_from_suite_source_wrong(tmp_path: Path):
    root = project(tmp_path / "p", BUGGY, SUITE)
    model = Recorder([MISREAD, ORACLE, ORACLE, ORACLE, ORACLE], [PATCH])
    result = run(root, NODE, model.backend())
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.truth == "'1 min ago'" and verdict.produced == "'60 s ago'"
    assert verdict.truth_source == "oracles (spec from suite: 3 examples)"
    (gone,) = verdict.replaced_oracles
    assert gone.detail.startswith(
        "contradicts the suite's example: ago(dt.timedelta(minutes=2)) returned '120 s ago'"
    )
    assert "1 in the failing test" in " ".join(verdict.spec_examples)
    assert verdict.fix is not None and verdict.fix.side == "source"
    assert "seconds < 60" in (result.new_text or "")
    # the prompt shows the assertions as written, never the failing case
    prompt_text = "\n".join(
        m["content"]
        for p in model.prompts
        if p[0]["content"] == prompts().oracle_system
        for m in p[1:]
    )
    assert "assert ago(dt.timedelta(seconds=5)) == '5 s ago'" in prompt_text
    assert "assert ago(timedelta(seconds=30)) == '30 s ago'" in prompt_text
    assert "seconds=60" not in prompt_text and "1 min ago" not in prompt_text


def test_cli_apply_fixes_the_source_from_a_suite_of_known_arguments(tmp_path: Path, referee):
    with FakeModel(lambda kind: "", answer_for=misread_first(ORACLE, MISREAD, PATCH)) as model:
        root = cli_project(tmp_path / "p", BUGGY, SUITE, model.url)
        done = referee("arbitrate", NODE, "--format", "json", "--apply", cwd=root)
        prompts_seen = [r["messages"] for r in model.requests]
    verdict = json.loads(done.stdout)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["truth_source"] == "oracles (spec from suite: 3 examples)"
    assert "constructed-argument" in verdict["call_forms"]
    assert verdict["applied"] and verdict["fix"]["side"] == "source"
    assert "seconds < 60" in (root / "text.py").read_text(encoding="utf-8")
    assert [o["source"] for o in verdict["replaced_oracles"]] == ["oracle-1"]
    oracle_text = json.dumps(
        [p[1:] for p in prompts_seen if p[0]["content"] == prompts().oracle_system]
    )
    assert "ago(dt.timedelta(minutes=2)) == '2 min ago'" in oracle_text
    assert "seconds=60" not in oracle_text and "1 min ago" not in oracle_text


# the failing call's value written another way, in a committed test that agrees with the
# buggy code: pinning the oracles to it would blame the test for a real bug
SAME_VALUE = SUITE.replace(
    "def test_one_minute",
    'def test_old_value():\n    assert ago(timedelta(minutes=1)) == "60 s ago"\n\n\n'
    "def test_one_minute",
)


def test_the_failing_calls_values_built_another_way_are_left_out_in_the_sandbox(tmp_path):
    root = project(tmp_path / "p", BUGGY, SAME_VALUE)
    failing = ("dt.timedelta(seconds=60)", "import datetime as dt\n")
    scan = suite_examples(
        root, "ago", "text", "tests/test_text.py", (None, "test_one_minute"), failing[0]
    )
    assert "ago(timedelta(minutes=1))" in [f.call for f in scan.found]  # the text differs
    kept = passing_examples(scan, "ago", "text.py", {"text.py": BUGGY}, _limits(), failing)
    assert [f.call for f in kept] == [
        "ago(dt.timedelta(seconds=5))",
        "ago(dt.timedelta(minutes=2))",
        "ago(timedelta(seconds=30))",
    ]
    assert scan.excluded == {"in the failing test": 1, "the failing call's arguments": 1}
    # without the failing call it is kept: it passes on the current code
    scan = suite_examples(
        root, "ago", "text", "tests/test_text.py", (None, "test_one_minute"), failing[0]
    )
    kept = passing_examples(scan, "ago", "text.py", {"text.py": BUGGY}, _limits())
    assert "ago(timedelta(minutes=1))" in [f.call for f in kept]


def test_through_the_engine_the_same_value_written_another_way_never_pins_the_oracles(
    tmp_path: Path,
):
    root = project(tmp_path / "p", BUGGY, SAME_VALUE)
    model = Recorder([ORACLE], [PATCH])
    verdict = run(root, NODE, model.backend()).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.truth == "'1 min ago'"
    assert "1 the failing call's arguments" in " ".join(verdict.spec_examples)
    assert "minutes=1" not in model.oracle_text()


TABLE = """import datetime as dt

import pytest

from pkg.human import ago


@pytest.mark.parametrize(
    "delta, want",
    [
        (dt.timedelta(seconds=5), "5 s ago"),
        (dt.timedelta(minutes=2), "2 min ago"),
        (1, "1 s ago"),
        pytest.param(dt.timedelta(days=1), "1 d ago", id="a param"),
        (dt.timedelta(seconds=int("3")), "3 s ago"),
        (dt.datetime.now(), "now"),
    ],
)
def test_table(delta, want):
    assert ago(delta) == want


@pytest.mark.parametrize("when", [dt.date(2019, 3, 29), lambda: 1])
def test_one_name(when):
    assert ago(when) == "a date"
"""


def test_a_parametrize_tables_known_values_are_read_as_written():
    found, _ = assertions(TABLE, "tests/test_t.py", "ago", "pkg.human", known=True)
    # by known.py's rules: a built-in value class (``int("3")``) and a lambda are known;
    # a clock (``dt.datetime.now()``) and ``pytest.param`` (not the standard library) not
    assert [(f.call, f.want, f.definitions, f.spans[0]) for f in found] == [
        ("ago(dt.timedelta(seconds=5))", "'5 s ago'", "import datetime as dt\n", (11, 11)),
        ("ago(dt.timedelta(minutes=2))", "'2 min ago'", "import datetime as dt\n", (12, 12)),
        ("ago(1)", "'1 s ago'", "", (13, 13)),
        ("ago(dt.timedelta(seconds=int('3')))", "'3 s ago'", "import datetime as dt\n", (15, 15)),
        ("ago(dt.date(2019, 3, 29))", "'a date'", "import datetime as dt\n", (23, 23)),
        ("ago(lambda: 1)", "'a date'", "", (23, 23)),
    ]
    # the differential check's inputs: the literal row and the standard-library values
    assert [i.arguments for i in suite_inputs("ago", "pkg.human", {"t.py": TABLE})] == [
        "dt.timedelta(seconds=5)",
        "dt.timedelta(minutes=2)",
        "1",
        "dt.date(2019, 3, 29)",
    ]


def test_through_the_engine_a_table_of_timedeltas_is_the_spec(tmp_path: Path):
    tests = (
        "import datetime as dt\n\nimport pytest\n\nfrom text import ago\n\n\n"
        '@pytest.mark.parametrize("delta, want", [\n'
        '    (dt.timedelta(seconds=5), "5 s ago"),\n'
        '    (dt.timedelta(minutes=2), "2 min ago"),\n'
        '    (dt.timedelta(hours=1), "60 min ago"),\n'
        "])\n"
        "def test_table(delta, want):\n    assert ago(delta) == want\n\n\n"
        'def test_one_minute():\n    assert ago(dt.timedelta(seconds=60)) == "1 min ago"\n'
    )
    root = project(tmp_path / "p", BUGGY, tests)
    model = Recorder([MISREAD, ORACLE, ORACLE, ORACLE, ORACLE], [PATCH])
    result = run(root, NODE, model.backend())
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.truth_source == "oracles (spec from suite: 3 examples)"
    assert verdict.fix is not None and verdict.fix.side == "source"
    assert "assert ago(dt.timedelta(hours=1)) == '60 min ago'" in model.oracle_text()


def test_functions_and_lambdas_as_arguments_travel_with_their_definitions(tmp_path: Path):
    module = (
        "def total(fn, xs):\n    out = xs[0]\n"
        "    for x in xs[1:]:\n        out = fn(out, x)\n    return out\n"
    )
    tests = (
        "import math\nfrom operator import add\n\nfrom text import total\n\n\n"
        "def both(a, b):\n    return math.floor(a) + math.floor(b)\n\n\n"
        "def test_total():\n"
        "    assert total(add, [1, 2, 3]) == 6\n"
        "    assert total(both, [1.5, 2.5]) == 3\n"
        "    assert total(lambda a, b: a * b, [2, 3]) == 6\n"
        "    assert total(max, [2, 7, 3]) == 7\n"
    )
    root = project(tmp_path / "p", module, tests)
    scan = suite_examples(root, "total", "text", "tests/test_text.py", (None, "x"), "'0'")
    assert [f.definitions for f in scan.found] == [
        "from operator import add\n",
        "import math\ndef both(a, b):\n    return math.floor(a) + math.floor(b)\n",
        "",
        "",
    ]
    kept = passing_examples(scan, "total", "text.py", {"text.py": module}, _limits())
    assert len(kept) == 4, scan.excluded
    sums = "def total(fn, xs):\n    return sum(xs)\n"
    why = contradicted_example(sums, [f.example for f in kept], _limits(), "the suite")
    assert why is not None and why.startswith(
        "contradicts the suite's example: total(both, [1.5, 2.5]) returned 4.0"
    )
    assert contradicted_example(module, [f.example for f in kept], _limits()) is None


NESTED = """import math

from pkg.human import ago


def test_nested():
    def triple(x):
        return math.floor(x) * 3

    limit = 3

    def capped(x):
        return min(x, limit)

    assert ago(triple) == "triple"
    assert ago(lambda x: triple(x) + 1) == "lambda over a definition"
    assert ago(capped) == "uses a local"
    assert ago(later) == "defined after"

    def later(x):
        return x

    def twice(x):
        return x

    twice = None
    assert ago(twice) == "bound twice"
"""


def test_a_function_the_test_defines_once_before_the_assertion_travels_as_isolation_reads_it():
    found, _ = assertions(NESTED, "tests/test_n.py", "ago", "pkg.human", known=True)
    assert [(f.call, f.definitions) for f in found] == [
        ("ago(triple)", "import math\ndef triple(x):\n    return math.floor(x) * 3\n"),
        (
            "ago(lambda x: triple(x) + 1)",
            "import math\ndef triple(x):\n    return math.floor(x) * 3\n",
        ),
    ]


def test_the_package_that_re_exports_the_function_names_it_too():
    # unittest style, the function called through the package that re-exports it
    text = (
        "import datetime as dt\nimport unittest\n\nimport human\nimport human as hu\n"
        "from human import ago as when\n\n\n"
        "class TestAgo(unittest.TestCase):\n"
        "    def test_seconds(self):\n"
        '        self.assertEqual(human.ago(dt.timedelta(seconds=1)), "1 s ago")\n'
        '        self.assertEqual(hu.ago(dt.timedelta(seconds=2)), "2 s ago")\n'
        '        self.assertEqual(when(dt.timedelta(seconds=3)), "3 s ago")\n'
        '        self.assertEqual(human.other.ago(4), "another module")\n'
    )
    found, _ = assertions(text, "tests/test_h.py", "ago", "human.time", known=True)
    assert [f.call for f in found] == [
        "ago(dt.timedelta(seconds=1))",
        "ago(dt.timedelta(seconds=2))",
        "ago(dt.timedelta(seconds=3))",
    ]


def test_a_known_argument_that_builds_the_failing_calls_literal_is_left_out(tmp_path: Path):
    module = "def inc(x):\n    return x + 2\n"
    tests = (
        "from text import inc\n\n\ndef test_inc():\n"
        "    assert inc(int('1')) == 3\n    assert inc(int('5')) == 7\n    assert inc(2) == 4\n"
    )
    root = project(tmp_path / "p", module, tests)
    scan = suite_examples(root, "inc", "text", "tests/test_text.py", (None, "x"), "1")
    kept = passing_examples(scan, "inc", "text.py", {"text.py": module}, _limits(), ("1", ""))
    assert [f.call for f in kept] == ["inc(int('5'))", "inc(2)"]
    assert scan.excluded == {"the failing call's arguments": 1}
