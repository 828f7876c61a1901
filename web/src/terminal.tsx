// The session's terminal in xterm.js over the terminal WebSocket
// (docs/api.md, Terminals), attached through the client: as its owner or a
// read-only viewer, resized with the pane, and attached again after a lost
// connection (the scrollback replay redraws the screen).
import { useEffect, useRef, useState } from 'preact/hooks';
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';
import { client, type TerminalAttachment as Attachment } from './api';
import { errorText } from './util';

type Conn = 'connecting' | 'open' | 'closed' | 'exited';

export function TerminalPane({ id }: { id: string }) {
  const host = useRef<HTMLDivElement>(null);
  const [role, setRole] = useState<'owner' | 'read-only'>('owner');
  const [granted, setGranted] = useState<string>();
  const [conn, setConn] = useState<Conn>('connecting');
  const [note, setNote] = useState<string>();
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const dark = document.documentElement.dataset.theme === 'dark';
    const term = new Terminal({
      convertEol: false,
      cursorBlink: true,
      fontFamily: 'ui-monospace, SFMono-Regular, Menlo, Consolas, monospace',
      fontSize: 13,
      scrollback: 5000,
      screenReaderMode: false,
      theme: dark ? { background: '#111418', foreground: '#e6e6e6' } : { background: '#fbfbfb', foreground: '#1b1b1b', cursor: '#1b1b1b', selectionBackground: '#b3d4fc' },
    });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(host.current!);
    fit.fit();
    let attached: Attachment | undefined;
    let stopped = false;
    let retry = 0;
    let timer = 0;

    const again = () => {
      setConn('closed');
      retry++;
      timer = window.setTimeout(connect, Math.min(4000, 250 * 2 ** retry));
    };
    const connect = async () => {
      setConn('connecting');
      let t: Attachment;
      try {
        t = await client.attachTerminal(id, { readOnly: role === 'read-only', cols: term.cols, rows: term.rows });
      } catch (e) {
        if (stopped) return;
        setNote(errorText(e));
        again();
        return;
      }
      if (stopped) {
        t.close();
        return;
      }
      // The replay that follows redraws the screen from scratch.
      attached = t;
      term.reset();
      retry = 0;
      setGranted(t.role);
      setConn('open');
      setNote(t.role !== role ? 'Another client owns this terminal: you watch it read-only.' : undefined);
      let exited = false;
      try {
        for await (const ev of t) {
          if (ev.output) term.write(ev.output);
          else if (ev.notice) setNote(`${ev.notice.code}: ${ev.notice.message}`);
          else if (ev.exit) {
            exited = true;
            setConn('exited');
            setNote(`The program exited${ev.exit.signal ? ` (${ev.exit.signal})` : ` with status ${ev.exit.code}`}. Reconnect to start a new one.`);
          }
        }
      } catch (e) {
        if (!stopped) setNote(errorText(e));
      }
      attached = undefined;
      if (!stopped && !exited) again();
    };
    const input = term.onData((d) => attached?.input(d));
    const ro = new ResizeObserver(() => {
      fit.fit();
    });
    ro.observe(host.current!);
    const resize = term.onResize(({ cols, rows }) => {
      if (attached?.role === 'owner') attached.resize(cols, rows);
    });
    connect();
    term.focus();
    return () => {
      stopped = true;
      clearTimeout(timer);
      ro.disconnect();
      input.dispose();
      resize.dispose();
      attached?.close();
      term.dispose();
    };
  }, [id, role, attempt]);

  return (
    <section class="terminal-pane" aria-label="Terminal">
      <div class="term-bar">
        <span class={`conn ${conn === 'open' ? 'ok' : 'bad'}`} data-testid="term-state">
          {conn === 'open' ? `attached (${granted})` : conn}
        </span>
        <span class="seg" role="group" aria-label="Terminal role">
          <button type="button" aria-pressed={role === 'owner'} class={role === 'owner' ? 'on' : ''} onClick={() => setRole('owner')}>Owner</button>
          <button type="button" aria-pressed={role === 'read-only'} class={role === 'read-only' ? 'on' : ''} onClick={() => setRole('read-only')}>Read-only</button>
        </span>
        <button type="button" class="ghost" onClick={() => setAttempt(attempt + 1)}>Reconnect</button>
        {note && <span class="hint" role="status">{note}</span>}
      </div>
      <div class="term-host" ref={host} data-testid="terminal" />
    </section>
  );
}
