// Which command starts `referee serve`, how to tell whether it can, and what to say when
// it cannot. No `vscode` import: the extension passes in what it read from the settings
// and the Python extension, and test/interpreter.test.ts checks the order.

import { execFile } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';

/** Where the command came from, in the order they are tried. */
export type Source = 'path' | 'interpreter' | 'pythonExtension' | 'default';

export interface ServerCommand {
  /** The executable: a referee executable (source `path`) or a Python interpreter. */
  command: string;
  /** Its arguments to start the language server. */
  args: string[];
  source: Source;
}

export interface Candidates {
  /** `referee.path`: a referee executable. */
  path?: string;
  /** `referee.interpreter`: a Python interpreter. */
  interpreter?: string;
  /** The Python extension's active environment's interpreter, if it has one. */
  pythonExtension?: string;
  platform?: NodeJS.Platform;
}

export interface PathContext {
  home?: string;
  /** The first workspace folder's path, for `${workspaceFolder}` and relative paths. */
  workspaceFolder?: string;
}

/** `~`, `${userHome}` and `${workspaceFolder}` expanded; a relative path containing a
 * separator is taken relative to the workspace folder. A bare name (`python3`) is left
 * for the PATH search. */
export function expandPath(value: string, context: PathContext = {}): string {
  const home = context.home ?? os.homedir();
  let result = value.trim();
  if (result === '~' || result.startsWith('~/') || result.startsWith('~\\')) {
    result = home + result.slice(1);
  }
  result = result.replace(/\$\{userHome\}/g, home);
  if (context.workspaceFolder !== undefined) {
    result = result.replace(/\$\{workspaceFolder\}/g, context.workspaceFolder);
    const hasSeparator = result.includes('/') || result.includes('\\');
    if (hasSeparator && !path.isAbsolute(result)) {
      result = path.join(context.workspaceFolder, result);
    }
  }
  return result;
}

function given(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== '';
}

/** The command that starts the server: `referee.path` wins, then `referee.interpreter`,
 * then the Python extension's environment, then `python3` (`python` on Windows). */
export function resolveServerCommand(candidates: Candidates, context: PathContext = {}): ServerCommand {
  if (given(candidates.path)) {
    return { command: expandPath(candidates.path, context), args: ['serve'], source: 'path' };
  }
  const module = ['-m', 'referee', 'serve'];
  if (given(candidates.interpreter)) {
    return { command: expandPath(candidates.interpreter, context), args: module, source: 'interpreter' };
  }
  if (given(candidates.pythonExtension)) {
    return { command: candidates.pythonExtension, args: module, source: 'pythonExtension' };
  }
  const python = (candidates.platform ?? process.platform) === 'win32' ? 'python' : 'python3';
  return { command: python, args: module, source: 'default' };
}

/** Whether the caller needs to ask the Python extension (only when nothing set wins over it). */
export function needsPythonExtension(candidates: Candidates): boolean {
  return !given(candidates.path) && !given(candidates.interpreter);
}

/** The command that checks, before the server starts, that referee is there. */
export function versionCommand(server: ServerCommand): { command: string; args: string[] } {
  const args = server.source === 'path' ? ['--version'] : ['-m', 'referee', '--version'];
  return { command: server.command, args };
}

/** The exact command that installs referee for this interpreter. */
export function installCommand(server: ServerCommand): string {
  return `${quote(server.command)} -m pip install referee`;
}

function quote(value: string): string {
  return /^[\w@%+=:,./\\-]+$/.test(value) ? value : `"${value.replace(/"/g, '\\"')}"`;
}

const SOURCE_NAMES: Record<Source, string> = {
  path: 'the referee.path setting',
  interpreter: 'the referee.interpreter setting',
  pythonExtension: "the Python extension's active environment",
  default: 'the default, on PATH',
};

/** What running the version command gave. */
export interface VersionOutcome {
  /** The spawn error's code (`ENOENT`, `EACCES`), when the process could not start. */
  errorCode?: string;
  exitCode?: number | null;
  stdout?: string;
  stderr?: string;
  timedOut?: boolean;
}

/** Run the version command (a real process) and report how it went; never rejects. */
export function runVersion(server: ServerCommand, cwd?: string, timeoutMs = 20_000): Promise<VersionOutcome> {
  const { command, args } = versionCommand(server);
  return new Promise((resolve) => {
    execFile(command, args, { cwd, timeout: timeoutMs }, (error, stdout, stderr) => {
      const failure = error as (Error & { code?: string | number; killed?: boolean }) | null;
      resolve({
        errorCode: typeof failure?.code === 'string' ? failure.code : undefined,
        exitCode: failure === null ? 0 : typeof failure.code === 'number' ? failure.code : null,
        timedOut: failure?.killed === true,
        stdout,
        stderr,
      });
    });
  });
}

/** Whether referee can start with this command: its version, or what to tell the user. */
export async function checkVersion(server: ServerCommand, cwd?: string): Promise<Readiness> {
  return readiness(server, await runVersion(server, cwd));
}

export type Readiness =
  | { ok: true; version: string }
  | { ok: false; message: string; install?: string };

/** Whether referee can start, from the version command's outcome; when not, a message that
 * says which executable was tried, where it came from, and what to do. */
export function readiness(server: ServerCommand, outcome: VersionOutcome): Readiness {
  const from = SOURCE_NAMES[server.source];
  const exe = server.command;
  const output = `${outcome.stdout ?? ''}\n${outcome.stderr ?? ''}`;
  if (outcome.errorCode === undefined && !outcome.timedOut && outcome.exitCode === 0) {
    const match = /version\s+(\S+)/i.exec(outcome.stdout ?? '');
    return { ok: true, version: match ? match[1] : (outcome.stdout ?? '').trim() };
  }
  if (server.source === 'path') {
    const why = outcome.errorCode === 'ENOENT' ? 'it does not exist' : describe(outcome);
    return {
      ok: false,
      message: `referee could not start: ${exe} (${from}) cannot be run: ${why}. Set referee.path to a referee executable, or clear it to use a Python interpreter.`,
    };
  }
  if (outcome.errorCode === 'ENOENT') {
    return {
      ok: false,
      message: `referee could not start: the Python interpreter ${exe} (${from}) was not found. Set referee.interpreter to a Python that has referee installed.`,
    };
  }
  if (/No module named '?referee'?/.test(output)) {
    const install = installCommand(server);
    return {
      ok: false,
      message: `referee is not installed for ${exe} (${from}). Install it with: ${install}`,
      install,
    };
  }
  return {
    ok: false,
    message: `referee could not start: \`${exe} -m referee --version\` (${from}) failed: ${describe(outcome)}.`,
  };
}

function describe(outcome: VersionOutcome): string {
  if (outcome.timedOut) {
    return 'it did not answer in time';
  }
  if (outcome.errorCode !== undefined) {
    return outcome.errorCode;
  }
  const lastLine = (outcome.stderr ?? '').trim().split('\n').pop() ?? '';
  return `exit status ${outcome.exitCode}${lastLine ? `: ${lastLine}` : ''}`;
}
