"""What real pytest projects write, and what referee must make of it.

Each case is a pattern read in public projects (the real-world measurements of issue
21): intentional code that must not be an error, misreadings that must not happen, and
the real defects that must still be reported. Cases that need more than one file run
through the CLI's path (``runner.collect`` + ``runner.run``) on a project in
``tmp_path``, so the project index is what the user gets.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from referee.checks import runner
from referee.checks.config import Settings
from referee.checks.configuration import RefereeConfig
from referee.checks.engine import Incremental, check_source, check_text
from referee.checks.project import FileView, ProjectIndex, summarize
from referee.checks.source import SourceFile


def findings(text: str, path: str = "module.py") -> list[tuple[str, str, int]]:
    """(code, severity, line) of every finding of ``text`` checked as ``path``."""
    return [
        (f.code, f.severity.value, f.span.start.line)
        for f in check_text(textwrap.dedent(text), path)
    ]


def codes(text: str, path: str = "module.py") -> set[str]:
    return {code for code, _, _ in findings(text, path)}


def check_project(root: Path, files: dict[str, str]) -> dict[str, list[tuple[str, str, int]]]:
    """Write ``files`` under ``root`` and check the directory as ``referee check`` does."""
    for relpath, text in files.items():
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    settings = Settings(RefereeConfig(), root, None)
    targets = runner.collect([root], settings)
    results = runner.run(targets, settings, jobs=1)
    return {
        target.relpath: [(f.code, f.severity.value, f.span.start.line) for f in result.findings]
        for target, result in zip(targets, results, strict=True)
    }


# ----------------------------------------------------------------- misreadings (REF101)


@pytest.mark.parametrize("comment", ["", "# first", "# pyright: ignore", "# type: ignore[misc]"])
def test_a_trailing_comment_on_overload_keeps_it_a_declaration(comment: str):
    text = f"""
    from typing import overload, Any

    @overload  {comment}
    def f(x: int) -> int: ...
    @overload  {comment}
    def f(x: str) -> str: ...
    def f(x: Any) -> Any:
        return x
    """
    assert "REF101" not in codes(text)


def test_a_trailing_comment_on_abstractmethod_keeps_it_a_declaration():
    text = """
    import abc

    class Impl:
        @abc.abstractmethod  # subclasses must implement
        def run(self) -> int: ...
    """
    assert "REF101" not in codes(text)


def test_stubs_under_type_checking_are_declarations():
    text = """
    from typing import TYPE_CHECKING
    import typing as t

    if TYPE_CHECKING:
        def lazy(name: str) -> int: ...
    else:
        def lazy(name):
            return 1

    class Stat:
        if t.TYPE_CHECKING:
            @property
            def size(self) -> int: ...
    """
    assert "REF101" not in codes(text)


def test_a_stub_in_the_else_branch_of_type_checking_is_still_reported():
    text = """
    from typing import TYPE_CHECKING

    if TYPE_CHECKING:
        pass
    else:
        def lazy(name) -> int: ...
    """
    assert ("REF101", "error", 7) in findings(text)


@pytest.mark.parametrize("base", ["Base[int]", "Base", "Alias"])
def test_an_override_through_a_generic_or_aliased_base_makes_a_declaration(base: str):
    text = f"""
    from typing import Generic, TypeVar

    T = TypeVar("T")

    class Base(Generic[T]):
        def render(self) -> str:
            raise NotImplementedError

    Alias = Base[int]

    class Impl({base}):
        def render(self) -> str:
            return "x"
    """
    assert "REF101" not in codes(text)


# ----------------------------------------------------------- intentional code (REF101)


def test_pluggy_hookspecs_are_specifications():
    text = '''
    import pluggy

    hookspec = pluggy.HookspecMarker("myproject")
    spec = pluggy.HookspecMarker("other")

    @hookspec
    def myproject_startup(config) -> None:
        """Called once at startup."""

    @hookspec(firstresult=True)
    def myproject_pick(items) -> int:
        """Return the index of the chosen item."""

    @spec
    def other_hook(x):
        """Called with x."""

    def myproject_undecorated(config) -> None:
        """pluggy's add_hookspecs(module) takes this one too."""
    '''
    assert "REF101" not in codes(text)


def test_a_none_returning_no_op_is_not_a_promise():
    text = """
    class NullWriter:
        def flush(self) -> None:
            pass


    class NullWriter2:
        def flush(self):
            pass
    """
    assert findings(text) == [("REF101", "warning", 3), ("REF101", "warning", 8)]


@pytest.mark.parametrize(
    "docstring",
    [
        "Override to run code at start. Does nothing by default.",
        "Nothing to do",
        "Don't write.",
        "Hook to display something before the prompt.",
        "Subclasses can override this method to release resources.",
    ],
)
def test_a_docstring_that_says_the_body_is_empty_on_purpose_exempts_it(docstring: str):
    text = f'''
    class Hooks:
        def on_start(self):
            """{docstring}"""
    '''
    assert "REF101" not in codes(text)


def test_an_empty_visitor_method_stops_the_walk_on_purpose():
    text = '''
    class Finder(NodeVisitor):
        def visit_Block(self, node) -> None:
            """Stop visiting at blocks."""
    '''
    assert "REF101" not in codes(text)


def test_a_click_command_with_a_group_class_is_a_group_callback():
    text = '''
    import click

    @click.command(cls=AliasedGroup)
    def cli():
        """An example application that supports aliases."""
    '''
    assert "REF101" not in codes(text)


def test_an_informal_base_method_is_a_warning_not_an_error():
    text = """
    class Transport:
        def handle(self, request) -> Response:
            raise NotImplementedError
    """
    assert findings(text) == [("REF101", "warning", 3)]


# ------------------------------------------------------------- defects still reported


def test_stubs_that_promise_a_value_stay_errors():
    text = '''
    def median(items):
        """Return the median of ``items``."""


    def parse(text) -> int:
        ...


    def has_close_elements(numbers: list[float], threshold: float) -> bool:
        raise NotImplementedError


    class Store:
        def load(self, key) -> dict:
            """Fetch the record stored under ``key``."""
    '''
    assert findings(text) == [
        ("REF101", "error", 2),
        ("REF101", "error", 6),
        ("REF101", "error", 10),
        ("REF101", "error", 15),
    ]


def test_a_test_whose_body_is_only_a_docstring_is_an_error():
    text = '''
    class TestHash:
        def test_hash_deprecated(self):
            """
            Using the hash argument is deprecated.
            """
    '''
    assert findings(text, "test_functional.py") == [("REF101", "error", 3)]


def test_a_comparison_statement_in_a_test_is_an_error_and_not_also_ref110():
    text = """
    def test_style(console, Style):
        console.get_style("repr.brace") == Style(bold=True)
    """
    assert findings(text, "test_console.py") == [("REF116", "error", 3)]


def test_a_duplicated_parametrize_case_is_an_error():
    text = """
    import pytest

    @pytest.mark.parametrize("value, expected", [("T", "T"), (b"T", "T"), ("T", "T")])
    def test_text(value, expected):
        assert str(value) == expected
    """
    assert findings(text, "test_utils.py") == [("REF117", "error", 4)]


def test_a_chained_self_comparison_is_reported():
    text = """
    def test_chain(x, y):
        assert x == x == y
    """
    assert ("REF113", "warning", 3) in findings(text, "test_chain.py")


def test_identity_against_a_fresh_object_is_an_error_even_next_to_real_checks():
    text = """
    def test_validate(v):
        assert v.validate([1]) == [1]
        assert v.validate([1]) is not [1]
    """
    assert ("REF114", "error", 4) in findings(text, "test_validate.py")


# ------------------------------------------------------------------ REF110 idioms


@pytest.mark.parametrize(
    "body",
    [
        'result = pytester.runpytest()\n    result.stdout.fnmatch_lines(["*1 passed*"])',
        'result = pytester.runpytest()\n    result.stdout.re_match_lines([r".*passed"])',
        'result = pytester.runpytest()\n    result.stdout.no_fnmatch_line("*error*")',
        'result = pytester.runpytest()\n    result.stderr.no_re_match_line("Traceback")',
        "result = pytester.runpytest()\n    result.assert_outcomes(passed=1)",
        "reprec = pytester.inline_run()\n    reprec.assertoutcome(passed=1)",
        'snapshot.assert_match("x")',
    ],
)
def test_pytester_and_snapshot_checks_count_as_assertions(body: str):
    text = f"def test_it(pytester, snapshot):\n    {body}\n"
    assert "REF110" not in codes(text, "test_it.py")


def test_a_function_named_like_a_matcher_is_not_a_check_when_called_bare():
    text = "def test_it():\n    fnmatch_lines(['x'])\n"
    assert "REF110" in codes(text, "test_it.py")


def test_strict_xfail_with_raises_is_the_tests_check():
    text = """
    import pytest

    @pytest.mark.xfail(raises=ZeroDivisionError, strict=True)
    def test_divides():
        1 / 0

    @pytest.mark.xfail(raises=ZeroDivisionError)
    def test_not_strict():
        1 / 0
    """
    assert findings(text, "test_xfail.py") == [("REF110", "warning", 9)]


def test_a_benchmark_is_not_a_hollow_test():
    text = "def test_sort_speed(benchmark):\n    benchmark(sorted, [3, 2, 1])\n"
    assert "REF110" not in codes(text, "test_speed.py")


def test_an_asserting_fixture_the_test_requests_checks_for_it():
    text = """
    import pytest

    @pytest.fixture
    def checked():
        yield 1
        assert True

    def test_uses_it(checked):
        pass

    def test_does_not(other):
        other.run()
    """
    found = findings(text, "test_fixture.py")
    assert ("REF101", "error", 9) not in found  # the fixture checks: not a placeholder
    assert [f for f in found if f[0] in ("REF101", "REF110")] == [("REF110", "warning", 12)]


def test_a_fixture_named_test_something_is_not_a_test():
    text = """
    import pytest

    @pytest.fixture
    def test_data():
        return {"a": 1}

    @pytest.fixture()
    def testdir_setup(tmp_path):
        pass
    """
    assert codes(text, "test_fixture_names.py") == set()


# ------------------------------------------------------- which modules are test modules


def test_pytest_configuration_decides_which_modules_are_tests(tmp_path: Path):
    found = check_project(
        tmp_path,
        {
            "pyproject.toml": """
                [tool.pytest.ini_options]
                testpaths = ["testing"]
                python_files = ["test_*.py", "testing/python/*.py"]
                norecursedirs = ["testing/example_scripts"]
            """,
            "testing/test_real.py": "def test_it():\n    pass\n",
            "testing/python/approx.py": "def test_approx():\n    pass\n",
            "testing/example_scripts/pytest.ini": "[pytest]\n",
            "testing/example_scripts/test_data.py": "def test_data():\n    pass\n",
            "doc/example/test_doc.py": "def test_doc():\n    pass\n",
        },
    )
    assert found["testing/test_real.py"] == [("REF101", "error", 1)]
    assert found["testing/python/approx.py"] == [("REF101", "error", 1)]
    assert found["testing/example_scripts/test_data.py"] == []
    # outside testpaths: not a test, so a bare `pass` is only a warning
    assert found["doc/example/test_doc.py"] == [("REF101", "warning", 1)]


def test_a_tests_py_that_uses_no_test_framework_is_not_a_test_module():
    jinja_style = "def test_odd(value):\n    return value % 2 == 1\n"
    django_style = "from django.test import TestCase\n\ndef test_odd():\n    pass\n"
    assert codes(jinja_style, "src/jinja2/tests.py") == set()
    assert "REF101" in codes(django_style, "app/tests.py")


# ------------------------------------------------------------------ the project index


def test_an_imported_helper_that_asserts_is_followed_across_files(tmp_path: Path):
    found = check_project(
        tmp_path,
        {
            "tests/helpers.py": "def matches_snapshot(a):\n    assert a\n\n\n"
            "def render(a):\n    return a\n",
            "tests/test_idioms.py": "from helpers import matches_snapshot, render\n\n\n"
            "def test_snapshot():\n    matches_snapshot('a')\n\n\n"
            "def test_render():\n    render('a')\n",
        },
    )
    assert found["tests/test_idioms.py"] == [("REF110", "warning", 8)]


def test_a_fixture_from_conftest_that_asserts_checks_for_the_test(tmp_path: Path):
    found = check_project(
        tmp_path,
        {
            "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\n"
            "def no_warnings(recwarn):\n    yield\n    assert not recwarn\n",
            "tests/unit/test_quiet.py": "def test_quiet(no_warnings):\n    run()\n",
        },
    )
    assert found["tests/unit/test_quiet.py"] == []


def test_a_base_method_overridden_in_another_module_is_a_declaration(tmp_path: Path):
    found = check_project(
        tmp_path,
        {
            "src/pkg/sansio.py": "class App:\n"
            "    def create_env(self) -> Env:\n        raise NotImplementedError\n\n"
            "    def unused(self) -> Env:\n        raise NotImplementedError\n",
            "src/pkg/app.py": "from .sansio import App as BaseApp\n\n\n"
            "class Flask(BaseApp):\n    def create_env(self) -> Env:\n        return Env()\n",
        },
    )
    assert found["src/pkg/sansio.py"] == [("REF101", "warning", 5)]


def test_asserting_methods_of_a_base_test_class_in_another_module_count(tmp_path: Path):
    found = check_project(
        tmp_path,
        {
            "tests/base.py": "class Base:\n    def helper(self, v):\n        assert v\n",
            "tests/test_sub.py": "from base import Base\n\n\nclass TestSub(Base):\n"
            "    def test_it(self):\n        self.helper(1)\n",
        },
    )
    assert found["tests/test_sub.py"] == []


def test_an_edit_in_another_file_updates_a_finding_that_depends_on_it():
    """The incremental check is keyed by the project's view: a helper that stops
    asserting re-checks the test that calls it, with a full check's result."""
    settings = Settings(RefereeConfig(), Path("/project"), None)
    helper_asserts = SourceFile("tests/helpers.py", "def do_a():\n    assert 1\n")
    helper_returns = SourceFile("tests/helpers.py", "def do_a():\n    return 1\n")
    test = SourceFile(
        "tests/test_x.py", "from helpers import do_a\n\n\ndef test_a():\n    do_a()\n"
    )
    cache = Incremental()
    for helper, expected in (
        (helper_asserts, []),
        (helper_returns, ["REF110"]),
        (helper_asserts, []),
    ):
        index = ProjectIndex.of(
            [summarize(test, "tests/test_x.py"), summarize(helper, "tests/helpers.py")]
        )
        view = index.view("tests/test_x.py")
        incremental = check_source(test, settings, "tests/test_x.py", cache=cache, project=view)
        full = check_source(test, settings, "tests/test_x.py", project=view)
        assert incremental == full
        assert [f.code for f in full] == expected


def test_the_index_is_plain_data_that_pickles():
    import pickle

    facts = summarize(SourceFile("m.py", "import pytest\n\n\nclass A(B[int]):\n    pass\n"), "m.py")
    assert pickle.loads(pickle.dumps(facts)) == facts
    assert pickle.loads(pickle.dumps(FileView())) == FileView()


# ------------------------------------------------------------------ documents on a walk


def test_a_directory_of_markdown_is_checked_with_the_whole_file_rules(tmp_path: Path):
    found = check_project(
        tmp_path,
        {
            "docs/readme.md": "# Title\n\nTODO: explain the flags, and FIXME later.\n",
            "docs/chapter2.md": "# Chapter 2\n\nTODO\n",
            "docs/empty.md": "",
            "docs/dots.md": "...\n",
            "docs/notes.log": "",
            "docs/data/empty_resource.txt": "",
        },
    )
    assert found == {
        "docs/chapter2.md": [("REF103", "error", 1)],
        "docs/dots.md": [("REF105", "error", 1)],
        "docs/empty.md": [("REF104", "error", 1)],
        # a log is read with the run-output rules only: an empty one is no finding
        "docs/notes.log": [],
        "docs/readme.md": [],  # markers in prose are REF102's, which a walk does not run
    }


def test_an_xfail_with_raises_is_strict_when_the_configuration_says_so(tmp_path: Path):
    found = check_project(
        tmp_path,
        {
            "pyproject.toml": "[tool.pytest.ini_options]\nxfail_strict = true\n",
            "tests/test_x.py": "import pytest\n\n\n"
            "@pytest.mark.xfail(raises=ValueError)\ndef test_known_bug():\n    int('x')\n",
        },
    )
    assert found["tests/test_x.py"] == []


def test_a_command_run_with_check_true_is_checked():
    text = """
    import subprocess

    def test_script_runs(script):
        subprocess.run([script], check=True)

    def test_script_unchecked(script):
        subprocess.run([script], check=False)
    """
    assert findings(text, "test_scripts.py") == [("REF110", "warning", 7)]


def test_warnings_turned_into_errors_are_the_tests_check():
    text = """
    import warnings

    def test_no_deprecation(pm):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            pm.add_hookspecs(Api)

    def test_ignores_them(pm):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pm.add_hookspecs(Api)
    """
    assert findings(text, "test_warnings.py") == [("REF110", "warning", 9)]


def test_a_comparison_made_for_its_side_effects_is_not_reported():
    text = """
    def test_contains_calls_eq(testme, calls):
        1 in testme
        assert calls == ["__contains__"]

    def test_used_to_crash(d1, d2):
        d1 == d2  # used to give a SystemError

    def test_protocol():
        class Left:
            def __eq__(self, other):
                return NotImplemented
        Left() != Left()
    """
    assert findings(text, "test_compare.py") == []


# ------------------------------------------------------------------ --new-only


def test_new_only_reports_what_a_change_brought_in(invoke, tmp_path: Path):
    import json
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    old = "def test_old():\n    pass\n"
    (tmp_path / "test_a.py").write_text(old)
    git("add", ".")
    git("commit", "-qm", "base")
    (tmp_path / "test_a.py").write_text(old + "\n\ndef test_new():\n    pass\n")
    (tmp_path / "test_b.py").write_text("def test_untracked():\n    pass\n")
    # A body emptied under an unchanged `def` line: the finding on the def is new.
    (tmp_path / "test_c.py").write_text("def test_emptied():\n    assert 1 + 1 == 2\n")
    git("add", "test_c.py")
    git("commit", "-qm", "c")
    (tmp_path / "test_c.py").write_text("def test_emptied():\n    pass\n")

    result = invoke(
        "check", "--no-cache", "--exit-zero", "--format", "json", "--new-only", cwd=tmp_path
    )
    found = {(f["path"], f["span"]["start"]["line"]) for f in json.loads(result.stdout)["findings"]}
    assert found == {("test_a.py", 5), ("test_b.py", 1), ("test_c.py", 1)}
    everything = invoke("check", "--no-cache", "--exit-zero", "--format", "json", cwd=tmp_path)
    assert len(json.loads(everything.stdout)["findings"]) == 4


def test_a_lambda_callback_is_not_a_check_but_pytest_fail_is():
    text = """
    import pytest

    def test_assert_in_lambda_callback():
        run(callback=lambda r: r.ok)

    def test_hypothesis_reject():
        pytest.fail("x")
    """
    assert findings(text, "test_idioms.py") == [("REF110", "warning", 4)]


def test_the_two_pass_run_gives_what_a_full_check_with_the_view_gives(tmp_path: Path):
    """``runner.run`` re-runs only the view's rules on a file whose view is not empty;
    the result must be that of one full check with the view."""
    files = {
        "tests/helpers.py": "def check_a(x):\n    assert x\n\n\ndef plain(x):\n    return x\n",
        "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef ok():\n    yield\n"
        "    assert True\n",
        "tests/test_mix.py": "from helpers import check_a, plain\n\n\n"
        "def test_a():\n    check_a(1)  # TODO: more\n\n\n"
        "def test_b(ok):\n    plain(1)\n\n\n"
        "def test_c():\n    plain(1)\n    assert (plain, 'x')\n\n\n"
        "def test_d():\n    plain(2)\n",
    }
    check_project(tmp_path, files)  # writes the files
    settings = Settings(RefereeConfig(), tmp_path, None)
    targets = runner.collect([tmp_path], settings)
    results = runner.run(targets, settings, jobs=1)
    index = runner.build_index(targets, settings)
    for target, result in zip(targets, results, strict=True):
        full = runner.check_file(target, settings, index.view(target.relpath))
        assert result.findings == full.findings, target.relpath
    (mix,) = [r for t, r in zip(targets, results, strict=True) if t.relpath.endswith("mix.py")]
    assert [(f.code, f.span.start.line) for f in mix.findings] == [
        ("REF102", 5),
        ("REF112", 14),
        ("REF110", 17),
    ]


def test_a_docstring_that_only_mentions_defaults_does_not_excuse_a_stub():
    text = '''
    def median(items):
        """Return the median of ``items``; by default the lower one of two."""


    class Factory:
        def make(self) -> type:
            """Return a subclass of Base, overridden by plugins by default."""


    def _init_terminal(who: str) -> None:
        """Currently, nothing to be done on non-Windows systems."""
    '''
    assert findings(text) == [("REF101", "error", 2), ("REF101", "error", 7)]


def test_testpaths_do_not_reach_into_a_nested_project(tmp_path: Path):
    """pytest run in ``examples/demo`` (a project of its own) ignores the outer
    configuration's ``testpaths``: its tests are tests."""
    found = check_project(
        tmp_path,
        {
            "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
            "examples/demo/referee.toml": "",
            "examples/demo/tests/test_demo.py": "def test_demo():\n    pass\n",
            "examples/loose/test_loose.py": "def test_loose():\n    pass\n",
        },
    )
    assert found["examples/demo/tests/test_demo.py"] == [("REF101", "error", 1)]
    assert found["examples/loose/test_loose.py"] == [("REF101", "warning", 1)]
