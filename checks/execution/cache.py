"""The execution checks' outcomes (dataclasses) in referee's bounded disk cache, one JSON
file per key; a missing or unreadable entry is a miss, a failed write is no error."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from referee.checks.cache import DiskCache

T = TypeVar("T")


class JsonCache(Generic[T]):
    kind: ClassVar[type]  # the dataclass an entry is read back as

    def __init__(self, directory: Path | None, max_bytes: int | None = None) -> None:
        self.directory = directory
        self.store = DiskCache(directory, max_bytes)

    def get(self, key: str) -> T | None:
        data = self.store.get_json(key)
        if not isinstance(data, dict):
            return None
        try:
            value: Any = self.kind(**{**data, "cached": True})
        except (TypeError, ValueError):
            return None
        return value

    def put(self, key: str, value: T) -> None:
        self.store.put_json(key, asdict(value))  # type: ignore[call-overload]
