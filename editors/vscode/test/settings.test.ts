import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { CLIENT_SETTINGS, needsRestart, SERVER_SETTINGS, toServerSettings } from '../src/settings';

const MANIFEST = path.join(__dirname, '..', '..', 'package.json');

/** The `referee` section as VS Code's configuration API gives it: dotted keys as objects. */
const VSCODE_SECTION = {
  path: '/opt/referee/bin/referee',
  interpreter: '',
  trace: { server: 'verbose' },
  select: ['REF1'],
  extendSelect: ['REF301'],
  ignore: ['REF102'],
  run: 'onSave',
  debounceMs: 200,
  configuration: null,
  judge: {
    run: 'manual',
    backend: 'openai',
    model: null,
    url: 'http://127.0.0.1:8080/v1',
    perspectives: ['strict', 'lenient'],
    divergenceThreshold: 0.6,
  },
  tests: { runOnSave: true },
  arbitration: { oracles: 3 },
};

describe('toServerSettings', () => {
  it("sends the server's keys, nested and camelCase, and nothing of the extension's own", () => {
    assert.deepEqual(toServerSettings(VSCODE_SECTION), {
      select: ['REF1'],
      extendSelect: ['REF301'],
      ignore: ['REF102'],
      run: 'onSave',
      debounceMs: 200,
      judge: {
        run: 'manual',
        backend: 'openai',
        url: 'http://127.0.0.1:8080/v1',
        perspectives: ['strict', 'lenient'],
        divergenceThreshold: 0.6,
      },
      tests: { runOnSave: true },
      arbitration: { oracles: 3 },
    });
  });

  it('leaves unset (null) settings out, so the project and the server defaults apply', () => {
    const sent = toServerSettings({ select: null, configuration: '', judge: { backend: null }, run: 'onType' });
    assert.deepEqual(sent, { run: 'onType' });
  });

  it("expands the configuration file's path for the folder it is asked for", () => {
    const context = { home: '/home/me', workspaceFolder: '/work/a' };
    assert.equal(toServerSettings({ configuration: 'config/referee.toml' }, context).configuration, path.join('/work/a', 'config/referee.toml'));
    assert.equal(toServerSettings({ configuration: '~/referee.toml' }, context).configuration, '/home/me/referee.toml');
    assert.equal(toServerSettings({ python: '.venv/bin/python' }, context).python, path.join('/work/a', '.venv/bin/python'));
  });

  it('passes values of the wrong type on for the server to report', () => {
    assert.deepEqual(toServerSettings({ run: 'sometimes', judge: { divergenceThreshold: 'high' } }), {
      run: 'sometimes',
      judge: { divergenceThreshold: 'high' },
    });
  });

  it('sends nothing for a section that is not an object', () => {
    assert.deepEqual(toServerSettings(undefined), {});
    assert.deepEqual(toServerSettings('referee'), {});
  });
});

describe('package.json', () => {
  const manifest = JSON.parse(fs.readFileSync(MANIFEST, 'utf8'));
  const contributed = Object.keys(manifest.contributes.configuration.properties);

  it('contributes exactly the server settings and the client-only ones', () => {
    const expected = [...SERVER_SETTINGS, ...CLIENT_SETTINGS].map((key) => `referee.${key}`);
    assert.deepEqual([...contributed].sort(), [...expected].sort());
  });

  it("gives each server setting a default the mapping sends as the server's default", () => {
    const defaults: Record<string, unknown> = {};
    for (const key of contributed) {
      defaults[key.slice('referee.'.length)] = manifest.contributes.configuration.properties[key].default;
    }
    // What VS Code would send with nothing set: only defaults that are not null.
    const nested = {};
    for (const [key, value] of Object.entries(defaults)) {
      const parts = key.split('.');
      let node: Record<string, unknown> = nested;
      for (const part of parts.slice(0, -1)) {
        node = (node[part] ??= {}) as Record<string, unknown>;
      }
      node[parts[parts.length - 1]] = value;
    }
    assert.deepEqual(toServerSettings(nested), {
      extendSelect: [],
      ignore: [],
      run: 'onType',
      debounceMs: 50,
      judge: { run: 'onSave' },
      execution: { run: 'onSave' },
      tests: { runOnSave: false },
    });
  });
});

describe('needsRestart', () => {
  it('restarts for referee.path and referee.interpreter only', () => {
    const changed = (keys: string[]) => needsRestart((section) => keys.includes(section));
    assert.equal(changed(['referee.path']), true);
    assert.equal(changed(['referee.interpreter']), true);
    assert.equal(changed(['referee.run', 'referee.judge.model']), false);
  });
});
