// The server's commands this extension calls (workspace/executeCommand), what their answers
// look like, and how to tell that a server does not have one. No `vscode` import.

export const SERVER_COMMANDS = {
  checkWorkspace: 'referee.checkWorkspace',
  reviewList: 'referee.review.list',
  reviewAccept: 'referee.review.accept',
  reviewReject: 'referee.review.reject',
  arbitrate: 'referee.arbitrate',
} as const;

/** What a user reads for each command when the server lacks it. */
const FEATURES: Record<string, string> = {
  [SERVER_COMMANDS.checkWorkspace]: 'checking the workspace',
  [SERVER_COMMANDS.reviewList]: 'the review queue',
  [SERVER_COMMANDS.reviewAccept]: 'accepting review items',
  [SERVER_COMMANDS.reviewReject]: 'rejecting review items',
  [SERVER_COMMANDS.arbitrate]: 'arbitrating failing tests',
};

/** Thrown (and shown as is) when the running server does not have a command. */
export class UnsupportedCommand extends Error {
  constructor(
    readonly command: string,
    version: string | undefined,
  ) {
    const which = version ? `referee ${version}` : 'This referee version';
    super(`${which} does not support ${FEATURES[command] ?? command} (${command}). Update referee to use it.`);
    this.name = 'UnsupportedCommand';
  }
}

/** Whether the server announced the command (executeCommandProvider.commands). */
export function announces(commands: readonly string[] | undefined, command: string): boolean {
  return commands !== undefined && commands.includes(command);
}

/** Whether an executeCommand error means "no such command" rather than a failure of it:
 * method not found, or pygls's "Command name '…' is not defined". */
export function isUnknownCommandError(error: unknown, command: string): boolean {
  if (error === null || typeof error !== 'object') {
    return false;
  }
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (code === -32601) {
    return true;
  }
  if (typeof message !== 'string' || !message.includes(command)) {
    return false;
  }
  return /not (defined|found|supported)|unknown command/i.test(message);
}

export interface ReviewItem {
  id: string;
  /** Relative to the project's root, as the queue stores it. */
  path: string;
  /** The file, when the server names it (the queue's root need not be the workspace folder). */
  uri?: string;
  /** 1-based, as the server's findings count lines. */
  line?: number;
  /** Where the item came from: judge, audit or arbitration. */
  kind?: string;
  title: string;
  reasons: string[];
}

/** The items of `referee.review.list`'s answer (a list, or `{items: [...]}`); an answer of
 * another shape is an error that names what was wrong, never an empty queue. */
export function parseReviewItems(answer: unknown): ReviewItem[] {
  const list =
    answer !== null && typeof answer === 'object' && !Array.isArray(answer)
      ? (answer as { items?: unknown }).items
      : answer;
  if (!Array.isArray(list)) {
    throw new Error(`referee.review.list answered ${JSON.stringify(answer)}, not a list of review items`);
  }
  return list.map((raw, index) => {
    const item = (raw ?? {}) as Record<string, unknown>;
    const id = typeof item.id === 'string' || typeof item.id === 'number' ? String(item.id) : undefined;
    if (id === undefined || typeof item.path !== 'string') {
      throw new Error(`referee.review.list item ${index} has no id or path: ${JSON.stringify(raw)}`);
    }
    return {
      id,
      path: item.path,
      uri: typeof item.uri === 'string' ? item.uri : undefined,
      line: typeof item.line === 'number' ? item.line : undefined,
      kind: typeof item.kind === 'string' ? item.kind : undefined,
      title: typeof item.title === 'string' ? item.title : '(untitled)',
      reasons: Array.isArray(item.reasons) ? item.reasons.map(String) : [],
    };
  });
}

/** A quick pick row for an item: title, where, and why it waits. */
export function reviewPickRow(item: ReviewItem): { label: string; description: string; detail: string } {
  return {
    label: item.title,
    description: item.line !== undefined ? `${item.path}:${item.line}` : item.path,
    detail: [item.kind, ...item.reasons].filter(Boolean).join(' · '),
  };
}

/** What a command's `{ok, message}` answer tells the user; `done` when it succeeded silently. */
export function outcome(answer: unknown, done: string): { ok: boolean; text: string } {
  if (typeof answer === 'string') {
    return { ok: true, text: answer };
  }
  const raw = (answer ?? {}) as { ok?: unknown; message?: unknown };
  const message = typeof raw.message === 'string' ? raw.message : undefined;
  if (raw.ok === false) {
    return { ok: false, text: message ?? 'the server gave no reason' };
  }
  return { ok: true, text: message ?? done };
}

export type ArbitrationAnswer =
  | { kind: 'edit'; edit: unknown; title: string }
  | { kind: 'message'; text: string; ok: boolean }
  | { kind: 'none' };

function isWorkspaceEdit(value: unknown): boolean {
  return value !== null && typeof value === 'object' && ('changes' in value || 'documentChanges' in value);
}

/** What `referee.arbitrate` answered. referee shows its verdict itself and offers its fix
 * (window/showMessageRequest, then workspace/applyEdit), answering
 * `{ok, verdict, applied, message?, certificate?}`: what is left to say is a failure, a
 * message, or that the fix was applied. An answer that carries an edit (a WorkspaceEdit,
 * bare or as `{edit, title}`) is offered here instead. */
export function parseArbitration(answer: unknown): ArbitrationAnswer {
  if (typeof answer === 'string') {
    return { kind: 'message', text: answer, ok: true };
  }
  if (isWorkspaceEdit(answer)) {
    return { kind: 'edit', edit: answer, title: 'referee proposes an edit.' };
  }
  if (answer === null || typeof answer !== 'object') {
    return { kind: 'message', text: `referee answered without a verdict: ${JSON.stringify(answer)}`, ok: false };
  }
  const raw = answer as Record<string, unknown>;
  const text = [raw.message, raw.title].find((value): value is string => typeof value === 'string');
  if (isWorkspaceEdit(raw.edit)) {
    return { kind: 'edit', edit: raw.edit, title: text ?? 'referee proposes an edit.' };
  }
  if (raw.ok === false) {
    return { kind: 'message', text: text ?? 'arbitration failed', ok: false };
  }
  if (text !== undefined) {
    return { kind: 'message', text, ok: true };
  }
  if (raw.applied === true) {
    const certificate = typeof raw.certificate === 'string' ? ` (certificate ${raw.certificate})` : '';
    return { kind: 'message', text: `the fix was applied${certificate}.`, ok: true };
  }
  if (raw.ok === true) {
    return { kind: 'none' }; // the server has shown its verdict
  }
  return { kind: 'message', text: `referee answered without a verdict: ${JSON.stringify(answer)}`, ok: false };
}
