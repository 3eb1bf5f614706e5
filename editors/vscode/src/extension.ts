// The VS Code side of referee: starts `referee serve` (LSP over stdio) with the right
// interpreter, passes the `referee.*` settings on, and adds the commands and the status
// bar item. The decisions live in the modules without `vscode` (interpreter, settings,
// status, serverCommands); this file wires them to VS Code.

import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ResponseError,
  RevealOutputChannelOn,
  State,
  WorkspaceEdit as LspWorkspaceEdit,
} from 'vscode-languageclient/node';

import {
  Candidates,
  checkVersion,
  needsPythonExtension,
  PathContext,
  resolveServerCommand,
  ServerCommand,
} from './interpreter';
import {
  announces,
  isUnknownCommandError,
  outcome,
  parseArbitration,
  parseReviewItems,
  ReviewItem,
  reviewPickRow,
  SERVER_COMMANDS,
  UnsupportedCommand,
} from './serverCommands';
import { needsRestart, toServerSettings } from './settings';
import { ProgressValue, StatusModel } from './status';

const SECTION = 'referee';

/** The part of the Python extension's API (ms-python.python) used here; the extension is
 * optional, so this is declared rather than depended on. */
interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string } | undefined;
    resolveEnvironment(
      environment: { id: string; path: string } | string,
    ): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
}

function firstFolder(): vscode.WorkspaceFolder | undefined {
  return vscode.workspace.workspaceFolders?.[0];
}

function pathContext(folder: vscode.WorkspaceFolder | undefined = firstFolder()): PathContext {
  return { workspaceFolder: folder?.uri.scheme === 'file' ? folder.uri.fsPath : undefined };
}

function settingsFor(scope: vscode.Uri | undefined): unknown {
  return vscode.workspace.getConfiguration(undefined, scope).get(SECTION);
}

function notify(ok: boolean, message: string): void {
  void (ok ? vscode.window.showInformationMessage(message) : vscode.window.showWarningMessage(message));
}

class Controller implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> = Promise.resolve();
  private failure: string | undefined;
  private serverVersion: string | undefined;
  private readonly model = new StatusModel();
  private readonly disposables: vscode.Disposable[] = [];
  private pythonWatch: vscode.Disposable | undefined;

  constructor(
    private readonly output: vscode.OutputChannel,
    private readonly item: vscode.StatusBarItem,
  ) {
    this.render();
    item.show();
  }

  // ---------------------------------------------------------------- lifecycle

  /** Stop the server (if any) and start a new one; calls are queued, never overlapped. */
  restart(): Promise<void> {
    this.starting = this.starting.then(() => this.stopAndStart()).catch((error) => this.fail(String(error)));
    return this.starting;
  }

  private async stopAndStart(): Promise<void> {
    await this.stop();
    this.failure = undefined;
    this.model.setServerState('starting');
    this.render();
    const server = await this.serverCommand();
    const folder = firstFolder();
    const cwd = folder?.uri.scheme === 'file' ? folder.uri.fsPath : undefined;
    this.output.appendLine(`Starting referee: ${server.command} ${server.args.join(' ')} (from ${server.source})`);
    const ready = await checkVersion(server, cwd);
    if (!ready.ok) {
      this.fail(ready.message);
      void this.offerFix(ready.message, ready.install);
      return;
    }
    this.serverVersion = ready.version;
    const client = new LanguageClient(
      SECTION,
      'referee',
      { command: server.command, args: server.args, options: { cwd } },
      this.clientOptions(),
    );
    client.onDidChangeState((event) => {
      if (event.newState === State.Running) {
        this.model.setServerState('running', this.serverVersion);
      } else if (event.newState === State.Stopped && this.failure === undefined) {
        this.model.setServerState('stopped');
      }
      this.render();
    });
    client.onNotification('referee/status', (params: unknown) => {
      this.model.onStatus(params);
      this.render();
    });
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      this.fail(`the language server did not start: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) {
      try {
        await client.dispose(5000);
      } catch (error) {
        this.output.appendLine(`Stopping referee: ${String(error)}`);
      }
    }
  }

  private fail(message: string): void {
    this.failure = message;
    this.output.appendLine(message);
    this.model.setServerState('failed', message);
    this.render();
  }

  private async offerFix(message: string, install: string | undefined): Promise<void> {
    const buttons = install ? ['Copy Install Command', 'Open Settings'] : ['Open Settings', 'Show Output'];
    const choice = await vscode.window.showErrorMessage(message, ...buttons);
    if (choice === 'Copy Install Command' && install) {
      await vscode.env.clipboard.writeText(install);
    } else if (choice === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', '@ext:referee-dev.referee');
    } else if (choice === 'Show Output') {
      this.output.show();
    }
  }

  private async serverCommand(): Promise<ServerCommand> {
    const config = vscode.workspace.getConfiguration(SECTION);
    const candidates: Candidates = {
      path: config.get<string>('path'),
      interpreter: config.get<string>('interpreter'),
    };
    if (needsPythonExtension(candidates)) {
      candidates.pythonExtension = await this.pythonFromExtension();
    }
    return resolveServerCommand(candidates, pathContext());
  }

  /** The interpreter of the Python extension's active environment, if it is installed. */
  private async pythonFromExtension(): Promise<string | undefined> {
    const extension = vscode.extensions.getExtension<PythonApi>('ms-python.python');
    if (extension === undefined) {
      return undefined;
    }
    try {
      const api = extension.isActive ? extension.exports : await extension.activate();
      const environments = api?.environments;
      if (environments === undefined) {
        return undefined;
      }
      if (this.pythonWatch === undefined && environments.onDidChangeActiveEnvironmentPath) {
        this.pythonWatch = environments.onDidChangeActiveEnvironmentPath(() => {
          const config = vscode.workspace.getConfiguration(SECTION);
          if (needsPythonExtension({ path: config.get('path'), interpreter: config.get('interpreter') })) {
            this.output.appendLine("The Python extension's environment changed: restarting referee.");
            void this.restart();
          }
        });
        this.disposables.push(this.pythonWatch);
      }
      const active = environments.getActiveEnvironmentPath(firstFolder()?.uri);
      if (active === undefined) {
        return undefined;
      }
      const resolved = await environments.resolveEnvironment(active);
      return resolved?.executable.uri?.fsPath ?? active.path;
    } catch (error) {
      this.output.appendLine(`The Python extension did not name an interpreter: ${String(error)}`);
      return undefined;
    }
  }

  private clientOptions(): LanguageClientOptions {
    return {
      documentSelector: [
        { scheme: 'file', language: 'python' },
        { scheme: 'file', language: 'markdown' },
        { scheme: 'file', language: 'plaintext' },
      ],
      outputChannel: this.output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: toServerSettings(settingsFor(firstFolder()?.uri), pathContext()),
      synchronize: { configurationSection: SECTION },
      middleware: {
        workspace: {
          // The server pulls the `referee` section per workspace folder: send it the
          // server's keys only, with paths expanded for that folder.
          configuration: async (params, token, next) => {
            const answers = await next(params, token);
            if (answers instanceof ResponseError) {
              return answers;
            }
            return params.items.map((item, index) => {
              if (item.section !== SECTION) {
                return answers[index];
              }
              const scope = item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined;
              const folder = scope ? vscode.workspace.getWorkspaceFolder(scope) : undefined;
              return toServerSettings(answers[index], pathContext(folder ?? firstFolder()));
            });
          },
          // Only changes to `referee.*` (the section registered above) are sent; the
          // server then pulls each folder's settings again. The server's own
          // registration has no section and would fire for every setting of VS Code.
          didChangeConfiguration: async (sections, next) => {
            if (sections === undefined || this.client === undefined) {
              return;
            }
            if (!sections.includes(SECTION)) {
              return next(sections);
            }
            const settings = toServerSettings(settingsFor(firstFolder()?.uri), pathContext());
            await this.client.sendNotification(DidChangeConfigurationNotification.type, {
              settings: { [SECTION]: settings },
            });
          },
        },
        handleWorkDoneProgress: (token, params, next) => {
          this.model.onProgress(token, params as ProgressValue);
          this.render();
          next(token, params);
        },
      },
    };
  }

  onConfigurationChanged(event: vscode.ConfigurationChangeEvent): void {
    if (needsRestart((section) => event.affectsConfiguration(section))) {
      this.output.appendLine('referee.path or referee.interpreter changed: restarting referee.');
      void this.restart();
    }
  }

  private render(): void {
    const view = this.model.view();
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.command = view.command;
  }

  // ---------------------------------------------------------------- server commands

  /** The running client; an error that says why when there is none. */
  private async running(): Promise<LanguageClient> {
    await this.starting;
    if (this.client === undefined || !this.client.isRunning()) {
      throw new Error(`referee is not running${this.failure ? `: ${this.failure}` : ''}`);
    }
    return this.client;
  }

  /** Run a server command; UnsupportedCommand when this server has no such command. */
  async execute(command: string, args: unknown[] = []): Promise<unknown> {
    const client = await this.running();
    const version = client.initializeResult?.serverInfo?.version ?? this.serverVersion;
    const commands = client.initializeResult?.capabilities.executeCommandProvider?.commands;
    if (!announces(commands, command)) {
      throw new UnsupportedCommand(command, version);
    }
    try {
      return await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
    } catch (error) {
      if (isUnknownCommandError(error, command)) {
        throw new UnsupportedCommand(command, version);
      }
      throw error;
    }
  }

  async checkWorkspace(): Promise<void> {
    const answer = (await this.execute(SERVER_COMMANDS.checkWorkspace)) as { files?: number; findings?: number };
    void vscode.window.showInformationMessage(
      `referee checked ${answer?.files ?? 0} files: ${answer?.findings ?? 0} findings.`,
    );
  }

  async openReviewQueue(): Promise<void> {
    const items = parseReviewItems(await this.execute(SERVER_COMMANDS.reviewList));
    if (items.length === 0) {
      void vscode.window.showInformationMessage('referee: nothing waits for review.');
      return;
    }
    const picked = await vscode.window.showQuickPick(
      items.map((item) => ({ ...reviewPickRow(item), item })),
      { title: 'referee: review queue', placeHolder: 'Pick an item to review', matchOnDescription: true, matchOnDetail: true },
    );
    if (picked === undefined) {
      return;
    }
    await this.reveal(picked.item);
    const verdict = await vscode.window.showQuickPick(
      [
        { label: '$(check) Accept', command: SERVER_COMMANDS.reviewAccept },
        { label: '$(close) Reject', command: SERVER_COMMANDS.reviewReject },
      ],
      { title: picked.item.title, placeHolder: picked.item.reasons.join(' · ') || 'Accept or reject' },
    );
    if (verdict === undefined) {
      return;
    }
    const accept = verdict.command === SERVER_COMMANDS.reviewAccept;
    const result = outcome(await this.execute(verdict.command, [picked.item.id]), accept ? 'accepted.' : 'rejected.');
    notify(result.ok, `referee: ${result.text}`);
  }

  private async reveal(item: ReviewItem): Promise<void> {
    const folder = firstFolder();
    const uri = item.uri
      ? vscode.Uri.parse(item.uri)
      : item.path.startsWith('/') || /^[A-Za-z]:[\\/]/.test(item.path) || folder === undefined
        ? vscode.Uri.file(item.path)
        : vscode.Uri.joinPath(folder.uri, item.path);
    try {
      const line = Math.max((item.line ?? 1) - 1, 0);
      await vscode.window.showTextDocument(uri, {
        preview: true,
        preserveFocus: true,
        selection: new vscode.Range(line, 0, line, 0),
      });
    } catch (error) {
      this.output.appendLine(`Could not open ${uri.toString()}: ${String(error)}`);
    }
  }

  async arbitrateAtCursor(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined) {
      void vscode.window.showWarningMessage('referee: put the cursor in a failing test first.');
      return;
    }
    const target = { uri: editor.document.uri.toString(), line: editor.selection.active.line };
    const answer = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'referee: arbitrating' },
      () => this.execute(SERVER_COMMANDS.arbitrate, [target]),
    );
    const verdict = parseArbitration(answer);
    if (verdict.kind === 'none') {
      return;
    }
    if (verdict.kind === 'message') {
      notify(verdict.ok, `referee: ${verdict.text}`);
      return;
    }
    const choice = await vscode.window.showInformationMessage(`referee: ${verdict.title}`, 'Apply', 'Dismiss');
    if (choice === 'Apply') {
      const client = await this.running();
      const edit = await client.protocol2CodeConverter.asWorkspaceEdit(verdict.edit as LspWorkspaceEdit);
      if (!(await vscode.workspace.applyEdit(edit))) {
        void vscode.window.showErrorMessage('referee: the edit could not be applied (the file changed?).');
      }
    }
  }

  dispose(): void {
    for (const disposable of this.disposables) {
      disposable.dispose();
    }
  }
}

let controller: Controller | undefined;

/** A command that reports its failure instead of throwing into VS Code's log. */
function guarded(output: vscode.OutputChannel, run: () => Promise<void>): () => Promise<void> {
  return async () => {
    try {
      await run();
    } catch (error) {
      if (error instanceof UnsupportedCommand) {
        void vscode.window.showWarningMessage(error.message);
        return;
      }
      const message = error instanceof Error ? error.message : String(error);
      output.appendLine(`referee: ${message}`);
      const choice = await vscode.window.showErrorMessage(`referee: ${message}`, 'Show Output');
      if (choice === 'Show Output') {
        output.show();
      }
    }
  };
}

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel('referee');
  const item = vscode.window.createStatusBarItem('referee.status', vscode.StatusBarAlignment.Left, 0);
  item.name = 'referee';
  const ctl = new Controller(output, item);
  controller = ctl;
  context.subscriptions.push(
    output,
    item,
    ctl,
    vscode.commands.registerCommand('referee.restart', guarded(output, () => ctl.restart())),
    vscode.commands.registerCommand('referee.showOutput', () => output.show()),
    vscode.commands.registerCommand('referee.runWorkspaceCheck', guarded(output, () => ctl.checkWorkspace())),
    vscode.commands.registerCommand('referee.openReviewQueue', guarded(output, () => ctl.openReviewQueue())),
    vscode.commands.registerCommand('referee.arbitrateAtCursor', guarded(output, () => ctl.arbitrateAtCursor())),
    vscode.workspace.onDidChangeConfiguration((event) => ctl.onConfigurationChanged(event)),
  );
  void ctl.restart(); // activation does not wait for the server
}

export async function deactivate(): Promise<void> {
  await controller?.stop();
  controller = undefined;
}
