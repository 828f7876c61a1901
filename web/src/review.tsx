// Asks and staged edits, as the transcript shows them: each ask with its
// command (part by part, each with its verdict), path or URL and reason,
// answered allow or deny with a note; each staged edit as a diff with a
// decision per hunk, accept all / reject all, and what landed on disk.
import { useState } from 'preact/hooks';
import { client } from './api';
import type { Item } from './model';
import { FileHeader, HunkDiff, LayoutSwitch, NoteBox, useLayout, type NoteTarget } from './diff';
import { errorText } from './util';

type Ask = Item & { kind: 'ask' };
type EditItem = Item & { kind: 'edit' };

export function AskCard({ sid, ask }: { sid: string; ask: Ask }) {
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const answer = async (decision: 'allow' | 'deny') => {
    setBusy(true);
    setError(undefined);
    try {
      await client.command(sid, { cmd: 'answer', askId: ask.askId, decision, note: note.trim() || undefined });
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const open = !ask.answer;
  const keys = (e: KeyboardEvent) => {
    if (!open || (e.target as HTMLElement).tagName === 'TEXTAREA' || (e.target as HTMLElement).tagName === 'INPUT') return;
    if (e.key === 'a') { e.preventDefault(); answer('allow'); }
    if (e.key === 'd') { e.preventDefault(); answer('deny'); }
  };
  return (
    <article class={`card ask ${open ? 'open' : 'closed'}`} data-ask={ask.askId} data-testid="ask" aria-label={`Ask ${ask.askId}: ${ask.tool}`}
      onKeyDown={keys} tabIndex={-1}>
      <header class="card-head">
        <strong>{open ? 'Waiting for you' : 'Asked'}</strong>
        <span class="tag">{ask.category}</span>
        <span class="mono">{ask.tool}</span>
      </header>
      {ask.command && <pre class="cmd mono">{ask.command}</pre>}
      {ask.path && <p class="mono">{ask.path}</p>}
      {ask.url && <p class="mono">{ask.url}</p>}
      <p class="reason">{ask.reason}</p>
      {ask.parts && ask.parts.length > 1 && (
        <ul class="parts" aria-label="Each part of the command">
          {ask.parts.map((p, i) => (
            <li key={i}>
              <span class={`verdict v-${p.decision}`}>{p.decision}</span> <code>{p.command}</code>
              {p.reason && <span class="hint"> — {p.reason}</span>}
            </li>
          ))}
        </ul>
      )}
      {open ? (
        <div class="decide">
          <label class="note">
            <span class="sr">Note for the agent (optional)</span>
            <input value={note} placeholder="Note (optional)" onInput={(e) => setNote((e.target as HTMLInputElement).value)}
              onKeyDown={(e) => { if (e.key === 'Enter') { e.preventDefault(); answer('allow'); } }} />
          </label>
          <button type="button" class="good" disabled={busy} onClick={() => answer('allow')} data-testid="allow"
            aria-keyshortcuts="a">Allow <kbd>a</kbd></button>
          <button type="button" class="bad" disabled={busy} onClick={() => answer('deny')} data-testid="deny"
            aria-keyshortcuts="d">Deny <kbd>d</kbd></button>
        </div>
      ) : (
        <p class={`outcome ${ask.answer!.decision}`} data-testid="ask-outcome">
          {ask.answer!.decision === 'allow' ? 'Allowed' : 'Denied'}
          {ask.answer!.by !== 'user' ? ` (${ask.answer!.by})` : ''}{ask.answer!.note ? ` — “${ask.answer!.note}”` : ''}
        </p>
      )}
      {error && <p class="error" role="alert">{error}</p>}
    </article>
  );
}

export function EditCard({ sid, item, onNote }: { sid: string; item: EditItem; onNote?: (text: string, how: 'steer' | 'send') => Promise<void> }) {
  const [layout, setLayout] = useLayout();
  const [notes, setNotes] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [noteAt, setNoteAt] = useState<NoteTarget>();
  const { edit } = item;
  const undecided = edit.hunks.filter((h) => !item.decisions[h.id]);
  const reviewable = item.auto ? item.revertible : true;

  const decide = async (hunkId: string, decision: 'accept' | 'reject') => {
    await client.command(sid, { cmd: 'decideHunk', editId: item.editId, hunkId, decision, note: notes[hunkId]?.trim() || undefined });
  };
  const run = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try { await fn(); } catch (e) { setError(errorText(e)); } finally { setBusy(false); }
  };
  const all = (decision: 'accept' | 'reject') => run(async () => {
    // One hunk at a time, in order: the runner applies the edit once
    // every hunk has its decision.
    for (const h of undecided) await decide(h.id, decision);
  });

  return (
    <article class="card edit" data-edit={item.editId} data-testid="edit" aria-label={`Edit ${item.editId} of ${item.path}`}>
      <header class="card-head">
        <FileHeader edit={edit} path={item.path} />
        {item.auto && <span class="tag">auto</span>}
        <span class="spacer" />
        {!edit.binary && <LayoutSwitch layout={layout} onChange={setLayout} />}
      </header>
      {edit.hunks.map((h) => {
        const d = item.decisions[h.id];
        const canDecide = !item.auto ? !d : reviewable && d?.decision !== 'reject';
        const keys = (e: KeyboardEvent) => {
          if (!canDecide || (e.target as HTMLElement).tagName === 'INPUT') return;
          if (e.key === 'y') { e.preventDefault(); run(() => decide(h.id, 'accept')); }
          if (e.key === 'n') { e.preventDefault(); run(() => decide(h.id, 'reject')); }
        };
        return (
          <section key={h.id} class={`hunk ${d ? 'd-' + d.decision : ''}`} data-hunk={h.id} onKeyDown={keys} aria-label={`Hunk ${h.id}`}>
            {edit.binary ? <p class="hint">Binary file: {h.header}</p> :
              <HunkDiff hunk={h} layout={layout} path={item.path} onNote={onNote ? setNoteAt : undefined} />}
            <div class="decide">
              {d && (
                <span class={`outcome ${d.decision}`} data-testid="hunk-outcome">
                  {h.id}: {d.decision === 'accept' ? 'accepted' : 'rejected'}{d.by !== 'user' ? ` (${d.by})` : ''}{d.note ? ` — “${d.note}”` : ''}
                </span>
              )}
              {canDecide && (
                <>
                  <label class="note">
                    <span class="sr">Note on {h.id}</span>
                    <input placeholder="Note (optional)" value={notes[h.id] ?? ''}
                      onInput={(e) => setNotes({ ...notes, [h.id]: (e.target as HTMLInputElement).value })} />
                  </label>
                  {!item.auto && <button type="button" class="good" disabled={busy} aria-keyshortcuts="y"
                    onClick={() => run(() => decide(h.id, 'accept'))} data-testid="accept">Accept {h.id} <kbd>y</kbd></button>}
                  <button type="button" class="bad" disabled={busy} aria-keyshortcuts="n"
                    onClick={() => run(() => decide(h.id, 'reject'))} data-testid="reject">{item.auto ? 'Revert' : 'Reject'} {h.id} <kbd>n</kbd></button>
                </>
              )}
            </div>
          </section>
        );
      })}
      {!item.auto && undecided.length > 1 && (
        <div class="actions">
          <button type="button" class="good" disabled={busy} onClick={() => all('accept')}>Accept all</button>
          <button type="button" class="bad" disabled={busy} onClick={() => all('reject')}>Reject all</button>
        </div>
      )}
      {item.applied.map((a, i) => (
        <p key={i} class={`landed ${a.conflict ? 'conflict' : ''}`} data-testid="applied">
          {a.conflict ? `Conflict: ${a.conflict} — nothing was written`
            : a.reverted ? `Reverted ${a.hunks.join(', ')}`
            : `${a.hunks.length < edit.hunks.length ? 'Partly applied' : 'Applied'}: ${a.hunks.join(', ') || 'nothing'} (+${a.added} −${a.removed}, by ${a.by})`}
        </p>
      ))}
      {noteAt && onNote && <NoteBox target={noteAt} onSend={onNote} onClose={() => setNoteAt(undefined)} />}
      {error && <p class="error" role="alert">{error}</p>}
    </article>
  );
}
