"""write_text_atomic: all old or all new, refused on stale content, permissions kept."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import stat
import time
from pathlib import Path

import pytest

from referee.checks.atomic import StaleFileError, sha256_file, write_text_atomic


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_writes_and_returns_the_new_hash(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    digest = write_text_atomic(target, "x = 1\r\ny = 'é'\n")
    assert target.read_bytes() == "x = 1\r\ny = 'é'\n".encode()
    assert digest == sha256_file(target)
    assert _leftovers(tmp_path) == []


def test_writes_when_the_file_is_what_was_read(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("old\n", encoding="utf-8")
    write_text_atomic(target, "new\n", expected_sha256=sha256_file(target))
    assert target.read_text(encoding="utf-8") == "new\n"


def test_refuses_a_file_that_changed_since_it_was_read(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("as read\n", encoding="utf-8")
    read = sha256_file(target)
    target.write_text("edited meanwhile\n", encoding="utf-8")
    with pytest.raises(StaleFileError, match="changed since it was read") as caught:
        write_text_atomic(target, "our edit\n", expected_sha256=read)
    assert target.read_text(encoding="utf-8") == "edited meanwhile\n"
    assert caught.value.expected == read
    assert caught.value.actual == sha256_file(target)
    assert _leftovers(tmp_path) == []


def test_refuses_a_file_that_was_deleted_since_it_was_read(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("as read\n", encoding="utf-8")
    read = sha256_file(target)
    target.unlink()
    with pytest.raises(StaleFileError, match="was deleted"):
        write_text_atomic(target, "our edit\n", expected_sha256=read)
    assert not target.exists()


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600, 0o444])
def test_keeps_permission_bits(tmp_path: Path, mode: int) -> None:
    target = tmp_path / "script.py"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(mode)
    write_text_atomic(target, "new\n")
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert target.read_text(encoding="utf-8") == "new\n"


def test_new_file_follows_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "new.py", "x\n")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "new.py").stat().st_mode) == 0o640


def test_a_symlink_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.py"
    real.write_text("old\n", encoding="utf-8")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    write_text_atomic(link, "new\n", expected_sha256=sha256_file(real))
    assert link.is_symlink()
    assert real.read_text(encoding="utf-8") == "new\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("old\n", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(target, "\udcff", encoding="utf-8")
    assert target.read_text(encoding="utf-8") == "old\n"
    assert _leftovers(tmp_path) == []


def _rewrite_forever(path: str, contents: list[str]) -> None:
    n = 0
    while True:
        write_text_atomic(path, contents[n % 2])
        n += 1


def test_killed_mid_write_leaves_old_or_new_never_partial(tmp_path: Path) -> None:
    """A child rewrites a 2 MB file in a loop; SIGKILL at random moments must leave one of
    the two complete versions."""
    contents = ["a" * 2_000_000 + "\n", "b" * 1_500_000 + "\n"]
    target = tmp_path / "big.txt"
    write_text_atomic(target, contents[0])
    context = multiprocessing.get_context("fork")
    rng = random.Random(8)
    for _ in range(6):
        child = context.Process(target=_rewrite_forever, args=(str(target), contents))
        child.start()
        time.sleep(rng.uniform(0.02, 0.15))
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        assert target.read_text(encoding="utf-8") in contents
    # Killed runs leave their temporary files; they never replace the target.
    assert all(name.startswith(".big.txt.") for name in _leftovers(tmp_path))
