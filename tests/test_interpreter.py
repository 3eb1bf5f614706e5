"""The project's interpreter runs the project's tests: arbitration's test run, mutation
grading and the sandbox use the Python of the project (its ``python`` setting,
``$VIRTUAL_ENV``, ``.venv/`` or ``venv/``), not referee's own.

The project's interpreter here is a real virtual environment made in a temporary
directory (``python -m venv --without-pip``) that holds a dependency referee's own
environment lacks (``projdep``, written straight into its site-packages) and, through a
``.pth`` file, a copy of pytest and the packages it imports — never referee.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from referee.checks import interpreter, sandbox
from referee.checks.arbitration import observe
from referee.checks.config import ConfigError, load_text
from referee.checks.interpreter import Interpreter, InterpreterError, find, pytest_problem

PROJDEP = "VALUE = 41\n\n\ndef answer():\n    return 42\n"


# what pytest imports, copied for the project's environment (not referee's site-packages:
# referee itself must not be importable there)
@pytest.fixture(autouse=True)
def _no_active_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    interpreter.forget()
    yield
    interpreter.forget()


def make_venv(path: Path, pytest_dir: Path | None, projdep: bool = True) -> Path:
    """A real virtual environment at ``path``; returns its ``bin/python``."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120
    )
    (site,) = path.glob("lib/python*/site-packages")
    if projdep:
        (site / "projdep").mkdir()
        (site / "projdep" / "__init__.py").write_text(PROJDEP, encoding="utf-8")
    if pytest_dir is not None:
        (site / "for_tests_pytest.pth").write_text(f"{pytest_dir}\n", encoding="utf-8")
    return path / "bin" / "python"


@pytest.fixture(scope="session")
def project_venv(tmp_path_factory: pytest.TempPathFactory, copied_pytest: Path) -> Path:
    """A virtual environment with pytest and projdep; returns its directory."""
    path = tmp_path_factory.mktemp("envs") / "with-pytest"
    make_venv(path, copied_pytest)
    return path


def _fake_python(directory: Path) -> Path:
    """A file where an environment's interpreter would be (for discovery's order only)."""
    python = directory / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n", encoding="utf-8")
    python.chmod(0o755)
    return python


# ------------------------------------------------------------------------ discovery


def test_discovery_order_setting_then_virtual_env_then_dot_venv_then_venv(tmp_path: Path):
    root = tmp_path / "project"
    root.mkdir()
    assert find(root) == Interpreter(sys.executable, "referee")
    venv = _fake_python(root / "venv")
    assert find(root) == Interpreter(str(venv), "venv")
    dot_venv = _fake_python(root / ".venv")
    interpreter.forget()
    assert find(root) == Interpreter(str(dot_venv), ".venv")
    active = _fake_python(tmp_path / "active")
    environ = {"VIRTUAL_ENV": str(tmp_path / "active")}
    assert find(root, environ=environ) == Interpreter(str(active), "$VIRTUAL_ENV")
    chosen = _fake_python(tmp_path / "chosen")
    # relative to the project root; a virtual environment's directory names its python
    assert find(root, "../chosen/bin/python", environ=environ) == Interpreter(
        str(chosen), "setting"
    )
    assert find(root, str(tmp_path / "chosen"), environ=environ).path == str(chosen)
    # a $VIRTUAL_ENV without an interpreter is passed over
    assert find(root, environ={"VIRTUAL_ENV": str(tmp_path / "gone")}).found == ".venv"


def test_any_environment_in_the_root_then_the_active_conda_environment(tmp_path: Path):
    """``python -m venv env`` and ``conda create -p ./env`` are environments of the
    project too; conda's active environment (often its base, in every shell) comes after
    the project's own, before referee's."""
    root = tmp_path / "project"
    root.mkdir()
    conda = {"CONDA_PREFIX": str(tmp_path / "conda")}
    conda_python = _fake_python(tmp_path / "conda")
    interpreter.forget()
    assert find(root, environ=conda) == Interpreter(str(conda_python), "$CONDA_PREFIX")
    # a folder with a bin/python but neither pyvenv.cfg nor conda-meta is not one
    _fake_python(root / "aaa-tools")
    interpreter.forget()
    assert find(root, environ=conda).found == "$CONDA_PREFIX"
    assert find(root, environ={}) == Interpreter(sys.executable, "referee")
    conda_env = _fake_python(root / "myenv")
    (root / "myenv" / "conda-meta").mkdir()
    interpreter.forget()
    assert find(root, environ=conda) == Interpreter(str(conda_env), "myenv")
    env = _fake_python(root / "env")  # sorts before myenv
    (root / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    interpreter.forget()
    assert find(root, environ=conda) == Interpreter(str(env), "env")
    dot_venv = _fake_python(root / ".venv")  # .venv and venv come first, as before
    interpreter.forget()
    assert find(root, environ=conda) == Interpreter(str(dot_venv), ".venv")
    active = _fake_python(tmp_path / "active")
    both = {**conda, "VIRTUAL_ENV": str(tmp_path / "active")}
    assert find(root, environ=both) == Interpreter(str(active), "$VIRTUAL_ENV")


def test_a_bad_python_setting_is_a_configuration_error_naming_the_key(tmp_path: Path):
    (tmp_path / "not-python").write_text("", encoding="utf-8")
    (tmp_path / "empty-dir").mkdir()
    for value, problem in [
        ("nowhere/bin/python", "does not exist"),
        ("not-python", "is not an executable file"),
        ("empty-dir", "is a directory with no bin/python"),
    ]:
        text = f'[project]\nname = "p"\n\n[tool.referee]\npython = "{value}"\n'
        settings = load_text(text, tmp_path / "pyproject.toml")
        with pytest.raises(ConfigError) as caught:
            interpreter.for_settings(settings)
        assert caught.value.key == "[tool.referee].python"
        assert str(caught.value).startswith(f"{tmp_path / 'pyproject.toml'}: [tool.referee].python")
        assert problem in str(caught.value), str(caught.value)
    with pytest.raises(ConfigError) as caught:
        load_text('python = ""\n', tmp_path / "referee.toml")
    assert caught.value.key == "python"
    # the editor's setting is named as the editor's
    settings = load_text("", tmp_path / "referee.toml").with_python(
        "nowhere", "editor setting referee.python"
    )
    with pytest.raises(ConfigError, match=r"^command line: editor setting referee\.python: "):
        interpreter.for_settings(settings)


def test_describe_names_the_environments_site_packages_and_its_pth_directories(
    project_venv: Path, copied_pytest: Path
):
    python = find(project_venv.parent / "nothing", str(project_venv / "bin" / "python"))
    found = interpreter.describe(python)
    (site,) = project_venv.glob("lib/python*/site-packages")
    assert found.site == (str(site.resolve()),)
    assert str(copied_pytest.resolve()) in found.extra
    assert found.version == tuple(sys.version_info[:3])
    with pytest.raises(InterpreterError):
        interpreter.describe(Interpreter(str(project_venv / "nothing"), "setting"))


def test_an_interpreter_without_pytest_is_one_clear_line(tmp_path: Path, project_venv: Path):
    bare = make_venv(tmp_path / ".venv", None)
    python = find(tmp_path)
    assert python == Interpreter(str(bare), ".venv")
    assert pytest_problem(python) == (
        f"the project's interpreter {bare} (found: .venv) has no pytest: install it there "
        "or set `python` in [tool.referee]"
    )
    assert pytest_problem(Interpreter(str(project_venv / "bin" / "python"), "setting")) is None
    # installing pytest is seen at the next ask, without forgetting anything
    (site,) = (tmp_path / ".venv").glob("lib/python*/site-packages")
    (site / "pytest.py").write_text("", encoding="utf-8")
    assert pytest_problem(python) is None


def test_one_interpreter_start_describes_it_and_says_whether_pytest_is_there(
    tmp_path: Path, project_venv: Path
):
    """A process's first ``pytest_problem`` starts the project's interpreter once: the
    description's probe also answers whether pytest imports (every arbitration and editor
    session asked twice). A change to its site-packages is asked again."""
    log = tmp_path / "starts.log"
    wrapper = tmp_path / "bin" / "python"
    wrapper.parent.mkdir()
    real = project_venv / "bin" / "python"
    wrapper.write_text(f'#!/bin/sh\necho start >> "{log}"\nexec "{real}" "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    python = Interpreter(str(wrapper), "setting")
    interpreter.forget()
    assert pytest_problem(python) is None
    assert interpreter.describe(python).version == tuple(sys.version_info[:3])
    assert pytest_problem(python) is None
    assert log.read_text(encoding="utf-8").splitlines() == ["start"]
    (site,) = project_venv.glob("lib/python*/site-packages")
    (site / "touched.py").write_text("", encoding="utf-8")  # its mtime moves: ask again
    try:
        assert pytest_problem(python) is None
        assert log.read_text(encoding="utf-8").splitlines() == ["start", "start"]
    finally:
        (site / "touched.py").unlink()


# ------------------------------------------------------------------ arbitration's test run

DEP_TEST = "import projdep\n\n\ndef test_answer():\n    assert projdep.answer() == 41\n"


def test_the_plugin_names_the_same_variables_as_the_package():
    from referee.checks import arbitration
    from referee.checks.arbitration import plugin

    for name in ("OUT_ENV", "NAMES_ENV", "HANG_ENV", "HANG_OUT_ENV"):
        assert getattr(plugin, name) == getattr(arbitration, name), name
    assert "import referee" not in observe.PLUGIN_FILE.read_text(encoding="utf-8")
    assert "from referee" not in observe.PLUGIN_FILE.read_text(encoding="utf-8")


def test_observe_runs_the_tests_in_the_projects_interpreter(tmp_path: Path, project_venv: Path):
    python = Interpreter(str(project_venv / "bin" / "python"), "setting")
    done = subprocess.run([python.path, "-c", "import referee"], capture_output=True, check=False)
    assert done.returncode != 0, "referee must not be importable in the project's environment"
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_dep.py").write_text(DEP_TEST, encoding="utf-8")
    node = "tests/test_dep.py::test_answer"

    run = observe.run_tests(tmp_path, [node], python=python, timeout=60)
    (call,) = [r for r in run.records if r.when == "call"]
    assert call.failed, run.output
    (compared,) = call.comparisons
    assert (compared["left"], compared["right"]) == ("42", "41"), compared

    # referee's own interpreter cannot import the project's dependency
    own = observe.run_tests(tmp_path, [node], timeout=60)
    assert not [r for r in own.records if r.when == "call"], own.output
    assert "No module named 'projdep'" in own.output


# ------------------------------------------------------------------------ the sandbox

SANDBOX_TESTS = """import os

import projdep


def test_the_dependency_is_importable():
    assert projdep.answer() == 42


def test_its_site_packages_are_read_only():
    site = os.path.dirname(os.path.dirname(projdep.__file__))
    try:
        with open(os.path.join(site, "planted.py"), "w") as handle:
            handle.write("x = 1\\n")
    except OSError:
        return
    raise AssertionError("wrote into the environment's site-packages")
"""


def test_the_sandbox_runs_pytest_in_the_projects_interpreter_read_only(project_venv: Path):
    python = Interpreter(str(project_venv / "bin" / "python"), "setting")
    problem = sandbox.boundary_problem(python=python)
    if problem is not None:
        pytest.skip(problem)
    files = {"test_dep.py": SANDBOX_TESTS}
    limits = sandbox.Limits(timeout_s=60, cpu_s=60, memory_mb=1024)
    result = sandbox.run_pytest(files, ["-q", "test_dep.py"], python=python, limits=limits)
    assert result.status == "ok", (result.message, result.stdout, result.stderr)
    assert result.message.startswith("2 passed"), result.message
    (site,) = project_venv.glob("lib/python*/site-packages")
    assert not (site / "planted.py").exists()
    # referee's own interpreter has no projdep: the same run fails
    own = sandbox.run_pytest(files, ["-q", "test_dep.py"], limits=limits)
    assert own.status != "ok" and "projdep" in own.stdout + own.stderr, own


def test_the_sandbox_evaluates_project_code_with_its_dependencies(project_venv: Path):
    python = Interpreter(str(project_venv / "bin" / "python"), "setting")
    if (problem := sandbox.boundary_problem(python=python)) is not None:
        pytest.skip(problem)
    limits = sandbox.Limits(timeout_s=60, cpu_s=60)
    result = sandbox.evaluate("import projdep", "projdep.answer()", python=python, limits=limits)
    assert (result.status, result.value) == ("ok", "42"), result.message
    own = sandbox.evaluate("import projdep", "projdep.answer()", limits=limits)
    assert own.status == "error" and "projdep" in own.message


def test_a_missing_interpreter_is_a_sandbox_error_not_an_exception(tmp_path: Path):
    python = Interpreter(str(tmp_path / "gone" / "python"), "setting")
    result = sandbox.run_pytest({"test_a.py": ""}, ["test_a.py"], python=python)
    assert result.status == "error" and "gone" in result.message


# ------------------------------------------------------------------ mutation grading


def test_mutation_grading_says_once_that_the_interpreter_has_no_pytest(tmp_path: Path):
    from referee.checks.execution.run import check_file
    from referee.checks.source import SourceFile

    make_venv(tmp_path / ".venv", None)
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n", encoding="utf-8")
    tests = (
        "from calc import add\n\n\ndef test_one():\n    assert add(1, 2) == 3\n\n\n"
        "def test_two():\n    assert add(2, 2) == 4\n"
    )
    (tmp_path / "test_calc.py").write_text(tests, encoding="utf-8")
    config = "[execution]\nenabled = true\nmutation = true\ndifferential = false\n"
    settings = load_text(config, tmp_path / "referee.toml")
    if (problem := sandbox.boundary_problem()) is not None:
        pytest.skip(problem)
    out = check_file(SourceFile("test_calc.py", tests), settings, "test_calc.py", [], queue=False)
    expected = (
        f"tests not graded by mutation: the project's interpreter {tmp_path / '.venv/bin/python'}"
        " (found: .venv) has no pytest: install it there or set `python` in [tool.referee]"
    )
    assert out.notes == [expected]
    assert out.grades == []


def test_mutation_grading_runs_in_the_projects_interpreter(tmp_path: Path, project_venv: Path):
    from referee.checks.execution.mutation import grade_test

    python = Interpreter(str(project_venv / "bin" / "python"), "setting")
    if (problem := sandbox.boundary_problem(python=python)) is not None:
        pytest.skip(problem)
    files = {
        "calc.py": "import projdep\n\n\ndef offset(x):\n    return x + projdep.VALUE\n",
        "test_calc.py": "from calc import offset\n\n\ndef test_offset():\n"
        "    assert offset(1) == 42\n",
    }
    grade = grade_test("test_calc.py", "test_offset", files, python=python, timeout=30)
    assert grade.status == "killed", grade
    own = grade_test("test_calc.py", "test_offset", files, timeout=30)
    # referee's own interpreter cannot import projdep: the test errors as it is
    assert own.status == "not-graded" and "1 error" in own.reason, own


def test_the_differential_check_runs_the_function_and_reference_in_the_projects_interpreter(
    project_venv: Path,
):
    from referee.checks.arbitration.isolate import function_spec
    from referee.checks.configuration import ArbitrationConfig, ExecutionConfig
    from referee.checks.execution.differential import check_function

    python = Interpreter(str(project_venv / "bin" / "python"), "setting")
    if (problem := sandbox.boundary_problem(python=python)) is not None:
        pytest.skip(problem)
    spec = function_spec(CALC, "calc.py", "calc", "shifted")
    files = {
        "calc.py": CALC,
        "ref.py": "import projdep\n\n\ndef shifted(x):\n    return x + projdep.VALUE\n",
    }

    def run(python: Interpreter | None):
        return check_function(
            spec,
            "calc.py",
            files,
            {},
            ExecutionConfig(),
            ArbitrationConfig(),
            reference="ref.py:shifted",
            python=python,
        )

    ran = run(python)
    assert ran.status == "PASS" and "agrees with the declared reference" in ran.reason, ran
    own = run(None)  # referee's interpreter has no projdep: the function does not import
    assert own.status == "SKIPPED" and "No module named 'projdep'" in own.reason, own


LEVEL = "import projdep\n\n\ndef level():\n    return projdep.VALUE - 41\n"
LEVEL_TEST = "from pkg.levels import level\n\n\ndef test_level():\n    assert level() == 1\n"


def test_the_guards_execution_check_runs_the_tests_in_the_projects_dot_venv(
    tmp_path: Path, copied_pytest: Path
):
    """REF334: a constant flipped until the test passes, in a project whose code needs a
    dependency only its .venv holds — found there; with no .venv the tests cannot run."""
    from guard_catalogue.cases import commit_repo, run_guard, write_files

    commit_repo(
        tmp_path,
        {
            ".gitignore": ".venv/\n",
            "pkg/__init__.py": "",
            "pkg/levels.py": LEVEL,
            "tests/test_levels.py": LEVEL_TEST,
        },
    )
    write_files(tmp_path, {"pkg/levels.py": LEVEL.replace("- 41", "- 40")})
    make_venv(tmp_path / ".venv", copied_pytest)
    if (problem := sandbox.boundary_problem(python=find(tmp_path))) is not None:
        pytest.skip(problem)
    outcome = run_guard(tmp_path, "--strict")
    found = [f for f in outcome.findings if f["code"] == "REF334"]
    assert len(found) == 1 and "`41` changed to `40`" in found[0]["message"], outcome.stderr
    shutil.rmtree(tmp_path / ".venv")
    interpreter.forget()
    outcome = run_guard(tmp_path, "--strict")
    assert not [f for f in outcome.findings if f["code"] == "REF334"]
    assert "No module named 'projdep'" in outcome.stderr


# ------------------------------------------------------------------ the command line

CALC = '''import projdep


def shifted(x: int) -> int:
    """Return X plus the project's offset.

    >>> shifted(1)
    42
    """
    return x + projdep.VALUE
'''
CALC_TESTS = "from calc import shifted\n\n\ndef test_shifted():\n    assert shifted(1) == 43\n"


def test_referee_arbitrate_runs_the_project_in_its_own_dot_venv(
    tmp_path: Path, referee, copied_pytest: Path
):
    """projdep lives only in the project's .venv: referee's interpreter could not even
    collect the test. The doctest is the truth; the corrected test runs in the sandbox
    with the .venv's interpreter, where it passes."""
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "referee.toml").write_text("", encoding="utf-8")
    (root / "calc.py").write_text(CALC, encoding="utf-8")
    (root / "tests" / "test_calc.py").write_text(CALC_TESTS, encoding="utf-8")
    make_venv(root / ".venv", copied_pytest)
    if (problem := sandbox.boundary_problem(python=find(root))) is not None:
        pytest.skip(problem)

    done = referee("arbitrate", "tests/test_calc.py::test_shifted", "--format", "json", cwd=root)
    verdict = json.loads(done.stdout)
    assert verdict["verdict"] == "TEST_WRONG", (verdict, done.stderr)
    assert verdict["truth_source"] == "doctest"
    assert verdict["fix"]["new_value"] == "42"

    # a bad `python` setting stops it with the file, the key and the problem
    (root / "referee.toml").write_text('python = "nowhere/bin/python"\n', encoding="utf-8")
    done = referee("arbitrate", "tests/test_calc.py::test_shifted", cwd=root)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"{root / 'referee.toml'}: python: 'nowhere/bin/python' does not exist" in done.stderr

    # an environment without pytest: one line that says so
    shutil.rmtree(root / ".venv")
    (root / "referee.toml").write_text("", encoding="utf-8")
    make_venv(root / ".venv", None)
    done = referee("arbitrate", "tests/test_calc.py::test_shifted", cwd=root)
    assert done.returncode == 2, (done.stdout, done.stderr)
    said = [line for line in done.stderr.splitlines() if "has no pytest" in line]
    assert said == [
        f"referee: error: the project's interpreter {root / '.venv/bin/python'} (found: .venv) "
        "has no pytest: install it there or set `python` in [tool.referee]"
    ], done.stderr


SHIFT = "import projdep\n\n\ndef shift(x):\n    return x + projdep.VALUE\n"
SHIFT_TESTS = """from calc import shift


def test_zero():
    assert shift(0) == 41


def test_one():
    assert shift(1) == 42


def test_two():
    assert shift(2) == 44
"""
SHIFT_ORACLE = "def shift(x):\n    return x + 41\n"  # the fake server fences it


def test_the_suites_assertions_run_in_the_projects_dot_venv(
    tmp_path: Path, referee, copied_pytest: Path
):
    """No docstring: the truth is written from the suite's passing assertions, which
    must first run on the current code — with projdep, which only the project's .venv
    holds (in referee's interpreter they "could not be run", and the case was UNCLEAR)."""
    from red_team.fake_openai import FakeModel

    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text(SHIFT, encoding="utf-8")
    (root / "tests" / "test_calc.py").write_text(SHIFT_TESTS, encoding="utf-8")
    make_venv(root / ".venv", copied_pytest)
    if (problem := sandbox.boundary_problem(python=find(root))) is not None:
        pytest.skip(problem)
    with FakeModel(lambda kind: SHIFT_ORACLE) as model:
        (root / "referee.toml").write_text(
            f'[arbitration]\nbackend = "openai"\nurl = "{model.url}"\nmodel = "fake"\n',
            encoding="utf-8",
        )
        done = referee("arbitrate", "tests/test_calc.py::test_two", "--format", "json", cwd=root)
    verdict = json.loads(done.stdout)
    assert verdict["verdict"] == "TEST_WRONG", (verdict["reason"], verdict["spec_examples"])
    assert verdict["truth_source"] == "oracles (spec from suite: 2 examples)"
    assert (verdict["produced"], verdict["truth"]) == ("43", "43")


# ------------------------------------------------------------ the project's pytest plugins

# A pytest plugin as pip installs one: a module and a dist-info whose entry point in the
# ``pytest11`` group makes pytest load it in every run (pytest-mock's ``mocker`` and
# pytest-asyncio are such plugins).
WORD_PLUGIN = "import pytest\n\n\n@pytest.fixture\ndef word():\n    return 'banana'\n"
WORD_TEST = (
    "from text import count_vowels\n\n\ndef test_vowels(word):\n"
    "    assert count_vowels(word) == {}\n"
)
TEXT = """def count_vowels(text):
    \"\"\"The number of vowels (a, e, i, o, u) in ``text``.

    >>> count_vowels("hello")
    2
    \"\"\"
    return sum(1 for c in text.lower() if c in "aeiou")
"""


def install_word_plugin(venv: Path) -> None:
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "wordplug.py").write_text(WORD_PLUGIN, encoding="utf-8")
    info = site / "wordplug-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: wordplug\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nwordplug = wordplug\n")


@pytest.fixture(scope="session")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory, copied_pytest: Path) -> Path:
    """A virtual environment with pytest and an installed plugin giving ``word``."""
    path = tmp_path_factory.mktemp("envs") / "with-plugin"
    make_venv(path, copied_pytest, projdep=False)
    install_word_plugin(path)
    return path


def test_the_sandbox_loads_the_plugins_the_projects_environment_installs(
    plugin_venv: Path, monkeypatch: pytest.MonkeyPatch
):
    """As pytest does in the project's own runs: a test that takes a plugin's fixture
    passes there for its own reasons (before, every sandboxed run of it was an error:
    fixture 'word' not found). Turned off where referee's environment turns it off."""
    from referee.checks.execution.mutation import grade_test

    python = Interpreter(str(plugin_venv / "bin" / "python"), "setting")
    if (problem := sandbox.boundary_problem(python=python)) is not None:
        pytest.skip(problem)
    files = {"text.py": TEXT, "test_text.py": WORD_TEST.format(3)}
    limits = sandbox.Limits(timeout_s=60, cpu_s=60, memory_mb=1024)
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    result = sandbox.run_pytest(files, ["-q", "test_text.py"], python=python, limits=limits)
    assert (result.status, result.message) == ("ok", result.message), result
    assert result.message.startswith("1 passed"), result.message
    # mutation grading runs the test in the sandbox too: graded, not an error
    grade = grade_test("test_text.py", "test_vowels", files, python=python, timeout=30)
    assert grade.status == "killed", grade

    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    off = sandbox.run_pytest(files, ["-q", "test_text.py"], python=python, limits=limits)
    assert off.status != "ok" and "fixture 'word' not found" in off.stdout, off


def test_referee_arbitrate_certifies_a_test_that_takes_a_plugins_fixture(
    tmp_path: Path, referee, copied_pytest: Path, monkeypatch: pytest.MonkeyPatch
):
    """The corrected test runs in the sandbox with the project's plugins, as its own run
    did: the declared reference's truth is written in and applied. Before, the corrected
    test met "fixture 'word' not found" there and nothing was certified."""
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "referee.toml").write_text(
        '[arbitration]\nreferences = { "text:count_vowels" = "refs:count_vowels" }\n',
        encoding="utf-8",
    )
    (root / "text.py").write_text(TEXT, encoding="utf-8")
    (root / "refs.py").write_text(TEXT, encoding="utf-8")
    (root / "tests" / "test_text.py").write_text(WORD_TEST.format(4), encoding="utf-8")
    make_venv(root / ".venv", copied_pytest, projdep=False)
    install_word_plugin(root / ".venv")
    if (problem := sandbox.boundary_problem(python=find(root))) is not None:
        pytest.skip(problem)

    done = referee(
        "arbitrate", "tests/test_text.py::test_vowels", "--apply", "--format", "json", cwd=root
    )
    verdict = json.loads(done.stdout)
    assert verdict["verdict"] == "TEST_WRONG", (verdict, done.stderr)
    assert (verdict["truth"], verdict["truth_source"]) == ("3", "reference"), verdict
    assert verdict["applied"], verdict["reason"]
    written = (root / "tests" / "test_text.py").read_text(encoding="utf-8")
    assert written == WORD_TEST.format(3)


# ------------------------------------------------------------- a src/ layout, installed

SRC_TEXT = '''def count_vowels(text):
    """The number of vowels (a, e, i, o, u) in ``text``."""
    return sum(1 for c in text[1:].lower() if c in "aeiou")
'''
SRC_FIXED = SRC_TEXT.replace("text[1:]", "text")


@pytest.mark.parametrize("folder", ["src", "lib"])
def test_a_source_fix_is_verified_against_the_copy_not_the_installed_checkout(
    tmp_path: Path, arbitrate_json, copied_pytest: Path, folder: str
):
    """A project whose package lies in ``src/`` (or ``lib/``), installed in development
    mode (a ``.pth`` naming that folder, as ``pip install -e .`` writes): the patched
    module is the code its test runs in the sandbox. Before, the test imported the
    package from the checkout the ``.pth`` names (the unpatched code) and every right fix
    was refused: "the test module does not pass against it in the sandbox"."""
    from guard_catalogue.cases import commit_repo
    from red_team.fake_openai import FakeModel

    root = tmp_path / "project"
    python = make_venv(root / ".venv", copied_pytest, projdep=False)
    (site,) = (root / ".venv").glob("lib/python*/site-packages")
    (site / "__editable__.textpkg-1.pth").write_text(f"{root / folder}\n", encoding="utf-8")
    with FakeModel(lambda kind: SRC_FIXED) as model:
        commit_repo(
            root,
            {
                "referee.toml": f'[arbitration]\nbackend = "openai"\nurl = "{model.url}"\n'
                'model = "fake"\ncandidates = 1\ntimeout = 5\n'
                'references = { "textpkg.text:count_vowels" = "refs:count_vowels" }\n',
                "pyproject.toml": '[project]\nname = "textpkg"\nversion = "1"\n',
                f"{folder}/textpkg/__init__.py": "",
                f"{folder}/textpkg/text.py": SRC_TEXT,
                "refs.py": SRC_FIXED,
                "tests/test_text.py": "from textpkg.text import count_vowels\n\n\n"
                'def test_vowels():\n    assert count_vowels("apple") == 2\n',
            },
        )
        verdict, done = arbitrate_json(root)
    assert verdict["verdict"] == "SOURCE_WRONG", (verdict["reason"], done.stderr)
    assert verdict["fix"] is not None, verdict["patches"]
    assert verdict["applied"], verdict["reason"]
    assert (root / folder / "textpkg" / "text.py").read_text(encoding="utf-8") == SRC_FIXED
    passed = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert passed.returncode == 0, passed.stdout + passed.stderr


# ------------------------------------------------------------------ the editor's setting


def test_the_editors_python_setting_wins_over_the_projects(tmp_path: Path):
    from pygls.workspace import Workspace

    from referee.server.lsp import RefereeServer
    from referee.server.options import parse_settings

    (tmp_path / "referee.toml").write_text('python = "from-file/bin/python"\n', encoding="utf-8")
    from_file = _fake_python(tmp_path / "from-file")
    from_editor = _fake_python(tmp_path / "from-editor")
    server = RefereeServer()
    # no client: the workspace an initialize request would have made
    server.protocol._workspace = Workspace(tmp_path.as_uri())
    assert interpreter.for_settings(server.settings_for(tmp_path / "a.py")).path == str(from_file)

    server.global_settings, problem = parse_settings({"referee": {"python": "from-editor"}})
    assert problem is None
    server.forget_settings()
    chosen = interpreter.for_settings(server.settings_for(tmp_path / "a.py"))
    assert chosen == Interpreter(str(from_editor), "setting")

    server.global_settings, _ = parse_settings({"referee": {"python": "nowhere"}})
    server.forget_settings()
    with pytest.raises(ConfigError, match=r"editor setting referee\.python: 'nowhere' does not"):
        interpreter.for_settings(server.settings_for(tmp_path / "a.py"))
