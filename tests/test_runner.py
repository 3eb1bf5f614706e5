"""The runner: serial and parallel runs agree, the result cache is reused and invalidated
correctly, and .gitignore is respected when walking but not for files named explicitly."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from referee.checks import runner
from referee.checks.config import Settings, discover
from referee.checks.configuration import RefereeConfig
from referee.checks.models import CheckReport

MODULES = {
    "stub.py": "def parse(text) -> int:\n    # TODO: write it\n    pass\n",
    "test_vacuous.py": 'def test_total(total):\n    assert (total == 10, "off")\n',
    "test_quiet.py": "def test_runs(app):\n    app.run()\n",
    "clean.py": "def double(x):\n    return 2 * x\n",
    "broken.py": "def total(items)\n    return sum(items)\n",
    "notes.md": "# Notes\n\nTODO: write them\n",
}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def results_key(results: list[runner.FileResult]) -> list[tuple]:
    return [(r.display, r.skipped, [f.model_dump() for f in r.findings]) for r in results]


@pytest.fixture
def many_files(project: Path) -> Path:
    """40 files in nested packages, mixing findings, clean files and a skipped file."""
    write(project / "referee.toml", 'extend-include = ["**/*.md"]\n')
    for index in range(40):
        name, text = list(MODULES.items())[index % len(MODULES)]
        stem, suffix = os.path.splitext(name)
        write(project / f"pkg{index % 4}" / f"{stem}_{index:02d}{suffix}", text)
    (project / "pkg0" / "blob.py").write_bytes(b"\x00binary")
    return project


# --------------------------------------------------------------------- serial/parallel


def test_parallel_and_serial_runs_give_identical_results(many_files: Path):
    settings = discover(many_files)
    targets = runner.collect([many_files], settings)
    assert len(targets) > runner._PARALLEL_THRESHOLD
    serial = runner.run(targets, settings, jobs=1)
    parallel = runner.run(targets, settings, jobs=2)
    assert results_key(parallel) == results_key(serial)
    assert [r.display for r in parallel] == [t.display for t in targets]
    codes = {f.code for r in serial for f in r.findings}
    assert codes >= {"REF001", "REF101", "REF102", "REF110", "REF112"}
    assert sum(1 for r in serial if r.skipped) == 1


def test_parallel_and_serial_cli_reports_are_identical(invoke, many_files: Path):
    serial = invoke("check", "--no-cache", "-j", "1", "--format", "json", cwd=many_files)
    parallel = invoke("check", "--no-cache", "-j", "2", "--format", "json", cwd=many_files)
    assert serial.exit_code == parallel.exit_code == 1
    assert parallel.stdout == serial.stdout
    report = CheckReport.model_validate_json(parallel.stdout)
    assert report.summary.files_checked == 41 - 1
    assert report.summary.files_skipped == 1


def test_collect_walks_in_a_stable_sorted_order(many_files: Path):
    settings = discover(many_files)
    first = [t.relpath for t in runner.collect([many_files], settings)]
    assert first == [t.relpath for t in runner.collect([many_files], settings)]
    assert first == sorted(first)


def test_a_file_named_twice_is_checked_once(project: Path):
    module = write(project / "stub.py", MODULES["stub.py"])
    settings = discover(project)
    targets = runner.collect([module, project, Path(os.path.relpath(module))], settings)
    assert [t.relpath for t in targets] == ["stub.py"]


# ------------------------------------------------------------------------------ cache


def _cache_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("check-*.pickle"))


def _run_with_cache(project: Path, cache_dir: Path, settings: Settings | None = None):
    settings = settings or discover(project)
    cache = runner.ResultCache(cache_dir, settings)
    targets = runner.collect([project], settings)
    return runner.run(targets, settings, jobs=1, cache=cache)


def test_cache_returns_the_same_findings_on_a_second_run(project: Path, tmp_path: Path):
    for name, text in MODULES.items():
        if name.endswith(".py"):
            write(project / name, text)
    cache_dir = tmp_path / "cache"
    first = _run_with_cache(project, cache_dir)
    (cache_file,) = _cache_files(cache_dir)
    assert cache_file.stat().st_size > 0
    second = _run_with_cache(project, cache_dir)
    assert results_key(second) == results_key(first)
    assert any(r.findings for r in first)


def test_cache_hit_is_served_without_reading_the_file(project: Path, tmp_path: Path):
    """Size and mtime are the cache key (as in ruff): a file whose content changed but
    whose size and mtime did not is served from the cache. This proves the second run
    really used the cache."""
    module = write(project / "stub.py", MODULES["stub.py"])
    cache_dir = tmp_path / "cache"
    (first,) = _run_with_cache(project, cache_dir)
    assert [f.code for f in first.findings] == ["REF101", "REF102"]
    stat = module.stat()
    same_size = "def parse(text) -> int:\n    return int(text)  # real work, same size \n"
    same_size = same_size[: stat.st_size - 1].ljust(stat.st_size - 1) + "\n"
    module.write_text(same_size, encoding="utf-8")
    assert module.stat().st_size == stat.st_size
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    (cached,) = _run_with_cache(project, cache_dir)
    assert [f.code for f in cached.findings] == ["REF101", "REF102"]
    # Read afresh, the new content has no finding at all.
    (fresh,) = runner.run(runner.collect([module], discover(project)), discover(project), jobs=1)
    assert fresh.findings == []


def test_cache_picks_up_an_edited_file(project: Path, tmp_path: Path):
    module = write(project / "clean.py", MODULES["clean.py"])
    write(project / "other.py", MODULES["stub.py"])
    cache_dir = tmp_path / "cache"
    first = _run_with_cache(project, cache_dir)
    assert [r.findings for r in first if r.display.endswith("clean.py")] == [[]]
    before = module.stat().st_mtime_ns
    module.write_text(MODULES["clean.py"] + "\n\ndef later():\n    pass  # TODO\n", "utf-8")
    os.utime(module, ns=(before + 2_000_000_000, before + 2_000_000_000))
    second = _run_with_cache(project, cache_dir)
    (edited,) = [r for r in second if r.display.endswith("clean.py")]
    assert [(f.code, f.span.start.line) for f in edited.findings] == [
        ("REF101", 5),
        ("REF102", 6),
    ]
    (untouched,) = [r for r in second if r.display.endswith("other.py")]
    assert [f.code for f in untouched.findings] == ["REF101", "REF102"]


def test_cache_through_the_cli_picks_up_an_edit(invoke, project: Path, tmp_path: Path):
    cache_dir = Path(os.environ["REFEREE_CACHE_DIR"])
    module = write(project / "mod.py", MODULES["clean.py"])
    assert invoke("check", cwd=project).exit_code == 0
    assert len(_cache_files(cache_dir)) == 1
    assert invoke("check", cwd=project).exit_code == 0
    before = module.stat().st_mtime_ns
    write(module, MODULES["stub.py"])
    os.utime(module, ns=(before + 2_000_000_000, before + 2_000_000_000))
    result = invoke("check", cwd=project)
    assert result.exit_code == 1
    assert result.stdout.startswith("mod.py:1:5: REF101 ")


def test_a_cached_result_names_the_file_as_this_run_does(invoke, project: Path):
    """Cached from the project root (src/mod.py), read from src/: the file is mod.py there,
    in the text, JSON and SARIF reports alike."""
    write(project / "src" / "mod.py", MODULES["stub.py"])
    first = invoke("check", "src", cwd=project)
    assert first.stdout.startswith("src/mod.py:1:5: REF101 ")
    again = invoke("check", cwd=project / "src")
    assert again.stdout.startswith("mod.py:1:5: REF101 "), again.stdout
    report = CheckReport.model_validate_json(
        invoke("check", "--format", "json", cwd=project / "src").stdout
    )
    assert report.findings and {f.path for f in report.findings} == {"mod.py"}


def test_corrupt_cache_file_is_ignored_and_replaced(project: Path, tmp_path: Path):
    write(project / "stub.py", MODULES["stub.py"])
    cache_dir = tmp_path / "cache"
    expected = results_key(_run_with_cache(project, cache_dir))
    (cache_file,) = _cache_files(cache_dir)
    for garbage in (
        b"",
        b"not a pickle at all",
        b"\x80\x05\x95garbage",
        cache_file.read_bytes()[:20],
    ):
        cache_file.write_bytes(garbage)
        assert results_key(_run_with_cache(project, cache_dir)) == expected
        assert cache_file.read_bytes() != garbage  # rewritten with good entries


def test_cache_of_another_type_is_ignored(project: Path, tmp_path: Path):
    import pickle

    write(project / "stub.py", MODULES["stub.py"])
    cache_dir = tmp_path / "cache"
    expected = results_key(_run_with_cache(project, cache_dir))
    (cache_file,) = _cache_files(cache_dir)
    cache_file.write_bytes(pickle.dumps(["a", "list", "not", "a", "dict"]))
    assert results_key(_run_with_cache(project, cache_dir)) == expected


def test_changing_the_configuration_does_not_reuse_old_results(project: Path, tmp_path: Path):
    write(project / "stub.py", MODULES["stub.py"])
    cache_dir = tmp_path / "cache"
    (first,) = _run_with_cache(project, cache_dir)
    assert [f.code for f in first.findings] == ["REF101", "REF102"]
    write(project / "referee.toml", 'ignore = ["REF102"]\n')
    (second,) = _run_with_cache(project, cache_dir)
    assert [f.code for f in second.findings] == ["REF101"]
    assert len(_cache_files(cache_dir)) == 2


def test_no_cache_flag_and_cache_setting_write_nothing(invoke, project: Path):
    cache_dir = Path(os.environ["REFEREE_CACHE_DIR"])
    write(project / "stub.py", MODULES["stub.py"])
    invoke("check", "--no-cache", cwd=project)
    assert _cache_files(cache_dir) == []
    write(project / "referee.toml", "cache = false\n")
    invoke("check", cwd=project)
    assert _cache_files(cache_dir) == []
    write(project / "referee.toml", "cache = true\n")
    invoke("check", cwd=project)
    assert len(_cache_files(cache_dir)) == 1


def test_unwritable_cache_directory_only_costs_time(project: Path, tmp_path: Path):
    write(project / "stub.py", MODULES["stub.py"])
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be", encoding="utf-8")
    (result,) = _run_with_cache(project, blocker / "cache")
    assert [f.code for f in result.findings] == ["REF101", "REF102"]


# ---------------------------------------------------------------------------- gitignore


@pytest.fixture
def repo(project: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(project)], check=True, capture_output=True)
    write(project / ".gitignore", "ignored.py\ngenerated/\n*.tmp.py\n")
    write(project / "kept.py", MODULES["stub.py"])
    write(project / "ignored.py", MODULES["stub.py"])
    write(project / "generated" / "api.py", MODULES["stub.py"])
    write(project / "src" / "scratch.tmp.py", MODULES["stub.py"])
    write(project / "src" / "real.py", MODULES["stub.py"])
    return project


def test_gitignored_files_are_skipped_when_walking(repo: Path):
    settings = discover(repo)
    walked = sorted(t.relpath for t in runner.collect([repo], settings))
    assert walked == ["kept.py", "src/real.py"]


def test_gitignored_file_named_explicitly_is_checked(invoke, repo: Path):
    result = invoke("check", "--format", "json", "ignored.py", "generated/api.py", cwd=repo)
    report = CheckReport.model_validate_json(result.stdout)
    assert sorted({f.path for f in report.findings}) == ["generated/api.py", "ignored.py"]


def test_gitignored_directory_named_explicitly_is_walked(repo: Path):
    settings = discover(repo)
    walked = [t.relpath for t in runner.collect([repo / "generated"], settings)]
    assert walked == ["generated/api.py"]


def test_gitignore_applies_when_walking_a_subdirectory(repo: Path):
    settings = discover(repo)
    walked = [t.relpath for t in runner.collect([repo / "src"], settings)]
    assert walked == ["src/real.py"]


def test_respect_gitignore_false_checks_ignored_files(repo: Path):
    write(repo / "referee.toml", "respect-gitignore = false\n")
    settings = discover(repo)
    walked = sorted(t.relpath for t in runner.collect([repo], settings))
    assert walked == [
        "generated/api.py",
        "ignored.py",
        "kept.py",
        "src/real.py",
        "src/scratch.tmp.py",
    ]


def test_gitignore_is_ignored_outside_a_git_repository(project: Path):
    write(project / ".gitignore", "ignored.py\n")
    write(project / "ignored.py", MODULES["stub.py"])
    settings = discover(project)
    assert [t.relpath for t in runner.collect([project], settings)] == ["ignored.py"]


def test_gitignored_files_are_absent_from_the_cli_report(invoke, repo: Path):
    result = invoke("check", "--format", "json", cwd=repo)
    report = CheckReport.model_validate_json(result.stdout)
    assert sorted({f.path for f in report.findings}) == ["kept.py", str(Path("src/real.py"))]
    assert report.summary.files_checked == 2


def test_cache_is_not_shared_across_engine_versions(tmp_path: Path, monkeypatch):
    """An edited rule (an editable install) must not be served an older rule's results."""
    settings = Settings(RefereeConfig(), tmp_path)
    before = runner.ResultCache(tmp_path / "cache", settings).path
    monkeypatch.setattr(runner, "_engine_stamp", lambda: "placeholders.py:1:2")
    after = runner.ResultCache(tmp_path / "cache", settings).path
    assert before != after


def test_indexed_targets_are_the_files_a_walk_of_the_folder_indexes(repo: Path):
    """What the language server re-reads when a file changes on disk: the files that
    walking the folder would index, and no others (gitignored, excluded, not Python,
    outside the folder)."""
    write(repo / "referee.toml", 'exclude = ["build/", "skip_*.py"]\n')
    write(repo / "build" / "out.py", MODULES["stub.py"])
    write(repo / "src" / "skip_me.py", MODULES["stub.py"])
    write(repo / "notes.md", MODULES["notes.md"])
    write(repo / "src" / "types.pyi", "def f() -> int: ...\n")
    settings = discover(repo)
    everything = sorted(p for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts)
    walked = sorted(
        t.relpath for t in runner.collect([repo], settings) if t.relpath.endswith((".py", ".pyi"))
    )
    assert walked == ["kept.py", "src/real.py", "src/types.pyi"]
    assert [t.relpath for t in runner.indexed_targets(everything, repo, settings)] == walked
    # A folder below the root: its files only, relpaths from the project's root.
    src = [t.relpath for t in runner.indexed_targets(everything, repo / "src", settings)]
    assert src == ["src/real.py", "src/types.pyi"]
    # A file that is gone is still the walk's to read (and summarize_file finds nothing).
    (gone,) = runner.indexed_targets([repo / "src" / "gone.py"], repo, settings)
    assert runner.summarize_file(gone, settings) is None
    assert runner.indexed_targets([repo.parent / "elsewhere.py", repo], repo, settings) == []


def test_a_walk_reads_test_run_logs_with_the_run_output_rules(project: Path):
    # A .log no setting asked for: a run that ran nothing is an error; an empty log, or one
    # that says other things, is not (only the run-output rules read it).
    write(project / "logs/run.log", "$ pytest\ncollected 0 items\n\nno tests ran in 0.01s\n")
    write(project / "logs/empty.log", "")
    write(project / "logs/other.log", "TODO: lorem ipsum\n")
    settings = discover(project)
    targets = runner.collect([project / "logs"], settings)
    assert [t.relpath for t in targets] == ["logs/empty.log", "logs/other.log", "logs/run.log"]
    assert all(t.run_log for t in targets)
    results = runner.run(targets, settings, jobs=1)
    by_file = {r.display.rsplit("/", 1)[-1]: [f.code for f in r.findings] for r in results}
    assert by_file == {"empty.log": [], "other.log": [], "run.log": ["REF130"]}
