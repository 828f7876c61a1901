// One session: its live transcript, the composer (send, steer, the queue),
// Stop with its receipt, the mode, spend cap, fork and delete, a side panel
// with the goal, usage and context, and tabs for the terminal and the
// workspace. Events stream in from the last seq seen, across lost
// connections and supervisor restarts, without a reload.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { client, followSession, type FeedState, type Session, type SessionEvent } from './api';
import type { StoppedData } from '@corral/client';
import { SessionModel, type Item } from './model';
import { HeldBadge, StateBadge, type Row } from './sessions';
import { AskCard, EditCard } from './review';
import { renderMarkdown } from './markdown';
import { WorkspacePanel } from './workspace';
import { errorText, millis, money } from './util';
import { navigate } from './app';

/** How many transcript items are drawn at first; older ones on demand. */
const window0 = 150;

type Tab = 'transcript' | 'terminal' | 'workspace';
type Mode = 'review' | 'auto' | 'readonly';

/**
 * SessionView is one session's page. row is the session's row of the list,
 * which follows what no event of the session can tell: that its log cannot
 * be written (storageFailed), and whether its spend cap holds it.
 */
export function SessionView({ id, row }: { id: string; row?: Row }) {
  const model = useRef(new SessionModel(id)).current;
  const [, setVersion] = useState(0);
  const [session, setSession] = useState<Session>();
  const storageFailed = row?.state === 'storageFailed';
  const [feed, setFeed] = useState<{ state: FeedState; detail?: string }>({ state: 'loading' });
  const [tab, setTab] = useState<Tab>('transcript');
  const [error, setError] = useState<string>();
  const [receipt, setReceipt] = useState<string>();
  const pending = useRef<SessionEvent[]>([]);
  const frame = useRef(0);
  const backlogDrawn = useRef(false);
  const drawn = useRef<SessionEvent[]>([]);

  useEffect(() => {
    client.session(id).then(setSession, (e) => setError(errorText(e)));
    const stop = followSession(id, {
      onEvents: (evs, backlog) => {
        if (backlog) {
          model.apply(evs);
          return;
        }
        pending.current.push(...evs);
        if (!frame.current) {
          frame.current = requestAnimationFrame(() => {
            frame.current = 0;
            const batch = pending.current;
            pending.current = [];
            model.apply(batch);
            drawn.current = batch;
            setVersion(model.version);
          });
        }
      },
      onState: (state, detail) => {
        setFeed({ state, detail });
        if (state === 'live') setVersion(model.version);
      },
    });
    return () => { stop(); cancelAnimationFrame(frame.current); };
  }, [id]);

  // Performance marks: when the backlog is first on screen, and how long
  // each live event took from the runner's write to the screen.
  useLayoutEffect(() => {
    if (!backlogDrawn.current && feed.state === 'live') {
      backlogDrawn.current = true;
      performance.mark('corral-backlog-drawn', { detail: { id, lastSeq: model.lastSeq, items: model.items.length } });
    }
    if (drawn.current.length) {
      const now = performance.timeOrigin + performance.now();
      for (const ev of drawn.current) {
        const t = millis(ev.ts);
        performance.mark('corral-event-drawn', { detail: { seq: ev.seq, type: ev.type, lagMs: now - t } });
      }
      drawn.current = [];
    }
  });

  // Ctrl+. stops, Esc returns to the composer, a / d answer the first
  // open ask when focus is not in a text field.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement;
      const typing = t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.closest('.xterm');
      if (e.key === '.' && e.ctrlKey) { e.preventDefault(); doStop(); return; }
      if (typing) return;
      if (e.key === 'Escape') { document.getElementById('composer')?.focus(); return; }
      if ((e.key === 'a' || e.key === 'd') && !e.ctrlKey && !e.metaKey && !e.altKey && !t.closest('.ask')) {
        const ask = model.asks()[0];
        if (ask) {
          e.preventDefault();
          client.command(id, { cmd: 'answer', askId: ask.askId, decision: e.key === 'a' ? 'allow' : 'deny' }).catch((x) => setError(errorText(x)));
        }
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [id]);

  const run = async (fn: () => Promise<unknown>) => {
    setError(undefined);
    try { await fn(); } catch (e) { setError(errorText(e)); }
  };
  const doStop = () => run(async () => {
    setReceipt('Stopping…');
    setReceipt(receiptText(await client.command(id, { cmd: 'stop' })));
  });
  const sendText = async (text: string, how: 'send' | 'steer') => {
    await client.command(id, { cmd: how, text });
  };

  // The log cannot say it cannot be written: the supervisor's word wins.
  const state = storageFailed ? 'storageFailed' : model.state;
  const ws = session?.spec.workspace;
  return (
    <section class="session" aria-labelledby="session-title" data-session-view={id} data-last-seq={model.lastSeq}>
      <header class="session-head">
        <h1 id="session-title" class="mono">{id}</h1>
        <StateBadge state={state} />
        {row?.held && <HeldBadge />}
        <span class="meta">{model.engine || session?.spec.engine}{model.model ? ` · ${model.model}` : ''}</span>
        <FeedBanner feed={feed} />
        <span class="spacer" />
        <ModeSwitch id={id} mode={model.mode || session?.spec.mode || 'review'} onError={setError} />
        <button type="button" class="bad" onClick={doStop} data-testid="stop" aria-keyshortcuts="Control+.">
          Stop
        </button>
        <SessionMenu id={id} onError={setError} />
      </header>
      {storageFailed && (
        <p class="error" role="alert" data-testid="storage-failed">
          This session's event log cannot be written (is the state folder's disk full?). It takes no commands until there is room again.
        </p>
      )}
      {receipt && <p class="receipt" role="status" data-testid="receipt">{receipt}</p>}
      {error && <p class="error" role="alert">{error}</p>}
      <div class="tabs" role="tablist" aria-label="Session views">
        <TabButton tab="transcript" cur={tab} set={setTab}>Transcript</TabButton>
        <TabButton tab="terminal" cur={tab} set={setTab}>Terminal</TabButton>
        {ws && <TabButton tab="workspace" cur={tab} set={setTab}>Workspace</TabButton>}
      </div>
      <div class="session-body">
        <div class="session-main" role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`}>
          {tab === 'transcript' && (
            <>
              <Transcript id={id} model={model} onNote={sendText} />
              <Composer id={id} model={model} onError={setError} />
            </>
          )}
          {tab === 'terminal' && <LazyTerminal id={id} />}
          {tab === 'workspace' && ws && <WorkspacePanel id={id} onNote={sendText} />}
        </div>
        <SidePanel id={id} model={model} onError={setError} />
      </div>
    </section>
  );
}

// xterm.js is most of the page's script and only the Terminal tab needs
// it: it loads when the tab is first opened.
let terminalModule: Promise<typeof import('./terminal')> | undefined;

function LazyTerminal({ id }: { id: string }) {
  const [mod, setMod] = useState<typeof import('./terminal')>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    terminalModule ??= import('./terminal');
    terminalModule.then(setMod, (e) => { terminalModule = undefined; setError(errorText(e)); });
  }, []);
  if (error) return <p class="error" role="alert">The terminal could not load: {error}</p>;
  if (!mod) return <p class="hint" role="status">Loading the terminal…</p>;
  return <mod.TerminalPane id={id} />;
}

function receiptText(r: StoppedData): string {
  const parts = [
    r.interruptedTurn ? 'interrupted the turn' : 'no turn was running',
    `denied ${r.deniedAsks} ask${r.deniedAsks === 1 ? '' : 's'}`,
    `rejected ${r.rejectedHunks} hunk${r.rejectedHunks === 1 ? '' : 's'}`,
    `cleared ${r.clearedQueue} queued message${r.clearedQueue === 1 ? '' : 's'}`,
  ];
  return `Stopped: ${parts.join(', ')}.`;
}

function TabButton({ tab, cur, set, children }: { tab: Tab; cur: Tab; set: (t: Tab) => void; children: any }) {
  return (
    <button type="button" role="tab" id={`tab-${tab}`} aria-selected={cur === tab} aria-controls={`panel-${tab}`}
      class={cur === tab ? 'tab on' : 'tab'} onClick={() => set(tab)} data-testid={`tab-${tab}`}>{children}</button>
  );
}

function FeedBanner({ feed }: { feed: { state: FeedState; detail?: string } }) {
  if (feed.state === 'live') return <span class="conn ok" data-testid="feed">live</span>;
  if (feed.state === 'loading') return <span class="conn" data-testid="feed">loading…</span>;
  if (feed.state === 'gone' || feed.state === 'ended') return <span class="conn bad" role="status" data-testid="feed">session deleted</span>;
  return <span class="conn bad" role="status" data-testid="feed" title={feed.detail}>reconnecting…</span>;
}

function ModeSwitch({ id, mode, onError }: { id: string; mode: string; onError: (s: string) => void }) {
  return (
    <label class="inline-label">
      Mode
      <select value={mode} onChange={(e) => {
        const m = (e.target as HTMLSelectElement).value as Mode;
        client.command(id, { cmd: 'setMode', mode: m }).catch((x) => onError(errorText(x)));
      }}>
        <option value="review">review</option>
        <option value="auto">auto</option>
        <option value="readonly">readonly</option>
      </select>
    </label>
  );
}

function SessionMenu({ id, onError }: { id: string; onError: (s: string) => void }) {
  const fork = async () => {
    try {
      const r = await client.command(id, { cmd: 'forkSession' });
      navigate(`/sessions/${r.to}`);
    } catch (e) { onError(errorText(e)); }
  };
  const remove = async () => {
    if (!confirm(`Delete session ${id}? Its folder is removed.`)) return;
    try { await client.deleteSession(id); navigate('/'); } catch (e) { onError(errorText(e)); }
  };
  return (
    <>
      <button type="button" class="ghost" onClick={fork} title="Branch the conversation: the session continues under a new id">Fork</button>
      <button type="button" class="ghost" onClick={remove}>Delete</button>
    </>
  );
}

function Transcript({ id, model, onNote }: { id: string; model: SessionModel; onNote: (t: string, how: 'send' | 'steer') => Promise<void> }) {
  const [shown, setShown] = useState(window0);
  const box = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const items = model.items;
  const start = Math.max(0, items.length - shown);
  useLayoutEffect(() => {
    const el = box.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  });
  return (
    <div class="transcript" ref={box} role="log" aria-label="Transcript" aria-live="polite" tabIndex={0} data-testid="transcript"
      onScroll={(e) => {
        const el = e.currentTarget as HTMLDivElement;
        stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
      }}>
      {start > 0 && (
        <button type="button" class="ghost more" onClick={() => setShown(shown + 500)}>
          Show earlier ({start} more)
        </button>
      )}
      {items.slice(start).map((it) => <ItemView key={it.seq} sid={id} item={it} queue={model.queue} onNote={onNote} />)}
      {items.length === 0 && <p class="hint">Nothing has happened in this session yet.</p>}
    </div>
  );
}

function ItemView({ sid, item, queue, onNote }: {
  sid: string; item: Item; queue: SessionModel['queue']; onNote: (t: string, how: 'send' | 'steer') => Promise<void>;
}) {
  switch (item.kind) {
    case 'user': {
      const queued = queue.some((q) => q.id === item.id);
      return (
        <div class={`msg user ${queued ? 'queued' : ''}`} data-seq={item.seq} data-testid="user-message">
          <span class="who">{item.msgKind === 'send' ? 'You' : item.msgKind}</span>
          {queued && <span class="tag">queued</span>}
          <p class="text">{item.text}</p>
        </div>
      );
    }
    case 'assistant':
      return (
        <div class="msg assistant" data-seq={item.seq} data-testid="assistant">
          <span class="who">Agent</span>
          <div class="md" dangerouslySetInnerHTML={{ __html: renderMarkdown(item.text) }} />
        </div>
      );
    case 'tool':
      return (
        <details class={`tool o-${item.outcome ?? 'running'}`} data-seq={item.seq} data-testid="tool">
          <summary>
            <span class="tag">{item.toolKind}</span> <span class="mono">{item.tool}</span>{' '}
            <span class="mono summary">{item.command ?? item.path ?? item.url ?? item.summary}</span>{' '}
            <span class="outcome-tag">{item.outcome ?? 'running…'}{item.exitCode !== undefined ? ` (exit ${item.exitCode})` : ''}</span>
          </summary>
          {item.message && <p class="hint">{item.message}</p>}
          {item.output && <pre class="output mono">{item.output}</pre>}
          {item.durationMs !== undefined && <p class="hint">{item.durationMs} ms</p>}
        </details>
      );
    case 'ask':
      return <div data-seq={item.seq}><AskCard sid={sid} ask={item} /></div>;
    case 'edit':
      return <div data-seq={item.seq}><EditCard sid={sid} item={item} onNote={onNote} /></div>;
    case 'steer':
      return (
        <div class="msg steer" data-seq={item.seq}>
          <span class="who">Steer</span>
          <span class="tag">{item.how === 'requeued' ? 'no tool boundary came: queued as the next message' : item.how === 'native' ? 'delivered mid-turn' : 'delivered at a tool boundary'}</span>
          <p class="text">{item.text}</p>
        </div>
      );
    case 'turnEnd':
      return (
        <div class={`turn-end o-${item.outcome}`} data-seq={item.seq} data-testid="turn-end">
          Turn {item.turn} {item.outcome}{item.summary ? ` · ${item.summary}` : ''} · {(item.durationMs / 1000).toFixed(1)} s · {money(item.costUsd)}
        </div>
      );
    case 'stopped':
      return (
        <div class="stopped" data-seq={item.seq} data-testid="stopped">
          Stopped ({item.reason}): {item.interruptedTurn ? 'turn interrupted' : 'no turn running'}, {item.deniedAsks} ask(s) denied,
          {' '}{item.rejectedHunks} hunk(s) rejected, {item.clearedQueue} queued message(s) cleared
        </div>
      );
    case 'failure':
      return (
        <div class="failure" role="alert" data-seq={item.seq}>
          <strong>{item.code}</strong>: {item.message}
          {item.action && <p>{item.action}</p>}
          {item.stderr && item.stderr.length > 0 && <pre class="output mono">{item.stderr.join('\n')}</pre>}
        </div>
      );
    case 'goal':
      return (
        <div class="goal-check" data-seq={item.seq}>
          Goal check: {item.summary}{item.limitReached ? ' · limit reached' : ''}
        </div>
      );
    case 'notice':
      return (
        <div class="notice" data-seq={item.seq}>
          {item.text}{item.session && <> · <a href={`#/sessions/${item.session}`}>open {item.session}</a></>}
        </div>
      );
  }
}

function Composer({ id, model, onError }: { id: string; model: SessionModel; onError: (s: string) => void }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<string>();
  // Messages go out one after another, in the order they were typed.
  const last = useRef<Promise<void>>(Promise.resolve());
  const running = model.turnRunning;
  const go = (how: 'send' | 'steer') => {
    const t = text.trim();
    if (!t) return;
    // The box empties at once: what is typed while the message goes out
    // is the next message, never wiped when the answer comes.
    setText('');
    const one = async () => {
      try {
        if (how === 'steer') {
          const r = await client.command(id, { cmd: 'steer', text: t });
          setNote(`Steer ${r.delivery === 'queued' ? 'queued as the next message (no turn was running)' : `accepted (${r.delivery})`}`);
        } else {
          await client.command(id, { cmd: 'send', text: t });
          setNote(undefined);
        }
      } catch (e) {
        // Not sent: the text comes back unless something new was typed.
        setText((cur) => (cur === '' ? t : cur));
        onError(errorText(e));
      }
    };
    const p = last.current.then(one);
    last.current = p;
    setBusy(true);
    p.then(() => { if (last.current === p) setBusy(false); });
  };
  return (
    <form class="composer" onSubmit={(e) => { e.preventDefault(); go('send'); }} aria-label="Message the agent">
      {model.queue.length > 0 && (
        <ul class="queue" aria-label="Queued messages" data-testid="queue">
          {model.queue.map((q) => (
            <li key={q.id}>
              <span class="tag">queued</span> {q.text}
              <button type="button" class="ghost small" onClick={() =>
                client.command(id, { cmd: 'cancelQueued', messageId: q.id }).catch((x) => onError(errorText(x)))}
              aria-label={`Cancel queued message ${q.id}`}>Cancel</button>
            </li>
          ))}
        </ul>
      )}
      <label for="composer" class="sr">Message</label>
      <textarea id="composer" rows={3} value={text} placeholder={running ? 'Steer the running turn (Alt+Enter) or queue a message (Enter)…' : 'Message the agent (Enter to send)…'}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && !e.shiftKey) {
            e.preventDefault();
            go(e.altKey ? 'steer' : 'send');
          }
        }} data-testid="composer" />
      <div class="actions">
        <button type="submit" class="primary" disabled={busy || !text.trim()} data-testid="send">{running ? 'Queue' : 'Send'}</button>
        <button type="button" disabled={busy || !text.trim() || !running} onClick={() => go('steer')} data-testid="steer">Steer</button>
        {note && <span class="hint" role="status">{note}</span>}
      </div>
    </form>
  );
}

function SidePanel({ id, model, onError }: { id: string; model: SessionModel; onError: (s: string) => void }) {
  const [cap, setCap] = useState('');
  const u = model.usage;
  const setSpendCap = (e: Event) => {
    e.preventDefault();
    const n = Number(cap);
    if (!cap.trim() || !Number.isFinite(n) || n < 0) { onError('The spend cap is a number of dollars, 0 or more.'); return; }
    client.command(id, { cmd: 'setSpendCap', spendCapUsd: n }).then(() => setCap(''), (x) => onError(errorText(x)));
  };
  return (
    <aside class="side-panel" aria-label="Session details">
      <section>
        <h2>Goal</h2>
        {model.goal ? (
          <>
            <p>{model.goal.text}{model.goal.summary ? <span class="tag">{model.goal.summary}</span> : null}</p>
            <ul class="clauses">
              {model.goal.clauses.map((c, i) => (
                <li key={i} class={c.met ? 'met' : 'unmet'}>
                  <span aria-label={c.met ? 'met' : 'not met'}>{c.met ? '✓' : '○'}</span> {c.clause}
                  {c.evidence && <p class="hint">{c.evidence}</p>}
                </li>
              ))}
            </ul>
          </>
        ) : <p class="hint">No goal.</p>}
      </section>
      <section>
        <h2>Usage</h2>
        <dl class="facts">
          <dt>Cost</dt><dd data-testid="cost">{money(u.costUsd)}{u.estimated ? ' (estimated)' : ''}</dd>
          <dt>Spend cap</dt><dd>{model.spendCapUsd ? money(model.spendCapUsd) : 'none'}</dd>
          <dt>Input</dt><dd>{u.inputTokens.toLocaleString()} tokens</dd>
          <dt>Output</dt><dd>{u.outputTokens.toLocaleString()} tokens</dd>
          <dt>Cache</dt><dd>{u.cacheReadTokens.toLocaleString()} read · {u.cacheWriteTokens.toLocaleString()} written</dd>
          <dt>Context</dt><dd>{model.context ? `${model.context.percent.toFixed(1)}% of ${model.context.windowTokens.toLocaleString()}` : '—'}</dd>
          <dt>Turn</dt><dd>{model.turn}</dd>
          <dt>Events</dt><dd>{model.lastSeq}</dd>
        </dl>
        <form class="inline-form" onSubmit={setSpendCap}>
          <label>
            <span>New spend cap (USD)</span>
            <input inputMode="decimal" value={cap} onInput={(e) => setCap((e.target as HTMLInputElement).value)} />
          </label>
          <button type="submit">Set</button>
        </form>
      </section>
    </aside>
  );
}
