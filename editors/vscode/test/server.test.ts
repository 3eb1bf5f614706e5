// The extension's logic against the real `referee serve` over stdio: the settings it
// sends reach the server's model, the status bar follows the server's real progress, and
// an unknown command is told apart from a failing one. The Python that runs referee is
// $REFEREE_PYTHON, else the repository's .venv (what .ci/run creates).

import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';

import {
  ConfigurationRequest,
  createProtocolConnection,
  ExecuteCommandRequest,
  InitializeRequest,
  InitializeResult,
  InitializedNotification,
  ProtocolConnection,
  RegistrationRequest,
  ShowMessageNotification,
  WorkDoneProgress,
  WorkDoneProgressCreateRequest,
} from 'vscode-languageserver-protocol/node';

import { announces, isUnknownCommandError, SERVER_COMMANDS } from '../src/serverCommands';
import { toServerSettings } from '../src/settings';
import { ProgressValue, StatusModel } from '../src/status';

const REPO = path.resolve(__dirname, '..', '..', '..', '..');

function python(): string {
  const candidate = process.env.REFEREE_PYTHON ?? path.join(REPO, '.venv', 'bin', 'python');
  if (!fs.existsSync(candidate)) {
    assert.fail(
      `no Python with referee at ${candidate}: set REFEREE_PYTHON, or run ` +
        "`python3 -m venv .venv && .venv/bin/pip install -e '.[dev]'` in the repository",
    );
  }
  return candidate;
}

interface Session {
  process: ChildProcess;
  connection: ProtocolConnection;
  result: InitializeResult;
  messages: string[];
  model: StatusModel;
  views: string[];
}

/** `referee serve` on a workspace folder, initialized the way the extension does it. */
async function startServer(folder: string, section: unknown): Promise<Session> {
  const child = spawn(python(), ['-m', 'referee', 'serve'], { cwd: folder, stdio: ['pipe', 'pipe', 'inherit'] });
  const connection = createProtocolConnection(child.stdout!, child.stdin!);
  const messages: string[] = [];
  const model = new StatusModel();
  const views: string[] = [];
  connection.onNotification(ShowMessageNotification.type, (params) => messages.push(params.message));
  connection.onRequest(ConfigurationRequest.type, (params) =>
    params.items.map((item) => (item.section === 'referee' ? toServerSettings(section, { workspaceFolder: folder }) : null)),
  );
  connection.onRequest(RegistrationRequest.type, () => null);
  connection.onRequest(WorkDoneProgressCreateRequest.type, ({ token }) => {
    connection.onProgress(WorkDoneProgress.type, token, (value) => {
      model.onProgress(token, value as ProgressValue);
      views.push(model.view().text);
    });
    return null;
  });
  connection.listen();
  const uri = pathToFileURL(folder).href;
  const result = await connection.sendRequest(InitializeRequest.type, {
    processId: process.pid,
    rootUri: uri,
    workspaceFolders: [{ uri, name: 'w' }],
    capabilities: { window: { workDoneProgress: true }, workspace: { configuration: true } },
    initializationOptions: toServerSettings(section, { workspaceFolder: folder }),
  });
  await connection.sendNotification(InitializedNotification.type, {});
  model.setServerState('running', result.serverInfo?.version);
  return { process: child, connection, result, messages, model, views };
}

async function stopServer(session: Session): Promise<void> {
  const exited = new Promise((resolve) => session.process.once('exit', resolve));
  await session.connection.sendRequest('shutdown');
  await session.connection.sendNotification('exit');
  await exited;
  session.connection.dispose();
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !condition(); waited += 20) {
    assert.ok(waited < 15_000, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('against the real referee serve', () => {
  let folder: string;
  let session: Session;

  before(async () => {
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'referee-vscode-'));
    fs.writeFileSync(path.join(folder, 'test_a.py'), 'def test_a():\n    pass\n');
    fs.writeFileSync(path.join(folder, 'test_b.py'), 'def test_b():\n    ...\n');
    // A nested setting the server's model rejects: proves the nesting reaches JudgeSettings.
    session = await startServer(folder, { run: 'onType', judge: { run: 'manual', divergenceThreshold: 2 } });
  });

  after(async () => {
    await stopServer(session);
    fs.rmSync(folder, { recursive: true, force: true });
  });

  it('reaches the nested judge settings of the server (a bad one is reported by its dotted key)', async () => {
    await until(() => session.messages.length > 0, 'a message about the settings');
    assert.match(session.messages[0], /^referee: referee settings: judge\.divergenceThreshold: /);
  });

  it("follows the server's progress in the status bar while it checks the workspace", async () => {
    const answer = (await session.connection.sendRequest(ExecuteCommandRequest.type, {
      command: SERVER_COMMANDS.checkWorkspace,
      arguments: [],
    })) as { files: number; findings: number };
    assert.equal(answer.files, 2);
    assert.ok(answer.findings >= 2, `expected findings in both files, got ${answer.findings}`);
    await until(() => session.views.at(-1) === '$(check) referee', 'the end of the progress');
    assert.equal(session.views[0], '$(sync~spin) referee: checking');
    assert.ok(session.views.includes('$(sync~spin) referee: checking 1/2 files'), session.views.join(' | '));
  });

  it('tells an unknown command from a failing one', async () => {
    const commands = session.result.capabilities.executeCommandProvider?.commands;
    assert.equal(announces(commands, SERVER_COMMANDS.checkWorkspace), true);
    assert.equal(announces(commands, 'referee.noSuchCommand'), false);
    await assert.rejects(
      session.connection.sendRequest(ExecuteCommandRequest.type, { command: 'referee.noSuchCommand', arguments: [] }),
      (error) => isUnknownCommandError(error, 'referee.noSuchCommand'),
    );
  });
});
