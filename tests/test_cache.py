"""referee's one disk cache: bounded in size, least recently used entries evicted first,
and each of the four caches built on it."""

from __future__ import annotations

import os
import time
from pathlib import Path

from referee.checks.arbitration.truth import ProgramCache
from referee.checks.cache import DiskCache
from referee.checks.config import Settings
from referee.checks.configuration import RefereeConfig
from referee.checks.execution.mutation import Grade, GradeCache
from referee.checks.judge.core import VerdictCache
from referee.checks.runner import ResultCache


def _key(number: int) -> str:
    return f"{number:064x}"


def _age(cache: DiskCache, key: str, seconds_ago: float) -> None:
    """Entries written within one clock tick would tie; give each its own 'last used'."""
    when = time.time() - seconds_ago
    os.utime(cache.path(key), (when, when))


def test_filling_a_cache_past_its_limit_evicts_the_least_recently_used(tmp_path: Path):
    cache = DiskCache(tmp_path / "c", max_bytes=10_000)
    entry = b"x" * 1_000
    for n in range(8):
        cache.put(_key(n), entry)
        _age(cache, _key(n), 100 - n)  # 0 is the oldest
    assert cache.size() == 8_000
    assert cache.get(_key(0)) == entry  # a hit: 0 is now the most recently used
    for n in range(8, 20):
        cache.put(_key(n), entry)
        _age(cache, _key(n), 100 - n)
        assert cache.size() <= 10_000
    present = {n for n in range(20) if cache.get(_key(n)) is not None}
    # ten fit; those kept are the ten used last: 0 (read back) and the nine newest
    assert present == {0, *range(11, 20)}
    assert cache.get(_key(19)) == entry


def test_a_cache_counts_entries_other_processes_wrote(tmp_path: Path):
    cache = DiskCache(tmp_path / "c", max_bytes=5_000)
    for n in range(4):  # written by another process: files this one never wrote
        path = cache.path(_key(n))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"y" * 1_000)
        _age(cache, _key(n), 100 - n)
    cache.put(_key(10), b"y" * 1_000)
    assert cache.size() == 5_000
    cache.put(_key(11), b"y" * 1_000)
    assert cache.size() <= 5_000
    assert cache.get(_key(0)) is None
    assert cache.get(_key(11)) is not None
    # another cache of the same folder (callers make one per call) shares the count
    DiskCache(tmp_path / "c", max_bytes=5_000).put(_key(12), b"y" * 1_000)
    assert cache.size() <= 5_000


def test_a_cache_without_a_folder_holds_nothing_and_unreadable_entries_are_misses(
    tmp_path: Path,
):
    nothing = DiskCache(None)
    nothing.put(_key(1), b"{}")
    assert nothing.get(_key(1)) is None
    cache = DiskCache(tmp_path / "c")
    cache.put(_key(2), b"not json")
    assert cache.get_json(_key(2)) is None
    assert cache.get_json(_key(3)) is None


def test_result_cache_keeps_its_pickles_beside_other_caches_and_bounds_only_them(
    tmp_path: Path,
):
    """The check results' pickles lie at the top of the cache folder, with the other
    caches' folders: only the pickles count towards, and are removed by, its limit."""
    other = DiskCache(tmp_path / "judge")
    other.put(_key(1), b"z" * 5_000)
    config = RefereeConfig.model_validate({"cache-size": 3_000})
    pickles = []
    for n in range(4):
        cache = ResultCache(tmp_path, Settings(config, tmp_path / f"project{n}"))
        cache.dirty = True
        cache.entries = {"padding": "p" * 1_000}  # type: ignore[dict-item]
        cache.save()
        _age(cache.store, cache.key, 100 - n)
        pickles.append(cache.path)
    assert sum(p.stat().st_size for p in tmp_path.glob("check-*.pickle")) <= 3_000
    assert not pickles[0].exists() and pickles[3].exists()
    assert other.get(_key(1)) is not None


def test_the_typed_caches_round_trip_through_the_one_cache(tmp_path: Path):
    programs = ProgramCache(tmp_path / "arbitration")
    programs.put(_key(1), "def f(): return 1")
    assert programs.get(_key(1)) == "def f(): return 1"
    verdicts = VerdictCache(tmp_path / "judge")
    verdicts.put(_key(2), {"text": "PASS"})
    assert verdicts.get(_key(2)) == {"text": "PASS"}
    grades = GradeCache(tmp_path / "mutation")
    grades.put(_key(3), Grade("tests/test_m.py::test_f", "killed", total=2, tried=2))
    back = grades.get(_key(3))
    assert back is not None and back.status == "killed" and back.total == 2 and back.cached
