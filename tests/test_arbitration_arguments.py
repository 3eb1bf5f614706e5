"""Arguments that are no literals but are known without running the test, arbitrated:
built-ins' and exceptions' names (``f(xs, LookupError)``), functions and classes of the
standard library or of the test module itself passed as values (``apply_all(inc, xs)``),
lambdas, and objects of standard-library value classes built from known arguments
(``dt.timedelta(seconds=1)``, ``Decimal("1.0")``, a parametrize case's
``typing.ForwardRef("X")``). What such an argument needs — the test module's imports of the
names it uses, the definitions it names — travels with the call as its definitions; a
name the test module imports from the project cannot travel to the oracles' sandbox and
is UNCLEAR with one line that says so.

End to end through ``referee arbitrate --apply`` with the fake OpenAI-compatible model
server: a wrong function called on a ``timedelta``, and one called on a function the test
module defines, are fixed, and the fixes pass their tests.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import jsonschema
import pytest
from red_team.fake_openai import FakeModel
from test_arbitration_oracles import assert_tests_pass, cli_project

from referee.checks import sandbox
from referee.checks.arbitration import known
from referee.checks.arbitration.fix import fix_test
from referee.checks.arbitration.isolate import NotIsolated, TestRef, isolate
from referee.checks.arbitration.known import with_definitions
from referee.checks.models import arbitration_schema
from referee.checks.source import SourceFile

HEAD = """import datetime as dt
import random
import typing
from decimal import Decimal
from operator import add
from pathlib import Path

import pytest
from mypkg import Command, helper

SCALE = 3


def inc(x):
    return x + 1


def scaled(x):
    return x * SCALE


def twice(x):
    return inc(inc(x))


@staticmethod
def decorated(x):
    return x

"""


def _isolated_text(lines: str, *, params: str = "", indices: dict[str, int] | None = None):
    """``lines`` as the body of ``test_x`` after :data:`HEAD`."""
    text = HEAD + (params + "\n" if params else "") + "def test_x(" + ", ".join(indices or {})
    return text + "):\n" + "".join(f"    {line}\n" for line in lines.splitlines())


def _isolated(lines: str, *, params: str = "", indices: dict[str, int] | None = None):
    """``lines`` as the body of ``test_x`` after :data:`HEAD`, its last line isolated."""
    text = _isolated_text(lines, params=params, indices=indices)
    line = text.rstrip("\n").count("\n") + 1
    return isolate(
        SourceFile("tests/t.py", text), TestRef.parse("tests/t.py::test_x"), line, indices
    )


@pytest.mark.parametrize(
    ("lines", "call", "forms", "definitions"),
    [
        ("assert f([1], LookupError) == 2", "f([1], LookupError)", ["builtin-argument"], ""),
        ("assert f(type, str.upper) == 2", "f(type, str.upper)", ["builtin-argument"], ""),
        ("assert f(add) == 2", "f(add)", ["function-argument"], "from operator import add\n"),
        (
            "assert f(inc) == 2",
            "f(inc)",
            ["function-argument"],
            "def inc(x):\n    return x + 1\n",
        ),
        (
            "assert f(twice) == 2",  # a definition that uses another one takes both
            "f(twice)",
            ["function-argument"],
            "def inc(x):\n    return x + 1\ndef twice(x):\n    return inc(inc(x))\n",
        ),
        (
            "assert f(lambda x: x * 2, [1]) == 2",
            "f(lambda x: x * 2, [1])",
            ["function-argument"],
            "",
        ),
        (
            "def binop(a, b):\n    raise AssertionError('no')\nassert f(binop, []) == []",
            "f(binop, [])",
            ["function-argument"],
            "def binop(a, b):\n    raise AssertionError('no')\n",
        ),
        (
            "assert f(dt.timedelta(seconds=1)) == 'a second'",
            "f(dt.timedelta(seconds=1))",
            ["constructed-argument"],
            "import datetime as dt\n",
        ),
        (
            'assert f(Decimal("1.0"), frozenset({1}), range(3), Path("a/b")) == 1',
            'f(Decimal("1.0"), frozenset({1}), range(3), Path("a/b"))',
            ["constructed-argument"],
            "from decimal import Decimal\nfrom pathlib import Path\n",
        ),
        (
            "assert f(when=dt.datetime(2019, 3, 29, tzinfo=dt.timezone.utc)) == 1",
            "f(when=dt.datetime(2019, 3, 29, tzinfo=dt.timezone.utc))",
            ["constructed-argument"],
            "import datetime as dt\n",
        ),
        (
            'assert f("a"\n  "b") == 1',  # a literal over lines
            "f('ab')",
            [],
            "",
        ),
    ],
    ids=[
        "exception",
        "builtins",
        "stdlib-function",
        "module-function",
        "module-functions",
        "lambda",
        "nested-function",
        "timedelta",
        "value-classes",
        "keyword-nested",
        "concatenated",
    ],
)
def test_a_known_argument_is_isolated_with_what_it_needs(lines, call, forms, definitions):
    isolated = _isolated(lines)
    assert isolated.call == call
    assert list(isolated.forms) == forms
    assert isolated.definitions == definitions
    assert isolated.expected.kind == "assertion"  # the expected value stays a literal


@pytest.mark.parametrize(
    ("lines", "kind"),
    [
        ('assert f(1) == (\n    "a\\n"\n    "b\\n"\n)', "assertion"),
        ('expected = (\n    "a\\n"\n    "b\\n"\n)\nassert f(1) == expected', "assignment"),
        ('assert f(1) == (\n    "a\\n"  # the first line\n    "b\\n"\n)', "assertion"),
    ],
    ids=["in-the-assertion", "assigned", "with-a-comment"],
)
def test_an_expected_string_written_over_lines_is_one_literal_a_fix_replaces(lines, kind):
    """Real tests write a long expected output as strings concatenated over lines; it is
    the expected value (not "not a literal"), and a certified fix replaces all of it."""
    isolated = _isolated(lines)
    assert (isolated.call, isolated.expected.kind) == ("f(1)", kind)
    assert isolated.expected.text == repr("a\nb\n")
    text = _isolated_text(lines)
    span = (isolated.assertion_start, isolated.assertion_end)
    fixed = fix_test(text, "tests/t.py", isolated.expected, repr("a\nc\n"), span)
    tree = ast.parse(fixed.new_text)
    (test,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "test_x"]
    values = [n.value for n in ast.walk(test) if isinstance(n, ast.Constant)]
    assert "a\nc\n" in values and "a\n" not in values and "b\n" not in values


def test_a_parametrize_case_built_from_a_value_class_is_read_as_it_is_written():
    params = '@pytest.mark.parametrize("annot", [typing.ClassVar, typing.ForwardRef("X[str]")])'
    first = _isolated("assert f(annot)", params=params, indices={"annot": 0})
    second = _isolated("assert f(annot)", params=params, indices={"annot": 1})
    assert (first.call, first.definitions) == ("f(typing.ClassVar)", "import typing\n")
    assert first.forms == ("boolean", "function-argument", "parametrize")
    assert second.call == 'f(typing.ForwardRef("X[str]"))'
    assert second.forms == ("boolean", "constructed-argument", "parametrize")


def test_a_value_class_built_from_a_parametrized_literal():
    params = '@pytest.mark.parametrize("s", ["1.5"])'
    isolated = _isolated("assert f(Decimal(s)) == 1", params=params, indices={"s": 0})
    assert isolated.call == 'f(Decimal("1.5"))'
    assert "constructed-argument" in isolated.forms and "parametrize" in isolated.forms


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        (
            'assert match(Command("git push", "")) == 1',
            'an argument `Command("git push", "")` uses `Command`, which the test module '
            "imports from `mypkg`; the oracles run in a sandbox that holds the standard "
            "library only",
        ),
        ("assert f(helper) == 1", "an argument `helper` uses `helper`, which the test module"),
        (
            "assert f(random.Random(1)) == 1",
            "an argument `random.Random(1)` is built by `random.Random`, which is no value "
            "class of the standard library",
        ),
        (
            "assert f(scaled) == 1",
            "an argument `scaled` uses `SCALE`, which is no built-in, standard-library import",
        ),
        (
            "n = g()\nassert f(lambda x: x + n) == 1",
            "an argument `lambda x: x + n` uses `n`, a local of the test",
        ),
        (
            # the lambda's `inc` is the test's local, not the module's function
            "inc = g()\nassert f(lambda x: inc(x)) == 1",
            "an argument `lambda x: inc(x)` uses `inc`, a local of the test",
        ),
        (
            "k = 2\ndef h(x):\n    return x * k\nassert f(h) == 1",
            "an argument `h` uses `k`, a local of the test",
        ),
        ("assert f(decorated) == 1", "an argument `decorated` is a decorated function"),
        ("assert f(id) == 1", "an argument `id` is not a literal"),
        ("assert f(object()) == 1", "an argument `object()` is not a literal"),
        (
            "assert f(dt.datetime.now()) == 1",
            "an argument `dt.datetime.now()` is built by `dt.datetime.now`, which is no value",
        ),
        (
            "def g(x):\n    return x\ndef g(x):\n    return 2\nassert f(g) == 1",
            "an argument `g` is a function or class the test defines more than once",
        ),
        ("assert f(Decimal(g())) == 1", "an argument `g()` is not a literal"),
    ],
    ids=[
        "project-class",
        "project-function",
        "not-a-value-class",
        "module-constant",
        "local-in-lambda",
        "shadowed-in-lambda",
        "local-in-nested-function",
        "decorated",
        "unstable-builtin",
        "object",
        "clock",
        "redefined",
        "unknown-inner",
    ],
)
def test_an_argument_that_cannot_travel_is_refused_in_one_line(lines, reason):
    with pytest.raises(NotIsolated) as caught:
        _isolated(lines)
    message = str(caught.value)
    assert message.startswith("cannot isolate the call under test: " + reason), message
    assert "\n" not in message


def test_a_known_value_is_never_the_expected_value():
    # the expected side is a literal a test fix may replace, or a value the test
    # computes: a name there is never read as a known argument
    with pytest.raises(NotIsolated, match="the expected value `LookupError` is not a literal"):
        _isolated("assert f(1) == LookupError")


def test_a_project_file_named_like_a_standard_module_is_never_imported_here(
    tmp_path: Path, monkeypatch
):
    # referee looks at a standard-library name by importing its module in its own
    # process: a project file that shadows the module's name must not run there
    marker = tmp_path / "ran"
    (tmp_path / "colorsys.py").write_text(
        f"open({str(marker)!r}, 'w').close()\ndef rgb_to_hsv(*a):\n    return a\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    known._from_stdlib.cache_clear()
    known._resolve.cache_clear()
    text = "from colorsys import rgb_to_hsv\n\ndef test_x():\n    assert f(rgb_to_hsv) == 1\n"
    try:
        with pytest.raises(NotIsolated, match="which the standard library here does not have"):
            isolate(SourceFile("tests/t.py", text), TestRef.parse("tests/t.py::test_x"), 4)
    finally:
        known._from_stdlib.cache_clear()
        known._resolve.cache_clear()
    assert not marker.exists()


# ------------------------------------------------------------------ the definitions


def test_definitions_run_beside_a_program_whose_own_names_stay_its_own():
    # the program (an oracle) has a helper named like the test's function; each side
    # sees its own: the function under test its helper, the argument the test's
    program = "def inc(x):\n    return x + 100\n\ndef apply(f, x):\n    return inc(f(x))\n"
    definitions = "import datetime as dt\ndef inc(x):\n    return x + 1\n"
    call = with_definitions("apply(inc, dt.timedelta(days=1).days)", definitions)
    result = sandbox.evaluate(program, call, limits=sandbox.Limits(sandbox="weak"))
    assert (result.status, result.value) == ("ok", "102"), result.message
    assert with_definitions("f(1)", "") == "f(1)"


# ------------------------------------------------------------------ end to end, --apply

MODULE = '''import datetime


def seconds_word(delta: datetime.timedelta) -> str:
    """How long DELTA is in whole seconds, in words: "1 second", "5 seconds"."""
    n = int(delta.total_seconds())
    return f"{{n}} second" + ("{one}" if n == 1 else "{many}")


def apply_all(func, items: list) -> list:
    """FUNC applied to each of ITEMS, in order, as a list."""
    return [func(x) for x in items{skip}]
'''
RIGHT = MODULE.format(one="", many="s", skip="")
WRONG = MODULE.format(one="s", many="", skip="[1:]")
ORACLE = """import datetime


def inc(x):
    return x - 1000  # a helper named like the test's function: not the test's


def seconds_word(delta):
    n = int(delta.total_seconds())
    return f"{n} second" + ("" if n == 1 else "s")


def apply_all(func, items):
    return [func(x) for x in items]
"""
PATCH = """def seconds_word(delta: datetime.timedelta) -> str:
    n = int(delta.total_seconds())
    return f"{n} second" + ("" if n == 1 else "s")


def apply_all(func, items: list) -> list:
    return [func(x) for x in items]
"""
TESTS = """import datetime as dt

from text import apply_all, seconds_word


def inc(x):
    return x + 1


def test_x():
    {line}
"""


def _answer(kind: str) -> str:
    return ORACLE if kind == "oracle" else PATCH


@pytest.mark.parametrize(
    ("line", "forms", "call", "produced", "truth"),
    [
        (
            'assert seconds_word(dt.timedelta(seconds=1)) == "1 second"',
            ["constructed-argument"],
            "seconds_word(dt.timedelta(seconds=1))",
            "'1 seconds'",
            "'1 second'",
        ),
        (
            "assert apply_all(inc, [1, 2]) == [2, 3]",
            ["function-argument"],
            "apply_all(inc, [1, 2])",
            "[3]",
            "[2, 3]",
        ),
        (
            "assert apply_all(abs, [-1, -2]) == [1, 2]",
            ["builtin-argument"],
            "apply_all(abs, [-1, -2])",
            "[2]",
            "[1, 2]",
        ),
    ],
    ids=["timedelta", "test-module-function", "builtin"],
)
def test_cli_fixes_a_wrong_function_called_on_a_known_argument(
    tmp_path: Path, referee, line, forms, call, produced, truth
):
    tests = TESTS.format(line=line)
    with FakeModel(_answer) as model:
        root = cli_project(tmp_path / "p", WRONG, tests, model.url)
        done = referee(
            "arbitrate", "tests/test_text.py::test_x", "--format", "json", "--apply", cwd=root
        )
    assert done.stdout.strip(), (done.returncode, done.stderr)
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call_forms"] == forms and verdict["call"] == call
    assert (verdict["produced"], verdict["truth"]) == (produced, truth)
    assert verdict["applied"] is True
    # the test is never edited: its arguments are not literals a fix may replace
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    # the fix passes the test, run for real
    assert_tests_pass(root)


def test_cli_edits_only_the_expected_literal_of_a_test_called_on_a_known_argument(
    tmp_path: Path, referee
):
    line = "assert apply_all(inc, [1, 2]) == [2, 4]"
    tests = TESTS.format(line=line)
    with FakeModel(_answer) as model:
        root = cli_project(tmp_path / "p", RIGHT, tests, model.url)
        done = referee(
            "arbitrate", "tests/test_text.py::test_x", "--format", "json", "--apply", cwd=root
        )
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    assert verdict["verdict"] == "TEST_WRONG", verdict["reason"]
    assert verdict["call_forms"] == ["function-argument"]
    assert verdict["applied"] is True and verdict["certificate"] is not None
    # the argument `inc` stays as written; only the expected literal changes
    fixed = (root / "tests" / "test_text.py").read_text(encoding="utf-8")
    assert fixed == tests.replace("== [2, 4]", "== [2, 3]")
    assert (root / "text.py").read_text(encoding="utf-8") == RIGHT
