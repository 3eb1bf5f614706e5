"""Arbitration's oracles when they fail or mislead (issue 23): an oracle that does not
parse, crashes, loops or names another function is replaced before agreement is counted;
a fresh sample and a repair are tried per failed slot, within a budget whose second half
asks as the first oracles were asked; an oracle that contradicts a docstring example is set
aside, and one that merely disagrees is an opinion, never replaced and never outvoted.

The engine tests script the model (tests/test_arbitration.py's helpers); the command-line
test runs ``referee arbitrate`` in a fresh interpreter against a fake OpenAI-compatible
server (tests/red_team/fake_openai.py) that answers by the request's kind and seed. The
sandbox, pytest and the verdict are the real thing. The helpers ``body``, ``cli_project``
and ``arbitrate_json`` serve the other arbitration test modules too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from guard_catalogue.cases import commit_repo
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

from referee.checks.arbitration.programs import value_return
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


def cli_project(
    root: Path,
    module: str,
    tests: str,
    url: str,
    test_timeout: int = 20,
    *,
    suite_beside: bool = False,
) -> Path:
    config = (
        f'[arbitration]\nbackend = "openai"\nurl = "{url}"\nmodel = "fake"\n'
        f"candidates = 1\ntimeout = 5\ntest-timeout = {test_timeout}\n"
    )
    return project(root, module, tests, config, suite_beside=suite_beside)


def arbitrate_json(referee, root: Path, *args: str, node: str = NODE) -> dict:
    done = referee("arbitrate", node, "--format", "json", *args, cwd=root)
    assert done.stdout.strip(), (done.returncode, done.stderr)
    verdict = json.loads(done.stdout)
    jsonschema.validate(verdict, arbitration_schema())
    return verdict


def arbitrate_with(
    tmp_path: Path,
    referee,
    module: str,
    tests: str,
    node: str,
    oracle: str,
    patch: str,
    *,
    commit: bool = False,
) -> tuple[Path, dict]:
    """``referee arbitrate NODE --apply`` on a project of ``module`` (text.py) and ``tests``
    (tests/test_text.py), committed to git first with ``commit``, the fake model answering
    ``oracle`` to every oracle prompt and ``patch`` to every patch prompt."""
    with FakeModel(lambda kind: oracle if kind == "oracle" else patch) as model:
        root = cli_project(tmp_path / "p", module, tests, model.url)
        if commit:
            commit_repo(root, {})  # what the guard reads an edit against
        return root, arbitrate_json(referee, root, "--apply", node=node)


def arbitrate_template(
    tmp_path: Path,
    referee,
    module: str,
    template: str,
    want: str,
    node: str,
    oracle: str,
    patch: str,
) -> tuple[Path, str, dict]:
    """:func:`arbitrate_with` on the tests ``template`` with its ``{want}`` filled in,
    committed first: (the project, the tests as written, the verdict)."""
    tests = template.format(want=want)
    root, verdict = arbitrate_with(
        tmp_path, referee, module, tests, node, oracle, patch, commit=True
    )
    return root, tests, verdict


def assert_tests_pass(root: Path, path: str = "tests/test_text.py") -> None:
    """The project's tests pass, run for real (after a fix)."""
    passed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", path],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert passed.returncode == 0, passed.stdout + passed.stderr


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


PRINTS = '```python\ndef count_vowels(text):\n    print(sum(ch in "aeiou" for ch in text))\n```'


def test_an_oracle_that_returns_none_where_the_signature_says_int_is_replaced(tmp_path: Path):
    """A program that prints its answer (or forgets to return it) gives None: no opinion
    about an ``-> int`` function's value, so it is replaced, not counted as a
    disagreement that leaves the case UNCLEAR."""
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    verdict = run(root, NODE, scripted([PRINTS, ORACLE, ORACLE, ORACLE], [GOOD_PATCH])).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert [o.source for o in verdict.oracles] == ["oracle-101", "oracle-2", "oracle-3"]
    # oracle-1, and the spare its repair wrote the same way, set aside for the same reason
    gone = {o.source: o.detail for o in verdict.replaced_oracles}
    assert "oracle-1" in gone, gone
    assert set(gone.values()) == {"the model's program returned None; the signature says int"}


# ``str(...)`` of the count: a value the ``-> int`` signature rules out
STRINGY = (
    '```python\ndef count_vowels(text):\n    return str(sum(ch in "aeiouAEIOU" for ch in text))\n'
    "```"
)


def test_an_oracle_whose_value_the_signature_rules_out_is_replaced(tmp_path: Path):
    """``'5'`` from a function whose signature says ``-> int`` is a misreading, as None
    is: replaced, not an opinion that leaves the case UNCLEAR."""
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    verdict = run(root, NODE, scripted([STRINGY, ORACLE, ORACLE, ORACLE], [GOOD_PATCH])).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert [o.source for o in verdict.oracles] == ["oracle-101", "oracle-2", "oracle-3"]
    gone = {o.source: o.detail for o in verdict.replaced_oracles}
    assert gone.get("oracle-1") == "the model's program returned str; the signature says int"


def test_a_value_of_another_type_is_an_opinion_where_the_signature_names_none(tmp_path: Path):
    unannotated = BUGGY.replace("(text: str) -> int:", "(text):")
    root = project(tmp_path / "p", unannotated, TESTS.format(expected="5"))
    verdict = run(root, NODE, scripted([STRINGY, ORACLE, ORACLE], [GOOD_PATCH])).verdict
    assert verdict.verdict == "UNCLEAR" and verdict.oracles_replaced == 0
    assert "oracle-1: '5'" in verdict.reason


def cli_first_oracle(tmp_path: Path, referee, first: str) -> tuple[Path, dict]:
    """``referee arbitrate --apply`` on count_vowels's project, the fake model answering
    ``first`` (a scripted answer) as oracle-1 and ORACLE as every other oracle."""

    def answer(kind: str, seed: int | None) -> str:
        if kind == "oracle":
            return body(first) if seed == 1 else body(ORACLE)
        return body(GOOD_PATCH)

    with FakeModel(lambda kind: "", seeded=answer) as model:
        root = cli_project(tmp_path / "p", BUGGY, TESTS.format(expected="5"), model.url)
        return root, arbitrate_json(referee, root, "--apply")


def test_cli_replaces_an_oracle_whose_value_the_signature_rules_out(tmp_path: Path, referee):
    root, verdict = cli_first_oracle(tmp_path, referee, STRINGY)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    (gone,) = [o for o in verdict["replaced_oracles"] if o["source"] == "oracle-1"]
    assert gone["detail"] == "the model's program returned str; the signature says int"
    assert verdict["applied"] is True
    assert_tests_pass(root)


@pytest.mark.parametrize(
    ("value", "returns", "other"),
    [
        ("b'foo.txt'", "str", "bytes"),
        ("'5'", "int", "str"),
        ("(1, 2)", "list[int]", "tuple"),
        ("[1]", "typing.Dict[str, int]", "list"),
        ("2.5", "int", "float"),
        ("set()", "list", "set"),
        # what the annotation allows
        ("'x'", "str", None),
        ("5.0", "int", None),
        ("3", "float", None),
        ("1", "bool", None),
        ("[1, 'a']", "List[str]", None),  # the items are not read
        # not a literal, or not an annotation of a built-in value type
        ("datetime.date(2020, 1, 1)", "str", None),
        ("'x'", "Path", None),
        ("'x'", "int | None", None),
    ],
)
def test_other_type_reads_a_literal_against_a_built_in_annotation(value, returns, other):
    from referee.checks.arbitration.programs import other_type

    assert other_type(value, returns) == other


# A program with a value return that gives None: its answer, where nothing says otherwise.
RETURNS_NONE = "```python\ndef count_vowels(text):\n    return None if text else 0\n```"
# The stub as a method's prompt shows it, copied: its ``...`` body gave the None.
COPIES_STUB = (
    '```python\ndef helper(text):\n    """Counts."""\n    ...\n\n\n'
    "def count_vowels(text):\n    return helper(text)\n```"
)


def test_none_is_an_opinion_where_the_signature_allows_it(tmp_path: Path):
    """Without a value type in the signature, None that a program returns is its answer:
    it disagrees."""
    unannotated = BUGGY.replace("(text: str) -> int:", "(text):")
    root = project(tmp_path / "p", unannotated, TESTS.format(expected="5"))
    verdict = run(root, NODE, scripted([RETURNS_NONE, ORACLE, ORACLE], [GOOD_PATCH])).verdict
    assert verdict.verdict == "UNCLEAR" and verdict.oracles_replaced == 0
    assert "oracle-1: None" in verdict.reason


@pytest.mark.parametrize(
    ("program", "why"),
    [
        (PRINTS, "`count_vowels` never returns a value, and the call gave None"),
        (COPIES_STUB, "copies a stub (`helper` has the body `...`), and the call gave None"),
    ],
    ids=["prints", "copies-a-stub"],
)
def test_a_none_from_a_program_that_never_returns_or_runs_a_stub_is_replaced(
    tmp_path: Path, program: str, why: str
):
    """Whatever the signature, a None from a program that prints its answer (no value
    return anywhere in its function) or runs a stub's ``...`` body is no opinion."""
    unannotated = BUGGY.replace("(text: str) -> int:", "(text):")
    root = project(tmp_path / "p", unannotated, TESTS.format(expected="5"))
    verdict = run(root, NODE, scripted([program, ORACLE, ORACLE, ORACLE], [GOOD_PATCH])).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    gone = {o.source: o.detail for o in verdict.replaced_oracles}
    assert gone.get("oracle-1") == f"the model's program {why}", gone


@pytest.mark.parametrize(
    ("signature", "returns"),
    [
        ("def f(x) -> int:", "int"),
        ("def f(x: str, *, y=1) -> list[str]:", "list[str]"),
        ("async def f() -> typing.Dict[str, int]:", "typing.Dict[str, int]"),
        ("def f(x) -> Optional[int]:", None),
        ("def f(x) -> int | None:", None),
        ("def f(x) -> Bits:", None),
        ("def f(x):", None),
        ("def f(x) -> None:", None),
        ("def f(x -> int:", None),
    ],
)
def test_value_return_names_only_types_whose_values_are_never_none(signature, returns):
    assert value_return(signature) == returns


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


# the 1.5B's habit: ``re`` and ``reduce`` used, never imported
FORGETS_IMPORTS = """```python
def count_vowels(text):
    return reduce(lambda n, ch: n + 1, re.findall("[aeiou]", text, re.IGNORECASE), 0)
```"""


def test_an_oracle_that_forgot_a_standard_library_import_runs_with_it(tmp_path: Path):
    root = project(tmp_path / "p", BUGGY, TESTS.format(expected="5"))
    answers = [FORGETS_IMPORTS, FORGETS_IMPORTS, FORGETS_IMPORTS]
    verdict = run(root, NODE, scripted(answers, [GOOD_PATCH])).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert verdict.oracles_replaced == 0, verdict.replaced_oracles
    assert [o.value for o in verdict.oracles] == ["5", "5", "5"]


def test_cli_an_oracle_that_forgot_its_imports_is_counted_and_fixes_the_source(
    tmp_path: Path, referee
):
    """End to end: the fake model's every oracle forgets ``import re`` and ``reduce``'s
    import; they run with them, certify the truth, and a patch taken from one of them
    brings the imports into the module it fixes."""
    root, verdict = arbitrate_with(
        tmp_path, referee, BUGGY, TESTS.format(expected="5"), NODE, body(FORGETS_IMPORTS), "pass"
    )
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["oracles_replaced"] == 0
    assert verdict["applied"], verdict["patches"]
    fixed = (root / "text.py").read_text(encoding="utf-8")
    assert "import re" in fixed and "from functools import reduce" in fixed, fixed
    assert_tests_pass(root)


@pytest.mark.parametrize(
    ("code", "imports"),
    [
        ("def f(s):\n    return re.sub('a', 'b', s)\n", "import re\n"),
        ("def f(xs):\n    return reduce(max, xs)\n", "from functools import reduce\n"),
        (
            "def f(s):\n    return Counter(s), string.digits\n",
            "from collections import Counter\nimport string\n",
        ),
        # bound somewhere in the program: a parameter, a local, an import, a definition
        ("def f(re):\n    return re.sub('a', 'b', 'a')\n", ""),
        ("def f(x):\n    math = x\n    return math.pi\n", ""),
        ("import re as re\ndef f(s):\n    return re.sub('a', 'b', s)\n", ""),
        ("def reduce(f, xs):\n    return xs\ndef g(xs):\n    return reduce(max, xs)\n", ""),
        # a module name read as a value, not only as ``name.attr``: not guessed
        ("def f():\n    return string, string.digits\n", ""),
        # not the standard library's, or a private module
        ("def f():\n    return numpy.zeros(3), _thread.get_ident()\n", ""),
        ("def broken(:\n", ""),
    ],
)
def test_forgotten_imports_are_the_standard_librarys_names_the_program_never_binds(
    code: str, imports: str
):
    from referee.checks.arbitration.programs import forgotten_imports

    assert forgotten_imports(code) == imports


def test_a_sentinel_the_signature_names_is_defined_for_every_oracle(tmp_path: Path):
    # ``vowels=ALL`` names the module's ``ALL = object()``: an oracle that writes the
    # signature as shown runs after that definition (not a NameError), and its prompt shows it
    module = BUGGY.replace(
        "def count_vowels(text: str) -> int:",
        "ALL = object()\n\n\ndef count_vowels(text: str, vowels=ALL) -> int:",
        1,
    )
    root = project(tmp_path / "p", module, TESTS.format(expected="5"))
    sentinel = (
        "```python\ndef count_vowels(text: str, vowels=ALL) -> int:\n"
        '    chosen = "aeiouAEIOU" if vowels is ALL else vowels\n'
        "    return sum(ch in chosen for ch in text)\n```"
    )
    asked: list[str] = []

    def answer(messages, schema) -> str:
        asked.append(messages[-1]["content"])
        return sentinel if messages[0]["content"] == prompts().oracle_system else GOOD_PATCH

    from referee.checks.judge.backend import ScriptedBackend

    verdict = run(root, NODE, ScriptedBackend(answer=answer)).verdict
    assert verdict.verdict == "SOURCE_WRONG", verdict.reason
    assert [o.value for o in verdict.oracles] == ["5", "5", "5"]
    assert (
        "ALL = object()  # defined in its module\n\ndef count_vowels(text: str, vowels=ALL)"
        in asked[0]
    )


def test_the_constants_a_signature_names_are_read_from_its_module_and_the_project():
    from referee.checks.arbitration.programs import signature_constants

    text = (
        "from .utils import no_default\nNO = object()\nLIMIT = 3\nTWICE = 1\nTWICE = 2\n"
        "FROM_CALL = dict()\n"
    )
    signature = "def f(a, b=NO, *, c=LIMIT, d=TWICE, e=FROM_CALL, g=None, h=no_default, i=len):"
    assert signature_constants(text, signature, "pkg.mod") == "NO = object()\nLIMIT = 3\n"
    # without the project's root, an imported name is not followed
    assert "no_default" not in signature_constants(text, signature, "pkg.mod", None)


def test_a_sentinel_imported_from_the_project_is_read_from_its_file(tmp_path: Path):
    from referee.checks.arbitration.programs import signature_constants

    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "utils.py").write_text(
        "from pkg._base import no_default\n", encoding="utf-8"
    )
    (tmp_path / "src" / "pkg" / "_base.py").write_text(
        'no_default = "__no__default__"\n', encoding="utf-8"
    )
    text = "from .utils import no_default\n"
    assert (
        signature_constants(text, "def f(x, d=no_default):", "pkg.mod", tmp_path)
        == "no_default = '__no__default__'\n"
    )


def test_module_imports_are_the_standard_library_ones_only():
    from referee.checks.arbitration.programs import module_imports

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
    root, verdict = cli_first_oracle(tmp_path, referee, BROKEN)
    assert verdict["verdict"] == "SOURCE_WRONG", verdict["reason"]
    assert verdict["oracles_replaced"] == 1
    assert verdict["replaced_oracles"][0]["source"] == "oracle-1"
    assert verdict["replaced_oracles"][0]["replaced_by"] == "oracle-101"
    assert "not valid Python" in verdict["replaced_oracles"][0]["detail"]
    assert verdict["applied"] is True
    assert 'ch in "aeiouAEIOU"' in (root / "text.py").read_text(encoding="utf-8")
