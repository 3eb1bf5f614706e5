"""Calls through objects and built-in wrappers, arbitrated (issue 40): ``value = f(x)``
then ``assert repr(value) == ...`` (a wrapper of a value the test assigned once), the text
of an object of a project class (``str(Bits(5, 4))``: its ``__str__``), building an object
the test expects to raise (``with pytest.raises(ValueError): Bits(4, 2)``: its
``__init__``) — and, in one line, why an object a function or another object builds, or a
name a value was given (``f(x).__name__``), has no truth.

End to end through ``referee arbitrate --apply`` with the fake OpenAI-compatible model
server; the isolation and the oracle contract without a model.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from red_team.fake_openai import FakeModel
from test_arbitration_oracles import cli_project

from referee.checks.arbitration.isolate import TestRef, callee_names, isolate
from referee.checks.arbitration.methods import method_spec
from referee.checks.arbitration.objects import (
    receiver_problem,
    routed,
    split_arguments,
)
from referee.checks.arbitration.sites import Isolated, NotIsolated
from referee.checks.models import arbitration_schema
from referee.checks.source import SourceFile

MODULE = '''class Bits:
    """A row of bits, written as text of 0s and 1s."""

    def __init__(self, value: int, length: int) -> None:
        """VALUE in LENGTH bits. A value that does not fit in LENGTH bits (2 ** LENGTH or
        more) raises ValueError."""
        if value {fits} 2**length:
            raise ValueError("the value does not fit")
        self.value = value
        self.length = length

    def __str__(self) -> str:
        """The bits, the most significant first, padded with 0s to the length."""
        return format(self.value, "b"){pad}

    def flip(self, index: int) -> int:
        """The value with the bit at INDEX (0: the least significant) flipped; an index
        past the length raises IndexError."""
        return self.value ^ (1 << index)


def make(value: int, length: int) -> Bits:
    """Bits of VALUE in LENGTH bits."""
    return Bits(value, length)


def shout(text: str) -> str:
    """TEXT in capitals, an exclamation mark after it."""
    return text.upper(){bang}
'''
RIGHT = MODULE.format(fits=">=", pad=".zfill(self.length)", bang=' + "!"')
WRONG_STR = MODULE.format(fits=">=", pad="", bang=' + "!"')
WRONG_INIT = MODULE.format(fits=">", pad=".zfill(self.length)", bang=' + "!"')
WRONG_SHOUT = MODULE.format(fits=">=", pad=".zfill(self.length)", bang="")

ORACLES = {
    "__str__": """def __str__(init_args: tuple, init_kwargs: dict) -> str:
    value, length = init_args
    return format(value, "b").zfill(length)
""",
    "__init__": """def build(init_args: tuple, init_kwargs: dict):
    value, length = init_args
    if value >= 2 ** length:
        raise ValueError("too big")
    return None
""",
    "shout": 'def shout(text: str) -> str:\n    return text.upper() + "!"\n',
    "flip": """def flip(init_args: tuple, init_kwargs: dict, index: int) -> int:
    value, length = init_args
    if index >= length:
        raise IndexError(index)
    return value ^ (1 << index)
""",
}
PATCHES = {
    "__str__": 'def __str__(self) -> str:\n    return format(self.value, "b").zfill(self.length)\n',
    "shout": 'def shout(text: str) -> str:\n    return text.upper() + "!"\n',
}


def _tests(lines: str) -> str:
    return "import pytest\n\nfrom text import Bits, make, shout\n\n\ndef test_x():\n" + "".join(
        f"    {line}\n" for line in lines.splitlines()
    )


def _cli(referee, tmp_path: Path, module: str, lines: str, subject: str) -> tuple[dict, Path, list]:
    answers = lambda kind: ORACLES[subject] if kind == "oracle" else PATCHES.get(subject, "")  # noqa: E731
    with FakeModel(answers) as model:
        root = cli_project(tmp_path / "p", module, _tests(lines), model.url)
        done = referee(
            "arbitrate", "tests/test_text.py::test_x", "--format", "json", "--apply", cwd=root
        )
        requests = list(model.requests)
    assert done.stdout.strip(), (done.returncode, done.stderr)
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    return verdict, root, requests


# ------------------------------------------------------------------ end to end, --apply


def test_cli_fixes_a_function_whose_value_the_test_reads_through_a_builtin(tmp_path: Path, referee):
    line = 'value = shout("hey")\nassert repr(value) == "\'HEY!\'"'
    verdict, root, _ = _cli(referee, tmp_path, WRONG_SHOUT, line, "shout")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == 'repr(shout("hey"))'
    assert verdict["call_forms"] == ["assigned-call"]
    # every oracle's value read through the same built-in: its repr
    assert (verdict["produced"], verdict["truth"]) == ("\"'HEY'\"", "\"'HEY!'\"")
    assert verdict["applied"] is True
    fixed = (root / "text.py").read_text(encoding="utf-8")
    assert 'return text.upper() + "!"' in fixed
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == _tests(line)


def test_cli_blames_the_source_when_a_boolean_of_its_value_is_wrong(tmp_path: Path, referee):
    # bool(...) == True is read as `assert shout("")`: the source can be blamed and fixed,
    # the test is never edited
    line = 'assert bool(shout("")) == True'
    verdict, root, _ = _cli(referee, tmp_path, WRONG_SHOUT, line, "shout")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == 'bool(shout(""))' and verdict["call_forms"] == ["boolean"]
    assert verdict["truth"] == "True" and verdict["applied"] is True
    assert 'return text.upper() + "!"' in (root / "text.py").read_text(encoding="utf-8")


def test_cli_fixes_the_str_of_an_object_built_from_literals(tmp_path: Path, referee):
    line = 'assert str(Bits(5, 4)) == "0101"'
    verdict, root, requests = _cli(referee, tmp_path, WRONG_STR, line, "__str__")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == "str(Bits(5, 4))"
    assert verdict["call_forms"] == ["method-of-literal-object", "object-text"]
    assert (verdict["produced"], verdict["truth"]) == ("'101'", "'0101'")
    assert verdict["applied"] is True
    fixed = (root / "text.py").read_text(encoding="utf-8")
    assert '        return format(self.value, "b").zfill(self.length)\n' in fixed
    # the oracles wrote a function of the constructor's arguments, never saw a body
    prompts = [json.dumps(r["messages"]) for r in requests if "init_args" in json.dumps(r)]
    assert prompts
    for prompt in prompts:
        assert "def __str__(init_args: tuple, init_kwargs: dict) -> str" in prompt
        assert "format(self.value" not in prompt and "0101" not in prompt


def test_cli_blames_a_construction_that_does_not_raise(tmp_path: Path, referee):
    lines = "with pytest.raises(ValueError):\n    Bits(4, 2)"
    verdict, root, requests = _cli(referee, tmp_path, WRONG_INIT, lines, "__init__")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == "Bits(4, 2)"
    assert "construction" in verdict["call_forms"]
    assert verdict["truth"] == "raises ValueError"
    prompts = [json.dumps(r["messages"]) for r in requests]
    assert prompts and all("Bits(*init_args, **init_kwargs)" in p for p in prompts)
    # a raises assertion: the test is never edited
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == _tests(lines)


def test_cli_blames_a_method_of_an_assigned_object_that_does_not_raise(tmp_path: Path, referee):
    lines = "b = Bits(5, 4)\nwith pytest.raises(IndexError):\n    b.flip(9)"
    verdict, root, requests = _cli(referee, tmp_path, RIGHT, lines, "flip")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == "Bits(5, 4).flip(9)"
    assert verdict["call_forms"] == ["raises", "method-of-assigned-object"]
    assert verdict["truth"] == "raises IndexError"
    prompts = [json.dumps(r["messages"]) for r in requests]
    assert prompts and all(
        "def flip(init_args: tuple, init_kwargs: dict, index: int)" in p for p in prompts
    )
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == _tests(lines)


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        (
            "assert Bits(5, 4).length == 5",
            "cannot isolate the call under test: `Bits(5, 4).length` builds an object of the "
            "class `Bits`",
        ),
        (
            'assert make(5, 4).__str__() == "0102"',
            "cannot isolate the call under test: `str(make(5, 4))` calls a method of the "
            "value `make` returns",
        ),
        (
            'v = shout("a")\nassert v.__doc__ == "x"',
            "reads the attribute `__doc__` of the call's value: the name or text its maker gave it",
        ),
        (
            "t = make(5, 4)\nwith pytest.raises(IndexError):\n    t.flip(9)",
            "cannot isolate the call under test: `make(5, 4).flip(9)` calls a method of the "
            "value `make` returns",
        ),
    ],
    ids=["attribute-of-a-built-object", "factory", "name", "factory-raises"],
)
def test_cli_says_which_truth_an_object_lacks_in_one_line(tmp_path: Path, referee, lines, reason):
    verdict, _, requests = _cli(referee, tmp_path, RIGHT, lines, "shout")
    assert verdict["verdict"] == "UNCLEAR"
    assert reason in verdict["reason"], verdict["reason"]
    assert "\n" not in verdict["reason"]
    assert not requests and verdict["applied"] is False


# ------------------------------------------------------------------ isolation, no run


def _isolate(lines: str):
    text = _tests(lines)
    source = SourceFile("tests/test_text.py", text)
    test = TestRef.parse("tests/test_text.py::test_x")
    return isolate(source, test, len(text.splitlines())), callee_names(source, test)


@pytest.mark.parametrize("wrapper", ["repr", "abs", "len", "sorted", "frozenset", "max"])
def test_a_builtin_wraps_a_call_or_a_value_assigned_once(wrapper):
    isolated, _ = _isolate(f"assert {wrapper}(shout('a')) == 1")
    assert (isolated.callee, isolated.wrapper) == ("shout", wrapper)
    isolated, _ = _isolate(f"v = shout('a')\nassert {wrapper}(v) == 1")
    assert (isolated.callee, isolated.wrapper, isolated.forms) == (
        "shout",
        wrapper,
        ("assigned-call",),
    )


@pytest.mark.parametrize(
    ("line", "op"),
    [
        ("assert bool(shout('a')) == False", "falsy"),
        ("assert any(shout('a')) == True", "truthy"),
        ("v = shout('a')\nassert all(v) is True", "is"),  # identity: already never an edit
    ],
)
def test_a_value_only_true_or_false_is_a_boolean_expectation(line, op):
    # many wrong programs share a boolean: its agreement blames the source, never the test
    isolated, _ = _isolate(line)
    assert isolated.op == op and isolated.wrapper in ("bool", "any", "all")
    assert op == "is" or "boolean" in isolated.forms


def test_a_boolean_compared_with_something_else_is_refused():
    with pytest.raises(NotIsolated, match="is true or false, and the test compares it with `1`"):
        _isolate("assert bool(shout('a')) == 1")


@pytest.mark.parametrize(
    "lines",
    [
        "v = shout('a')\nv = v + 'b'\nassert str(v) == 'A!b'",  # bound twice
        "v = shout('a')\nprint(v)\nassert str(v) == 'A!'",  # mentioned in between
        "assert str('a') == 'a'",  # no call at all
        "v = 'a'\nassert str(v) == 'a'",  # a literal, not a call
    ],
)
def test_a_builtin_of_something_else_than_one_call_is_refused_in_one_line(lines):
    with pytest.raises(NotIsolated, match="applies a built-in to a value that is not a call"):
        _isolate(lines)


def test_the_recorder_is_asked_what_an_object_s_class_defines():
    _, names = _isolate("b = Bits(5, 4)\nassert str(b) == '0101'")
    assert "Bits.__init__" in names and "Bits.__str__" in names
    _, names = _isolate("assert repr(Bits(5, 4)) == '0101'")
    assert "Bits.__repr__" in names


_NAMES = {
    "Bits": {"file": "/p/text.py", "qualname": "Bits", "module": "text", "kind": "type"},
    "Bits.__init__": {"file": "/p/text.py", "qualname": "Bits.__init__", "kind": "method"},
    "Bits.__str__": {"file": "/p/text.py", "qualname": "Bits.__str__", "kind": "method"},
    "Base.__repr__": {"file": "/p/text.py", "qualname": "Base.__repr__", "kind": "method"},
    "make": {"file": "/p/text.py", "qualname": "make", "module": "text", "kind": "function"},
}


def test_the_text_of_an_object_is_its_class_s_own_method():
    isolated, _ = _isolate("b = Bits(5, length=4)\nassert str(b) == '0101'")
    routed_ = routed(isolated, _NAMES)
    assert routed_.callee == "Bits.__str__" and routed_.wrapper is None
    assert routed_.constructor_arguments == ("5", "length=4")
    assert routed_.forms == ("method-of-assigned-object", "object-text")
    assert routed_.call == "str(Bits(5, length=4))"
    assert routed_.oracle_arguments == "(5, ), {'length': 4}"
    # a function's value read through str stays the function's
    isolated, _ = _isolate("assert str(make(5, 4)) == '0101'")
    assert routed(isolated, _NAMES) == isolated


def test_an_inherited_or_builtin_text_method_is_refused():
    names = {**_NAMES, "Bits.__repr__": _NAMES["Base.__repr__"]}
    isolated, _ = _isolate("assert repr(Bits(5, 4)) == 'Bits(5)'")
    with pytest.raises(NotIsolated, match="does not define itself in Python"):
        routed(isolated, names)


def test_the_construction_contract_takes_the_constructor_s_arguments():
    spec = method_spec(RIGHT, "text.py", "text", "Bits.__init__", "method")
    assert spec.signature == "def build(init_args: tuple, init_kwargs: dict):"
    assert spec.oracle_call == "Bits(*init_args, **init_kwargs)"
    stub = spec.class_stub or ""
    assert "2 ** LENGTH" in stub and "raise ValueError" not in stub  # the docstring, no body


def test_arguments_are_split_as_written():
    assert split_arguments('1, "a, b", sep=","') == ("1", '"a, b"', 'sep=","')
    assert split_arguments("") == ()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (
            "def test_x():\n    t = env.from_string('a')\n    with pytest.raises(KeyError):\n"
            "        t.render()\n",
            "`env.from_string('a').render()` calls a method of the object "
            "`env.from_string(...)` returns (no class the test module imports)",
        ),
        (
            "def test_x():\n    assert env.from_string('a').render() == 'b'\n",
            "`env.from_string('a').render()` calls a method of the object "
            "`env.from_string(...)` returns",
        ),
        (
            "def test_x(tmpl):\n    with pytest.raises(KeyError):\n        tmpl.render()\n",
            "`tmpl` is an object a fixture gives the test from a conftest.py or a plugin",
        ),
        (
            "def test_x():\n    t = make(1, 2)\n    with pytest.raises(KeyError):\n"
            "        t.flip(9)\n",
            "`make(1, 2).flip(9)` calls a method of the object the function `make` returns",
        ),
        (
            "def test_x():\n    b = Bits(5, 4)\n    b.flip(1)\n    with pytest.raises(KeyError):\n"
            "        b.flip(9)\n",
            "`b` is an object the test does not build from a class and literals, in the "
            "assignment the assertion reads, and leave alone",
        ),
    ],
    ids=[
        "assigned-from-another-object",
        "built-by-another-object",
        "fixture",
        "function",
        "changed-before",
    ],
)
def test_a_receiver_no_source_can_build_is_named_in_one_line(text, reason):
    source = SourceFile("tests/test_text.py", "import pytest\n\n" + text)
    test = TestRef.parse("tests/test_text.py::test_x")
    names = {"make": _NAMES["make"], "Bits": _NAMES["Bits"]}
    try:  # an object the test does not build once and leave alone: before any run
        isolated: Isolated | None = isolate(source, test, len(source.text.splitlines()))
    except NotIsolated as exc:
        isolated, problem = None, str(exc)
    else:
        problem = receiver_problem(isolated, names, source, test) or ""
    assert reason in problem and "\n" not in problem, problem
    assert problem.startswith("cannot isolate the call under test: ")
    if "env.from_string" in text:
        # the same object built by a class of the project is no problem here
        assert isolated is not None
        as_class = {**names, "env.from_string": _NAMES["Bits"]}
        assert isolated.constructor == "env.from_string"
        assert receiver_problem(isolated, as_class, source, test) is None
