"""The distribution installs every module of the engine and the front-ends."""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_directory_is_listed_in_pyproject() -> None:
    """A package missing from [tool.setuptools] packages installs fine in editable mode
    and breaks `pip install .` — the README's first command."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    listed = set(config["setuptools"]["packages"])
    mapping = config["setuptools"]["package-dir"]
    found = set()
    for package, directory in mapping.items():
        for init in (ROOT / directory).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / directory)
            if relative.parts and relative.parts[0].startswith("_"):
                continue  # server/_root is the `referee` package itself
            found.add(".".join([package, *relative.parts]))
    assert found - listed == set(), "add these to [tool.setuptools] packages"
