"""The guard in an open document (checks/guard/live.py): what it keeps between checks.

An open test file is compared with its baseline on every edit. The baseline's facts are
computed once per text; the current text's facts are kept by top-level statement and only
the statements an edit changed are collected again. Whatever the edits, the facts must be
exactly those of a fresh computation, and so must the findings: the property test below
edits the guard catalogue's test files at random (removing and duplicating lines, adding
assertions, skips, ``pytestmark``, parametrize tables kept in module constants, assertion
aliases, swallowed assertions, expected values in locals, broken syntax); the tests after
it follow a guard finding through several edits, in the engine and through ``referee serve``
in a git repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import pytest_asyncio
from guard_catalogue.cases import CHEATS, HONEST, commit_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp.harness import PROFILES, Doc, RefereeClient, Setup, make_client, start
from pytest_lsp import ClientServerConfig

from referee.checks.config import Settings, discover
from referee.checks.configuration import RefereeConfig
from referee.checks.document import Change, Document
from referee.checks.engine import check_source
from referee.checks.guard import facts as guard_facts
from referee.checks.guard import live, run
from referee.checks.guard.context import GuardContext
from referee.checks.models import Finding
from referee.checks.pymodule import PythonModule
from referee.checks.registry import GUARD_CODES
from referee.checks.source import SourceFile

DEFAULTS = Settings(RefereeConfig(), Path("/project"), None)

# (path, baseline, edited text) of every Python test file the catalogue edits.
SEEDS = sorted(
    {
        (path, pair.before[path], after)
        for pair in [*CHEATS, *HONEST]
        for path, after in pair.after.items()
        if after is not None
        and path.endswith(".py")
        and DEFAULTS.is_test_file(path)
        and pair.before.get(path)
    }
)

SNIPPETS = [
    "\n",
    "    assert total([1]) == 1\n",
    "    assert add(1, 2) >= 3\n",
    "    return\n",
    "    try:\n        assert add(1, 1) == 2\n    except AssertionError:\n        pass\n",
    "@pytest.mark.skip\n",
    "@pytest.mark.xfail(strict=False)\n",
    "pytestmark = pytest.mark.skip\n",
    "pytestmark = [pytest.mark.xfail]\n",
    "CASES = [(1, 2), (3, 4)]\n",
    "CASES = [(1, 2)]\n",
    "@pytest.mark.parametrize('a, b', CASES)\ndef test_cases(a, b):\n    assert a + 1 == b\n",
    "eq = self.assertEqual\n",
    "        eq(1, 2)\n",
    "import unittest\n",
    "def helper():\n    assert True\n",
    "    helper()\n",
    "def _test_hidden():\n    assert add(1, 2) == 3\n",
    "class TestAdded:\n    def test_method(self):\n        assert total([2]) == 2\n",
    "    monkeypatch.setattr(shop, 'total', lambda items: 30)\n",
    "    expected = 6\n",
    "    assert total([3]) == expected\n",
    "    def __eq__(self, other):\n        return True\n",
    "(",
    ":",
    "def",
]


@st.composite
def edits(draw: st.DrawFn, text: str) -> Change:
    """A line removed or duplicated (an assertion deleted, a test copied), a snippet
    inserted at a line's start, or a few characters replaced."""
    lines = text.split("\n")
    line = draw(st.integers(0, max(len(lines) - 1, 0)))
    kind = draw(st.sampled_from(["remove", "duplicate", "insert", "insert", "type"]))
    if kind == "remove":
        return Change("", (line, 0), (line + 1, 0))
    if kind == "duplicate":
        return Change(lines[line] + "\n", (line, 0), (line, 0))
    if kind == "insert":
        return Change(draw(st.sampled_from(SNIPPETS)), (line, 0), (line, 0))
    column = draw(st.integers(0, len(lines[line])))
    typed = draw(st.text(alphabet="ab_1=():. \n", max_size=4))
    return Change(typed, (line, column), (line, column + draw(st.integers(0, 3))))


def fresh_functions(path: str, text: str) -> list[live.FunctionText]:
    source = SourceFile(path, text)
    return live._function_texts(source, PythonModule(source, True).functions)


def full_check(path: str, text: str, guard: GuardContext) -> list[Finding]:
    return check_source(SourceFile(path, text), DEFAULTS, path, guard)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_kept_facts_and_findings_equal_fresh_ones_after_any_edits(data: st.DataObject):
    path, before, after = data.draw(st.sampled_from(SEEDS), label="seed")
    document = Document(path, data.draw(st.sampled_from([before, after])), 0)
    guard = GuardContext(baseline=before)
    current = live.CurrentFacts()
    for version in range(1, data.draw(st.integers(1, 8), label="edits") + 1):
        document.apply([data.draw(edits(document.text), label="edit")], version, "utf-8")
        source = document.source()
        if data.draw(st.booleans(), label="functions first"):
            assert current.functions(source, path) == fresh_functions(path, document.text)
        kept = current.tests(source, path)
        assert list(kept.items()) == list(
            guard_facts.test_facts(SourceFile(path, document.text), path).items()
        )
        assert current.functions(source, path) == fresh_functions(path, document.text)
        if data.draw(st.booleans(), label="check"):
            findings = check_source(source, DEFAULTS, path, guard, cache=document.cache)
            assert findings == full_check(path, document.text, guard), document.text


SHOP_TESTS = """from shop import add, total


def test_add():
    assert add(1, 2) == 3
    assert add(-1, 1) == 0


def test_total():
    assert total([10, 20]) == 30
    assert total([]) == 0


class TestRefund:
    def test_refund(self):
        assert total([-5]) == -5
"""
PATH = "tests/test_shop.py"


def _codes(findings: list[Finding]) -> list[tuple[str, int]]:
    return [(f.code, f.span.start.line) for f in findings if f.code in GUARD_CODES]


def test_an_assertion_removed_and_restored_while_typing():
    """REF301 appears when an assertion is deleted, goes when it is restored, follows its
    test when lines are added above, and only the edited statement is collected again."""
    guard = GuardContext(baseline=SHOP_TESTS)
    document = Document(PATH, SHOP_TESTS, 0)
    version = 0

    def edit(old: str, new: str) -> list[Finding]:
        nonlocal version
        text = document.text
        index = text.index(old)

        def at(i: int) -> tuple[int, int]:
            return text.count("\n", 0, i), i - text.rfind("\n", 0, i) - 1

        version += 1
        document.apply([Change(new, at(index), at(index + len(old)))], version, "utf-8")
        findings = check_source(document.source(), DEFAULTS, PATH, guard, cache=document.cache)
        assert findings == full_check(PATH, document.text, guard)
        return findings

    first = check_source(document.source(), DEFAULTS, PATH, guard, cache=document.cache)
    assert _codes(first) == []
    current = document.cache.store["guard-current"]
    assert isinstance(current, live.CurrentFacts)

    assert _codes(edit("    assert total([]) == 0\n", "")) == [("REF301", 9)]
    assert current.recollected == 1  # the edited test alone
    restored = "    assert total([10, 20]) == 30\n    assert total([]) == 0\n"
    assert _codes(edit("    assert total([10, 20]) == 30\n", restored)) == []
    assert current.recollected == 1
    # Lines added above: the other tests' facts are reused, shifted.
    assert _codes(edit("from shop import", "import pytest\n\nfrom shop import")) == []
    assert current.recollected == 1
    assert _codes(edit("        assert total([-5]) == -5\n", "        pass\n")) == [("REF301", 17)]
    assert _codes(edit("def test_add():", "def _test_add():")) == [("REF308", 6), ("REF301", 17)]
    assert _codes(edit("def _test_add():", "def test_add():")) == [("REF301", 17)]
    assert _codes(edit("        pass\n", "        assert total([-5]) == -5\n")) == []


def test_the_baseline_is_analysed_once_per_text():
    """A new guard plan (after a save) hands the same baseline text in a new string: its
    facts are found again; another text gets its own."""
    text = SHOP_TESTS.replace("== 30", "== 31")
    tests = live.baseline("a/" + PATH, PATH, "python", text).tests
    assert "== 31" in tests[f"{PATH}::test_total"].assertions[0].text
    again = live.baseline("a/" + PATH, PATH, "python", "".join(list(text)))
    assert again.tests is tests
    other = live.baseline("a/" + PATH, PATH, "python", SHOP_TESTS)
    assert "== 30" in other.tests[f"{PATH}::test_total"].assertions[0].text


# ---------------------------------------------------------------------- referee serve


@pytest_asyncio.fixture(params=PROFILES)
async def client(request: pytest.FixtureRequest, tmp_path: Path):
    setup = Setup()
    config = ClientServerConfig(server_command=list(setup.server), client_factory=make_client)
    lsp_client = await config.start(devtools=request.config.getoption("devtools"))
    assert isinstance(lsp_client, RefereeClient)
    lsp_client.profile = request.param
    try:
        await start(lsp_client, request.param, tmp_path, setup)
        yield lsp_client
        await lsp_client.shutdown_session()
    finally:
        await lsp_client.stop()


def fresh_guard(root: Path, text: str) -> list[tuple[str, int, str]]:
    """What ``referee guard`` reports for ``text`` saved as the test file."""
    path = root / PATH
    path.write_text(text, encoding="utf-8")
    settings = discover(root)
    plan = run.plan(settings, "HEAD", root)
    source = run.current_source(path, PATH, False, settings)
    findings = check_source(
        source, settings, settings.relative(path), plan.contexts.get(path.resolve()), GUARD_CODES
    )
    return [(f.code, f.span.start.line, f.message) for f in findings]


def guard_diagnostics(diagnostics) -> list[tuple[str, int, str]]:
    return [
        (str(d.code), d.range.start.line + 1, d.message)
        for d in diagnostics
        if str(d.code) in GUARD_CODES
    ]


@pytest.mark.skipif(shutil.which("git") is None, reason="the guard needs git")
async def test_guard_findings_follow_the_edits_in_a_git_repository(client: RefereeClient):
    """Through the language server: each edit's REF3xx diagnostics are those of a fresh
    ``referee guard`` run on the same text."""
    root = client.root
    commit_repo(root, {"referee.toml": "", "shop.py": "", PATH: SHOP_TESTS})
    doc = Doc(client, client.uri(PATH), SHOP_TESTS).open()
    assert guard_diagnostics(await client.diagnostics_for(doc)) == []
    weakened = "    assert total([10, 20]) >= 30\n"
    steps = [
        ("    assert total([]) == 0\n", "", ["REF301"]),
        ("    assert total([10, 20]) == 30\n", weakened, ["REF301", "REF303"]),
        ("from shop import", "import pytest\n\nfrom shop import", ["REF301", "REF303"]),
        (weakened, "    assert total([10, 20]) == 30\n    assert total([]) == 0\n", []),
        ("def test_add():", "@pytest.mark.skip\ndef test_add():", ["REF310"]),
        ("@pytest.mark.skip\n", "", []),
    ]
    for old, new, codes in steps:
        doc.replace(old, new)
        found = guard_diagnostics(await client.diagnostics_for(doc))
        assert found == fresh_guard(root, doc.text), doc.text
        assert [code for code, _, _ in found] == codes
