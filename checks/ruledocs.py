"""The rule pages under ``docs/rules/``, generated from the registry.

Each page is the rule's identity (code, name, layer, severity, files, fix) and its check's
docstring, followed by how to turn it off. ``python -m referee.checks.ruledocs docs/rules``
(re)writes ``<name>.md`` for every rule and ``index.md``, and deletes pages of rules that no
longer exist; with ``--check`` it writes nothing and exits 1 when a page is out of date.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from referee.checks.models import Layer, Severity
from referee.checks.registry import GUARD_CODES, RULES
from referee.checks.rule import DOCS_BASE_URL, PYTHON, TEXT, Rule

INDEX = "index.md"
REGENERATE = "python -m referee.checks.ruledocs docs/rules"

_LAYER_NAMES = {
    Layer.L0: "L0 shape",
    Layer.L1: "L1 contract",
    Layer.L2: "L2 judge",
    Layer.L3: "L3 human review",
}


def _files(rule: Rule) -> str:
    if rule.code in ("REF410", "REF411", "REF412"):
        return (
            "what the [execution checks](../judge.md#execution-first) run: changed tests "
            "(REF410), changed functions with a docstring or a reference (REF411, REF412)"
        )
    if rule.layer in (Layer.L2, Layer.L3):
        return (
            "what the [judge](../judge.md) reads: changed Python functions and tests, "
            "files with a `task`"
        )
    if rule.kinds == PYTHON:
        return "Python"
    if rule.kinds == TEXT:
        return "text"
    return "Python and text"


def _suppression(rule: Rule) -> str:
    """How to silence one finding: a comment on the line the finding starts on."""
    python = f"```python\n# referee: ignore[{rule.code}]\n```"
    markdown = f"```markdown\n<!-- referee: ignore[{rule.code}] -->\n```"
    if rule.kinds == PYTHON:
        return python
    other = (
        "In Markdown, make it an HTML comment; in TOML, INI and other files with `#` "
        f"comments, `# referee: ignore[{rule.code}]` on that line:\n\n{markdown}\n\n"
        "In Markdown, the same words after a fenced block's language silence the whole "
        f"block: ```` ```text referee: ignore[{rule.code}] ````."
    )
    if rule.kinds == TEXT:
        return other
    return f"{python}\n\n{other}"


def page_name(rule: Rule) -> str:
    """The page's file name: the part of ``rule.url`` below the rules directory."""
    return rule.url.removeprefix(DOCS_BASE_URL)


def render_page(rule: Rule) -> str:
    """The Markdown page of one rule."""
    fix = rule.fix
    other = "warning" if rule.severity is Severity.ERROR else "error"
    return f"""# {rule.name} ({rule.code})

Layer: {_LAYER_NAMES[rule.layer]} · Default severity: {rule.severity.value} · \
Files: {_files(rule)} · Fix: {f"yes ({fix})" if fix else "none"}

{rule.documentation}

## Configuration
Turn the rule off with its code in `ignore`, under `[tool.referee]` in `pyproject.toml` or
at the top level of `referee.toml`:

```toml
[tool.referee]
ignore = ["{rule.code}"]
```

For some files only: `per-file-ignores = {{ "legacy/**" = ["{rule.code}"] }}`. To keep it at
another severity: `severity = {{ {rule.code} = "{other}" }}`.

Silence one finding with a comment on the line the finding starts on (line 1 for a finding
about the whole file):

{_suppression(rule)}
{_guard_note(rule)}
See [configuration](../configuration.md).
"""


def _guard_note(rule: Rule) -> str:
    """The guard's rules take both ways of silencing them from the base, not the change."""
    if rule.code not in GUARD_CODES:
        return ""
    return """
Both take effect for `referee guard` only once they are part of the base: the guard reads
its configuration as it was at `--base`, and honours a suppression comment only on a line
that was already there. A change cannot waive its own weakening; a person who accepts
it commits the waiver first. A comment the guard does not honour is named on stderr
(`referee: guard: PATH:LINE: … not honoured: the line is new since HEAD …`).

The guard has two modes ([CI](../ci.md#default-mode-and-agent-mode)). In the default
mode, for a change a person wrote, a weakening that came with a change to the code the
test exercises and a skip or xfail under a condition are warnings (exit 0); in agent
mode (`referee guard --strict`, or `[guard] mode = "agent"` at the base) every
uncertified weakening is an error.
"""


def render_index() -> str:
    """The table of every rule, linking to each page."""
    rows = "\n".join(
        f"| {r.code} | [{r.name}]({page_name(r)}) | {r.layer.value} | {r.severity.value} "
        f"| {r.message} |"
        for r in RULES
    )
    return f"""# Rules

Every check referee runs is a rule with a stable code: `REF0xx` for files that cannot be
analysed and `REF1xx` for the shape of code, documents and test logs (layer L0); `REF2xx`
for the contracts you declare (layer L1, see [contracts](../contracts.md)); `REF3xx` for
the guard's comparison of tests with a git ref (layer L1, see [CI](../ci.md)); `REF4xx` for
the judge, its execution checks (`REF41x`: mutants and counterexamples) and the review
queue (layers L2 and L3, see [the judge](../judge.md)). Select,
ignore and re-grade them by code or code prefix in the
[configuration](../configuration.md); `referee rule CODE` prints a page in the terminal.

These pages are generated from the rules' docstrings: edit the docstring, not the page,
and run `{REGENERATE}`.

{SEVERITY_POLICY}
| code | name | layer | severity | message |
|---|---|---|---|---|
{rows}
"""


SEVERITY_POLICY = """## Severity policy

**An error is a defect a maintainer would fix.** `referee check` exits 1 on errors, and a
user who reads a dozen errors they would never fix stops reading. So a rule reports an
error only for code that is wrong whatever its author meant, and a warning (or info) for
code that is often right by design. The column below is each rule's default; one rule
may grade a finding louder or quieter than its default, and each page says when.

- **error** — a defect: a maintainer who reads it fixes it. A collected test whose body
  is only `pass` or a docstring; an assertion that cannot fail; `x == 2` with no
  `assert` in a test; a parametrize case written twice; `assert x is not []`; a stub
  that promises a value (`-> int`, a `TODO`); a document that is only `TODO`; a
  contract you declared, broken.
- **warning** — worth a look, often meant. A test with no assertion (it still checks
  that nothing raises); an empty method or an informal base class's
  `raise NotImplementedError`; a no-op annotated `-> None`; `x == x` (a test of
  `__eq__` may mean it).
- **info** — a note: a `TODO` marker in a comment.

How the rules apply it:

- **What is intentional is not reported at all**: hook specifications (pluggy/pytest
  `@hookspec`), `@overload`/`@abstractmethod`, definitions under `if TYPE_CHECKING:`,
  methods a subclass overrides anywhere in the project, bodies whose comment or
  docstring says they are empty on purpose, modules pytest would not collect (its
  `python_files`, `testpaths`, `norecursedirs`), fixtures named `test_*`.
- **Facts from other files are used, not guessed**: helpers imported from another module
  or fixtures from a `conftest.py` that assert, overrides in another module — through
  the project index (`referee.checks.project`).
- **Guard rules (`REF3xx`) stay errors**: a check weakened without a certificate is what
  the guard exists to stop, and its default mode already grades a weakening that came
  with a change to the code under test as a warning ([CI](../ci.md)).
- **Re-grade any rule** with `severity = { REF110 = "error" }` in the configuration.

By default findings are reported on the whole file: once every error is a real defect,
an existing project's list is short enough to read. For the change an agent (or anyone)
just made, `referee check --new-only [--base REF]` keeps only the findings that start on
a line added or changed since `REF` (default `HEAD`; untracked files count as new), or
in a Python function with such a line, the way a reviewer reads a diff. `referee guard` is
the other side of that coin: what the change removed or weakened.
"""


def pages() -> dict[str, str]:
    """File name → content of every page the rules directory should hold."""
    rendered = {page_name(rule): render_page(rule) for rule in RULES}
    rendered[INDEX] = render_index()
    return rendered


def out_of_date(directory: Path, expected: dict[str, str] | None = None) -> list[str]:
    """Pages that are missing, differ from what would be rendered, or belong to no rule."""
    expected = pages() if expected is None else expected
    stale = [path.name for path in directory.glob("*.md") if path.name not in expected]
    differ = [
        name
        for name, content in expected.items()
        if not (directory / name).is_file()
        or (directory / name).read_text(encoding="utf-8") != content
    ]
    return sorted(differ + stale)


def write(directory: Path) -> list[str]:
    """Bring ``directory`` up to date; return the pages written or deleted."""
    directory.mkdir(parents=True, exist_ok=True)
    expected = pages()
    changed = out_of_date(directory, expected)
    for name in changed:
        path = directory / name
        if name in expected:
            path.write_text(expected[name], encoding="utf-8", newline="\n")
        else:
            path.unlink()
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m referee.checks.ruledocs",
        description="Write docs/rules/<name>.md for every rule, and index.md.",
    )
    parser.add_argument("directory", type=Path, help="where the pages live (docs/rules)")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a page is out of date"
    )
    args = parser.parse_args(argv)
    if args.check:
        changed = out_of_date(args.directory)
        for name in changed:
            print(f"out of date: {args.directory / name}")
        if changed:
            print(f"run `{REGENERATE}` to bring them up to date")
        return 1 if changed else 0
    for name in write(args.directory):
        done = "wrote" if (args.directory / name).exists() else "removed"
        print(f"{done} {args.directory / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
