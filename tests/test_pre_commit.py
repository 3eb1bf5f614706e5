"""The hooks in .pre-commit-hooks.yaml, run by the real pre-commit on a real git repository.

A snapshot of this checkout (its working tree, uncommitted changes included) is committed
to a scratch repository that a project's ``.pre-commit-config.yaml`` names, as a project
using referee would name its repository; pre-commit installs it into its own environment
(once for the module) and runs the hook on what is staged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (ROOT / ".git").exists(), reason="pre-commit installs hooks from a git checkout"
    ),
]

ADD = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == {}\n"
WEAK = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) > 0\n"


def _pre_commit() -> list[str]:
    exe = shutil.which("pre-commit", path=str(Path(sys.executable).parent))
    if exe is None:  # the dev extra brings it; say so rather than skip
        pytest.fail("pre-commit is not installed: pip install -e '.[dev]'")
    return [exe]


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit cache for the module: the hook environment is built once."""
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture(scope="module")
def hooks_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This checkout's files as they are now, committed to a repository of their own."""
    snapshot = tmp_path_factory.mktemp("referee-hooks")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, snapshot / name)
    _git(snapshot, "init", "-q", "-b", "main")
    _git(snapshot, "add", "-A")
    _git(snapshot, "commit", "-q", "-m", "snapshot")
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=snapshot, capture_output=True, text=True, check=True
    ).stdout.strip()
    return snapshot, head


@pytest.fixture
def repo(tmp_path: Path, hooks_repo: tuple[Path, str]) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    hooks, rev = hooks_repo
    (path / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks}\n    rev: {rev}\n"
        "    hooks:\n      - id: referee-check\n      - id: referee-guard\n"
    )
    (path / "calc.py").write_text(ADD)
    (path / "test_calc.py").write_text(TEST.format(3))
    _git(path, "add", ".")
    _git(path, "commit", "-q", "-m", "init")
    return path


def _git(cwd: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _hook(repo: Path, home: Path, hook: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        [*_pre_commit(), "run", hook, "--color", "never"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_check_hook_fails_on_a_staged_placeholder_and_passes_clean_code(
    repo: Path, pre_commit_home: Path
):
    (repo / "util.py").write_text('def parse(text):\n    """Parse the text."""\n    pass\n')
    _git(repo, "add", "util.py")
    failed = _hook(repo, pre_commit_home, "referee-check")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "util.py:1:5: REF101" in failed.stdout

    (repo / "util.py").write_text(
        'def parse(text):\n    """Parse the text."""\n    return text.split()\n'
    )
    _git(repo, "add", "util.py")
    passed = _hook(repo, pre_commit_home, "referee-check")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "referee check" in passed.stdout and "Passed" in passed.stdout


def test_guard_hook_fails_on_a_staged_weakening_and_passes_a_stronger_test(
    repo: Path, pre_commit_home: Path
):
    (repo / "test_calc.py").write_text(WEAK)
    _git(repo, "add", "test_calc.py")
    failed = _hook(repo, pre_commit_home, "referee-guard")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "test_calc.py:5:1: REF303" in failed.stdout

    (repo / "test_calc.py").write_text(TEST.format(3) + "    assert add(-1, 1) == 0\n")
    _git(repo, "add", "test_calc.py")
    passed = _hook(repo, pre_commit_home, "referee-guard")
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_guard_hook_judges_what_is_staged_not_the_unstaged_rest(repo: Path, pre_commit_home: Path):
    """pre-commit sets unstaged changes aside while hooks run: the commit is what counts."""
    (repo / "test_calc.py").write_text(WEAK)
    _git(repo, "add", "test_calc.py")
    (repo / "test_calc.py").write_text(TEST.format(3))  # restored, but only in the work tree
    staged_weakening = _hook(repo, pre_commit_home, "referee-guard")
    assert staged_weakening.returncode == 1, staged_weakening.stdout + staged_weakening.stderr
    assert "REF303" in staged_weakening.stdout
    assert (repo / "test_calc.py").read_text() == TEST.format(3)  # put back afterwards

    _git(repo, "add", "test_calc.py")
    (repo / "test_calc.py").write_text(WEAK)  # weakened, but not staged
    unstaged_weakening = _hook(repo, pre_commit_home, "referee-guard")
    assert unstaged_weakening.returncode == 0, unstaged_weakening.stdout + unstaged_weakening.stderr
    assert (repo / "test_calc.py").read_text() == WEAK
