// A file's diff, unified or side by side, from the hunk engine's JSON
// (docs/hunks.md). New, deleted and binary files are said as such. With
// onNote, each line can carry a review note for the agent.
import { useState } from 'preact/hooks';
import type { Edit, Line } from './api';
import type { ReviewHunk } from './model';

export type DiffLayout = 'unified' | 'split';

export function FileHeader({ edit, path }: { edit: Edit; path?: string }) {
  return (
    <span class="file-head">
      <span class="mono path">{path ?? edit.path}</span>
      {edit.kind === 'create' && <span class="tag add">new file</span>}
      {edit.kind === 'delete' && <span class="tag del">deleted</span>}
      {edit.binary && <span class="tag">binary</span>}
      {!edit.binary && <span class="counts"><span class="plus">+{edit.added}</span> <span class="minus">−{edit.removed}</span></span>}
    </span>
  );
}

function eolMark(l: Line): string {
  if (l.eol === '') return ' ⏎̸';
  if (l.eol === '\r\n') return ' ␍';
  return '';
}

export interface NoteTarget { path: string; line: number; text: string }

export function HunkDiff({ hunk, layout, path, onNote }: {
  hunk: ReviewHunk; layout: DiffLayout; path: string; onNote?: (t: NoteTarget) => void;
}) {
  if (hunk.lines.length === 0) return <p class="hint">{hunk.header}</p>;
  let o = hunk.oldStart;
  let n = hunk.newStart;
  const numbered = hunk.lines.map((l) => {
    const row = { l, old: l.op === 'add' ? 0 : o, new: l.op === 'delete' ? 0 : n };
    if (l.op !== 'add') o++;
    if (l.op !== 'delete') n++;
    return row;
  });
  const note = (r: { l: Line; old: number; new: number }) =>
    onNote && (
      <button type="button" class="note-btn" aria-label={`Note on line ${r.new || r.old}`}
        onClick={() => onNote({ path, line: r.new || r.old, text: r.l.text })}>✎</button>
    );
  if (layout === 'unified') {
    return (
      <table class="diff unified">
        <caption class="sr">{`${path} ${hunk.header}`}</caption>
        <tbody>
          <tr class="hdr"><td colSpan={onNote ? 4 : 3} class="mono">{hunk.header}</td></tr>
          {numbered.map((r, i) => (
            <tr key={i} class={r.l.op}>
              <td class="ln">{r.old || ''}</td>
              <td class="ln">{r.new || ''}</td>
              <td class="code mono"><span class="op" aria-hidden="true">{r.l.op === 'add' ? '+' : r.l.op === 'delete' ? '-' : ' '}</span>
                <span class="sr">{r.l.op === 'add' ? 'added: ' : r.l.op === 'delete' ? 'removed: ' : ''}</span>{r.l.text}{eolMark(r.l)}</td>
              {onNote && <td class="nt">{note(r)}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    );
  }
  // Side by side: pair each run of deletions with the additions after it.
  const rows: { left?: (typeof numbered)[0]; right?: (typeof numbered)[0] }[] = [];
  for (let i = 0; i < numbered.length; ) {
    const r = numbered[i];
    if (r.l.op === 'context') { rows.push({ left: r, right: r }); i++; continue; }
    const dels: typeof numbered = [];
    const adds: typeof numbered = [];
    while (i < numbered.length && numbered[i].l.op === 'delete') dels.push(numbered[i++]);
    while (i < numbered.length && numbered[i].l.op === 'add') adds.push(numbered[i++]);
    for (let k = 0; k < Math.max(dels.length, adds.length); k++) rows.push({ left: dels[k], right: adds[k] });
  }
  return (
    <table class="diff split">
      <caption class="sr">{`${path} ${hunk.header}, side by side`}</caption>
      <tbody>
        <tr class="hdr"><td colSpan={onNote ? 5 : 4} class="mono">{hunk.header}</td></tr>
        {rows.map((r, i) => (
          <tr key={i}>
            <td class="ln">{r.left?.old || ''}</td>
            <td class={`code mono ${r.left ? r.left.l.op : 'empty'}`}>{r.left ? r.left.l.text + eolMark(r.left.l) : ''}</td>
            <td class="ln">{r.right?.new || ''}</td>
            <td class={`code mono ${r.right ? r.right.l.op : 'empty'}`}>{r.right ? r.right.l.text + eolMark(r.right.l) : ''}</td>
            {onNote && <td class="nt">{r.right ? note(r.right) : r.left ? note(r.left) : null}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function LayoutSwitch({ layout, onChange }: { layout: DiffLayout; onChange: (l: DiffLayout) => void }) {
  return (
    <span class="seg" role="group" aria-label="Diff layout">
      <button type="button" aria-pressed={layout === 'unified'} class={layout === 'unified' ? 'on' : ''} onClick={() => onChange('unified')}>Unified</button>
      <button type="button" aria-pressed={layout === 'split'} class={layout === 'split' ? 'on' : ''} onClick={() => onChange('split')}>Side by side</button>
    </span>
  );
}

export function useLayout(): [DiffLayout, (l: DiffLayout) => void] {
  const [l, set] = useState<DiffLayout>((localStorage.getItem('corral.diff') as DiffLayout) || 'unified');
  return [l, (x) => { localStorage.setItem('corral.diff', x); set(x); }];
}

/** NoteBox asks for a review note on one line and sends it to the agent. */
export function NoteBox({ target, onSend, onClose }: {
  target: NoteTarget; onSend: (text: string, how: 'steer' | 'send') => Promise<void>; onClose: () => void;
}) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const body = () => `Review note on ${target.path}:${target.line} (\`${target.text.trim()}\`): ${text.trim()}`;
  const go = async (how: 'steer' | 'send') => {
    if (!text.trim()) return;
    setBusy(true);
    try { await onSend(body(), how); onClose(); } finally { setBusy(false); }
  };
  return (
    <div class="notebox" role="dialog" aria-label={`Review note on ${target.path} line ${target.line}`}>
      <p class="mono small">{target.path}:{target.line} — {target.text}</p>
      <label>
        <span class="sr">Note</span>
        <textarea autoFocus rows={2} value={text} onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
          onKeyDown={(e) => { if (e.key === 'Escape') onClose(); }} placeholder="What should the agent change here?" />
      </label>
      <div class="actions">
        <button type="button" disabled={busy} onClick={() => go('steer')}>Send as steer</button>
        <button type="button" disabled={busy} onClick={() => go('send')}>Send as next message</button>
        <button type="button" class="ghost" onClick={onClose}>Cancel</button>
      </div>
    </div>
  );
}
