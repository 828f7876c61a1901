// The console's seam to the supervisor's HTTP API (docs/api.md): the
// published TypeScript client (clients/typescript, the local package
// @corral/client) and the streams the page follows through it. Nothing
// else in the page speaks HTTP. Every call goes to the page's own origin:
// the supervisor itself, or the loopback gateway of `supervisor console`,
// which signs the browser in with a cookie.
import { CorralClient, CorralError } from '@corral/client';
import type { FeedItem, RunEvent, SessionEvent } from '@corral/client';
import { errorText } from './util';

export { CorralError };
export type {
  Edit, FeedItem, Hunk, Line, MergeResult, NodeRow, NodeState, RunEvent, RunStatus, Running, Session,
  SessionEvent, Spec, Stage, State, Status, SubgoalRow, Summary, Terminal as TerminalAttachment, UsageData, WorkspaceStatus,
} from '@corral/client';

/** client is the page's one client of the supervisor, on its own origin. */
export const client = new CorralClient({ credentials: 'same-origin' });

/**
 * FeedState says what a followed stream is doing, for the page's banners:
 * gone once the session is deleted, ended once a graph run has ended.
 */
export type FeedState = 'loading' | 'live' | 'reconnecting' | 'gone' | 'ended';

export interface FollowOptions {
  /**
   * Called with every batch of events, in seq order, no gap, no repeat:
   * first the whole backlog in one batch (backlog true), then live ones.
   */
  onEvents: (events: SessionEvent[], backlog: boolean) => void;
  onState: (s: FeedState, detail?: string) => void;
}

/** The longest pause between attempts to open a stream the supervisor refused. */
const maxPauseMs = 4000;

/**
 * followSession streams a session's events: first its backlog in one read
 * (follow=false, so the page can draw the latest screen at once), then the
 * live feed, which the client reopens by itself after a lost connection or
 * a supervisor restart, resuming after the last event. Returns a function
 * that stops it.
 */
export function followSession(id: string, opts: FollowOptions): () => void {
  const ctl = new AbortController();
  const signal = ctl.signal;
  let next = 1;
  const take = (events: SessionEvent[], backlog: boolean) => {
    if (events.length === 0) return;
    next = events[events.length - 1].seq + 1;
    opts.onEvents(events, backlog);
  };
  const run = async () => {
    let backlogRead = false;
    await retrying(signal, opts.onState, async () => {
      if (!backlogRead) {
        opts.onState('loading');
        const backlog: SessionEvent[] = [];
        for await (const ev of client.events(id, { from: next, follow: false, signal })) backlog.push(ev);
        take(backlog, true);
        backlogRead = true;
      }
      opts.onState('live');
      const live = client.events(id, {
        from: next,
        signal,
        onReconnect: (lost) => opts.onState(lost === undefined ? 'live' : 'reconnecting', lost === undefined ? undefined : errorText(lost)),
      });
      for await (const ev of live) take([ev], false);
    });
  };
  run();
  return () => ctl.abort();
}

/**
 * retrying runs fn until the signal aborts: the client resumes a stream it
 * had opened by itself, but a first request that fails (the supervisor is
 * down as the page opens) throws, and is tried again here after a growing
 * pause. A session that is gone ends it.
 */
async function retrying(signal: AbortSignal, onState: (s: FeedState, detail?: string) => void, fn: () => Promise<void>): Promise<void> {
  let pause = 250;
  while (!signal.aborted) {
    try {
      await fn();
      if (signal.aborted) return;
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof CorralError && e.code === 'not_found') {
        onState('gone', e.message);
        return;
      }
      onState('reconnecting', errorText(e));
    }
    await sleep(pause, signal);
    pause = Math.min(pause * 2, maxPauseMs);
  }
}

export interface FeedFollowOptions {
  /** Event and lifecycle types wanted (every type when absent). */
  types?: string[];
  /** Told each time the stream has opened: read the snapshot here. */
  onOpen: () => void;
  onItem: (item: FeedItem) => void;
  onState: (s: FeedState, detail?: string) => void;
}

/**
 * followFeed follows GET /v1/events, every session's events and lifecycle
 * changes on one stream, from now on. Returns a function that stops it.
 */
export function followFeed(opts: FeedFollowOptions): () => void {
  const ctl = new AbortController();
  const signal = ctl.signal;
  retrying(signal, opts.onState, async () => {
    const feed = client.feed({
      from: 'now',
      types: opts.types,
      signal,
      onOpen: () => { opts.onState('live'); opts.onOpen(); },
      onReconnect: (lost) => { if (lost !== undefined) opts.onState('reconnecting', errorText(lost)); },
    });
    for await (const it of feed) opts.onItem(it);
  });
  return () => ctl.abort();
}

/**
 * followGraph streams a graph run's events from the first; the stream
 * ends after the event that ends the run. Returns a function that stops it.
 */
export function followGraph(run: string, opts: { onEvent: (ev: RunEvent) => void; onState: (s: FeedState, detail?: string) => void }): () => void {
  const ctl = new AbortController();
  const signal = ctl.signal;
  let next = 1;
  retrying(signal, opts.onState, async () => {
    const events = client.graphEvents(run, {
      from: next,
      signal,
      onOpen: () => opts.onState('live'),
      onReconnect: (lost) => { if (lost !== undefined) opts.onState('reconnecting', errorText(lost)); },
    });
    for await (const ev of events) {
      next = ev.seq + 1;
      opts.onEvent(ev);
    }
    if (signal.aborted) return;
    // The run has ended (runComplete or runBlocked): nothing more comes.
    opts.onState('ended');
    ctl.abort();
  });
  return () => ctl.abort();
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
  });
}

/** EngineChoice is what the new-session form offers of an engine. */
export interface EngineChoice {
  name: string;
  summary?: string;
  /** Whether a session on it could start now; undefined when not known. */
  ready?: boolean;
  reason?: string;
  /** The models it declares, the default first. */
  models: string[];
}

/**
 * engineChoices reads GET /v1/engines (docs/api.md); undefined when this
 * supervisor does not serve it (404).
 */
export async function engineChoices(): Promise<EngineChoice[] | undefined> {
  const resp = await fetch(client.url('/engines'), { credentials: 'same-origin', headers: client.headers() });
  if (resp.status === 404) return undefined;
  if (!resp.ok) throw new CorralError('unavailable', `GET /v1/engines: HTTP ${resp.status}`, resp.status);
  const body = (await resp.json()) as {
    engines?: { name: string; summary?: string; ready?: boolean; reason?: string; models?: { id: string }[] }[];
  };
  return (body.engines ?? []).map((e) => ({
    name: e.name, summary: e.summary, ready: e.ready, reason: e.reason, models: (e.models ?? []).map((m) => m.id),
  }));
}
