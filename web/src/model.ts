// The session model: a session's events (docs/events.md) folded into what
// the page draws — the transcript, open asks, staged hunks, usage, goal.
// Folding is incremental and in place (a session may hold tens of
// thousands of events); `version` grows with every change so views know to
// draw again. Unknown event types are kept out of the way, as the
// contract asks.

import type { CorralEvent, Edit, State, Usage } from './api';

export interface Answer { decision: string; note?: string; by: string }

export type Item =
  | { kind: 'user'; seq: number; id: string; text: string; msgKind: string; queued: boolean; started: boolean }
  | { kind: 'assistant'; seq: number; text: string; done: boolean }
  | {
      kind: 'tool'; seq: number; toolId: string; tool: string; toolKind: string; summary: string;
      command?: string; path?: string; url?: string;
      outcome?: string; exitCode?: number; output?: string; message?: string; durationMs?: number;
    }
  | {
      kind: 'ask'; seq: number; askId: string; tool: string; category: string; reason: string;
      command?: string; path?: string; url?: string; parts?: AskPart[]; answer?: Answer;
    }
  | {
      kind: 'edit'; seq: number; editId: string; path: string; auto: boolean; edit: Edit;
      decisions: Record<string, Answer>; applied: Applied[]; turnOpen: boolean;
    }
  | { kind: 'steer'; seq: number; text: string; how: 'delivered' | 'native' | 'requeued' }
  | { kind: 'turnEnd'; seq: number; turn: number; outcome: string; summary?: string; durationMs: number; costUsd: number }
  | { kind: 'stopped'; seq: number; reason: string; interruptedTurn: boolean; deniedAsks: number; rejectedHunks: number; clearedQueue: number }
  | { kind: 'failure'; seq: number; code: string; message: string; action?: string; stderr?: string[] }
  | { kind: 'goal'; seq: number; summary: string; clauses: GoalClause[]; by: string; limitReached?: boolean }
  | { kind: 'notice'; seq: number; text: string };

export interface AskPart { command?: string; decision?: string; category?: string; reason?: string }
export interface GoalClause { clause: string; met: boolean; evidence: string }
export interface Applied { by: string; hunks: string[]; reverted?: boolean; conflict?: string; added: number; removed: number }

const zeroUsage = (): Usage => ({
  inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, estimated: false,
});

export class SessionModel {
  version = 0;
  lastSeq = 0;
  items: Item[] = [];
  engine = '';
  model = '';
  cwd = '';
  mode = '';
  spendCapUsd = 0;
  usage: Usage = zeroUsage();
  context?: { usedTokens: number; windowTokens: number; percent: number };
  goal?: { text: string; clauses: GoalClause[]; summary?: string; done: boolean };
  turn = 0;
  turnRunning = false;
  failed = false;
  stopped = false;
  lastActivity = '';
  /** Queued messages not started yet, by id. */
  queue = new Map<string, string>();
  private openAsks = new Map<string, Item & { kind: 'ask' }>();
  private edits = new Map<string, Item & { kind: 'edit' }>();
  private tools = new Map<string, Item & { kind: 'tool' }>();
  private users = new Map<string, Item & { kind: 'user' }>();
  private speaking?: Item & { kind: 'assistant' };

  /** apply folds events in; they come in seq order. */
  apply(events: CorralEvent[]): void {
    for (const ev of events) this.one(ev);
    this.version++;
  }

  get state(): State {
    if (this.openAsks.size > 0) return 'waitingForApproval';
    if (this.pendingHunks() > 0) return 'waitingForReview';
    if (this.turnRunning) return 'working';
    if (this.failed) return 'failed';
    if (this.stopped) return 'stopped';
    return 'idle';
  }

  asks(): (Item & { kind: 'ask' })[] {
    return [...this.openAsks.values()];
  }

  /** pendingHunks counts review-mode hunks nobody has decided yet. */
  pendingHunks(): number {
    let n = 0;
    for (const e of this.edits.values()) {
      if (e.auto) continue;
      for (const h of e.edit.hunks) if (!e.decisions[h.id]) n++;
    }
    return n;
  }

  private push(item: Item): void {
    this.items.push(item);
  }

  private one(ev: CorralEvent): void {
    if (ev.seq <= this.lastSeq) return;
    this.lastSeq = ev.seq;
    this.lastActivity = ev.ts;
    const d: any = ev.data ?? {};
    switch (ev.type) {
      case 'sessionStarted':
      case 'sessionResumed':
        this.engine = d.engine ?? this.engine;
        this.model = d.model ?? this.model;
        this.cwd = d.cwd ?? this.cwd;
        this.mode = d.mode ?? this.mode;
        if (ev.type === 'sessionResumed') this.push({ kind: 'notice', seq: ev.seq, text: 'Session resumed' });
        break;
      case 'userMessage': {
        const it = { kind: 'user' as const, seq: ev.seq, id: d.id, text: d.text, msgKind: d.kind, queued: !!d.queued, started: false };
        this.users.set(d.id, it);
        if (d.queued) this.queue.set(d.id, d.text);
        this.push(it);
        break;
      }
      case 'turnStarted': {
        this.turn = d.turn;
        this.turnRunning = true;
        this.failed = false;
        this.stopped = false;
        this.queue.delete(d.messageId);
        const u = this.users.get(d.messageId);
        if (u) { u.started = true; u.queued = false; }
        break;
      }
      case 'assistantDelta':
        if (!this.speaking || this.speaking.done) {
          this.speaking = { kind: 'assistant', seq: ev.seq, text: '', done: false };
          this.push(this.speaking);
        }
        this.speaking.text += d.text;
        break;
      case 'assistantText':
        if (this.speaking && !this.speaking.done) {
          this.speaking.text = d.text;
          this.speaking.done = true;
        } else {
          this.push({ kind: 'assistant', seq: ev.seq, text: d.text, done: true });
        }
        this.speaking = undefined;
        break;
      case 'toolStarted': {
        this.endSpeech();
        const it = {
          kind: 'tool' as const, seq: ev.seq, toolId: d.toolId, tool: d.tool, toolKind: d.kind, summary: d.summary,
          command: d.command, path: d.path, url: d.url,
        };
        this.tools.set(d.toolId, it);
        this.push(it);
        break;
      }
      case 'toolFinished': {
        const it = this.tools.get(d.toolId);
        if (it) {
          Object.assign(it, { outcome: d.outcome, exitCode: d.exitCode, output: d.output, message: d.message, durationMs: d.durationMs });
          this.tools.delete(d.toolId);
        }
        break;
      }
      case 'askOpened': {
        this.endSpeech();
        const it = {
          kind: 'ask' as const, seq: ev.seq, askId: d.askId, tool: d.tool, category: d.category, reason: d.reason,
          command: d.command, path: d.path, url: d.url, parts: d.parts,
        };
        this.openAsks.set(d.askId, it);
        this.push(it);
        break;
      }
      case 'askAnswered': {
        const it = this.openAsks.get(d.askId);
        if (it) {
          it.answer = { decision: d.decision, note: d.note, by: d.by };
          this.openAsks.delete(d.askId);
        }
        break;
      }
      case 'steerDelivered':
        this.push({ kind: 'steer', seq: ev.seq, text: d.text, how: d.native ? 'native' : 'delivered' });
        break;
      case 'steerRequeued':
        this.push({ kind: 'steer', seq: ev.seq, text: d.text, how: 'requeued' });
        break;
      case 'hunkStaged': {
        this.endSpeech();
        const it = {
          kind: 'edit' as const, seq: ev.seq, editId: d.editId, path: d.path, auto: !!d.auto, edit: d.edit as Edit,
          decisions: {}, applied: [], turnOpen: true,
        };
        this.edits.set(d.editId, it);
        this.push(it);
        break;
      }
      case 'hunkDecided': {
        const it = this.edits.get(d.editId);
        if (it) it.decisions = { ...it.decisions, [d.hunkId]: { decision: d.decision, note: d.note, by: d.by } };
        break;
      }
      case 'editApplied': {
        const it = this.edits.get(d.editId);
        if (it) {
          it.applied = [...it.applied, { by: d.by, hunks: d.hunks ?? [], reverted: d.reverted, conflict: d.conflict, added: d.added, removed: d.removed }];
        }
        break;
      }
      case 'turnEnded':
        this.endSpeech();
        this.turnRunning = false;
        for (const e of this.edits.values()) e.turnOpen = false;
        // Decided edits leave the pending set; a review-mode edit still
        // undecided stays (a crash closes it with "expired").
        for (const [id, e] of this.edits) {
          if (e.auto || e.edit.hunks.every((h) => e.decisions[h.id])) this.edits.delete(id);
        }
        this.push({
          kind: 'turnEnd', seq: ev.seq, turn: d.turn, outcome: d.outcome, summary: d.summary,
          durationMs: d.durationMs, costUsd: d.usage?.costUsd ?? 0,
        });
        if (d.outcome === 'failed') this.failed = true;
        break;
      case 'stopped':
        this.stopped = true;
        this.queue.clear();
        this.push({
          kind: 'stopped', seq: ev.seq, reason: d.reason, interruptedTurn: !!d.interruptedTurn,
          deniedAsks: d.deniedAsks ?? 0, rejectedHunks: d.rejectedHunks ?? 0, clearedQueue: d.clearedQueue ?? 0,
        });
        break;
      case 'failure':
        this.failed = true;
        this.push({ kind: 'failure', seq: ev.seq, code: d.code, message: d.message, action: d.action, stderr: d.stderr });
        break;
      case 'usage':
        this.usage = {
          inputTokens: this.usage.inputTokens + (d.inputTokens ?? 0),
          outputTokens: this.usage.outputTokens + (d.outputTokens ?? 0),
          cacheReadTokens: this.usage.cacheReadTokens + (d.cacheReadTokens ?? 0),
          cacheWriteTokens: this.usage.cacheWriteTokens + (d.cacheWriteTokens ?? 0),
          costUsd: this.usage.costUsd + (d.costUsd ?? 0),
          estimated: this.usage.estimated || !!d.estimated,
          model: d.model ?? this.usage.model,
        };
        if (d.model) this.model = d.model;
        break;
      case 'context':
        this.context = { usedTokens: d.usedTokens, windowTokens: d.windowTokens, percent: d.percent };
        break;
      case 'modeChanged':
        this.mode = d.mode;
        this.push({ kind: 'notice', seq: ev.seq, text: `Mode set to ${d.mode}` });
        break;
      case 'spendCapSet':
        this.spendCapUsd = d.spendCapUsd;
        this.push({ kind: 'notice', seq: ev.seq, text: d.spendCapUsd ? `Spend cap set to $${d.spendCapUsd}` : 'Spend cap removed' });
        break;
      case 'goalSet':
        this.goal = { text: d.goal, clauses: (d.clauses ?? []).map((c: string) => ({ clause: c, met: false, evidence: '' })), done: false };
        this.push({ kind: 'notice', seq: ev.seq, text: `Goal set: ${d.goal}` });
        break;
      case 'goalCleared':
        this.goal = undefined;
        this.push({ kind: 'notice', seq: ev.seq, text: 'Goal cleared' });
        break;
      case 'goalCheck':
        this.goal = { text: d.goal, clauses: d.clauses ?? [], summary: d.summary, done: !!d.holds || d.by === 'user' };
        this.push({ kind: 'goal', seq: ev.seq, summary: d.summary, clauses: d.clauses ?? [], by: d.by, limitReached: d.limitReached });
        break;
      case 'retry':
        this.push({ kind: 'notice', seq: ev.seq, text: `Retrying the model call (attempt ${d.attempt}): ${d.error}` });
        break;
      case 'rotated':
        this.push({ kind: 'notice', seq: ev.seq, text: `Continues as session ${d.to} (${d.reason})` });
        break;
      case 'compacted':
        this.push({ kind: 'notice', seq: ev.seq, text: 'Context compacted' });
        break;
      case 'queueChanged':
        if (Array.isArray(d.queued)) {
          this.queue = new Map(d.queued.map((q: { id: string; text: string }) => [q.id, q.text]));
        }
        break;
      default:
        // A type this console does not know: ignored, as docs/events.md asks.
        break;
    }
  }

  private endSpeech(): void {
    if (this.speaking) this.speaking.done = true;
    this.speaking = undefined;
  }

  /** forget drops a queued message the user cancelled (until queueChanged exists). */
  forget(messageId: string): void {
    this.queue.delete(messageId);
    const u = this.users.get(messageId);
    if (u) u.queued = false;
    this.version++;
  }
}

export const stateLabel: Record<State, string> = {
  starting: 'starting',
  idle: 'idle',
  working: 'working',
  waitingForApproval: 'waiting for you',
  waitingForReview: 'waiting for review',
  failed: 'failed',
  stopped: 'stopped',
};

export function waitsForHuman(s: State | undefined): boolean {
  return s === 'waitingForApproval' || s === 'waitingForReview';
}
