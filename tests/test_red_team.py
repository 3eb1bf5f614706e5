"""The red-team suite: hostile programs through the public paths that run model code.

Every attack of tests/red_team/attacks.py (each row of §3 of
shared/data/realworld/README.md, persistence, and the forged verdicts) is the answer of
a fake OpenAI-compatible model server on 127.0.0.1 to every question referee asks, and
goes through:

- ``referee arbitrate --apply`` (the real command line, a fresh process): the oracles,
  then the candidate patches;
- the same with a declared reference (the hostile repository's own file) and with the
  capability refusal switched off, so that the candidate patches really run — what is
  left when that one layer is gone: the sandbox and referee's own verdict;
- the editor's arbitration (``referee.arbitrate`` over the language server protocol),
  in one mode (below).

After each run: nothing outside the run directories changed (contents, modes, times,
extended attributes of a sentinel tree: a 0600 secret, a fake $HOME with .bashrc and
~/.ssh, the project, the interpreter's site-packages); no secret (the secret file's
token, a sentinel environment variable) and no ``ESCAPED:`` report appears in referee's
output, its JSON, the editor's messages or ``.referee/``; nothing connected to the
test's listeners; no process survived; no fix was offered or written.

The command line's rows run in every mode the machine allows: as root, as an
unprivileged user (created with ``useradd --system`` when the suite runs as root), and as
that user with the sandbox's namespaces switched off. The editor's rows run as the
unprivileged user alone, the mode of a person at an editor and one every machine has: the
editor's arbitration hands the hostile programs to the same sandboxed runners as the
command line's ``oracles`` rows, which meet every mode; what the editor adds (the language
server and its worker as the processes that start them, the JSON-RPC channel, the edits
it may ask the editor to apply) does not change with the mode. Running them in all three
was a third of the suite's time (about 190 of 650 worker-seconds in CI). Every hostile program
runs inside the sandbox under test and an outer bound of the test's own: a pid namespace
(a user namespace too when unprivileged) whose pid 1 reports survivors and takes them
all down, under ``prlimit``. Without that bound the suite does not run.

Rows that only the kernel boundary of issue 19 (sandbox.py) can contain are xfail —
strict — where tests/red_team/probe.py finds that boundary missing in that mode, so they
turn into ordinary tests when it lands.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from lsp.harness import RefereeClient, Setup, make_client, start
from lsprotocol import types
from pytest_lsp import ClientServerConfig
from red_team.attacks import ATTACKS, ESCAPED, Attack, Targets
from red_team.fake_openai import FakeModel

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
OUTER = HERE / "red_team" / "outer.py"
PROBE = HERE / "red_team" / "probe.py"
USER = "referee-redteam"
KERNEL_BOUNDARY = "needs the kernel boundary (issue 19, sandbox.py)"
RUN_TIMEOUT = 300  # seconds for one arbitration, however hostile its programs

BUGGY = '''def count_vowels(text: str) -> int:
    """Return how many vowels (a, e, i, o, u, in either case) TEXT contains."""
    return sum(1 for ch in text[1:].lower() if ch in "aeiou")
'''
TESTS = """from text import count_vowels


def test_vowels():
    assert count_vowels("aeiou") == 5


def test_empty():
    assert count_vowels("") == 0


def test_upper():
    assert count_vowels("HELLO") == 2
"""
FAILING = "tests/test_text.py::test_vowels"
FAILING_LINE = 4  # 0-based line of its assertion

# The command line with the capability refusal switched off (variant "raw"): the same
# `referee` entry point, one layer removed, so the hostile patches do run.
WITHOUT_CAPABILITY_CHECK = (
    "import sys\n"
    "import referee.checks.arbitration.fix as fix\n"
    "fix.added_capabilities = lambda *args: []\n"
    "from referee.server.cli import main\n"
    "sys.argv[0] = 'referee'\n"
    "main()\n"
)


# ------------------------------------------------------------------------ the modes


@dataclass(frozen=True)
class Mode:
    """Who runs referee: root, or an unprivileged user, and with which interpreter."""

    name: str
    user: str | None  # None: the suite's own user
    uid: int
    gid: int
    python: str  # the base interpreter the test's venv is made from
    env: tuple[tuple[str, str], ...] = ()  # what else referee's environment holds

    def prefix(self, env: dict[str, str]) -> list[str]:
        """The outer bound: a clean environment, a user (namespace) of the test's own, a
        pid namespace whose pid 1 is outer.py, resource limits."""
        unshare = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
        if self.uid != 0:
            unshare[1:1] = ["--user", "--map-current-user"]
        limits = ["prlimit", "--as=8589934592", "--fsize=1073741824", "--cpu=600", "--nofile=4096"]
        if self.uid != 0:
            limits.append("--nproc=600")
        clean = ["env", "-i", *(f"{k}={v}" for k, v in env.items())]
        run_as = ["runuser", "-u", self.user, "--"] if self.user else []
        return [*run_as, *clean, *unshare, "--", *limits, "--"]


def _world_usable(path: str) -> bool:
    current = Path(path).resolve()
    for part in [current, *current.parents]:
        try:
            mode = part.stat().st_mode
        except OSError:
            return False
        if mode & 0o005 != 0o005 and mode & 0o001 == 0:
            return False
    return True


def _base_python() -> str:
    return getattr(sys, "_base_executable", None) or sys.executable


def _user_python() -> str | None:
    """An interpreter of this minor version that an unprivileged user can run."""
    if _world_usable(_base_python()):
        return _base_python()
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (f"/usr/bin/{name}", f"/usr/local/bin/{name}", shutil.which(name)):
        if candidate and os.path.exists(candidate) and _world_usable(candidate):
            return candidate
    return None


def _ensure_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        # Another xdist worker (each runs its own modes) may be making it at the same time.
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
            check=False,
            capture_output=True,
        )
        return pwd.getpwnam(USER)


@pytest.fixture(scope="session")
def session_dir() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="referee-red-team-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)
    for template in _TEMPLATES.values():
        shutil.rmtree(template.parent, ignore_errors=True)
    _TEMPLATES.clear()


def _mode(name: str) -> Mode:
    if not sys.platform.startswith("linux"):
        pytest.skip("the outer bound (pid and user namespaces) is Linux's")
    for tool in ("unshare", "prlimit", "env"):
        if shutil.which(tool) is None:
            pytest.skip(f"the outer bound needs {tool}")
    euid = os.geteuid()
    if name == "user-no-namespaces":
        # A machine that refuses user namespaces (many containers): the sandbox has
        # Landlock and seccomp, the audit hook, and the process group, and nothing else.
        mode = _mode("user")
        return dataclasses.replace(mode, name=name, env=(("REFEREE_SANDBOX_NAMESPACES", "0"),))
    if name == "root":
        if euid != 0:
            pytest.skip("runs as root only when the suite does")
        return Mode("root", None, 0, 0, _base_python())
    python = _user_python()
    if python is None:
        pytest.skip("no interpreter of this version that an unprivileged user can run")
    if euid != 0:
        return Mode("user", None, euid, os.getegid(), _base_python())
    if shutil.which("runuser") is None or shutil.which("useradd") is None:
        pytest.skip("needs runuser and useradd to run as an unprivileged user")
    entry = _ensure_user()
    return Mode("user", USER, entry.pw_uid, entry.pw_gid, python)


@dataclass
class Probe:
    fs_boundary: bool
    processes_bound: bool
    disk_bound: bool
    raw: dict[str, Any]

    def holds(self, name: str) -> bool:
        return bool(getattr(self, name))


@pytest.fixture(scope="session", params=["root", "user", "user-no-namespaces"])
def mode_probe(request: pytest.FixtureRequest, session_dir: Path) -> tuple[Mode, Probe]:
    """The mode, checked to have its outer bound, and what its sandbox contains."""
    mode = _mode(request.param)
    # A mode may be set up twice in one session (the editor's rows name their mode
    # indirectly, which pytest keys apart from the fixture's own parameter): each time
    # in a directory of its own.
    base = Path(tempfile.mkdtemp(prefix=f"probe-{mode.name}-", dir=session_dir))
    world = World.build(base, mode, model_url="http://127.0.0.1:9/v1")
    readable = base / "outside" / "probe.txt"
    readable.write_text("readable by anyone\n", encoding="utf-8")
    readable.chmod(0o644)
    done = world.run([str(PROBE), str(readable)], timeout=120)
    if done.report is None:
        pytest.skip(
            f"no outer bound for {mode.name} on this machine "
            f"(pid/user namespaces refused): {done.stderr[-500:]}"
        )
    try:
        raw = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        pytest.fail(f"the probe did not run: {done.stdout[-500:]} {done.stderr[-1500:]}")
    return mode, Probe(raw["fs_boundary"], raw["processes_bound"], raw["disk_bound"], raw)


# ------------------------------------------------------------------------ the world


@dataclass
class Done:
    returncode: int | None
    stdout: str
    stderr: str
    report: dict[str, Any] | None
    timed_out: bool = False


@dataclass
class Listeners:
    """TCP and UDP on 127.0.0.1 and a path-named unix socket: what arrives is an escape."""

    unix_path: Path
    received: list[str] = field(default_factory=list)
    port: int = 0

    def __post_init__(self) -> None:
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(16)
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(str(self.unix_path))
        os.chmod(self.unix_path, 0o777)  # so that only the sandbox can keep it out
        self.unix.listen(16)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        import selectors

        with selectors.DefaultSelector() as selector:
            for sock in (self.tcp, self.udp, self.unix):
                sock.setblocking(False)
                selector.register(sock, selectors.EVENT_READ)
            while not self._stop.is_set():
                for key, _ in selector.select(timeout=0.02):  # close() waits for one
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    try:
                        if sock is self.udp:
                            data, _ = sock.recvfrom(4096)
                            self.received.append(f"udp: {data!r}")
                        else:
                            conn, _ = sock.accept()
                            kind = "tcp" if sock is self.tcp else "unix"
                            self.received.append(f"{kind}: a connection")
                            conn.close()
                    except OSError:
                        continue

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for sock in (self.tcp, self.udp, self.unix):
            sock.close()


SNAPSHOT_SKIP = ("tmp", "cache", "reports", "models", "project/.referee", "sock")


def _xattrs(path: Path) -> tuple[tuple[str, bytes], ...]:
    try:
        names = os.listxattr(path, follow_symlinks=False)
        return tuple(sorted((n, os.getxattr(path, n, follow_symlinks=False)) for n in names))
    except OSError:
        return ()


def snapshot(base: Path) -> dict[str, tuple[Any, ...]]:
    """Every file and directory under ``base`` outside referee's own places: kind, mode,
    owner, size, modification time, content hash, extended attributes."""
    found: dict[str, tuple[Any, ...]] = {}
    for directory, dirnames, filenames in os.walk(base):
        rel_dir = os.path.relpath(directory, base)
        dirnames[:] = [
            d for d in dirnames if os.path.normpath(os.path.join(rel_dir, d)) not in SNAPSHOT_SKIP
        ]
        for name in [*dirnames, *filenames]:
            path = Path(directory, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if rel in SNAPSHOT_SKIP:
                continue
            info = path.lstat()
            digest = ""
            if stat.S_ISREG(info.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            elif stat.S_ISLNK(info.st_mode):
                digest = os.readlink(path)
            mtime = info.st_mtime_ns if not stat.S_ISDIR(info.st_mode) else None
            found[rel] = (
                stat.S_IFMT(info.st_mode),
                stat.S_IMODE(info.st_mode),
                info.st_uid,
                info.st_size if not stat.S_ISDIR(info.st_mode) else None,
                mtime,
                digest,
                _xattrs(path),
            )
    return found


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    out = [f"new: {p}" for p in sorted(after.keys() - before.keys())]
    out += [f"gone: {p}" for p in sorted(before.keys() - after.keys())]
    out += [f"changed: {p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return out


_TEMPLATES: dict[str, Path] = {}


def _template_venv(python: str) -> Path:
    """A venv of ``python`` made once per worker, which each world copies (``python -m
    venv`` is a process start per row: ~25 worker-seconds of the suite)."""
    template = _TEMPLATES.get(python)
    if template is None:
        template = Path(tempfile.mkdtemp(prefix="referee-red-team-venv-", dir="/tmp")) / "venv"
        subprocess.run(
            [python, "-m", "venv", "--without-pip", str(template)], check=True, capture_output=True
        )
        _TEMPLATES[python] = template
    return template


@dataclass
class World:
    """One test's directory: a project, a fake $HOME, secrets, a venv, listeners."""

    base: Path
    mode: Mode
    token: str
    env_token: str
    python: Path
    listeners: Listeners | None = None
    targets: Targets | None = None

    @classmethod
    def build(
        cls,
        base: Path,
        mode: Mode,
        model_url: str,
        oracle_timeout: float = 8,
        test_timeout: float = 6,
    ) -> World:
        token, env_token = f"RT-FILE-{secrets.token_hex(8)}", f"RT-ENV-{secrets.token_hex(8)}"
        for sub in (
            "project/tests",
            "home/.ssh",
            "outside/drop",
            "tmp",
            "cache",
            "models",
            "reports",
            "sock",
        ):
            (base / sub).mkdir(parents=True, exist_ok=True)
        config = (
            "[arbitration]\n"
            'backend = "openai"\n'
            f'url = "{model_url}"\n'
            'model = "hostile"\n'
            "candidates = 1\n"
            f"timeout = {oracle_timeout:g}\n"
            # An endless loop burns a core until this runs out, in every run that meets
            # it (three modes, oracles and patches): 15 s made the two timeout rows about
            # a third of the suite's CPU; the honest runs here take 1-2 s.
            f"test-timeout = {test_timeout:g}\n"
            # A hostile oracle that fails to run is replaced by another sample of the same
            # program (the default writes up to 24, in rounds of twice the failed ones): one
            # replacement keeps that path under attack; the default's four rounds of endless
            # loops made each timeout row ~43 s of a burnt core.
            "oracle-replacements = 1\n"
        )
        (base / "project" / "referee.toml").write_text(config, encoding="utf-8")
        (base / "project" / "text.py").write_text(BUGGY, encoding="utf-8")
        (base / "project" / "tests" / "test_text.py").write_text(TESTS, encoding="utf-8")
        (base / "home" / ".bashrc").write_text("# the user's shell\n", encoding="utf-8")
        (base / "home" / ".profile").write_text("# the user's profile\n", encoding="utf-8")
        for secret in (base / "outside" / "secret.txt", base / "home" / ".ssh" / "id_rsa"):
            secret.write_text(token + "\n", encoding="utf-8")
            secret.chmod(0o600)
        (base / "home" / ".ssh").chmod(0o700)
        victim = base / "outside" / "victim.txt"
        victim.write_text("the victim's content\n", encoding="utf-8")
        victim.chmod(0o644)
        # A venv of the test's own: its site-packages is where a .pth would persist.
        venv = base / "venv"
        shutil.copytree(_template_venv(mode.python), venv, symlinks=True)
        site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
        site.mkdir(parents=True, exist_ok=True)
        ours = sysconfig.get_paths()["purelib"]  # where referee and its dependencies are
        (site / "referee-red-team.pth").write_text(
            f"import site; site.addsitedir({ours!r})\n", encoding="utf-8"
        )
        if mode.uid != os.geteuid():
            for directory, dirnames, filenames in os.walk(base):
                os.chown(directory, mode.uid, mode.gid)
                for name in [*dirnames, *filenames]:
                    os.chown(
                        os.path.join(directory, name), mode.uid, mode.gid, follow_symlinks=False
                    )
        world = cls(base, mode, token, env_token, venv / "bin" / "python")
        world.targets = Targets(
            base=str(base),
            secret=str(base / "outside" / "secret.txt"),
            ssh_key=str(base / "home" / ".ssh" / "id_rsa"),
            victim=str(victim),
            drop=str(base / "outside" / "drop"),
            bashrc=str(base / "home" / ".bashrc"),
            conftest=str(base / "project" / "conftest.py"),
            site=str(site),
            tests=str(base / "project" / "tests" / "test_text.py"),
            unix_socket=str(base / "sock" / "listen.sock"),
            tcp_port=0,
            env_name="RED_TEAM_TOKEN",
        )
        return world

    def listen(self) -> Targets:
        assert self.targets is not None
        self.listeners = Listeners(Path(self.targets.unix_socket))
        self.targets = Targets(**{**self.targets.__dict__, "tcp_port": self.listeners.port})
        return self.targets

    def env(self, report: Path) -> dict[str, str]:
        return {
            "PATH": f"{self.python.parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.base / "home"),
            "TMPDIR": str(self.base / "tmp"),
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
            # the world's venv sees this suite's environment: without this, each pytest
            # run of the project loads its dev plugins (hypothesis, pytest-lsp...), a
            # second of imports that no attack needs (conftest.py still loads)
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "REFEREE_CACHE_DIR": str(self.base / "cache"),
            "REFEREE_MODEL_DIR": str(self.base / "models"),
            "RED_TEAM_TOKEN": self.env_token,
            "RED_TEAM_REPORT": str(report),
            **dict(self.mode.env),
        }

    def command(self, args: list[str], report: Path) -> list[str]:
        return [
            *self.mode.prefix(self.env(report)),
            str(self.python),
            str(OUTER),
            "--",
            str(self.python),
            *args,
        ]

    def run(self, args: list[str], timeout: float = RUN_TIMEOUT) -> Done:
        report = self.base / "reports" / f"{secrets.token_hex(4)}.json"
        proc = subprocess.Popen(
            self.command(args, report),
            cwd=self.base / "project",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # unshare --kill-child ends the rest
            out, err = proc.communicate()
        return Done(
            proc.returncode,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
            self.report(report),
            timed_out,
        )

    @staticmethod
    def report(path: Path) -> dict[str, Any] | None:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def stored(self) -> str:
        """Everything referee wrote into the project's .referee/."""
        texts = []
        for path in sorted((self.base / "project" / ".referee").rglob("*")):
            if path.is_file():
                texts.append(path.read_text(encoding="utf-8", errors="replace"))
        return "\n".join(texts)

    def close(self) -> None:
        if self.listeners is not None:
            self.listeners.close()


# ------------------------------------------------------------------------ the checks


def expect_contained(request: pytest.FixtureRequest, attack: Attack, probe: Probe) -> None:
    """Mark the row xfail (strict) where no probe says what would contain it is there."""
    if attack.contained_by and not any(probe.holds(p) for p in attack.contained_by):
        request.applymarker(
            pytest.mark.xfail(
                strict=True,
                reason=f"{KERNEL_BOUNDARY}: {attack.row} "
                f"(missing here: {', '.join(attack.contained_by)}; the probe: {probe.raw})",
            )
        )


def assert_contained(
    world: World,
    before: dict[str, Any],
    texts: dict[str, str],
    report: dict[str, Any] | None,
    timed_out: bool,
) -> None:
    problems = []
    if timed_out:
        problems.append(f"referee did not finish within {RUN_TIMEOUT} s")
    if report is None:
        problems.append("the outer bound wrote no report")
    elif report["survivors"]:
        problems.append(f"processes survived: {report['survivors']}")
    problems += changes(before, snapshot(world.base))
    leftovers = sorted(p.name for p in (world.base / "tmp").iterdir())
    if leftovers:
        problems.append(f"run directories left behind: {leftovers}")
    for where, text in texts.items():
        for secret, what in (
            (world.token, "the secret file's token"),
            (world.env_token, "the secret environment variable"),
            (ESCAPED, "an attack's report of what got through"),
            ("FORGED", "a forged result"),
        ):
            if secret in text:
                at = text.index(secret)
                problems.append(f"{what} in {where}: …{text[max(0, at - 120) : at + 80]}…")
    if world.listeners is not None and world.listeners.received:
        problems.append(f"the listeners received: {world.listeners.received}")
    assert not problems, "\n".join(problems)


@pytest.fixture
def world_factory(mode_probe: tuple[Mode, Probe], session_dir: Path):
    worlds: list[World] = []

    def make(url: str, attack: Attack, prefix: str = "") -> World:
        mode, _ = mode_probe
        base = session_dir / f"{mode.name}-{prefix}{attack.name}-{secrets.token_hex(3)}"
        # The endless loop is every program of its row (oracles, reference, patches): no
        # honest program runs under the oracles' limit there, and being stopped at it is
        # what the row checks, at 1 s as well as at 8 (its rows burnt 18 s of a core each
        # at 8, 7 s at 3: three oracles, then the replacement, each run to its limit).
        endless = attack.name == "timeout"
        # Where the patch loops, each run waits out the test timeout once or twice: 3 s
        # is still several times what the honest runs of this project take (6 s made the
        # timeout-in-patch row an eighth of the suite).
        loops = attack.name in ("timeout", "timeout-in-patch")
        world = World.build(
            base,
            mode,
            url,
            oracle_timeout=1 if endless else 8,
            test_timeout=3 if loops else 6,
        )
        worlds.append(world)
        return world

    yield make
    for world in worlds:
        world.close()
        shutil.rmtree(world.base, ignore_errors=True)


class Hostile:
    """The fake model server's answers: the attack, aimed at the world's targets (the
    targets are known only once the world exists, after the server has its port)."""

    def __init__(self, attack: Attack) -> None:
        self.attack = attack
        self.targets: Targets | None = None

    def __call__(self, kind: str) -> str:
        assert self.targets is not None
        return self.attack.program(self.targets)


# ------------------------------------------------------------------------ the tests

NAMES = [a.name for a in ATTACKS]


@pytest.mark.parametrize("variant", ["oracles", "reference-raw"])
@pytest.mark.parametrize("attack", ATTACKS, ids=NAMES)
def test_the_command_line_contains_it(
    request: pytest.FixtureRequest,
    mode_probe: tuple[Mode, Probe],
    world_factory,
    attack: Attack,
    variant: str,
):
    """``referee arbitrate --apply --format json``: variant ``oracles`` is the product as
    shipped (hostile oracles, then hostile patches, refused or judged by values);
    ``reference-raw`` declares the hostile program as the project's reference and
    switches the capability refusal off, so the patches run in the sandbox."""
    _, probe = mode_probe
    expect_contained(request, attack, probe)
    hostile = Hostile(attack)
    with FakeModel(hostile) as model:
        world = world_factory(model.url, attack)
        targets = world.listen()
        hostile.targets = targets
        args = ["-m", "referee"]
        if variant == "reference-raw":
            (world.base / "project" / "refs.py").write_text(
                attack.program(targets), encoding="utf-8"
            )
            os.chown(world.base / "project" / "refs.py", world.mode.uid, world.mode.gid)
            config = world.base / "project" / "referee.toml"
            config.write_text(
                config.read_text(encoding="utf-8")
                + 'references = { "text:count_vowels" = "refs:count_vowels" }\n',
                encoding="utf-8",
            )
            args = ["-c", WITHOUT_CAPABILITY_CHECK]
        before = snapshot(world.base)
        done = world.run([*args, "arbitrate", FAILING, "--apply", "--format", "json"])
        texts = {"stdout": done.stdout, "stderr": done.stderr, ".referee/": world.stored()}
        assert_contained(world, before, texts, done.report, done.timed_out)
        assert done.returncode in (0, 3), done.stdout[-2000:] + done.stderr[-3000:]
        verdict = json.loads(done.stdout)
        assert verdict["fix"] is None and not verdict["applied"], verdict["patches"]
        kinds = model.kinds()
        if variant == "oracles":
            assert "oracle" in kinds, "the hostile program never reached an oracle"
        if verdict["verdict"] == "SOURCE_WRONG":
            assert "patch" in kinds and verdict["patches"], "no candidate patch was tried"
            for patch in verdict["patches"]:
                assert patch["status"] != "passed", patch
                if variant == "oracles" and patch["capabilities"]:
                    assert patch["status"] == "refused" and patch["calls_total"] is None


@pytest.mark.parametrize("mode_probe", ["user"], indirect=True)  # why: the docstring above
@pytest.mark.parametrize("attack", ATTACKS, ids=NAMES)
async def test_the_editor_contains_it(
    request: pytest.FixtureRequest,
    mode_probe: tuple[Mode, Probe],
    world_factory,
    attack: Attack,
):
    """The editor's arbitration: the code action's command ``referee.arbitrate`` over
    the language server protocol, with the user picking any fix it offers."""
    _, probe = mode_probe
    expect_contained(request, attack, probe)
    hostile = Hostile(attack)
    with FakeModel(hostile) as model:
        world = world_factory(model.url, attack, "lsp-")
        hostile.targets = world.listen()
        report_path = world.base / "reports" / "server.json"
        command = world.command(["-m", "referee", "serve"], report_path)
        config = ClientServerConfig(server_command=command, client_factory=make_client)
        before = snapshot(world.base)
        client = await config.start()
        assert isinstance(client, RefereeClient)
        client.profile = "visual-studio-code"
        questions: list[types.ShowMessageRequestParams] = []
        edits: list[types.ApplyWorkspaceEditParams] = []

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def _ask(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
            questions.append(params)
            return params.actions[0] if params.actions else None  # the user takes the fix

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def _apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            edits.append(params)
            return types.ApplyWorkspaceEditResult(applied=True)

        try:
            await start(client, "visual-studio-code", world.base / "project", Setup(files={}))
            uri = (world.base / "project" / "tests" / "test_text.py").as_uri()
            result: Any = await asyncio.wait_for(
                client.workspace_execute_command_async(
                    types.ExecuteCommandParams(
                        command="referee.arbitrate", arguments=[{"uri": uri, "line": FAILING_LINE}]
                    )
                ),
                RUN_TIMEOUT,
            )
            await client.shutdown_session()
            deadline = time.monotonic() + 30
            while World.report(report_path) is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        finally:
            await client.stop()
        texts = {
            "the command's answer": json.dumps(result),
            "the editor's messages": json.dumps(
                [str(m) for m in [*client.messages, *client.log_messages, *questions]]
            ),
            ".referee/": world.stored(),
        }
        assert_contained(world, before, texts, World.report(report_path), False)
        assert result["ok"], result
        assert result["verdict"]["fix"] is None and not result["applied"], result["verdict"]
        assert edits == [], "the editor was asked to apply an edit"
