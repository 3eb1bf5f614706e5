"""The model in its own process: a crash, a hang or an abort of native code is an UNCLEAR
item and one line, never referee's death; the CPU decides the runtime mode.

The crashes are real: the worker process runs a test-only backend
(``tests/worker_backends.py``, named by ``REFEREE_WORKER_TEST_BACKEND``) that dies by a
null-pointer read (SIGSEGV) or SIGABRT at its first decode, or never answers. Everything
around it — the pipe, the parent's detection, the back-off, the fresh worker, the CLI and
the language server — is the code users run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from referee.checks import review
from referee.checks.judge import runtime
from referee.checks.judge.answer import answer_forcing
from referee.checks.judge.backend import ChatRequest
from referee.checks.judge.worker import (
    WorkerBackend,
    WorkerCrashed,
    WorkerSpec,
    WorkerUnavailable,
    describe_exit,
)

TESTS = Path(__file__).resolve().parent

# /proc/cpuinfo as two real CPUs report it (first processor; flags shortened to the
# parts that matter plus enough neighbours to be realistic).
SAPPHIRE_RAPIDS = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8488C
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr avx avx2 avx512f avx512bw \
avx512_bf16 amx_bf16 avx512_fp16 amx_tile amx_int8 arch_capabilities
bugs\t\t: spectre_v1 spectre_v2
"""
ICE_LAKE = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr avx avx2 avx512f avx512bw \
avx512_vnni arch_capabilities
"""
GRAVITON = """processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid
CPU implementer\t: 0x41
"""


# ------------------------------------------------------------------ the CPU decision


def test_amx_flags_are_read_from_cpuinfo():
    assert runtime.parse_cpuinfo(SAPPHIRE_RAPIDS).amx == ["amx_bf16", "amx_int8", "amx_tile"]
    assert runtime.parse_cpuinfo(ICE_LAKE).amx == []
    arm = runtime.parse_cpuinfo(GRAVITON)
    assert arm.amx == [] and "asimd" in arm.flags
    assert runtime.parse_cpuinfo(SAPPHIRE_RAPIDS).model == "Intel(R) Xeon(R) Platinum 8488C"


@pytest.mark.parametrize(
    ("cpuinfo", "setting", "remembered", "mode", "falls_back"),
    [
        (SAPPHIRE_RAPIDS, "auto", None, "safe", False),  # AMX: never fast under auto
        (ICE_LAKE, "auto", None, "fast", True),  # no AMX: fast, may fall back once
        (ICE_LAKE, "auto", "safe", "safe", False),  # fast crashed here before
        (GRAVITON, "auto", None, "fast", True),
        (SAPPHIRE_RAPIDS, "fast", None, "fast", False),  # the user's word wins
        (ICE_LAKE, "safe", None, "safe", False),
        (ICE_LAKE, "fast", "safe", "fast", False),
    ],
)
def test_runtime_choice(cpuinfo, setting, remembered, mode, falls_back):
    choice = runtime.choose(setting, runtime.parse_cpuinfo(cpuinfo), remembered)
    assert (choice.mode, choice.may_fall_back) == (mode, falls_back)
    assert choice.why


def test_the_decision_is_remembered_per_cpu(tmp_path: Path):
    memory = tmp_path / "runtime.json"
    amx, other = runtime.parse_cpuinfo(SAPPHIRE_RAPIDS), runtime.parse_cpuinfo(ICE_LAKE)
    assert runtime.remembered(other, memory) is None
    runtime.remember(other, "safe", "fast mode crashed", memory)
    assert runtime.remembered(other, memory) == "safe"
    assert runtime.remembered(amx, memory) is None  # another CPU, another decision
    memory.write_text("not json", encoding="utf-8")  # a broken memory is no memory
    assert runtime.remembered(other, memory) is None


def test_describe_exit():
    assert describe_exit(-11) == "signal 11 (SIGSEGV)"
    assert describe_exit(-6) == "signal 6 (SIGABRT)"
    assert describe_exit(3) == "exit status 3"


# ------------------------------------------------------------------ the worker itself


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A file the model setting accepts; the worker runs tests/worker_backends.py's
    Scripted backend instead of llama.cpp."""
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"GGUF" + bytes(64))
    monkeypatch.setenv("REFEREE_WORKER_TEST_BACKEND", "worker_backends:Scripted")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv("REFEREE_TEST_FAULT", "")
    return path


def _questions(count: int = 2) -> list[ChatRequest]:
    forcing = answer_forcing("def f():\n    return 1\n")
    return [ChatRequest([{"role": "user", "content": "judge"}], forcing=forcing)] * count


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_segfault_is_an_error_here_then_a_fresh_worker_answers(fake_model, monkeypatch):
    backend = WorkerBackend(WorkerSpec(str(fake_model), setting="safe"), timeout_s=30)
    answers = backend.chat_batch(_questions())
    assert json.loads(answers[0].text)["verdict"] == "PASS"
    first = backend.pid
    assert first is not None and first != os.getpid()
    backend.close()
    assert _wait_gone(first)

    marker = fake_model.parent / "crashed-once"
    monkeypatch.setenv("REFEREE_TEST_FAULT", f"segv-once:{marker}")
    with pytest.raises(WorkerCrashed, match=r"^the model process crashed: signal 11 \(SIGSEGV\)$"):
        backend.chat_batch(_questions())
    assert marker.exists()
    # Within the back-off the next call is refused at once, without a new process.
    starts = backend.starts
    with pytest.raises(WorkerUnavailable, match="restarted in"):
        backend.chat_batch(_questions())
    assert backend.starts == starts
    time.sleep(1.1)
    assert json.loads(backend.chat_batch(_questions())[0].text)["verdict"] == "PASS"
    assert backend.starts == starts + 1
    backend.close()


def test_an_abort_and_a_hang_are_reported_and_the_hung_worker_is_killed(fake_model, monkeypatch):
    monkeypatch.setenv("REFEREE_TEST_FAULT", "abort")
    backend = WorkerBackend(WorkerSpec(str(fake_model), setting="safe"), timeout_s=30)
    with pytest.raises(WorkerCrashed, match=r"signal 6 \(SIGABRT\)"):
        backend.chat_batch(_questions())
    monkeypatch.setenv("REFEREE_TEST_FAULT", "hang")
    hung = WorkerBackend(WorkerSpec(str(fake_model), setting="safe"), timeout_s=1.5)
    hung.start()
    pid = hung.pid
    assert pid is not None
    with pytest.raises(WorkerCrashed, match="did not answer in 2 s and was killed"):
        hung.chat_batch(_questions())
    assert _wait_gone(pid)


def test_auto_falls_back_to_safe_mode_once_and_remembers_it(fake_model, monkeypatch):
    monkeypatch.setenv("REFEREE_TEST_FAULT", "segv-fast")  # what an AMX CPU does
    monkeypatch.setattr(runtime, "this_cpu", lambda: runtime.parse_cpuinfo(ICE_LAKE))
    backend = WorkerBackend(WorkerSpec(str(fake_model), setting="auto"), timeout_s=30)
    assert json.loads(backend.chat_batch(_questions())[0].text)["verdict"] == "PASS"
    assert backend.info["mode"] == "safe" and backend.starts == 2
    assert runtime.remembered(runtime.parse_cpuinfo(ICE_LAKE)) == "safe"
    backend.close()
    again = WorkerBackend(WorkerSpec(str(fake_model), setting="auto"), timeout_s=30)
    again.chat_batch(_questions())
    assert again.info["mode"] == "safe" and again.starts == 1  # no second crash
    again.close()


def test_a_crash_in_both_modes_is_not_remembered_as_a_mode_problem(fake_model, monkeypatch):
    monkeypatch.setenv("REFEREE_TEST_FAULT", "segv")
    monkeypatch.setattr(runtime, "this_cpu", lambda: runtime.parse_cpuinfo(ICE_LAKE))
    backend = WorkerBackend(WorkerSpec(str(fake_model), setting="auto"), timeout_s=30)
    with pytest.raises(WorkerCrashed):
        backend.chat_batch(_questions())
    assert backend.starts == 2  # fast, then safe once
    assert runtime.remembered(runtime.parse_cpuinfo(ICE_LAKE)) is None


def test_the_worker_dies_with_its_parent(fake_model, tmp_path: Path):
    """However the parent ends — killed by SIGKILL here, the hardest case — the worker
    does not outlive it."""
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, time\n"
        "from referee.checks.judge.worker import WorkerBackend, WorkerSpec\n"
        f"b = WorkerBackend(WorkerSpec({str(fake_model)!r}, setting='safe'))\n"
        "b.start()\n"
        "print(b.pid, flush=True)\n"
        "time.sleep(600)\n",
        encoding="utf-8",
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        worker = int(parent.stdout.readline())
        assert _alive(worker)
        parent.kill()
        parent.wait(timeout=10)
        assert _wait_gone(worker), "the model process outlived its parent"
    finally:
        parent.kill()


# ------------------------------------------------------------------ the CLI


PLACEHOLDER_AND_REAL = '''def parse(text):
    """Parse the configuration."""
    raise NotImplementedError


def add(a: int, b: int) -> int:
    """The sum of a and b."""
    return a + b
'''
ONLY_REAL = '''def add(a: int, b: int) -> int:
    """The sum of a and b."""
    return a + b
'''


def _project(root: Path, model: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "referee.toml").write_text(
        f'[judge]\nmodel = "{model}"\naudit-rate = 0.0\n', encoding="utf-8"
    )
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_check_judge_reports_l0_l1_and_one_line_when_the_model_crashes(
    fake_model, tmp_path: Path, monkeypatch, referee
):
    monkeypatch.setenv("REFEREE_TEST_FAULT", "segv")
    root = _project(tmp_path / "p", fake_model, {"mathx.py": PLACEHOLDER_AND_REAL})
    # the reading judge's crash alone: with the execution checks on, writing their oracles
    # crashes first and says so in a line of its own
    with (root / "referee.toml").open("a", encoding="utf-8") as config:
        config.write("[execution]\nenabled = false\n")
    done = referee("check", "--judge-all", "--judge", "mathx.py", cwd=root)
    assert done.returncode == 1, done.stderr  # L0 found an error: exit 1, as without judge
    assert "REF101" in done.stdout  # the placeholder: L0's finding is in the report
    assert "REF402" in done.stdout and "the model process crashed: signal 11" in done.stdout
    crash_lines = [line for line in done.stderr.splitlines() if "crashed" in line]
    assert len(crash_lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    queue = review.read(root)
    (item,) = queue.pending()
    assert item.subject == "add" and "signal 11" in " ".join(item.reasons)


def test_check_judge_exits_2_when_the_crash_is_the_only_failure(
    fake_model, tmp_path: Path, monkeypatch, referee
):
    monkeypatch.setenv("REFEREE_TEST_FAULT", "segv")
    root = _project(tmp_path / "p", fake_model, {"mathx.py": ONLY_REAL})
    done = referee("check", "--judge-all", "mathx.py", cwd=root)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "REF402" in done.stdout  # the item is UNCLEAR, never passed
    # and without the fault the same command passes: the exit 2 came from the crash
    monkeypatch.setenv("REFEREE_TEST_FAULT", "")
    for line in (root / ".referee" / "review.jsonl").read_text().splitlines():
        assert "signal 11" in line
    (root / ".referee" / "review.jsonl").unlink()
    assert referee("check", "--judge-all", "mathx.py", cwd=root).returncode == 0


BUGGY = '''def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains."""
    count = 0
    for ch in text[1:]:
        if ch.lower() in "aeiou":
            count += 1
    return count
'''
VOWEL_TESTS = """from text import count_vowels


def test_vowels():
    assert count_vowels("aeiou") == 5
"""


def test_arbitrate_is_unclear_and_touches_nothing_when_the_model_crashes(
    fake_model, tmp_path: Path, monkeypatch, referee
):
    monkeypatch.setenv("REFEREE_TEST_FAULT", "segv")
    root = tmp_path / "p"
    (root / "tests").mkdir(parents=True)
    (root / "referee.toml").write_text(f'[arbitration]\nmodel = "{fake_model}"\n')
    (root / "text.py").write_text(BUGGY)
    (root / "tests" / "test_text.py").write_text(VOWEL_TESTS)
    done = referee(
        "arbitrate", "tests/test_text.py::test_vowels", "--apply", "--format", "json", cwd=root
    )
    assert done.returncode == 3, (done.stdout, done.stderr)
    verdict = json.loads(done.stdout)
    assert verdict["verdict"] == "UNCLEAR"
    assert "the model process crashed: signal 11 (SIGSEGV)" in verdict["reason"]
    assert (root / "text.py").read_text() == BUGGY
    assert (root / "tests" / "test_text.py").read_text() == VOWEL_TESTS


# ------------------------------------------------------------------ the real model


@pytest.mark.model
def test_the_real_model_answers_from_its_worker_in_safe_mode(small_model: Path):
    from referee.checks.judge.answer import answer_grammar

    text = "def add(a, b):\n    return a - b\n"
    # threads: None, the worker's default ($REFEREE_JUDGE_THREADS, the suite's share of the
    # cores per xdist worker): two spinning threads beside two busy workers made this 36 s
    backend = WorkerBackend(WorkerSpec(str(small_model), threads=None, setting="safe"))
    try:
        requests = [
            ChatRequest(
                [
                    {"role": "system", "content": "You review code. Answer with JSON only."},
                    {"role": "user", "content": f"```python\n{text}```\nDoes it add? ({name})"},
                ],
                grammar=answer_grammar(text),
                forcing=answer_forcing(text),
                max_tokens=80,
                seed=0,
            )
            for name in ("strict", "lenient")
        ]
        answers = backend.chat_batch(requests)
        for answer in answers:
            parsed = json.loads(answer.text)
            assert parsed["verdict"] in ("PASS", "REJECT")
            assert all(q in text for q in parsed["evidence"])
        assert backend.info["mode"] == "safe"
        assert backend.info["extra_buffers"] is False  # llama.cpp was given the safe load
        assert backend.pid != os.getpid()
    finally:
        backend.close()


@pytest.mark.model
def test_doctor_loads_the_real_model_and_says_how_fast(small_model: Path, tmp_path, referee):
    (tmp_path / "referee.toml").write_text("", encoding="utf-8")
    done = referee("doctor", "--runtime", "safe", "--judge-model", str(small_model), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "safe mode" in done.stdout and "tokens/s" in done.stdout
    assert "ok: the judge's model runs here" in done.stdout


def test_doctor_exits_2_with_the_reason_when_the_model_crashes(
    fake_model, tmp_path, referee, monkeypatch
):
    monkeypatch.setenv("REFEREE_TEST_FAULT", "segv")
    (tmp_path / "referee.toml").write_text('[judge]\nruntime = "safe"\n', encoding="utf-8")
    done = referee("doctor", "--judge-model", str(fake_model), cwd=tmp_path)
    assert done.returncode == 2
    assert "the model process crashed: signal 11 (SIGSEGV)" in done.stderr
    assert "amx:" in done.stdout and "runtime:" in done.stdout
    assert "sandbox:" in done.stdout and "audit-hook" in done.stdout


def test_ctrl_c_while_the_model_works_still_reports_l0_l1(fake_model, tmp_path, monkeypatch):
    monkeypatch.setenv("REFEREE_TEST_FAULT", "hang")
    root = _project(tmp_path / "p", fake_model, {"mathx.py": PLACEHOLDER_AND_REAL})
    (root / "referee.toml").write_text(
        f'[judge]\nmodel = "{fake_model}"\nruntime = "safe"\n', encoding="utf-8"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee", "check", "--judge-all", "mathx.py"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # an ignored SIGINT is inherited (a run started in the background by a script)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    worker = None
    while worker is None and time.monotonic() < deadline:  # wait until the model works
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    if ppid == proc.pid and b"_worker_main" in handle.read():
                        worker = int(entry)
            except (OSError, ValueError):
                continue
        time.sleep(0.1)
    assert worker is not None
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "REF101" in out and "judge interrupted" in err
    assert _wait_gone(worker)


def test_a_worker_killed_while_idle_is_replaced_at_once(fake_model):
    backend = WorkerBackend(WorkerSpec(str(fake_model), setting="safe"), timeout_s=30)
    backend.start()
    first = backend.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)  # as the OOM killer would, between two saves
    assert _wait_gone(first)
    assert json.loads(backend.chat_batch(_questions())[0].text)["verdict"] == "PASS"
    assert backend.pid != first and backend.starts == 2
    backend.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process names are Linux's")
def test_the_model_process_is_named_for_ps_top_and_accounting(fake_model):
    backend = WorkerBackend(WorkerSpec(str(fake_model), setting="safe"), timeout_s=30)
    backend.start()
    try:
        assert backend.pid is not None
        with open(f"/proc/{backend.pid}/comm", encoding="utf-8") as comm:
            assert comm.read().strip() == "referee-model"
    finally:
        backend.close()
