"""The sandbox against hostile programs, with real subprocesses.

Each hostile program runs twice: with the namespaces the kernel grants, and with them
switched off (``REFEREE_SANDBOX_NAMESPACES=0``), where the audit hook is what remains.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from referee.checks import sandbox_containment, sandbox_runtime
from referee.checks.sandbox import (
    Limits,
    SandboxError,
    SandboxResult,
    boundary_problem,
    evaluate,
    run_pytest,
    values_equal,
)
from referee.checks.sandbox_containment import MECHANISMS, seatbelt_profile

QUICK = Limits(timeout_s=2.0, cpu_s=2, memory_mb=256, output_kb=64)


@pytest.fixture(params=["kernel", "hook-only"])
def mode(
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    probe_account: tuple[int, str, list[str]] | None,
) -> str:
    monkeypatch.delenv("REFEREE_SANDBOX_DISABLE", raising=False)
    if request.param == "hook-only":
        # what is left without any kernel boundary: allowed only in the weak mode
        monkeypatch.setenv("REFEREE_SANDBOX_NAMESPACES", "0")
        monkeypatch.setenv("REFEREE_SANDBOX_DISABLE", "landlock,seccomp")
        monkeypatch.setenv("REFEREE_SANDBOX", "weak")
        if os.getuid() == 0 and not sandbox_runtime.can_drop_root():
            # Nothing would stop the hostile programs but the hook, and they would run as
            # root: run them as the unprivileged probe account instead.
            if probe_account is None:
                pytest.skip("as root, hook-only runs need an unprivileged account")
            probe = Probe("user", probe_account, "landlock")
            hook_only = "bwrap,userns,landlock,seccomp"

            def evaluate_as_user(code, call, *, limits=Limits(), files=None):  # noqa: B008
                return probe.run(
                    code, call, limits=limits, files=files, disable=hook_only, mode="weak"
                )

            def run_pytest_as_user(files, args, *, limits=Limits()):  # noqa: B008
                return probe.run(
                    kind="pytest",
                    files=files,
                    args=args,
                    limits=limits,
                    disable=hook_only,
                    mode="weak",
                )

            monkeypatch.setitem(globals(), "evaluate", evaluate_as_user)
            monkeypatch.setitem(globals(), "run_pytest", run_pytest_as_user)
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
def test_writing_outside_its_directory_is_refused(mode: str, attack: str, reachable: Path) -> None:
    reachable.chmod(0o777)  # only the sandbox stands in the way
    target = reachable / "escaped.txt"
    result = evaluate(f"TARGET = {str(target)!r}\n{attack}\n", "1", limits=QUICK)
    _not_ok(result, "error")
    if mode == "hook-only":
        assert "sandbox:" in result.message
    else:  # the hook, or the kernel: the directory is not even there to see
        assert result.message.startswith(("PermissionError", "FileNotFoundError", "OSError"))
    assert not target.exists()


def test_removing_outside_through_a_directory_descriptor_is_refused(
    mode: str, reachable: Path
) -> None:
    reachable.chmod(0o777)
    victim = reachable / "keep.txt"
    victim.write_text("kept")
    attack = f"import os\nd = os.open({str(reachable)!r}, os.O_RDONLY)\n"
    attack += "os.unlink('keep.txt', dir_fd=d)\n"
    _not_ok(evaluate(attack, "1", limits=QUICK), "error")
    assert victim.read_text() == "kept"


HOOK_HOLES = {
    # the audit hook's known holes (realworld README §3), each closed in the hook itself
    "hard-link": "import os\nos.link(VICTIM, 'inside')\nopen('inside', 'w').write('escaped')\n",
    "dir_fd-after-chdir": (
        "import os\nos.mkdir('sub')\nhere = os.open('.', os.O_RDONLY)\nos.chdir('sub')\n"
        "up = os.open('..', os.O_RDONLY, dir_fd=here)\n"
        "name = os.path.relpath(VICTIM, os.path.dirname(os.path.dirname(os.getcwd())))\n"
        "os.write(os.open(name, os.O_WRONLY | os.O_TRUNC, dir_fd=up), b'escaped')\n"
    ),
    "chdir-outside": (
        "import os\nos.chdir(os.path.dirname(VICTIM))\nopen('victim.txt', 'w').write('escaped')\n"
    ),
    "fchmod-read-only-descriptor": "import os\nos.chmod(os.open(VICTIM, os.O_RDONLY), 0o777)\n",
    "utime-read-only-descriptor": "import os\nos.utime(os.open(VICTIM, os.O_RDONLY), (0, 0))\n",
    "mkfifo-original": (
        "import os\nFIFO = os.path.dirname(VICTIM) + '/fifo'\n"
        "for cell in os.mkfifo.__closure__ or ():\n"
        "    if getattr(cell.cell_contents, '__name__', '') == 'mkfifo':\n"
        "        cell.cell_contents(FIFO)\n"
        "os.mkfifo.__kwdefaults__['_original'](FIFO)\n"
    ),
    "hook-neutered-by-gc": "import gc\nfound = gc.get_objects()\n",
    # the wrapper of os.open, made to call the original without the check
    "hook-code-swapped": "import os\nos.open.__code__ = (lambda *a, **k: 1).__code__\n",
    # ... or a function the wrappers call, reached through a closure
    "hook-closure-code-swapped": (
        "import os\n"
        "for cell in os.mkfifo.__closure__ or ():\n"
        "    if callable(cell.cell_contents):\n"
        "        cell.cell_contents.__code__ = (lambda *a, **k: True).__code__\n"
    ),
    "reload-posix": "import importlib, posix\nimportlib.reload(posix)\n",
}


@pytest.mark.parametrize("hole", list(HOOK_HOLES), ids=list(HOOK_HOLES))
def test_the_hooks_known_holes_are_closed(mode: str, hole: str, reachable: Path) -> None:
    reachable.chmod(0o777)
    victim = reachable / "victim.txt"
    victim.write_text("kept")
    victim.chmod(0o666)
    before = victim.stat()
    result = evaluate(f"VICTIM = {str(victim)!r}\n{HOOK_HOLES[hole]}", "1", limits=QUICK)
    _not_ok(result, "error")
    if mode == "hook-only":
        assert "sandbox:" in result.message
    after = victim.stat()
    assert victim.read_text() == "kept"
    assert (after.st_mode, after.st_mtime_ns) == (before.st_mode, before.st_mtime_ns)
    assert sorted(p.name for p in reachable.iterdir()) == ["victim.txt"]


def test_a_unix_socket_given_as_a_plain_int_family_is_refused_by_the_hook(
    monkeypatch: pytest.MonkeyPatch, reachable: Path
) -> None:
    """With a network namespace the hook allows sockets but not path-named unix ones (they
    reach the host's daemons in any namespace); ``_socket.socket(1, 1)`` has an int family."""
    monkeypatch.setenv("REFEREE_SANDBOX_DISABLE", "seccomp")  # the hook, not seccomp, refuses
    monkeypatch.delenv("REFEREE_SANDBOX", raising=False)
    code = "import _socket\ns = _socket.socket(1, 1)\ns.connect('/nonexistent/agent.sock')\n"
    result = evaluate(code, "1", limits=QUICK)
    _not_ok(result, "error")
    assert result.message == "PermissionError: sandbox: network access is not allowed", result


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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process names are Linux's")
def test_the_sandboxed_process_is_named_for_ps_top_and_accounting() -> None:
    code = "def comm():\n    with open('/proc/self/comm') as f:\n        return f.read().strip()\n"
    result = evaluate(code, "comm()", limits=QUICK)
    assert (result.status, result.value) == ("ok", "'referee-sandbox'"), result


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
        # numerical libraries' thread pools kept to one thread (no processes to spare)
        "OPENBLAS_NUM_THREADS",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        # glibc's malloc arenas per thread, two: each reserved 64 MB under RLIMIT_AS
        "MALLOC_ARENA_MAX",
    }
    assert not Path(directory).exists()


def test_a_directory_made_read_only_is_still_removed() -> None:
    code = "import os\nos.makedirs('locked/deep')\nopen('locked/deep/f', 'w').write('x')\n"
    code += "os.chmod('locked/deep', 0o500)\nos.chmod('locked', 0o500)\n"
    result = evaluate(code, "os.getcwd()", limits=QUICK)
    if "seccomp-nosocket" in result.containment:
        pytest.skip("without namespaces, seccomp refuses chmod (docs/sandbox.md)")
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


# -- the kernel boundary ------------------------------------------------------------------
#
# Each hostile program below runs with the audit hook switched off, so that what stops it
# is the kernel alone: bubblewrap, the child's own namespaces, or Landlock and seccomp
# without namespaces. Each runs in a separate interpreter under an outer bound (RLIMIT_NPROC
# and RLIMIT_AS set before it starts), as the user running the tests (when not root) and,
# when root, both as root and as an unprivileged user made for the purpose; as root the
# sandboxed code itself runs as nobody inside a read-only view. Every target lives under a
# temporary directory made for the test (reachable by the sandboxed uid, so that nothing
# but the boundary stands in the way); nothing writes through another process's /proc.

PLANS = {
    # plan: what REFEREE_SANDBOX_DISABLE switches off to get it, and what proves it held
    "bwrap": ("hook", "bwrap"),
    "namespaces": ("bwrap,hook", "mountns"),
    "landlock": ("bwrap,userns,hook", "landlock"),
}
PROBE_USER = "referee-probe"
_HARNESS = r"""
import json, site, sys
for directory in json.loads(sys.argv[1]):
    site.addsitedir(directory)
from referee.checks.sandbox import Limits, evaluate, run_pytest
request = json.load(sys.stdin)
limits = Limits(**request["limits"])
if request["kind"] == "pytest":
    result = run_pytest(request["files"], request["args"], limits=limits)
else:
    result = evaluate(request["code"], request["call"], limits=limits, files=request["files"])
print(result.model_dump_json())
"""


def _gid_of(uid: int) -> int:
    import pwd

    return pwd.getpwuid(uid).pw_gid


def _readable_by_others(path: str) -> bool:
    current = Path(path).resolve()
    for part in [current, *current.parents]:
        mode = part.stat().st_mode
        if mode & (0o005 if part.is_dir() else 0o004) != (0o005 if part.is_dir() else 0o004):
            return False
    return True


@pytest.fixture(scope="session")
def probe_account() -> Iterator[tuple[int, str, list[str]] | None]:
    """(uid, interpreter, site directories) of an unprivileged user that can run referee:
    the user running the tests, or, when that is root, an account made with useradd for
    the session (and removed after it); None when there is no such way here."""
    import pwd
    import site as site_module

    if os.getuid() != 0:
        yield os.getuid(), sys.executable, []
        return
    sites = [d for d in site_module.getsitepackages() if os.path.isdir(d)]
    real = os.path.realpath(sys.executable)
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    python = next(
        (
            candidate
            for candidate in (real, f"/usr/bin/{minor}", f"/usr/local/bin/{minor}")
            if os.path.isfile(candidate)
            and all(_readable_by_others(p) for p in (candidate, *sites))
        ),
        None,
    )
    made = False
    try:
        uid = pwd.getpwnam(PROBE_USER).pw_uid
    except KeyError:
        useradd = ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin"]
        if python is None or not shutil.which("useradd"):
            yield None
            return
        if subprocess.run([*useradd, PROBE_USER], capture_output=True, check=False).returncode:
            yield None
            return
        uid, made = pwd.getpwnam(PROBE_USER).pw_uid, True
    try:
        yield (uid, python, sites) if python is not None else None
    finally:
        if made:
            subprocess.run(["userdel", PROBE_USER], capture_output=True, check=False)


@pytest.fixture
def reachable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A temporary directory the sandboxed uid could reach if nothing stopped it (pytest's
    own base directory is private to the user running the tests)."""
    base = Path(tempfile.mkdtemp(prefix="referee-target-"))
    base.chmod(0o711)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _give(path: Path, uid: int, mode: int) -> None:
    if os.getuid() == 0:
        os.chown(path, uid, uid)
    path.chmod(mode)


class Probe:
    """Runs sandboxed code in a separate, bounded interpreter as one account."""

    def __init__(self, who: str, account: tuple[int, str, list[str]] | None, plan: str) -> None:
        self.who, self.plan = who, plan
        self.offered = True
        if who == "root":
            self.uid, self.python, self.sites = 0, sys.executable, []
            self.child_uid = 65534
        elif who == "root-readable":  # root, with an interpreter nobody can read
            assert account is not None
            _, self.python, self.sites = account
            self.uid, self.child_uid = 0, 65534
        else:
            assert account is not None
            self.uid, self.python, self.sites = account
            self.child_uid = self.uid

    def run(
        self,
        code: str = "",
        call: str = "None",
        *,
        limits: Limits = QUICK,
        disable: str | None = None,
        mode: str = "strict",
        kind: str = "evaluate",
        files: dict[str, str] | None = None,
        args: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> SandboxResult:
        import json
        import resource

        request = {
            "kind": kind,
            "code": code,
            "call": call,
            "files": files or {},
            "args": args or [],
            "limits": limits.model_dump(exclude={"sandbox"}),
        }
        environment = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": tempfile.gettempdir(),
            "TMPDIR": tempfile.gettempdir(),
            "REFEREE_SANDBOX_DISABLE": PLANS[self.plan][0] if disable is None else disable,
            "REFEREE_SANDBOX": mode,
            # as conftest.py does for every other test: the plugins of this suite's own
            # environment (hypothesis, xdist, pytest-lsp...) are nothing these probes are
            # about, and loading them under QUICK's limits is most of a run's time
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            **(env or {}),
        }

        def bound() -> None:  # the outer bound: processes and memory
            resource.setrlimit(resource.RLIMIT_NPROC, (256, 256))
            resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))

        extra: dict[str, object] = {}
        if self.uid != os.getuid():
            # the account's own primary group, which need not be numbered like its uid
            extra = {"user": self.uid, "group": _gid_of(self.uid), "extra_groups": []}
        done = subprocess.run(
            [self.python, "-c", _HARNESS, json.dumps(self.sites)],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            env=environment,
            cwd=tempfile.gettempdir(),
            timeout=60,
            preexec_fn=bound,  # a test: no threads started yet
            check=False,
            **extra,  # type: ignore[arg-type]
        )
        assert done.returncode == 0, done.stderr
        return SandboxResult.model_validate_json(done.stdout.strip().splitlines()[-1])

    def held(self, result: SandboxResult) -> None:
        """Fail unless the plan under test is what contained ``result`` where this
        machine offers it to this account (a broken mechanism must fail the tests, not
        turn them into refusals); skip where it does not."""
        proof = PLANS[self.plan][1]
        if not self.offered:
            pytest.skip(f"{self.plan} is not offered to {self.who} here")
        assert result.status != "refused", result
        assert proof in result.containment, result
        if self.plan == "landlock":
            assert "mountns" not in result.containment, result
        if self.plan == "namespaces":
            assert "bwrap" not in result.containment, result
        if _KERNEL["seccomp"]:
            assert "seccomp" in result.containment, result


def _kernel_offers() -> dict[str, bool]:
    """What this kernel offers, found without referee's sandbox: Landlock's ABI, seccomp,
    and (per account, below) user namespaces and a working bubblewrap."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    status = Path("/proc/self/status").read_text() if Path("/proc/self/status").exists() else ""
    import importlib.util

    lib = importlib.util.find_spec("pyseccomp") or importlib.util.find_spec("seccomp")
    return {"landlock": abi >= 1, "seccomp": "Seccomp:" in status and lib is not None}


_KERNEL = (
    _kernel_offers() if sys.platform.startswith("linux") else {"landlock": False, "seccomp": False}
)


@functools.lru_cache(maxsize=4)
def _offered(uid: int, python: str) -> dict[str, bool]:
    """Whether ``uid`` can make user+mount+net+pid namespaces, and run bubblewrap."""
    extra: dict[str, object] = {}
    if uid != os.getuid():
        extra = {"user": uid, "group": _gid_of(uid), "extra_groups": []}
    flags = 0x10000000 | 0x00020000 | 0x40000000 | 0x20000000
    userns = subprocess.run(
        [python, "-S", "-c", f"import ctypes, sys; sys.exit(ctypes.CDLL(None).unshare({flags}))"],
        capture_output=True,
        check=False,
        cwd="/",
        **extra,  # type: ignore[arg-type]
    )
    bwrap = shutil.which("bwrap")
    works = bwrap is not None and (
        subprocess.run(
            [bwrap, "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc", "true"],
            capture_output=True,
            check=False,
            cwd="/",
            **extra,  # type: ignore[arg-type]
        ).returncode
        == 0
    )
    return {"userns": userns.returncode == 0, "bwrap": works}


def _probe_params() -> list[object]:
    whos = ["root", "root-readable", "user"] if os.getuid() == 0 else ["user"]
    return [pytest.param((who, plan), id=f"{who}-{plan}") for who in whos for plan in PLANS]


@pytest.fixture(params=_probe_params())
def probe(
    request: pytest.FixtureRequest, probe_account: tuple[int, str, list[str]] | None
) -> Probe:
    who, plan = request.param
    if who != "root" and probe_account is None:
        pytest.skip("no unprivileged account that can run referee here")
    if who == "root-readable" and sandbox_runtime.can_drop_root():
        pytest.skip("the root runs already use an interpreter nobody can read")
    probe = Probe(who, probe_account, plan)
    if who == "root-readable":
        # root starts the child as nobody, which runs bubblewrap or Landlock itself
        offers = _offered(65534, probe.python)
        probe.offered = {
            "bwrap": offers["bwrap"],
            "namespaces": _offered(0, probe.python)["userns"],
            "landlock": _KERNEL["landlock"],
        }[plan]
    elif who == "root":
        # root runs bubblewrap, or Landlock without namespaces, only as nobody, which must
        # be able to read the interpreter; otherwise the child becomes nobody inside the
        # user namespace it makes
        droppable = sandbox_runtime.can_drop_root()
        offers = _offered(0, sys.executable)
        probe.offered = {
            "bwrap": droppable and offers["bwrap"],
            "namespaces": offers["userns"],
            "landlock": droppable and _KERNEL["landlock"],
        }[plan]
    else:
        offers = _offered(probe.uid, probe.python)
        probe.offered = {
            "bwrap": offers["bwrap"],
            "namespaces": offers["userns"],
            "landlock": _KERNEL["landlock"],
        }[plan]
    if not probe.offered:
        pytest.skip(f"{plan} is not offered to {who} here")
    return probe


def test_the_code_never_runs_as_root(probe: Probe) -> None:
    result = probe.run("import os\n", "(os.getuid(), os.geteuid(), os.getgid(), os.getgroups())")
    probe.held(result)
    assert result.status == "ok", result
    uid, euid, gid, groups = result.value_json
    assert 0 not in (uid, euid, gid) and 0 not in groups
    if probe.who.startswith("root"):
        assert (uid, euid, gid) == (65534, 65534, 65534)
        assert "uid-drop" in result.containment


def test_a_secret_outside_cannot_be_read(probe: Probe, reachable: Path) -> None:
    secret = reachable / "secret.txt"
    secret.write_text("sentinel-c0ffee")
    _give(secret, probe.child_uid, 0o600)
    result = probe.run(f"def read():\n    return open({str(secret)!r}).read()\n", "read()")
    probe.held(result)
    _not_ok(result, "error")
    assert "sentinel-c0ffee" not in result.model_dump_json()


def test_the_home_directory_is_not_there(probe: Probe) -> None:
    home = str(Path.home())
    result = probe.run(f"import os\ndef look():\n    return os.listdir({home!r})\n", "look()")
    probe.held(result)
    _not_ok(result, "error")


def test_without_a_boundary_the_same_secret_is_read(
    probe_account: tuple[int, str, list[str]] | None, reachable: Path
) -> None:
    """The control: the tests above can fail. With every mechanism off (the weak mode,
    allowed explicitly), an unprivileged run reads the same secret."""
    if probe_account is None:
        pytest.skip("no unprivileged account that can run referee here")
    probe = Probe("user", probe_account, "landlock")
    secret = reachable / "secret.txt"
    secret.write_text("sentinel-c0ffee")
    _give(secret, probe.child_uid, 0o600)
    result = probe.run(
        f"def read():\n    return open({str(secret)!r}).read()\n",
        "read()",
        disable=",".join(MECHANISMS),
        mode="weak",
    )
    assert (result.status, result.value_json) == ("ok", "sentinel-c0ffee"), result
    assert "weak" in result.containment


WRITES_OUTSIDE = {
    "hard-link": "import os\nos.link(VICTIM, 'inside')\nopen('inside', 'w').write('escaped')\n",
    "dir_fd-after-chdir": (
        "import os\nos.mkdir('sub')\nd = os.open(os.path.dirname(VICTIM), os.O_RDONLY)\n"
        "os.chdir('sub')\n"
        "fd = os.open(os.path.basename(VICTIM), os.O_WRONLY | os.O_TRUNC, dir_fd=d)\n"
        "os.write(fd, b'escaped')\n"
    ),
    "ctypes": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = libc.open(VICTIM.encode(), 1 | 512)\n"  # O_WRONLY | O_TRUNC
        "assert fd >= 0, ctypes.get_errno()\nlibc.write(fd, b'escaped', 7)\n"
    ),
    "ctypes-new-file": (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = libc.open((os.path.dirname(VICTIM) + '/new.txt').encode(), 1 | 64, 0o644)\n"
        "assert fd >= 0, ctypes.get_errno()\n"
    ),
    "mkfifo": "import os\nos.mkfifo(os.path.dirname(VICTIM) + '/new.txt')\n",
    "chmod": "import os\nos.chmod(VICTIM, 0o777)\n",
    "utime": "import os\nos.utime(VICTIM, (0, 0))\n",
    "ctypes-fchmod": (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "fd = os.open(VICTIM, os.O_RDONLY)\n"
        "assert libc.fchmod(fd, 0o777) == 0, ctypes.get_errno()\n"
    ),
}


@pytest.mark.parametrize("attack", list(WRITES_OUTSIDE), ids=list(WRITES_OUTSIDE))
def test_writing_outside_fails(probe: Probe, reachable: Path, attack: str) -> None:
    victim = reachable / "victim.txt"
    victim.write_text("kept")
    _give(victim, probe.child_uid, 0o644)
    _give(reachable, probe.child_uid, 0o755)
    before = victim.stat()
    code = f"VICTIM = {str(victim)!r}\n{WRITES_OUTSIDE[attack]}"
    result = probe.run(code, "1")
    probe.held(result)
    _not_ok(result, "error")
    assert victim.read_text() == "kept"
    after = victim.stat()
    assert (after.st_mode, after.st_mtime_ns) == (before.st_mode, before.st_mtime_ns)
    assert sorted(p.name for p in reachable.iterdir()) == ["victim.txt"]


def test_without_a_boundary_a_hard_link_writes_outside(
    probe_account: tuple[int, str, list[str]] | None, reachable: Path
) -> None:
    """The control for the writes: with nothing in the way, the hard link writes."""
    if probe_account is None:
        pytest.skip("no unprivileged account that can run referee here")
    probe = Probe("user", probe_account, "landlock")
    victim = reachable / "victim.txt"
    victim.write_text("kept")
    _give(victim, probe.child_uid, 0o644)
    code = f"VICTIM = {str(victim)!r}\n{WRITES_OUTSIDE['hard-link']}"
    result = probe.run(code, "1", disable=",".join(MECHANISMS), mode="weak")
    assert result.status == "ok", result
    assert victim.read_text() == "escaped"


PLANT = """import os, sys


def test_plant():
    planted = []
    for directory in sys.path:
        if directory.endswith(("site-packages", "dist-packages")):
            try:
                with open(os.path.join(directory, "referee-planted.pth"), "w") as handle:
                    handle.write("import os")
                planted.append(directory)
            except OSError:
                pass
    assert planted == []
"""


def test_nothing_is_planted_in_site_packages(probe: Probe) -> None:
    """Persistence: a .pth in site-packages would run in every later Python process."""
    result = probe.run(kind="pytest", files={"test_plant.py": PLANT}, args=["-q"])
    probe.held(result)
    assert result.status == "ok", result
    for directory in {*probe.sites, *sandbox_runtime._site_dirs()}:
        assert not (Path(directory) / "referee-planted.pth").exists()


def test_a_path_named_unix_socket_does_not_connect(probe: Probe, reachable: Path) -> None:
    path = reachable / "agent.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(1)
        _give(path, probe.child_uid, 0o777)
        code = (
            "import _socket\n"
            "s = _socket.socket(1, 1)\n"  # AF_UNIX, SOCK_STREAM, as plain ints
            f"s.connect({str(path)!r})\n"
            "s.send(b'leak')\n"
        )
        result = probe.run(code, "1")
        listener.settimeout(0.2)
        with pytest.raises(TimeoutError):
            listener.accept()
    probe.held(result)
    _not_ok(result, "error")


def test_tcp_to_localhost_does_not_connect(probe: Probe) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        code = (
            "import socket\n"
            f"connection = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
            "connection.sendall(b'leak')\n"
        )
        result = probe.run(code, "1")
        listener.settimeout(0.2)
        with pytest.raises(TimeoutError):
            listener.accept()
    probe.held(result)
    _not_ok(result, "error")


SYSCALLS = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "def call(name, *args):\n"
    "    result = getattr(libc, name)(*args)\n"
    "    return result, ctypes.get_errno()\n"
)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        ("call('ptrace', 0, 0, 0, 0)", "ptrace(PTRACE_TRACEME)"),
        ("call('unshare', 0x10000000)", "unshare(CLONE_NEWUSER)"),
        ("call('syscall', 425, 8, 0)", "io_uring_setup"),
    ],
    ids=["ptrace", "unshare", "io_uring"],
)
def test_seccomp_denies_dangerous_system_calls(probe: Probe, call: str, name: str) -> None:
    result = probe.run(SYSCALLS, call)
    probe.held(result)
    if "seccomp" not in result.containment:
        pytest.skip("no seccomp here")
    assert result.status == "ok", result
    assert result.value_json == [-1, 1], f"{name}: {result.value}"  # EPERM
    control = probe.run(SYSCALLS, call, disable=PLANS[probe.plan][0] + ",seccomp")
    assert control.value_json != [-1, 1], f"{name} without seccomp: {control.value}"


def test_threads_start_and_processes_do_not(probe: Probe) -> None:
    """A test's threads (a pool, concurrent consumers) run in the sandbox; a process does
    not, not even one started below Python's audit hook (ctypes' fork): the seccomp
    filter refuses fork, vfork and a clone without CLONE_THREAD, so RLIMIT_NPROC counts
    threads alone. Before, RLIMIT_NPROC let no task start: "can't start new thread"."""
    code = (
        "import ctypes, threading\n"
        "def spawn():\n"
        "    done = []\n"
        "    threads = [threading.Thread(target=done.append, args=(i,)) for i in range(16)]\n"
        "    for thread in threads:\n        thread.start()\n"
        "    for thread in threads:\n        thread.join()\n"
        "    libc = ctypes.CDLL(None, use_errno=True)\n"
        "    pid = libc.fork()\n"
        "    if pid == 0:\n        libc._exit(0)\n"
        "    return len(done), pid\n"
    )
    result = probe.run(code, "spawn()", limits=QUICK.model_copy(update={"memory_mb": 1024}))
    probe.held(result)
    if "seccomp" not in result.containment:
        pytest.skip("no seccomp filter in this plan: a thread would count as a process")
    assert result.status == "ok", result
    assert "seccomp-nofork" in result.containment, result
    assert result.value_json == [16, -1], result


def test_a_native_fork_bomb_is_bounded_and_leaves_nothing(probe: Probe) -> None:
    code = (
        "import ctypes, os, time\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "def bomb():\n"
        "    started = 0\n"
        "    for _ in range(1000):\n"
        "        pid = libc.fork()\n"
        "        if pid == 0:\n"
        "            libc.setsid()\n"
        "            time.sleep(60)\n"
        "            os._exit(0)\n"
        "        if pid < 0:\n"
        "            break\n"
        "        started += 1\n"
        "    return started\n"
    )
    before = set(_pids())
    result = probe.run(code, "bomb()", limits=QUICK.model_copy(update={"timeout_s": 5}))
    probe.held(result)
    assert result.status == "ok", result
    assert result.value_json <= 4, result  # threads of the interpreter aside, none

    def survivors() -> list[int]:
        return [
            pid
            for pid in set(_pids()) - before
            if _uid_of(pid) == probe.child_uid
            and b"sandbox process runs" in _cmdline_and_environ(pid)
        ]

    # Killed is not yet gone: on a loaded machine (2 cores, load 15) the children the run
    # killed were still listed 0.3 s later. One that was never killed sleeps for 60 s.
    deadline = time.monotonic() + 5
    while survivors() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert survivors() == []


def test_processes_together_cannot_pass_the_memory_limit(probe: Probe) -> None:
    code = (
        "import os, time\n"
        "def hog():\n"
        "    for _ in range(3):\n"
        "        if os.fork() == 0:\n"
        "            block = bytearray(150 * 1024 * 1024)\n"
        "            block[::4096] = b'x' * len(block[::4096])\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        "    time.sleep(30)\n"
    )
    limits = QUICK.model_copy(update={"processes": 3, "timeout_s": 8, "memory_mb": 256})
    if probe.plan == "landlock":
        pytest.skip("without a pid namespace the limit is per process (docs/sandbox.md)")
    result = probe.run(code, "hog()", limits=limits)
    probe.held(result)
    _not_ok(result, "memory")
    assert "together" in result.message


def test_the_run_directory_has_a_disk_limit(probe: Probe) -> None:
    code = (
        "def fill():\n"
        "    for n in range(64):\n"
        "        with open(f'part{n}', 'wb') as f:\n"
        "            f.write(b'x' * (1024 * 1024))\n"
    )
    limits = QUICK.model_copy(update={"disk_mb": 8, "file_size_mb": 2, "timeout_s": 5})
    result = probe.run(code, "fill()", limits=limits)
    probe.held(result)
    _not_ok(result, "error")
    assert "No space left" in result.message or "disk limit of 8 MB" in result.message


def test_without_any_boundary_nothing_runs(probe_account: object, reachable: Path) -> None:
    """Fail closed: no namespaces, no bubblewrap, no Landlock, no seccomp: the code does
    not run and the result says why and what setting allows the weaker mode."""
    marker = reachable / "ran"
    code = f"open({str(marker)!r}, 'w').write('ran')\n"
    everything = "bwrap,userns,landlock,seccomp"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("REFEREE_SANDBOX_DISABLE", everything)
        env.delenv("REFEREE_SANDBOX", raising=False)
        result = evaluate(code, "1", limits=QUICK)
        problem = boundary_problem(QUICK)
    assert result.status == "refused", result
    assert "REFEREE_SANDBOX=weak" in result.message and "\n" not in result.message
    assert result.message.startswith("model-written code was not run: ")
    assert problem == result.message
    assert not marker.exists()


def test_the_weak_mode_runs_what_strict_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_SANDBOX_DISABLE", "bwrap,userns,landlock,seccomp")
    monkeypatch.setenv("REFEREE_SANDBOX", "weak")
    result = evaluate("", "6 * 7", limits=QUICK)
    assert (result.status, result.value) == ("ok", "42"), result
    assert "weak" in result.containment
    assert boundary_problem(QUICK) is None
    strict = QUICK.model_copy(update={"sandbox": "strict"})
    assert evaluate("", "6 * 7", limits=strict).status == "refused"


def test_run_pytest_is_refused_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREE_SANDBOX_DISABLE", "bwrap,userns,landlock,seccomp")
    monkeypatch.delenv("REFEREE_SANDBOX", raising=False)
    files = {"test_x.py": "def test_x():\n    assert True\n"}
    result = run_pytest(files, ["-q"], limits=QUICK)
    assert result.status == "refused", result


def _uid_of(pid: int) -> int | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    return None


# -- macOS: the Seatbelt profile ----------------------------------------------------------


def test_the_seatbelt_profile_denies_by_default_and_writes_only_the_run_directory() -> None:
    profile = seatbelt_profile(
        "/private/var/folders/x/T/referee-sandbox-1",
        ["/opt/homebrew/Cellar/python@3.12", "/Users/me/project/.venv/lib/python3.12"],
        "/opt/homebrew/Cellar/python@3.12/bin/python3.12",
        processes=0,
    )
    lines = profile.splitlines()
    assert lines[:2] == ["(version 1)", "(deny default)"]
    assert "(deny network*)" in lines
    writes = [line for line in lines if line.startswith("(allow file-write*")]
    assert writes == [
        '(allow file-write* (subpath "/private/var/folders/x/T/referee-sandbox-1") '
        '(literal "/dev/null"))'
    ]
    assert not any("process-fork" in line for line in lines)
    assert (
        '(allow process-exec (literal "/opt/homebrew/Cellar/python@3.12/bin/python3.12"))' in lines
    )
    assert '(subpath "/Users/me/project/.venv/lib/python3.12")' in profile
    assert '/Users/me"' not in profile and '(subpath "/Users/me")' not in profile


def test_the_seatbelt_profile_allows_forks_only_when_processes_are_allowed() -> None:
    profile = seatbelt_profile("/tmp/r", ["/usr/local"], "/usr/local/bin/python3", processes=2)
    assert "(allow process-fork)" in profile.splitlines()


def test_the_seatbelt_profile_quotes_paths() -> None:
    profile = seatbelt_profile('/tmp/a "b"\\c', [], "/usr/bin/python3", processes=0)
    assert '(subpath "/tmp/a \\"b\\"\\\\c")' in profile


def test_macos_without_sandbox_exec_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The only part of the macOS path that runs here: with no Seatbelt, nothing runs."""
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(sandbox_containment, "_SANDBOX_EXEC", "/nonexistent/sandbox-exec")
    monkeypatch.delenv("REFEREE_SANDBOX", raising=False)
    result = evaluate("", "1", limits=QUICK)
    assert result.status == "refused"
    assert "/nonexistent/sandbox-exec is missing" in result.message


def test_root_with_a_private_temporary_directory_still_never_runs_as_root(
    probe: Probe, tmp_path: Path
) -> None:
    """``$TMPDIR`` inside a directory only root can enter: nobody could not reach a run
    directory made there, so the child does not start as nobody from outside (that failed
    every run with a PermissionError); it becomes nobody inside its own user namespace,
    or the run is refused. Never uid 0, never an error."""
    if probe.who != "root-readable":
        pytest.skip("only root chooses how the child becomes nobody")
    private = tmp_path / "private"
    (private / "tmp").mkdir(parents=True)
    private.chmod(0o700)
    result = probe.run(
        "import os\n", "(os.getuid(), os.geteuid())", env={"TMPDIR": str(private / "tmp")}
    )
    if probe.plan == "namespaces":
        assert result.status == "ok", result
        assert "mountns" in result.containment, result
    else:  # bubblewrap and Landlock alone need root to start the child as nobody
        assert result.status in ("ok", "refused"), result
    if result.status == "ok":
        assert 0 not in result.value_json, result


def test_an_interpreter_under_tmp_leaves_the_run_directory_reachable(
    probe: Probe, tmp_path: Path
) -> None:
    """A virtual environment under /tmp (the view binds its site-packages there, making
    the directories above it) and ``$TMPDIR`` beside it: the run directory's parents in
    the view are the builder's, so the builder makes the run directory too. Before, the
    code's user could not create it there and every run was a PermissionError."""
    if probe.plan != "namespaces" or probe.who == "user":
        pytest.skip("the view that root builds in its own namespaces")
    import site as site_module
    import sysconfig

    base = tmp_path / "world"
    venv = base / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True
    )
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    site.mkdir(parents=True, exist_ok=True)
    (site / "ours.pth").write_text(
        "".join(f"import site; site.addsitedir({d!r})\n" for d in site_module.getsitepackages()),
        encoding="utf-8",
    )
    (base / "tmp").mkdir()
    for path in [base, *base.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)
    probe.python = str(venv / "bin" / "python")
    result = probe.run("import os\n", "os.getuid()", env={"TMPDIR": str(base / "tmp")})
    probe.held(result)
    assert result.status == "ok", result
    assert result.value_json == 65534, result


def test_code_that_replaces_its_own_functions_code_still_runs(mode: str) -> None:
    """asyncio's ``types.coroutine`` replaces a function's ``__code__`` when it is
    imported (so does any test that imports ``unittest.mock``): only the sandbox's own
    functions are protected, or every such test module failed to collect."""
    files = {
        "test_m.py": "import asyncio\nfrom unittest import mock\n\n\ndef test_a():\n"
        "    m = mock.Mock()\n    m(1)\n    m.assert_called_once_with(1)\n"
        "    assert asyncio.run(asyncio.sleep(0, result=3)) == 3\n"
    }
    result = run_pytest(files, ["-q", "test_m.py"], limits=QUICK)
    assert result.status == "ok", result
    assert "1 passed" in result.stdout, result


def test_code_compiled_from_a_string_may_replace_its_own_functions_code(mode: str) -> None:
    """hypothesis's generated wrappers (every strategy it defines at import) are compiled
    from a string, as ``python -c`` compiles the sandbox's own code, and replace their
    ``__code__``. Before, the boot took any ``<string>`` code for its own and refused it:
    no sandboxed pytest run passed where hypothesis's pytest plugin is installed."""
    files = {
        "test_m.py": "def test_a():\n    space = {}\n"
        "    exec(compile('def f():\\n    return 3\\n', '<string>', 'exec'), space)\n"
        "    f = space['f']\n    f.__code__ = f.__code__.replace(co_name='g')\n"
        "    assert (f.__name__, f.__code__.co_name, f()) == ('f', 'g', 3)\n"
    }
    result = run_pytest(files, ["-q", "test_m.py"], limits=QUICK)
    assert result.status == "ok", result
    assert "1 passed" in result.stdout, result
    # the boot's own functions stay guarded (the hook-code-swapped probe above as well)
    swap = "import os\nos.open.__code__ = (lambda *a, **k: 1).__code__\n"
    denied = run_pytest({"test_m.py": swap + "\n\ndef test_a():\n    pass\n"}, ["-q"], limits=QUICK)
    assert denied.status != "ok", denied


def test_this_interpreter_gets_the_boot_compiled_and_another_its_source() -> None:
    """The boot's ``-c`` text: this interpreter's own compiled code where the child is the
    same binary (marshal's format is per version), the source for any other; both are the
    same boot, under its own file name."""
    import dataclasses

    from referee.checks import sandbox

    own = sandbox_runtime.own_runtime()
    compiled = sandbox._boot_for(own)
    assert compiled != sandbox._boot_source() and "marshal.loads" in compiled
    other = dataclasses.replace(own, interpreter=own.interpreter + "-of-another-version")
    assert sandbox._boot_for(other) == sandbox._boot_source()
    space: dict = {}
    exec(compiled.replace("exec(marshal.loads", "code = (marshal.loads"), space)
    code = space["code"]
    source = (Path(sandbox.__file__).parent / "_sandbox_boot.py").read_text(encoding="utf-8")
    expected = compile(source, sandbox.BOOT_FILENAME, "exec")
    assert code.co_filename == sandbox.BOOT_FILENAME
    assert code == expected  # the same instructions, constants and names
