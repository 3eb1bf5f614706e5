"""The language server's settings: the editor's (``referee.*``, per workspace folder)
and each project's configuration files, the first on top of the second."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import to_fs_path

from referee.checks import interpreter
from referee.checks.config import ConfigError, Settings, discover, forget_pytest_layouts
from referee.server.options import ClientSettings, parse_settings

if TYPE_CHECKING:
    from pygls.workspace import Workspace

    from referee.server.live_guard import LiveGuard

log = logging.getLogger("referee.server")


class WorkspaceSettings:
    """The settings part of :class:`~referee.server.lsp.RefereeServer`."""

    if TYPE_CHECKING:  # what the server provides
        workspace: Workspace
        client_capabilities: types.ClientCapabilities
        live_guard: LiveGuard

        def window_show_message(self, params: types.ShowMessageParams) -> None: ...
        async def workspace_configuration_async(self, params: types.ConfigurationParams) -> Any: ...

    def init_settings(self) -> None:
        self.global_settings = ClientSettings()
        self.folder_settings: dict[str, ClientSettings] = {}  # folder path -> settings
        self._project_settings: dict[tuple[str, str | None], Settings] = {}
        self._reported_config_errors: set[str] = set()

    def folders(self) -> list[Path]:
        return [Path(to_fs_path(f.uri) or f.uri) for f in self.workspace.folders.values()]

    def folder_of(self, path: Path) -> Path | None:
        matches = [f for f in self.folders() if path == f or f in path.parents]
        return max(matches, key=lambda f: len(f.parts), default=None)

    def client_settings(self, path: Path) -> ClientSettings:
        folder = self.folder_of(path)
        if folder is not None and str(folder) in self.folder_settings:
            return self.folder_settings[str(folder)]
        return self.global_settings

    def settings_for(self, path: Path) -> Settings:
        """The project's configuration for a file, with the editor's overrides on top.
        A broken configuration is reported once and replaced by the defaults."""
        client = self.client_settings(path)
        explicit = client.configuration
        key = (str(path.parent), explicit)
        project = self._project_settings.get(key)
        if project is None:
            try:
                project = discover(path.parent, Path(explicit) if explicit else None)
            except ConfigError as exc:
                self._report_config_error(str(exc))
                project = Settings(root=self.folder_of(path) or path.parent)
            self._project_settings[key] = project
        if client.python:  # the editor's interpreter wins over the file's and discovery
            project = project.with_python(client.python, "editor setting referee.python")
        try:
            return project.with_overrides(client.select or (), client.extend_select, client.ignore)
        except ConfigError as exc:  # the editor's select/ignore, not a file's
            self._report_config_error(f"editor settings: {exc.key}: {exc.problem}")
            return project

    def _report_config_error(self, message: str) -> None:
        log.error(message)
        if message not in self._reported_config_errors:
            self._reported_config_errors.add(message)
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=f"referee: {message}")
            )

    def forget_settings(self) -> None:
        self._project_settings.clear()
        interpreter.forget()  # a .venv made, pytest installed since
        forget_pytest_layouts()
        self._reported_config_errors.clear()
        self.live_guard.invalidate()

    async def pull_configuration(self) -> bool:
        """Ask the client for the ``referee`` section of every workspace folder; whether
        the settings changed."""
        workspace = self.client_capabilities.workspace
        if not (workspace and workspace.configuration):
            return False
        before = (self.global_settings, self.folder_settings)
        folders = list(self.workspace.folders.values())
        items = [types.ConfigurationItem(scope_uri=f.uri, section="referee") for f in folders]
        items.append(types.ConfigurationItem(section="referee"))
        try:
            answers = await self.workspace_configuration_async(
                types.ConfigurationParams(items=items)
            )
        except Exception as exc:  # a client that fails the request keeps its old settings
            log.warning("workspace/configuration failed: %s", exc)
            return False
        *per_folder, global_answer = list(answers) + [None] * (len(items) - len(answers))
        if global_answer is not None:
            self.global_settings = self._parsed(global_answer)
        self.folder_settings = {}
        for folder, answer in zip(folders, per_folder, strict=False):
            if answer is not None:
                path = to_fs_path(folder.uri) or folder.uri
                self.folder_settings[str(Path(path))] = self._parsed(answer)
        return (self.global_settings, self.folder_settings) != before

    def _parsed(self, raw: Any) -> ClientSettings:
        settings, problem = parse_settings(raw)
        if problem:
            self._report_config_error(problem)
        return settings
