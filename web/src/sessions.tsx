// The session list: every session with its live state, engine and model,
// cost, goal progress and last activity, with filters and a badge for the
// ones waiting for a person. It follows the multiplexed stream (GET
// /v1/events): each time the stream opens the list is read whole, and
// then each item refreshes the row of its session (docs/console.md).
import { useEffect, useState } from 'preact/hooks';
import { client, followFeed, type FeedItem, type FeedState, type Session, type State } from './api';
import { eventTypes, type LifecycleType } from '@corral/client';
import { stateLabel, waitsForHuman } from './model';
import { ago, coalesce, errorText, millis, money, useNow } from './util';

export interface Row {
  id: string;
  state: State | 'offline';
  waiting: boolean;
  /** held: the spend cap is reached; queued messages wait for it to be raised. */
  held: boolean;
  engine: string;
  model: string;
  cost: number;
  goal: string;
  activity: string;
  updatedAt: string;
  live: boolean;
}

export interface SessionsState {
  list: Row[];
  error?: string;
}

function toRow(s: Session): Row {
  const st = s.status;
  return {
    id: s.id,
    state: st?.state ?? 'offline',
    // A queue the spend cap holds waits for a person, as an ask does.
    waiting: waitsForHuman(st?.state) || (!!st?.held && (st.queued?.length ?? 0) > 0),
    held: !!st?.held,
    engine: s.spec.engine,
    model: s.spec.model || st?.usage?.model || '',
    cost: st?.usage?.costUsd ?? 0,
    goal: st?.goal ?? s.spec.goal?.text ?? '',
    activity: st?.activity ?? '',
    updatedAt: s.updatedAt,
    live: s.live,
  };
}

// Every lifecycle change (a record, so a new one in the contract fails the
// build until it is listed here).
const lifecycleTypes: Record<LifecycleType, true> = {
  sessionCreated: true, sessionLive: true, sessionReaped: true, sessionFailed: true, sessionDeleted: true,
  sessionStorageFailed: true, sessionStorageRestored: true,
};

/**
 * The items the list follows: every lifecycle change and every event but
 * streamed text, which changes no row (the turn's other events do).
 */
export const listTypes = [...eventTypes.filter((t) => t !== 'assistantDelta'), ...Object.keys(lifecycleTypes)];

/**
 * Rows is the list's state outside Preact: rows by id, and per session at
 * most one read of it under way (an item that comes meanwhile asks for
 * one more after it), so a busy session costs one request at a time and
 * its row never lags its last item.
 */
class Rows {
  private rows = new Map<string, Row>();
  private readers = new Map<string, () => void>();
  // Each read is numbered when it starts; an answer older than the one a
  // row shows is dropped (a whole-list read and a row's read may cross).
  private counter = 0;
  private shown = new Map<string, number>();
  private deleted = new Set<string>();

  constructor(private onChange: (rows: Row[]) => void, private onWait: (r: Row) => void) {}

  list(): Row[] {
    // Most recently updated first, as GET /v1/sessions gives them.
    return [...this.rows.values()].sort((a, b) => millis(b.updatedAt) - millis(a.updatedAt) || (a.id < b.id ? -1 : 1));
  }

  /** readAll replaces every row with the supervisor's list. */
  async readAll(): Promise<void> {
    const n = ++this.counter;
    const sessions = await client.sessions();
    const ids = new Set(sessions.map((s) => s.id));
    for (const id of [...this.rows.keys()]) {
      if (!ids.has(id) && (this.shown.get(id) ?? 0) < n) this.rows.delete(id);
    }
    for (const s of sessions) this.put(toRow(s), n, false);
    this.onChange(this.list());
  }

  /** take applies one item of the multiplexed stream. */
  take(it: FeedItem): void {
    const id = it.session;
    if (!id) return;
    if (it.lifecycle?.type === 'sessionDeleted') {
      this.deleted.add(id);
      this.rows.delete(id);
      this.readers.delete(id);
      this.onChange(this.list());
      return;
    }
    const row = this.rows.get(id);
    if (row && it.event) row.updatedAt = it.event.ts;
    let read = this.readers.get(id);
    if (!read) {
      read = coalesce(() => this.readOne(id));
      this.readers.set(id, read);
    }
    read();
  }

  private async readOne(id: string): Promise<void> {
    const n = ++this.counter;
    // A failed read (the session deleted meanwhile, the supervisor gone)
    // leaves the row as it was: the next item or the next opening of the
    // stream reads it again.
    this.put(toRow(await client.session(id)), n, true);
    this.onChange(this.list());
  }

  private put(row: Row, n: number, live: boolean): void {
    if ((this.shown.get(row.id) ?? 0) > n || this.deleted.has(row.id)) return;
    const before = this.rows.get(row.id);
    this.shown.set(row.id, n);
    this.rows.set(row.id, row);
    if (live && row.waiting && !before?.waiting) this.onWait(row);
  }
}

export function useSessions(): SessionsState {
  const [list, setList] = useState<Row[]>([]);
  const [feed, setFeed] = useState<{ state: FeedState; detail?: string }>({ state: 'loading' });
  const [readError, setReadError] = useState<string>();
  useEffect(() => {
    const r = new Rows(setList, notifyWait);
    const readAll = () => r.readAll().then(() => setReadError(undefined), (e) => setReadError(errorText(e)));
    return followFeed({
      types: listTypes,
      onOpen: readAll,
      onItem: (it) => {
        if (it.stream?.type === 'streamReset') readAll();
        else r.take(it);
      },
      onState: (state, detail) => setFeed({ state, detail }),
    });
  }, []);
  const error = feed.state === 'reconnecting' ? `Supervisor unreachable: ${feed.detail ?? 'reconnecting'}` : readError;
  return { list, error };
}

/**
 * notifyWait shows a browser notification for a session that has just
 * started waiting for a person, when the user opted in.
 */
function notifyWait(r: Row): void {
  const on = typeof Notification !== 'undefined' && Notification.permission === 'granted' &&
    localStorage.getItem('corral.notify') === 'on';
  if (!on) return;
  const what = r.held && !waitsForHuman(r.state as State) ? 'reached its spend cap' : stateLabel[r.state as State];
  const n = new Notification(`Corral: session ${r.id} ${what}`, {
    body: r.activity || (r.held ? 'Its queued messages wait until the cap is raised.' : 'It waits for your decision.'),
    tag: `corral-${r.id}`,
  });
  n.onclick = () => { focus(); location.hash = `/sessions/${r.id}`; };
}

type Filter = 'all' | 'waiting' | 'working' | 'idle' | 'ended';

const filters: { key: Filter; label: string }[] = [
  { key: 'all', label: 'All' },
  { key: 'waiting', label: 'Needs you' },
  { key: 'working', label: 'Working' },
  { key: 'idle', label: 'Idle' },
  { key: 'ended', label: 'Failed / stopped' },
];

function matches(r: Row, f: Filter, text: string): boolean {
  if (text && !`${r.id} ${r.engine} ${r.model} ${r.goal}`.toLowerCase().includes(text.toLowerCase())) return false;
  switch (f) {
    case 'all': return true;
    case 'waiting': return r.waiting;
    case 'working': return r.state === 'working' || r.state === 'starting';
    case 'idle': return r.state === 'idle' || r.state === 'offline';
    case 'ended': return r.state === 'failed' || r.state === 'stopped' || r.state === 'storageFailed';
  }
}

export function SessionList({ sessions, current }: { sessions: SessionsState; current?: string }) {
  const [filter, setFilter] = useState<Filter>('all');
  const [text, setText] = useState('');
  const now = useNow();
  const rows = sessions.list.filter((r) => matches(r, filter, text));
  return (
    <div class="list">
      <div class="filters" role="group" aria-label="Filter sessions">
        {filters.map((f) => (
          <button type="button" key={f.key} class={filter === f.key ? 'chip on' : 'chip'} aria-pressed={filter === f.key}
            onClick={() => setFilter(f.key)}>{f.label}</button>
        ))}
      </div>
      <label class="search">
        <span class="sr">Search sessions</span>
        <input type="search" placeholder="Search id, engine, goal…" value={text}
          onInput={(e) => setText((e.target as HTMLInputElement).value)} />
      </label>
      <ul class="sessions" data-testid="session-list">
        {rows.map((r) => (
          <li key={r.id}>
            <a href={`#/sessions/${r.id}`} class={r.id === current ? 'row current' : 'row'}
              aria-current={r.id === current ? 'page' : undefined} data-session={r.id} data-state={r.state}>
              <span class="row-top">
                <span class="mono">{r.id}</span>
                <StateBadge state={r.state} />
                {r.held && <HeldBadge />}
              </span>
              <span class="row-meta">
                {r.engine}{r.model ? ` · ${r.model}` : ''} · {money(r.cost)} · {ago(r.updatedAt, now)}
              </span>
              {r.goal && <span class="row-goal">Goal: {r.goal}</span>}
              {r.activity && <span class="row-activity">{r.activity}</span>}
            </a>
          </li>
        ))}
        {rows.length === 0 && <li class="empty">No session{filter !== 'all' || text ? ' matches' : ' yet'}.</li>}
      </ul>
    </div>
  );
}

/** HeldBadge marks a session its spend cap holds (status.held). */
export function HeldBadge() {
  return <span class="badge waiting" data-testid="held" title="The spend cap is reached: raise it to go on">spend cap reached</span>;
}

export function StateBadge({ state }: { state: State | 'offline' }) {
  const label = state === 'offline' ? 'not running' : stateLabel[state];
  return <span class={`badge st-${state}`} data-testid="state">{label}</span>;
}
