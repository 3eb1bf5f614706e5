"""L2's execution checks: mutation adequacy (real sandbox, real pytest, no model) and the
differential check against oracles (real sandbox; the oracles' model is the fake
OpenAI-compatible server, answering with fixed programs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from referee.checks import sandbox
from referee.checks.arbitration.isolate import function_spec
from referee.checks.configuration import ArbitrationConfig, ExecutionConfig
from referee.checks.execution.differential import check_function
from referee.checks.execution.inputs import (
    docstring_inputs,
    generated_inputs,
    observed_inputs,
    preconditions,
)
from referee.checks.execution.mutants import mutants
from referee.checks.execution.mutation import GradeCache, grade_test
from referee.checks.execution.targets import targets

needs_sandbox = pytest.mark.skipif(
    sandbox.boundary_problem() is not None, reason="no kernel boundary for the sandbox here"
)

EVEN = '''def is_even(n: int) -> bool:
    """Whether n is even."""
    return n % 2 == 0
'''

TESTS = """from mathx import is_even
import mathx


def test_weak():
    assert is_even(4) is not None


def test_good():
    assert mathx.is_even(4)
    assert not mathx.is_even(3)
"""


# ------------------------------------------------------------------------------ mutants


def test_mutants_cover_each_operator_and_keep_the_rest_as_written():
    text = (
        "import math\n\n\n"
        "def f(x: int, lo: int) -> int:\n"
        '    """Doc."""\n'
        "    if x < lo:  # below\n"
        "        return lo\n"
        "    y = x * 2 + 1\n"
        "    return y if not x == 3 else -y\n"
    )
    found = mutants(text, "m.py", ["f"])
    changes = {(m.operator, m.before, m.after) for m in found}
    assert ("boundary", "if x < lo:  # below", "if x <= lo:  # below") in changes
    assert ("comparison", "if x < lo:  # below", "if x >= lo:  # below") in changes
    assert ("arithmetic", "y = x * 2 + 1", "y = x * 2 - 1") in changes
    assert ("constant", "y = x * 2 + 1", "y = x * 3 + 1") in changes
    assert ("constant", "y = x * 2 + 1", "y = x * 2 + 0") in changes
    assert ("negation", "if x < lo:  # below", "if not x < lo:  # below") in changes
    assert ("negation", "return y if not x == 3 else -y", "return y if x == 3 else -y") in changes
    assert ("return", "return lo", "return 0") in changes  # by the annotation: an int
    assert ("statement", "y = x * 2 + 1", "pass") in changes
    # the docstring and the import are never touched; each mutant is one change
    for m in found:
        assert '"""Doc."""' in m.text and m.text.startswith("import math\n")
        before, after = text.splitlines(), m.text.splitlines()
        assert sum(a != b for a, b in zip(before, after, strict=True)) == 1


def test_mutants_of_a_method_are_checked_on_the_method_and_spliced_into_the_module():
    text = (
        "class Stack:\n"
        "    def __init__(self):\n"
        "        self.items = []\n\n"
        "    @property\n"
        "    def empty(self) -> bool:\n"
        "        return len(self.items) == 0\n\n\n"
        "def other(x):\n    return x + 1\n"
    )
    found = mutants(text, "m.py", ["Stack"])
    changes = {(m.function, m.before, m.after) for m in found}
    assert ("Stack.empty", "return len(self.items) == 0", "return len(self.items) != 0") in changes
    assert ("Stack.empty", "return len(self.items) == 0", "return len(self.items) == 1") in changes
    assert all(m.function.startswith("Stack.") for m in found)  # `other` is not a target
    for m in found:
        compile(m.text, "m.py", "exec")
        before, after = text.splitlines(), m.text.splitlines()
        assert sum(a != b for a, b in zip(before, after, strict=True)) == 1


def test_mutants_respect_the_operator_selection_and_precedence():
    text = "def g(a, b, c):\n    return a - b * c\n"
    found = mutants(text, "m.py", ["g"], ["arithmetic"])
    assert {m.operator for m in found} == {"arithmetic"}
    afters = {m.after for m in found}
    # `*` swapped inside `a - b * c` must keep its grouping
    assert "return a - b / c" in afters
    assert "return a + b * c" in afters
    for m in found:
        compile(m.text, "m.py", "exec")


def test_targets_follow_the_test_modules_imports():
    files = {"mathx.py": EVEN, "tests/test_m.py": TESTS, "other.py": "def is_even(n):\n    pass\n"}
    assert targets(TESTS, "tests/test_m.py", "test_weak", files) == {"mathx.py": ["is_even"]}
    assert targets(TESTS, "tests/test_m.py", "test_good", files) == {"mathx.py": ["is_even"]}
    assert targets(TESTS, "tests/test_m.py", "test_missing", files) == {}


def test_a_function_passed_to_a_call_is_a_target():
    """HumanEval's ``check(candidate)``, ``map(f, xs)``, ``run(func=f)``: the function is
    called by what it is given to. A constant imported beside it is not a target."""
    tests = (
        "from mathx import is_even, LIMIT\n\n\n"
        "def check(candidate):\n    assert candidate(4)\n\n\n"
        "def test_it():\n    check(is_even)\n    assert list(map(is_even, [LIMIT]))\n"
        "    assert is_even(LIMIT) is False\n"
    )
    files = {"mathx.py": EVEN + "LIMIT = 3\n", "tests/test_m.py": tests}
    assert targets(tests, "tests/test_m.py", "test_it", files) == {"mathx.py": ["is_even"]}


def test_targets_follow_a_packages_re_exports_to_the_defining_module():
    """``import pkg as p`` then ``p.is_even``: pkg/__init__.py only re-exports it
    (``from .core import *`` / ``from .core import is_even``); the mutants are of the
    module that defines it."""
    tests = "import pkg as p\n\n\ndef test_it():\n    assert p.is_even(4)\n"
    for init in ("from .core import *\n", "from .core import is_even as is_even\n"):
        files = {"pkg/__init__.py": init, "pkg/core.py": EVEN, "tests/test_p.py": tests}
        assert targets(tests, "tests/test_p.py", "test_it", files) == {"pkg/core.py": ["is_even"]}
    # defined in __init__ itself: stays there
    files = {"pkg/__init__.py": EVEN, "pkg/core.py": EVEN, "tests/test_p.py": tests}
    assert targets(tests, "tests/test_p.py", "test_it", files) == {"pkg/__init__.py": ["is_even"]}


# ------------------------------------------------------------------------------ grading


@needs_sandbox
def test_a_test_that_kills_no_mutant_survives_with_the_mutant_as_evidence(tmp_path):
    files = {"mathx.py": EVEN, "tests/test_m.py": TESTS}
    cache = GradeCache(tmp_path / "cache")
    weak = grade_test("tests/test_m.py", "test_weak", files, cache=cache)
    assert weak.status == "survived", weak
    assert weak.tried == weak.total > 3
    changes = {(m["before"], m["after"]) for m in weak.survivors}
    assert ("return n % 2 == 0", "return n % 2 != 0") in changes
    good = grade_test("tests/test_m.py", "test_good", files, cache=cache)
    assert good.status == "killed" and good.survivors == []
    assert good.killed_by is not None
    # cached by content: the same files answer from the cache, a change does not
    again = grade_test("tests/test_m.py", "test_weak", files, cache=cache)
    assert again.cached and again.status == "survived"
    stronger = {**files, "tests/test_m.py": TESTS.replace("is not None", "is True")}
    assert not grade_test("tests/test_m.py", "test_weak", stronger, cache=cache).cached


LAST = '''def last_even(xs: list[int]) -> int:
    """The last even number of XS (XS has one)."""
    i = len(xs) - 1
    while xs[i] % 2 != 0:
        i -= 1
    return xs[i]
'''
LAST_TESTS = """from seq import last_even


def test_runs():
    assert last_even([2, 3, 4, 5]) is not None


def test_value():
    assert last_even([2, 3, 4, 5]) == 4
"""


@needs_sandbox
def test_a_test_that_fails_only_when_the_code_crashes_is_no_kill(tmp_path):
    # `i = len(xs)` (constant +1) makes xs[i] raise IndexError: `is not None` fails there,
    # without any check of a value; on `i -= 2` (a wrong value, no crash) it passes.
    files = {"seq.py": LAST, "tests/test_s.py": LAST_TESTS}
    # 4 s, not the default 10: the endless mutant waits out the whole limit (the honest
    # runs of this one-line test take well under a second, on a loaded CI machine too).
    runs = grade_test("tests/test_s.py", "test_runs", files, timeout=4)
    assert runs.status == "survived", runs
    crashed = {(m["before"], m["after"]) for m in runs.crashed}
    assert ("i = len(xs) - 1", "i = len(xs) - 0") in crashed  # IndexError
    assert ("i -= 1", "i -= 0") in crashed  # never ends: timed out
    assert runs.survivors and runs.tried == runs.total
    value = grade_test("tests/test_s.py", "test_value", files)
    assert value.status == "killed", value
    assert value.killed_by is not None


@needs_sandbox
def test_a_return_none_mutant_caught_by_is_not_none_is_no_kill(tmp_path):
    files = {
        "calc.py": "def double(n):\n    return n * 2\n",
        "tests/test_c.py": "from calc import double\n\n\ndef test_some():\n"
        "    assert double(3) is not None\n",
    }
    grade = grade_test("tests/test_c.py", "test_some", files)
    assert grade.status == "survived", grade
    assert [m["after"] for m in grade.crashed] == ["return None"]
    assert grade.survivors and all(m["after"] != "return None" for m in grade.survivors)


UNPACKED = """\
def evens(items):
    return [i for i in items if i % 2 == 0]


def first_even(items):
    (found,) = evens(items)
    return found
"""
UNPACKED_TESTS = """\
from pick import evens, first_even


def test_one_even():
    (found,) = evens([1, 2, 3])


def test_first_even_runs():
    first_even([1, 2, 3])
"""


@needs_sandbox
def test_the_tests_own_unpacking_is_a_check_an_unpacking_in_the_code_is_a_crash(tmp_path):
    # `(found,) = evens(...)` in the test says "exactly one even": `i % 2 != 0` gives two,
    # and the test's unpacking fails on it (a kill). The same unpacking inside the code
    # under test is the code crashing, and the test that only calls it checks nothing.
    files = {"pick.py": UNPACKED, "tests/test_p.py": UNPACKED_TESTS}
    own = grade_test("tests/test_p.py", "test_one_even", files)
    assert own.status == "killed", own
    assert own.killed_by is not None and not own.crashed  # `return []`, `!=`: the wrong size
    inner = grade_test("tests/test_p.py", "test_first_even_runs", files)
    assert inner.status == "survived", inner
    assert any("!=" in m["after"] for m in inner.crashed)


def test_crash_only_reads_the_failure_summary():
    from referee.checks.execution.mutation import crash_only

    def result(stdout: str, status: str = "error") -> sandbox.SandboxResult:
        return sandbox.SandboxResult(status=status, message="1 failed", stdout=stdout)  # type: ignore[arg-type]

    assert crash_only(result("FAILED t.py::test_x - IndexError: list index out of range\n"))
    assert crash_only(result("FAILED t.py::test_x - TypeError: 'NoneType' is not iterable\n"))
    assert crash_only(result("", status="timeout"))
    assert not crash_only(result("FAILED t.py::test_x - assert 3 == 4\n"))
    assert not crash_only(result("FAILED t.py::test_x - AssertionError: wrong\n"))
    assert not crash_only(result("FAILED t.py::test_x - Failed: DID NOT RAISE <class 'E'>\n"))
    assert not crash_only(result("1 failed in 0.1s\n"))  # nothing to read: a kill, as before
    # a test id as wide as the terminal: the summary has no reason, the traceback does
    long_id = "FAILED tests/test_atomic.py::test_refuses_a_file_that_changed_since_it_was_read\n"
    raised = (
        ">       with pytest.raises(StaleFileError):\n"
        "E       Failed: DID NOT RAISE StaleFileError\n"
    )
    assert not crash_only(result(raised + long_id))
    assert crash_only(result("E       IndexError: list index out of range\n" + long_id))
    assert not crash_only(result("E       assert 3 == 4\n" + long_id))
    assert not crash_only(result(long_id))
    cut = "E       AssertionError: assert [] == ['a']\nFAILED t.py::test_every_fix - A...\n"
    assert not crash_only(result(cut))
    assert crash_only(result("E       KeyError: 'x'\nFAILED t.py::test_every_fix - K...\n"))


@needs_sandbox
def test_a_src_layout_is_graded_on_its_own_code_not_an_installed_package():
    """``src/click/`` here shadows the click installed beside referee: the test must import
    the project's (mutated) copy, or it would pass on every mutant."""
    files = {
        "src/click/__init__.py": EVEN,
        "tests/test_m.py": "from click import is_even\n\n\ndef test_good():\n"
        "    assert is_even(4)\n    assert not is_even(3)\n",
    }
    grade = grade_test("tests/test_m.py", "test_good", files)
    assert grade.status == "killed", grade
    assert grade.targets == ["src/click/__init__.py:is_even"]


SIGN = """def sign(n):
    if n > 0:
        return 1
    if n < 0:
        return -1
    return 0
"""


@needs_sandbox
def test_only_mutants_on_lines_the_test_runs_are_tried():
    from referee.checks.execution.mutants import mutants

    files = {
        "mathx.py": SIGN,
        "tests/test_m.py": "from mathx import sign\n\n\ndef test_runs():\n    sign(5)\n",
    }
    written = mutants(SIGN, "mathx.py", ["sign"])
    assert {m.line for m in written} >= {2, 3, 4, 5, 6}
    grade = grade_test("tests/test_m.py", "test_runs", files)
    assert grade.status == "survived", grade
    assert grade.survivors and {m["line"] for m in grade.survivors} <= {2, 3}, grade.survivors
    assert grade.tried == len([m for m in written if m.line in (2, 3)])
    # a test that reaches none of the function's lines grades nothing
    files["tests/test_m.py"] = (
        "from mathx import sign\n\n\ndef test_runs():\n    if False:\n        sign(1)\n"
    )
    grade = grade_test("tests/test_m.py", "test_runs", files)
    assert grade.status == "not-graded" and "runs no line of" in grade.reason, grade


VALID = """def _valid(x):
    if x >= 0:
        return True
    return _plumbing(x)


def _plumbing(x):
    y = x + 1
    return y > 5


def api(x):
    if not _valid(x):
        raise ValueError(x)
    return x * 2
"""


@needs_sandbox
def test_helpers_the_target_calls_are_mutated_too_on_the_lines_it_ran():
    test = (
        "from mathx import api\n\n\ndef test_runs():\n    try:\n        api(-1)\n"
        "    except ValueError:\n        pass\n"
    )
    grade = grade_test("tests/test_m.py", "test_runs", {"mathx.py": VALID, "tests/test_m.py": test})
    assert grade.status == "survived", grade
    assert grade.targets == ["mathx.py:api"]
    assert {m["function"] for m in grade.survivors} == {"api", "_valid"}, grade.survivors
    # the lines it ran, never `return True` or `x * 2`; not `_plumbing`, which api does not
    # call itself
    assert {m["line"] for m in grade.survivors} <= {2, 4, 13, 14}


def test_an_xfail_test_is_not_graded():
    test = (
        "import pytest\nfrom mathx import sign\n\n\n@pytest.mark.xfail(strict=True)\n"
        "def test_gap():\n    assert sign(5) == 2\n\n\nclass TestMore:\n"
        "    pytestmark = []\n\n    @pytest.mark.xfail\n    def test_other(self):\n"
        "        assert sign(1) == 3\n"
    )
    files = {"mathx.py": SIGN, "tests/test_m.py": test}
    for name in ("test_gap", "TestMore.test_other"):
        grade = grade_test("tests/test_m.py", name, files)
        assert grade.status == "not-graded" and "xfail" in grade.reason, grade


def test_traced_lines_are_read_with_suspicion():
    from referee.checks.execution.targets import traced_lines

    out = 'noise\n_REFEREE_TRACE_ {"a.py": [1, 2, true, "3"], "b.py": [4]}\nmore\n'
    assert traced_lines(out, ["a.py"]) == {"a.py": {1, 2}}
    assert traced_lines("_REFEREE_TRACE_ [1]\n", ["a.py"]) is None
    assert traced_lines("_REFEREE_TRACE_ {not json\n", ["a.py"]) is None
    assert traced_lines("1 passed\n", ["a.py"]) is None


@needs_sandbox
def test_a_package_dir_layout_is_graded_on_its_own_code():
    """``[tool.setuptools.package-dir]`` maps ``click.core`` to ``core/``, as referee maps
    ``referee.checks`` to ``checks/``: the test's import is followed to the file, and the
    sandbox lays the (mutated) files out as imported, ahead of the installed click."""
    files = {
        "pyproject.toml": '[tool.setuptools.package-dir]\nclick = "lib/_root"\n'
        '"click.core" = "core"\n',
        "lib/_root/__init__.py": "",
        "core/__init__.py": "",
        "core/parity.py": EVEN,
        "tests/test_m.py": "from click.core.parity import is_even\n\n\ndef test_good():\n"
        "    assert is_even(4)\n    assert not is_even(3)\n",
    }
    grade = grade_test("tests/test_m.py", "test_good", files)
    assert grade.status == "killed", grade
    assert grade.targets == ["core/parity.py:is_even"]


def test_package_dirs_and_the_view_as_imported():
    from referee.checks.execution.targets import package_dirs, packaged_view

    pyproject = (
        '[tool.setuptools.package-dir]\n"" = "./src/"\npkg = "lib/_root"\n"pkg.sub" = "lib"\n'
    )
    mapping = package_dirs({"pyproject.toml": pyproject})
    assert mapping == {"": "src", "pkg": "lib/_root", "pkg.sub": "lib"}
    files = {"lib/_root/__init__.py": "A", "lib/x.py": "B", "src/top.py": "C", "README": "D"}
    assert packaged_view(files, mapping) == {
        ".referee-packages/pkg/__init__.py": "A",
        ".referee-packages/pkg/sub/x.py": "B",
        ".referee-packages/top.py": "C",
    }
    assert package_dirs({"pyproject.toml": "not toml ["}) == {}
    assert package_dirs({}) == {}


@needs_sandbox
def test_a_failing_test_and_a_budget_that_runs_out_are_not_graded():
    failing = TESTS.replace("is not None", "is False")
    files = {"mathx.py": EVEN, "tests/test_m.py": failing}
    grade = grade_test("tests/test_m.py", "test_weak", files)
    assert grade.status == "not-graded"
    assert "does not pass in the sandbox as it is" in grade.reason
    import time

    files = {"mathx.py": EVEN, "tests/test_m.py": TESTS}
    grade = grade_test("tests/test_m.py", "test_weak", files, deadline=time.monotonic())
    assert grade.status == "not-graded" and "time budget" in grade.reason


# ------------------------------------------------------------------------------ the CLI


def _referee(args: list[str], cwd: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REFEREE_CACHE_DIR": str(cache), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "referee", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@needs_sandbox
def test_check_execution_reports_the_weak_test_in_json_and_sarif(tmp_path):
    project = tmp_path / "p"
    (project / "tests").mkdir(parents=True)
    (project / "referee.toml").write_text("[execution]\ndifferential = false\n")
    (project / "mathx.py").write_text(EVEN)
    (project / "tests" / "test_m.py").write_text(TESTS)
    done = _referee(["check", "--execution", "--output-format", "json", "."], project, tmp_path)
    assert done.returncode == 0, done.stderr  # a warning does not fail the run
    report = json.loads(done.stdout)
    found = [(f["code"], f["path"], f["span"]["start"]["line"]) for f in report["findings"]]
    assert found == [("REF410", "tests/test_m.py", 5)]
    finding = report["findings"][0]
    assert "test_weak kills none of" in finding["message"]
    assert "`return n % 2 == 0` becomes `return n % 2 != 0`" in finding["message"]
    assert "comparison: mathx.py:3" in finding["evidence"]
    sarif = _referee(["check", "--execution", "--output-format", "sarif", "."], project, tmp_path)
    result = json.loads(sarif.stdout)["runs"][0]["results"][0]
    assert result["ruleId"] == "REF410"
    assert "return n % 2 != 0" in result["properties"]["evidence"]
    # switched off in the configuration: nothing
    (project / "referee.toml").write_text("[execution]\nmutation = false\ndifferential = false\n")
    done = _referee(["check", "--execution", "--output-format", "json", "."], project, tmp_path)
    assert json.loads(done.stdout)["findings"] == []


# ------------------------------------------------------------------------------ differential

CLAMP_WRONG = '''def clamp(x: int, lo: int, hi: int) -> int:
    """x limited to the range [lo, hi]."""
    return max(lo, x)
'''
CLAMP_RIGHT = CLAMP_WRONG.replace("max(lo, x)", "max(lo, min(x, hi))")
ORACLE = """```python
def clamp(x, lo, hi):
    return max(lo, min(x, hi))
```"""


def _spec(text: str, name: str = "clamp"):
    return function_spec(text, "mathx.py", "mathx", name)


def test_inputs_come_from_the_docstring_and_the_tests_own_calls():
    text = '''def clamp(x: int, lo: int, hi: int) -> int:
    """x limited to [lo, hi].

    >>> clamp(5, 0, 10)
    5
    clamp(-1, 0, 10) == 0
    """
    return x
'''
    doc = docstring_inputs(_spec(text))
    assert [(i.arguments, i.expected) for i in doc] == [("5, 0, 10", "5"), ("-1, 0, 10", "0")]
    tests = {
        "tests/test_a.py": "from mathx import clamp\n\ndef test():\n"
        "    assert clamp(15, 0, 10) == 10\n    assert clamp(x, 0, 1)\n",
        "tests/test_b.py": "import mathx\n\ndef test():\n    mathx.clamp(2, hi=3, lo=1)\n",
        "tests/test_c.py": "from other import clamp\n\ndef test():\n    clamp(99, 0, 1)\n",
    }
    observed = [i.arguments for i in observed_inputs("clamp", "mathx", tests)]
    assert observed == ["15, 0, 10", "2, hi=3, lo=1"]
    generated, note = generated_inputs(_spec(text), 10, 5.0)
    assert note == "" and len(generated) == 10
    assert all(len(eval(f"({g.arguments},)")) == 3 for g in generated)
    again, _ = generated_inputs(_spec(text), 10, 5.0)
    assert [g.arguments for g in again] == [g.arguments for g in generated]  # derandomized
    untyped, note = generated_inputs(_spec("def clamp(x, lo, hi):\n    return x\n"), 10, 5.0)
    assert untyped == [] and "annotation" in note


def test_generated_inputs_are_shaped_like_the_known_ones():
    # HumanEval/56's spec: "brackets is a string of '<' and '>'", shown only with those; a
    # generated "a1" is outside it, where the function and the oracles part ways.
    text = '''def correct_bracketing(brackets: str, depth: int, weights: list[float]) -> bool:
    """Whether every "<" has a matching ">".

    >>> correct_bracketing("<>", 0, [0.5])
    True
    >>> correct_bracketing("<<><>>", 2, [1.0, 2.0])
    True
    """
'''
    spec = _spec(text, "correct_bracketing")
    known = docstring_inputs(spec)
    generated, note = generated_inputs(spec, 20, 5.0, known)
    assert note == "" and len(generated) == 20
    values = [eval(f"({g.arguments},)") for g in generated]
    assert all(set(b) <= {"<", ">"} for b, _, _ in values)
    assert all(d >= 0 for _, d, _ in values) and any(d == 0 for _, d, _ in values)
    assert all(w >= 0 for _, _, ws in values for w in ws)
    # without known inputs: the annotation's whole range
    wide = [eval(f"({g.arguments},)") for g in generated_inputs(spec, 20, 5.0)[0]]
    assert any(set(b) - {"<", ">"} for b, _, _ in wide) and any(d < 0 for _, d, _ in wide)


def test_a_string_shape_keeps_character_classes_not_just_characters():
    from referee.checks.execution.inputs import Shape

    shape = Shape()
    shape.add("Hello, World")
    assert shape.characters is not None
    assert set("azAZ ,") <= shape.characters and not set("09!") & shape.characters


class _Oracles:
    """A fake model server whose oracle programs depend on the request's seed."""

    def __init__(self, programs: dict[int, str]):
        from red_team.fake_openai import FakeModel

        def answer_for(body: dict) -> str:
            return programs[int(body.get("seed") or 1)]

        self.model = FakeModel(lambda kind: "", answer_for=answer_for)

    def __enter__(self):
        self.model.__enter__()
        from referee.checks.arbitration.truth import LazyModel

        return self.model, LazyModel("openai", "fake", self.model.url, None, timeout=30)

    def __exit__(self, *exc):
        self.model.__exit__(*exc)


def _strip(answer: str) -> str:
    return answer.removeprefix("```python\n").removesuffix("\n```")


@needs_sandbox
def test_a_function_every_oracle_contradicts_is_rejected_with_a_counterexample(tmp_path):
    files = {"mathx.py": CLAMP_WRONG}
    tests = {"tests/test_m.py": "from mathx import clamp\n\ndef test():\n    clamp(15, 0, 10)\n"}
    config = ExecutionConfig(generated_inputs=0)
    with _Oracles(dict.fromkeys((1, 2, 3), _strip(ORACLE))) as (server, model):
        result = check_function(
            _spec(CLAMP_WRONG), "mathx.py", files, tests, config, ArbitrationConfig(), model=model
        )
        # then one request for inputs from the docstring (the fake calls it a patch); its
        # answer, an oracle program, is no list of arguments: no input is proposed
        assert server.kinds() == ["oracle"] * 3 + ["patch"]
    assert result.status == "REJECT", result
    assert result.call == "clamp(15, 0, 10)"
    assert result.reason == (
        "clamp(15, 0, 10) returned 15; 3 independent implementations of the docstring "
        "return 10 (an input the tests use)"
    )
    assert result.answers == [["oracle-1", "10"], ["oracle-2", "10"], ["oracle-3", "10"]]


@needs_sandbox
def test_the_right_function_passes_and_generated_counterexamples_are_shrunk(tmp_path):
    config = ExecutionConfig(generated_inputs=15)
    with _Oracles(dict.fromkeys((1, 2, 3), _strip(ORACLE))) as (_, model):
        right = check_function(
            _spec(CLAMP_RIGHT),
            "mathx.py",
            {"mathx.py": CLAMP_RIGHT},
            {},
            config,
            ArbitrationConfig(),
            model=model,
        )
        wrong = check_function(
            _spec(CLAMP_WRONG),
            "mathx.py",
            {"mathx.py": CLAMP_WRONG},
            {},
            config,
            ArbitrationConfig(),
            model=model,
        )
    assert right.status == "PASS", right
    assert right.inputs["generated"] == 15
    assert right.reason.startswith("agrees with 3 oracles on 15 inputs")
    assert wrong.status == "REJECT", wrong
    assert "(a generated input)" in wrong.reason
    # shrunk: the function returns x where x > hi; the smallest such input is tiny
    args = eval(f"({wrong.call.removeprefix('clamp(')[:-1]},)")
    assert args[0] > args[2] and all(abs(a) <= 2 for a in args), wrong.call


@needs_sandbox
def test_oracles_that_disagree_make_it_unclear_with_the_competing_answers(tmp_path):
    other = "def clamp(x, lo, hi):\n    return max(lo, x)\n"  # a different reading
    programs = {1: _strip(ORACLE), 2: other, 3: _strip(ORACLE)}
    tests = {"tests/test_m.py": "from mathx import clamp\n\ndef test():\n    clamp(15, 0, 10)\n"}
    with _Oracles(programs) as (_, model):
        result = check_function(
            _spec(CLAMP_RIGHT),
            "mathx.py",
            {"mathx.py": CLAMP_RIGHT},
            tests,
            ExecutionConfig(generated_inputs=0),
            ArbitrationConfig(),
            model=model,
        )
    assert result.status == "UNCLEAR", result
    assert result.answers == [["oracle-1", "10"], ["oracle-2", "15"], ["oracle-3", "10"]]
    assert "the oracles disagree" in result.reason


@needs_sandbox
def test_oracles_that_contradict_the_docstrings_example_are_no_source_of_truth():
    """Three oracles share a misreading ("remove duplicates" as "keep one of each"), which
    the docstring's own example contradicts: they are set aside, and cannot outvote the
    example to reject a right function on a generated input."""
    text = '''def remove_duplicates(numbers: list[int]) -> list[int]:
    """Remove all elements that occur more than once; keep the order of the rest.

    >>> remove_duplicates([1, 2, 3, 2, 4])
    [1, 3, 4]
    """
    return [n for n in numbers if numbers.count(n) == 1]
'''
    misread = (
        "def remove_duplicates(numbers):\n"
        "    seen = []\n"
        "    for n in numbers:\n"
        "        if n not in seen:\n"
        "            seen.append(n)\n"
        "    return seen\n"
    )
    tests = {
        "tests/test_d.py": "from d import remove_duplicates\n\ndef test():\n"
        "    remove_duplicates([0, 0])\n"
    }
    with _Oracles(dict.fromkeys((1, 2, 3), misread)) as (_, model):
        result = check_function(
            function_spec(text, "d.py", "d", "remove_duplicates"),
            "d.py",
            {"d.py": text},
            tests,
            ExecutionConfig(generated_inputs=10),
            ArbitrationConfig(),
            model=model,
        )
    assert result.status != "REJECT", result
    assert [s["source"] for s in result.sources] == ["oracle-1", "oracle-2", "oracle-3"]
    assert all(
        s["detail"].startswith("set aside: it returned [1, 2, 3, 4]") for s in result.sources
    )
    # a pass with every oracle set aside rests on the docstring's example alone, and says so
    assert result.status == "PASS", result
    assert result.reason.startswith("agrees with the docstring's examples on 1 "), result.reason


MEDIAN = '''def median(values: list[int]) -> float:
    """The median of VALUES.

    >>> median([3, 1, 2])
    2
    >>> median([-10, 4, 6, 1000, 10, 20])
    15.0
    """
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
'''
MEDIAN_ORACLE = """def median(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
"""


@needs_sandbox
def test_an_example_the_function_and_every_oracle_contradict_is_in_doubt_not_a_rejection():
    """HumanEval's median docstring says 15.0 where the median is 8.0: the function and
    every independent implementation agree, one line of the docstring does not. That
    goes to a person; it is no counterexample."""
    tests = {"tests/test_m.py": "from m import median\n\ndef test():\n    median([5, 1])\n"}

    def check(programs: dict[int, str]):
        with _Oracles(programs) as (_, model):
            return check_function(
                function_spec(MEDIAN, "m.py", "m", "median"),
                "m.py",
                {"m.py": MEDIAN},
                tests,
                ExecutionConfig(generated_inputs=0),
                ArbitrationConfig(),
                model=model,
            )

    result = check(dict.fromkeys((1, 2, 3), MEDIAN_ORACLE))
    assert result.status == "UNCLEAR", result
    # with the docstring's examples alone as inputs, the oracles are written for it too
    with _Oracles(dict.fromkeys((1, 2, 3), MEDIAN_ORACLE)) as (server, model):
        alone = check_function(
            function_spec(MEDIAN, "m.py", "m", "median"),
            "m.py",
            {"m.py": MEDIAN},
            {},
            ExecutionConfig(generated_inputs=0),
            ArbitrationConfig(),
            model=model,
        )
        assert server.kinds() == ["oracle"] * 3
    assert alone.status == "UNCLEAR" and "may be wrong" in alone.reason, alone
    right = MEDIAN.replace("    15.0\n", "    8.0\n")
    with _Oracles(dict.fromkeys((1, 2, 3), MEDIAN_ORACLE)) as (server, model):
        agreed = check_function(
            function_spec(right, "m.py", "m", "median"),
            "m.py",
            {"m.py": right},
            {},
            ExecutionConfig(generated_inputs=0),
            ArbitrationConfig(),
            model=model,
        )
        assert server.kinds() == []  # every example agrees: no oracle is written
    assert agreed.status == "PASS", agreed
    assert result.call == "median([-10, 4, 6, 1000, 10, 20])"
    assert result.reason == (
        "median([-10, 4, 6, 1000, 10, 20]): the docstring's example says 15.0, but the "
        "function and 3 independent implementations of the docstring all returned 8.0: "
        "the example itself may be wrong"
    )
    assert result.answers[0] == ["docstring", "15.0"]
    # one oracle that reads it otherwise, and the example is a counterexample again
    other = MEDIAN_ORACLE.replace("(s[n // 2 - 1] + s[n // 2]) / 2", "s[n // 2]")
    result = check({1: MEDIAN_ORACLE, 2: other, 3: MEDIAN_ORACLE})
    assert result.status == "REJECT", result
    assert result.reason.startswith(
        "median([-10, 4, 6, 1000, 10, 20]) returned 8.0; the docstring says 15.0"
    )


@needs_sandbox
def test_the_docstrings_own_example_rejects_without_a_model():
    text = '''def double(n: int) -> int:
    """Twice n.

    >>> double(3)
    6
    """
    return n + 2
'''
    result = check_function(
        function_spec(text, "m.py", "m", "double"),
        "m.py",
        {"m.py": text},
        {},
        ExecutionConfig(generated_inputs=0),
        ArbitrationConfig(),
        model=None,
    )
    assert result.status == "REJECT"
    assert result.reason.startswith("double(3) returned 5; the docstring says 6")


@needs_sandbox
def test_check_execution_with_the_fake_server_end_to_end(tmp_path):
    from red_team.fake_openai import FakeModel

    project = tmp_path / "p"
    (project / "tests").mkdir(parents=True)
    (project / "mathx.py").write_text(CLAMP_WRONG)
    (project / "tests" / "test_m.py").write_text(
        "from mathx import clamp\n\n\ndef test_clamp():\n    assert clamp(5, 0, 10) == 5\n"
    )
    with FakeModel(lambda kind: _strip(ORACLE)) as server:
        (project / "referee.toml").write_text(
            f'[arbitration]\nbackend = "openai"\nurl = "{server.url}"\nmodel = "fake"\n'
            "[execution]\ngenerated-inputs = 10\n"
        )
        done = _referee(["check", "--execution", "--output-format", "json", "."], project, tmp_path)
    report = json.loads(done.stdout)
    codes = sorted((f["code"], f["path"]) for f in report["findings"])
    assert ("REF411", "mathx.py") in codes, (done.stderr, done.stdout)
    reject = next(f for f in report["findings"] if f["code"] == "REF411")
    assert "3 independent implementations of the docstring return" in reject["message"]
    assert "oracle-1:" in reject["evidence"]
    assert done.returncode == 1


# ------------------------------------------------------------------ out-of-domain inputs


def test_preconditions_are_read_from_the_docstrings_prose_only():
    def read(text: str, name: str) -> list[str]:
        return [c.text for c in preconditions(function_spec(text, "m.py", "m", name))]

    assert read(CLAMP_WRONG, "clamp") == ["lo <= hi"]  # "the range [lo, hi]"
    fib = '''def fib(n: int) -> int:
    """The n-th Fibonacci number, for a non-negative integer n.

    >>> n = -1; n < 0
    True
    """
'''
    assert read(fib, "fib") == ["n >= 0"]
    item = '''def item(xs: list[int], i: int) -> int:
    """Item i of xs, 0 <= i < len(xs); xs is a non-empty list. Returns positive values."""
'''
    assert read(item, "item") == ["0 <= i < len(xs)", "len(xs) > 0"]
    # a case the spec covers is no condition; a word that is no parameter neither
    cases = '''def pick(a: int, b: int) -> int:
    """Return a if a > b, else the sum, when b < 0 the difference; total >= 0."""
'''
    assert read(cases, "pick") == []
    (condition,) = preconditions(function_spec(item, "m.py", "m", "item"))[:1]
    assert condition.holds({"xs": [1, 2], "i": 1}) is True
    assert condition.holds({"xs": [1, 2], "i": 2}) is False
    assert condition.holds({"xs": None, "i": 2}) is None  # cannot say: kept


def test_calls_a_test_expects_to_raise_are_not_inputs():
    tests = {
        "tests/test_a.py": "import pytest\nfrom mathx import clamp\n\ndef test():\n"
        "    assert clamp(1, 0, 10) == 1\n"
        "    with pytest.raises(ValueError):\n        clamp(5, 10, 0)\n"
        "    pytest.raises(ValueError, clamp, 7, 10, 0)\n"
        "    pytest.raises(ValueError, lambda: clamp(8, 10, 0))\n",
    }
    assert [i.arguments for i in observed_inputs("clamp", "mathx", tests)] == ["1, 0, 10"]


# A right clamp, written another way than the oracles: on `lo > hi` (outside the range
# the docstring speaks of) the two readings part, and neither is wrong.
CLAMP_OTHER = CLAMP_WRONG.replace("max(lo, x)", "min(max(x, lo), hi)")


@needs_sandbox
def test_generated_inputs_outside_the_docstrings_conditions_reject_nothing():
    config = ExecutionConfig(generated_inputs=15)
    with _Oracles(dict.fromkeys((1, 2, 3), _strip(ORACLE))) as (_, model):
        right = check_function(
            _spec(CLAMP_OTHER),
            "mathx.py",
            {"mathx.py": CLAMP_OTHER},
            {},
            config,
            ArbitrationConfig(),
            model=model,
        )
        wrong = check_function(
            _spec(CLAMP_WRONG),
            "mathx.py",
            {"mathx.py": CLAMP_WRONG},
            {},
            config,
            ArbitrationConfig(),
            model=model,
        )
    assert right.status == "PASS", right
    assert right.inputs["generated"] == 15
    assert any("left out: the docstring asks for lo <= hi" in n for n in right.notes), right.notes
    # the wrong one is still caught, on an input inside the range, shrunk inside it too
    assert wrong.status == "REJECT", wrong
    x, lo, hi = eval(f"({wrong.call.removeprefix('clamp(')[:-1]},)")
    assert lo <= hi < x, wrong.call


ROOT = '''import math


def root(n: int) -> int:
    """The integer square root of n."""
    assert n >= 0
    return math.isqrt(n)
'''
ROOT_ORACLE = "def root(n):\n    return int(abs(n) ** 0.5)\n"


@needs_sandbox
def test_a_function_that_raises_on_a_generated_input_is_not_rejected_there():
    """``root`` guards its domain with an assert the docstring does not state; the oracles
    answer for negative n too. A generated negative n is no counterexample — a test's or
    the docstring's own input still is."""
    with _Oracles(dict.fromkeys((1, 2, 3), ROOT_ORACLE)) as (_, model):
        generated = check_function(
            function_spec(ROOT, "m.py", "m", "root"),
            "m.py",
            {"m.py": ROOT},
            {},
            ExecutionConfig(generated_inputs=20),
            ArbitrationConfig(),
            model=model,
        )
        observed = check_function(
            function_spec(ROOT, "m.py", "m", "root"),
            "m.py",
            {"m.py": ROOT},
            {"tests/test_m.py": "from m import root\n\ndef test():\n    root(-4)\n"},
            ExecutionConfig(generated_inputs=0),
            ArbitrationConfig(),
            model=model,
        )
    assert generated.status == "PASS", generated
    assert generated.inputs["generated"] == 20  # negatives among them: -20..50
    assert observed.status == "REJECT", observed
    assert observed.reason.startswith("root(-4) raised AssertionError")


@needs_sandbox
def test_nothing_compared_is_no_pass():
    """Oracles that all raise (here: a helper the docstring's reader assumed) give no value
    to hold the function to; that is not agreement."""
    broken = "def clamp(x, lo, hi):\n    return limit(x, lo, hi)\n"
    with _Oracles(dict.fromkeys((1, 2, 3), broken)) as (_, model):
        result = check_function(
            _spec(CLAMP_WRONG),
            "mathx.py",
            {"mathx.py": CLAMP_WRONG},
            {},
            ExecutionConfig(generated_inputs=10),
            ArbitrationConfig(),
            model=model,
        )
    assert result.status == "SKIPPED", result
    assert result.reason.startswith("no input of 10 was compared")


# ------------------------------------------------------------------ the real model

ADD_WRONG = '''def add(a: int, b: int) -> int:
    """Return the sum of a and b."""
    return a - b
'''


@pytest.mark.model
@needs_sandbox
def test_a_counterexample_from_oracles_the_real_model_wrote(tmp_path, small_model: Path):
    """The real 0.5B writes the three oracles from the signature and docstring (never the
    body), referee runs them and the function on the input the project's test passes, and
    the function is rejected with that input — re-run by the parent before it is shown."""
    project = tmp_path / "p"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(ADD_WRONG)
    (project / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) is not None\n"
    )
    (project / "referee.toml").write_text(
        f'[arbitration]\nmodel = "{small_model}"\n[execution]\ngenerated-inputs = 0\n'
        "mutation = false\n"
    )
    done = _referee(["check", "--execution", "--output-format", "json", "."], project, tmp_path)
    report = json.loads(done.stdout)
    found = [f for f in report["findings"] if f["code"] == "REF411"]
    assert len(found) == 1, (done.stderr, report["findings"])
    (reject,) = found
    assert reject["path"] == "calc.py"
    assert reject["message"] == (
        "add: add(2, 3) returned -1; 3 independent implementations of the docstring "
        "return 5 (an input the tests use)"
    )
    # each oracle's answer is evidence, and none of them is the body
    assert "oracle-1: 5" in reject["evidence"] and "a - b" not in reject["evidence"]
    assert done.returncode == 1
