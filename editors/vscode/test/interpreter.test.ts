import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import {
  expandPath,
  installCommand,
  needsPythonExtension,
  readiness,
  resolveServerCommand,
  runVersion,
  versionCommand,
} from '../src/interpreter';

describe('resolveServerCommand', () => {
  const all = { path: '/opt/referee/bin/referee', interpreter: '/usr/bin/python3.12', pythonExtension: '/venv/bin/python' };

  it('runs referee.path as `<path> serve` over every interpreter', () => {
    assert.deepEqual(resolveServerCommand(all), { command: '/opt/referee/bin/referee', args: ['serve'], source: 'path' });
  });

  it('runs referee.interpreter with -m referee when no path is set', () => {
    assert.deepEqual(resolveServerCommand({ ...all, path: '' }), {
      command: '/usr/bin/python3.12',
      args: ['-m', 'referee', 'serve'],
      source: 'interpreter',
    });
  });

  it("uses the Python extension's environment when neither setting is", () => {
    const server = resolveServerCommand({ path: ' ', interpreter: '', pythonExtension: '/venv/bin/python' });
    assert.equal(server.command, '/venv/bin/python');
    assert.equal(server.source, 'pythonExtension');
  });

  it('falls back to python3 on PATH, python on Windows', () => {
    assert.equal(resolveServerCommand({ platform: 'linux' }).command, 'python3');
    assert.equal(resolveServerCommand({ platform: 'win32' }).command, 'python');
    assert.equal(resolveServerCommand({}).source, 'default');
  });

  it('asks the Python extension only when nothing set wins over it', () => {
    assert.equal(needsPythonExtension({ path: '/x/referee' }), false);
    assert.equal(needsPythonExtension({ interpreter: 'python3.13' }), false);
    assert.equal(needsPythonExtension({ path: '', interpreter: '  ' }), true);
  });

  it('expands ~ and ${workspaceFolder} in the settings', () => {
    const context = { home: '/home/me', workspaceFolder: '/work/project' };
    assert.equal(resolveServerCommand({ path: '~/.venvs/r/bin/referee' }, context).command, '/home/me/.venvs/r/bin/referee');
    assert.equal(
      resolveServerCommand({ interpreter: '${workspaceFolder}/.venv/bin/python' }, context).command,
      '/work/project/.venv/bin/python',
    );
  });
});

describe('expandPath', () => {
  const context = { home: '/home/me', workspaceFolder: '/work/project' };

  it('takes a relative path with a separator from the workspace folder', () => {
    assert.equal(expandPath('.venv/bin/referee', context), path.join('/work/project', '.venv/bin/referee'));
  });

  it('leaves a bare name for the PATH search and an absolute path as it is', () => {
    assert.equal(expandPath('referee', context), 'referee');
    assert.equal(expandPath('/usr/bin/python3', context), '/usr/bin/python3');
  });
});

describe('version check and install hint', () => {
  it('checks a referee executable with --version and an interpreter with -m referee --version', () => {
    assert.deepEqual(versionCommand(resolveServerCommand({ path: '/bin/referee' })), {
      command: '/bin/referee',
      args: ['--version'],
    });
    assert.deepEqual(versionCommand(resolveServerCommand({ interpreter: '/bin/python3' })).args, ['-m', 'referee', '--version']);
  });

  it('names the exact install command, quoted when the path has spaces', () => {
    assert.equal(installCommand(resolveServerCommand({ interpreter: '/venv/bin/python' })), '/venv/bin/python -m pip install referee');
    assert.equal(
      installCommand(resolveServerCommand({ interpreter: 'C:\\Program Files\\Python\\python.exe' })),
      '"C:\\Program Files\\Python\\python.exe" -m pip install referee',
    );
  });

  it('reads the version from `referee, version 0.1.0`', () => {
    const server = resolveServerCommand({ path: '/bin/referee' });
    assert.deepEqual(readiness(server, { exitCode: 0, stdout: 'referee, version 0.1.0\n' }), { ok: true, version: '0.1.0' });
  });
});

describe('version check against real processes', () => {
  it('says that a referee.path that does not exist does not exist', async () => {
    const server = resolveServerCommand({ path: '/nonexistent/bin/referee' });
    const ready = readiness(server, await runVersion(server));
    assert.equal(ready.ok, false);
    assert.match(ready.ok ? '' : ready.message, /\/nonexistent\/bin\/referee \(the referee\.path setting\) cannot be run: it does not exist/);
  });

  it('says that an interpreter that is not there was not found', async () => {
    const server = resolveServerCommand({ interpreter: '/nonexistent/python3' });
    const ready = readiness(server, await runVersion(server));
    assert.equal(ready.ok, false);
    assert.match(ready.ok ? '' : ready.message, /Python interpreter \/nonexistent\/python3 \(the referee\.interpreter setting\) was not found/);
  });

  it('gives the install command for a Python without referee', async (t) => {
    // A real Python that cannot import referee: python3 without site-packages (-S).
    const python3 = ['/usr/bin/python3', '/usr/local/bin/python3']
      .concat((process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, 'python3')))
      .find((candidate) => fs.existsSync(candidate));
    assert.ok(python3, 'python3 is not on PATH');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'referee-vscode-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const wrapper = path.join(dir, 'python-without-site');
    fs.writeFileSync(wrapper, `#!/bin/sh\nexec "${python3}" -S "$@"\n`, { mode: 0o755 });
    const server = resolveServerCommand({ pythonExtension: wrapper });
    const ready = readiness(server, await runVersion(server, dir));
    assert.deepEqual(ready, {
      ok: false,
      message: `referee is not installed for ${wrapper} (the Python extension's active environment). Install it with: ${wrapper} -m pip install referee`,
      install: `${wrapper} -m pip install referee`,
    });
  });
});
