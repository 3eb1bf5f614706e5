"""referee's one on-disk cache: one file per key, bounded in size.

Every cache referee keeps — the check results, the judge's verdicts, the programs
arbitration generated, the execution checks' grades and outcomes — is a ``DiskCache``: a
folder of files written atomically (a reader never sees half an entry, two processes may
write the same key), where a missing or unreadable entry is a miss and a failed write is
no error (a cache that cannot be written only costs time next run).

It is bounded: after a write takes a folder past its size limit (``cache-size`` in the
configuration, ``DEFAULT_MAX_BYTES`` by default), the least recently used entries are
removed until it fits again. "Used" is the file's modification time, which a hit brings
to now (access times are not kept on most file systems: ``noatime``, ``relatime``).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

# 200 MB a cache: five of them (results, verdicts, programs, grades, differential outcomes)
# stay under 1 GB together.
DEFAULT_MAX_BYTES = 200_000_000


# What this process believes each folder holds: counted at its first write here, then kept
# by adding what is written (by any DiskCache of the folder: callers make one per call);
# counted again before anything is removed, which also takes in other processes' writes.
_USED: dict[tuple[Path | None, str, str, bool], int] = {}
_USED_LOCK = threading.Lock()


class DiskCache:
    """Bytes by key in ``directory``, at most ``max_bytes`` of them.

    ``fanout`` files a key under a folder named by its first two characters (many small
    entries); without it entries lie in ``directory`` itself, named ``prefix + key +
    suffix`` — the folder may hold other things, which are never counted nor removed.
    ``directory`` None is a cache that holds nothing.
    """

    def __init__(
        self,
        directory: Path | None,
        max_bytes: int | None = None,
        *,
        suffix: str = ".json",
        prefix: str = "",
        fanout: bool = True,
    ) -> None:
        self.directory = directory
        self.max_bytes = max_bytes if max_bytes is not None else DEFAULT_MAX_BYTES
        self.suffix, self.prefix, self.fanout = suffix, prefix, fanout
        self._folder = (directory, prefix, suffix, fanout)

    def path(self, key: str) -> Path:
        assert self.directory is not None
        name = f"{self.prefix}{key}{self.suffix}"
        return self.directory / key[:2] / name if self.fanout else self.directory / name

    def get(self, key: str) -> bytes | None:
        if self.directory is None:
            return None
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # used now: the last to be evicted
        return data

    def put(self, key: str, data: bytes) -> None:
        if self.directory is None:
            return
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=self.suffix)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(tmp, path)
            except BaseException:
                _unlink(Path(tmp))
                raise
        except OSError:
            return
        with _USED_LOCK:
            used = _USED.get(self._folder)
            used = self.size() if used is None else used + len(data)
            _USED[self._folder] = used
        if used > self.max_bytes:
            self.evict()

    def get_json(self, key: str) -> Any:
        """The JSON value stored under ``key``; None when absent or unreadable."""
        data = self.get(key)
        if data is None:
            return None
        try:
            return json.loads(data)
        except ValueError:
            return None

    def put_json(self, key: str, value: Any) -> None:
        self.put(key, json.dumps(value).encode("utf-8"))

    def entries(self) -> list[tuple[float, int, Path]]:
        """(last used, size, path) of every entry."""
        if self.directory is None:
            return []
        folders = [self.directory]
        if self.fanout:
            try:
                folders = [p for p in self.directory.iterdir() if len(p.name) == 2 and p.is_dir()]
            except OSError:
                return []
        found = []
        for folder in folders:
            try:
                listing = list(os.scandir(folder))
            except OSError:
                continue
            for item in listing:
                name = item.name
                if not (name.startswith(self.prefix) and name.endswith(self.suffix)):
                    continue
                if name.startswith(".tmp-"):
                    continue  # another process's write in progress
                try:
                    stat = item.stat()
                except OSError:
                    continue  # removed meanwhile
                if item.is_file(follow_symlinks=False):
                    found.append((stat.st_mtime, stat.st_size, Path(item.path)))
        return found

    def size(self) -> int:
        return sum(size for _, size, _ in self.entries())

    def evict(self) -> None:
        """Remove the least recently used entries until the folder fits its limit."""
        entries = sorted(self.entries())
        used = sum(size for _, size, _ in entries)
        for _, size, path in entries:
            if used <= self.max_bytes:
                break
            _unlink(path)
            used -= size
        with _USED_LOCK:
            _USED[self._folder] = used


def _unlink(path: Path) -> None:
    # gone already (another process evicted it), or not ours to remove
    with contextlib.suppress(OSError):
        path.unlink()


def default_cache_dir() -> Path:
    """Where referee keeps its caches: ``$REFEREE_CACHE_DIR``, else the user's cache
    directory (platformdirs)."""
    from platformdirs import user_cache_dir

    return Path(os.environ.get("REFEREE_CACHE_DIR") or user_cache_dir("referee"))
