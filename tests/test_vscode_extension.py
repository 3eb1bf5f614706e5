"""The packaged VS Code extension (editors/vscode/referee.vsix), read as VS Code reads it.

The .vsix is a build product (npm), not part of a clone: where it has not been built these
tests are skipped, with the command that builds it. ``.ci/run`` builds it before pytest
runs and sets REFEREE_REQUIRE_VSIX=1, under which a missing .vsix is a broken build and
fails. The contributed settings are compared with the server's ClientSettings so the two
cannot drift apart.

The end-to-end test runs editors/vscode/scripts/e2e.py: the .vsix in a real VS Code
(code-server in headless Chromium). It runs when REFEREE_CODE_SERVER names the directory of
``.ci/code-server.sh DIR`` (``.ci/run`` installs it and sets the variable) and needs the
``e2e`` extra (playwright); without the variable it is skipped, so the README's test
command runs everywhere.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import typing
import zipfile
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from referee.server import lsp
from referee.server.options import ClientSettings

ROOT = Path(__file__).resolve().parent.parent
EXTENSION = ROOT / "editors" / "vscode"
VSIX = EXTENSION / "referee.vsix"
BUILD = "(cd editors/vscode && npm ci && npm run package)"
CLIENT_ONLY = {"referee.path", "referee.interpreter", "referee.trace.server"}
COMMANDS = {
    "referee.restart",
    "referee.showOutput",
    "referee.runWorkspaceCheck",
    "referee.openReviewQueue",
    "referee.arbitrateAtCursor",
}


# Set by .ci/run, which builds the .vsix: there a missing one fails instead of skipping.
REQUIRE_VSIX = os.environ.get("REFEREE_REQUIRE_VSIX") == "1"


@pytest.fixture(scope="module")
def vsix() -> zipfile.ZipFile:
    if not VSIX.is_file():
        missing = f"{VSIX.relative_to(ROOT)} is not built"
        if REQUIRE_VSIX:
            pytest.fail(f"{missing} (REFEREE_REQUIRE_VSIX=1): build it with {BUILD}", pytrace=False)
        pytest.skip(f"{missing}; to run these tests, build it with {BUILD}")
    with zipfile.ZipFile(VSIX) as archive:
        yield archive


@pytest.fixture(scope="module")
def manifest(vsix: zipfile.ZipFile) -> dict[str, Any]:
    return json.loads(vsix.read("extension/package.json"))


def _settings(model: type[BaseModel], prefix: str = "referee.") -> dict[str, Any]:
    """Every setting of a model as VS Code names it (``referee.judge.divergenceThreshold``),
    with its field; nested sections flattened."""
    found: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        key = prefix + (field.alias or name)
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found.update(_settings(annotation, key + "."))
        else:
            found[key] = field
    return found


SERVER_SETTINGS = _settings(ClientSettings)


def _flat(values: dict[str, Any], prefix: str = "referee.") -> dict[str, Any]:
    """``{"judge": {"run": ...}}`` as ``{"referee.judge.run": ...}``."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[prefix + key] = value
    return flat


def test_vsix_holds_the_manifest_of_the_source_tree(manifest: dict[str, Any]) -> None:
    """A .vsix built before the last change to package.json would test old settings."""
    source = json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))
    for key in ("name", "version", "main", "activationEvents", "contributes"):
        assert manifest[key] == source[key], f"{key} differs: rebuild with {BUILD}"


def test_activates_for_python_projects_and_its_commands(manifest: dict[str, Any]) -> None:
    events = set(manifest["activationEvents"])
    assert {
        "onLanguage:python",
        "workspaceContains:pyproject.toml",
        "workspaceContains:referee.toml",
    } <= events
    assert {f"onCommand:{command}" for command in COMMANDS} <= events


def test_main_entry_is_in_the_bundle(vsix: zipfile.ZipFile, manifest: dict[str, Any]) -> None:
    entry = "extension/" + manifest["main"].removeprefix("./")
    bundle = vsix.read(entry).decode("utf-8")
    # The bundle carries its dependencies (vsce runs with --no-dependencies) and the
    # names it talks to the server with.
    assert not [name for name in vsix.namelist() if "node_modules/" in name]
    for literal in ("referee/status", "referee.review.list", "referee.checkWorkspace"):
        assert literal in bundle, f"{entry} does not mention {literal!r}"


def test_contributes_every_client_setting_of_the_server(manifest: dict[str, Any]) -> None:
    contributed = set(manifest["contributes"]["configuration"]["properties"])
    assert contributed - CLIENT_ONLY == set(SERVER_SETTINGS), (
        "editors/vscode/package.json and server/options.py ClientSettings differ; "
        "add or remove the setting in package.json and src/settings.ts"
    )
    assert contributed >= CLIENT_ONLY


def test_contributed_defaults_are_the_servers(manifest: dict[str, Any]) -> None:
    properties = manifest["contributes"]["configuration"]["properties"]
    defaults = _flat(ClientSettings().model_dump(by_alias=True))
    differing = {
        key: (properties[key].get("default"), value)
        for key, value in defaults.items()
        if properties[key].get("default") != value
    }
    assert not differing, f"package.json default vs server default: {differing}"


def test_contributed_choices_are_the_servers(manifest: dict[str, Any]) -> None:
    properties = manifest["contributes"]["configuration"]["properties"]
    checked = 0
    for key, field in SERVER_SETTINGS.items():
        annotation = field.annotation
        parts = [annotation] if typing.get_origin(annotation) is typing.Literal else []
        parts = parts or list(typing.get_args(annotation))  # Literal[...] | None
        literals = [
            arg
            for part in parts
            if typing.get_origin(part) is typing.Literal
            for arg in typing.get_args(part)
        ]
        if literals:
            enum = [value for value in properties[key]["enum"] if value is not None]
            assert enum == literals, key
            checked += 1
    assert checked >= 3  # run, judge.run, judge.backend


def test_contributes_the_commands_without_taking_the_servers_names(
    manifest: dict[str, Any],
) -> None:
    contributed = {c["command"] for c in manifest["contributes"]["commands"]}
    assert contributed == COMMANDS
    # vscode-languageclient registers each server command as a VS Code command of the same
    # name; a contributed command with such a name would fail to register at start.
    server_commands = set(lsp.server.protocol.fm.commands)
    assert "referee.checkWorkspace" in server_commands
    assert contributed & server_commands == set()


CODE_SERVER = os.environ.get("REFEREE_CODE_SERVER")
E2E = EXTENSION / "scripts" / "e2e.py"


@pytest.mark.slow
@pytest.mark.skipif(
    not CODE_SERVER,
    reason="needs a real VS Code: run `bash .ci/code-server.sh DIR`, `pip install -e '.[e2e]'` "
    "and set REFEREE_CODE_SERVER=DIR (.ci/run does)",
)
def test_extension_in_code_server_shows_findings_and_follows_settings(
    vsix: zipfile.ZipFile,
) -> None:
    if not (Path(CODE_SERVER) / "bin" / "code-server").is_file():
        pytest.fail(f"REFEREE_CODE_SERVER={CODE_SERVER} holds no bin/code-server", pytrace=False)
    if shutil.which("chromium") is None:
        pytest.fail("chromium is not on PATH (Debian's package `chromium`)", pytrace=False)
    try:
        import playwright  # noqa: F401
    except ImportError:
        pytest.fail("the e2e test needs `pip install playwright`", pytrace=False)
    referee = Path(sys.executable).parent / "referee"
    ran = subprocess.run(
        [sys.executable, str(E2E), "--code-server", CODE_SERVER, "--referee", str(referee)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    report = json.loads(ran.stdout)
    assert report["ok"], report.get("error")
    # The demo's test file, in VS Code's Problems panel, from referee.
    assert {"REF101", "REF110", "REF111", "REF120"} <= set(report["codes"])
    assert all(" referee REF" in row for row in report["problems"][1:]), report["problems"]
    assert report["status_bar"] == "$(check) referee"
    # referee.ignore changed while the server ran took the first code away.
    assert report["codes"][0] not in report["codes_with_ignore"]
    assert re.fullmatch(r"referee checked \d+ files: \d+ findings\.", report["check_workspace"])
    assert (
        "does not support the review queue" in report["review_queue"]
        or "nothing waits for review" in report["review_queue"]
    ), report["review_queue"]
    assert "-m pip install referee" in report["not_installed_message"]
    assert report["status_bar_not_installed"] == "$(error) referee"
    assert report["status_bar_restarted"] == "$(check) referee"
