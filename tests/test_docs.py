"""The documentation says what the code does: generated pages are current, every rule,
configuration key and command is documented, and the published schema is the models'."""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
import pytest

from referee.checks import ruledocs
from referee.checks.config import tomllib, validate
from referee.checks.configuration import (
    ArbitrationConfig,
    Contract,
    ExecutionConfig,
    GuardConfig,
    JudgeConfig,
    RefereeConfig,
)
from referee.checks.engine import check_text
from referee.checks.models import json_schema
from referee.checks.registry import RULES
from referee.checks.rule import DOCS_BASE_URL, Rule
from referee.server.cli import main as cli

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
RULE_DOCS = DOCS / "rules"
SCHEMA = DOCS / "schema" / "check-report.schema.json"
PUBLISHED_CONTRACTS = DOCS / "examples" / "published-contracts.toml"

HEADINGS = ["## What it does", "## Why it matters", "## Example", "## Use instead"]
_FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _rule_id(rule: Rule) -> str:
    return rule.code


def _all_docs_text() -> str:
    readme = ROOT / "README.md"
    texts = [readme.read_text(encoding="utf-8")] if readme.is_file() else []
    texts += [p.read_text(encoding="utf-8") for p in sorted(DOCS.rglob("*.md"))]
    return "\n".join(texts)


# ------------------------------------------------------------------ generated rule pages


def test_committed_rule_pages_are_what_ruledocs_renders() -> None:
    stale = ruledocs.out_of_date(RULE_DOCS)
    assert not stale, (
        f"docs/rules is out of date ({', '.join(stale)}); regenerate it with "
        f"`{ruledocs.REGENERATE}` and commit the result"
    )


@pytest.mark.parametrize("rule", RULES, ids=_rule_id)
def test_rule_docstring_has_the_four_headings_in_order(rule: Rule) -> None:
    outside_code = _FENCED.sub("", rule.documentation)
    headings = [line for line in outside_code.splitlines() if line.startswith("#")]
    assert headings == HEADINGS, (
        f"{rule.code}'s docstring ({rule.check.__module__}.{rule.check.__name__}) must have "
        f"exactly the headings {HEADINGS}, in that order; it has {headings}"
    )


@pytest.mark.parametrize("rule", RULES, ids=_rule_id)
def test_rule_url_names_a_page_that_exists(rule: Rule) -> None:
    assert DOCS_BASE_URL.endswith("/docs/rules/")
    assert rule.url.startswith(DOCS_BASE_URL)
    page = RULE_DOCS / rule.url.removeprefix(DOCS_BASE_URL)
    assert page.is_file(), f"{rule.url} points at {page}, which does not exist"


def test_index_links_every_rule_page() -> None:
    index = (RULE_DOCS / ruledocs.INDEX).read_text(encoding="utf-8")
    for rule in RULES:
        assert f"]({ruledocs.page_name(rule)})" in index, f"index.md does not link {rule.code}"


def test_ruledocs_main_writes_checks_and_prunes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ruledocs.main([str(tmp_path), "--check"]) == 1
    assert "out of date" in capsys.readouterr().out

    (tmp_path / "retired-rule.md").write_text("# gone\n", encoding="utf-8")
    assert ruledocs.main([str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(ruledocs.pages())
    assert ruledocs.main([str(tmp_path), "--check"]) == 0

    page = tmp_path / ruledocs.page_name(RULES[0])
    page.write_text(page.read_text(encoding="utf-8") + "edited by hand\n", encoding="utf-8")
    capsys.readouterr()
    assert ruledocs.main([str(tmp_path), "--check"]) == 1
    assert page.name in capsys.readouterr().out


def test_ruledocs_imports_neither_the_terminal_nor_the_language_server() -> None:
    probe = (
        "import sys, referee.checks.ruledocs; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'rich', 'click', 'pygls'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


# ------------------------------------------------------------------ referee on its own docs


def test_referee_check_passes_on_its_own_readme_and_docs(referee) -> None:
    """The docs describe what the rules flag (a log that says "0 passed", `TODO`
    markers) without being flagged: the real command line, on README.md and every page
    (named one by one: walking docs/ checks no Markdown, which extend-include leaves out),
    reports nothing, not even at info level."""
    pages = sorted(p.relative_to(ROOT).as_posix() for p in DOCS.rglob("*.md"))
    assert len(pages) > 10
    proc = referee("check", "--fail-on", "info", "README.md", "docs", *pages, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"All checks passed! ({len(pages) + 1} files)" in proc.stdout


# ------------------------------------------------------------------ fixes on the rule pages

_FIX_SAMPLES = {
    "REF112": 'def test_total():\n    assert (total([1, 2]) == 3, "sum is off")\n',
    "REF115": 'def test_send(sender):\n    sender.send.called_once_with("hello")\n',
    "REF116": 'def test_style(console):\n    console.get_style("bold") == 1\n',
}


_FIXES = {rule.code: rule.fix for rule in RULES if rule.fix is not None}


@pytest.mark.parametrize("code", sorted(_FIXES))
def test_fix_on_a_rule_page_is_the_fix_the_rule_offers(code: str) -> None:
    findings = [f for f in check_text(_FIX_SAMPLES[code], "test_sample.py") if f.code == code]
    assert findings and findings[0].fix is not None
    assert findings[0].fix.applicability == _FIXES[code]


def test_no_rule_builds_a_fix_its_page_does_not_mention() -> None:
    """A rule's ``fix`` is written by hand; a new ``Fix(...)`` in a rule module means a
    rule gained a fix and its record (and so its page) must say so."""
    modules = {inspect.getmodule(rule.check) for rule in RULES}
    built = sum(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Fix"
        for module in modules
        for node in ast.walk(ast.parse(inspect.getsource(module)))
    )
    assert built == len(_FIXES), (
        f"rule modules build {built} Fix(...) but {len(_FIXES)} rules declare a `fix`: "
        "set it on the rule that gained (or lost) one, and add a sample here"
    )


_TOML_BLOCK = re.compile(r"^```toml\n(.*?)^```", re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("page", sorted(DOCS.rglob("*.md")), ids=lambda p: p.name)
def test_toml_examples_are_valid_configurations(page: Path) -> None:
    for block in _TOML_BLOCK.findall(page.read_text(encoding="utf-8")):
        data = tomllib.loads(block)
        named = re.match(r"# (\S+\.toml)\b", block)
        if named and named.group(1).rsplit("/", 1)[-1] not in ("referee.toml", "pyproject.toml"):
            continue  # another program's file, named in its first line (`# .codex/config.toml`)
        if "tool" in data and "referee" not in data["tool"]:
            continue  # another tool's configuration, e.g. pytest's in the guard's pages
        table = data["tool"]["referee"] if "tool" in data else data
        validate(table, page)


# ------------------------------------------------------------------ links between pages

_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", _FENCED.sub("", markdown), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", sorted(DOCS.rglob("*.md")), ids=lambda p: p.name)
def test_relative_links_lead_to_pages_and_headings_that_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in _LINK.findall(_FENCED.sub("", text)):
        if re.match(r"^[a-z]+:", target):
            continue
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.is_file() or (
            fragment
            and linked.suffix == ".md"
            and fragment not in _anchors(linked.read_text(encoding="utf-8"))
        ):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to what does not exist: {broken}"


# ------------------------------------------------------------------ configuration and CLI


@pytest.mark.parametrize(
    "model",
    [RefereeConfig, Contract, JudgeConfig, ArbitrationConfig, GuardConfig, ExecutionConfig],
    ids=lambda m: m.__name__,
)
def test_every_configuration_key_is_documented(model: type) -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = [
        field.alias or name
        for name, field in model.model_fields.items()
        if f"`{field.alias or name}`" not in text
    ]
    assert not missing, f"docs/configuration.md does not mention {missing}"


def test_every_subcommand_is_documented() -> None:
    text = _all_docs_text()
    names = cli.list_commands(click.Context(cli))
    assert {"arbitrate", "check", "guard", "serve"} <= set(names)
    missing = [name for name in names if f"referee {name}" not in text]
    assert not missing, f"README.md and docs/ never mention `referee {missing}`"


# ------------------------------------------------------------------ output schema


def test_published_schema_is_the_models_schema() -> None:
    assert json.loads(SCHEMA.read_text(encoding="utf-8")) == json_schema(), (
        "docs/schema/check-report.schema.json is out of date; regenerate it with "
        "`referee schema > docs/schema/check-report.schema.json`"
    )


# ------------------------------------------------------------------ published contracts


def test_published_contracts_example_is_shown_verbatim_in_contracts_md() -> None:
    example = PUBLISHED_CONTRACTS.read_text(encoding="utf-8")
    assert example in (DOCS / "contracts.md").read_text(encoding="utf-8"), (
        "docs/contracts.md must show docs/examples/published-contracts.toml as it is"
    )


# ------------------------------------------------------------------ getting started, walked

GETTING_STARTED = DOCS / "getting-started.md"
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _first_run() -> tuple[dict[str, str], list[str]]:
    """From the "First run" section on: the example project's files (blocks whose first
    line is ``# PATH``) and the console blocks, in page order."""
    text = GETTING_STARTED.read_text(encoding="utf-8")
    text = text[text.index("## First run") :]
    files: dict[str, str] = {}
    consoles: list[str] = []
    for lang, body in _BLOCK.findall(text):
        first, _, rest = body.partition("\n")
        if lang == "console":
            consoles.append(body)
        elif re.fullmatch(r"# [\w./-]+\.(py|toml)", first):
            files[first[2:]] = rest
    return files, consoles


def _example_project(tmp_path: Path) -> Path:
    files, _ = _first_run()
    assert {"src/slug.py", "tests/test_slug.py"} <= set(files), sorted(files)
    for relpath, body in files.items():
        (tmp_path / relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relpath).write_text(body, encoding="utf-8")
    return tmp_path


def test_getting_started_console_blocks_print_what_the_page_shows(tmp_path: Path) -> None:
    """Each ``$ command`` of the page, run in order in the example project it builds (as
    a terminal shows them, stdout and stderr), prints exactly the lines shown under it."""
    root = _example_project(tmp_path)
    _, consoles = _first_run()
    shown = "".join(consoles)
    commands = [line[2:] for line in shown.splitlines() if line.startswith("$ ")]
    assert len(commands) >= 6, commands
    # Printing the prompt must not change the $? that an `echo $?` on the page reads.
    script = f'referee() {{ "{sys.executable}" -m referee "$@"; }}\nstatus=0\n' + "".join(
        f"printf '%s\\n' {shlex.quote('$ ' + command)}\n(exit $status); {command} 2>&1\nstatus=$?\n"
        for command in commands
    )
    ran = subprocess.run(
        ["bash", "-c", script], cwd=root, capture_output=True, text=True, timeout=300
    )
    assert ran.stderr == ""
    assert ran.stdout == shown


def test_getting_started_example_suite_is_what_pytest_reports(tmp_path: Path) -> None:
    """The page says what pytest reports for its example project; pytest must report that
    (with its src/ layout that takes the example's pytest configuration)."""
    said = re.search(r"pytest reports this suite as `([^`]+)`", GETTING_STARTED.read_text())
    assert said, "docs/getting-started.md no longer says what pytest reports"
    root = _example_project(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    ran = subprocess.run(
        [sys.executable, "-m", "pytest"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    summary = ran.stdout.strip().splitlines()[-1]
    assert re.fullmatch(rf"=+ {re.escape(said.group(1))} in [\d.]+s =+", summary), ran.stdout
