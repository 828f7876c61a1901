// The session's workspace: its branch's whole diff against the base it
// started from, a commit with a message, and a merge back into the base
// branch, done locally and never forced: conflicts are reported and
// nothing changes. Review notes on a line go to the agent.
import { useEffect, useState } from 'preact/hooks';
import { client, type MergeResult, type WorkspaceStatus } from './api';
import { reviewable } from './model';
import { FileHeader, HunkDiff, LayoutSwitch, NoteBox, useLayout, type NoteTarget } from './diff';
import { errorText } from './util';

export function WorkspacePanel({ id, onNote }: { id: string; onNote: (text: string, how: 'steer' | 'send') => Promise<void> }) {
  const [ws, setWs] = useState<WorkspaceStatus>();
  const [error, setError] = useState<string>();
  const [message, setMessage] = useState('');
  const [busy, setBusy] = useState(false);
  const [merge, setMerge] = useState<MergeResult>();
  const [done, setDone] = useState<string>();
  const [layout, setLayout] = useLayout();
  const [noteAt, setNoteAt] = useState<NoteTarget>();

  const load = () => client.workspace(id).then((w) => { setWs(w); setError(undefined); }, (e) => setError(errorText(e)));
  useEffect(() => { load(); }, [id]);

  const act = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try { await fn(); await load(); } catch (e) { setError(errorText(e)); } finally { setBusy(false); }
  };
  const commit = (e: Event) => {
    e.preventDefault();
    if (!message.trim()) return;
    act(async () => {
      const c = await client.commitWorkspace(id, message.trim());
      setDone(`Committed ${c.slice(0, 12)}.`);
      setMessage('');
    });
  };
  const doMerge = () => act(async () => {
    const r = await client.mergeWorkspace(id);
    setMerge(r);
    setDone(undefined);
  });

  return (
    <section class="workspace" aria-label="Workspace" data-testid="workspace">
      {error && <p class="error" role="alert">{error}</p>}
      {ws && (
        <>
          <dl class="facts wide">
            <dt>Branch</dt><dd class="mono">{ws.branch}</dd>
            <dt>Base</dt><dd class="mono">{ws.base} ({ws.baseCommit.slice(0, 12)})</dd>
            <dt>Commits ahead</dt><dd>{ws.ahead}</dd>
            <dt>Uncommitted changes</dt><dd>{ws.dirty ? 'yes' : 'none'}</dd>
            <dt>Worktree</dt><dd class="mono">{ws.path}{ws.keep ? ' (kept after the session)' : ' (removed with the session)'}</dd>
          </dl>
          <form class="inline-form" onSubmit={commit}>
            <label>
              <span>Commit message</span>
              <input value={message} onInput={(e) => setMessage((e.target as HTMLInputElement).value)} data-testid="commit-message" />
            </label>
            <button type="submit" disabled={busy || !ws.dirty || !message.trim()}>Commit</button>
            <button type="button" disabled={busy || ws.ahead === 0} onClick={doMerge}>Merge into {ws.base}</button>
            <button type="button" class="ghost" onClick={() => load()}>Refresh</button>
          </form>
          {done && <p class="receipt" role="status">{done}</p>}
          {merge && (
            <p class={`receipt ${merge.merged ? '' : 'conflict'}`} role="status" data-testid="merge-result">
              {merge.merged
                ? `Merged into ${merge.base}${merge.commit ? ` as ${merge.commit.slice(0, 12)}` : ''}.`
                : `Not merged: ${merge.conflicts?.length ?? 0} conflicting file(s): ${(merge.conflicts ?? []).join(', ')}. Nothing was changed.`}
            </p>
          )}
          <div class="ws-files">
            <header class="card-head"><h2>Changes against {ws.base}</h2><span class="spacer" /><LayoutSwitch layout={layout} onChange={setLayout} /></header>
            {!ws.files?.length && <p class="hint">No change against the base.</p>}
            {ws.truncated && <p class="hint">More files changed than are shown here.</p>}
            {(ws.files ?? []).map(reviewable).map((f) => (
              <article class="card edit" key={f.path}>
                <header class="card-head"><FileHeader edit={f} /></header>
                {f.binary ? <p class="hint">Binary file</p> : f.hunks.map((h) => (
                  <HunkDiff key={h.id} hunk={h} layout={layout} path={f.path} onNote={setNoteAt} />
                ))}
              </article>
            ))}
          </div>
          {noteAt && <NoteBox target={noteAt} onSend={onNote} onClose={() => setNoteAt(undefined)} />}
        </>
      )}
    </section>
  );
}
