"""Guarded arbitration: the logic around the model, with real pytest runs, the real
sandbox and real git — only the model is scripted here (tests/test_arbitration_e2e.py
runs the real one).

Each test writes a small project (a module and its test module), lets the real test fail,
and checks what arbitration decides and what it edits.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from guard_catalogue.cases import commit_repo, git

from referee.checks import ledger, review
from referee.checks.arbitration.engine import (
    Arbitration,
    ArbitrationError,
    Cancelled,
    apply,
    arbitrate,
)
from referee.checks.arbitration.examples import docstring_examples
from referee.checks.arbitration.fix import format_value, patched_module
from referee.checks.arbitration.isolate import (
    NotIsolated,
    TestRef,
    function_spec,
    isolate,
)
from referee.checks.arbitration.truth import (
    agreed_value,
    oracle_messages,
    program_from,
    prompts,
)
from referee.checks.atomic import StaleFileError
from referee.checks.config import discover
from referee.checks.configuration import ArbitrationConfig
from referee.checks.judge.backend import ScriptedBackend
from referee.checks.models import OracleResult
from referee.checks.progress import Work
from referee.checks.source import SourceFile

CORRECT = '''def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains."""
    return sum(1 for ch in text.lower() if ch in "aeiou")  # BODY-MARKER
'''
BUGGY = '''def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains."""
    return sum(1 for ch in text[1:].lower() if ch in "aeiou")  # BODY-MARKER
'''
ORACLE = """```python
def count_vowels(text: str) -> int:
    return sum(ch in "aeiouAEIOU" for ch in text)
```"""
WRONG_ORACLE = """```python
def count_vowels(text):
    return len(text) + 1
```"""
# lower-case vowels only: agrees on "aeiou" but fails the module's upper-case test
LONE_ORACLE = "```python\ndef count_vowels(text):\n    return sum(c in 'aeiou' for c in text)\n```"
GOOD_PATCH = '''```python
def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains."""
    return sum(1 for ch in text.lower() if ch in "aeiou")
```'''
CHEATING_PATCH = """```python
def count_vowels(text: str) -> int:
    if text == "aeiou":
        return 5
    return sum(1 for ch in text[1:].lower() if ch in "aeiou")
```"""
TESTS = """from text import count_vowels


def test_vowels():
    assert count_vowels("aeiou") == {expected}


def test_empty():
    assert count_vowels("") == 0


def test_upper():
    assert count_vowels("HELLO") == 2
"""


def project(
    root: Path, module: str, tests: str, config: str = "", *, suite_beside: bool = False
) -> Path:
    """A project: ``text.py``, ``tests/test_text.py`` and a ``referee.toml`` of ``config``;
    with ``suite_beside``, ``suite-beside-docstring = true`` (off by default): the suite's
    assertions follow a documented function's docstring (the scripted oracles of the other
    tests are written for the docstring alone — LONE_ORACLE misreads upper case, which
    the module's ``test_upper`` would set aside)."""
    if suite_beside:
        line = "suite-beside-docstring = true\n"
        if "[arbitration]\n" in config:
            config = config.replace("[arbitration]\n", "[arbitration]\n" + line, 1)
        else:
            config = f"{config}\n[arbitration]\n{line}"
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "referee.toml").write_text(config, encoding="utf-8")
    (root / "text.py").write_text(module, encoding="utf-8")
    (root / "tests" / "test_text.py").write_text(tests, encoding="utf-8")
    return root


def scripted(oracles: Sequence[str], patches: Sequence[str] = ()) -> ScriptedBackend:
    """A model that answers the i-th oracle prompt with oracles[i] and the i-th patch
    prompt with patches[i]."""
    asked = {"oracle": 0, "patch": 0}
    lock = threading.Lock()  # the k oracles are asked from k threads

    def answer(messages, schema) -> str:
        kind = "oracle" if messages[0]["content"] == prompts().oracle_system else "patch"
        answers = oracles if kind == "oracle" else patches
        with lock:
            index = asked[kind]
            asked[kind] += 1
        return answers[index % len(answers)] if answers else ""

    return ScriptedBackend(answer=answer)


def run(root: Path, test_id: str, model: ScriptedBackend | None = None, **kw) -> Arbitration:
    settings = discover(root)
    return arbitrate(
        test_id,
        settings,
        backend=(lambda: model) if model is not None else None,
        cache_dir=root.parent / f"cache-{root.name}",
        **kw,
    )


# ------------------------------------------------------------------ isolation


def iso(text: str, line: int, test: str = "tests/t.py::test_x", indices=None, frame_locals=None):
    return isolate(SourceFile("tests/t.py", text), TestRef.parse(test), line, indices, frame_locals)


def test_node_ids_are_taken_apart_into_file_class_name_and_case():
    ref = TestRef.parse("tests/test_a.py::TestA::test_b[1-2]")
    assert (ref.path, ref.cls, ref.name, ref.param_id) == (
        "tests/test_a.py",
        "TestA",
        "test_b",
        "1-2",
    )
    assert ref.function_id == "tests/test_a.py::TestA::test_b"
    with pytest.raises(ValueError, match="not a test id"):
        TestRef.parse("tests/test_a.py")


def test_plain_assert_isolates_the_call_and_the_expected_literal_on_either_side():
    left = iso('def test_x():\n    assert f("a", n=2) == [1, 2]\n', 2)
    assert (left.callee, left.arguments, left.call_side) == ("f", '"a", n=2', "left")
    assert (left.expected.kind, left.expected.text) == ("assertion", "[1, 2]")
    right = iso("def test_x():\n    assert 4 == mod.f('x')\n", 2)
    assert (right.callee, right.call, right.call_side) == ("mod.f", "mod.f('x')", "right")
    assert right.expected.text == "4"


def test_a_comment_or_a_line_continuation_inside_the_assertion_is_not_a_side():
    continued = iso("def test_x():\n    assert f('a') \\\n        == 'b'\n", 2)
    assert (continued.call, continued.expected.text, continued.op) == ("f('a')", "'b'", "==")
    commented = iso(
        "def test_x():\n    assert (  # why\n        f(1)  # c\n        == 2\n    )\n", 2
    )
    assert (commented.call, commented.expected.text) == ("f(1)", "2")


def test_unittest_assert_equal_and_pytest_approx_are_isolated():
    text = "class T(TestCase):\n    def test_x(self):\n        self.assertEqual(f(1), 'one')\n"
    found = iso(text, 3, "tests/t.py::T::test_x")
    assert (found.call, found.expected.text, found.op) == ("f(1)", "'one'", "==")
    approx = iso("def test_x():\n    assert f(0.1) == pytest.approx(0.3)\n", 2)
    assert (approx.op, approx.expected.text) == ("approx", "0.3")


def test_parametrized_case_values_come_from_the_parametrize_list_entry():
    text = (
        "import pytest\n"
        '@pytest.mark.parametrize("word, n", [("xyz", 0), pytest.param("aeiou", 4, id="v")])\n'
        "def test_x(word, n):\n"
        "    assert count(word) == n\n"
    )
    found = iso(text, 4, indices={"word": 1, "n": 1})
    assert found.call == 'count("aeiou")'
    assert (found.expected.kind, found.expected.text, found.expected.line) == (
        "parametrize",
        "4",
        2,
    )
    single = iso(
        '@pytest.mark.parametrize("n", [1, 2])\ndef test_x(n):\n    assert f(3) == n\n',
        3,
        indices={"n": 1},
    )
    assert (single.expected.kind, single.expected.text) == ("parametrize", "2")


def test_a_cases_list_the_test_changes_is_read_as_it_ran_or_refused():
    text = (
        '@pytest.mark.parametrize("xs, want", [([1, 2], [3])])\ndef test_x(xs, want):\n'
        "    xs.append(3)\n    want.append(4)\n    assert f(xs) == want\n"
    )
    # the argument as it ran is not known (a list recorded after the call)...
    with pytest.raises(NotIsolated, match="argument `xs` is a list the recorder saw after"):
        iso(text, 5, indices={"xs": 0, "want": 0}, frame_locals={"xs": "[1, 2, 3]"})
    # ...the expected value is, and is never edited then
    found = iso(
        text.replace("xs.append(3)", "pass"),
        5,
        indices={"xs": 0, "want": 0},
        frame_locals={"want": "[3, 4]"},
    )
    assert (found.call, found.expected.kind, found.expected.text) == (
        "f([1, 2])",
        "local",
        "[3, 4]",
    )


def test_a_literal_assigned_once_in_the_test_is_the_expected_site():
    text = "def test_x():\n    word = 'abc'\n    expected = 3\n    assert f(word) == expected\n"
    found = iso(text, 4)
    assert found.call == "f('abc')"
    assert (found.expected.kind, found.expected.text) == ("assignment", "3")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("assert 0 < f(1) < 3", "only comparisons of two values"),
        ("assert f(1) == g(2)", "both sides"),
        ("assert 1 == 1.0", "neither side"),
        ("for x in [1]:\n        assert f(x) == 2", "argument `x` is not a literal"),
        ("assert f(1) == compute()", "both sides"),
        ("y = f(2)\n    assert f(1) == y", "the expected value `y` is not a literal"),
        ("y = g()\n    y.x = 1\n    assert f(1) == y", "the expected value `y` is not a literal"),
        ("assert f(*args) == 1", "the value unpacked by `*args`, `args` is not a literal"),
        ("n = 3\n    n += 1\n    assert f(1) == n", "the expected value `n` is not a literal"),
        ("w = 'ae'\n    w += 'i'\n    assert f(w) == 3", "argument `w` is not a literal"),
        ("n = 3\n    if f(0):\n        n = 4\n    assert f(1) == n", "expected value `n`"),
        ("n = 3\n    [n := 4]\n    assert f(1) == n", "expected value `n`"),
        ("n = 3\n    for n in [4]:\n        pass\n    assert f(1) == n", "expected value `n`"),
        # a mutable literal changed before the assertion is not the literal any more
        ("xs = [1]\n    xs.append(2)\n    assert f(xs) == 3", "argument `xs` is not a literal"),
        (
            "xs = [1]\n    if xs:\n        xs.append(2)\n        assert f(xs) == 3",
            "argument `xs` is not a literal",
        ),
        ("w = [1]\n    w.append(2)\n    assert f(1) == w", "the expected value `w` is not"),
        (
            "for p in [1]:\n        assert f(path=p) == 2",
            "the value of the keyword argument `path`, `p` is not a literal",
        ),
    ],
    ids=[
        "greater",
        "two-calls",
        "no-call",
        "loop-variable",
        "computed",
        "the-function-itself",
        "changed-computed",
        "splat",
        "augmented-expected",
        "augmented-argument",
        "rebound-in-a-branch",
        "walrus",
        "loop-target",
        "mutated-argument",
        "mutated-in-the-block",
        "mutated-expected",
        "keyword-argument",
    ],
)
def test_what_cannot_be_isolated_is_refused_with_a_reason(body: str, reason: str):
    text = f"def test_x():\n    {body}\n"
    line = text.count("\n")
    with pytest.raises(NotIsolated, match=reason.replace("(", r"\(").replace("*", r"\*")):
        iso(text, line)


def test_function_spec_reads_signature_and_docstring_and_refuses_methods():
    spec = function_spec(CORRECT, "text.py", "text", "count_vowels")
    assert spec.signature == "def count_vowels(text: str) -> int:"
    assert spec.docstring_value and spec.docstring_value.startswith("Return how many vowels")
    assert "BODY-MARKER" in spec.definition and spec.line == 1
    with pytest.raises(NotIsolated, match="method"):
        function_spec(CORRECT, "text.py", "text", "Counter.count")


# ------------------------------------------------------------------ truth


def test_docstring_examples_in_doctest_and_arrow_forms_are_read():
    doc = """Count.

    >>> f("ab")
    2
    f("abc") ➞ 3
    - f('x') returns 1.
    f([1, 2]) == [2, 1]
    f(4) is an even number
    """
    found = {(call, value) for call, value, _ in docstring_examples(doc, "f")}
    assert found == {('f("ab")', "2"), ('f("abc")', "3"), ("f('x')", "1"), ("f([1, 2])", "[2, 1]")}


def test_a_value_written_as_a_computation_is_read_by_its_result():
    """``-> 19 - 5 - 6 = 8`` gives 8, never the computation's first number (HumanEval's
    ``fruit_distribution`` writes its examples so); a computation with no result is no
    example."""
    doc = """Mangoes left.

    f("5 apples and 6 oranges", 19) ->19 - 5 - 6 = 8
    f("2 apples and 3 oranges", 100) -> 100 - 2 - 3 = 95
    f("1 apple", 10) -> 10 - 1
    f("none", 4) -> 4
    """
    found = {(call, value) for call, value, _ in docstring_examples(doc, "f")}
    assert found == {
        ('f("5 apples and 6 oranges", 19)', "8"),
        ('f("2 apples and 3 oranges", 100)', "95"),
        ('f("none", 4)', "4"),
    }


def test_a_prompted_comparison_without_output_is_an_example():
    """``>>> f(19) == 'xix'`` with nothing under it says what f(19) is (run as a doctest
    it would print True); with output under it, the output is the example's value."""
    doc = """Roman numerals.

    Examples:
    >>> f(19) == 'xix'
    >>> f(152) == 'clii'
    >>> f(4) == 'iv'
    True
    >>> f(1)
    'i'
    >>> g(3) == 'iii'
    """
    found = {(call, value) for call, value, _ in docstring_examples(doc, "f")}
    assert found == {
        ("f(19)", "'xix'"),
        ("f(152)", "'clii'"),
        ("f(4) == 'iv'", "True"),
        ("f(1)", "'i'"),
    }


def test_docstring_examples_of_other_functions_are_not_this_ones():
    doc = """The mean.

    geometric_mean([1, 4]) -> 2.0 is another function.
    np.mean([1, 4]) -> 2.5
    stats.mean([1, 3]) -> 2.0
    mean([2, 4]) -> 3.0
    """
    found = {call for call, _, _ in docstring_examples(doc, "mean")}
    # the module-qualified calls are read whole; which module is the function's own is
    # decided against the function's module (np is not stats) when the call is compared
    assert found == {"np.mean([1, 4])", "stats.mean([1, 3])", "mean([2, 4])"}


def test_a_doctest_counts_only_for_the_same_call_with_the_same_types(tmp_path: Path):
    """``kind(1)``'s example says nothing about ``kind(1.0)``; ``sign(0)``'s nothing
    about ``sign(1e-13)``; ``np.mean`` and ``geometric_mean`` examples say nothing about
    ``mean``: each is UNCLEAR (the model writes no oracle), never decided by a doctest."""
    module = (
        'def kind(x):\n    """>>> kind(1)\n    \'int\'\n    """\n    return type(x).__name__\n\n\n'
        'def sign(x):\n    """>>> sign(0)\n    0\n    """\n    return (x > 0) - (x < 0)\n\n\n'
        "def mean(xs):\n"
        '    """Mean of xs (geometric_mean([1, 4]) -> 2.0 is another function).\n\n'
        "    >>> np.mean([1, 4])\n    2.0\n"
        '    """\n'
        "    return (xs[0] * xs[-1]) ** 0.5\n"
    )
    tests = (
        "from text import kind, mean, sign\n\n\n"
        'def test_kind():\n    assert kind(1.0) == "int"\n\n\n'
        "def test_sign():\n    assert sign(1e-13) == 0\n\n\n"
        "def test_mean():\n    assert mean([1, 4]) == 2.5\n"
    )
    root = project(tmp_path / "p", module, tests)
    for name in ("test_kind", "test_sign", "test_mean"):
        verdict = run(root, f"tests/test_text.py::{name}", scripted([""])).verdict
        assert verdict.verdict == "UNCLEAR", (name, verdict.reason)
        assert verdict.truth_source != "doctest", name


def _results(*values: str | None) -> list[OracleResult]:
    return [
        OracleResult(source=f"oracle-{i}", status="ok" if v else "error", value=v)
        for i, v in enumerate(values, 1)
    ]


def test_oracles_certify_only_the_value_enough_of_them_agree_on():
    assert agreed_value(_results("5", "5", "5.0"), 3) == "5"
    assert agreed_value(_results("5", "5", "4"), 3) is None
    assert agreed_value(_results("5", "5", "4"), 2) == "5"
    assert agreed_value(_results("5", None, "5"), 3) is None  # an error is no vote
    assert agreed_value(_results("5", "4"), 1) is None  # a tie certifies nothing
    assert agreed_value(_results("0.30000000000000004", "0.3", "0.3"), 3) == "0.30000000000000004"


def test_oracle_programs_keep_definitions_and_drop_examples():
    program, problem = program_from(
        "```python\nimport math\ndef f(x):\n    return x\nprint(f(1))\nassert f(2) == 3\n```", "f"
    )
    assert problem == "" and program is not None
    assert "import math" in program and "print" not in program and "assert" not in program
    assert program_from("```python\ndef g(x): return x\n```", "f") == (
        None,
        "does not define `f`",
    )


def test_oracle_prompt_holds_the_signature_and_docstring_only():
    spec = function_spec(CORRECT, "text.py", "text", "count_vowels")
    text = "\n".join(m["content"] for m in oracle_messages(spec))
    assert spec.signature in text and "in either case" in text
    assert "BODY-MARKER" not in text and "sum(1 for ch" not in text


def test_the_model_never_sees_the_body_or_the_test_when_writing_oracles(tmp_path: Path):
    tests = TESTS.format(expected="4  # TEST-MARKER")
    root = project(tmp_path / "p", CORRECT, tests)
    model = scripted([ORACLE])
    run(root, "tests/test_text.py::test_vowels", model)
    assert len(model.calls) == 5  # three oracles, two more before a test edit
    for messages in model.calls:
        sent = "\n".join(m["content"] for m in messages)
        assert "BODY-MARKER" not in sent and "TEST-MARKER" not in sent
        assert "aeiou" not in sent  # not even the failing input
        assert "def count_vowels(text: str) -> int:" in sent


def test_format_value_writes_the_value_like_the_literal_it_replaces():
    assert format_value("'abc'", '"x"') == '"abc"'
    assert format_value("'abc'", "'x'") == "'abc'"
    assert format_value('"it\'s"', "'x'") == '"it\'s"'
    assert format_value("[1, 'a']", "[]") == "[1, 'a']"
    assert format_value("nan", "0.0") == "float('nan')"
    assert format_value("'é\\n'", '"x"') == '"é\\n"'
    # a lone surrogate is written escaped: raw, it could not be saved as UTF-8
    assert format_value("'\\ud800'", '"x"') == '"\\ud800"'
    assert format_value("'\\ud800'", '"x"').encode("utf-8")


# ------------------------------------------------------------------ verdicts and fixes


def test_correct_code_and_wrong_assertion_is_test_wrong_with_a_one_literal_fix(tmp_path: Path):
    root = project(tmp_path / "p", CORRECT, TESTS.format(expected="4"))
    result = run(root, "tests/test_text.py::test_vowels", scripted([ORACLE]))
    verdict = result.verdict
    assert verdict.verdict == "TEST_WRONG"
    assert (verdict.produced, verdict.asserted, verdict.truth) == ("5", "4", "5")
    # three oracles agreed, and a test edit needed two more (test_edit_oracles = 5)
    assert [(o.source, o.value) for o in verdict.oracles] == [
        (f"oracle-{i}", "5") for i in range(1, 6)
    ]
    assert verdict.fix is not None and verdict.fix.side == "test"
    assert verdict.fix.title == "Fix test (certified: 5)"
    assert result.new_text == TESTS.format(expected="5")
    assert verdict.review_item is None and not (root / review.QUEUE).exists()


def test_wrong_code_and_right_assertion_is_source_wrong_with_a_patch_passing_the_module(
    tmp_path: Path,
):
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    result = run(root, "tests/test_text.py::test_vowels", scripted([LONE_ORACLE], [GOOD_PATCH]))
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG"
    assert (verdict.produced, verdict.asserted, verdict.truth) == ("4", "5", "5")
    assert verdict.fix is not None and verdict.fix.side == "source"
    assert verdict.fix.path == "text.py"
    assert verdict.fix.title == "Fix source (verified 3/3 asserted calls)"
    assert (verdict.fix.calls_verified, verdict.fix.calls_total) == (3, 3)
    assert result.new_text is not None and "text.lower()" in result.new_text
    # the oracles' (identical) program came first and failed the module; the model's passed
    assert [(p.origin, p.status) for p in verdict.patches] == [
        ("oracle-1", "failed"),
        ("oracle-2", "invalid"),
        ("oracle-3", "invalid"),
        ("model", "passed"),
    ]


def test_an_oracles_program_that_passes_the_module_is_the_fix_and_keeps_the_docstring(
    tmp_path: Path,
):
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    model = scripted([ORACLE], [GOOD_PATCH])
    result = run(root, "tests/test_text.py::test_vowels", model)
    verdict = result.verdict
    assert [(p.origin, p.status) for p in verdict.patches] == [("oracle-1", "passed")]
    assert len(model.calls) == 3  # the three oracles; no patch was asked for
    assert result.new_text == (
        "def count_vowels(text: str) -> int:\n"
        '    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains."""\n'
        '    return sum(ch in "aeiouAEIOU" for ch in text)\n'  # as the oracle wrote it
    )


def test_a_test_edit_needs_the_extra_oracles_to_agree_too(tmp_path: Path):
    """Three oracles of one model can share one misreading of the docstring (the
    arbitration bench's only guard violation was that), so oracles alone certify a test
    edit only when two more agree as well."""
    root = project(tmp_path / "p", CORRECT, TESTS.format(expected="4"))
    model = scripted([ORACLE, ORACLE, ORACLE, WRONG_ORACLE])  # the fourth one dissents
    result = run(root, "tests/test_text.py::test_vowels", model)
    verdict = result.verdict
    assert verdict.verdict == "UNCLEAR" and verdict.fix is None and result.new_text is None
    assert len(model.calls) == 5
    assert [o.value for o in verdict.oracles] == ["5", "5", "5", "6", "5"]
    assert "editing the test needs 5 of 5 oracles to agree" in verdict.reason
    assert "oracle-4: 6" in verdict.reason
    assert verdict.review_item in review.read(root).items


def test_the_extra_oracles_are_asked_only_for_a_test_edit_and_can_be_turned_off(
    tmp_path: Path,
):
    # a source edit: the first three decide, nobody else is asked
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    model = scripted([LONE_ORACLE, LONE_ORACLE, LONE_ORACLE, WRONG_ORACLE], [GOOD_PATCH])
    assert run(root, "tests/test_text.py::test_vowels", model).verdict.verdict == "SOURCE_WRONG"
    assert len([c for c in model.calls if c[0]["content"] == prompts().oracle_system]) == 3
    # test_edit_oracles = k: the k oracles certify a test edit on their own
    root = project(
        tmp_path / "q",
        CORRECT,
        TESTS.format(expected="4"),
        "[arbitration]\ntest_edit_oracles = 3\n",
    )
    model = scripted([ORACLE, ORACLE, ORACLE, WRONG_ORACLE])
    verdict = run(root, "tests/test_text.py::test_vowels", model).verdict
    assert verdict.verdict == "TEST_WRONG" and len(verdict.oracles) == 3
    assert len(model.calls) == 3


def test_test_edits_need_agreement_plus_every_extra_oracle():
    assert ArbitrationConfig().test_edit_agreement == 5
    assert ArbitrationConfig(agreement=2).test_edit_agreement == 4  # 2 of 3, then 4 of 5
    assert ArbitrationConfig(oracles=7).test_edit_total == 7  # never fewer than k
    assert ArbitrationConfig(oracles=7, agreement=5).test_edit_agreement == 5


def test_oracles_agreeing_on_a_third_value_leave_it_unclear(tmp_path: Path):
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    result = run(root, "tests/test_text.py::test_vowels", scripted([WRONG_ORACLE]))
    assert result.verdict.verdict == "UNCLEAR" and result.verdict.truth == "6"
    assert "equals neither the produced value (4) nor the asserted one (5)" in result.verdict.reason


def test_a_patch_that_special_cases_the_input_is_never_offered(tmp_path: Path):
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    result = run(root, "tests/test_text.py::test_vowels", scripted([LONE_ORACLE], [CHEATING_PATCH]))
    patches = result.verdict.patches
    model = [p for p in patches if p.origin == "model"]
    assert model and all(p.status == "invalid" for p in model)
    assert model[0].message.startswith("REF330")
    assert result.verdict.fix is None and result.new_text is None


def test_without_a_passing_patch_a_human_gets_it(tmp_path: Path):
    bad = "```python\ndef count_vowels(text):\n    return 5\n```"
    root = project(
        tmp_path / "q", BUGGY, TESTS.format(expected="5"), "[arbitration]\ncandidates = 1\n"
    )
    result = run(root, "tests/test_text.py::test_vowels", scripted([LONE_ORACLE], [bad]))
    assert [(p.origin, p.status) for p in result.verdict.patches][-1] == ("model", "failed")
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG" and verdict.fix is None
    assert "no verified fix" in verdict.reason
    queued = review.read(root).items[verdict.review_item or ""]
    assert queued.kind == "arbitration" and queued.subject == "tests/test_text.py::test_vowels"


SUFFIX = '''def with_suffix(name: str) -> str:
    """NAME with ".txt" appended."""
    return name + ".txt"
'''
SUFFIX_TESTS = (
    "from text import with_suffix\n\n\n"
    'def test_suffix():\n    assert with_suffix("fo\\xff") == "fo.txt"\n'
)


def _oracle_normalizing(form: str) -> str:
    return (
        "```python\nimport unicodedata\n\n\ndef with_suffix(name):\n"
        f"    return unicodedata.normalize({form!r}, name) + '.txt'\n```"
    )


def test_oracles_whose_values_read_the_same_are_shown_escaped(tmp_path: Path):
    """A precomposed ``ÿ`` and ``y`` with a combining diaeresis print alike: the reason
    shows where the oracles differ, not the same text three times."""
    root = project(tmp_path / "p", SUFFIX, SUFFIX_TESTS)
    oracles = [_oracle_normalizing("NFC"), _oracle_normalizing("NFD")]
    verdict = run(root, "tests/test_text.py::test_suffix", scripted(oracles)).verdict
    assert verdict.verdict == "UNCLEAR" and "do not agree" in verdict.reason, verdict.reason
    assert "'fo\\xff.txt'" in verdict.reason and "'foy\\u0308.txt'" in verdict.reason


def test_values_that_differ_visibly_are_shown_as_they_are():
    from referee.checks.arbitration.outcomes import evidence_lines
    from referee.checks.models import OracleResult

    def ok(source: str, value: str) -> OracleResult:
        return OracleResult(source=source, status="ok", value=value)

    assert evidence_lines([ok("oracle-1", "'é'"), ok("oracle-2", "'è'")]) == [
        "oracle-1: 'é'",
        "oracle-2: 'è'",
    ]
    # an invisible format character (a zero-width space) makes two texts read alike
    assert evidence_lines([ok("oracle-1", "'ab'"), ok("oracle-2", "'a\u200bb'")]) == [
        "oracle-1: 'ab'",
        "oracle-2: 'a\\u200bb'",
    ]


def test_oracles_that_disagree_leave_it_unclear_and_queued(tmp_path: Path):
    root = project(tmp_path / "p", CORRECT, TESTS.format(expected="4"))
    result = run(root, "tests/test_text.py::test_vowels", scripted([ORACLE, WRONG_ORACLE]))
    verdict = result.verdict
    assert verdict.verdict == "UNCLEAR" and verdict.fix is None and result.new_text is None
    assert "do not agree" in verdict.reason
    # the line ends with what would decide it without the model
    assert verdict.reason.endswith(
        ' — a docstring example of the call (`>>> count_vowels("aeiou")`) or a reference '
        '(`[arbitration.references]` "text:count_vowels" = ...) decides it without the model'
    ), verdict.reason
    item = review.read(root).items[verdict.review_item or ""]
    assert item.line == 5 and "do not agree" in item.reasons[0]
    again = run(root, "tests/test_text.py::test_vowels", scripted([ORACLE, WRONG_ORACLE]))
    assert again.verdict.review_item == verdict.review_item
    assert len(review.read(root).items) == 1  # the same content is queued once


def test_no_docstring_no_doctest_no_reference_means_no_truth(tmp_path: Path):
    module = "def count_vowels(text):\n    return sum(c in 'aeiou' for c in text)\n"
    root = project(tmp_path / "p", module, TESTS.format(expected="4"))
    model = scripted([ORACLE])
    verdict = run(root, "tests/test_text.py::test_vowels", model).verdict
    assert verdict.verdict == "UNCLEAR" and "no docstring" in verdict.reason
    assert model.calls == []


def test_a_declared_reference_decides_without_a_model(tmp_path: Path):
    config = '[arbitration]\nreferences = { "text:count_vowels" = "reference:vowels" }\n'
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"), config)
    (root / "reference.py").write_text(
        "def vowels(s):\n    return sum(c in 'aeiouAEIOU' for c in s)\n", encoding="utf-8"
    )
    verdict = run(root, "tests/test_text.py::test_vowels", None).verdict
    assert verdict.verdict == "SOURCE_WRONG" and verdict.truth_source == "reference"
    assert [(o.source, o.value) for o in verdict.oracles] == [("reference", "5")]
    assert verdict.fix is None and "no model" in verdict.reason


def test_a_doctest_and_a_reference_that_disagree_leave_it_unclear_saying_which_to_correct(
    tmp_path: Path,
):
    module = CORRECT.replace(
        'contains."""', 'contains.\n\n    >>> count_vowels("aeiou")\n    5\n    """'
    )
    config = '[arbitration]\nreferences = { "text:count_vowels" = "reference:vowels" }\n'
    root = project(tmp_path / "p", module, TESTS.format(expected="4"), config)
    (root / "reference.py").write_text(  # counts the consonants
        "def vowels(s):\n    return sum(c not in 'aeiouAEIOU' for c in s)\n", encoding="utf-8"
    )
    model = scripted([ORACLE])
    verdict = run(root, "tests/test_text.py::test_vowels", model).verdict
    assert verdict.verdict == "UNCLEAR" and verdict.fix is None
    assert verdict.reason == (
        "the explicit sources do not agree: doctest: 5; reference: 0 — one of them is wrong: "
        "correct the docstring's example or the reference (`[arbitration.references]`)"
    )
    assert model.calls == []  # the oracles are not asked where a declared truth exists


def test_a_doctest_for_the_same_call_decides_and_oracles_are_not_asked(tmp_path: Path):
    module = CORRECT.replace(
        'contains."""', 'contains.\n\n    >>> count_vowels("aeiou")\n    5\n    """'
    )
    root = project(tmp_path / "p", module, TESTS.format(expected="4"))
    model = scripted([WRONG_ORACLE])
    verdict = run(root, "tests/test_text.py::test_vowels", model).verdict
    assert verdict.verdict == "TEST_WRONG" and verdict.truth_source == "doctest"
    assert model.calls == []


def test_a_test_edit_that_would_still_fail_is_not_certified(tmp_path: Path):
    """The doctest's 0.3 is within tolerance of what the code gives (0.30000000000000004),
    so the code is right — but ``== 0.3`` written into the test still fails; a reference's
    ``Fraction(3, 2)`` written into a module that never imported Fraction fails too.
    Neither is offered or certified."""
    module = (
        "from fractions import Fraction\n\n\n"
        'def add(a, b):\n    """Add.\n\n    >>> add(0.1, 0.2)\n    0.3\n    """\n'
        "    return a + b\n\n\n"
        "def half(x):\n    return Fraction(x, 2)\n"
    )
    tests = (
        "from text import add, half\n\n\n"
        "def test_add():\n    assert add(0.1, 0.2) == 0.31\n\n\n"
        "def test_half():\n    assert half(3) == 1.4\n"
    )
    config = '[arbitration]\nreferences = { "text:half" = "reference:half" }\n'
    root = project(tmp_path / "p", module, tests, config)
    (root / "reference.py").write_text(
        "from fractions import Fraction\n\n\ndef half(x):\n    return Fraction(x, 2)\n",
        encoding="utf-8",
    )
    for name, written in (("test_add", "0.3"), ("test_half", "Fraction(3, 2)")):
        result = run(root, f"tests/test_text.py::{name}", None)
        verdict = result.verdict
        assert verdict.verdict == "UNCLEAR", (name, verdict.reason)
        assert f"`{written}` written in still does not pass" in verdict.reason
        assert verdict.fix is None and result.new_text is None
    assert not (root / ".referee" / "certificates.jsonl").exists()


@pytest.mark.parametrize(
    "assertion", ["mean([1, 4]) == pytest.approx(2.5)", "pytest.approx(2.5) == mean([1, 4])"]
)
def test_approx_on_either_side_is_the_asserted_value(tmp_path: Path, assertion: str):
    module = (
        'def mean(xs):\n    """Arithmetic mean.\n\n    >>> mean([1, 4])\n    2.5\n    """\n'
        "    return (xs[0] * xs[-1]) ** 0.5\n"
    )
    tests = f"import pytest\nfrom text import mean\n\n\ndef test_mean():\n    assert {assertion}\n"
    root = project(tmp_path / "p", module, tests)
    verdict = run(root, "tests/test_text.py::test_mean", None).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert (verdict.observation.asserted, verdict.observation.produced) == ("2.5", "2.0")


def test_a_call_that_raises_is_source_wrong_when_the_truth_is_the_asserted_value(tmp_path: Path):
    module = BUGGY.replace("    return sum", "    if len(text) > 4:\n        1 / 0\n    return sum")
    root = project(tmp_path / "p", module, TESTS.format(expected="5"))
    verdict = run(root, "tests/test_text.py::test_vowels", scripted([ORACLE], [GOOD_PATCH])).verdict
    assert verdict.verdict == "SOURCE_WRONG"
    assert verdict.produced == "ZeroDivisionError: division by zero"
    assert verdict.fix is not None


def test_unisolatable_failures_are_unclear_with_the_reason(tmp_path: Path):
    chained = '0 < count_vowels("aeiou") < 3'  # a chain is no one comparison
    tests = TESTS.format(expected="4").replace('count_vowels("aeiou") == 4', chained)
    root = project(tmp_path / "p", CORRECT, tests)
    verdict = run(root, "tests/test_text.py::test_vowels", scripted([ORACLE])).verdict
    assert verdict.verdict == "UNCLEAR" and "only comparisons of two values" in verdict.reason


def test_a_passing_test_or_a_missing_one_is_an_error_not_a_verdict(tmp_path: Path):
    root = project(tmp_path / "p", CORRECT, TESTS.format(expected="5"))
    with pytest.raises(ArbitrationError, match="passes: there is nothing to arbitrate"):
        run(root, "tests/test_text.py::test_vowels")
    with pytest.raises(ArbitrationError, match="ran no test"):
        run(root, "tests/test_text.py::test_nothing_here")
    with pytest.raises(ArbitrationError, match="no such file"):
        run(root, "tests/test_gone.py::test_x")


def test_oracle_programs_are_cached_across_runs(tmp_path: Path):
    root = project(tmp_path / "p", CORRECT, TESTS.format(expected="4"))
    model = scripted([ORACLE])
    run(root, "tests/test_text.py::test_vowels", model)
    again = run(root, "tests/test_text.py::test_vowels", model).verdict
    assert len(model.calls) == 5  # the second run asked nothing
    assert [o.cached for o in again.oracles] == [True] * 5
    assert again.verdict == "TEST_WRONG"


def test_patched_module_replaces_only_the_function_and_adds_missing_imports():
    module = "import os\n\n\n@decorate\ndef f(x):\n    return x\n\n\ndef g():\n    return 1\n"
    spec = function_spec(module, "m.py", "m", "f")
    answer = "```python\nimport re\nimport os\ndef f(x):\n    return re.sub('a', '', x)\n```"
    new, problem = patched_module(spec, answer)
    assert problem == ""
    assert new == (
        "import os\nimport re\n\n\n@decorate\ndef f(x):\n    return re.sub('a', '', x)\n"
        "\n\ndef g():\n    return 1\n"
    )


# ------------------------------------------------------------------ applying and the guard


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_applied_test_fix_carries_a_certificate_the_guard_honours(tmp_path: Path, referee):
    root = tmp_path / "repo"
    files = {
        "referee.toml": "",
        "text.py": CORRECT,
        "tests/test_text.py": TESTS.format(expected="4"),
    }
    commit_repo(root, files)
    result = apply(run(root, "tests/test_text.py::test_vowels", scripted([ORACLE])))
    assert result.verdict.applied
    assert result.verdict.history is not None and ": base" in result.verdict.history
    certificate = result.verdict.certificate
    assert certificate is not None
    stored = ledger.read(root).certificates
    assert [c.id for c in stored] == [certificate.id]
    assert (certificate.test_id, certificate.old_value, certificate.new_value) == (
        "tests/test_text.py::test_vowels",
        "4",
        "5",
    )
    assert [e.source for e in certificate.evidence] == [f"oracle-{i}" for i in range(1, 6)]
    assert (root / "tests/test_text.py").read_text(encoding="utf-8") == TESTS.format(expected="5")
    guard = referee("guard", "--format", "json", cwd=root)
    assert guard.returncode == 0, guard.stdout + guard.stderr
    assert [f["code"] for f in json.loads(guard.stdout)["findings"]] == ["REF302"]

    # The same edit by hand, without a certificate: the guard fails.
    git(root, "checkout", "--", "tests/test_text.py")
    (root / ledger.LEDGER).unlink()
    (root / "tests/test_text.py").write_text(TESTS.format(expected="5"), encoding="utf-8")
    assert referee("guard", cwd=root).returncode == 1


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_fixed_literal_assigned_once_carries_a_certificate_the_guard_honours(
    tmp_path: Path, referee
):
    """The expected value in a local (`expected = 44` -> `expected = 5`, a shorter
    literal: the assertion below it moves): the guard compares it as the literal and
    honours the certificate arbitration writes; the same edit by hand is REF302."""
    root = tmp_path / "repo"
    local = TESTS.replace(
        '    assert count_vowels("aeiou") == {expected}\n',
        '    expected = {expected}\n    assert count_vowels("aeiou") == expected\n',
    )
    files = {
        "referee.toml": "",
        "text.py": CORRECT,
        "tests/test_text.py": local.format(expected="44"),
    }
    commit_repo(root, files)
    result = apply(run(root, "tests/test_text.py::test_vowels", scripted([ORACLE])))
    assert result.verdict.applied
    certificate = result.verdict.certificate
    assert certificate is not None
    assert (certificate.old_value, certificate.new_value) == ("44", "5")
    assert (root / "tests/test_text.py").read_text(encoding="utf-8") == local.format(expected="5")
    guard = referee("guard", "--format", "json", cwd=root)
    assert guard.returncode == 0, guard.stdout + guard.stderr
    findings = json.loads(guard.stdout)["findings"]
    assert [(f["code"], f["severity"]) for f in findings] == [("REF302", "info")], findings
    assert "from 44 to 5, certified by" in findings[0]["message"]

    (root / ledger.LEDGER).unlink()
    guard = referee("guard", "--format", "json", cwd=root)
    assert guard.returncode == 1
    findings = json.loads(guard.stdout)["findings"]
    assert [(f["code"], f["severity"]) for f in findings] == [("REF302", "error")], findings


def test_a_fix_is_not_applied_to_a_file_that_changed_since_it_was_read(tmp_path: Path):
    root = project(tmp_path / "p", CORRECT, TESTS.format(expected="4"))
    result = run(root, "tests/test_text.py::test_vowels", scripted([ORACLE]))
    edited = TESTS.format(expected="4") + "\n# edited meanwhile\n"
    (root / "tests/test_text.py").write_text(edited, encoding="utf-8")
    with pytest.raises(StaleFileError):
        apply(result)
    assert (root / "tests/test_text.py").read_text(encoding="utf-8") == edited
    assert not (root / ledger.LEDGER).exists()


def test_a_cancelled_arbitration_stops_and_queues_nothing(tmp_path: Path):
    root = project(tmp_path / "p", CORRECT, TESTS.format(expected="4"))
    model = scripted([ORACLE])
    with pytest.raises(Cancelled):
        run(root, "tests/test_text.py::test_vowels", model, work=Work(is_cancelled=lambda: True))
    assert model.calls == [] and not (root / review.QUEUE).exists()


def test_without_a_sandbox_boundary_nothing_runs_and_it_is_unclear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Fail closed: where the sandbox has no kernel boundary, no oracle is written or run,
    no patch is tried, and the verdict says why and which setting allows the weak mode."""
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    monkeypatch.setenv("REFEREE_SANDBOX_DISABLE", "bwrap,userns,landlock,seccomp")
    monkeypatch.delenv("REFEREE_SANDBOX", raising=False)
    model = scripted([ORACLE], [GOOD_PATCH])
    result = run(root, "tests/test_text.py::test_vowels", model)
    verdict = result.verdict
    assert verdict.verdict == "UNCLEAR" and verdict.fix is None and result.new_text is None
    assert verdict.reason.startswith("model-written code was not run: ")
    assert "REFEREE_SANDBOX=weak" in verdict.reason
    assert model.calls == []
    assert (root / "text.py").read_text() == BUGGY
