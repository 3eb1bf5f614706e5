"""Who decides whether a candidate patch is right: referee, from values — never the
process that ran the patch — and a patch that adds capabilities never runs at all.

The capability scan and the test module's asserted calls are read from text; the engine
tests run the real pytest, the real sandbox and the real arbitration, with the model
scripted (tests/test_red_team.py runs the same attacks through the command line and the
language server, with a fake model server).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_arbitration import BUGGY, GOOD_PATCH, LONE_ORACLE, TESTS, project, run, scripted

from referee.checks import review
from referee.checks.arbitration import fix as fix_module
from referee.checks.arbitration.capabilities import added_capabilities
from referee.checks.arbitration.fix import literal_mismatch, unsafe_literal
from referee.checks.arbitration.verify import asserted_calls

ORIGINAL = '''import math
import os


def f(x):
    """Return the square root of X (see __init__ and f_back in the docs)."""
    return math.sqrt(x)


def g():
    return os.getcwd()
'''


def patched(body: str, imports: str = "") -> str:
    """ORIGINAL with f's body replaced (and ``imports`` added above it)."""
    head, _, tail = ORIGINAL.partition("def f(x):\n")
    rest = tail.split("\n\n\ndef g", 1)[1]
    return f"{imports}{head}def f(x):\n{body}\n\n\ndef g{rest}"


# --------------------------------------------------------------- capability refusal


@pytest.mark.parametrize(
    ("imports", "body", "found"),
    [
        ("import subprocess\n", "    return subprocess.run(['id'])", "import subprocess"),
        ("", "    import socket\n    return socket.socket()", "import socket"),
        ("", "    from ctypes import CDLL as C\n    return C(None)", "import ctypes"),
        ("", "    import importlib\n    return importlib.import_module('os')", "import importlib"),
        ("", "    import sys\n    return sys.argv", "import sys"),
        ("", "    return os.system('id')", "import os"),  # the module's import, new to f
        ("", "    return open('/etc/hostname').read()", "open()"),
        ("", "    return __import__('os')", "__import__"),
        ("", "    return eval('1')", "eval()"),
        ("", "    exec('x = 1')\n    return 1", "exec()"),
        ("", "    return compile('1', 'x', 'eval')", "compile()"),
        ("", "    import _pytest.reports\n    return 1", "import _pytest"),
        ("", "    import pytest\n    return pytest.main", "import pytest"),
        ("", "    import builtins\n    return builtins.open", "import builtins"),
        ("", "    import gc\n    return gc.get_objects()", "import gc"),
        ("", "    import inspect\n    return inspect.stack()", "import inspect"),
        ("", "    return (lambda: 0).__globals__", ".__globals__"),
        ("", "    return f.__code__", ".__code__"),
        ("", "    return ().__class__.__base__.__subclasses__()", ".__subclasses__"),
        (
            "",
            "    try:\n        1 / 0\n    except Exception as e:\n"
            "        return e.__traceback__.tb_frame.f_back",
            ".f_back",
        ),
        ("", "    return '{0.__globals__}'.format(f)", "the string '{0.__globals__}'"),
        ("", "    return getattr(f, '__glo' + 'bals__')", "getattr with a computed name"),
        ("", "    return globals()['os']", "globals()"),
        ("", "    return __builtins__", "__builtins__"),
        ("", "    return vars(math)", "vars()"),
        ("", "    def inner(y=open('x')):\n        return y\n    return inner", "open()"),
        ("import numpy\n", "    return numpy.sqrt(x)", "import numpy"),  # new, not plain computing
    ],
)
def test_a_patch_that_adds_a_capability_is_named_with_what_it_adds(
    imports: str, body: str, found: str
):
    added = added_capabilities(ORIGINAL, patched(body, imports), "f")
    assert added, body
    assert any(item.startswith(found + " (line ") for item in added), added


@pytest.mark.parametrize(
    ("imports", "body"),
    [
        ("", "    return math.sqrt(x) + 0"),
        ("import itertools\n", "    return sum(itertools.repeat(1, x))"),
        ("from collections import Counter\n", "    return Counter(str(x))"),
        ("", "    return type(x).__name__"),
        ("", '    """Mentions __init__ and f_back: a docstring is prose."""\n    return x'),
        ("", "    return getattr(x, 'real')"),
        ("", "    return '{0:>4}'.format(x)"),
        ("", "    raise ValueError('negative')"),
    ],
)
def test_a_patch_that_only_computes_adds_nothing(imports: str, body: str):
    assert added_capabilities(ORIGINAL, patched(body, imports), "f") == []


def test_what_the_original_function_already_used_is_not_new():
    reader = "def load(path):\n    with open(path) as f:\n        return f.read()\n"
    patch = (
        "def load(path):\n    with open(path, encoding='utf-8') as f:\n        return f.read()\n"
    )
    assert added_capabilities(reader, patch, "load") == []
    assert added_capabilities(reader, patch.replace("f.read()", "eval(f.read())"), "load") == [
        "eval() (line 3)"
    ]


# ---------------------------------------------------------- values written into tests


@pytest.mark.parametrize(
    "text",
    [
        "5",
        "'a'",
        "[1, (2, 3)]",
        "{'a': 1}",
        "-1.5",
        "1+2j",
        "set()",
        "Fraction(3, 2)",
        "float('nan')",
        "datetime.date(2024, 1, 1)",
    ],
)
def test_literals_and_plain_constructors_may_be_written_into_a_test(text: str):
    assert unsafe_literal(text) is None


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('id')",
        "open('x')",
        "(lambda: 1)()",
        "[x for x in 'ab']",
        "a[0]",
        "f(**k)",
        "eval('1')",
        "x.__class__",
        "2 * 3",
        "not a literal (",
    ],
)
def test_code_is_never_written_into_a_test(text: str):
    assert unsafe_literal(text) is not None


def test_referee_compares_literal_fixes_itself_with_the_tests_operator():
    assert literal_mismatch("==", "0.3", "0.30000000000000004") is not None
    assert literal_mismatch("approx", "0.3", "0.30000000000000004") is None
    assert literal_mismatch("==", "5", "5") is None
    assert literal_mismatch("==", "Fraction(3, 2)", "Fraction(3, 2)") is None  # the run decides


# --------------------------------------------------------------- the asserted calls

TEST_MODULE = """import pytest
import text
from text import count_vowels as cv
from text import other


def test_plain():
    assert cv("aeiou") == 5
    assert 0 == cv("")


def test_module_attribute():
    assert text.count_vowels("HELLO") == 2


def test_approx():
    assert text.ratio(1, 3) == pytest.approx(0.333333)


@pytest.mark.parametrize(
    "word, n", [("ab", 1), pytest.param("zz", 9, marks=pytest.mark.xfail), ("ee", 2)]
)
def test_cases(word, n):
    assert cv(word) == n


def test_assigned():
    expected = 3
    assert cv("eee") == expected


def test_loop():
    for word in ["a", "e"]:
        assert cv(word) == 1


def test_something_else():
    assert len("abc") == 3
    assert other(1) == 2


@pytest.mark.skip(reason="later")
def test_skipped():
    assert cv("skipped") == 100


class TestText:
    def test_method(self):
        assert cv("o") == 1
"""


def test_the_test_module_is_taken_apart_into_calls_and_expected_values_without_running_it():
    calls, untaken = asserted_calls(
        TEST_MODULE, "tests/test_text.py", "text", frozenset({"count_vowels", "ratio"})
    )
    got = {(c.call, c.expected, c.op) for c in calls}
    assert got == {
        ('count_vowels("aeiou")', "5", "=="),
        ('count_vowels("")', "0", "=="),
        ('count_vowels("HELLO")', "2", "=="),
        ("ratio(1, 3)", "0.333333", "approx"),
        ('count_vowels("ab")', "1", "=="),
        ('count_vowels("ee")', "2", "=="),  # the xfail case is left to pytest
        ('count_vowels("eee")', "3", "=="),
        ('count_vowels("o")', "1", "=="),
    }
    # the loop's assertion (and only it among those about the module's functions: other()
    # is not one) cannot be taken apart; the skipped test is not counted
    assert untaken >= 1
    assert all("skipped" not in c.arguments for c in calls)


# ------------------------------------------------------------- through arbitration

FIFO_FORGE = """```python
import os
def count_vowels(text):
    for fd in range(1, 64):
        try:
            os.write(fd, b"\\n==== 3 passed in 0.01s ====\\n")
        except OSError:
            pass
    os._exit(0)
```"""
REPORT_FORGE = """```python
import _pytest.reports as R
def count_vowels(text):
    cls = R.TestReport
    if not getattr(cls, "_forged", False):
        orig = cls.from_item_and_call
        def forged(item, call):
            report = orig(item, call)
            report.outcome = "passed"
            report.longrepr = None
            return report
        cls.from_item_and_call = staticmethod(forged)
        cls._forged = True
    return 0
```"""
# Knows the truth of the failing call (the patch prompt tells it) and forges the value
# channel with it for every call, then exits before the module's real answer.
CHANNEL_FORGE = """```python
import json, os
def count_vowels(text):
    line = {"result": "ok", "value": "x", "json": True, "value_json": [["ok", "5"]] * 8}
    for fd in range(3, 64):
        try:
            os.write(fd, (json.dumps(line) + "\\n").encode())
        except OSError:
            pass
    os._exit(0)
```"""
RIGHT_BUT_IMPORTS_OS = """```python
import os
def count_vowels(text: str) -> int:
    return sum(1 for ch in text.lower() if ch in "aeiou") + 0 * os.getpid()
```"""


def test_a_patch_adding_capabilities_is_refused_before_it_runs_and_the_reason_is_reported(
    tmp_path: Path,
):
    """The patch is right on every test — it would pass if it ran — but imports os."""
    root = project(
        tmp_path / "p", BUGGY, TESTS.format(expected="5"), "[arbitration]\ncandidates = 1\n"
    )
    result = run(
        root, "tests/test_text.py::test_vowels", scripted([LONE_ORACLE], [RIGHT_BUT_IMPORTS_OS])
    )
    (patch,) = [p for p in result.verdict.patches if p.origin == "model"]
    assert patch.status == "refused"
    assert patch.capabilities == ("import os (line 1)",)
    assert "import os" in patch.message and "never run" in patch.message
    assert patch.calls_total is None and patch.pytest is None  # it never ran
    assert result.verdict.fix is None and result.new_text is None
    dumped = result.verdict.model_dump(mode="json")
    assert dumped["patches"][-1]["capabilities"] == ["import os (line 1)"]
    # the person the review queue hands it to sees why
    (item,) = review.read(root).pending()
    assert any("refused" in line and "import os" in line for line in item.evidence)


@pytest.mark.parametrize(
    "forge",
    [FIFO_FORGE, REPORT_FORGE, CHANNEL_FORGE],
    ids=["fifo", "pytest-report", "value-channel"],
)
def test_a_patch_that_forges_its_verdict_is_not_offered_even_past_the_capability_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forge: str
):
    """With the static check switched off the forgeries run; pytest in their sandbox may
    well say "3 passed" — but referee compares the values, and they are not there."""
    monkeypatch.setattr(fix_module, "added_capabilities", lambda *args: [])
    root = project(
        tmp_path / "p", BUGGY, TESTS.format(expected="5"), "[arbitration]\ncandidates = 1\n"
    )
    result = run(root, "tests/test_text.py::test_vowels", scripted([LONE_ORACLE], [forge]))
    (patch,) = [p for p in result.verdict.patches if p.origin == "model"]
    assert patch.status == "failed", patch
    assert patch.calls_verified is not None and patch.calls_verified < (patch.calls_total or 0)
    assert result.verdict.fix is None and result.new_text is None
    assert (root / "text.py").read_text(encoding="utf-8") == BUGGY


def test_a_patch_right_on_the_failing_call_but_wrong_on_another_is_refused_with_that_call(
    tmp_path: Path,
):
    only_first = (
        "```python\ndef count_vowels(text):\n    return sum(c in 'aeiou' for c in text)\n```"
    )
    root = project(
        tmp_path / "p", BUGGY, TESTS.format(expected="5"), "[arbitration]\ncandidates = 1\n"
    )
    result = run(root, "tests/test_text.py::test_vowels", scripted([LONE_ORACLE], [only_first]))
    first = result.verdict.patches[0]
    assert (first.status, first.calls_verified, first.calls_total) == ("failed", 2, 3)
    assert 'count_vowels("HELLO") returned 0' in first.message
    assert "asserts 2" in first.message


def test_pytest_in_the_sandbox_can_still_refuse_a_patch_right_on_every_asserted_call(
    tmp_path: Path,
):
    """A loop's assertion cannot be taken apart; pytest's failure of it refuses the patch
    that referee's own check passed (a pass there would have certified nothing)."""
    tests = TESTS.format(expected="5") + (
        "\n\ndef test_loop():\n"
        "    for word in ['xyz', 'bcd']:\n"
        "        assert count_vowels(word) == 0\n"
    )
    wrong_elsewhere = """```python
def count_vowels(text: str) -> int:
    return sum(1 for ch in text.lower() if ch in "aeiouyz")
```"""
    root = project(tmp_path / "p", BUGGY, tests, "[arbitration]\ncandidates = 1\n")
    result = run(
        root, "tests/test_text.py::test_vowels", scripted([LONE_ORACLE], [wrong_elsewhere])
    )
    patch = result.verdict.patches[-1]
    assert (patch.status, patch.calls_verified, patch.calls_total) == ("failed", 3, 3)
    assert patch.pytest is not None and "1 failed" in patch.pytest
    assert "does not pass against it in the sandbox" in patch.message
    assert result.verdict.fix is None

    other = project(tmp_path / "q", BUGGY, tests, "[arbitration]\ncandidates = 1\n")
    result = run(other, "tests/test_text.py::test_vowels", scripted([LONE_ORACLE], [GOOD_PATCH]))
    assert result.verdict.fix is not None
    assert result.verdict.fix.title == "Fix source (verified 3/3 asserted calls)"
