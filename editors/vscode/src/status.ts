// What the status bar item says, from the server's state, its work-done progress and its
// `referee/status` notification. No `vscode` import: extension.ts renders `view()`.

export type ServerState = 'starting' | 'running' | 'stopped' | 'failed';
export type Activity = 'idle' | 'running';

/** `referee/status`'s params; every field optional, so a server that sends only some of
 * them (or none: an older server) still gets a sensible status bar. */
export interface RefereeStatus {
  reviewPending?: number;
  judge?: Activity;
  arbitration?: Activity;
  /** Whether the model process answers; 'crashed' until it does again. */
  model?: 'ok' | 'crashed';
  modelMessage?: string;
}

/** The fields of `$/progress`'s WorkDoneProgressBegin / Report / End this needs. */
export interface ProgressValue {
  kind: 'begin' | 'report' | 'end';
  title?: string;
  message?: string;
  percentage?: number;
}

export interface StatusView {
  text: string;
  tooltip: string;
  /** The command a click runs. */
  command: string;
}

interface Running {
  title: string;
  message?: string;
  percentage?: number;
}

export const SPINNER = '$(sync~spin)';

/** The valid fields of a `referee/status` notification; anything else is dropped. */
export function parseStatus(params: unknown): RefereeStatus {
  const status: RefereeStatus = {};
  if (params === null || typeof params !== 'object') {
    return status;
  }
  const raw = params as Record<string, unknown>;
  if (typeof raw.reviewPending === 'number' && Number.isInteger(raw.reviewPending) && raw.reviewPending >= 0) {
    status.reviewPending = raw.reviewPending;
  }
  for (const key of ['judge', 'arbitration'] as const) {
    if (raw[key] === 'idle' || raw[key] === 'running') {
      status[key] = raw[key] as Activity;
    }
  }
  if (raw.model === 'ok' || raw.model === 'crashed') {
    status.model = raw.model;
    status.modelMessage = raw.model === 'crashed' && typeof raw.modelMessage === 'string' ? raw.modelMessage : undefined;
  }
  return status;
}

export class StatusModel {
  private state: ServerState = 'starting';
  private detail = '';
  private readonly progress = new Map<string, Running>();
  private status: RefereeStatus = {};

  /** `detail`: the version when running, the reason when failed. */
  setServerState(state: ServerState, detail = ''): void {
    this.state = state;
    this.detail = detail;
    if (state !== 'running') {
      this.progress.clear();
      this.status = {};
    }
  }

  onProgress(token: string | number, value: ProgressValue): void {
    const key = String(token);
    if (value.kind === 'begin') {
      this.progress.set(key, { title: value.title ?? 'working', message: value.message, percentage: value.percentage });
    } else if (value.kind === 'report') {
      const running = this.progress.get(key);
      if (running !== undefined) {
        running.message = value.message ?? running.message;
        running.percentage = value.percentage ?? running.percentage;
      }
    } else {
      this.progress.delete(key);
    }
  }

  onStatus(params: unknown): void {
    this.status = { ...this.status, ...parseStatus(params) };
  }

  view(): StatusView {
    if (this.state === 'failed') {
      return { text: '$(error) referee', tooltip: `referee is not running: ${this.detail}\nClick for the log.`, command: 'referee.showOutput' };
    }
    if (this.state === 'stopped') {
      return { text: '$(circle-slash) referee', tooltip: 'referee is stopped. Click for the log.', command: 'referee.showOutput' };
    }
    if (this.state === 'starting') {
      return { text: `${SPINNER} referee`, tooltip: 'referee is starting', command: 'referee.showOutput' };
    }
    const lines: string[] = [`referee ${this.detail}`.trim()];
    let text = 'referee';
    const busy = [...this.progress.values()].pop(); // the latest to begin
    if (busy !== undefined) {
      const title = busy.title.replace(/^referee:\s*/, '');
      const message = busy.message ? ` ${busy.message}` : '';
      text = `${SPINNER} referee: ${title}${message}`;
      for (const running of this.progress.values()) {
        lines.push(`${running.title}${running.message ? `: ${running.message}` : ''}`);
      }
    } else if (this.status.arbitration === 'running') {
      text = `${SPINNER} referee: arbitrating`;
    } else if (this.status.judge === 'running') {
      text = `${SPINNER} referee: judging`;
    } else {
      text = '$(check) referee';
    }
    if (this.status.model === 'crashed') {
      text += ' $(warning)';
      lines.push(
        `${this.status.modelMessage ?? 'The model process crashed'}. L0/L1 go on; the next save starts it again.`,
      );
    }
    if (this.status.judge === 'running') {
      lines.push('The judge is running.');
    }
    if (this.status.arbitration === 'running') {
      lines.push('Arbitration is running.');
    }
    const pending = this.status.reviewPending;
    if (pending !== undefined && pending > 0) {
      text += ` $(inbox) ${pending}`;
      lines.push(`${pending} ${pending === 1 ? 'item waits' : 'items wait'} for your review. Click to open the review queue.`);
    } else if (pending === 0) {
      lines.push('Nothing waits for review.');
    }
    return { text, tooltip: lines.join('\n'), command: 'referee.openReviewQueue' };
  }
}
