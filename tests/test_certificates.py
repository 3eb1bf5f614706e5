"""Certificates are bound to the test they cover: a forged or stale one is REF309.

Real git repositories and the real ``referee guard`` command (see guard_catalogue).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from guard_catalogue.cases import BASIC, PROJECT, T, certify, commit_repo, run_guard, write_files

from referee.checks import ledger

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="the guard needs git")

FIELDS = {
    "test_id": "tests/test_shop.py::test_total",
    "call": "total([10, 20])",
    "old_value": "30",
    "new_value": "31",
}


def _repo(tmp_path: Path, after: str) -> Path:
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: BASIC})
    write_files(repo, {T: after})
    return repo


def test_test_sha256_is_the_hash_of_the_changed_assertion() -> None:
    text = BASIC.replace("== 30", "== 31")
    digest = ledger.test_sha256(text, T, FIELDS["test_id"], "31")
    assert digest == ledger.normalized_text_hash("assert total([10, 20]) == 31")
    assert ledger.test_sha256(text, T, "tests/test_shop.py::test_missing", "31") is None
    assert ledger.test_sha256(text, T, FIELDS["test_id"], "32") is None


def test_a_forged_certificate_is_reported_and_not_honoured(tmp_path: Path) -> None:
    repo = _repo(tmp_path, BASIC.replace("== 30", "== 31"))
    certify(repo, {**FIELDS, "test_sha256": ledger.normalized_text_hash("assert True")})
    outcome = run_guard(repo)
    assert outcome.rc == 1, outcome.describe()
    assert outcome.codes("error") == {"REF302", "REF309"}
    [mismatch] = [f for f in outcome.findings if f["code"] == "REF309"]
    assert "its `test_sha256` differs" in mismatch["message"]
    assert "not honoured" in mismatch["message"]


def test_the_same_certificate_bound_to_the_assertion_is_honoured(tmp_path: Path) -> None:
    repo = _repo(tmp_path, BASIC.replace("== 30", "== 31"))
    certify(repo, FIELDS)  # test_sha256 computed from the file, as arbitration does
    outcome = run_guard(repo)
    assert outcome.rc == 0, outcome.describe()
    assert outcome.codes("info") == {"REF302"}


def test_whitespace_changes_keep_the_binding(tmp_path: Path) -> None:
    repo = _repo(tmp_path, BASIC.replace("== 30", "== 31"))
    certify(repo, FIELDS)
    write_files(repo, {T: BASIC.replace("total([10, 20]) == 30", "total([10,20])  ==  31")})
    outcome = run_guard(repo)
    assert outcome.rc == 0, outcome.describe()


def test_a_certificate_for_a_test_that_moved_no_longer_names_it(tmp_path: Path) -> None:
    moved = "tests/test_totals.py"
    repo = tmp_path / "repo"
    commit_repo(repo, {**PROJECT, T: BASIC})
    without_total = BASIC.split("\n\n\ndef test_total")[0] + "\n"
    write_files(
        repo,
        {
            T: without_total,
            moved: "from shop import total\n\n\ndef test_total():\n"
            "    assert total([10, 20]) == 31\n",
        },
    )
    # Certified at the old location, bound to the assertion's text.
    certify(
        repo,
        {**FIELDS, "test_sha256": ledger.normalized_text_hash("assert total([10, 20]) == 31")},
    )
    outcome = run_guard(repo)
    assert outcome.rc == 1, outcome.describe()
    assert "REF309" in outcome.codes("error")
    assert any("no longer a test" in f["message"] for f in outcome.findings), outcome.describe()
