// The session's terminal in xterm.js over the terminal WebSocket
// (docs/api.md, Terminals): as its owner or a read-only viewer, resized
// with the pane, and attached again after a lost connection (the
// scrollback replay redraws the screen).
import { useEffect, useRef, useState } from 'preact/hooks';
import { Terminal } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import '@xterm/xterm/css/xterm.css';

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
    let ws: WebSocket | undefined;
    let stopped = false;
    let retry = 0;
    let timer = 0;
    const enc = new TextEncoder();

    const connect = () => {
      setConn('connecting');
      const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
      const q = new URLSearchParams({ role, cols: String(term.cols), rows: String(term.rows) });
      ws = new WebSocket(`${proto}//${location.host}/v1/sessions/${id}/terminals/main?${q}`);
      ws.binaryType = 'arraybuffer';
      let exited = false;
      ws.onmessage = (m) => {
        if (typeof m.data === 'string') {
          const f = JSON.parse(m.data);
          if (f.type === 'opened') {
            // The replay that follows redraws the screen from scratch.
            term.reset();
            retry = 0;
            setGranted(f.role);
            setConn('open');
            setNote(f.role !== role ? 'Another client owns this terminal: you watch it read-only.' : undefined);
          } else if (f.type === 'exit') {
            exited = true;
            setConn('exited');
            setNote(`The program exited${f.signal ? ` (${f.signal})` : ` with status ${f.exitCode}`}. Reconnect to start a new one.`);
          } else if (f.type === 'error') {
            setNote(`${f.code}: ${f.message}`);
          }
          return;
        }
        term.write(new Uint8Array(m.data as ArrayBuffer));
      };
      ws.onclose = () => {
        if (stopped || exited) return;
        setConn('closed');
        retry++;
        timer = window.setTimeout(connect, Math.min(4000, 250 * 2 ** retry));
      };
    };
    const input = term.onData((d) => {
      if (ws?.readyState === WebSocket.OPEN) ws.send(enc.encode(d));
    });
    const ro = new ResizeObserver(() => {
      fit.fit();
    });
    ro.observe(host.current!);
    const resize = term.onResize(({ cols, rows }) => {
      if (ws?.readyState === WebSocket.OPEN && role === 'owner') ws.send(JSON.stringify({ type: 'resize', cols, rows }));
    });
    connect();
    term.focus();
    return () => {
      stopped = true;
      clearTimeout(timer);
      ro.disconnect();
      input.dispose();
      resize.dispose();
      ws?.close();
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
