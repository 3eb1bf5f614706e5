"""Arguments a test unpacks into the call: ``f(*args)`` and ``f(**kwargs)`` where ``args``
is a literal list or tuple and ``kwargs`` a literal dict with identifier keys — a
parametrize case's value (``@pytest.mark.parametrize("args, want", [([1234.5, 2],
"1,234.5")])`` then ``assert intcomma(*args) == want``, a form real suites use for
functions with optional parameters), a literal assigned once in the test, or a literal
written in the call. The call is arbitrated as the one the test makes, its items written
out (``intcomma(1234.5, 2)``; form ``unpacked-argument``), and the suite's own passing rows
of that form are read as its specification.

End to end through ``referee arbitrate --apply`` with the fake OpenAI-compatible model
server: a wrong function called with a parametrized ``*args`` is fixed, and a wrong
expected value beside one is edited (the unpacked arguments never are).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_arbitration_oracles import arbitrate_with, assert_tests_pass

from referee.checks.arbitration.isolate import NotIsolated, TestRef, isolate
from referee.checks.arbitration.suite_reading import assertions
from referee.checks.source import SourceFile

HEAD = "import pytest\nfrom mypkg import f\n\n"


def _isolated(lines: str, *, params: str = "", indices: dict[str, int] | None = None):
    """``lines`` as the body of ``test_x``, its last line isolated."""
    text = HEAD + (params + "\n" if params else "") + "def test_x(" + ", ".join(indices or {})
    text += "):\n" + "".join(f"    {line}\n" for line in lines.splitlines())
    line = text.rstrip("\n").count("\n") + 1
    return isolate(
        SourceFile("tests/t.py", text), TestRef.parse("tests/t.py::test_x"), line, indices
    )


@pytest.mark.parametrize(
    ("lines", "params", "indices", "call", "forms"),
    [
        (
            "assert f(*args) == want",
            '@pytest.mark.parametrize("args, want", [([1], "1"), ([1234.5, 2], "1,234.5")])',
            {"args": 1, "want": 1},
            "f(1234.5, 2)",
            ["parametrize", "unpacked-argument"],
        ),
        (
            "args = (1, 'a')\nassert f(*args) == 3",
            "",
            None,
            "f(1, 'a')",
            ["local", "unpacked-argument"],
        ),
        (
            'options = {"sep": "-", "n": 2}\nassert f("a b", **options) == "a-b"',
            "",
            None,
            "f(\"a b\", sep='-', n=2)",
            ["local", "unpacked-argument"],
        ),
        ("assert f(0, *[1, 2], z=3) == 6", "", None, "f(0, 1, 2, z=3)", ["unpacked-argument"]),
        ("assert f(*()) == 0", "", None, "f()", ["unpacked-argument"]),
    ],
    ids=["parametrized-list", "local-tuple", "local-dict", "written-in-the-call", "empty"],
)
def test_an_unpacked_literal_is_written_out_as_the_calls_arguments(
    lines, params, indices, call, forms
):
    isolated = _isolated(lines, params=params, indices=indices)
    assert isolated.call == call
    assert [f for f in isolated.forms if f in ("parametrize", "local", "unpacked-argument")] == (
        forms
    )
    assert isolated.expected.kind in ("assertion", "parametrize")  # a fix edits the value only


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        ("assert f(*{1, 2}) == 3", "`*{1, 2}` unpacks a value that is no literal list or tuple"),
        ('assert f(*"ab") == 3', '`*"ab"` unpacks a value that is no literal list or tuple'),
        (
            'assert f(**{"not a name": 1}) == 3',
            '`**{"not a name": 1}` unpacks a value that is no literal dict whose keys are',
        ),
        ("assert f(**{1: 2}) == 3", "`**{1: 2}` unpacks a value that is no literal dict"),
        ("assert f(*g()) == 3", "the value unpacked by `*g()`, `g()` is not a literal"),
    ],
    ids=["set", "string", "key-not-a-name", "key-not-a-string", "a-call"],
)
def test_what_cannot_be_written_out_is_refused_in_one_line(lines, reason):
    with pytest.raises(NotIsolated) as caught:
        _isolated(lines)
    message = str(caught.value)
    assert message.startswith("cannot isolate the call under test: " + reason), message
    assert "\n" not in message


def test_the_suites_rows_that_unpack_their_arguments_are_its_examples():
    text = """import pytest
from pkg.numbers import intcomma


@pytest.mark.parametrize(
    "test_args, expected",
    [([100], "100"), ([1234.5454545, 2], "1,234.55"), ([1000], "1,000")],
)
def test_intcomma(test_args, expected):
    assert intcomma(*test_args) == expected


def test_keywords():
    assert intcomma(10, **{"ndigits": 1}) == "10.0"
    assert intcomma(*{5}) == "5"  # a set: its order is not the test's to give
"""
    found, _ = assertions(text, "tests/t.py", "intcomma", "pkg.numbers")
    assert [(f.call, f.want) for f in found] == [
        ("intcomma(100)", "'100'"),
        ("intcomma(1234.5454545, 2)", "'1,234.55'"),
        ("intcomma(1000)", "'1,000'"),
        ("intcomma(10, ndigits=1)", "'10.0'"),
    ]  # not the set's row


# ------------------------------------------------------------------ end to end, --apply

MODULE = '''def join_words(words: list, sep: str = " ") -> str:
    """WORDS joined into one string, SEP between each two: join_words(["a", "b"], "-") is
    "a-b"."""
    return {body}
'''
RIGHT = MODULE.format(body="sep.join(words)")
WRONG = MODULE.format(body='" ".join(words)')  # ignores SEP
ORACLE = """def join_words(words, sep=" "):
    return sep.join(words)
"""
PATCH = '''def join_words(words: list, sep: str = " ") -> str:
    """WORDS joined into one string, SEP between each two: join_words(["a", "b"], "-") is
    "a-b"."""
    return sep.join(words)
'''
TESTS = """import pytest

from text import join_words


@pytest.mark.parametrize("args, want", [((["a", "b"], "-"), "{want}")])
def test_x(args, want):
    assert join_words(*args) == want
"""
NODE = "tests/test_text.py::test_x[args0-{want}]"


def _arbitrate(tmp_path: Path, referee, module: str, want: str) -> tuple[Path, str, dict]:
    tests = TESTS.format(want=want)
    root, verdict = arbitrate_with(
        tmp_path, referee, module, tests, NODE.format(want=want), ORACLE, PATCH
    )
    return root, tests, verdict


def test_cli_fixes_a_wrong_function_called_with_parametrized_unpacked_arguments(
    tmp_path: Path, referee
):
    root, tests, verdict = _arbitrate(tmp_path, referee, WRONG, "a-b")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call"] == "join_words(['a', 'b'], '-')"
    assert "unpacked-argument" in verdict["call_forms"], verdict["call_forms"]
    assert (verdict["produced"], verdict["truth"]) == ("'a b'", "'a-b'")
    assert verdict["applied"] is True
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == tests
    assert_tests_pass(root)


def test_cli_edits_the_expected_value_beside_unpacked_arguments_never_them(tmp_path: Path, referee):
    root, tests, verdict = _arbitrate(tmp_path, referee, RIGHT, "a b")
    assert verdict["verdict"] == "TEST_WRONG", verdict["reason"]
    assert verdict["applied"] is True and verdict["certificate"] is not None
    fixed = (root / "tests" / "test_text.py").read_text(encoding="utf-8")
    assert fixed == tests.replace('"a b")]', '"a-b")]')
    assert (root / "text.py").read_text(encoding="utf-8") == RIGHT
