"""The sandbox fidelity bench: each test module run in the project's own run and in the
sandbox, as a candidate patch's run is, and the two compared."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_interpreter import make_venv

from referee.checks import sandbox
from referee.checks.interpreter import find

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import sandbox_fidelity  # noqa: E402

CALC = "def add(a, b):\n    return a + b\n"
PLAIN = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
SPAWNING = (
    "import subprocess\nimport sys\n\n\ndef test_child():\n"
    "    done = subprocess.run([sys.executable, '-c', 'print(7)'], capture_output=True)\n"
    "    assert done.stdout.strip() == b'7'\n"
)


def test_a_module_that_starts_a_process_is_the_one_that_differs(
    tmp_path: Path,
    copied_pytest: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys,
):
    monkeypatch.setenv("REFEREE_BENCH_RECORD", "0")
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)  # the project's .venv is the one
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # restored afterwards
    project = tmp_path / "calc-project"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(CALC, encoding="utf-8")
    (project / "tests" / "test_calc.py").write_text(PLAIN, encoding="utf-8")
    (project / "tests" / "test_spawn.py").write_text(SPAWNING, encoding="utf-8")
    (project / "pyproject.toml").write_text('[project]\nname = "calc"\n', encoding="utf-8")
    make_venv(project / ".venv", copied_pytest, projdep=False)
    if (problem := sandbox.boundary_problem(python=find(project))) is not None:
        pytest.skip(problem)
    out = tmp_path / "rows.json"

    assert sandbox_fidelity.main([str(project), "--json", str(out), "--no-plugins"]) == 0
    rows = {r["module"]: r for r in json.loads(out.read_text())["projects"][0]["rows"]}
    assert rows["tests/test_calc.py"]["outcome"] == "same", rows
    assert rows["tests/test_calc.py"]["own"] == rows["tests/test_calc.py"]["sandbox"] == [1, 1]
    spawn = rows["tests/test_spawn.py"]
    assert (spawn["outcome"], spawn["own"], spawn["sandbox"]) == ("differs", [1, 1], [0, 1])
    table = capsys.readouterr().out
    assert "| calc-project | 2 | 1 | 1 | tests/test_spawn.py: 1 failed" in table, table


def test_a_project_without_an_environment_of_its_own_is_said_so(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("REFEREE_BENCH_RECORD", "0")
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    (tmp_path / "bare").mkdir()
    result = sandbox_fidelity.bench_project(tmp_path / "bare", 2, {})
    assert result == {"project": "bare", "error": "no environment of its own (.venv/ or another)"}
