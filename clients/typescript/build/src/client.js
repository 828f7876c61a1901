import { CorralError, codeForStatus, resumable } from "./errors.js";
import { ndjsonLines, pause, reconnectFirstMs, reconnectMaxMs } from "./lines.js";
import { attachTerminal } from "./terminal.js";
/** One long poll lasts at most this long; wait asks again until done. */
const waitPollMs = 5 * 60 * 1000;
const ndjson = "application/x-ndjson";
/**
 * A client of a supervisor's HTTP API. Every failure is a CorralError
 * whose code says what went wrong.
 */
export class CorralClient {
    baseUrl;
    token;
    fetchFn;
    credentials;
    WS;
    ES;
    constructor(opts = {}) {
        this.baseUrl = (opts.baseUrl ?? "").replace(/\/$/, "");
        if (opts.token)
            this.token = opts.token;
        this.fetchFn = opts.fetch ?? globalThis.fetch.bind(globalThis);
        if (opts.credentials)
            this.credentials = opts.credentials;
        const ws = opts.WebSocket ?? globalThis.WebSocket;
        if (ws)
            this.WS = ws;
        const es = opts.EventSource ?? globalThis.EventSource;
        if (es)
            this.ES = es;
    }
    /** The URL of an API path ("/sessions" → base + "/v1/sessions"). */
    url(path) {
        return this.baseUrl + "/v1" + path;
    }
    /** Headers every request carries. */
    headers(extra = {}) {
        const h = { ...extra };
        if (this.token)
            h["Authorization"] = "Bearer " + this.token;
        return h;
    }
    /** Sends a request; a failed answer becomes a CorralError. */
    async request(method, path, body, signal, accept) {
        const headers = this.headers(accept ? { Accept: accept } : {});
        const init = { method, headers };
        if (body !== undefined) {
            headers["Content-Type"] = "application/json";
            init.body = JSON.stringify(body);
        }
        if (signal)
            init.signal = signal;
        if (this.credentials)
            init.credentials = this.credentials;
        let resp;
        try {
            resp = await this.fetchFn(this.url(path), init);
        }
        catch (err) {
            if (signal?.aborted)
                throw err;
            throw new CorralError("unavailable", `no supervisor answers at ${this.baseUrl || "this page's origin"}: ${String(err)}`);
        }
        if (resp.status >= 300) {
            throw await replyError(resp);
        }
        return resp;
    }
    async call(method, path, body, signal) {
        const resp = await this.request(method, path, body, signal);
        return (await resp.json());
    }
    /** Whether the supervisor answers, and how many sessions are live. */
    health(signal) {
        return this.call("GET", "/health", undefined, signal);
    }
    /** Creates a session; answers once its runner is live. */
    async createSession(spec, signal) {
        const r = await this.call("POST", "/sessions", spec, signal);
        return r.session;
    }
    /** Every session, most recently updated first. */
    async sessions(signal) {
        const r = await this.call("GET", "/sessions", undefined, signal);
        return r.sessions ?? [];
    }
    /** One session (starts no runner). */
    async session(id, signal) {
        const r = await this.call("GET", "/sessions/" + encodeURIComponent(id), undefined, signal);
        return r.session;
    }
    /** Stops the session's runner and removes the session. */
    async deleteSession(id, signal) {
        await this.call("DELETE", "/sessions/" + encodeURIComponent(id), undefined, signal);
    }
    /**
     * Runs a control command and returns its result, typed by the command
     * (CommandResults); a refusal throws its CorralError.
     */
    async command(id, cmd, signal) {
        const r = await this.call("POST", "/sessions/" + encodeURIComponent(id) + "/commands", cmd, signal);
        if (!r.ok) {
            throw r.error ? CorralError.from(r.error) : new CorralError("internal", "a reply with neither ok nor error");
        }
        return r.result;
    }
    /** The session's workspace: its worktree, branch, and changes against the base. */
    async workspace(id, signal) {
        const r = await this.call("GET", `/sessions/${encodeURIComponent(id)}/workspace`, undefined, signal);
        return r.workspace;
    }
    /** Commits everything in the session's workspace; answers the commit's id. */
    async commitWorkspace(id, message, signal) {
        const body = { message };
        const r = await this.call("POST", `/sessions/${encodeURIComponent(id)}/workspace/commit`, body, signal);
        return r.commit;
    }
    /** Merges the workspace's branch into its base branch (never forced). */
    async mergeWorkspace(id, signal) {
        const r = await this.call("POST", `/sessions/${encodeURIComponent(id)}/workspace/merge`, {}, signal);
        return r.result;
    }
    /**
     * Waits until the session's turn ends, it needs a person, or it is idle,
     * asking again after each long poll until then or until timeoutMs
     * passes (the reply then has met false).
     */
    async wait(id, opts = {}) {
        const end = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
        for (;;) {
            const left = end - Date.now();
            if (left < 1)
                return { ok: true, for: opts.for ?? "idle", met: false, events: [], lastSeq: 0 };
            const q = new URLSearchParams({ for: opts.for ?? "idle", timeout: `${Math.ceil(Math.min(left, waitPollMs))}ms` });
            if (opts.after !== undefined)
                q.set("after", String(opts.after));
            const r = await this.call("GET", `/sessions/${encodeURIComponent(id)}/wait?${q}`, undefined, opts.signal);
            if (r.met || end - Date.now() < 1)
                return r;
        }
    }
    /**
     * A session's events, in seq order. A followed stream (the default)
     * reconnects by itself when its connection is lost or the supervisor
     * restarts, and resumes after the last event it gave, so each event
     * comes once; it ends when the signal aborts, and throws not_found once
     * the session is deleted.
     */
    async *events(id, opts = {}) {
        const follow = opts.follow ?? true;
        let next = Math.max(opts.from ?? 1, 1);
        const path = () => `/sessions/${encodeURIComponent(id)}/events?` + new URLSearchParams({ format: "ndjson", from: String(next), follow: String(follow) });
        for await (const line of this.lines(path, follow, opts, replyEnd)) {
            const ev = JSON.parse(line);
            if (ev.seq < next)
                continue; // given before a reconnection
            next = ev.seq + 1;
            yield ev;
        }
    }
    /**
     * A session's events through an EventSource (a browser's; cookie auth),
     * which resumes by itself with Last-Event-ID. Ends when the signal
     * aborts; throws when the supervisor ends the stream (not_found once the
     * session is deleted) or refuses it.
     */
    async *eventSourceEvents(id, opts = {}) {
        if (!this.ES)
            throw new CorralError("bad_request", "no EventSource here: pass ClientOptions.EventSource");
        const q = new URLSearchParams({ from: String(Math.max(opts.from ?? 1, 1)), named: "false" });
        const es = new this.ES(this.url(`/sessions/${encodeURIComponent(id)}/events?${q}`), { withCredentials: this.credentials === "include" });
        const queue = new Queue();
        es.onmessage = (m) => {
            const v = JSON.parse(m.data);
            if ("ok" in v) {
                queue.fail(v.error ? CorralError.from(v.error) : new CorralError("internal", "the stream ended"));
            }
            else {
                queue.push(v);
            }
        };
        es.onerror = () => {
            // An EventSource reconnects by itself unless the answer was final.
            if (es.readyState === 2)
                queue.fail(new CorralError("unavailable", "the event stream was refused or closed"));
        };
        const onAbort = () => {
            es.close();
            queue.end();
        };
        opts.signal?.addEventListener("abort", onAbort, { once: true });
        let next = Math.max(opts.from ?? 1, 1);
        try {
            for await (const ev of queue) {
                if (ev.seq < next)
                    continue;
                next = ev.seq + 1;
                yield ev;
            }
        }
        finally {
            es.close();
            opts.signal?.removeEventListener("abort", onAbort);
        }
    }
    /**
     * Every session's events and lifecycle changes on one stream. It
     * reconnects by itself and resumes after the last cursor it gave; an
     * event repeated across a reconnection is dropped. A streamReset item
     * says items were lost (see api.md): read what was missed from each
     * session's own stream.
     */
    async *feed(opts = {}) {
        let from = opts.from ?? "now";
        const last = new Map();
        const path = () => {
            const q = new URLSearchParams({ format: "ndjson", from });
            for (const s of opts.sessions ?? [])
                q.append("session", s);
            for (const t of opts.types ?? [])
                q.append("type", t);
            return "/events?" + q;
        };
        for await (const line of this.lines(path, true, opts, feedEnd)) {
            const it = JSON.parse(line);
            if (it.cursor)
                from = it.cursor;
            if (it.event && it.session) {
                const seen = last.get(it.session) ?? 0;
                if (it.event.seq <= seen)
                    continue;
                last.set(it.session, it.event.seq);
            }
            yield it;
        }
    }
    /** Attaches to a terminal of a session over a WebSocket. */
    attachTerminal(id, opts = {}) {
        if (!this.WS)
            throw new CorralError("bad_request", "no WebSocket here: pass ClientOptions.WebSocket (in Node, the ws package's)");
        return attachTerminal(this.WS, this.url(""), this.headers(), id, opts);
    }
    /**
     * The lines of an NDJSON stream. When follow is set, a lost connection
     * (or a supervisor stopping) is reopened with path() as it is then,
     * pausing 50 ms, doubling to 2 s; the first request's failure, and the
     * supervisor's refusals, are thrown.
     */
    async *lines(path, follow, opts, end) {
        let wait = reconnectFirstMs;
        let lost;
        let first = true;
        for (;;) {
            let resp;
            try {
                resp = await this.request("GET", path(), undefined, opts.signal, ndjson);
            }
            catch (err) {
                if (first || !follow || opts.signal?.aborted || !resumable(err))
                    throw err;
            }
            first = false;
            if (resp?.body) {
                if (lost !== undefined)
                    opts.onReconnect?.(undefined);
                lost = undefined;
                wait = reconnectFirstMs;
                try {
                    for await (const line of ndjsonLines(resp.body)) {
                        const e = end(line);
                        if (e)
                            throw e;
                        yield line;
                    }
                    if (!follow)
                        return;
                    lost = new CorralError("unavailable", "the supervisor ended the stream");
                }
                catch (err) {
                    if (opts.signal?.aborted)
                        return;
                    if (!follow || !resumable(err))
                        throw err;
                    lost = err;
                }
                opts.onReconnect?.(lost);
            }
            try {
                await pause(wait, opts.signal);
            }
            catch {
                return; // aborted
            }
            wait = Math.min(2 * wait, reconnectMaxMs);
        }
    }
}
/** Rebuilds the supervisor's error from a failed answer. */
async function replyError(resp) {
    const text = await resp.text().catch(() => "");
    try {
        const r = JSON.parse(text);
        if (r.error)
            return CorralError.from(r.error, resp.status);
    }
    catch {
        // not JSON: say what came
    }
    return new CorralError(codeForStatus(resp.status), `supervisor answered ${resp.status}: ${text.slice(0, 200)}`, resp.status);
}
/** A session stream's end: a failed reply, which has no seq. */
function replyEnd(line) {
    if (!line.startsWith('{"ok":false'))
        return undefined;
    const r = JSON.parse(line);
    return r.error ? CorralError.from(r.error) : undefined;
}
/** The multiplexed stream's end: a streamEnded mark. */
function feedEnd(line) {
    if (!line.includes('"streamEnded"'))
        return undefined;
    const it = JSON.parse(line);
    return it.stream?.type === "streamEnded" && it.stream.error ? CorralError.from(it.stream.error) : undefined;
}
/** An async queue fed by callbacks. */
class Queue {
    items = [];
    waiting;
    done = false;
    err;
    push(v) {
        this.items.push(v);
        this.wake();
    }
    fail(err) {
        this.err ??= err;
        this.done = true;
        this.wake();
    }
    end() {
        this.done = true;
        this.wake();
    }
    wake() {
        const w = this.waiting;
        this.waiting = undefined;
        w?.();
    }
    async *[Symbol.asyncIterator]() {
        for (;;) {
            const v = this.items.shift();
            if (v !== undefined) {
                yield v;
                continue;
            }
            if (this.done) {
                if (this.err !== undefined)
                    throw this.err;
                return;
            }
            await new Promise((resolve) => (this.waiting = resolve));
        }
    }
}
//# sourceMappingURL=client.js.map