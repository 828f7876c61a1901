// The session list: every session with its live state, engine and model,
// cost, goal progress and last activity, with filters and a badge for the
// ones waiting for a person. It polls the list (GET /v1/sessions); when the
// multiplexed stream (GET /v1/events) is served, it is the place to use it.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type Session, type State } from './api';
import { stateLabel, waitsForHuman } from './model';
import { ago, errorText, money, useInterval, useNow } from './util';

export interface Row {
  id: string;
  state: State | 'offline';
  waiting: boolean;
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
  refresh: () => void;
}

function toRow(s: Session): Row {
  const st = s.status;
  return {
    id: s.id,
    state: st?.state ?? 'offline',
    waiting: waitsForHuman(st?.state),
    engine: s.spec.engine,
    model: s.spec.model || st?.usage?.model || '',
    cost: st?.usage?.costUsd ?? 0,
    goal: st?.goal ?? s.spec.goal?.text ?? '',
    activity: st?.activity ?? '',
    updatedAt: s.updatedAt,
    live: s.live,
  };
}

const pollMs = 2000;

export function useSessions(): SessionsState {
  const [list, setList] = useState<Row[]>([]);
  const [error, setError] = useState<string>();
  const seenWaiting = useRef(new Set<string>());
  const load = async () => {
    try {
      const rows = (await api.sessions()).map(toRow);
      setList(rows);
      setError(undefined);
      notifyNewWaits(rows, seenWaiting.current);
    } catch (e) {
      setError(`Supervisor unreachable: ${errorText(e)}`);
    }
  };
  useEffect(() => { load(); }, []);
  useInterval(load, pollMs);
  return { list, error, refresh: load };
}

/** notifyNewWaits shows a browser notification for each session that has
 * just started waiting for a person (when the user opted in). */
function notifyNewWaits(rows: Row[], seen: Set<string>): void {
  const now = new Set(rows.filter((r) => r.waiting).map((r) => r.id));
  const on = typeof Notification !== 'undefined' && Notification.permission === 'granted' &&
    localStorage.getItem('corral.notify') === 'on';
  for (const id of now) {
    if (!seen.has(id) && on) {
      const r = rows.find((x) => x.id === id)!;
      const n = new Notification(`Corral: session ${id} ${stateLabel[r.state as State]}`, {
        body: r.activity || 'It waits for your decision.',
        tag: `corral-${id}`,
      });
      n.onclick = () => { focus(); location.hash = `/sessions/${id}`; };
    }
  }
  seen.clear();
  for (const id of now) seen.add(id);
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
    case 'ended': return r.state === 'failed' || r.state === 'stopped';
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

export function StateBadge({ state }: { state: State | 'offline' }) {
  const label = state === 'offline' ? 'not running' : stateLabel[state];
  return <span class={`badge st-${state}`} data-testid="state">{label}</span>;
}
