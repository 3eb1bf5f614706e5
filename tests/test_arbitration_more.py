"""Arbitration decides more, never wrongly (issue 23): oracles that fail to run are
replaced, a source fix changes only the function's body (and what it needs), calls
wrapped in ``list()``/``sorted()``/... are arbitrated through the wrapper, and a test that
hangs is a red test too.

The engine tests script the model (tests/test_arbitration.py's helpers); the command-line
tests run ``referee arbitrate`` in a fresh interpreter against a fake OpenAI-compatible
server (tests/red_team/fake_openai.py) that answers by the request's kind and seed. The
sandbox, pytest and the verdict are the real thing.
"""

from __future__ import annotations

import json
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
    WRONG_ORACLE,
    project,
    run,
    scripted,
)

from referee.checks.arbitration.truth import failed_to_run, prompts
from referee.checks.models import OracleResult, arbitration_schema

NODE = "tests/test_text.py::test_vowels"
BROKEN = "```python\ndef count_vowels(text:\n    return [ch for ch in text\n```"
RAISES = "```python\ndef count_vowels(text):\n    return [] + range(3)\n```"
LOOPS = "```python\ndef count_vowels(text):\n    while True:\n        pass\n```"
MISNAMED = "```python\ndef vowels(text):\n    return 5\n```"


def body(answer: str) -> str:
    """The program inside a scripted answer's fence (the fake server adds its own)."""
    return answer.split("```python\n", 1)[1].rsplit("```", 1)[0]


def cli_project(root: Path, module: str, tests: str, url: str, test_timeout: int = 20) -> Path:
    config = (
        f'[arbitration]\nbackend = "openai"\nurl = "{url}"\nmodel = "fake"\n'
        f"candidates = 1\ntimeout = 5\ntest-timeout = {test_timeout}\n"
    )
    return project(root, module, tests, config)


def arbitrate_json(referee, root: Path, *args: str) -> dict:
    done = referee("arbitrate", NODE, "--format", "json", *args, cwd=root)
    assert done.stdout.strip(), (done.returncode, done.stderr)
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    return verdict


# ------------------------------------------------------------ 1. oracles that do not run


def test_an_oracle_that_does_not_parse_is_replaced_before_agreement_is_counted(tmp_path: Path):
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    # the failed oracle's two candidates (a fresh sample, a repair) both run: the first
    # takes its place, the second is not used
    result = run(root, NODE, scripted([BROKEN, ORACLE, ORACLE, ORACLE, ORACLE], [GOOD_PATCH]))
    verdict = result.verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert [(o.source, o.value) for o in verdict.oracles] == [
        ("oracle-101", "5"),
        ("oracle-2", "5"),
        ("oracle-3", "5"),
    ]
    assert verdict.oracles_replaced == 1
    (gone,) = verdict.replaced_oracles
    assert (gone.source, gone.status, gone.replaced_by) == ("oracle-1", "error", "oracle-101")
    assert "not valid Python" in gone.detail


def test_crashing_looping_and_misnamed_oracles_are_replaced_too(tmp_path: Path):
    root = project(
        tmp_path / "p", BUGGY, TESTS.format(expected="5"), "[arbitration]\ntimeout = 2\n"
    )
    answers = [RAISES, LOOPS, MISNAMED, ORACLE, ORACLE, ORACLE]
    verdict = run(root, NODE, scripted(answers, [GOOD_PATCH])).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert [o.source for o in verdict.oracles] == ["oracle-101", "oracle-102", "oracle-103"]
    why = {o.source: (o.status, o.detail) for o in verdict.replaced_oracles}
    assert why["oracle-1"][0] == "error" and "TypeError" in why["oracle-1"][1]
    assert why["oracle-2"][0] == "timeout"
    assert "does not define `count_vowels`" in why["oracle-3"][1]


def test_a_failed_oracle_gets_a_fresh_sample_and_a_repair_and_the_first_that_runs_stays(
    tmp_path: Path,
):
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    # round 1: oracle-1 does not parse; round 2: its fresh sample (oracle-101) does not
    # parse either, its repair (oracle-102) runs
    model = scripted([BROKEN, ORACLE, ORACLE, BROKEN, ORACLE], [GOOD_PATCH])
    verdict = run(root, NODE, model).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert [o.source for o in verdict.oracles] == ["oracle-102", "oracle-2", "oracle-3"]
    gone = [(o.source, o.replaced_by) for o in verdict.replaced_oracles]
    assert gone == [("oracle-1", "oracle-102"), ("oracle-101", "oracle-102")]
    oracle_calls = [c for c in model.calls if c[0]["content"] == prompts().oracle_system]
    # 3 first oracles, then one plain prompt and one repair, asked together
    assert [len(c) for c in oracle_calls] == [2, 2, 2, 2, 4]
    assert oracle_calls[3] == oracle_calls[0]


def test_a_replacement_that_ran_but_was_not_needed_is_the_first_extra_oracle_of_a_test_edit(
    tmp_path: Path,
):
    # oracle-1 does not parse; its fresh sample (oracle-101) and its repair (oracle-102)
    # both run: 101 takes its place, 102 is a spare. A test edit needs two more oracles:
    # the spare, and one newly written (oracle-4).
    root = project(tmp_path / "p", CORRECT, TESTS.format(expected="4"))
    model = scripted([BROKEN, ORACLE, ORACLE, ORACLE, ORACLE, ORACLE])
    verdict = run(root, NODE, model).verdict
    assert verdict.verdict == "TEST_WRONG", verdict.reason
    assert [(o.source, o.value) for o in verdict.oracles] == [
        ("oracle-101", "5"),
        ("oracle-2", "5"),
        ("oracle-3", "5"),
        ("oracle-102", "5"),
        ("oracle-4", "5"),
    ]
    oracle_calls = [c for c in model.calls if c[0]["content"] == prompts().oracle_system]
    assert len(oracle_calls) == 6  # 3, a fresh sample and a repair, then 1 (not 2) more


def test_a_spare_takes_the_place_of_another_failed_oracle_before_more_are_written(
    tmp_path: Path,
):
    # oracle-1 and oracle-3 do not parse. Their fresh samples are 101 and 102, their
    # repairs 103 and 104: 101 and 103 run (103 is a spare), 102 and 104 do not, and the
    # spare takes oracle-3's place; no third round is asked for.
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    answers = [BROKEN, ORACLE, BROKEN, ORACLE, BROKEN, ORACLE, BROKEN]
    model = scripted(answers, [GOOD_PATCH])
    verdict = run(root, NODE, model).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert [o.source for o in verdict.oracles] == ["oracle-101", "oracle-2", "oracle-103"]
    # oracle-3 gave way to its fresh sample (102, as neither ran), and 102 to the spare
    assert [(o.source, o.replaced_by) for o in verdict.replaced_oracles] == [
        ("oracle-1", "oracle-101"),
        ("oracle-3", "oracle-102"),
        ("oracle-104", "oracle-102"),
        ("oracle-102", "oracle-103"),
    ]
    oracle_calls = [c for c in model.calls if c[0]["content"] == prompts().oracle_system]
    assert len(oracle_calls) == 7


def test_a_spare_that_disagrees_blocks_a_test_edit_as_any_extra_oracle_does(tmp_path: Path):
    root = project(tmp_path / "p", CORRECT, TESTS.format(expected="4"))
    model = scripted([BROKEN, ORACLE, ORACLE, ORACLE, WRONG_ORACLE, ORACLE])
    verdict = run(root, NODE, model).verdict
    assert verdict.verdict == "UNCLEAR" and verdict.fix is None
    assert "editing the test needs 5 of 5 oracles to agree" in verdict.reason
    assert "oracle-102: 6" in verdict.reason


def test_an_oracle_may_use_what_the_module_imports_from_the_standard_library(tmp_path: Path):
    module = BUGGY.replace(
        "def count_vowels",
        "from math import pi\nimport os.path\n\n\ndef count_vowels",
        1,
    )
    root = project(tmp_path / "p", module, TESTS.format(expected="5"))
    uses_pi = "```python\ndef count_vowels(text):\n    return round(pi) + 2\n```"
    verdict = run(root, NODE, scripted([uses_pi, ORACLE, ORACLE], [GOOD_PATCH])).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.oracles_replaced == 0
    assert [o.value for o in verdict.oracles] == ["5", "5", "5"]


def test_module_imports_are_the_standard_library_ones_only():
    from referee.checks.arbitration.truth import module_imports

    text = (
        "from __future__ import annotations\nimport math, os.path\nimport numpy as np\n"
        "from collections import deque as dq\nfrom . import sibling\n"
        "from typing import (\n    Any,\n    Iterable,\n)\nimport os; import yaml\n"
        "if True:\n    import json\n"
    )
    assert module_imports(text) == (
        "import math, os.path\nfrom collections import deque as dq\n"
        "from typing import Any, Iterable\nimport os\n"
    )
    assert module_imports("def broken(:\n") == ""


def test_the_replacement_budget_is_a_limit_and_failed_oracles_never_count(tmp_path: Path):
    config = "[arbitration]\noracle-replacements = 1\n"
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"), config)
    verdict = run(root, NODE, scripted([BROKEN, ORACLE, ORACLE, BROKEN])).verdict
    assert verdict.verdict == "UNCLEAR"
    assert verdict.oracles_replaced == 1
    assert [(o.source, o.status) for o in verdict.oracles] == [
        ("oracle-101", "error"),
        ("oracle-2", "ok"),
        ("oracle-3", "ok"),
    ]
    assert "do not agree" in verdict.reason


def test_an_oracle_with_another_value_is_an_opinion_never_replaced_never_outvoted(
    tmp_path: Path,
):
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    wrong = "```python\ndef count_vowels(text):\n    return 4\n```"
    verdict = run(root, NODE, scripted([ORACLE, ORACLE, wrong, ORACLE])).verdict
    assert verdict.verdict == "UNCLEAR" and verdict.oracles_replaced == 0


EXAMPLED = '''def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains.

    >>> count_vowels("HELLO")
    2
    >>> count_vowels("apple")
    2
    """
    return sum(1 for ch in text[1:].lower() if ch in "aeiou")
'''
UPPER_TESTS = """from text import count_vowels


def test_vowels():
    assert count_vowels("AEIOU") == 5


def test_hello():
    assert count_vowels("HELLO") == 2
"""


def test_an_oracle_that_contradicts_a_docstring_example_is_set_aside_and_replaced(
    tmp_path: Path,
):
    # oracle-1 reads "vowels" as lower-case ones: 0 for "AEIOU", where the others say 5.
    # It would block certification; but it also says 0 for the docstring's own example
    # count_vowels("HELLO"), where the docstring says 2 — it misread the spec.
    root = project(tmp_path / "p", EXAMPLED, UPPER_TESTS)
    answers = [LONE_ORACLE, ORACLE, ORACLE, ORACLE, ORACLE]
    verdict = run(root, NODE, scripted(answers, [GOOD_PATCH])).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert (verdict.truth, verdict.truth_source) == ("5", "oracles")
    (gone,) = verdict.replaced_oracles
    assert (gone.source, gone.replaced_by) == ("oracle-1", "oracle-101")
    assert "contradicts the docstring's example" in gone.detail
    assert "count_vowels('HELLO') returned 0" in gone.detail


def test_a_replacement_oracle_is_shown_its_own_mistake_and_nothing_else(tmp_path: Path):
    root = project(tmp_path / "p", EXAMPLED, UPPER_TESTS)
    model = scripted([LONE_ORACLE, ORACLE, ORACLE, ORACLE], [GOOD_PATCH])
    verdict = run(root, NODE, model).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    oracle_calls = [c for c in model.calls if c[0]["content"] == prompts().oracle_system]
    (repair,) = [c for c in oracle_calls if len(c) > 2]
    # the prompt, the failed oracle's own program, what went wrong with it
    assert repair[:2] == oracle_calls[0][:2]
    assert repair[2]["role"] == "assistant" and "sum(c in 'aeiou'" in repair[2]["content"]
    said = repair[3]["content"]
    assert "count_vowels('HELLO') returned 0, but the docstring says 2" in said
    # never the function's body, never the test's call or expected value
    text = json.dumps(repair)
    assert "text[1:]" not in text and "AEIOU" not in text


def test_a_fresh_oracle_is_asked_with_the_docstrings_examples_as_assertions(tmp_path: Path):
    root = project(tmp_path / "p", EXAMPLED, UPPER_TESTS)
    model = scripted([LONE_ORACLE, ORACLE, ORACLE, ORACLE], [GOOD_PATCH])
    verdict = run(root, NODE, model).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    oracle_calls = [c for c in model.calls if c[0]["content"] == prompts().oracle_system]
    # three first oracles, then the failed one's fresh sample and its repair
    first, fresh = oracle_calls[0], oracle_calls[3]
    assert len(fresh) == 2 and fresh != first
    asked = fresh[1]["content"]
    assert asked.startswith(first[1]["content"])  # the same prompt, then the examples
    assert "assert count_vowels('HELLO') == 2" in asked
    assert "assert count_vowels('apple') == 2" in asked
    # the docstring's examples only: never the body, never the test's call or value
    assert "text[1:]" not in asked and "AEIOU" not in asked and "== 5" not in asked


def test_the_second_half_of_the_budget_asks_fresh_oracles_as_the_first_ones_were(
    tmp_path: Path,
):
    # A docstring whose examples, written out, lead the model astray every time: the
    # first half of the budget (2 of 4) shows them, the second half asks again plainly.
    config = "[arbitration]\noracle-replacements = 4\n"
    root = project(tmp_path / "p", EXAMPLED, UPPER_TESTS, config)
    answers = [LONE_ORACLE, ORACLE, ORACLE, LONE_ORACLE, LONE_ORACLE, ORACLE, LONE_ORACLE]
    model = scripted(answers, [GOOD_PATCH])
    verdict = run(root, NODE, model).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    oracle_calls = [c for c in model.calls if c[0]["content"] == prompts().oracle_system]
    first, fresh, repair, plain, repair2 = oracle_calls[0], *oracle_calls[3:7]
    assert "assert count_vowels('HELLO') == 2" in fresh[1]["content"]
    assert len(repair) == 4 and len(repair2) == 4  # each half repairs as well
    assert plain == first
    assert [o.source for o in verdict.oracles] == ["oracle-103", "oracle-2", "oracle-3"]
    gone = [(o.source, o.replaced_by) for o in verdict.replaced_oracles]
    # round 1: oracle-1's fresh sample (101) stays though it failed too, its repair (102)
    # is set aside; round 2: 101's plain sample (103) runs, its repair (104) does not
    assert gone == [
        ("oracle-1", "oracle-101"),
        ("oracle-102", "oracle-101"),
        ("oracle-101", "oracle-103"),
        ("oracle-104", "oracle-103"),
    ]


def test_a_round_never_straddles_the_two_halves_of_the_budget():
    from referee.checks.arbitration.truth import Replacements

    budget = Replacements(5)  # 3 with the examples, 2 without
    assert [budget.next_round(4) for _ in range(3)] == [(3, True), (2, False), (0, False)]
    assert budget.budget == 0
    assert Replacements(1).next_round(2) == (1, True)


def test_without_examples_a_fresh_oracle_is_asked_as_the_first_ones_were():
    from referee.checks.arbitration.isolate import function_spec
    from referee.checks.arbitration.truth import examples_messages, oracle_messages

    spec = function_spec(BUGGY, "text.py", "text", "count_vowels")
    assert examples_messages(spec, []) == oracle_messages(spec)


def test_without_the_example_the_same_oracle_is_an_opinion_and_blocks(tmp_path: Path):
    root = project(tmp_path / "p", BUGGY, UPPER_TESTS)
    verdict = run(root, NODE, scripted([LONE_ORACLE, ORACLE, ORACLE, ORACLE])).verdict
    assert verdict.verdict == "UNCLEAR" and verdict.oracles_replaced == 0


def test_example_calls_are_the_docstrings_literal_calls_without_errata():
    from referee.checks.arbitration.isolate import function_spec
    from referee.checks.arbitration.truth import example_calls

    text = '''def f(xs, n=1):
    """Spread XS.

    >>> f([1, 2])
    [1, 2]
    >>> list(f([3], n=2))
    [3, 3]
    >>> ys = [4]
    >>> f(ys)
    [4]
    >>> m.f(5)
    5
    f(7) -> 7
    f(7) -> 8
    """
'''
    spec = function_spec(text, "m.py", "m", "f")
    calls = [(call, want) for call, want, _ in example_calls(spec)]
    assert calls == [("f([1, 2])", "[1, 2]"), ("list(f([3], n=2))", "[3, 3]"), ("f(5)", "5")]


def test_a_doctest_truth_still_gets_oracle_programs_as_candidate_fixes(tmp_path: Path):
    # The failing call is the docstring's example: the doctest is the truth and no oracle
    # is needed for it. Oracles are still written, for the fix only.
    tests = UPPER_TESTS.replace('"AEIOU") == 5', '"apple") == 2')
    root = project(tmp_path / "p", EXAMPLED, tests)
    verdict = run(root, NODE, scripted([ORACLE])).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.truth_source == "doctest"
    assert verdict.fix is not None
    assert [(p.origin, p.status) for p in verdict.patches] == [("oracle-1", "passed")]
    assert [o.source for o in verdict.oracles] == ["doctest"]


def test_an_exception_the_docstring_names_is_an_opinion_not_a_crash():
    def result(status: str, detail: str) -> OracleResult:
        return OracleResult(source="oracle-1", status=status, detail=detail)  # type: ignore[arg-type]

    doc = "Return the root of X.\n\nRaises ValueError when X is negative."
    assert not failed_to_run(result("error", "ValueError: negative"), doc)
    assert failed_to_run(result("error", "TypeError: unsupported operand"), doc)
    assert failed_to_run(result("error", "the model's program not valid Python: x"), doc)
    assert failed_to_run(result("timeout", "timed out after 10 s"), doc)
    assert failed_to_run(result("memory", "MemoryError"), doc)
    assert not failed_to_run(result("refused", "no kernel boundary"), doc)
    assert not failed_to_run(OracleResult(source="oracle-1", status="ok", value="1"), doc)


def test_cli_replaces_an_oracle_that_does_not_parse_and_says_so_in_json(tmp_path: Path, referee):
    def answer(kind: str, seed: int | None) -> str:
        if kind == "oracle":
            return body(BROKEN) if seed == 1 else body(ORACLE)
        return body(GOOD_PATCH)

    with FakeModel(lambda kind: "", seeded=answer) as model:
        root = cli_project(tmp_path / "p", BUGGY, TESTS.format(expected="5"), model.url)
        verdict = arbitrate_json(referee, root, "--apply")
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["oracles_replaced"] == 1
    assert verdict["replaced_oracles"][0]["source"] == "oracle-1"
    assert verdict["replaced_oracles"][0]["replaced_by"] == "oracle-101"
    assert "not valid Python" in verdict["replaced_oracles"][0]["detail"]
    assert verdict["applied"] is True
    assert 'ch in "aeiouAEIOU"' in (root / "text.py").read_text(encoding="utf-8")


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
    assert model.calls == []


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
