"""One JSON file per key, for the execution checks' outcomes (dataclasses), written
atomically; a missing or unreadable entry is a miss, a failed write is no error."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

T = TypeVar("T")


class JsonCache(Generic[T]):
    kind: ClassVar[type]  # the dataclass an entry is read back as

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def get(self, key: str) -> T | None:
        if self.directory is None:
            return None
        try:
            data = json.loads((self.directory / key[:2] / f"{key}.json").read_text("utf-8"))
            value: Any = self.kind(**{**data, "cached": True})
            return value
        except (OSError, ValueError, TypeError):
            return None

    def put(self, key: str, value: T) -> None:
        if self.directory is None:
            return
        folder = self.directory / key[:2]
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(asdict(value), handle)  # type: ignore[call-overload]
            os.replace(tmp, folder / f"{key}.json")
        except OSError:
            pass
