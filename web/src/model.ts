// The session model: a session's events (docs/events.md), typed by the
// contract's generated SessionEvent, folded into what the page draws — the
// transcript, open asks, staged hunks, the queue, usage, goal. Folding is
// incremental and in place (a session may hold tens of thousands of
// events); `version` grows with every change so views know to draw again.
// Unknown event types are kept out of the way, as the contract asks.

import type { Edit, GoalClause, Hunk, Line, Part, Queued, SessionEvent, State, UsageData } from '@corral/client';

export type { GoalClause };

/** A hunk as review draws it: its lines never null. */
export type ReviewHunk = Omit<Hunk, 'lines'> & { lines: Line[] };
/** An edit as review draws it: its hunks never null. */
export type ReviewEdit = Omit<Edit, 'hunks'> & { hunks: ReviewHunk[] };

export interface Answer { decision: string; note?: string; by: string }

export type Item =
  | { kind: 'user'; seq: number; id: string; text: string; msgKind: string }
  | { kind: 'assistant'; seq: number; text: string; done: boolean }
  | {
      kind: 'tool'; seq: number; toolId: string; tool: string; toolKind: string; summary: string;
      command?: string; path?: string; url?: string;
      outcome?: string; exitCode?: number; output?: string; message?: string; durationMs?: number;
    }
  | {
      kind: 'ask'; seq: number; askId: string; tool: string; category: string; reason: string;
      command?: string; path?: string; url?: string; parts?: Part[]; answer?: Answer;
    }
  | {
      kind: 'edit'; seq: number; editId: string; path: string; auto: boolean; edit: ReviewEdit;
      decisions: Record<string, Answer>; applied: Applied[]; revertible: boolean;
    }
  | { kind: 'steer'; seq: number; text: string; how: 'delivered' | 'native' | 'requeued' }
  | { kind: 'turnEnd'; seq: number; turn: number; outcome: string; summary?: string; durationMs: number; costUsd: number }
  | { kind: 'stopped'; seq: number; reason: string; interruptedTurn: boolean; deniedAsks: number; rejectedHunks: number; clearedQueue: number }
  | { kind: 'failure'; seq: number; code: string; message: string; action?: string; stderr?: string[] }
  | { kind: 'goal'; seq: number; summary: string; clauses: GoalClause[]; by: string; limitReached?: boolean }
  | { kind: 'notice'; seq: number; text: string; session?: string };

export interface Applied { by: string; hunks: string[]; reverted?: boolean; conflict?: string; added: number; removed: number }

const zeroUsage = (): UsageData => ({
  inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, estimated: false,
});

/** reviewable is an edit as review draws it: hunks and lines never null. */
export function reviewable(e: Edit | null): ReviewEdit {
  const edit = e ?? { path: '', kind: 'modify', binary: false, added: 0, removed: 0, oldSize: 0, newSize: 0, hunks: [] };
  return { ...edit, hunks: (edit.hunks ?? []).map((h) => ({ ...h, lines: h.lines ?? [] })) };
}

export class SessionModel {
  constructor(readonly id = '') {}

  version = 0;
  lastSeq = 0;
  items: Item[] = [];
  engine = '';
  model = '';
  cwd = '';
  mode = '';
  spendCapUsd = 0;
  usage: UsageData = zeroUsage();
  context?: { usedTokens: number; windowTokens: number; percent: number };
  goal?: { text: string; clauses: GoalClause[]; summary?: string; done: boolean };
  turn = 0;
  turnRunning = false;
  failed = false;
  stopped = false;
  lastActivity = '';
  /**
   * The messages waiting for a turn, oldest first: the last queueChanged
   * event's queue, as the runner keeps it.
   */
  queue: Queued[] = [];
  private openAsks = new Map<string, Item & { kind: 'ask' }>();
  private edits = new Map<string, Item & { kind: 'edit' }>();
  private tools = new Map<string, Item & { kind: 'tool' }>();
  private speaking?: Item & { kind: 'assistant' };

  /** apply folds events in; they come in seq order. */
  apply(events: SessionEvent[]): void {
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

  /** isQueued says whether a message still waits for its turn. */
  isQueued(messageId: string): boolean {
    return this.queue.some((q) => q.id === messageId);
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

  private one(ev: SessionEvent): void {
    if (ev.seq <= this.lastSeq) return;
    this.lastSeq = ev.seq;
    this.lastActivity = ev.ts;
    switch (ev.type) {
      case 'sessionStarted':
      case 'sessionResumed': {
        const d = ev.data;
        this.engine = d.engine || this.engine;
        this.model = d.model ?? this.model;
        this.cwd = d.cwd || this.cwd;
        this.mode = d.mode || this.mode;
        if (ev.type === 'sessionResumed') this.push({ kind: 'notice', seq: ev.seq, text: 'Session resumed' });
        break;
      }
      case 'userMessage':
        this.push({ kind: 'user', seq: ev.seq, id: ev.data.id, text: ev.data.text, msgKind: ev.data.kind });
        break;
      case 'queueChanged':
        this.queue = ev.data.queued ?? [];
        break;
      case 'turnStarted':
        // The last turn's auto-applied edits were open to reverts until
        // now (docs/hunks.md).
        for (const [id, e] of this.edits) {
          if (e.auto) {
            e.revertible = false;
            this.edits.delete(id);
          }
        }
        this.turn = ev.data.turn;
        this.turnRunning = true;
        this.failed = false;
        this.stopped = false;
        break;
      case 'assistantDelta':
        if (!this.speaking || this.speaking.done) {
          this.speaking = { kind: 'assistant', seq: ev.seq, text: '', done: false };
          this.push(this.speaking);
        }
        this.speaking.text += ev.data.text;
        break;
      case 'assistantText':
        if (this.speaking && !this.speaking.done) {
          this.speaking.text = ev.data.text;
          this.speaking.done = true;
        } else {
          this.push({ kind: 'assistant', seq: ev.seq, text: ev.data.text, done: true });
        }
        this.speaking = undefined;
        break;
      case 'toolStarted': {
        this.endSpeech();
        const d = ev.data;
        const it = {
          kind: 'tool' as const, seq: ev.seq, toolId: d.toolId, tool: d.tool, toolKind: d.kind, summary: d.summary,
          command: d.command, path: d.path, url: d.url,
        };
        this.tools.set(d.toolId, it);
        this.push(it);
        break;
      }
      case 'toolFinished': {
        const d = ev.data;
        const it = this.tools.get(d.toolId);
        if (it) {
          Object.assign(it, { outcome: d.outcome, exitCode: d.exitCode, output: d.output, message: d.message, durationMs: d.durationMs });
          this.tools.delete(d.toolId);
        }
        break;
      }
      case 'askOpened': {
        this.endSpeech();
        const d = ev.data;
        const it = {
          kind: 'ask' as const, seq: ev.seq, askId: d.askId, tool: d.tool, category: d.category, reason: d.reason,
          command: d.command, path: d.path, url: d.url, parts: d.parts,
        };
        this.openAsks.set(d.askId, it);
        this.push(it);
        break;
      }
      case 'askAnswered': {
        const d = ev.data;
        const it = this.openAsks.get(d.askId);
        if (it) {
          it.answer = { decision: d.decision, note: d.note, by: d.by };
          this.openAsks.delete(d.askId);
        }
        break;
      }
      case 'steerDelivered':
        this.push({ kind: 'steer', seq: ev.seq, text: ev.data.text, how: ev.data.native ? 'native' : 'delivered' });
        break;
      case 'steerRequeued':
        this.push({ kind: 'steer', seq: ev.seq, text: ev.data.text, how: 'requeued' });
        break;
      case 'hunkStaged': {
        this.endSpeech();
        const d = ev.data;
        const it = {
          kind: 'edit' as const, seq: ev.seq, editId: d.editId, path: d.path, auto: d.auto, edit: reviewable(d.edit),
          decisions: {}, applied: [], revertible: true,
        };
        this.edits.set(d.editId, it);
        this.push(it);
        break;
      }
      case 'hunkDecided': {
        const d = ev.data;
        const it = this.edits.get(d.editId);
        if (it) it.decisions = { ...it.decisions, [d.hunkId]: { decision: d.decision, note: d.note, by: d.by } };
        break;
      }
      case 'editApplied': {
        const d = ev.data;
        const it = this.edits.get(d.editId);
        if (it) {
          it.applied = [...it.applied, { by: d.by, hunks: d.hunks ?? [], reverted: d.reverted, conflict: d.conflict, added: d.added, removed: d.removed }];
          // An accepted edit the engine then failed to write is not in the
          // file: there is nothing to revert.
          if (d.reverted && d.by === 'engine') it.revertible = false;
        }
        break;
      }
      case 'turnEnded': {
        const d = ev.data;
        this.endSpeech();
        this.turnRunning = false;
        // Decided review-mode edits leave the pending set; one still
        // undecided stays (a crash closes it with "expired"). Auto-applied
        // edits stay revertible until the next turn starts.
        for (const [id, e] of this.edits) {
          if (!e.auto && e.edit.hunks.every((h) => e.decisions[h.id])) this.edits.delete(id);
        }
        this.push({
          kind: 'turnEnd', seq: ev.seq, turn: d.turn, outcome: d.outcome, summary: d.summary,
          durationMs: d.durationMs, costUsd: d.usage?.costUsd ?? 0,
        });
        if (d.outcome === 'failed') this.failed = true;
        break;
      }
      case 'stopped': {
        const d = ev.data;
        this.stopped = true;
        this.push({
          kind: 'stopped', seq: ev.seq, reason: d.reason, interruptedTurn: d.interruptedTurn,
          deniedAsks: d.deniedAsks, rejectedHunks: d.rejectedHunks, clearedQueue: d.clearedQueue,
        });
        break;
      }
      case 'failure': {
        const d = ev.data;
        this.failed = true;
        this.push({ kind: 'failure', seq: ev.seq, code: d.code, message: d.message, action: d.action, stderr: d.stderr });
        break;
      }
      case 'usage': {
        const d = ev.data;
        const u = this.usage;
        this.usage = {
          inputTokens: u.inputTokens + d.inputTokens,
          outputTokens: u.outputTokens + d.outputTokens,
          cacheReadTokens: u.cacheReadTokens + d.cacheReadTokens,
          cacheWriteTokens: u.cacheWriteTokens + d.cacheWriteTokens,
          costUsd: u.costUsd + d.costUsd,
          estimated: u.estimated || d.estimated,
          model: d.model ?? u.model,
        };
        if (d.model) this.model = d.model;
        break;
      }
      case 'context':
        this.context = { ...ev.data };
        break;
      case 'modeChanged':
        this.mode = ev.data.mode;
        this.push({ kind: 'notice', seq: ev.seq, text: `Mode set to ${ev.data.mode}` });
        break;
      case 'spendCapSet': {
        const cap = ev.data.spendCapUsd;
        this.spendCapUsd = cap;
        this.push({ kind: 'notice', seq: ev.seq, text: cap ? `Spend cap set to $${cap}` : 'Spend cap removed' });
        break;
      }
      case 'goalSet':
        this.goal = { text: ev.data.goal, clauses: (ev.data.clauses ?? []).map((c) => ({ clause: c, met: false, evidence: '' })), done: false };
        this.push({ kind: 'notice', seq: ev.seq, text: `Goal set: ${ev.data.goal}` });
        break;
      case 'goalCleared':
        this.goal = undefined;
        this.push({ kind: 'notice', seq: ev.seq, text: 'Goal cleared' });
        break;
      case 'goalCheck': {
        const d = ev.data;
        this.goal = { text: d.goal, clauses: d.clauses ?? [], summary: d.summary, done: d.holds || d.by === 'user' };
        this.push({ kind: 'goal', seq: ev.seq, summary: d.summary, clauses: d.clauses ?? [], by: d.by, limitReached: d.limitReached });
        break;
      }
      case 'retry':
        this.push({ kind: 'notice', seq: ev.seq, text: `Retrying the model call (attempt ${ev.data.attempt}): ${ev.data.error}` });
        break;
      case 'rotated': {
        // Both logs carry it: the one left behind, and the one that goes on.
        const { from, to, reason } = ev.data;
        const how = reason === 'fork' ? 'forked' : 'cleared';
        this.push(to === this.id
          ? { kind: 'notice', seq: ev.seq, text: `Goes on from session ${from} (${how})`, session: from }
          : { kind: 'notice', seq: ev.seq, text: `Continues as session ${to} (${how})`, session: to });
        break;
      }
      case 'compacted':
        this.push({ kind: 'notice', seq: ev.seq, text: 'Context compacted' });
        break;
      case 'logRepaired':
        this.push({ kind: 'notice', seq: ev.seq, text: `Damaged lines of the event log were moved aside to ${ev.data.file}` });
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
}

export const stateLabel: Record<State, string> = {
  starting: 'starting',
  idle: 'idle',
  working: 'working',
  waitingForApproval: 'waiting for you',
  waitingForReview: 'waiting for review',
  failed: 'failed',
  storageFailed: 'out of disk space',
  stopped: 'stopped',
};

export function waitsForHuman(s: State | undefined): boolean {
  return s === 'waitingForApproval' || s === 'waitingForReview';
}
