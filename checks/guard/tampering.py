"""The guard's rules on the test run itself (L1, REF320–REF322): a change may not make
pytest run fewer tests (its configuration, ``collect_ignore``), forge their outcomes
(conftest hooks) or end the run early."""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Iterator

from tree_sitter import Node

from referee.checks.guard import pytestconfig
from referee.checks.guard.context import GuardContext
from referee.checks.guard.normal import canonical, squash
from referee.checks.guard.sides import base_of, new_functions
from referee.checks.guard.verdict import span
from referee.checks.rule import Context, Violation

_DESELECTING = re.compile(
    r"^(-k|--deselect|--ignore|--ignore-glob|-m|--co|--collect-only)"
    r"(=|$)|^-p$"
)
_COLLECTION_KEYS = (
    "testpaths",
    "python_files",
    "python_classes",
    "python_functions",
    "norecursedirs",
)


def test_config_tampered(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a change to pytest's configuration (`pyproject.toml`'s
    `[tool.pytest.ini_options]` or `[tool.pytest]`, `pytest.ini`, `.pytest.ini`,
    `setup.cfg`'s `[tool:pytest]` or legacy `[pytest]`, `tox.ini`'s `[pytest]`) that runs
    fewer tests: `addopts` gaining `-k`, `-m`, `--deselect`, `--ignore`, `--ignore-glob` or
    `-p`, or a changed `testpaths`, `python_files`, `python_classes`,
    `python_functions` or `norecursedirs`; and a tox environment whose `commands` now run
    pytest with one of those options.

    The settings compared are those in effect, read as pytest reads them (the first of
    those files that has a pytest section): moving the configuration from one file to
    another with the same effect is not flagged, and neither is pytest 9's
    `strict = true` replacing `xfail_strict = true`.

    `testpaths` and `python_files`/`_classes`/`_functions` are flagged when an entry is
    removed (adding one runs more tests), `norecursedirs` when one is added, a changed
    value of `-k`, `-m`, `--ignore` or `-p` in `addopts` (including the attached form
    `-kexpr`), and `xfail_strict` turned off.

    ## Why it matters
    The tests are all still there; pytest just no longer looks at the red ones.

    ## Example
    ```toml
    [tool.pytest.ini_options]
    addopts = "--deselect tests/test_cart.py::test_refund"
    ```

    ## Use instead
    Leave collection alone; fix the failing test's cause.
    """
    guard = ctx.guard
    name = ctx.relpath.rsplit("/", 1)[-1]
    if guard is None or name not in pytestconfig.CONFIG_FILES:
        return
    text = ctx.source.text
    before, now = _settings_compared(ctx, name)
    if before is not None and now is not None:
        yield from _settings_narrowed(guard, text, before, now)
    if name == "tox.ini":
        yield from _tox_narrowed(guard, text)


def _settings_narrowed(
    guard: GuardContext, text: str, before: dict[str, str], now: dict[str, str]
) -> Iterator[Violation]:
    """pytest settings (``text``'s, or those in effect for it) that now run fewer tests:
    a new deselecting ``addopts`` option, ``xfail_strict`` turned off, a narrower
    collection setting."""
    added = _deselecting_options(now.get("addopts", "")) - _deselecting_options(
        before.get("addopts", "")
    )
    for option in sorted(added):
        if not _deselects_existing(guard, option):
            continue
        yield Violation(
            span=span(_line_of(text, option.split(" ", 1)[0])),
            message=f"pytest addopts now include `{option}` ({guard.base} did "
            "not): fewer tests run",
        )
    if pytestconfig.xfail_strict(before) and not pytestconfig.xfail_strict(now):
        was = before.get("xfail_strict", before.get("strict"))
        yield Violation(
            span=span(_line_of(text, "strict")),
            message=f"pytest `xfail_strict` is no longer true ({guard.base}: {was!r}): an "
            "xfail test that passes no longer fails the run",
        )
    for key in _COLLECTION_KEYS:
        if not _narrowed(key, before.get(key), now.get(key)):
            continue
        lost = _no_longer_collected(guard.test_files, key, before, now)
        if lost == []:
            continue  # every test module is collected as before
        which = f": {lost[0]} is no longer collected" if lost else ": which tests run changed"
        yield Violation(
            span=span(_line_of(text, key)),
            message=f"pytest `{key}` changed from {before.get(key)!r} "
            f"({guard.base}) to {now.get(key)!r}{which}",
        )


def _tox_narrowed(guard: GuardContext, text: str) -> Iterator[Violation]:
    """tox environments that now run pytest with a deselecting option."""
    old_envs = pytestconfig.tox_pytest_arguments(guard.baseline or "")
    for env, arguments in pytestconfig.tox_pytest_arguments(text).items():
        was = _deselecting_options(old_envs.get(env, old_envs.get("testenv", "")))
        for option in sorted(_deselecting_options(arguments) - was):
            if not _deselects_existing(guard, option):
                continue
            yield Violation(
                span=span(_line_of(text, option.split(" ", 1)[-1])),
                message=f"tox `[{env}]` now runs pytest with `{option}` ({guard.base} "
                "did not): fewer tests run",
            )


_EXPRESSION_WORDS = frozenset({"and", "or", "not"})


def _deselects_existing(guard: GuardContext, option: str) -> bool:
    """Whether a new deselecting option can leave out a test that existed at the base:
    `-m` naming a marker some test used, `-k` a word some test's text holds, `--deselect`
    a test that was there, `--ignore` a path that held test files. With no picture of
    the base's tests (a check without a plan) every such option counts."""
    text = guard.base_test_text
    if not text:
        return True
    flag, _, value = option.partition(" ")
    if not value and len(flag) > 2 and flag[:2] in ("-k", "-m"):
        flag, value = flag[:2], flag[2:]
    value = value.strip("'\"")
    if flag == "-m":
        names = set(re.findall(r"[A-Za-z_]\w*", value)) - _EXPRESSION_WORDS
        return any(f"mark.{name}" in text for name in names)
    if flag == "-k":
        words = set(re.findall(r"[A-Za-z_]\w*", value)) - _EXPRESSION_WORDS
        lowered = text.lower()
        return any(word.lower() in lowered for word in words)
    if flag == "--deselect" or flag.startswith("--deselect="):
        target = value or flag.partition("=")[2]
        name = target.rsplit("::", 1)[-1].split("[", 1)[0]
        return f"def{name}(" in text or "::" not in target
    if flag.startswith("--ignore"):
        target = (value or flag.partition("=")[2]).rstrip("/")
        return not guard.test_files or any(
            p == target or p.startswith(target + "/") or fnmatch.fnmatch(p, target)
            for p in guard.test_files
        )
    return True


def _settings_compared(
    ctx: Context, name: str
) -> tuple[dict[str, str] | None, dict[str, str] | None]:
    """The pytest settings to compare for this configuration file, at the base and now:
    the settings in effect for the project (whichever file holds them, so settings moved
    from pytest.ini to pyproject.toml with the same effect compare equal), compared on
    the file that holds them now; (None, None) for a file not in effect on either side.
    Without the project's picture (a file outside the root, a check without a plan)
    the file's own settings are compared."""
    guard = ctx.guard
    assert guard is not None
    own_now = pytestconfig.settings_of(name, ctx.source.text)
    own_before = pytestconfig.settings_of(name, guard.baseline or "") if guard.baseline else None
    if "/" in ctx.relpath or (guard.pytest_before is None and guard.pytest_now is None):
        return own_before or {}, own_now or {}
    before_file, before = guard.pytest_before or (None, {})
    now_file, now = guard.pytest_now or (None, {})
    if now_file == name and own_now is not None:
        now = own_now  # the text being checked (an editor's unsaved one) is the one in effect
    owner = now_file or before_file
    if owner != name:
        return None, None
    return dict(before), dict(now)


def _deselecting_options(addopts: str) -> set[str]:
    """The options in ``addopts`` that deselect or ignore tests, each with its value
    (``-k expr``, ``--ignore=path``): a changed value is a new option."""
    try:
        tokens = shlex.split(addopts)
    except ValueError:
        return set()
    found = set()
    for index, token in enumerate(tokens):
        if _DESELECTING.match(token) is None and not _ATTACHED.match(token):
            continue
        takes_value = token in ("-k", "-m", "-p", "--deselect", "--ignore", "--ignore-glob")
        value = tokens[index + 1] if takes_value and index + 1 < len(tokens) else None
        found.add(token if value is None else f"{token} {value}")
    return found


_ATTACHED = re.compile(r"^-[kmp]\S")  # -k'not slow', -pno:randomly: the value attached


# pytest's values for the collection settings a configuration leaves out.
_COLLECTION_DEFAULTS = {
    "python_files": "test_*.py *_test.py",
    "python_classes": "Test",
    "python_functions": "test",
}


def _narrowed(key: str, before: str | None, now: str | None) -> bool:
    """Whether a collection setting changed so that some tests may no longer be
    collected: an entry of `testpaths` / `python_*` gone, or a `norecursedirs` entry
    added. Adding a test path or a file pattern only collects more."""
    if before == now:
        return False
    if key == "norecursedirs":
        # Setting it for the first time replaces pytest's defaults with what it lists.
        return now is not None and (before is None or bool(set(now.split()) - set(before.split())))
    if key == "testpaths":
        if now is None:
            return False  # back to collecting from the root directory: nothing lost
        if before is None:
            return True
    default = _COLLECTION_DEFAULTS.get(key, "")
    old = set((before if before is not None else default).split())
    new = set((now if now is not None else default).split())
    return bool(old - new)


def _no_longer_collected(
    test_files: tuple[str, ...], key: str, before: dict[str, str], now: dict[str, str]
) -> list[str] | None:
    """The project's test modules (files that define tests) that pytest collected with
    the ``before`` settings and does not with ``now``'s (`testpaths`, `python_files`,
    `norecursedirs`); None when the guard cannot tell (no list of test files, or
    another setting)."""
    if not test_files or key not in ("testpaths", "python_files", "norecursedirs"):
        return None
    if key == "norecursedirs":
        added = set(now.get(key, "").split()) - set(before.get(key, "").split())
        return sorted(
            path
            for path in test_files
            if any(
                fnmatch.fnmatch(part, pattern) or path.startswith(pattern.rstrip("/") + "/")
                for pattern in added
                for part in path.split("/")[:-1]
            )
        )
    old_patterns, old_paths = pytestconfig.test_file_patterns(before)
    new_patterns, new_paths = pytestconfig.test_file_patterns(now)
    return sorted(
        path
        for path in test_files
        if pytestconfig.is_pytest_file(path, old_patterns, old_paths)
        and not pytestconfig.is_pytest_file(path, new_patterns, new_paths)
    )


def _line_of(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    return 1


_FORGING_HOOKS = frozenset(
    {
        "pytest_runtest_makereport",
        "pytest_runtest_call",
        "pytest_pyfunc_call",
        "pytest_runtest_protocol",
        "pytest_report_teststatus",
        "pytest_sessionfinish",
        "pytest_ignore_collect",
    }
)
_COLLECT_IGNORE = re.compile(r"^collect_ignore(_glob)?\b")
_DROPS_ITEMS = re.compile(r"items\[:\]\s*=|items\.(remove|clear|pop)\(|del\s+items|deselect")


def outcome_forging_hook(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a new or changed pytest hook in `conftest.py` (or a plugin module) whose edit
    adds a way to forge outcomes or drop tests: `pytest_runtest_makereport` (or
    `_call`, `_setup`, …) setting an outcome to anything but `"failed"`, clearing
    `longrepr`/`excinfo`, setting `wasxfail` or forcing a result; `pytest_pyfunc_call`,
    `pytest_runtest_protocol` or `pytest_runtest_call` returning `True` without running
    the test; `pytest_sessionfinish` setting a zero exit status; a
    `pytest_collection_modifyitems` that removes items (sorting them does not); a
    `pytest_report_teststatus`. A hook that only makes the run stricter (records the
    report on the item, fails the session on a warning) is not flagged.

    Also flagged: `collect_ignore`, `collect_ignore_glob` and a `pytest_ignore_collect`
    that returns something, added to a conftest.

    ## Why it matters
    Ten lines in `conftest.py` can report every failure as a pass.

    ## Example
    ```python
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        outcome.get_result().outcome = "passed"
    ```

    ## Use instead
    Let pytest report what happened.
    """
    if ctx.guard is None or not ctx.relpath.endswith("conftest.py"):
        return
    for _, line, text in _new_module_statements(ctx):
        match = _COLLECT_IGNORE.match(text)
        if match:
            yield Violation(
                span=span(line),
                message=f"new or changed `{match.group(0)}` keeps pytest from collecting "
                "the files it names",
            )
    base = base_of(ctx)
    old_bodies = base.hook_bodies if base is not None else {}
    for fn in new_functions(ctx):
        if fn.name not in _FORGING_HOOKS and fn.name != "pytest_collection_modifyitems":
            continue
        now = _forging(fn.name, fn.body)
        was: set[str] = set()
        for body in old_bodies.get(fn.name, ()):
            was |= _forging(fn.name, body)
        added = sorted(now - was)
        if added:
            yield Violation(
                span=span(fn.line),
                message=f"new or changed hook `{fn.name}` can change which tests run "
                f"or how they are reported: {', '.join(added)}",
            )


# What lets a hook forge an outcome or drop tests, by what it writes or returns.
# Making an outcome worse (`report.outcome = "failed"`, a non-zero exit status) is
# a stricter conftest, not a forged one.
_FORGES = {
    "sets an outcome": re.compile(
        r"\.outcome\s*=(?!=)(?!\s*[\"']failed[\"'])|\.(longrepr|excinfo)\s*=\s*None\b"
        r"|\.wasxfail\s*=(?!=)"
    ),
    "replaces the result": re.compile(r"\bforce_(result|exception)\s*\("),
    "sets the exit status": re.compile(
        r"\bexitstatus\s*=(?!=)(?!\s*(?:[1-9]|(?:pytest\.)?ExitCode\.(?!OK)))"
        r"|\b(os\._exit|sys\.exit)\s*\(\s*0?\s*\)"
    ),
    "clears the exception": re.compile(r"\bexcinfo\s*=\s*None\b"),
}
_RUNS_TEST = re.compile(r"\.runtest\s*\(|runtestprotocol\s*\(|\.obj\s*\(|\bfuncargs\b|\byield\b")


def _forging(name: str, body: str) -> set[str]:
    """The outcome-forging constructs a hook's body holds (see _FORGES)."""
    found = {label for label, pattern in _FORGES.items() if pattern.search(body)}
    if name == "pytest_collection_modifyitems":
        found = set()
        if _DROPS_ITEMS.search(body) and not re.search(
            r"items\[:\]\s*=\s*(sorted\(|reversed\(|list\(reversed)", body
        ):
            found.add("removes collected items")
    elif name in ("pytest_pyfunc_call", "pytest_runtest_protocol", "pytest_runtest_call"):
        if re.search(r"\breturn\s+(True|1|\w+\s+or\s+True)\b", body) and not _RUNS_TEST.search(
            body
        ):
            found.add("reports the test as run without running it")
    elif name == "pytest_ignore_collect":
        if re.search(r"\breturn\b(?!\s*(None|False)?\s*$)", body, re.MULTILINE):
            found.add("keeps files out of collection")
    elif name == "pytest_report_teststatus":
        found.add("rewrites how outcomes are reported")
    return found


def exit_in_tests(ctx: Context) -> Iterator[Violation]:
    """## What it does
    Flags a new `sys.exit(...)`, `os._exit(...)`, `pytest.exit(...)` or builtin
    `exit(...)` / `quit(...)` in a test module or `conftest.py`.

    Module-level calls count too; an `if __name__ == "__main__":` block is exempt, and
    so is a method that happens to be called `exit` (`ctx.exit()`, `def exit(self)`).

    ## Why it matters
    `os._exit(0)` ends the test process with success before the failures are reported.

    ## Example
    ```python
    def test_refund():
        os._exit(0)
    ```

    ## Use instead
    Let the test run to its end.
    """
    if ctx.guard is None or not (ctx.is_test_file or ctx.relpath.endswith("conftest.py")):
        return
    new = [(fn.name, fn.line, fn.body) for fn in new_functions(ctx)]
    for _name, line, body in [*new, *_new_module_statements(ctx)]:
        match = _EXIT.search(body)
        if match:
            yield Violation(
                span=span(line + body[: match.start()].count("\n")),
                message=f"`{match.group(1) or match.group(2)}(...)` ends the test run early",
            )


# `sys.exit(`, `os._exit(`, `pytest.exit(`, or the builtins `exit(` / `quit(` — not a
# method that happens to be called exit (`ctx.exit()`), nor a definition of one.
_EXIT = re.compile(r"\b(sys\.exit|os\._exit|pytest\.exit)\s*\(|(?<![\w.])(?<!def )(exit|quit)\s*\(")
_DEFINITIONS = frozenset({"function_definition", "class_definition", "decorated_definition"})


def _is_main_guard(ctx: Context, stmt: Node) -> bool:
    """``if __name__ == "__main__":``: runs when the file is a script, never under pytest."""
    condition = stmt.child_by_field_name("condition") if stmt.type == "if_statement" else None
    return condition is not None and canonical(ctx.source.node_text(condition)) in (
        "__name__ == '__main__'",
        "'__main__' == __name__",
    )


def _new_module_statements(ctx: Context) -> list[tuple[str, int, str]]:
    """("", line, text) of module-level statements (outside any function or class) that
    are not in the baseline: code that runs when pytest imports the module."""
    base = base_of(ctx)
    squashed = base.squashed if base is not None else ""
    out = []
    for stmt in ctx.source.tree.root_node.named_children:
        if stmt.type in _DEFINITIONS or stmt.type == "comment" or _is_main_guard(ctx, stmt):
            continue
        text = ctx.source.node_text(stmt)
        if squash(text) not in squashed:
            out.append(("", stmt.start_point.row + 1, text))
    return out
