"""Arbitration on the source side of a red test: a source fix changes only the function's
body (and the helpers and imports it needs) and goes through the project's own formatter;
calls wrapped in ``list()``/``sorted()``/... are arbitrated through the wrapper; a source
that hangs is a red test too; and an arbitration out of time says what it has.

The engine tests script the model (tests/test_arbitration.py's helpers); the command-line
tests run ``referee arbitrate`` in a fresh interpreter against a fake OpenAI-compatible
server (tests/red_team/fake_openai.py). The sandbox, pytest and the verdict are the real
thing. Oracles that fail to run, and their replacement, are tests/test_arbitration_oracles.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jsonschema
import pytest
from red_team.fake_openai import FakeModel
from test_arbitration import (
    BUGGY,
    CORRECT,
    GOOD_PATCH,
    LONE_ORACLE,
    ORACLE,
    TESTS,
    project,
    run,
    scripted,
)
from test_arbitration_oracles import EXAMPLED, NODE, arbitrate_json, body, cli_project

from referee.checks.judge.backend import ScriptedBackend
from referee.checks.models import arbitration_schema

# ------------------------------------------------------- 2. a fix changes only the body

ROTATE = '''"""Queue helpers."""

import math


def rotate(items: list, k: int) -> list:
    """Return ITEMS rotated right by K places (K may exceed the length).

    The last K items come first, in their order.
    """
    return items[-k:] + items[:-k]


def pages(n: int, size: int) -> int:
    """How many pages of SIZE hold N items."""
    return math.ceil(n / size)
'''
ROTATE_TESTS = """from text import rotate


def test_vowels():
    assert rotate([1, 2, 3], 4) == [3, 1, 2]


def test_one():
    assert rotate([1, 2, 3], 1) == [3, 1, 2]


def test_empty():
    assert rotate([], 2) == []
"""
ROTATE_ORACLE = '''from collections import *
from typing import *


def rotate(items: List[Any], k: int) -> List[Any]:
    """Rotate a list."""
    d = deque(items)
    d.rotate(k)
    return list(d)
'''


def test_cli_fix_keeps_signature_and_docstring_and_imports_deque_by_name(tmp_path: Path, referee):
    with FakeModel(lambda kind: ROTATE_ORACLE) as model:
        root = cli_project(tmp_path / "p", ROTATE, ROTATE_TESTS, model.url)
        verdict = arbitrate_json(referee, root, "--apply")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["applied"] is True
    fixed = (root / "text.py").read_text(encoding="utf-8")
    assert fixed == ROTATE.replace(
        "import math\n", "import math\nfrom collections import deque\n"
    ).replace(
        "    return items[-k:] + items[:-k]\n",
        "    d = deque(items)\n    d.rotate(k)\n    return list(d)\n",
    )
    assert "import *" not in fixed and "List[" not in fixed and "Rotate a list" not in fixed


MERGESORT = '''def mergesort(items: list) -> list:
    """Return a new list of ITEMS in ascending order (a stable merge sort)."""
    if len(items) <= 1:
        return list(items)
    middle = len(items) // 2
    return mergesort(items[:middle]) + mergesort(items[middle:])
'''
MERGESORT_TESTS = """from text import mergesort


def test_vowels():
    assert mergesort([3, 1, 2]) == [1, 2, 3]


def test_empty():
    assert mergesort([]) == []


def test_two():
    assert mergesort([2, 1]) == [1, 2]
"""
WITH_HELPER = """```python
def merge(left, right):
    out = []
    while left and right:
        out.append(left.pop(0) if left[0] <= right[0] else right.pop(0))
    return out + left + right


def mergesort(items):
    if len(items) <= 1:
        return list(items)
    middle = len(items) // 2
    return merge(mergesort(items[:middle]), mergesort(items[middle:]))


print(mergesort([3, 1, 2]))
```"""


def test_a_helper_of_the_oracles_program_comes_with_its_function(tmp_path: Path):
    root = project(tmp_path / "p", MERGESORT, MERGESORT_TESTS)
    result = run(root, NODE, scripted([WITH_HELPER]))
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert [(p.origin, p.status) for p in verdict.patches] == [("oracle-1", "passed")]
    assert result.new_text is not None
    head, _, helper = result.new_text.partition("\n\n\ndef merge(left, right):\n")
    assert head.startswith(MERGESORT.split("    if len")[0])  # signature and docstring kept
    assert "merge(mergesort(items[:middle])" in head
    assert helper.startswith("    out = []") and "print(" not in result.new_text


def test_a_helper_that_would_shadow_a_module_name_is_refused(tmp_path: Path):
    module = MERGESORT + '\n\ndef merge(a, b):\n    """Something else."""\n    return a\n'
    root = project(tmp_path / "p", module, MERGESORT_TESTS, "[arbitration]\ncandidates = 1\n")
    verdict = run(root, NODE, scripted([WITH_HELPER], [WITH_HELPER])).verdict
    assert verdict.verdict == "SOURCE_WRONG" and verdict.fix is None
    first = verdict.patches[0]
    assert (first.origin, first.status) == ("oracle-1", "invalid")
    assert "helper `merge` would shadow the module's `merge`" in first.message


def test_splice_places_imports_like_the_module_and_drops_unused_ones():
    from referee.checks.arbitration.splice import Refused, splice

    module = (
        '"""Doc."""\n\nfrom __future__ import annotations\n\nimport re\nfrom heapq import '
        "heappop\n\nimport requests\n\n\n@cache\ndef f(x, n=1):  # keep me\n    return x\n"
    )
    code = (
        "import os\nimport bisect\nfrom heapq import heappush, nlargest\nfrom itertools import *\n"
        "def f(values, n=3):\n    heappush(values, n)\n    return list(chain(values, [bisect]))\n"
    )
    assert splice(module, "f", code) == (
        '"""Doc."""\n\nfrom __future__ import annotations\n\nimport bisect\nimport re\n'
        "from heapq import heappop, heappush\nfrom itertools import chain\n\nimport requests\n\n\n"
        "@cache\ndef f(x, n=1):  # keep me\n"
        "    heappush(x, n)\n    return list(chain(x, [bisect]))\n"
    )
    # a module without imports gets a block of its own, after its docstring
    assert splice(
        '"""Doc."""\ndef f(x):\n    return x\n',
        "f",
        "import re\ndef f(x):\n    return re.escape(x)\n",
    ) == ('"""Doc."""\n\nimport re\n\n\ndef f(x):\n    return re.escape(x)\n')
    for code, why in [
        ("def f(x, y):\n    return y\n", "changes the function's parameters"),
        ("from json import dumps as f2\ndef f(x):\n    return re(x)\nre = 1\n", "shadow"),
        ("def g(x):\n    return x\n", "does not define `f`"),
    ]:
        with pytest.raises(Refused, match=why):
            splice("import re\n\n\ndef f(x):\n    return x\n", "f", code)


def test_a_helper_is_scanned_for_capabilities_like_the_function(tmp_path: Path):
    hostile = (
        "```python\nimport subprocess\n\ndef run(t):\n    subprocess.run(['id'])\n    return t\n\n"
        "def count_vowels(text):\n    return sum(ch in 'aeiouAEIOU' for ch in run(text))\n```"
    )
    root = project(
        tmp_path / "p", BUGGY, TESTS.format(expected="5"), "[arbitration]\ncandidates = 1\n"
    )
    verdict = run(root, NODE, scripted([LONE_ORACLE], [hostile])).verdict
    model_patch = verdict.patches[-1]
    assert model_patch.origin == "model" and model_patch.status == "refused"
    assert any("subprocess" in c for c in model_patch.capabilities)


# ------------------------------------------------- 3. calls wrapped in list(), sorted()...

FLATTEN = '''def flatten(items):
    """Yield the items of ITEMS in order, the items of nested lists in their place, at any
    depth."""
    for item in items:
        if isinstance(item, list):
            yield from item
        else:
            yield item
'''
FLATTEN_TESTS = """from text import flatten


def test_vowels():
    assert list(flatten([[1, [2]], 3])) == [1, 2, 3]


def test_flat():
    assert list(flatten([1, 2])) == [1, 2]


def test_sorted():
    assert sorted(flatten([[3], 1])) == [1, 3]
"""
FLATTEN_ORACLE = """```python
def flatten(items):
    for item in items:
        if isinstance(item, list):
            yield from flatten(item)
        else:
            yield item
```"""


def test_a_call_wrapped_in_list_is_isolated_through_the_wrapper():
    from test_arbitration import iso

    text = "def test_x():\n    assert list(flatten([[1], 2])) == [1, 2]\n"
    isolated = iso(text, 2)
    assert (isolated.wrapper, isolated.callee, isolated.arguments) == (
        "list",
        "flatten",
        "[[1], 2]",
    )
    assert isolated.call == "list(flatten([[1], 2]))" and isolated.expected.text == "[1, 2]"
    for wrapper in ("tuple", "set", "sorted", "dict", "str", "len", "next"):
        assert iso(text.replace("list(", f"{wrapper}("), 2).wrapper == wrapper
    plain = iso("def test_x():\n    assert f(1) == 2\n", 2)
    assert plain.wrapper is None and plain.call == "f(1)"
    assert iso("def test_x():\n    assert len(f(1)) == 2\n", 2).callee == "f"


def test_a_generator_tested_through_list_is_arbitrated_and_fixed(tmp_path: Path):
    root = project(tmp_path / "p", FLATTEN, FLATTEN_TESTS)
    result = run(root, NODE, scripted([FLATTEN_ORACLE]))
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.call == "list(flatten([[1, [2]], 3]))"
    assert (verdict.produced, verdict.asserted, verdict.truth) == (
        "[1, [2], 3]",
        "[1, 2, 3]",
        "[1, 2, 3]",
    )
    assert [o.value for o in verdict.oracles] == ["[1, 2, 3]"] * 3
    assert verdict.fix is not None and verdict.fix.calls_total == 3
    assert result.new_text is not None and "yield from flatten(item)" in result.new_text


def test_a_wrapped_call_with_a_wrong_expected_value_is_test_wrong(tmp_path: Path):
    tests = FLATTEN_TESTS.replace("== [1, 3]", "== [3, 1]").replace("test_vowels", "test_x")
    tests = tests.replace("def test_sorted", "def test_vowels")
    root = project(tmp_path / "p", FLATTEN, tests)
    result = run(root, NODE, scripted([FLATTEN_ORACLE]))
    assert result.verdict.verdict == "TEST_WRONG", result.verdict.reason
    assert result.verdict.call == "sorted(flatten([[3], 1]))"
    assert result.new_text == tests.replace("== [3, 1]", "== [1, 3]")


def test_a_docstring_example_of_the_bare_call_is_wrapped_here():
    from referee.checks.arbitration.examples import doctest_evidence
    from referee.checks.arbitration.isolate import function_spec

    module = (
        'def f(n):\n    """Digits.\n\n    >>> f(31)\n    [3, 1]\n'
        '    >>> len(f(5))\n    1\n    """\n'
    )
    spec = function_spec(module, "m.py", "m", "f")
    assert doctest_evidence(spec, "31", "sorted").value == "[1, 3]"
    assert doctest_evidence(spec, "31", None).value == "[3, 1]"
    assert doctest_evidence(spec, "5", "len").value == "1"
    assert doctest_evidence(spec, "31", "next") is None  # next() of a list: not said here


# ------------------------------------------------------------- 4. a test that hangs

HANGS = '''def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains."""
    count = index = 0
    while index < len(text):
        if text[index].lower() in "aeiou":
            count += 1
            continue
        index += 1
    return count
'''


def test_a_hanging_source_is_observed_and_blamed_when_the_truth_is_the_asserted_value(
    tmp_path: Path,
):
    root = project(
        tmp_path / "p", HANGS, TESTS.format(expected="5"), "[arbitration]\ntest-timeout = 4\n"
    )
    result = run(root, NODE, scripted([ORACLE]))
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.observation is not None and verdict.observation.timeout_s == 4
    assert verdict.produced == "did not return within 4 s"
    assert (verdict.asserted, verdict.truth) == ("5", "5")
    assert "the call did not return within 4 s" in verdict.reason
    # the fix must return in time: the oracle's program does
    assert verdict.fix is not None and verdict.fix.calls_total == 3


def test_a_hanging_source_whose_truth_is_another_value_is_unclear(tmp_path: Path):
    root = project(
        tmp_path / "p", HANGS, TESTS.format(expected="4"), "[arbitration]\ntest-timeout = 4\n"
    )
    verdict = run(root, NODE, scripted([ORACLE])).verdict
    assert verdict.verdict == "UNCLEAR" and verdict.fix is None
    assert "equals neither" in verdict.reason and "did not return within 4 s" in verdict.reason


def test_cli_a_hanging_source_gives_source_wrong_in_json(tmp_path: Path, referee):
    with FakeModel(lambda kind: body(ORACLE)) as model:
        root = cli_project(
            tmp_path / "p", HANGS, TESTS.format(expected="5"), model.url, test_timeout=4
        )
        verdict = arbitrate_json(referee, root, "--apply")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["produced"] == "did not return within 4 s"
    assert verdict["observation"]["timeout_s"] == 4
    assert verdict["applied"] is True
    assert "while index" not in (root / "text.py").read_text(encoding="utf-8")


def test_cli_json_is_printed_on_every_exit_path(tmp_path: Path, referee):
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    for args in (
        ["tests/test_text.py::test_empty"],  # passes: nothing to arbitrate
        ["tests/test_text.py::test_absent"],
        ["tests/test_gone.py::test_x"],
        ["not-a-node-id"],
    ):
        done = referee("arbitrate", *args, "--format", "json", cwd=root)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        failure = json.loads(done.stdout)
        jsonschema.validate(failure, arbitration_schema())
        assert failure["verdict"] is None and failure["error"] and failure["exit_status"] == 2
        assert failure["error"] in done.stderr


# ------------------------------------------- the same through the command line, --apply


def test_cli_a_helper_comes_with_its_function(tmp_path: Path, referee):
    with FakeModel(lambda kind: body(WITH_HELPER)) as model:
        root = cli_project(tmp_path / "p", MERGESORT, MERGESORT_TESTS, model.url)
        verdict = arbitrate_json(referee, root, "--apply")
    assert verdict["verdict"] == "SOURCE_WRONG" and verdict["applied"], verdict["reason"]
    fixed = (root / "text.py").read_text(encoding="utf-8")
    assert "\n\n\ndef merge(left, right):\n" in fixed and "print(" not in fixed
    assert fixed.startswith(MERGESORT.split("    if len")[0])


def test_cli_list_of_a_generator_is_arbitrated(tmp_path: Path, referee):
    with FakeModel(lambda kind: body(FLATTEN_ORACLE)) as model:
        root = cli_project(tmp_path / "p", FLATTEN, FLATTEN_TESTS, model.url)
        verdict = arbitrate_json(referee, root, "--apply")
    assert verdict["verdict"] == "SOURCE_WRONG" and verdict["applied"], verdict["reason"]
    assert verdict["call"] == "list(flatten([[1, [2]], 3]))"
    assert "yield from flatten(item)" in (root / "text.py").read_text(encoding="utf-8")


# ------------------------------------------------------------ the project's own style

STYLED = '''"""Text helpers."""

import re


def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains."""
    return sum(1 for ch in text[1:].lower() if ch in "aeiou")


def words(text: str) -> list[str]:
    return re.findall(r"\\w+", text)
'''
UNSTYLED_ORACLE = """```python
from collections import Counter
def count_vowels(text):
    counts = Counter( text.lower() )
    return sum(counts[v] for v in 'aeiou')
```"""
RUFF_CONFIG = '[tool.ruff]\nline-length = 88\n\n[tool.ruff.lint]\nselect = ["E", "I"]\n'


def _ruff_project(root: Path, module: str) -> Path:
    project(root, module, TESTS.format(expected="5"))
    (root / "pyproject.toml").write_text(RUFF_CONFIG, encoding="utf-8")
    return root


def test_a_fix_goes_through_the_projects_formatter_and_import_sorter(tmp_path: Path):
    from referee.checks.arbitration.style import formatters

    root = _ruff_project(tmp_path / "p", STYLED)
    assert formatters(root) == ["ruff-isort", "ruff-format"]
    result = run(root, NODE, scripted([UNSTYLED_ORACLE] * 3))
    assert result.verdict.verdict == "SOURCE_WRONG", result.verdict.reason
    fixed = result.new_text
    assert fixed is not None
    assert "    counts = Counter(text.lower())\n" in fixed
    assert 'for v in "aeiou")' in fixed
    assert fixed.startswith(
        '"""Text helpers."""\n\nimport re\nfrom collections import Counter\n\n\n'
    )
    # everything but the function is as it was
    assert fixed.endswith(STYLED[STYLED.index("\n\ndef words") :])


def test_a_module_its_formatter_would_change_is_not_reformatted(tmp_path: Path):
    module = STYLED.replace("def words(text: str) -> list[str]:", "def words(text:str)->list[str]:")
    root = _ruff_project(tmp_path / "p", module)
    result = run(root, NODE, scripted([UNSTYLED_ORACLE] * 3))
    fixed = result.new_text
    assert fixed is not None and "def words(text:str)->list[str]:" in fixed
    assert "Counter( text.lower() )" in fixed  # the candidate's text, as spliced


def test_without_a_configured_formatter_nothing_is_run(tmp_path: Path):
    from referee.checks.arbitration.style import formatters

    root = project(tmp_path / "p", STYLED, TESTS.format(expected="5"))
    assert formatters(root) == []
    (root / "pyproject.toml").write_text("[tool.black]\nline-length = 100\n", encoding="utf-8")
    assert formatters(root) == ["black"]
    (root / "pyproject.toml").write_text("[tool.isort]\nprofile = 'black'\n", encoding="utf-8")
    assert formatters(root) == ["isort"]


# ------------------------------------------------------------------ the time budget

APPLE_TESTS = """from text import count_vowels


def test_apple():
    assert count_vowels("apple") == 2
"""


def test_an_arbitration_out_of_time_says_unclear_with_what_it_has(tmp_path: Path):
    # no doctest for the call: the oracles are needed, and the budget is spent before
    # the model is asked anything
    config = "[arbitration]\ntime-budget = 0.001\n"
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"), config)
    model = scripted([ORACLE], [GOOD_PATCH])
    verdict = run(root, NODE, model).verdict
    assert verdict.verdict == "UNCLEAR" and verdict.fix is None
    assert "ran out of its time budget (0.001 s, arbitration.time-budget)" in verdict.reason
    assert '`>>> count_vowels("aeiou")`) or a reference' in verdict.reason, verdict.reason
    assert model.calls == []


def test_out_of_time_between_rounds_quotes_the_oracles_written_so_far(tmp_path: Path):
    """The first round's three oracles are written and run — one's program does not parse
    — and the budget is spent before its replacement is asked: the verdict quotes what
    the three said, and the JSON lists them, instead of saying nothing was heard."""
    budget = 6.0
    config = f"[arbitration]\ntime-budget = {budget}\n"
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"), config)
    started = time.monotonic()

    def answer(messages, schema) -> str:
        asked.append(1)
        if len(asked) == 3:  # the round's last answer comes once the budget is spent
            time.sleep(max(0.0, started + budget + 0.2 - time.monotonic()))
        return "```python\ndef count_vowels(text:\n```" if len(asked) == 2 else ORACLE

    asked: list[int] = []
    verdict = run(root, NODE, ScriptedBackend(answer=answer)).verdict
    assert len(asked) == 3, "the test's run took the whole budget: no oracle was asked"
    assert verdict.verdict == "UNCLEAR" and verdict.fix is None
    assert "ran out of its time budget (6 s, arbitration.time-budget)" in verdict.reason
    assert "oracle-1: 5" in verdict.reason and "oracle-3: 5" in verdict.reason, verdict.reason
    assert "oracle-2: error (the model's program is not valid Python" in verdict.reason
    assert [o.source for o in verdict.oracles] == ["oracle-1", "oracle-2", "oracle-3"]
    assert [o.status for o in verdict.oracles] == ["ok", "error", "ok"]


def test_out_of_time_while_confirming_a_test_edit_says_what_the_oracles_agreed_on(
    tmp_path: Path,
):
    """The k oracles agree with the code, and the two more a test edit needs are being
    written when the budget runs out: the verdict says what the three agreed on and that
    the test edit was waiting for confirmation — nothing is edited."""
    budget = 6.0
    config = f"[arbitration]\ntime-budget = {budget}\n"
    root = project(tmp_path / "p", CORRECT, TESTS.format(expected="4"), config)
    before = (root / "tests" / "test_text.py").read_text(encoding="utf-8")
    started = time.monotonic()

    def answer(messages, schema) -> str:
        asked.append(1)
        if len(asked) == 4:  # the first of the two more comes once the budget is spent
            time.sleep(max(0.0, started + budget + 0.2 - time.monotonic()))
        return ORACLE

    asked: list[int] = []
    verdict = run(root, NODE, ScriptedBackend(answer=answer)).verdict
    assert len(asked) >= 4, "the test's run took the whole budget"
    assert verdict.verdict == "UNCLEAR" and verdict.fix is None
    assert verdict.reason == (
        "the 3 oracles agree with what the code produced (5), but editing the test needs 5 "
        "of 5 oracles to agree: oracle-1: 5; oracle-2: 5; oracle-3: 5; the 2 more were being "
        "written, and the time budget (6 s, arbitration.time-budget) ran out"
    )
    assert (root / "tests" / "test_text.py").read_text(encoding="utf-8") == before


def test_out_of_time_while_fixing_keeps_the_blame_and_offers_no_fix(tmp_path: Path):
    # the docstring's example is the truth (no model needed for the blame); the budget
    # runs out while candidate patches would be written
    config = "[arbitration]\ntime-budget = 0.001\n"
    root = project(tmp_path / "p", EXAMPLED, APPLE_TESTS, config)
    model = scripted([ORACLE], [GOOD_PATCH])
    verdict = run(root, "tests/test_text.py::test_apple", model).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert (verdict.truth, verdict.truth_source) == ("2", "doctest")
    assert verdict.fix is None
    assert "no verified fix (the time budget, 0.001 s, ran out" in verdict.reason
    # without a limit the same case is fixed
    root = project(tmp_path / "q", EXAMPLED, APPLE_TESTS, "[arbitration]\ntime-budget = 0\n")
    fixed = run(root, "tests/test_text.py::test_apple", scripted([ORACLE], [GOOD_PATCH])).verdict
    assert fixed.verdict == "SOURCE_WRONG" and fixed.fix is not None, fixed.reason
