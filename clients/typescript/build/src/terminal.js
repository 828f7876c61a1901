import { CorralError } from "./errors.js";
/**
 * One attachment to a session's terminal. Iterate it for the output; an
 * ended stream throws the supervisor's reason (runner_crashed, timeout
 * when this client fell too far behind, unavailable).
 */
export class Terminal {
    ws;
    /** The role granted: "owner" or "read-only". */
    role;
    termId;
    clientId;
    /** The terminal's size when this client attached. */
    cols;
    rows;
    queue = [];
    ended = false;
    failure;
    waiting;
    constructor(ws, opened) {
        this.ws = ws;
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
        ws.onerror = () => { };
    }
    take(data) {
        if (typeof data !== "string") {
            this.push({ output: toBytes(data) });
            return;
        }
        const f = JSON.parse(data);
        switch (f.type) {
            case "exit":
                this.push({ exit: { code: f.exitCode ?? -1, ...(f.signal ? { signal: f.signal } : {}) } });
                this.ended = true;
                break;
            case "error": {
                const e = new CorralError(f.code ?? "internal", f.message ?? "", 0);
                if (f.fatal)
                    this.fail(e);
                else
                    this.push({ notice: e });
                break;
            }
            // Frames of later versions are skipped.
        }
    }
    push(ev) {
        this.queue.push(ev);
        this.wake();
    }
    fail(err) {
        this.failure ??= err;
        this.ended = true;
        this.wake();
    }
    wake() {
        const w = this.waiting;
        this.waiting = undefined;
        w?.();
    }
    async *[Symbol.asyncIterator]() {
        for (;;) {
            const ev = this.queue.shift();
            if (ev) {
                yield ev;
                if (ev.exit)
                    return;
                continue;
            }
            if (this.ended) {
                if (this.failure)
                    throw this.failure;
                return;
            }
            await new Promise((resolve) => (this.waiting = resolve));
        }
    }
    /** Types into the terminal (only the owner's input reaches the program). */
    input(data) {
        this.ws.send(typeof data === "string" ? new TextEncoder().encode(data) : data);
    }
    /** Gives the terminal a new size (only the owner can). */
    resize(cols, rows) {
        const f = { type: "resize", cols, rows };
        this.ws.send(JSON.stringify(f));
    }
    /** Detaches; the program keeps running for others. */
    close() {
        this.ended = true;
        this.ws.close(1000, "detach");
        this.wake();
    }
}
function toBytes(data) {
    if (data instanceof Uint8Array)
        return data;
    if (data instanceof ArrayBuffer)
        return new Uint8Array(data);
    if (Array.isArray(data)) {
        // ws delivers fragmented messages as a list of buffers.
        const parts = data;
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
export function attachTerminal(WS, apiBase, headers, session, opts) {
    const termId = opts.termId ?? "main";
    const q = new URLSearchParams({ role: opts.readOnly ? "read-only" : "owner" });
    if (opts.cols)
        q.set("cols", String(opts.cols));
    if (opts.rows)
        q.set("rows", String(opts.rows));
    for (const arg of opts.command ?? [])
        q.append("command", arg);
    let url = `${apiBase}/sessions/${encodeURIComponent(session)}/terminals/${encodeURIComponent(termId)}?${q}`;
    if (url.startsWith("/")) {
        url = new URL(url, globalThis.location?.href).href;
    }
    url = url.replace(/^http/, "ws");
    const ws = new WS(url, [], { headers });
    ws.binaryType = "arraybuffer";
    return new Promise((resolve, reject) => {
        let settled = false;
        ws.onmessage = (m) => {
            if (settled)
                return;
            settled = true;
            if (typeof m.data !== "string") {
                ws.close();
                reject(new CorralError("protocol_mismatch", "the terminal stream began with output, want the opened frame"));
                return;
            }
            const f = JSON.parse(m.data);
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
        ws.onerror = () => { };
    });
}
//# sourceMappingURL=terminal.js.map