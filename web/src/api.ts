// The console's seam to the supervisor's HTTP API (docs/api.md). Every call
// goes to the page's own origin: the supervisor itself, or the loopback
// gateway of `supervisor console`, which signs the browser in with a cookie.
// When the published TypeScript client (clients/typescript) lands, this
// module is where it plugs in; nothing else in the page speaks HTTP.

export type State =
  | 'starting' | 'idle' | 'working' | 'waitingForApproval' | 'waitingForReview' | 'failed' | 'stopped';

export interface Usage {
  inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number;
  costUsd: number; estimated: boolean; model?: string;
}

export interface Status {
  session: string; engine: string; state: State; activity?: string; mode?: string; turn: number;
  queued: { id: string; text: string }[]; openAsks: string[]; pendingEdits: string[];
  goal?: string; usage: Usage; lastSeq: number; spendCapUsd?: number; unattended?: boolean;
}

export interface WorkspaceSpec { base?: string; branch?: string; keep?: boolean }

export interface Spec {
  id?: string; engine: string; cwd?: string; scenario?: string; model?: string; modelEndpoint?: string;
  mode?: string; allow?: string[]; allowNetwork?: boolean; unattended?: boolean; spendCapUsd?: number;
  parent?: string; engineSession?: string; goal?: { text: string; done?: boolean };
  workspace?: WorkspaceSpec;
}

export interface WireError { message: string; code: string; statusCode: number; detail?: unknown }

export interface Session {
  id: string; spec: Spec; live: boolean; status?: Status; updatedAt: string; lastCrash?: WireError;
}

export interface CorralEvent<D = any> { seq: number; ts: string; type: string; data?: D }

export interface Command {
  cmd: string; text?: string; askId?: string; decision?: string; note?: string; editId?: string;
  hunkId?: string; mode?: string; goal?: string; spendCapUsd?: number; messageId?: string;
}

export interface HunkLine { op: 'context' | 'delete' | 'add'; text: string; eol: string; textBase64?: string }
export interface Hunk {
  id: string; header: string; oldStart: number; oldLines: number; newStart: number; newLines: number;
  added: number; removed: number; lines: HunkLine[];
}
export interface Edit {
  path: string; kind: 'modify' | 'create' | 'delete'; binary: boolean; added: number; removed: number;
  oldSize: number; newSize: number; hunks: Hunk[];
}

export interface Workspace {
  path: string; branch: string; base: string; baseCommit: string; keep: boolean;
  head: string; ahead: number; dirty: boolean; files: Edit[];
}
export interface MergeResult { merged: boolean; commit?: string; conflicts?: string[]; base: string }

/** ApiError is a failure the supervisor (or the gateway) reported. */
export class ApiError extends Error {
  constructor(readonly code: string, message: string, readonly status: number) {
    super(message);
  }
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  let resp: Response;
  try {
    resp = await fetch('/v1' + path, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError('unavailable', 'the supervisor cannot be reached', 0);
  }
  let parsed: any;
  try {
    parsed = await resp.json();
  } catch {
    throw new ApiError('internal', `${method} ${path}: answer is not JSON (HTTP ${resp.status})`, resp.status);
  }
  if (!parsed.ok) {
    const e: WireError = parsed.error ?? { message: `HTTP ${resp.status}`, code: 'internal', statusCode: resp.status };
    throw new ApiError(e.code, e.message, resp.status);
  }
  return parsed as T;
}

export const api = {
  health: () => call<{ ok: true; proto: number; liveSessions: number }>('GET', '/health'),
  sessions: async () => (await call<{ sessions: Session[] }>('GET', '/sessions')).sessions,
  session: async (id: string) => (await call<{ session: Session }>('GET', `/sessions/${id}`)).session,
  create: async (spec: Spec) => (await call<{ session: Session }>('POST', '/sessions', spec)).session,
  remove: (id: string) => call<{ ok: true }>('DELETE', `/sessions/${id}`),
  command: async <R = any>(id: string, cmd: Command) =>
    (await call<{ result?: R }>('POST', `/sessions/${id}/commands`, cmd)).result as R,
  workspace: async (id: string) => (await call<{ workspace: Workspace }>('GET', `/sessions/${id}/workspace`)).workspace,
  commitWorkspace: async (id: string, message: string) =>
    (await call<{ commit: string }>('POST', `/sessions/${id}/workspace/commit`, { message })).commit,
  mergeWorkspace: async (id: string) =>
    (await call<{ result: MergeResult }>('POST', `/sessions/${id}/workspace/merge`, {})).result,
};

/** EventFeed reports what a followed stream is doing, for the page's banner. */
export type FeedState = 'loading' | 'live' | 'reconnecting' | 'gone';

export interface FollowOptions {
  /** The first seq wanted (1: everything). */
  from: number;
  /** Called with every batch of events, in seq order, no gap, no repeat. */
  onEvents: (events: CorralEvent[], backlog: boolean) => void;
  onState: (s: FeedState, detail?: string) => void;
}

/**
 * follow streams a session's events: first the backlog in one read
 * (follow=false, so the page can draw the latest screen at once), then the
 * live feed. A stream that breaks (a lost connection, a supervisor
 * restart) is opened again from the last seq seen, with a growing pause,
 * so nothing is missed or repeated. Returns a function that stops it.
 */
export function follow(id: string, opts: FollowOptions): () => void {
  const ctl = new AbortController();
  let next = Math.max(1, opts.from);
  let pause = 250;
  const deliver = (events: CorralEvent[], backlog: boolean) => {
    // The guarantee is no gap and no repeat; keep it even if a
    // reconnect overlaps.
    const fresh = events.filter((e) => e.seq >= next);
    if (fresh.length === 0) return;
    next = fresh[fresh.length - 1].seq + 1;
    opts.onEvents(fresh, backlog);
  };
  const run = async () => {
    let first = true;
    while (!ctl.signal.aborted) {
      try {
        opts.onState(first ? 'loading' : 'reconnecting');
        if (first) {
          await readNDJSON(`/v1/sessions/${id}/events?format=ndjson&follow=false&from=${next}`, ctl.signal,
            (evs) => deliver(evs, true));
          first = false;
        }
        opts.onState('live');
        await readNDJSON(`/v1/sessions/${id}/events?format=ndjson&from=${next}`, ctl.signal,
          (evs) => { pause = 250; deliver(evs, false); });
      } catch (e) {
        if (ctl.signal.aborted) return;
        if (e instanceof ApiError && e.code === 'not_found') {
          opts.onState('gone', e.message);
          return;
        }
        opts.onState('reconnecting', e instanceof Error ? e.message : String(e));
      }
      await sleep(pause, ctl.signal);
      pause = Math.min(pause * 2, 4000);
    }
  };
  run();
  return () => ctl.abort();
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

/**
 * readNDJSON reads an NDJSON event stream to its end, handing over each
 * read's complete lines as one batch. A final {"ok":false,...} line is
 * thrown as an ApiError; a stream that ends without one ended cleanly.
 */
async function readNDJSON(url: string, signal: AbortSignal, onBatch: (evs: CorralEvent[]) => void): Promise<void> {
  const resp = await fetch(url, { credentials: 'same-origin', signal, headers: { Accept: 'application/x-ndjson' } });
  if (!resp.ok || !resp.body) {
    let err: WireError | undefined;
    try { err = (await resp.json()).error; } catch { /* not JSON */ }
    throw new ApiError(err?.code ?? 'unavailable', err?.message ?? `HTTP ${resp.status}`, resp.status);
  }
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let rest = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    rest += value;
    const cut = rest.lastIndexOf('\n');
    if (cut < 0) continue;
    const lines = rest.slice(0, cut).split('\n');
    rest = rest.slice(cut + 1);
    const batch: CorralEvent[] = [];
    for (const line of lines) {
      if (!line) continue;
      const obj = JSON.parse(line);
      if (obj.ok === false) {
        if (batch.length) onBatch(batch);
        const e: WireError = obj.error;
        throw new ApiError(e.code, e.message, e.statusCode);
      }
      batch.push(obj as CorralEvent);
    }
    if (batch.length) onBatch(batch);
  }
  if (!signal.aborted && url.indexOf('follow=false') < 0) {
    // A followed stream only ends for a reason; without one, reconnect.
    throw new ApiError('unavailable', 'the event stream ended', 0);
  }
}
