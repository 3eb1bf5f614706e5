"""The sandbox against hostile programs, with real subprocesses.

Each hostile program runs twice: with the namespaces the kernel grants, and with them
switched off (``REFEREE_SANDBOX_NAMESPACES=0``), where the audit hook is what remains.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from referee.checks.sandbox import (
    Limits,
    SandboxError,
    SandboxResult,
    evaluate,
    run_pytest,
    values_equal,
)

QUICK = Limits(timeout_s=2.0, cpu_s=2, memory_mb=256, output_kb=64)


@pytest.fixture(params=["kernel", "hook-only"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("REFEREE_SANDBOX_DISABLE", raising=False)
    if request.param == "hook-only":
        # what is left without any kernel boundary: allowed only in the weak mode
        monkeypatch.setenv("REFEREE_SANDBOX_NAMESPACES", "0")
        monkeypatch.setenv("REFEREE_SANDBOX_DISABLE", "landlock,seccomp")
        monkeypatch.setenv("REFEREE_SANDBOX", "weak")
    else:
        monkeypatch.delenv("REFEREE_SANDBOX_NAMESPACES", raising=False)
        monkeypatch.delenv("REFEREE_SANDBOX", raising=False)
    return request.param


def _not_ok(result: SandboxResult, *statuses: str) -> None:
    assert result.status != "ok", result
    if statuses:
        assert result.status in statuses, result
    assert result.duration_s < 8, result
    assert "\n" not in result.message and result.message


# -- hostile programs ---------------------------------------------------------------------


def test_infinite_loop_times_out(mode: str) -> None:
    result = evaluate(
        "while True:\n    pass\n", "1", limits=QUICK.model_copy(update={"timeout_s": 1})
    )
    _not_ok(result, "timeout")
    assert result.message == "timed out after 1 s"
    assert 1 <= result.duration_s < 3


def test_cpu_limit_stops_a_busy_loop_before_the_wall_clock(mode: str) -> None:
    limits = QUICK.model_copy(update={"timeout_s": 6, "cpu_s": 1})
    result = evaluate("while True:\n    pass\n", "1", limits=limits)
    _not_ok(result, "timeout")
    assert result.message == "CPU time limit of 1 s exceeded"
    assert result.duration_s < 5


def test_fork_bomb_is_refused(mode: str) -> None:
    result = evaluate("import os\nwhile True:\n    os.fork()\n", "1", limits=QUICK)
    _not_ok(result, "error", "killed", "timeout")


def test_process_limit_caps_children_where_the_kernel_enforces_it(mode: str) -> None:
    code = (
        "import os, time\n"
        "def spawn():\n"
        "    started = 0\n"
        "    for _ in range(20):\n"
        "        try:\n"
        "            pid = os.fork()\n"
        "        except OSError:\n"
        "            return started\n"
        "        if pid == 0:\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        "        started += 1\n"
        "    return started\n"
    )
    result = evaluate(code, "spawn()", limits=QUICK.model_copy(update={"processes": 3}))
    if "nproc" not in result.containment:
        pytest.skip(f"RLIMIT_NPROC does not bind here (containment: {result.containment})")
    assert result.status == "ok", result
    assert result.value == "3"


def test_children_that_leave_the_process_group_die_with_the_run(mode: str) -> None:
    code = (
        "import os, sys, time\n"
        "print(os.getcwd(), flush=True)\n"
        "for _ in range(3):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        time.sleep(60)\n"
        "        os._exit(0)\n"
        "time.sleep(60)\n"
    )
    limits = QUICK.model_copy(update={"processes": 5, "timeout_s": 1})
    result = evaluate(code, "1", limits=limits)
    _not_ok(result, "timeout")
    directory = result.stdout.split("\n", 1)[0].strip()
    assert directory.startswith(os.sep), result.stdout
    time.sleep(0.2)
    survivors = [pid for pid in _pids() if directory.encode() in _cmdline_and_environ(pid)]
    assert survivors == []
    assert not Path(directory).exists()


def test_ten_gigabyte_allocation_hits_the_memory_limit(mode: str) -> None:
    result = evaluate("data = bytearray(10 * 1024**3)\n", "len(data)", limits=QUICK)
    _not_ok(result, "memory")
    assert "256 MB" in result.message


@pytest.mark.parametrize(
    "code",
    [
        "def down(n):\n    return down(n + 1)\n",
        "import sys\nsys.setrecursionlimit(10**7)\ndef down(n):\n    return down(n + 1) + 1\n",
    ],
    ids=["default-limit", "raised-limit"],
)
def test_deep_recursion_ends(mode: str, code: str) -> None:
    result = evaluate(code, "down(0)", limits=QUICK.model_copy(update={"timeout_s": 1}))
    _not_ok(result, "error", "killed", "memory", "timeout")


def test_network_connection_never_arrives(mode: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        code = (
            "import socket\n"
            f"connection = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
            "connection.sendall(b'leak')\n"
        )
        result = evaluate(code, "1", limits=QUICK)
        listener.settimeout(0.3)
        with pytest.raises(TimeoutError):
            listener.accept()
    _not_ok(result, "error")


@pytest.mark.parametrize(
    "attack",
    [
        "open(TARGET, 'w').write('escaped')",
        "import os\nos.close(os.open(TARGET, os.O_WRONLY | os.O_CREAT))",
        "import pathlib\npathlib.Path(TARGET).write_text('escaped')",
        "open('inside.txt', 'w').write('x')\nimport os\nos.rename('inside.txt', TARGET)",
        "import os\nos.symlink(TARGET, 'link')\nopen('link', 'w').write('escaped')",
        "import shutil\nopen('inside.txt', 'w').write('x')\nshutil.copyfile('inside.txt', TARGET)",
        # relative to a descriptor of the target's directory, which the open event hides
        "import os\nd = os.open(os.path.dirname(TARGET), os.O_RDONLY)\n"
        "os.close(os.open('escaped.txt', os.O_WRONLY | os.O_CREAT, dir_fd=d))",
        "import os\nd = os.open(os.path.dirname(TARGET), os.O_RDONLY)\n"
        "os.mkdir('escaped.txt', dir_fd=d)",
        "import sqlite3\nsqlite3.connect(TARGET).execute('create table t (x)')",
        "import sqlite3\nsqlite3.connect('file:' + TARGET + '?mode=rwc', uri=True)",
        "import os\nos.mkfifo(TARGET)",
        "import posix\nposix.mknod(TARGET)",
    ],
    ids=[
        "open",
        "os.open",
        "pathlib",
        "rename",
        "symlink",
        "copyfile",
        "open-dir_fd",
        "mkdir-dir_fd",
        "sqlite3",
        "sqlite3-uri",
        "mkfifo",
        "mknod",
    ],
)
def test_writing_outside_its_directory_is_refused(mode: str, attack: str, tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    result = evaluate(f"TARGET = {str(target)!r}\n{attack}\n", "1", limits=QUICK)
    _not_ok(result, "error")
    if mode == "hook-only":
        assert "sandbox:" in result.message
    else:  # the hook, or the kernel: the directory is not even there to see
        assert result.message.startswith(("PermissionError", "FileNotFoundError", "OSError"))
    assert not target.exists()


def test_removing_outside_through_a_directory_descriptor_is_refused(
    mode: str, tmp_path: Path
) -> None:
    victim = tmp_path / "keep.txt"
    victim.write_text("kept")
    attack = (
        f"import os\nd = os.open({str(tmp_path)!r}, os.O_RDONLY)\nos.unlink('keep.txt', dir_fd=d)\n"
    )
    _not_ok(evaluate(attack, "1", limits=QUICK), "error")
    assert victim.read_text() == "kept"


def test_descriptors_and_databases_inside_its_directory_still_work(mode: str) -> None:
    code = (
        "import os, sqlite3, shutil\n"
        "os.mkdir('sub')\n"
        "d = os.open('sub', os.O_RDONLY)\n"
        "os.close(os.open('f.txt', os.O_WRONLY | os.O_CREAT, dir_fd=d))\n"
        "os.unlink('f.txt', dir_fd=d)\n"
        "os.mkfifo('fifo')\n"
        "sqlite3.connect('db.sqlite').execute('create table t (x)')\n"
        "sqlite3.connect(':memory:').execute('select 1')\n"
        "shutil.rmtree('sub')\n"
        "def f():\n    return sorted(os.listdir('.'))\n"
    )
    result = evaluate(code, "f()", limits=QUICK)
    assert result.status == "ok", result
    assert "'db.sqlite'" in result.value and "'fifo'" in result.value


def test_the_process_spawner_behind_subprocess_is_refused(mode: str, tmp_path: Path) -> None:
    """``_posixsubprocess.fork_exec`` starts a process without an audit event."""
    marker = tmp_path / "ran"
    code = (
        "import _posixsubprocess, os\n"
        "r, w = os.pipe()\n"
        f"_posixsubprocess.fork_exec(['/bin/touch', {str(marker)!r}], [b'/bin/touch'], True, (),"
        " None, None, -1, -1, -1, -1, -1, -1, r, w, True, False, 0, None, None, None, -1, None,"
        " False)\n"
    )
    _not_ok(evaluate(code, "1", limits=QUICK), "error")
    assert not marker.exists()


def test_the_parents_environment_is_not_inherited(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sentinel-7f3c9a"
    monkeypatch.setenv("REFEREE_TEST_SECRET", secret)
    result = evaluate("import os\n", "os.environ['REFEREE_TEST_SECRET']", limits=QUICK)
    _not_ok(result, "error")
    assert result.message == "KeyError: 'REFEREE_TEST_SECRET'"
    assert secret not in result.stdout + result.stderr


def test_other_processes_environments_are_not_readable(mode: str) -> None:
    secret = "sentinel-51d0be"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"],
        env={**os.environ, "REFEREE_TEST_SECRET": secret},
    )
    try:
        code = (
            "import os\n"
            "def scan():\n"
            "    found = []\n"
            "    for pid in os.listdir('/proc'):\n"
            "        try:\n"
            "            with open(f'/proc/{pid}/environ', 'rb') as handle:\n"
            "                found.append(handle.read().decode('latin-1'))\n"
            "        except OSError:\n"
            "            pass\n"
            "    return '\\n'.join(found)\n"
        )
        result = evaluate(code, "scan()", limits=QUICK)
    finally:
        holder.kill()
        holder.wait()
    assert result.status == "ok", result
    assert secret not in (result.value or "")


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_killing_its_parent_fails(mode: str, signum: int) -> None:
    result = evaluate(f"import os\nos.kill(os.getppid(), {int(signum)})\n", "1", limits=QUICK)
    _not_ok(result, "error", "killed")
    # We are the parent, and still here to check.
    assert os.getpid() > 0


def test_printing_a_gigabyte_is_cut_off(mode: str) -> None:
    code = "import sys\nfor _ in range(1024):\n    sys.stdout.write('x' * 1024 * 1024)\n"
    result = evaluate(code, "1", limits=QUICK)
    _not_ok(result, "output-limit")
    assert len(result.stdout) + len(result.stderr) <= 64 * 1024
    assert result.duration_s < 2


def test_file_size_limit(mode: str) -> None:
    limits = QUICK.model_copy(update={"file_size_mb": 1})
    result = evaluate("open('big', 'wb').write(b'x' * 4 * 1024 * 1024)\n", "1", limits=limits)
    _not_ok(result, "error", "killed")
    assert "File too large" in result.message or "file size" in result.message


def test_reading_stdin_gets_end_of_file(mode: str) -> None:
    result = evaluate("", "input()", limits=QUICK)
    _not_ok(result, "error")
    assert result.message.startswith("EOFError")


def test_a_huge_return_value_is_refused(mode: str) -> None:
    result = evaluate("", "'x' * (8 * 1024 * 1024)", limits=QUICK)
    _not_ok(result, "output-limit")
    assert result.value is None


# -- normal programs ----------------------------------------------------------------------

REFERENCE = """
import math

def count_vowels(text):
    return sum(1 for ch in text.lower() if ch in "aeiouäöü")

def mean(values):
    return sum(values) / len(values)

def words(text):
    return text.split()

def histogram(text):
    counts = {}
    for ch in text:
        counts[ch] = counts.get(ch, 0) + 1
    return counts

def nothing():
    return None

def ratio(a, b):
    return a / b

def pairs():
    return (1, 2.5), {3, 4}

def not_a_number():
    return math.nan
"""


@pytest.mark.parametrize(
    ("call", "value", "value_json"),
    [
        ("count_vowels('aeiou')", "5", 5),
        ("count_vowels('Größe über')", "4", 4),
        ("words('añejo naïve 東京')", "['añejo', 'naïve', '東京']", ["añejo", "naïve", "東京"]),
        ("histogram('abca')", "{'a': 2, 'b': 1, 'c': 1}", {"a": 2, "b": 1, "c": 1}),
        ("nothing()", "None", None),
        ("mean([1, 2, 4])", "2.3333333333333335", 2.3333333333333335),
        ("pairs()", "((1, 2.5), {3, 4})", None),
        ("not_a_number()", "nan", None),
        ("'é' * 3", "'ééé'", "ééé"),
    ],
)
def test_values_come_back(call: str, value: str, value_json: object) -> None:
    result = evaluate(REFERENCE, call, limits=QUICK)
    assert result.status == "ok", result
    assert result.message == "ok"
    assert result.value == value
    assert result.value_json == value_json
    assert result.returncode == 0


def test_exceptions_are_errors_with_type_and_message() -> None:
    result = evaluate(REFERENCE, "ratio(1, 0)", limits=QUICK)
    assert result.status == "error"
    assert result.message == "ZeroDivisionError: division by zero"
    assert result.value is None
    assert "ZeroDivisionError" in result.stderr


def test_errors_in_the_code_itself() -> None:
    broken = evaluate("def f(:\n", "f()", limits=QUICK)
    assert broken.status == "error"
    assert broken.message.startswith("SyntaxError")
    raising = evaluate("raise ValueError('bad module')\n", "1", limits=QUICK)
    assert (raising.status, raising.message) == ("error", "ValueError: bad module")
    exiting = evaluate("import sys\nsys.exit(3)\n", "1", limits=QUICK)
    assert (exiting.status, exiting.message) == ("error", "SystemExit: 3")


def test_print_goes_to_stdout_and_never_into_the_value() -> None:
    result = evaluate("print('hello', 42)\n", "'value'", limits=QUICK)
    assert (result.status, result.value, result.stdout) == ("ok", "'value'", "hello 42\n")


def test_a_value_is_not_held_up_by_threads_or_atexit() -> None:
    code = (
        "import atexit, os, threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,)).start()\n"
        "atexit.register(time.sleep, 60)\n"
        "os._exit = None\n"
    )
    # a thread is a task RLIMIT_NPROC counts: it needs one process allowed
    result = evaluate(code, "'done'", limits=QUICK.model_copy(update={"processes": 1}))
    assert (result.status, result.value) == ("ok", "'done'")
    assert result.duration_s < 1.5


def test_floats_compare_with_tolerance() -> None:
    computed = evaluate("", "0.1 + 0.2", limits=QUICK)
    assert computed.value == "0.30000000000000004"
    assert values_equal(computed, "0.3")
    assert not values_equal(computed, "0.3001")
    assert values_equal(evaluate("import math\n", "[math.nan, 1e-13]", limits=QUICK), "[nan, 0]")


def test_files_are_written_into_its_directory() -> None:
    result = evaluate(
        "import json\ndef load():\n    return json.load(open('data/input.json'))\n",
        "load()",
        files={"data/input.json": '{"k": [1, 2]}'},
        limits=QUICK,
    )
    assert (result.status, result.value_json) == ("ok", {"k": [1, 2]})


@pytest.mark.parametrize("name", ["/etc/passwd", "../outside.py", "a/../../b.py", ""])
def test_file_names_must_stay_inside(name: str) -> None:
    with pytest.raises(SandboxError, match="relative path inside"):
        evaluate("", "1", files={name: "x"}, limits=QUICK)


def test_environment_is_scrubbed_and_directory_removed() -> None:
    result = evaluate("import os\n", "(sorted(os.environ), os.getcwd())", limits=QUICK)
    assert result.status == "ok", result
    names, directory = result.value_json
    assert set(names) <= {
        "PATH",
        "LANG",
        "LC_ALL",
        "HOME",
        "TMPDIR",
        "PYTHONHASHSEED",
        "PYTHONIOENCODING",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONNOUSERSITE",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
        "NO_COLOR",
    }
    assert not Path(directory).exists()


def test_a_directory_made_read_only_is_still_removed() -> None:
    code = "import os\nos.makedirs('locked/deep')\nopen('locked/deep/f', 'w').write('x')\n"
    code += "os.chmod('locked/deep', 0o500)\nos.chmod('locked', 0o500)\n"
    result = evaluate(code, "os.getcwd()", limits=QUICK)
    assert result.status == "ok", result
    assert not Path(result.value_json).exists()


def test_hash_seed_is_fixed() -> None:
    first = evaluate("", "hash('referee')", limits=QUICK)
    second = evaluate("", "hash('referee')", limits=QUICK)
    assert first.status == "ok" and first.value == second.value


def test_containment_is_reported() -> None:
    result = evaluate("", "1", limits=QUICK)
    assert "rlimits" in result.containment
    assert "audit-hook" in result.containment


def test_namespaces_switched_off_leave_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_SANDBOX_NAMESPACES", "0")
    result = evaluate("", "1", limits=QUICK.model_copy(update={"sandbox": "weak"}))
    assert "netns" not in result.containment
    assert "audit-hook" in result.containment


def test_concurrent_runs_keep_their_values_apart() -> None:
    results: dict[int, SandboxResult] = {}

    def run(n: int) -> None:
        results[n] = evaluate("", f"{n} * {n}", limits=QUICK)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {n: r.value for n, r in results.items()} == {n: str(n * n) for n in range(6)}


# -- pytest -------------------------------------------------------------------------------

MODULE = "def count_vowels(text):\n    return sum(ch in 'aeiou' for ch in text)\n"


def test_run_pytest_passes() -> None:
    test = "from text import count_vowels\n\ndef test_count():\n"
    test += "    assert count_vowels('aeiou') == 5\n"
    result = run_pytest({"text.py": MODULE, "test_text.py": test}, ["-q"], limits=QUICK)
    assert result.status == "ok", result.stdout + result.stderr
    assert result.message.startswith("1 passed in ")
    assert result.returncode == 0


def test_run_pytest_failures_are_errors_with_the_summary() -> None:
    test = (
        "from text import count_vowels\n\n"
        "def test_right():\n    assert count_vowels('aeiou') == 5\n\n"
        "def test_wrong():\n    assert count_vowels('aeiou') == 4\n"
    )
    result = run_pytest({"text.py": MODULE, "test_text.py": test}, ["-q"], limits=QUICK)
    assert result.status == "error"
    assert result.message.startswith("1 failed, 1 passed in ")
    assert result.returncode == 1


def test_run_pytest_with_no_tests() -> None:
    result = run_pytest({"text.py": MODULE}, ["-q"], limits=QUICK)
    assert result.status == "error"
    assert result.returncode == 5
    assert "no tests ran" in result.message


def test_run_pytest_contains_a_hanging_test() -> None:
    test = "def test_hang():\n    while True:\n        pass\n"
    limits = QUICK.model_copy(update={"timeout_s": 1})
    result = run_pytest({"test_hang.py": test}, ["-q"], limits=limits)
    assert result.status == "timeout"


def test_run_pytest_tests_cannot_write_outside(tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    test = f"def test_escape():\n    open({str(target)!r}, 'w').write('x')\n"
    result = run_pytest({"test_escape.py": test}, ["-q"], limits=QUICK)
    assert result.status == "error"
    assert "sandbox: writing outside" in result.stdout
    assert not target.exists()


# -- values -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("0.30000000000000004", "0.3", True),
        ("1e-13", "0", True),
        ("1.0", "1.0001", False),
        ("nan", "nan", True),
        ("[nan, 1]", "[nan, 1]", True),
        ("inf", "-inf", False),
        ("[1, 2]", "(1, 2)", False),
        ("[1, [2, 3.0]]", "[1, [2, 3]]", True),
        ("{'a': 0.1}", "{'a': 0.10000000000000002}", True),
        ("{'a': 1}", "{'b': 1}", False),
        ("{0.30000000000000004: 'x'}", "{0.3: 'x'}", True),
        ("{1, 2, 3}", "{3, 2, 1}", True),
        ("{1, 2}", "{1, 3}", False),
        ("set()", "set()", True),
        ("frozenset({0.1})", "frozenset({0.1000000000000001})", True),
        ("'añejo'", "'añejo'", True),
        ("'a'", "'b'", False),
        ("None", "None", True),
        ("None", "0", False),
        ("(1+2j)", "(1+2j)", True),
        ("<Thing>", "<Thing>", True),
        ("<Thing>", "<Other>", False),
    ],
)
def test_values_equal(a: str, b: str, equal: bool) -> None:
    assert values_equal(a, b) is equal
    assert values_equal(b, a) is equal


def test_a_failed_result_equals_nothing() -> None:
    failed = SandboxResult(status="error", message="ZeroDivisionError: division by zero")
    assert not values_equal(failed, failed)
    assert not values_equal(failed, "None")


def test_limits_are_validated_and_frozen() -> None:
    with pytest.raises(ValidationError):
        Limits(timeout_s=0)
    with pytest.raises(ValidationError):
        Limits(processes=-1)
    with pytest.raises(ValidationError):
        Limits().timeout_s = 3  # type: ignore[misc]


# -- helpers ------------------------------------------------------------------------------


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _cmdline_and_environ(pid: int) -> bytes:
    data = b""
    for name in ("cmdline", "environ"):
        with contextlib.suppress(OSError):
            data += Path(f"/proc/{pid}/{name}").read_bytes()
    return data
