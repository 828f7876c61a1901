import { CorralError } from "./errors.js";
import type { TermFrame } from "./types.gen.js";

/** The part of the WebSocket API a terminal uses: the browser's, or ws's. */
export interface WebSocketLike {
  binaryType: string;
  readyState: number;
  send(data: string | ArrayBuffer | Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
}

/**
 * A WebSocket class. The third argument carries headers for
 * implementations that take them (the ws package); a browser ignores it
 * (its cookies authenticate instead).
 */
export type WebSocketConstructor = new (url: string, protocols?: string | string[], opts?: { headers?: Record<string, string> }) => WebSocketLike;

/** Which terminal to attach to, and how. */
export interface TermOptions {
  /** The terminal's id (default "main"); clients of one id share a program. */
  termId?: string;
  /** Ask for a viewer's seat; otherwise ownership is asked for. */
  readOnly?: boolean;
  /** Size a new terminal, or resize a running one as its owner. */
  cols?: number;
  rows?: number;
  /** A new terminal's program (default: the user's shell). */
  command?: string[];
}

/** One thing a terminal's stream delivers; exactly one field is set. */
export interface TermEvent {
  /** The program's output. */
  output?: Uint8Array;
  /** An input or resize the supervisor refused; the stream goes on. */
  notice?: CorralError;
  /** The program ended (code -1 and the signal's name when a signal did); the stream ends. */
  exit?: { code: number; signal?: string };
}

/**
 * One attachment to a session's terminal. Iterate it for the output; an
 * ended stream throws the supervisor's reason (runner_crashed, timeout
 * when this client fell too far behind, unavailable).
 */
export class Terminal implements AsyncIterable<TermEvent> {
  /** The role granted: "owner" or "read-only". */
  readonly role: string;
  readonly termId: string;
  readonly clientId: string;
  /** The terminal's size when this client attached. */
  readonly cols: number;
  readonly rows: number;

  private queue: TermEvent[] = [];
  private ended = false;
  private failure?: CorralError;
  private waiting?: () => void;

  constructor(private ws: WebSocketLike, opened: TermFrame) {
    this.role = opened.role ?? "";
    this.termId = opened.termId ?? "";
    this.clientId = opened.clientId ?? "";
    this.cols = opened.cols ?? 0;
    this.rows = opened.rows ?? 0;
    ws.onmessage = (m) => this.take(m.data);
    ws.onclose = (c) => {
      if (!this.ended) {
        this.fail(new CorralError("unavailable", `the supervisor closed the terminal stream (status ${c.code} ${c.reason})`));
      }
    };
    ws.onerror = () => {};
  }

  private take(data: unknown): void {
    if (typeof data !== "string") {
      this.push({ output: toBytes(data) });
      return;
    }
    const f = JSON.parse(data) as TermFrame;
    switch (f.type) {
      case "exit":
        this.push({ exit: { code: f.exitCode ?? -1, ...(f.signal ? { signal: f.signal } : {}) } });
        this.ended = true;
        break;
      case "error": {
        const e = new CorralError(f.code ?? "internal", f.message ?? "", 0);
        if (f.fatal) this.fail(e);
        else this.push({ notice: e });
        break;
      }
      // Frames of later versions are skipped.
    }
  }

  private push(ev: TermEvent): void {
    this.queue.push(ev);
    this.wake();
  }

  private fail(err: CorralError): void {
    this.failure ??= err;
    this.ended = true;
    this.wake();
  }

  private wake(): void {
    const w = this.waiting;
    this.waiting = undefined;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<TermEvent> {
    for (;;) {
      const ev = this.queue.shift();
      if (ev) {
        yield ev;
        if (ev.exit) return;
        continue;
      }
      if (this.ended) {
        if (this.failure) throw this.failure;
        return;
      }
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }

  /** Types into the terminal (only the owner's input reaches the program). */
  input(data: string | Uint8Array): void {
    this.ws.send(typeof data === "string" ? new TextEncoder().encode(data) : data);
  }

  /** Gives the terminal a new size (only the owner can). */
  resize(cols: number, rows: number): void {
    const f: TermFrame = { type: "resize", cols, rows };
    this.ws.send(JSON.stringify(f));
  }

  /** Detaches; the program keeps running for others. */
  close(): void {
    this.ended = true;
    this.ws.close(1000, "detach");
    this.wake();
  }
}

function toBytes(data: unknown): Uint8Array {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (Array.isArray(data)) {
    // ws delivers fragmented messages as a list of buffers.
    const parts = data as Uint8Array[];
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }
  throw new CorralError("protocol_mismatch", "a terminal frame of an unknown kind");
}

/** Opens the WebSocket and waits for the opened frame. */
export function attachTerminal(
  WS: WebSocketConstructor,
  apiBase: string,
  headers: Record<string, string>,
  session: string,
  opts: TermOptions,
): Promise<Terminal> {
  const termId = opts.termId ?? "main";
  const q = new URLSearchParams({ role: opts.readOnly ? "read-only" : "owner" });
  if (opts.cols) q.set("cols", String(opts.cols));
  if (opts.rows) q.set("rows", String(opts.rows));
  for (const arg of opts.command ?? []) q.append("command", arg);
  let url = `${apiBase}/sessions/${encodeURIComponent(session)}/terminals/${encodeURIComponent(termId)}?${q}`;
  if (url.startsWith("/")) {
    url = new URL(url, (globalThis as { location?: { href: string } }).location?.href).href;
  }
  url = url.replace(/^http/, "ws");
  const ws = new WS(url, [], { headers });
  ws.binaryType = "arraybuffer";
  return new Promise((resolve, reject) => {
    let settled = false;
    ws.onmessage = (m) => {
      if (settled) return;
      settled = true;
      if (typeof m.data !== "string") {
        ws.close();
        reject(new CorralError("protocol_mismatch", "the terminal stream began with output, want the opened frame"));
        return;
      }
      const f = JSON.parse(m.data) as TermFrame;
      if (f.type !== "opened") {
        ws.close();
        reject(f.type === "error" ? new CorralError(f.code ?? "internal", f.message ?? "") : new CorralError("protocol_mismatch", `the terminal stream began with ${f.type}`));
        return;
      }
      resolve(new Terminal(ws, f));
    };
    ws.onclose = (c) => {
      if (!settled) {
        settled = true;
        reject(new CorralError("unavailable", `the terminal of session ${session} could not be attached (status ${c.code} ${c.reason})`));
      }
    };
    ws.onerror = () => {};
  });
}
