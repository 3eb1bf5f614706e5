"""Which of a project's files that are not Python travel into the sandbox, and with whom.

Test data (``tests/files/x.sql``, ``tests/res/index.html``) lives in a test directory;
package data (templates, schemas) in a package, beside its ``__init__.py`` or under it.
Runs of the project's tests get both, as the tests read them. Code a model wrote — a
candidate patch checked on the asserted calls, an oracle beside the project's objects —
gets package data only: the tests' data can hold what they expect.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")
TEST_DIRECTORIES = frozenset({"tests", "test", "testing"})


def data_file(relpath: str, packages: set[str]) -> bool:
    """Whether ``relpath``, a file that is not Python, is data a test or a package may
    read: in a test directory, or in a package (a folder of ``packages``, those with an
    ``__init__.py``) or a directory under one."""
    if relpath.endswith((".pyc", ".pyo", ".so")):
        return False
    if _in_test_directory(relpath):
        return True
    parts = relpath.split("/")[:-1]
    return any("/".join(parts[:i]) in packages for i in range(1, len(parts) + 1))


def is_test_data(relpath: str) -> bool:
    """A file that is not Python, in a test directory."""
    return not relpath.endswith(".py") and _in_test_directory(relpath)


def _in_test_directory(relpath: str) -> bool:
    return any(part in TEST_DIRECTORIES for part in relpath.split("/")[:-1])


def without_test_data(files: dict[str, T]) -> dict[str, T]:
    """``files`` as code a model wrote may see them: without the tests' data."""
    return {path: text for path, text in files.items() if not is_test_data(path)}
