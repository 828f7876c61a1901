// Graph runs (docs/graph.md): the list of runs, and one run's Flow — the
// stage rail, Now / Next / Blocked, one row per subgoal with its implement
// → test → gate, the gates bar, the last verdict and the outcome — and its
// Nodes — To do, Doing, Done — with a link from each node to its sessions.
// A run's view follows its graph event stream: each event reads the run's
// status again (the supervisor works the view out; one read at a time),
// and nodeSession events say which sessions ran which node. The console
// only reads a run: nodes are run by the CLI, MCP or the API.
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { client, followGraph, type FeedState, type NodeRow, type NodeState, type RunEvent, type RunStatus, type Summary } from './api';
import type { Account, Blocked, NodeRef, Running } from '@corral/client';
import type { Row } from './sessions';
import { StateBadge } from './sessions';
import { ago, coalesce, duration, errorText, useNow } from './util';

/** The sign of a node's state, as `supervisor watch --graph` draws it. */
const marks: Record<NodeState, string> = {
  pending: '·', running: '●', passed: '✓', rejected: '✗', failed: '✗', skipped: '–', unreachable: '⊘',
};

function Mark({ state }: { state: NodeState }) {
  return <span class={`mark m-${state}`} aria-hidden="true">{marks[state]}</span>;
}

function RunState({ state }: { state: string }) {
  return <span class={`badge run-${state}`} data-testid="run-state">{state}</span>;
}

export function GraphList() {
  const [runs, setRuns] = useState<Summary[]>();
  const [error, setError] = useState<string>();
  const now = useNow();
  const load = () => client.graphs().then((r) => { setRuns(r); setError(undefined); }, (e) => setError(errorText(e)));
  useEffect(() => { load(); }, []);
  return (
    <section class="panel wide" aria-labelledby="graphs-title">
      <header class="card-head">
        <h1 id="graphs-title">Graph runs</h1>
        <span class="spacer" />
        <button type="button" class="ghost" onClick={load}>Refresh</button>
      </header>
      <p class="hint">
        A graph run carries out one request as a graph of sessions: plan, spec, critique, then per subgoal implement,
        test and gate, a goal gate and a report. Open them with <code>supervisor graph open</code> or an agent through
        <code> supervisor mcp</code>; each run here shows live.
      </p>
      {error && <p class="error" role="alert">{error}</p>}
      {runs && runs.length === 0 && <p class="empty">No graph run yet.</p>}
      {runs && runs.length > 0 && (
        <table class="runs" data-testid="graph-list">
          <caption class="sr">Graph runs, most recently updated first</caption>
          <thead><tr><th scope="col">Run</th><th scope="col">State</th><th scope="col">Request</th><th scope="col">Running</th><th scope="col">Last verdict</th><th scope="col">Updated</th></tr></thead>
          <tbody>
            {runs.map((r) => (
              <tr key={r.runId} data-run={r.runId}>
                <td><a class="mono" href={`#/graphs/${encodeURIComponent(r.runId)}`}>{r.runId}</a></td>
                <td><RunState state={r.state} /></td>
                <td class="request">{clip(r.request, 120)}</td>
                <td>{r.running.length ? r.running.map((x) => x.node).join(', ') : '—'}</td>
                <td>{r.last ? <><Mark state={r.last.state} /> {r.last.nodeId} {r.last.verdict ?? r.last.state}</> : '—'}</td>
                <td>{ago(r.updatedAt, now)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

type Tab = 'flow' | 'nodes';

/** A run as the view draws it: the status, when it was read, and each node's sessions. */
interface Seen {
  status?: RunStatus;
  readAt: number;
  sessions: Map<string, string[]>;
}

export function GraphView({ run, sessions }: { run: string; sessions: Row[] }) {
  const [seen, setSeen] = useState<Seen>({ readAt: 0, sessions: new Map() });
  const [feed, setFeed] = useState<{ state: FeedState; detail?: string }>({ state: 'loading' });
  const [error, setError] = useState<string>();
  const [tab, setTab] = useState<Tab>('flow');
  const nodeSessions = useRef(new Map<string, string[]>()).current;

  useEffect(() => {
    const read = coalesce(async () => {
      try {
        const status = await client.graph(run);
        setSeen({ status, readAt: Date.now(), sessions: new Map(nodeSessions) });
        setError(undefined);
      } catch (e) {
        setError(errorText(e));
      }
    });
    read();
    return followGraph(run, {
      onEvent: (ev) => {
        const s = sessionOf(ev);
        if (s && ev.node) nodeSessions.set(ev.node, [...(nodeSessions.get(ev.node) ?? []), s]);
        read();
      },
      onState: (state, detail) => setFeed({ state, detail }),
    });
  }, [run]);

  const states = useMemo(() => new Map(sessions.map((r) => [r.id, r])), [sessions]);
  const st = seen.status;
  return (
    <section class="graph" aria-labelledby="graph-title" data-graph-view={run} data-rev={st?.rev ?? 0}>
      <header class="session-head">
        <h1 id="graph-title"><span class="hint">Graph run</span> <span class="mono">{run}</span></h1>
        {st && <RunState state={st.state} />}
        <GraphFeed feed={feed} />
        <span class="spacer" />
        <a href="#/graphs">All runs</a>
      </header>
      {error && <p class="error" role="alert">{error}</p>}
      {st && <p class="request" data-testid="graph-request">{clip(st.request, 400)} <span class="hint mono">{st.cwd}</span></p>}
      <div class="tabs" role="tablist" aria-label="Graph views">
        {(['flow', 'nodes'] as const).map((t) => (
          <button key={t} type="button" role="tab" id={`gtab-${t}`} aria-selected={tab === t} aria-controls={`gpanel-${t}`}
            class={tab === t ? 'tab on' : 'tab'} onClick={() => setTab(t)} data-testid={`graph-tab-${t}`}>
            {t === 'flow' ? 'Flow' : 'Nodes'}
          </button>
        ))}
      </div>
      <div class="graph-body" role="tabpanel" id={`gpanel-${tab}`} aria-labelledby={`gtab-${tab}`}>
        {!st && !error && <p class="hint" role="status">Loading the run…</p>}
        {st && tab === 'flow' && <Flow st={st} readAt={seen.readAt} sessions={seen.sessions} states={states} />}
        {st && tab === 'nodes' && <Nodes st={st} readAt={seen.readAt} sessions={seen.sessions} states={states} />}
      </div>
    </section>
  );
}

/** sessionOf is the session a nodeSession event names. */
function sessionOf(ev: RunEvent): string | undefined {
  if (ev.type !== 'nodeSession' || typeof ev.data !== 'object' || ev.data === null) return undefined;
  const s = (ev.data as { session?: unknown }).session;
  return typeof s === 'string' ? s : undefined;
}

function GraphFeed({ feed }: { feed: { state: FeedState; detail?: string } }) {
  switch (feed.state) {
    case 'live': return <span class="conn ok" data-testid="graph-feed">live</span>;
    case 'ended': return <span class="conn" data-testid="graph-feed">ended</span>;
    case 'loading': return <span class="conn" data-testid="graph-feed">loading…</span>;
    case 'gone': return <span class="conn bad" role="status" data-testid="graph-feed">no such run</span>;
    default: return <span class="conn bad" role="status" data-testid="graph-feed" title={feed.detail}>reconnecting…</span>;
  }
}

interface ViewProps {
  st: RunStatus;
  readAt: number;
  sessions: Map<string, string[]>;
  states: Map<string, Row>;
}

function Flow({ st, readAt, sessions, states }: ViewProps) {
  return (
    <div class="flow" data-testid="graph-flow">
      <ol class="rail" aria-label="Stages">
        {st.stages.map((c) => {
          const sign: NodeState | 'none' = c.total === 0 ? 'none' : c.running > 0 ? 'running' : c.bad > 0 ? 'rejected' : c.done === c.total ? 'passed' : 'pending';
          return (
            <li key={c.stage} class={`stage s-${sign}`} data-stage={c.stage}>
              <span class="stage-name">{c.stage}</span>
              {c.total > 1 && <span class="counts"> {c.done}/{c.total}</span>}
              {sign !== 'none' && <> <Mark state={sign} /><span class="sr"> {sign === 'pending' ? 'to do' : sign}</span></>}
            </li>
          );
        })}
      </ol>
      <dl class="nnb">
        <dt>Now</dt>
        <dd data-testid="graph-now">{st.now.length === 0 ? '—' : st.now.map((r) => (
          <span key={r.node} class="nnb-item"><RunningNode r={r} readAt={readAt} states={states} /></span>
        ))}</dd>
        <dt>Next</dt>
        <dd data-testid="graph-next">{st.next.length === 0 ? '—' : st.next.join(', ')}</dd>
        <dt>Blocked</dt>
        <dd data-testid="graph-blocked">{st.blocked.length === 0 ? '—' : st.blocked.map((b) => (
          <span key={b.node} class="nnb-item"><BlockedNode b={b} /></span>
        ))}</dd>
      </dl>
      {st.subgoals && st.subgoals.length > 0 && (
        <>
          <table class="subgoals" data-testid="graph-subgoals">
            <caption class="sr">Subgoals: implement, test and gate</caption>
            <thead><tr><th scope="col">Subgoal</th><th scope="col">Title</th><th scope="col">Implement</th><th scope="col">Test</th><th scope="col">Gate</th><th scope="col">Attempt</th></tr></thead>
            <tbody>
              {st.subgoals.map((sg) => (
                <tr key={sg.id} data-subgoal={sg.id}>
                  <th scope="row" class="mono">{sg.id}</th>
                  <td>{sg.title}</td>
                  <td><Cell n={sg.implement} sessions={sessions} /></td>
                  <td><Cell n={sg.test} sessions={sessions} /></td>
                  <td><Cell n={sg.gate} sessions={sessions} /></td>
                  <td>{sg.attempt > 1 ? `${sg.attempt} of ${sg.budget}` : `1 of ${sg.budget}`}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <GatesBar st={st} />
        </>
      )}
      {st.last && (
        <p class="last" data-testid="graph-last">
          <span class="hint">Last:</span> <Mark state={st.last.state} /> <span class="mono">{st.last.nodeId}</span> {verdictText(st.last)}
        </p>
      )}
      {st.outcome && <Outcome o={st.outcome} state={st.state} />}
    </div>
  );
}

function RunningNode({ r, readAt, states }: { r: Running; readAt: number; states: Map<string, Row> }) {
  const now = useNow(1000);
  const who = r.model ? `${r.engine}/${r.model}` : r.engine;
  const row = r.session ? states.get(r.session) : undefined;
  return (
    <>
      <span class="mono">{r.node}</span> ({who || 'routing'}, {duration(r.elapsedMs + Math.max(0, now - readAt))})
      {r.session && <> · <a href={`#/sessions/${r.session}`} data-testid="node-session">session {r.session}</a></>}
      {row?.waiting && <> <StateBadge state={row.state} /></>}
    </>
  );
}

function BlockedNode({ b }: { b: Blocked }) {
  const retry = b.retry === undefined ? '' : b.retry === '' ? ' — retry the spec' : ` — retry ${b.retry}`;
  return <><Mark state={b.state} /> <span class="mono">{b.node}</span> {b.state}{b.reason ? `: ${clip(b.reason, 160)}` : ''}{retry}</>;
}

function Cell({ n, sessions }: { n?: NodeRef; sessions: Map<string, string[]> }) {
  if (!n) return <span class="hint">—</span>;
  const ids = sessions.get(n.id) ?? [];
  const last = ids[ids.length - 1];
  const label = <><Mark state={n.state} /> {n.state}{n.verdict && n.verdict !== n.state ? ` · ${n.verdict}` : ''}</>;
  return (
    <span class={`cell n-${n.state}`} data-node={n.id}>
      {last ? <a href={`#/sessions/${last}`} title={`${n.id}: its session ${last}`}>{label}</a> : label}
    </span>
  );
}

function GatesBar({ st }: { st: RunStatus }) {
  const gates = st.subgoals ?? [];
  const accepted = gates.filter((g) => g.gate?.state === 'passed').length;
  const goal = st.nodes.find((n) => n.stage === 'gate:goal' && n.live);
  return (
    <p class="gates" data-testid="graph-gates">
      <span class="hint">Gates</span>{' '}
      <span class="bar" role="img" aria-label={`${accepted} of ${gates.length} gates accepted`}>
        {gates.map((g) => <span key={g.id} class={`gate-cell n-${g.gate?.state ?? 'pending'}`} title={`${g.id}: ${g.gate?.state ?? 'not yet'}`} />)}
      </span>{' '}
      {accepted}/{gates.length} accepted · goal {goal ? <><Mark state={goal.state} /> {goal.verdict ?? goal.state}</> : '—'}
    </p>
  );
}

function Outcome({ o, state }: { o: Account; state: string }) {
  return (
    <section class="outcome-box" aria-label="Outcome" data-testid="graph-outcome">
      <h2>Outcome: {state}</h2>
      <p>Shipped: {o.shipped.length ? o.shipped.join(', ') : 'nothing'}{o.goal ? ` · goal gate: ${o.goal}` : ''}{o.report ? ` · report: ${o.report}` : ''}</p>
      {o.notShipped.length > 0 && (
        <ul>
          {o.notShipped.map((m) => <li key={m.subgoal}><span class="mono">{m.subgoal}</span> not shipped ({m.state}): {m.reason}</li>)}
        </ul>
      )}
      {o.reason && <p>{o.reason}</p>}
    </section>
  );
}

function Nodes({ st, readAt, sessions, states }: ViewProps) {
  const ready = new Set(st.next);
  const todo = st.nodes.filter((n) => n.state === 'pending');
  const doing = st.nodes.filter((n) => n.state === 'running');
  const done = st.nodes.filter((n) => n.state !== 'pending' && n.state !== 'running');
  const running = new Map(st.now.map((r) => [r.node, r]));
  return (
    <div class="nodes" data-testid="graph-nodes">
      <NodeColumn title="To do" testid="graph-todo" rows={todo} line={(n) => (
        ready.has(n.nodeId)
          ? <><span class="mark m-ready" aria-hidden="true">▸</span> <span class="mono">{n.nodeId}</span> <span class="hint">ready</span></>
          : <><Mark state="pending" /> <span class="mono">{n.nodeId}</span> <span class="hint">waits for {[...(n.deps ?? []), ...(n.after ?? [])].join(', ') || '—'}</span></>
      )} />
      <NodeColumn title="Doing" testid="graph-doing" rows={doing} line={(n) => {
        const r = running.get(n.nodeId);
        return (
          <>
            {r ? <RunningNode r={r} readAt={readAt} states={states} /> : <><Mark state={n.state} /> <span class="mono">{n.nodeId}</span></>}
            {n.route && <p class="hint">{clip(n.route.reason, 200)}</p>}
          </>
        );
      }} />
      <NodeColumn title="Done" testid="graph-done" rows={done} line={(n) => (
        <>
          <Mark state={n.state} /> <span class="mono">{n.nodeId}</span> <span class="hint">{verdictText(n)}{n.live ? '' : ' (retired)'}</span>
          <SessionLinks ids={sessions.get(n.nodeId) ?? []} />
        </>
      )} />
    </div>
  );
}

function NodeColumn({ title, testid, rows, line }: { title: string; testid: string; rows: NodeRow[]; line: (n: NodeRow) => ComponentChildren }) {
  return (
    <section class="node-col" aria-label={title} data-testid={testid}>
      <h2>{title} <span class="hint">({rows.length})</span></h2>
      <ul>
        {rows.map((n) => <li key={n.nodeId} data-node={n.nodeId}>{line(n)}</li>)}
      </ul>
    </section>
  );
}

function SessionLinks({ ids }: { ids: string[] }) {
  if (ids.length === 0) return null;
  return (
    <span class="sessions-of">
      {' · '}
      {ids.map((id, i) => <span key={id}>{i > 0 && ', '}<a href={`#/sessions/${id}`}>session {id}</a></span>)}
    </span>
  );
}

/** verdictText is a verdict's state, verdict, engine and reason in a line. */
function verdictText(v: { state: NodeState; verdict?: string; engine?: string; model?: string; reason?: string; stageOk: boolean }): string {
  const parts: string[] = [v.state];
  if (v.verdict && v.verdict !== v.state) parts.push(v.verdict);
  const finished = v.state === 'passed' || v.state === 'rejected' || v.state === 'failed';
  if (!v.stageOk && finished) parts.push('stage failed');
  if (v.engine) parts.push(v.model ? `${v.engine}/${v.model}` : v.engine);
  if (v.reason) parts.push(clip(v.reason, 160));
  return parts.join(' · ');
}

function clip(s: string, n: number): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? one.slice(0, n - 1) + '…' : one;
}
