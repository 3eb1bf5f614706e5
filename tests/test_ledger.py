"""The certificate ledger under concurrent writers, SIGKILL mid-write, and damage.

Real processes: two writers appending at once, and a writer killed at random moments
that reports each record's id through a pipe only after ``append`` returned (fsynced).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import time
from pathlib import Path

import pytest

from referee.checks import ledger

FORK = multiprocessing.get_context("fork")


def _fields(writer: str, n: int, padding: int = 0) -> dict[str, str]:
    return {
        "test_id": f"tests/test_{writer}.py::test_case_{n}",
        "call": f"f({n}, {'x' * padding!r})" if padding else f"f({n})",
        "old_value": str(n),
        "new_value": str(n + 1),
        "created": "2025-01-01T00:00:00Z",
    }


def _append_many(root: str, writer: str, count: int) -> None:
    for n in range(count):
        ledger.append(Path(root), _fields(writer, n))


def test_two_processes_appending_at_once_lose_nothing(tmp_path: Path) -> None:
    writers = [FORK.Process(target=_append_many, args=(str(tmp_path), name, 200)) for name in "ab"]
    for process in writers:
        process.start()
    for process in writers:
        process.join(60)
        assert process.exitcode == 0
    read = ledger.read(tmp_path)
    assert read.problems == []
    assert len(read.certificates) == 400
    assert {c.test_id for c in read.certificates} == {
        _fields(w, n)["test_id"] for w in "ab" for n in range(200)
    }


def _append_until_killed(root: str, report: int, start: int, padding: int) -> None:
    n = start
    while True:
        certificate = ledger.append(Path(root), _fields("killed", n, padding))
        os.write(report, (certificate.id + "\n").encode())  # only after the fsync
        n += 1


def crash_trials(
    root: Path, trials: int, seed: int, padding: int = 256 * 1024, window: float = 0.03
) -> tuple[int, int, int, int]:
    """Kill a writer ``trials`` times at random moments. Returns (trials, committed,
    lost, problems): committed records reported by the writer, those missing from the
    ledger afterwards, and torn lines reported by ``read``. Records are ``padding``
    bytes long, so that a kill can land inside a write (the kernel stops a large write
    between pages when a fatal signal is pending); each writer lives up to ``window``
    seconds."""
    rng = random.Random(seed)
    committed: set[str] = set()
    start = 0
    for _ in range(trials):
        read_end, write_end = os.pipe()
        writer = FORK.Process(
            target=_append_until_killed, args=(str(root), write_end, start, padding)
        )
        writer.start()
        os.close(write_end)
        time.sleep(rng.uniform(0.0, window))
        os.kill(writer.pid, signal.SIGKILL)
        writer.join()
        with os.fdopen(read_end, "rb") as pipe:
            reported = pipe.read().decode().split()
        committed.update(reported)
        start += 10_000
    read = ledger.read(root)
    present = {c.id for c in read.certificates}
    return trials, len(committed), len(committed - present), len(read.problems)


def test_a_writer_killed_mid_append_loses_no_committed_record(tmp_path: Path) -> None:
    trials, committed, lost, problems = crash_trials(tmp_path, trials=25, seed=8)
    assert committed > 0
    assert lost == 0
    # At most one torn line per kill, each reported, none fatal to the rest.
    assert problems <= trials


def test_a_torn_last_line_is_reported_and_the_next_append_starts_fresh(tmp_path: Path) -> None:
    first = ledger.append(tmp_path, _fields("x", 1))
    path = tmp_path / ledger.LEDGER
    with path.open("ab") as handle:
        handle.write(b'{"id": "abc", "test_id": "tests/t')  # a writer died here
    second = ledger.append(tmp_path, _fields("x", 2))
    read = ledger.read(tmp_path)
    assert [c.id for c in read.certificates] == [first.id, second.id]
    assert read.problems == ["line 2: not valid JSON (truncated write?)"]


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (b"\x00\x00\x00\n", "line 2: not valid JSON (truncated write?)"),
        (b"[1, 2]\n", "line 2: "),
        (b'{"id": "x"}\n', "line 2: "),
        (b"\xff\xfe{}\n", "line 2: not valid JSON (truncated write?)"),
    ],
    ids=["zeros", "not-an-object", "missing-fields", "bad-utf8"],
)
def test_damaged_lines_are_problems_and_the_rest_is_kept(
    tmp_path: Path, damage: bytes, problem: str
) -> None:
    first = ledger.append(tmp_path, _fields("x", 1))
    path = tmp_path / ledger.LEDGER
    with path.open("ab") as handle:
        handle.write(damage)
    last = ledger.append(tmp_path, _fields("x", 3))
    before = path.read_bytes()
    read = ledger.read(tmp_path)
    assert [c.id for c in read.certificates] == [first.id, last.id]
    assert len(read.problems) == 1 and read.problems[0].startswith(problem)
    # Reading never rewrites; appending never touches what is there.
    assert path.read_bytes() == before
    ledger.append(tmp_path, _fields("x", 4))
    assert path.read_bytes().startswith(before)


def test_a_forged_id_is_a_problem_not_a_certificate(tmp_path: Path) -> None:
    genuine = ledger.append(tmp_path, _fields("x", 1))
    path = tmp_path / ledger.LEDGER
    record = json.loads(path.read_text(encoding="utf-8"))
    record["new_value"] = "999"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    read = ledger.read(tmp_path)
    assert [c.id for c in read.certificates] == [genuine.id]
    assert read.problems == [
        f"line 2: certificate {genuine.id} does not match its content (edited by hand?); ignored"
    ]
