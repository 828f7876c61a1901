import { CorralError, codeForStatus, resumable } from "./errors.js";
import { ndjsonLines, pause, reconnectFirstMs, reconnectMaxMs } from "./lines.js";
import { attachTerminal, type TermOptions, type Terminal, type WebSocketConstructor } from "./terminal.js";
import type {
  Command,
  CommandResults,
  CommitReply,
  CommitRequest,
  CredentialsReply,
  EnginesReply,
  SetCredentialRequest,
  MergeReply,
  MergeResult,
  NextResponse,
  OpenRequest,
  OpenResponse,
  RetryBody,
  RetryResponse,
  RunEvent,
  RunStatus,
  StatusResponse,
  SubmitBody,
  Summary,
  Verdict,
  VerdictResponse,
  WorkspaceReply,
  WorkspaceStatus,
  FeedItem,
  ErrorReply,
  HealthReply,
  LoginCodeReply,
  Reply,
  Session,
  SessionEvent,
  SessionReply,
  SessionsReply,
  SignInReply,
  SignInRequest,
  Spec,
  TicketReply,
  WaitFor,
  WaitReply,
} from "./types.gen.js";

/** How to reach a supervisor. */
export interface ClientOptions {
  /**
   * The supervisor's address, "http://127.0.0.1:7777"; empty in a page the
   * supervisor serves (same origin).
   */
  baseUrl?: string;
  /** The bearer token a supervisor on TCP wants (not in a browser page). */
  token?: string;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /** RequestInit.credentials for every request ("include" for cookie auth). */
  credentials?: RequestCredentials;
  /**
   * The WebSocket class for terminals (default: the global one). In Node,
   * pass the `ws` package's, which can send the bearer token.
   */
  WebSocket?: WebSocketConstructor;
  /** The EventSource class for eventSourceEvents (default: the global one). */
  EventSource?: EventSourceConstructor;
}

/** An EventSource class: the browser's, or a package's in Node. */
export type EventSourceConstructor = new (url: string, init?: { withCredentials?: boolean }) => EventSource;

/** What a stream of a session's events starts from and how long it lasts. */
export interface EventsOptions {
  /** The first seq wanted (0 or 1: from the start). */
  from?: number;
  /** Keep following live events (default true). */
  follow?: boolean;
  /** Ends the stream. */
  signal?: AbortSignal;
  /**
   * Told when a followed stream loses its connection (lost is why) and
   * when it has resumed (lost is undefined).
   */
  onReconnect?: (lost: unknown) => void;
  /**
   * Told each time the supervisor's answer has come, the first time and
   * after each reconnection, before any item it carries: from then on
   * nothing is missed, so a shell reads its snapshot here.
   */
  onOpen?: () => void;
}

/** What the multiplexed stream carries (GET /v1/events). */
export interface FeedOptions {
  /** Only these sessions (every session when absent). */
  sessions?: string[];
  /** Only these event and lifecycle types. */
  types?: string[];
  /** "now" (default), "start" (every log first), or a cursor to resume after. */
  from?: string;
  signal?: AbortSignal;
  onReconnect?: (lost: unknown) => void;
  /** As for EventsOptions: told each time the stream has (re)opened. */
  onOpen?: () => void;
}

/** What wait waits for. */
export interface WaitOptions {
  /** turnEnd, human or idle (default idle). */
  for?: WaitFor;
  /** turnEnd: the first turnEnded past this seq. */
  after?: number;
  /** Give up after this many milliseconds: the reply then has met false. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What engines asks the supervisor for beyond its kept answer. */
export interface EnginesOptions {
  /** Check again now. */
  refresh?: boolean;
  /** Also try each credential against modelEndpoint (or each engine's own): network traffic. */
  accepted?: boolean;
  modelEndpoint?: string;
  signal?: AbortSignal;
}

/** One long poll lasts at most this long; wait asks again until done. */
const waitPollMs = 5 * 60 * 1000;

const ndjson = "application/x-ndjson";

/**
 * A client of a supervisor's HTTP API. Every failure is a CorralError
 * whose code says what went wrong.
 */
export class CorralClient {
  readonly baseUrl: string;
  private readonly token?: string;
  private readonly fetchFn: typeof fetch;
  private readonly credentials?: RequestCredentials;
  private readonly WS?: WebSocketConstructor;
  private readonly ES?: EventSourceConstructor;

  constructor(opts: ClientOptions = {}) {
    this.baseUrl = (opts.baseUrl ?? "").replace(/\/$/, "");
    if (opts.token) this.token = opts.token;
    this.fetchFn = opts.fetch ?? globalThis.fetch.bind(globalThis);
    if (opts.credentials) this.credentials = opts.credentials;
    const ws = opts.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    if (ws) this.WS = ws;
    const es = opts.EventSource ?? (globalThis as { EventSource?: EventSourceConstructor }).EventSource;
    if (es) this.ES = es;
  }

  /** The URL of an API path ("/sessions" → base + "/v1/sessions"). */
  url(path: string): string {
    return this.baseUrl + "/v1" + path;
  }

  /** Headers every request carries. */
  headers(extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { ...extra };
    if (this.token) h["Authorization"] = "Bearer " + this.token;
    return h;
  }

  /** Sends a request; a failed answer becomes a CorralError. */
  private async request(method: string, path: string, body?: unknown, signal?: AbortSignal, accept?: string): Promise<Response> {
    const headers = this.headers(accept ? { Accept: accept } : {});
    const init: RequestInit = { method, headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    if (signal) init.signal = signal;
    if (this.credentials) init.credentials = this.credentials;
    let resp: Response;
    try {
      resp = await this.fetchFn(this.url(path), init);
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new CorralError("unavailable", `no supervisor answers at ${this.baseUrl || "this page's origin"}: ${String(err)}`);
    }
    if (resp.status >= 300) {
      throw await replyError(resp);
    }
    return resp;
  }

  private async call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const resp = await this.request(method, path, body, signal);
    return (await resp.json()) as T;
  }

  /** Whether the supervisor answers, and how many sessions are live. */
  health(signal?: AbortSignal): Promise<HealthReply> {
    return this.call<HealthReply>("GET", "/health", undefined, signal);
  }

  /** Creates a session; answers once its runner is live. */
  async createSession(spec: Omit<Spec, "id">, signal?: AbortSignal): Promise<Session> {
    const r = await this.call<SessionReply>("POST", "/sessions", spec, signal);
    return r.session as Session;
  }

  /** Every session, most recently updated first. */
  async sessions(signal?: AbortSignal): Promise<Session[]> {
    const r = await this.call<SessionsReply>("GET", "/sessions", undefined, signal);
    return r.sessions ?? [];
  }

  /** One session (starts no runner). */
  async session(id: string, signal?: AbortSignal): Promise<Session> {
    const r = await this.call<SessionReply>("GET", "/sessions/" + encodeURIComponent(id), undefined, signal);
    return r.session as Session;
  }

  /** Stops the session's runner and removes the session. */
  async deleteSession(id: string, signal?: AbortSignal): Promise<void> {
    await this.call<Reply>("DELETE", "/sessions/" + encodeURIComponent(id), undefined, signal);
  }

  /**
   * Runs a control command and returns its result, typed by the command
   * (CommandResults); a refusal throws its CorralError. The command carries
   * its own requestId, or a new random one: to retry a command whose fate
   * is unknown (a lost connection), pass the same requestId again and the
   * session acts once.
   */
  async command<C extends Command>(id: string, cmd: C, signal?: AbortSignal): Promise<CommandResults[C["cmd"]]> {
    const body = cmd.requestId ? cmd : { ...cmd, requestId: newRequestId() };
    const r = await this.call<Reply>("POST", "/sessions/" + encodeURIComponent(id) + "/commands", body, signal);
    if (!r.ok) {
      throw r.error ? CorralError.from(r.error) : new CorralError("internal", "a reply with neither ok nor error");
    }
    return r.result as CommandResults[C["cmd"]];
  }

  /** The session's workspace: its worktree, branch, and changes against the base. */
  async workspace(id: string, signal?: AbortSignal): Promise<WorkspaceStatus> {
    const r = await this.call<WorkspaceReply>("GET", `/sessions/${encodeURIComponent(id)}/workspace`, undefined, signal);
    return r.workspace as WorkspaceStatus;
  }

  /** Commits everything in the session's workspace; answers the commit's id. */
  async commitWorkspace(id: string, message: string, signal?: AbortSignal): Promise<string> {
    const body: CommitRequest = { message };
    const r = await this.call<CommitReply>("POST", `/sessions/${encodeURIComponent(id)}/workspace/commit`, body, signal);
    return r.commit;
  }

  /** Merges the workspace's branch into its base branch (never forced). */
  async mergeWorkspace(id: string, signal?: AbortSignal): Promise<MergeResult> {
    const r = await this.call<MergeReply>("POST", `/sessions/${encodeURIComponent(id)}/workspace/merge`, {}, signal);
    return r.result as MergeResult;
  }

  /**
   * Signs this browser in (docs/api.md, Browser access): with the client's
   * bearer token, or with a one-time login code from the owner. The session
   * cookie comes in Set-Cookie (HttpOnly); the reply says when it expires.
   */
  signIn(code?: string, signal?: AbortSignal): Promise<SignInReply> {
    const body: SignInRequest = code ? { code } : {};
    return this.call<SignInReply>("POST", "/auth/session", body, signal);
  }

  /** Signs this browser out: its session cookie is revoked and cleared. */
  async signOut(signal?: AbortSignal): Promise<void> {
    await this.call<Reply>("DELETE", "/auth/session", undefined, signal);
  }

  /** A short-lived single-use ticket for one event stream or terminal WebSocket (?ticket=). */
  ticket(signal?: AbortSignal): Promise<TicketReply> {
    return this.call<TicketReply>("POST", "/auth/ticket", undefined, signal);
  }

  /** Mints a one-time login code (needs the bearer token) a page exchanges once for a session cookie. */
  loginCode(signal?: AbortSignal): Promise<LoginCodeReply> {
    return this.call<LoginCodeReply>("POST", "/auth/code", undefined, signal);
  }

  /** Opens a graph run on a request (docs/graph.md); answers its id and first ready nodes. */
  openGraph(req: OpenRequest, signal?: AbortSignal): Promise<OpenResponse> {
    return this.call<OpenResponse>("POST", "/graphs", req, signal);
  }

  /** Every graph run, with the nodes running now and the last to finish. */
  async graphs(signal?: AbortSignal): Promise<Summary[]> {
    const r = await this.call<StatusResponse>("GET", "/graphs", undefined, signal);
    return r.runs ?? [];
  }

  /** One graph run's status. */
  async graph(run: string, signal?: AbortSignal): Promise<RunStatus> {
    const r = await this.call<StatusResponse>("GET", `/graphs/${encodeURIComponent(run)}`, undefined, signal);
    return r.run as RunStatus;
  }

  /** The nodes that may run now and how each would be routed, what runs, what is blocked. */
  graphNext(run: string, signal?: AbortSignal): Promise<NextResponse> {
    return this.call<NextResponse>("GET", `/graphs/${encodeURIComponent(run)}/next`, undefined, signal);
  }

  /** Runs one node to its verdict in the supervisor; the request lasts as long as the node. */
  async runNode(run: string, node: string, signal?: AbortSignal): Promise<Verdict> {
    const r = await this.call<VerdictResponse>("POST", `/graphs/${encodeURIComponent(run)}/nodes/${encodeURIComponent(node)}/run`, undefined, signal);
    return r.verdict as Verdict;
  }

  /** Submits the result of a node the caller ran itself. */
  async submitNode(run: string, node: string, body: SubmitBody, signal?: AbortSignal): Promise<Verdict> {
    const r = await this.call<VerdictResponse>("POST", `/graphs/${encodeURIComponent(run)}/nodes/${encodeURIComponent(node)}/submit`, body, signal);
    return r.verdict as Verdict;
  }

  /** Retries a failure (a subgoal; none: the spec; "report"), or settles it when the budget is gone. */
  retryGraph(run: string, subgoal?: string, signal?: AbortSignal): Promise<RetryResponse> {
    const body: RetryBody = subgoal === undefined ? {} : { subgoal };
    return this.call<RetryResponse>("POST", `/graphs/${encodeURIComponent(run)}/retry`, body, signal);
  }

  /**
   * A graph run's events, in seq order; a followed stream (the default)
   * reconnects and resumes like events(), and ends after the event that
   * ends the run (runComplete, runBlocked).
   */
  async *graphEvents(run: string, opts: EventsOptions = {}): AsyncGenerator<RunEvent> {
    const follow = opts.follow ?? true;
    let next = Math.max(opts.from ?? 1, 1);
    const path = () => `/graphs/${encodeURIComponent(run)}/events?` + new URLSearchParams({ format: "ndjson", from: String(next), follow: String(follow) });
    for await (const line of this.lines(path, follow, opts, replyEnd)) {
      const ev = JSON.parse(line) as RunEvent;
      if (ev.seq < next) continue; // given before a reconnection
      next = ev.seq + 1;
      yield ev;
      if (ev.type === "runComplete" || ev.type === "runBlocked") return;
    }
  }

  /**
   * The engines a session may run on: their models and settings, and
   * whether a session on each could start (GET /v1/engines).
   */
  engines(opts: EnginesOptions = {}): Promise<EnginesReply> {
    const q = new URLSearchParams();
    if (opts.refresh) q.set("refresh", "true");
    if (opts.accepted) q.set("check", "accepted");
    if (opts.modelEndpoint) q.set("modelEndpoint", opts.modelEndpoint);
    const query = q.size > 0 ? "?" + q.toString() : "";
    return this.call<EnginesReply>("GET", "/engines" + query, undefined, opts.signal);
  }

  /** Where the supervisor keeps credentials, and which items are set (never a secret). */
  listCredentials(signal?: AbortSignal): Promise<CredentialsReply> {
    return this.call<CredentialsReply>("GET", "/credentials", undefined, signal);
  }

  /** Stores a credential item's secret; the reply says it is set, never what it is. */
  setCredential(item: string, secret: string, signal?: AbortSignal): Promise<CredentialsReply> {
    const body: SetCredentialRequest = { secret };
    return this.call<CredentialsReply>("PUT", "/credentials/" + encodeURIComponent(item), body, signal);
  }

  /** Removes a credential item (not_found when it is not set). */
  deleteCredential(item: string, signal?: AbortSignal): Promise<CredentialsReply> {
    return this.call<CredentialsReply>("DELETE", "/credentials/" + encodeURIComponent(item), undefined, signal);
  }

  /**
   * Waits until the session's turn ends, it needs a person, or it is idle,
   * asking again after each long poll until then or until timeoutMs
   * passes (the reply then has met false).
   */
  async wait(id: string, opts: WaitOptions = {}): Promise<WaitReply> {
    const end = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
    for (;;) {
      const left = end - Date.now();
      if (left < 1) return { ok: true, for: opts.for ?? "idle", met: false, events: [], lastSeq: 0 };
      const q = new URLSearchParams({ for: opts.for ?? "idle", timeout: `${Math.ceil(Math.min(left, waitPollMs))}ms` });
      if (opts.after !== undefined) q.set("after", String(opts.after));
      const r = await this.call<WaitReply>("GET", `/sessions/${encodeURIComponent(id)}/wait?${q}`, undefined, opts.signal);
      if (r.met || end - Date.now() < 1) return r;
    }
  }

  /**
   * A session's events, in seq order. A followed stream (the default)
   * reconnects by itself when its connection is lost or the supervisor
   * restarts, and resumes after the last event it gave, so each event
   * comes once; it ends when the signal aborts, and throws not_found once
   * the session is deleted.
   */
  async *events(id: string, opts: EventsOptions = {}): AsyncGenerator<SessionEvent> {
    const follow = opts.follow ?? true;
    let next = Math.max(opts.from ?? 1, 1);
    const path = () => `/sessions/${encodeURIComponent(id)}/events?` + new URLSearchParams({ format: "ndjson", from: String(next), follow: String(follow) });
    for await (const line of this.lines(path, follow, opts, replyEnd)) {
      const ev = JSON.parse(line) as SessionEvent;
      if (ev.seq < next) continue; // given before a reconnection
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
  async *eventSourceEvents(id: string, opts: { from?: number; signal?: AbortSignal } = {}): AsyncGenerator<SessionEvent> {
    if (!this.ES) throw new CorralError("bad_request", "no EventSource here: pass ClientOptions.EventSource");
    const q = new URLSearchParams({ from: String(Math.max(opts.from ?? 1, 1)), named: "false" });
    const es = new this.ES(this.url(`/sessions/${encodeURIComponent(id)}/events?${q}`), { withCredentials: this.credentials === "include" });
    const queue = new Queue<SessionEvent>();
    es.onmessage = (m: MessageEvent) => {
      const v = JSON.parse(m.data as string) as SessionEvent | Reply;
      if ("ok" in v) {
        queue.fail(v.error ? CorralError.from(v.error) : new CorralError("internal", "the stream ended"));
      } else {
        queue.push(v);
      }
    };
    es.onerror = () => {
      // An EventSource reconnects by itself unless the answer was final.
      if (es.readyState === 2) queue.fail(new CorralError("unavailable", "the event stream was refused or closed"));
    };
    const onAbort = () => {
      es.close();
      queue.end();
    };
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    let next = Math.max(opts.from ?? 1, 1);
    try {
      for await (const ev of queue) {
        if (ev.seq < next) continue;
        next = ev.seq + 1;
        yield ev;
      }
    } finally {
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
  async *feed(opts: FeedOptions = {}): AsyncGenerator<FeedItem> {
    let from = opts.from ?? "now";
    const last = new Map<string, number>();
    const path = () => {
      const q = new URLSearchParams({ format: "ndjson", from });
      for (const s of opts.sessions ?? []) q.append("session", s);
      for (const t of opts.types ?? []) q.append("type", t);
      return "/events?" + q;
    };
    for await (const line of this.lines(path, true, opts, feedEnd)) {
      const it = JSON.parse(line) as FeedItem;
      if (it.cursor) from = it.cursor;
      if (it.event && it.session) {
        const seen = last.get(it.session) ?? 0;
        if (it.event.seq <= seen) continue;
        last.set(it.session, it.event.seq);
      }
      yield it;
    }
  }

  /** Attaches to a terminal of a session over a WebSocket. */
  attachTerminal(id: string, opts: TermOptions = {}): Promise<Terminal> {
    if (!this.WS) throw new CorralError("bad_request", "no WebSocket here: pass ClientOptions.WebSocket (in Node, the ws package's)");
    return attachTerminal(this.WS, this.url(""), this.headers(), id, opts);
  }

  /**
   * The lines of an NDJSON stream. When follow is set, a lost connection
   * (or a supervisor stopping) is reopened with path() as it is then,
   * pausing 50 ms, doubling to 2 s; the first request's failure, and the
   * supervisor's refusals, are thrown.
   */
  private async *lines(
    path: () => string,
    follow: boolean,
    opts: { signal?: AbortSignal; onReconnect?: (lost: unknown) => void; onOpen?: () => void },
    end: (line: string) => CorralError | undefined,
  ): AsyncGenerator<string> {
    let wait = reconnectFirstMs;
    let lost: unknown;
    let first = true;
    for (;;) {
      let resp: Response | undefined;
      try {
        resp = await this.request("GET", path(), undefined, opts.signal, ndjson);
      } catch (err) {
        if (first || !follow || opts.signal?.aborted || !resumable(err)) throw err;
      }
      first = false;
      if (resp?.body) {
        if (lost !== undefined) opts.onReconnect?.(undefined);
        lost = undefined;
        opts.onOpen?.();
        wait = reconnectFirstMs;
        try {
          for await (const line of ndjsonLines(resp.body)) {
            const e = end(line);
            if (e) throw e;
            yield line;
          }
          if (!follow) return;
          lost = new CorralError("unavailable", "the supervisor ended the stream");
        } catch (err) {
          if (opts.signal?.aborted) return;
          if (!follow || !resumable(err)) throw err;
          lost = err;
        }
        opts.onReconnect?.(lost);
      }
      try {
        await pause(wait, opts.signal);
      } catch {
        return; // aborted
      }
      wait = Math.min(2 * wait, reconnectMaxMs);
    }
  }
}

/** Rebuilds the supervisor's error from a failed answer. */
async function replyError(resp: Response): Promise<CorralError> {
  const text = await resp.text().catch(() => "");
  try {
    const r = JSON.parse(text) as ErrorReply;
    if (r.error) return CorralError.from(r.error, resp.status);
  } catch {
    // not JSON: say what came
  }
  return new CorralError(codeForStatus(resp.status), `supervisor answered ${resp.status}: ${text.slice(0, 200)}`, resp.status);
}

/** A session stream's end: a failed reply, which has no seq. */
function replyEnd(line: string): CorralError | undefined {
  if (!line.startsWith('{"ok":false')) return undefined;
  const r = JSON.parse(line) as ErrorReply;
  return r.error ? CorralError.from(r.error) : undefined;
}

/** The multiplexed stream's end: a streamEnded mark. */
function feedEnd(line: string): CorralError | undefined {
  if (!line.includes('"streamEnded"')) return undefined;
  const it = JSON.parse(line) as FeedItem;
  return it.stream?.type === "streamEnded" && it.stream.error ? CorralError.from(it.stream.error) : undefined;
}

/** An async queue fed by callbacks. */
class Queue<T> implements AsyncIterable<T> {
  private items: T[] = [];
  private waiting?: () => void;
  private done = false;
  private err: unknown;

  push(v: T): void {
    this.items.push(v);
    this.wake();
  }
  fail(err: unknown): void {
    this.err ??= err;
    this.done = true;
    this.wake();
  }
  end(): void {
    this.done = true;
    this.wake();
  }
  private wake(): void {
    const w = this.waiting;
    this.waiting = undefined;
    w?.();
  }
  async *[Symbol.asyncIterator](): AsyncGenerator<T> {
    for (;;) {
      const v = this.items.shift();
      if (v !== undefined) {
        yield v;
        continue;
      }
      if (this.done) {
        if (this.err !== undefined) throw this.err;
        return;
      }
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }
}

/** A new random requestId for a command: 16 random bytes in hex. */
export function newRequestId(): string {
  const b = new Uint8Array(16);
  globalThis.crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}
