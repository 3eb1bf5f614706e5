"""Reading the baseline from git: which files changed since a ref, and their text there.

Two git processes per run whatever the number of files: ``git diff`` (plus ``ls-files``
for untracked files) to list them, ``git cat-file --batch`` to read them.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path


class GitError(Exception):
    """Git is missing, the directory is not a repository, or the ref does not exist."""


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=root,
            input=stdin,
            capture_output=True,
            timeout=120,
            check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} timed out") from None
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(message[-1] if message else f"git {args[0]} failed")
    return proc.stdout


_TOPLEVELS: dict[Path, Path] = {}


def toplevel(path: Path) -> Path:
    """The repository ``path`` is in. Kept per directory while the repository's ``.git``
    is still there (a warm hook process asks it for every edit)."""
    directory = path if path.is_dir() else path.parent
    known = _TOPLEVELS.get(directory)
    if known is not None and (known / ".git").exists():
        return known
    found = Path(_git(directory, "rev-parse", "--show-toplevel").decode().strip())
    if len(_TOPLEVELS) > 256:
        _TOPLEVELS.clear()
    _TOPLEVELS[directory] = found
    return found


def resolve(root: Path, ref: str) -> str:
    """The commit ``ref`` names, or GitError saying it names none."""
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except GitError:
        raise GitError(f"{ref!r} is not a commit in {root}") from None


@dataclass(frozen=True)
class Changed:
    path: str  # relative to the repository root, as it is now
    old_path: str | None  # where it was at the base (None: new file)
    deleted: bool = False


def changed_files(root: Path, base: str) -> list[Changed]:
    """Files that differ between ``base`` and the working tree, untracked ones included."""
    out = _git(root, "diff", "--name-status", "-z", "-M", base, "--")
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    changes: list[Changed] = []
    i = 0
    while i < len(fields) and fields[i]:
        status = fields[i]
        if status.startswith(("R", "C")):
            old, new = fields[i + 1], fields[i + 2]
            changes.append(Changed(new, old if status.startswith("R") else None))
            i += 3
            continue
        path = fields[i + 1]
        if status.startswith("D"):
            changes.append(Changed(path, path, deleted=True))
        elif status.startswith("A"):
            changes.append(Changed(path, None))
        else:
            changes.append(Changed(path, path))
        i += 2
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "-z")
    changes.extend(
        Changed(p, None) for p in untracked.decode("utf-8", "surrogateescape").split("\0") if p
    )
    return changes


def read_at(root: Path, base: str, paths: list[str]) -> dict[str, str | None]:
    """The text of each path at ``base`` (None where it did not exist or is not text)."""
    if not paths:
        return {}
    request = "".join(f"{base}:{p}\n" for p in paths).encode("utf-8", "surrogateescape")
    out = _git(root, "cat-file", "--batch", stdin=request)
    texts: dict[str, str | None] = {}
    position = 0
    for path in paths:
        end = out.index(b"\n", position)
        header = out[position:end].decode("utf-8", "replace")
        position = end + 1
        if header.endswith("missing"):
            texts[path] = None
            continue
        size = int(header.rsplit(" ", 1)[1])
        blob = out[position : position + size]
        position += size + 1
        try:
            texts[path] = blob.decode("utf-8")
        except UnicodeDecodeError:
            texts[path] = None
    return texts


def tracked_files(root: Path) -> list[str]:
    out = _git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


def new_lines(root: Path, base: str) -> dict[str, frozenset[int] | None]:
    """Lines added or changed since ``base``, by path relative to the repository root:
    1-based line numbers in the working tree, or None for a file that is new as a whole
    (added, or untracked and not ignored)."""
    found: dict[str, frozenset[int] | None] = {}
    for change in changed_files(root, base):
        if not change.deleted and change.old_path is None:
            found[change.path] = None
    out = _git(root, "diff", "-U0", "--no-color", "--no-ext-diff", "-M", base, "--")
    for section in out.split(b"\ndiff --git "):
        body = section.partition(b"\n+++ ")[2]
        if not body:
            continue
        target = body.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
        if target == "/dev/null" or not target.startswith("b/"):
            continue
        path = target[2:]
        if path in found:
            continue
        lines: set[int] = set()
        for match in _HUNK.finditer(body):
            start, count = int(match.group(1)), int(match.group(2) or 1)
            lines.update(range(start, start + count))
        found[path] = frozenset(lines)
    return found
