// The `referee.*` settings the server reads (server/options.py, ClientSettings) and how
// VS Code's configuration becomes what the server is sent. No `vscode` import.

import { expandPath, PathContext } from './interpreter';

/** Every key of ClientSettings, dotted for the nested sections, in the editor's camelCase.
 * tests/test_vscode_extension.py compares these with the server's model, and
 * test/settings.test.ts with package.json. */
export const SERVER_SETTINGS = [
  'select',
  'extendSelect',
  'ignore',
  'run',
  'debounceMs',
  'configuration',
  'python',
  'judge.run',
  'judge.backend',
  'judge.model',
  'judge.url',
  'judge.perspectives',
  'judge.divergenceThreshold',
  'tests.runOnSave',
  'arbitration.oracles',
  'execution.run',
] as const;

/** Settings only the extension reads; they never reach the server. */
export const CLIENT_SETTINGS = ['path', 'interpreter', 'trace.server'] as const;

/** Changing these needs a new server process. */
export const RESTART_SETTINGS = ['path', 'interpreter'] as const;

export type ServerSettings = { [key: string]: unknown };

function lookup(section: unknown, dotted: string): unknown {
  let value: unknown = section;
  for (const part of dotted.split('.')) {
    if (value === null || typeof value !== 'object') {
      return undefined;
    }
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

function assign(target: ServerSettings, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    if (node[part] === undefined) {
      node[part] = {};
    }
    node = node[part] as ServerSettings;
  }
  node[parts[parts.length - 1]] = value;
}

/** What the server is sent for VS Code's `referee` section (as
 * `workspace.getConfiguration().get('referee')` gives it: nested objects): the server's
 * keys only, nested camelCase, unset (null) ones left out so the server's defaults and
 * the project's configuration apply, and the paths of `configuration` and `python` expanded. Values of the
 * wrong type are passed on as they are: the server reports them and uses its defaults. */
export function toServerSettings(section: unknown, context: PathContext = {}): ServerSettings {
  const result: ServerSettings = {};
  for (const key of SERVER_SETTINGS) {
    let value = lookup(section, key);
    if (value === undefined || value === null) {
      continue;
    }
    if ((key === 'configuration' || key === 'python') && typeof value === 'string') {
      if (value.trim() === '') {
        continue;
      }
      value = expandPath(value, context);
    }
    assign(result, key, value);
  }
  return result;
}

/** Whether a configuration change needs a restart rather than a settings update. */
export function needsRestart(affects: (section: string) => boolean): boolean {
  return RESTART_SETTINGS.some((key) => affects(`referee.${key}`));
}
