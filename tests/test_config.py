"""Configuration: discovery, rule selection, per-file ignores, severities, suppression
comments, excludes, glob semantics, and errors that name the file, the key and the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.checks import runner
from referee.checks.config import (
    DEFAULT_EXCLUDE,
    ConfigError,
    Settings,
    discover,
    find_config,
    glob_match,
    load_file,
)
from referee.checks.configuration import RefereeConfig
from referee.checks.engine import check_text, suppressions
from referee.checks.models import Severity
from referee.checks.registry import RULES

ALL_CODES = frozenset(rule.code for rule in RULES)

# A module that trips two rules: REF101 (line 1) and REF102 (line 2).
STUB = "def parse(text) -> int:\n    # TODO: write the parser\n    pass\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def codes(findings) -> list[str]:
    return [f.code for f in findings]


# ------------------------------------------------------------------------------ discovery


def test_discover_reads_referee_toml(tmp_path: Path):
    write(tmp_path / "referee.toml", 'select = ["REF101"]\n')
    settings = discover(tmp_path)
    assert settings.path == tmp_path / "referee.toml"
    assert settings.root == tmp_path
    assert settings.enabled == {"REF101"}


def test_discover_reads_dot_referee_toml(tmp_path: Path):
    write(tmp_path / ".referee.toml", 'ignore = ["REF1"]\n')
    settings = discover(tmp_path)
    assert settings.path == tmp_path / ".referee.toml"
    assert not any(code.startswith("REF1") for code in settings.enabled)
    assert "REF001" in settings.enabled


def test_discover_reads_tool_referee_table_of_pyproject(tmp_path: Path):
    write(
        tmp_path / "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.referee]\nselect = ["REF2"]\n',
    )
    settings = discover(tmp_path)
    assert settings.path == tmp_path / "pyproject.toml"
    assert settings.enabled == {c for c in ALL_CODES if c.startswith("REF2")}


def test_referee_toml_wins_over_dot_referee_toml_and_pyproject_in_one_directory(tmp_path: Path):
    write(tmp_path / "referee.toml", 'select = ["REF101"]\n')
    write(tmp_path / ".referee.toml", 'select = ["REF102"]\n')
    write(tmp_path / "pyproject.toml", '[tool.referee]\nselect = ["REF103"]\n')
    assert discover(tmp_path).enabled == {"REF101"}
    (tmp_path / "referee.toml").unlink()
    assert discover(tmp_path).enabled == {"REF102"}
    (tmp_path / ".referee.toml").unlink()
    assert discover(tmp_path).enabled == {"REF103"}


def test_nearest_configuration_wins(tmp_path: Path):
    write(tmp_path / "referee.toml", 'select = ["REF101"]\n')
    sub = tmp_path / "pkg" / "deep"
    write(sub.parent / "pyproject.toml", '[tool.referee]\nselect = ["REF102"]\n')
    sub.mkdir(parents=True)
    settings = discover(sub)
    assert settings.path == sub.parent / "pyproject.toml"
    assert settings.root == sub.parent
    assert settings.enabled == {"REF102"}


def test_pyproject_without_referee_table_is_skipped(tmp_path: Path):
    write(tmp_path / "referee.toml", 'select = ["REF101"]\n')
    sub = tmp_path / "pkg"
    write(sub / "pyproject.toml", '[project]\nname = "pkg"\n\n[tool.ruff]\nline-length = 90\n')
    settings = discover(sub)
    assert settings.path == tmp_path / "referee.toml"
    assert settings.root == tmp_path


def test_discover_from_a_file_looks_in_its_directory(tmp_path: Path):
    write(tmp_path / "referee.toml", 'select = ["REF101"]\n')
    module = write(tmp_path / "src" / "mod.py", "x = 1\n")
    assert find_config(module) == tmp_path / "referee.toml"


def test_without_configuration_defaults_are_rooted_at_start(tmp_path: Path):
    assert find_config(tmp_path) is None
    settings = discover(tmp_path)
    assert settings.path is None
    assert settings.root == tmp_path.resolve()
    assert settings.enabled == ALL_CODES
    assert settings.config == RefereeConfig()


def test_explicit_config_file_is_used_instead_of_searching(tmp_path: Path):
    write(tmp_path / "referee.toml", 'select = ["REF101"]\n')
    other = write(tmp_path / "ci" / "strict.toml", 'select = ["REF102"]\n')
    settings = discover(tmp_path, other)
    assert settings.path == other
    assert settings.enabled == {"REF102"}


def test_explicit_config_that_does_not_exist_is_an_error(tmp_path: Path):
    with pytest.raises(ConfigError) as info:
        discover(tmp_path, tmp_path / "missing.toml")
    assert str(info.value) == f"{tmp_path / 'missing.toml'}: no such file"


# ---------------------------------------------------------------------- rule selection


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"select": ["REF101"]}, {"REF101"}),
        (
            {"select": ["REF11"]},
            {"REF110", "REF111", "REF112", "REF113", "REF114", "REF115", "REF116", "REF117"},
        ),
        ({"select": ["ref12"]}, {"REF120", "REF121"}),
        ({"select": ["REF101"], "extend-select": ["REF13"]}, {"REF101", "REF130"}),
        (
            {"select": ["REF1"], "ignore": ["REF11", "REF12", "REF130"]},
            {"REF101", "REF102", "REF103", "REF104", "REF105"},
        ),
        ({"ignore": ["REF2"]}, {c for c in ALL_CODES if not c.startswith("REF2")}),
        ({"select": ["ALL"], "ignore": ["ALL"]}, set()),
    ],
)
def test_select_extend_select_and_ignore_by_code_and_prefix(config: dict, expected: set[str]):
    settings = Settings(RefereeConfig.model_validate(config))
    assert settings.enabled == expected


def test_ignore_wins_over_select_of_the_same_code():
    settings = Settings(RefereeConfig.model_validate({"select": ["REF101"], "ignore": ["REF101"]}))
    assert check_text(STUB, "mod.py", settings) == []


def test_command_line_select_replaces_and_ignore_extends_the_file(tmp_path: Path):
    write(tmp_path / "referee.toml", 'select = ["REF1"]\nignore = ["REF102"]\n')
    base = discover(tmp_path)
    assert base.with_overrides(select=["REF001"]).enabled == {"REF001"}
    assert "REF103" not in base.with_overrides(ignore=["REF103"]).enabled
    assert "REF102" not in base.with_overrides(ignore=["REF103"]).enabled
    assert "REF201" in base.with_overrides(extend_select=["REF201"]).enabled
    assert base.with_overrides() is base


def test_per_file_ignores_apply_only_to_matching_paths(tmp_path: Path):
    write(
        tmp_path / "referee.toml",
        '[per-file-ignores]\n"legacy/**" = ["REF10"]\n"scripts/*.py" = ["REF102"]\n',
    )
    settings = discover(tmp_path)
    assert codes(check_text(STUB, "legacy/old/mod.py", settings)) == []
    assert codes(check_text(STUB, "scripts/tool.py", settings)) == ["REF101"]
    assert codes(check_text(STUB, "src/mod.py", settings)) == ["REF101", "REF102"]
    # `*` stays within one directory level.
    assert codes(check_text(STUB, "scripts/sub/tool.py", settings)) == ["REF101", "REF102"]


def test_severity_override_changes_the_finding_severity(tmp_path: Path):
    write(tmp_path / "referee.toml", '[severity]\nREF101 = "info"\nREF102 = "error"\n')
    settings = discover(tmp_path)
    found = {f.code: f.severity for f in check_text(STUB, "mod.py", settings)}
    assert found == {"REF101": Severity.INFO, "REF102": Severity.ERROR}
    default = {f.code: f.severity for f in check_text(STUB, "mod.py", Settings())}
    assert default == {"REF101": Severity.ERROR, "REF102": Severity.INFO}


def test_test_files_setting_changes_which_modules_are_test_modules(tmp_path: Path):
    write(tmp_path / "referee.toml", 'test-files = ["spec_*.py"]\nselect = ["REF110"]\n')
    settings = discover(tmp_path)
    text = "def test_runs():\n    run()\n"
    assert codes(check_text(text, "spec_runs.py", settings)) == ["REF110"]
    assert codes(check_text(text, "test_runs.py", settings)) == []


# ---------------------------------------------------------------- suppression comments


# One line, two findings: REF112 (the tuple assertion) at column 1, REF102 (the marker).
TWO_ON_ONE_LINE = 'assert (1, "msg")  # TODO: fix'


def test_unsuppressed_line_has_two_findings():
    assert codes(check_text(TWO_ON_ONE_LINE + "\n", "mod.py")) == ["REF112", "REF102"]


def test_suppression_with_code_silences_only_that_code():
    text = TWO_ON_ONE_LINE + "  referee: ignore[REF102]\n"
    assert codes(check_text(text, "mod.py")) == ["REF112"]
    text = TWO_ON_ONE_LINE + "  referee: ignore[REF112]\n"
    assert codes(check_text(text, "mod.py")) == ["REF102"]


def test_suppression_naming_another_code_does_not_suppress():
    text = TWO_ON_ONE_LINE + "  referee: ignore[REF101]\n"
    assert codes(check_text(text, "mod.py")) == ["REF112", "REF102"]


def test_bare_suppression_silences_every_code_on_its_line():
    text = TWO_ON_ONE_LINE + "  referee: ignore\n" + TWO_ON_ONE_LINE + "\n"
    found = check_text(text, "mod.py")
    assert [(f.code, f.span.start.line) for f in found] == [("REF112", 2), ("REF102", 2)]


def test_suppression_lists_several_codes_in_any_case():
    text = TWO_ON_ONE_LINE + "  referee: ignore[ref112, REF102]\n"
    assert check_text(text, "mod.py") == []


def test_suppression_applies_only_to_the_line_a_finding_starts_on():
    text = "# referee: ignore\n" + TWO_ON_ONE_LINE + "\n"
    assert codes(check_text(text, "mod.py")) == ["REF112", "REF102"]


def test_suppression_in_markdown_html_comment():
    text = "# Notes\n\nTODO: check the numbers <!-- referee: ignore[REF102] -->\nFIXME later\n"
    found = check_text(text, "notes.md")
    assert [(f.code, f.span.start.line) for f in found] == [("REF102", 4)]


# A console block in Markdown whose log ran nothing: REF130 on its line 5.
EMPTY_RUN_FENCE = "# Run\n\n```console{info}\n$ python -m pytest\ncollected 0 items\n```\n"


def test_suppression_after_a_fence_language_silences_its_block():
    unwaived = check_text(EMPTY_RUN_FENCE.format(info=""), "report.md")
    assert [(f.code, f.span.start.line) for f in unwaived] == [("REF130", 5)]
    waived = EMPTY_RUN_FENCE.format(info=" referee: ignore[REF130]")
    assert check_text(waived, "report.md") == []
    other = EMPTY_RUN_FENCE.format(info=" referee: ignore[REF102]")
    assert codes(check_text(other, "report.md")) == ["REF130"]


def test_fence_suppression_covers_its_block_and_no_more():
    text = (
        "```text referee: ignore[REF130]\nlog\n```\nafter\n<!-- referee: ignore[REF102] -->\n"
        "~~~ referee: ignore\nTODO <!-- referee: ignore[REF1] -->\n~~~\nafter\n"
    )
    assert suppressions(text) == {
        1: {"REF130"},
        2: {"REF130"},
        3: {"REF130"},  # the closing fence
        5: {"REF102"},
        6: None,
        7: None,  # the block's "every code" outweighs the line's own list
        8: None,
    }


def test_hyphenated_lookalike_is_not_a_suppression():
    text = 'assert (1, "msg")  # referee: ignore-next-line\n'
    assert codes(check_text(text, "mod.py")) == ["REF112"]


def test_suppressed_finding_is_not_counted_by_the_cli(invoke, project: Path):
    write(project / "mod.py", TWO_ON_ONE_LINE + "  referee: ignore\n")
    result = invoke("check", "--no-cache", "mod.py", cwd=project)
    assert result.exit_code == 0
    assert "All checks passed! (1 file)" in result.stdout


# --------------------------------------------------------------------------- exclusion


def _walked(root: Path, settings: Settings) -> list[str]:
    return sorted(t.relpath for t in runner.collect([root], settings))


def test_default_excludes_skip_tool_and_build_directories(project: Path):
    for directory in (
        ".venv",
        "venv",
        "node_modules",
        "build",
        "dist",
        "__pycache__",
        ".tox",
        "pkg.egg-info",
        "lib/site-packages",
        ".git",
        ".referee",
    ):
        write(project / directory / "mod.py", "x = 1\n")
    write(project / "src" / "mod.py", "x = 1\n")
    write(project / "src" / "build_tools.py", "x = 1\n")
    assert _walked(project, discover(project)) == ["src/build_tools.py", "src/mod.py"]


def test_default_excludes_cover_the_documented_directories():
    for directory in (".git/", ".venv/", "node_modules/", "__pycache__/", "*.egg-info/"):
        assert directory in DEFAULT_EXCLUDE


def test_exclude_globs_add_to_the_defaults(project: Path):
    write(project / "referee.toml", 'exclude = ["generated/", "**/*_pb2.py", "scratch.py"]\n')
    write(project / "generated" / "api.py", "x = 1\n")
    write(project / "src" / "proto" / "msg_pb2.py", "x = 1\n")
    write(project / "src" / "deep" / "scratch.py", "x = 1\n")
    write(project / "src" / "keep.py", "x = 1\n")
    write(project / ".venv" / "lib.py", "x = 1\n")
    assert _walked(project, discover(project)) == ["src/keep.py"]


def test_excluded_file_named_explicitly_is_still_checked(project: Path):
    write(project / "referee.toml", 'exclude = ["generated/"]\n')
    target = write(project / "generated" / "api.py", STUB)
    settings = discover(project)
    targets = runner.collect([target], settings)
    assert [t.relpath for t in targets] == ["generated/api.py"]
    (result,) = runner.run(targets, settings, jobs=1)
    assert codes(result.findings) == ["REF101", "REF102"]


def test_walking_checks_python_the_text_files_configured_and_other_prose_lightly(
    project: Path,
):
    write(
        project / "referee.toml",
        'extend-include = ["notes/*.txt"]\n\n[[contract]]\nglob = "docs/*.md"\nmin-lines = 1\n',
    )
    names = ("a.py", "b.pyi", "notes/n.txt", "docs/d.md", "other.md", "notes/x.md", "data.txt")
    for name in names:
        write(project / name, "x = 1\n")
    settings = discover(project)
    assert _walked(project, settings) == [
        "a.py",
        "b.pyi",
        "docs/d.md",
        "notes/n.txt",
        "notes/x.md",
        "other.md",
    ]
    # Markdown nobody asked for gets the whole-file rules only; a stray .txt is not read.
    light = sorted(t.relpath for t in runner.collect([project], settings) if t.whole_file)
    assert light == ["notes/x.md", "other.md"]


# ----------------------------------------------------------------------- glob semantics


@pytest.mark.parametrize(
    ("relpath", "pattern", "matches"),
    [
        ("a.py", "*.py", True),
        ("src/deep/a.py", "*.py", True),  # no slash: any depth
        ("src/a.py", "src/*.py", True),
        ("src/deep/a.py", "src/*.py", False),  # `*` stays in one segment
        ("src/deep/a.py", "src/**/*.py", True),
        ("src/a.py", "src/**/*.py", True),  # `**/` may match nothing
        ("lib/src/a.py", "src/*.py", False),  # a slash anchors at the root
        ("build/x/y.py", "build/", True),  # a directory matches what is below it
        ("src/build/y.py", "build/", True),
        ("builder/y.py", "build/", False),
        ("a.pyc", "*.py", False),
        ("test_a.py", "test_?.py", True),
        ("test_ab.py", "test_?.py", False),
        ("a/b.py", "a?b.py", False),  # `?` is not a slash
        ("v1.py", "v[0-9].py", True),
        ("vx.py", "v[!0-9].py", True),
        ("v1.py", "v[!0-9].py", False),
        ("docs/a.md", "/docs/*.md", True),  # a leading slash is ignored
        ("a+b.py", "a+b.py", True),  # regex characters are literal
        ("aab.py", "a+b.py", False),
        ("pkg.egg-info/PKG-INFO", "*.egg-info/", True),
        ("x/y/z", "**", True),
    ],
)
def test_glob_match(relpath: str, pattern: str, matches: bool):
    assert glob_match(relpath, pattern) is matches


# ------------------------------------------------------------------------ config errors


@pytest.mark.parametrize(
    ("body", "key", "problem"),
    [
        ('selec = ["REF1"]\n', "selec", "unknown key"),
        ('select = ["FOO"]\n', "select[0]", "'FOO' is not a rule code or prefix"),
        ('ignore = ["REF9"]\n', "ignore", "'REF9' matches no rule"),
        ('max-file-size = "big"\n', "max-file-size", "valid integer"),
        ("max-file-size = true\n", "max-file-size", "expected a number, not true/false"),
        ("[judge]\ntimeout = false\n", "judge.timeout", "expected a number, not true/false"),
        ('exclude = "build/"\n', "exclude", "valid list"),
        ('[severity]\nREF999 = "error"\n', "severity.REF999", "no such rule"),
        ('[severity]\nREF101 = "loud"\n', "severity.REF101", "'error', 'warning' or 'info'"),
        (
            '[[contract]]\nglob = "*.md"\nrequired-keywords = ["a"]\nmin-keywords = 2\n',
            "contract[0]",
            "min-keywords is 2 but required-keywords lists only 1",
        ),
        ('[[contract]]\nglob = "*.md"\nmin-lines = "x"\n', "contract[0].min-lines", "integer"),
        ('[[contract]]\nglob = "*.md"\nbogus = 1\n', "contract[0].bogus", "unknown key"),
        ('[per-file-ignores]\n"a.py" = ["XYZ"]\n', "per-file-ignores.a.py[0]", "'XYZ'"),
    ],
)
def test_config_error_names_file_key_and_problem(tmp_path: Path, body: str, key: str, problem: str):
    path = write(tmp_path / "referee.toml", body)
    with pytest.raises(ConfigError) as info:
        load_file(path)
    error = info.value
    assert error.path == path
    assert error.key == key
    assert problem in error.problem
    assert str(error).startswith(f"{path}: {key}: ")


def test_a_pyproject_style_file_of_another_name_is_read_as_one(tmp_path: Path):
    path = write(
        tmp_path / "pyproject.ci.toml",
        '[project]\nname = "x"\n\n[tool.referee]\nselect = ["REF101"]\n',
    )
    assert load_file(path).config.select == ["REF101"]


def test_invalid_toml_is_a_config_error_naming_the_file(tmp_path: Path):
    path = write(tmp_path / "referee.toml", 'select = ["REF1"\n')
    with pytest.raises(ConfigError) as info:
        load_file(path)
    assert info.value.path == path
    assert info.value.key is None
    assert info.value.problem.startswith("invalid TOML: ")


def test_pyproject_errors_name_the_tool_referee_table(tmp_path: Path):
    path = write(tmp_path / "pyproject.toml", "[tool.referee]\nselec = 1\n")
    with pytest.raises(ConfigError) as info:
        load_file(path)
    assert info.value.key == "[tool.referee].selec"
    assert str(info.value) == f"{path}: [tool.referee].selec: unknown key"


def test_several_problems_are_counted(tmp_path: Path):
    path = write(tmp_path / "referee.toml", "selec = 1\nignor = 2\nexclud = 3\n")
    with pytest.raises(ConfigError) as info:
        load_file(path)
    assert info.value.problem == "unknown key (and 2 more problems)"


def test_invalid_command_line_selector_is_an_error_without_a_file():
    with pytest.raises(ConfigError) as info:
        Settings().with_overrides(select=["NOPE"])
    assert info.value.path is None
    assert str(info.value).startswith("command line: select[0]: 'NOPE'")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('selec = ["REF1"]\n', "referee.toml: selec: unknown key"),
        ('select = ["FOO"]\n', "referee.toml: select[0]: 'FOO' is not a rule code or prefix"),
        ("select = [\n", "referee.toml: invalid TOML: "),
        (
            '[[contract]]\nglob = "*.md"\nrequired-keywords = ["a"]\nmin-keywords = 3\n',
            "referee.toml: contract[0]: min-keywords is 3 but required-keywords lists only 1",
        ),
    ],
)
def test_cli_exits_2_with_config_error_on_stderr(invoke, tmp_path: Path, body: str, expected: str):
    write(tmp_path / "referee.toml", body)
    write(tmp_path / "mod.py", STUB)
    result = invoke("check", "--no-cache", ".", cwd=tmp_path)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert f"referee: error: {tmp_path / expected}" in result.stderr


def test_cli_config_error_for_pyproject_keeps_the_bracketed_table_name(referee, tmp_path: Path):
    # A long path would make a wrapping console break the message over lines.
    deep = tmp_path / ("a-directory-with-a-rather-long-name-" * 3) / "project"
    write(deep / "pyproject.toml", '[tool.referee]\nselect = ["FOO"]\n')
    proc = referee("check", ".", cwd=deep)
    assert proc.returncode == 2
    expected = (
        f"referee: error: {deep / 'pyproject.toml'}: [tool.referee].select[0]: 'FOO' is not "
        "a rule code or prefix (like REF101 or REF1) or ALL"
    )
    assert expected in proc.stderr.splitlines()


def test_cli_config_command_reports_errors_too(invoke, tmp_path: Path):
    write(tmp_path / "referee.toml", "cache = [1]\n")
    result = invoke("config", cwd=tmp_path)
    assert result.exit_code == 2
    assert f"{tmp_path / 'referee.toml'}: cache: " in result.stderr


def test_glob_leading_slash_anchors_and_trailing_slash_means_directory():
    from referee.checks.config import glob_match

    assert glob_match("build", "/build")
    assert not glob_match("pkg/build", "/build")
    assert glob_match("pkg/build", "build")
    assert glob_match("build/lib/x.py", "build/")
    assert not glob_match("build", "build/")  # a file called build
    assert glob_match("build/", "build/")  # the directory, as the walker passes it
