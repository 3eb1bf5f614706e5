"""Methods that take the object or its class, arbitrated (issue 40): a method of an object
the test builds from literals (``Table([["a"]]).to_text()``, or ``t = Table(...)`` once
then ``t.to_text()``) and a class method (``Table.parse("a b")``).

The oracles see the class as checks/arbitration/methods.py writes it — signatures and
docstrings, never a body, never the test — and write a function of the constructor's
arguments and the call's. End to end through ``referee arbitrate --apply`` with the fake
OpenAI-compatible model server: a wrong method is fixed in its class, a wrong test is
fixed and certified.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import jsonschema
import pytest
from red_team.fake_openai import FakeModel
from test_arbitration_forms import WRONG, arbitrated
from test_arbitration_oracles import cli_project

from referee.checks.arbitration.examples import doctest_evidence, example_calls
from referee.checks.arbitration.isolate import NotIsolated, TestRef, isolate
from referee.checks.arbitration.methods import method_spec, oracle_example
from referee.checks.arbitration.suite_reading import assertions
from referee.checks.arbitration.truth import oracle_messages
from referee.checks.models import arbitration_schema
from referee.checks.source import SourceFile

TABLE = '''class Table:
    """A table of text cells, written out one row a line."""

    def __init__(self, rows: list, sep: str = " ") -> None:
        """ROWS: the rows, each a list of cells; SEP goes between two cells of a row."""
        self.rows = rows
        self.sep = sep

    def to_text(self) -> str:
        """The rows, one a line, their cells joined by the separator; no newline at the
        end.

        >>> Table([["a", "b"]], sep="|").to_text()
        'a|b'
        """
        return "\\n".join(self.sep.join(row) for row in self.rows){tail}

    @classmethod
    def width(cls, line: str) -> int:
        """How many cells a line of the text holds (cells are separated by spaces).

        >>> Table.width("a b")
        2
        """
        return len(line.split()){off}
'''
RIGHT_TABLE = TABLE.format(tail="", off="")
WRONG_TABLE = TABLE.format(tail=' + "\\n"', off=" + 1")

# An oracle of the method: a function of the constructor's arguments and the call's.
TABLE_ORACLE = """def to_text(init_args: tuple, init_kwargs: dict) -> str:
    def make(rows, sep=" "):
        return rows, sep

    rows, sep = make(*init_args, **init_kwargs)
    return "\\n".join(sep.join(row) for row in rows)
"""
# A patch of the method, as the model writes it: the method's own signature.
TABLE_PATCH = """def to_text(self) -> str:
    return "\\n".join(self.sep.join(row) for row in self.rows)
"""
WIDTH_ORACLE = "def width(line: str) -> int:\n    return len(line.split())\n"
WIDTH_PATCH = (
    "class Table:\n    @classmethod\n    def width(cls, line: str) -> int:\n"
    "        return len(line.split())\n"
)


def _cli(referee, root: Path, test_id: str = "tests/test_text.py::test_x") -> dict:
    done = referee("arbitrate", test_id, "--format", "json", "--apply", cwd=root)
    assert done.stdout.strip(), (done.returncode, done.stderr)
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    return verdict


def _tests(lines: str) -> str:
    return "from text import Table\n\n\ndef test_x():\n" + "".join(
        f"    {line}\n" for line in lines.splitlines()
    )


# ------------------------------------------------------------------ end to end, --apply


def test_cli_fixes_a_wrong_method_of_an_object_built_from_literals(tmp_path: Path, referee):
    tests = _tests('assert Table([["a", "b"], ["c"]]).to_text() == "a b\\nc"')
    with FakeModel(lambda kind: TABLE_ORACLE if kind == "oracle" else TABLE_PATCH) as model:
        root = cli_project(tmp_path / "p", WRONG_TABLE, tests, model.url)
        verdict = _cli(referee, root)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call_forms"] == ["method-of-literal-object"]
    assert verdict["call"] == 'Table([["a", "b"], ["c"]]).to_text()'
    assert (verdict["produced"], verdict["truth"]) == ("'a b\\nc\\n'", "'a b\\nc'")
    assert verdict["applied"] is True
    fixed = (root / "text.py").read_text(encoding="utf-8")
    # the body replaced inside the class; the signature, the docstring and the rest kept
    assert '        return "\\n".join(self.sep.join(row) for row in self.rows)\n' in fixed
    assert '+ "\\n"' not in fixed and ">>> Table([" in fixed and "+ 1" in fixed
    ast.parse(fixed)
    # the oracles were shown the class without its bodies and never the test
    oracle_prompts = [
        json.dumps(r["messages"])
        for r in model.requests
        if "init_args" in json.dumps(r["messages"])
    ]
    assert oracle_prompts
    for prompt in oracle_prompts:
        assert "self.sep.join" not in prompt and "a b\\\\nc" not in prompt
        assert "def to_text(init_args: tuple, init_kwargs: dict) -> str" in prompt


def test_cli_fixes_the_test_when_the_method_is_right(tmp_path: Path, referee):
    tests = _tests('table = Table([["a", "b"], ["c"]], sep=",")\nassert table.to_text() == "a,b"')
    with FakeModel(lambda kind: TABLE_ORACLE) as model:
        root = cli_project(tmp_path / "p", RIGHT_TABLE, tests, model.url)
        verdict = _cli(referee, root)
    assert verdict["verdict"] == "TEST_WRONG", verdict["reason"]
    assert verdict["call_forms"] == ["method-of-assigned-object"]
    assert verdict["call"] == 'Table([["a", "b"], ["c"]], sep=",").to_text()'
    assert verdict["truth"] == "'a,b\\nc'" and verdict["applied"] is True
    assert verdict["certificate"] is not None
    fixed = (root / "tests" / "test_text.py").read_text(encoding="utf-8")
    assert 'assert table.to_text() == "a,b\\nc"' in fixed
    assert (root / "text.py").read_text(encoding="utf-8") == RIGHT_TABLE


def test_cli_fixes_a_wrong_class_method(tmp_path: Path, referee):
    tests = _tests('assert Table.width("a b c") == 3')
    with FakeModel(lambda kind: WIDTH_ORACLE if kind == "oracle" else WIDTH_PATCH) as model:
        root = cli_project(tmp_path / "p", WRONG_TABLE, tests, model.url)
        verdict = _cli(referee, root)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call_forms"] == ["classmethod"]
    assert (verdict["produced"], verdict["truth"]) == ("4", "3")
    assert verdict["applied"] is True
    fixed = (root / "text.py").read_text(encoding="utf-8")
    assert "    @classmethod\n    def width(cls, line: str) -> int:" in fixed
    assert "        return len(line.split())\n" in fixed and "split()) + 1" not in fixed


# The usage example is in the class's docstring, on an object the session names first.
REPLACER = '''class Replacer:
    """Replaces words in one pass: a replacement is never replaced again.

    >>> r = Replacer({"a": "b", "b": "c"})
    >>> r.sub("a b")
    'b c'
    """

    def __init__(self, table: dict) -> None:
        self.table = table

    def sub(self, text: str) -> str:
        """TEXT with each of its words the table holds replaced."""
        {body}
'''
ONE_PASS = 'return " ".join(self.table.get(w, w) for w in text.split())'
CHAINED = (
    "for old, new in self.table.items():\n"
    "            text = text.replace(old, new)\n"
    "        return text"
)
# Oracles of ``sub``: replacing in one pass, and replacing key after key (which the
# docstring's example contradicts: "a b" -> "c c").
ONE_PASS_ORACLE = """def sub(init_args: tuple, init_kwargs: dict, text: str) -> str:
    (table,) = init_args
    return " ".join(table.get(w, w) for w in text.split())
"""
CHAINED_ORACLE = """def sub(init_args: tuple, init_kwargs: dict, text: str) -> str:
    (table,) = init_args
    for old, new in table.items():
        text = text.replace(old, new)
    return text
"""
REPLACER_PATCH = f"def sub(self, text: str) -> str:\n    {ONE_PASS}\n"


def test_cli_an_example_on_an_object_the_class_docstring_names_sets_an_oracle_aside(
    tmp_path: Path, referee
):
    """``>>> r = Replacer(...)`` then ``>>> r.sub("a b")`` in the class's docstring is an
    example of ``sub``: the oracle that replaces key after key contradicts it and is
    replaced; the others certify the truth, and the method is fixed."""
    tests = (
        "from text import Replacer\n\n\ndef test_x():\n"
        '    assert Replacer({"x": "y", "y": "z"}).sub("x y") == "y z"\n'
    )

    def answer(kind: str, seed: int | None) -> str:
        if kind != "oracle":
            return REPLACER_PATCH
        return CHAINED_ORACLE if seed == 1 else ONE_PASS_ORACLE

    with FakeModel(answer=lambda kind: "", seeded=answer) as model:
        root = cli_project(tmp_path / "p", REPLACER.replace("{body}", CHAINED), tests, model.url)
        verdict = _cli(referee, root)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert (verdict["produced"], verdict["truth"]) == ("'z z'", "'y z'")
    gone = {o["source"]: o["detail"] for o in verdict["replaced_oracles"]}
    assert "returned 'c c', the docstring says 'b c'" in gone.get("oracle-1", ""), gone
    assert verdict["applied"] is True
    assert ONE_PASS in (root / "text.py").read_text(encoding="utf-8")


def test_an_object_the_docstring_uses_before_is_no_example():
    """Only the first use of a name the session built: a call may have changed it."""
    text = REPLACER.replace("{body}", ONE_PASS).replace(
        "    >>> r.sub(\"a b\")\n    'b c'\n",
        '    >>> r.table["a"] = "z"\n    >>> r.sub("a b")\n    \'z c\'\n'
        '    >>> s = Replacer({"a": "b"})\n    >>> print(s.sub("a"))\n    b\n'
        '    >>> t = Replacer({"a": "b"})\n    >>> list(t.sub("a"))\n    [\'b\']\n'
        "    >>> t.sub(\"a\")\n    'b'\n",
    )
    spec = method_spec(text, "text.py", "text", "Replacer.sub", "method")
    assert "Replaces words" in (spec.docstring_value or "")  # the class's docstring too
    assert [(call, want) for call, want, _ in example_calls(spec)] == [
        ("list(sub(({'a': 'b'},), {}, 'a'))", "['b']")
    ]


# No docstring on the method nor on its class: the suite's assertions are its spec.
PLAIN_REPLACER = """class Replacer:
    def __init__(self, table: dict) -> None:
        self.table = table

    def sub(self, text: str) -> str:
        {body}
"""
SUITE_TESTS = """from text import Replacer


def test_known():
    assert Replacer({"a": "b"}).sub("a c") == "b c"
    r = Replacer({"k": "v"})
    assert r.sub("k k") == "v v"
    assert r.sub("k") == "v"  # not the object as built: no example
    assert Replacer({"a": "b", "b": "c"}).sub("a b") == "b c"  # the code fails it


def test_x():
    assert Replacer({"x": "y", "y": "z"}).sub("x y") == "y z"
"""


def test_cli_a_method_without_docstrings_takes_its_spec_from_the_suite(tmp_path: Path, referee):
    """The suite's passing assertions about ``Replacer(...).sub(...)`` are written in the
    oracle contract and shown to the oracles; the oracle that replaces key after key
    contradicts none of them that pass on the chained code either, so the verdict rests
    on the oracles' agreement, and the prompt never holds the failing assertion."""

    def answer(kind: str, seed: int | None) -> str:
        return ONE_PASS_ORACLE if kind == "oracle" else REPLACER_PATCH

    with FakeModel(answer=lambda kind: "", seeded=answer) as model:
        root = cli_project(
            tmp_path / "p", PLAIN_REPLACER.replace("{body}", CHAINED), SUITE_TESTS, model.url
        )
        verdict = _cli(referee, root)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["truth_source"] == "oracles (spec from suite: 2 examples)"
    assert (verdict["produced"], verdict["truth"]) == ("'z z'", "'y z'")
    assert verdict["applied"] is True
    assert ONE_PASS in (root / "text.py").read_text(encoding="utf-8")
    prompts = [json.dumps(r["messages"]) for r in model.requests if "init_args" in json.dumps(r)]
    assert prompts
    for prompt in prompts:
        assert "assert sub(({'a': 'b'},), {}, 'a c') == 'b c'" in prompt
        assert "assert sub(({'k': 'v'},), {}, 'k k') == 'v v'" in prompt
        assert "'k')" not in prompt and "x y" not in prompt and "y z" not in prompt


def test_cli_a_method_without_docstrings_or_suite_says_what_to_add(tmp_path: Path, referee):
    tests = (
        SUITE_TESTS.split("def test_known")[0] + "def test_x" + SUITE_TESTS.split("def test_x")[1]
    )
    with FakeModel(lambda kind: ONE_PASS_ORACLE) as model:
        root = cli_project(
            tmp_path / "p", PLAIN_REPLACER.replace("{body}", CHAINED), tests, model.url
        )
        verdict = _cli(referee, root)
    assert verdict["verdict"] == "UNCLEAR"
    assert verdict["reason"].startswith("no independent truth for `Replacer.sub`"), verdict[
        "reason"
    ]
    assert "no passing assertion about it in the suite (2 needed)" in verdict["reason"]
    assert "`assert Replacer(...).sub(...) == value`" in verdict["reason"]
    assert not [r for r in model.requests if "init_args" in json.dumps(r)]


# ------------------------------------------------------------------ the engine, no model


@pytest.mark.parametrize(
    ("body", "forms", "truth"),
    [
        ('assert Counter().count("aeiou") == 5', ("method-of-literal-object",), "5"),
        ('c = Counter()\nassert c.count("aeiou") == 5', ("method-of-assigned-object",), "5"),
        ("assert Counter.thrice(2) == 6", ("classmethod",), "6"),
    ],
)
def test_a_method_docstring_example_is_the_truth(tmp_path: Path, body, forms, truth):
    # ``>>> Counter().count("aeiou")`` -> 5 is an example of count((), {}, "aeiou")
    result, _ = arbitrated(tmp_path, WRONG, body)
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.call_forms == forms and verdict.truth_source == "doctest"
    assert verdict.truth == truth


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        # something between the assignment and the assertion may change the object
        (
            'c = Counter()\nc.vowels = "a"\nassert c.count("aeiou") == 5',
            "does not build from a class and literals, in the assignment",
        ),
        # ...also inside the block that holds the assertion
        (
            'c = Counter()\nif True:\n    c.vowels = "a"\n    assert c.count("aeiou") == 5',
            "does not build from a class and literals, in the assignment",
        ),
        # an object the test does not build from literals
        ('c = Counter(input())\nassert c.count("aeiou") == 5', "not a literal"),
    ],
)
def test_a_method_of_an_object_not_built_from_literals_is_refused(tmp_path, body, reason):
    text = "from text import Counter\n\ndef test_x():\n" + "".join(
        f"    {line}\n" for line in body.splitlines()
    )
    source = SourceFile("tests/test_text.py", text)
    line = len(text.splitlines())
    with pytest.raises(NotIsolated, match=reason):
        isolate(source, TestRef.parse("tests/test_text.py::test_x"), line)


# ------------------------------------------------------------------ the oracle contract


def test_a_method_spec_shows_the_class_without_bodies():
    spec = method_spec(RIGHT_TABLE, "text.py", "text", "Table.to_text", "method")
    assert spec.form == "method" and spec.owner == "Table"
    assert spec.signature == "def to_text(init_args: tuple, init_kwargs: dict) -> str:"
    assert spec.oracle_call == "Table(*init_args, **init_kwargs).to_text()"
    stub = spec.class_stub or ""
    assert "class Table:" in stub and "ROWS: the rows" in stub and "no newline" in stub
    assert "self.sep.join" not in stub and "self.rows = rows" not in stub
    assert "def width" not in stub  # another method is not the subject
    assert spec.definition.startswith("def to_text(self) -> str:")
    prompt = oracle_messages(spec)[1]["content"]
    assert stub in prompt and spec.signature in prompt and "`to_text`" in prompt
    # the docstring's example, as the oracle's function is called
    ((call, want, _),) = example_calls(spec)
    assert (call, want) == ("to_text(([['a', 'b']],), {'sep': '|'})", "'a|b'")
    evidence = doctest_evidence(spec, "([['a', 'b']],), {'sep': '|'}")
    assert evidence is not None and evidence.value == "'a|b'"


def test_a_class_method_spec_drops_cls():
    spec = method_spec(RIGHT_TABLE, "text.py", "text", "Table.width", "classmethod")
    assert spec.signature == "def width(line: str) -> int:"
    assert spec.oracle_call == "Table.width(line)"
    assert doctest_evidence(spec, "'a b'").value == "2"  # type: ignore[union-attr]


def test_an_example_of_another_object_is_no_example_of_the_method():
    spec = method_spec(RIGHT_TABLE, "text.py", "text", "Table.to_text", "method")
    assert oracle_example(spec, "Grid([1]).to_text()") is None
    assert oracle_example(spec, "to_text()") is None
    assert oracle_example(spec, "sorted(Table([1]).to_text())") == "sorted(to_text(([1],), {}))"
    with pytest.raises(NotIsolated, match="no method `width`"):
        method_spec(RIGHT_TABLE, "text.py", "text", "Table.width", "method")


def _read_examples(text: str, name: str = "sub", form: str = "method") -> list[tuple]:
    """The suite reader's examples of ``Replacer.name`` in a test module: (call, want,
    spans)."""
    found, _ = assertions(text, "tests/test_x.py", name, "text", owner=("Replacer", form))
    return [(f.call, f.want, f.spans) for f in found]


def test_the_suite_reads_a_methods_calls_in_the_oracle_contract():
    """``Cls(...).m(...)``, ``o = Cls(...)`` then ``o.m(...)`` at its first read — each
    building of a name built again, at the read after it — and a class method
    ``Cls.m(...)``, each written as the oracle's function is called; the building's lines
    are the example's too (an edit there makes it no spec)."""
    text = (
        "import unittest\nfrom text import Replacer\nimport text as tx\n\n\n"
        "def test_a():\n"
        '    assert Replacer({"a": "b"}).sub("a") == "b"\n'
        '    r = Replacer({"x": "y"}, sep=",")\n'
        '    assert r.sub("x x") == "y y"\n'
        '    assert r.sub("x") == "y"\n'
        '    assert tx.Replacer([]).sub("q") == "q"\n'
        '    assert Replacer.parse("a=b") == {"a": "b"}\n'
        '    assert sub("a") == "b"\n\n\n'
        "class T(unittest.TestCase):\n"
        "    def test_b(self):\n"
        "        o = Replacer({1: 2})\n"
        '        self.assertEqual(\n            o.sub("1"),\n            "2",\n        )\n'
        "        o = Replacer({3: 4})\n"
        '        self.assertEqual(o.sub("3"), "4")\n'
    )
    assert _read_examples(text) == [
        ("sub(({'a': 'b'},), {}, 'a')", "'b'", ((7, 7),)),
        ("sub(({'x': 'y'},), {'sep': ','}, 'x x')", "'y y'", ((9, 9), (8, 8))),
        ("sub(([],), {}, 'q')", "'q'", ((11, 11),)),
        ("sub(({1: 2},), {}, '1')", "'2'", ((19, 22), (18, 18))),
        ("sub(({3: 4},), {}, '3')", "'4'", ((24, 24), (23, 23))),
    ]
    assert _read_examples(text, "parse", "classmethod") == [
        ("parse('a=b')", "{'a': 'b'}", ((12, 12),))
    ]


@pytest.mark.parametrize(
    "body",
    [
        # a branch may have built it again
        "o = Replacer({1: 2})\n    if FLAG:\n        o = Replacer({})\n"
        '    assert o.sub("1") == "2"',
        # a nested function reads a name built twice: it may run at any time
        'o = Replacer({})\n    f = lambda: o.sub("")\n    o = Replacer({1: 2})\n    f()\n'
        '    assert o.sub("1") == "2"',
        # a closure reads it: it may run between the building and the assertion
        'f = lambda: o.reset()\n    o = Replacer({1: 2})\n    f()\n    assert o.sub("1") == "2"',
        'global o\n    o = Replacer({})\n    o = Replacer({1: 2})\n    assert o.sub("1") == "2"',
        'o = Replacer({1: 2})\n    o += 1\n    assert o.sub("1") == "2"',
    ],
    ids=["branch", "nested-read", "closure", "global", "augmented"],
)
def test_an_object_built_again_where_another_binding_may_reach_the_assertion_gives_no_example(
    body: str,
):
    text = f"from text import Replacer\n\n\ndef test_a(o=None):\n    {body}\n"
    assert _read_examples(text) == []


@pytest.mark.parametrize(
    "body",
    [
        # what the name held before (a parameter's value) is not what the assertion reads
        'o.reset()\n    o = Replacer({1: 2})\n    assert o.sub("1") == "2"',
        # bound again after the assertion, by a loop: the assertion has read it by then
        'o = Replacer({1: 2})\n    assert o.sub("1") == "2"\n    for o in []:\n        pass',
    ],
    ids=["read-before", "bound-after"],
)
def test_the_building_an_assertion_reads_is_its_example_whatever_the_name_held_before_or_after(
    body: str,
):
    text = f"from text import Replacer\n\n\ndef test_a(o=None):\n    {body}\n"
    assert [example[:2] for example in _read_examples(text)] == [("sub(({1: 2},), {}, '1')", "'2'")]


def test_the_suite_reads_a_method_of_an_object_set_up_once_at_its_first_use_in_a_test():
    """``self.r = Replacer(...)`` in ``setUp``, bound nowhere else and left alone there
    after, is the object as built at the first line a test mentions ``self.r``: not after
    the test touched it, not when setUp changes it, binds it twice or calls a method of
    ``self`` after it."""
    text = (
        "import unittest\nfrom text import Replacer\n\n\n"
        "class T(unittest.TestCase):\n"
        "    def setUp(self):\n"
        "        super().setUp()\n"
        '        self.r = Replacer({"a": "b"})\n'
        '        self.q = Replacer({"c": "d"})\n'
        '        self.q.table["c"] = "e"\n'
        '        self.s = Replacer({"x": "y"})\n'
        '        self.s = Replacer({"x": "z"})\n\n'
        "    def test_a(self):\n"
        '        self.assertEqual(self.r.sub("a a"), "b b")\n'
        '        self.assertEqual(self.r.sub("a"), "b")\n\n'
        "    def test_b(self):\n"
        '        self.r.table["a"] = "q"\n'
        '        self.assertEqual(self.r.sub("a"), "q")\n\n'
        "    def test_c(self):\n"
        '        self.assertEqual(self.q.sub("c"), "e")\n'
        '        self.assertEqual(self.s.sub("x"), "z")\n\n\n'
        "class U:\n"
        "    def setup_method(self):\n"
        '        self.r = Replacer({"m": "n"})\n'
        "        self.helper()\n\n"
        "    def test_d(self):\n"
        '        assert self.r.sub("m") == "n"\n'
    )
    assert _read_examples(text) == [("sub(({'a': 'b'},), {}, 'a a')", "'b b'", ((15, 15), (8, 8)))]


@pytest.mark.parametrize(
    ("looks", "taken"),
    [
        ('assert o.size == 1\n    assert len(o) == 1\n    assert o["k"].v is None', True),
        ("self.assertIsNotNone(o)\n    assert isinstance(o, Replacer)", True),
        ("assert o.reset() is None", False),  # a method call may change it
        ("assert check(o)", False),  # a function given it may change it
        ('assert "a" in o', False),  # the container is iterated
        ("assert sorted(o) == [1]", False),  # so is a built-in's argument
        ("print(o)", False),  # not an assertion
    ],
)
def test_an_object_read_by_assertions_that_only_looked_at_it_is_taken_as_built(
    looks: str, taken: bool
):
    """The suite's reader takes a building at each assertion after it while the ones
    before only looked at the object — the rule the failing call's reader applies."""
    text = (
        f"from text import Replacer\n\n\ndef test_a(self):\n    o = Replacer({{1: 2}})\n"
        f'    {looks}\n    assert o.sub("1") == "2"\n'
    )
    examples = [example[:2] for example in _read_examples(text)]
    assert examples == ([("sub(({1: 2},), {}, '1')", "'2'")] if taken else [])


# A method of an object the test builds once, compared with a library's object: both
# sides are calls, the project's method is the one under test (``Span.shift``, as the
# run resolved it); its docstring gives no example, so the suite's passing assertions
# about it follow the docstring and every oracle must reproduce them.
SPAN = '''from datetime import datetime, timedelta


class Span:
    """A moment of a calendar."""

    def __init__(self, year: int, month: int, day: int) -> None:
        self.start = datetime(year, month, day)

    def shift(self, days: int = 0, weeks: int = 0) -> datetime:
        """The moment ``days`` days and ``weeks`` weeks after the start."""
        return self.start + timedelta(days=days + weeks{times})
'''
SPAN_TESTS = """from datetime import datetime

from text import Span


def test_days():
    assert Span(2013, 5, 5).shift(days=1) == datetime(2013, 5, 6)
    assert Span(2013, 5, 5).shift(days=3) == datetime(2013, 5, 8)


def test_x():
    span = Span(2013, 5, 5)
    assert span.shift(weeks=1) == datetime(2013, 5, 12)
"""
SPAN_ORACLE = """def shift(init_args: tuple, init_kwargs: dict, days: int = 0, weeks: int = 0):
    from datetime import datetime, timedelta

    return datetime(*init_args, **init_kwargs) + timedelta(days=days + 7 * weeks)
"""
# reads "weeks" as days: right for both of the suite's assertions' days, wrong for weeks
SPAN_MISREAD = SPAN_ORACLE.replace("days + 7 * weeks", "days * 2 + weeks")
SPAN_PATCH = """def shift(self, days: int = 0, weeks: int = 0) -> datetime:
    return self.start + timedelta(days=days + weeks * 7)
"""


def test_cli_fixes_a_method_compared_with_a_librarys_object(tmp_path: Path, referee):
    def answer(kind: str, seed: int | None) -> str:
        if kind != "oracle":
            return SPAN_PATCH
        return SPAN_MISREAD if seed == 1 else SPAN_ORACLE

    with FakeModel(answer=lambda kind: "", seeded=answer) as model:
        root = cli_project(
            tmp_path / "p", SPAN.format(times=""), SPAN_TESTS, model.url, suite_beside=True
        )
        verdict = _cli(referee, root)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["call_forms"] == ["method-of-assigned-object", "computed-expected"]
    assert verdict["produced"] == "datetime.datetime(2013, 5, 6, 0, 0)"
    assert verdict["truth"] == "datetime.datetime(2013, 5, 12, 0, 0)"
    assert verdict["truth_source"] == "oracles (spec from docstring and suite: 2 examples)"
    gone = {o["source"]: o["detail"] for o in verdict["replaced_oracles"]}
    assert gone["oracle-1"].startswith("contradicts the suite's example:"), gone
    assert verdict["applied"] is True
    assert "weeks * 7" in (root / "text.py").read_text(encoding="utf-8")
    oracle_prompts = [
        json.dumps(r["messages"]) for r in model.requests if "init_args" in json.dumps(r)
    ]
    assert oracle_prompts
    for prompt in oracle_prompts:
        assert "weeks after the start" in prompt  # the docstring
        assert "shift((2013, 5, 5), {}, days=1)" in prompt  # the suite, in the contract
        assert "weeks=1" not in prompt and "2013, 5, 12" not in prompt  # never the test
