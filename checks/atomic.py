"""Writing a user's file so that a crash or a concurrent edit never costs them work.

:func:`write_text_atomic` writes a temporary file in the same directory, fsyncs it,
renames it over the target (``os.replace``, atomic on POSIX and Windows) and fsyncs the
directory, so the file is either all old or all new, even after a power cut. Given the
hash of the content the caller read, it refuses — :class:`StaleFileError` — when the file
changed since: an edit is never applied to text it was not computed from.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

__all__ = [
    "StaleFileError",
    "append_json_line",
    "sha256_bytes",
    "sha256_file",
    "write_text_atomic",
]


class StaleFileError(RuntimeError):
    """The file's content is not what the edit was computed from."""

    def __init__(self, path: Path, expected: str, actual: str | None) -> None:
        self.path = path
        self.expected = expected
        self.actual = actual
        now = "was deleted" if actual is None else "changed"
        super().__init__(
            f"{path} {now} since it was read (expected sha256 {expected[:12]}…, "
            f"found {actual[:12] + '…' if actual else 'no file'}); not written — "
            "read it again and redo the edit"
        )


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str | None:
    """The sha256 of the file's bytes, or ``None`` when there is no such file."""
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()  # type: ignore[attr-defined]
    except AttributeError:  # Python < 3.11
        return sha256_bytes(Path(path).read_bytes())
    except FileNotFoundError:
        return None


def _check(path: Path, expected: str | None) -> None:
    if expected is None:
        return
    actual = sha256_file(path)
    if actual != expected:
        raise StaleFileError(path, expected, actual)


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # Windows cannot open a directory; its rename is durable on its own
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def write_text_atomic(
    path: str | os.PathLike[str],
    text: str,
    *,
    expected_sha256: str | None = None,
    encoding: str = "utf-8",
) -> str:
    """Replace ``path``'s content with ``text`` atomically and durably; return the new
    content's sha256.

    ``expected_sha256`` is the hash of the bytes the caller read (:func:`sha256_file`);
    when given and the file now holds something else, or is gone, nothing is written and
    :class:`StaleFileError` is raised. The text is written as given (no newline
    translation). An existing file keeps its permission bits (and its owner, where we
    may set it); a symbolic link stays a link and its target is replaced.
    """
    target = Path(os.path.realpath(path))
    data = text.encode(encoding)
    _check(target, expected_sha256)
    try:
        before = target.stat()
    except FileNotFoundError:
        before = None
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if before is not None:
            os.chmod(temp, stat.S_IMODE(before.st_mode))
            if hasattr(os, "chown"):
                with contextlib.suppress(OSError):
                    os.chown(temp, before.st_uid, before.st_gid)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temp, 0o666 & ~umask)
        # Once more, as late as possible: the window for an editor's write is the rename.
        _check(target, expected_sha256)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(target.parent)
    return sha256_bytes(data)


def append_json_line(path: Path, record: dict[str, Any]) -> None:
    """Append ``record`` as one JSON line to ``path``, durably, under an exclusive lock.

    The append-only files (.referee/certificates.jsonl, .referee/review.jsonl) use this: two
    writers never interleave, and a line a killed writer left half-written is closed off, so
    the new record starts on a line of its own.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as handle:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    line = b"\n" + line
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def json_lines(path: Path, problems: list[str]) -> list[tuple[int, bytes]] | None:
    """The non-blank lines of an append-only file written by :func:`append_json_line`,
    numbered from 1: none when the file is missing; None, with the reason added to
    ``problems``, when it cannot be read."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as exc:
        problems.append(f"cannot read {path}: {exc.strerror or exc}")
        return None
    return [(n, line) for n, line in enumerate(raw.split(b"\n"), start=1) if line.strip()]


def create_text_exclusive(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> str:
    """Create ``path`` with ``text``, whole or not at all, and never over a file that
    exists (:class:`FileExistsError`); return the content's sha256. The text goes to a
    temporary file beside it first, which is then linked into place."""
    target = Path(path)
    data = text.encode(encoding)
    temp = str(target.with_name(f".{target.name}.{os.urandom(6).hex()}.tmp"))
    # created with 0o666 under the umask, as any new file of the user's
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(temp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
    return hashlib.sha256(data).hexdigest()
