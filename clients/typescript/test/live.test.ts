// The client against a live supervisor, which the Go test that runs these
// (client_test.go) starts on TCP with a token: CORRAL_URL, CORRAL_TOKEN,
// and CORRAL_WORK (a folder for sessions, holding scenario.yaml). The
// scenario is the one internal/contract's Go test plays with the Go client.
import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { WebSocket } from "ws";
import { EventSource } from "eventsource";
import { CorralClient, CorralError, type SessionEvent, type WebSocketConstructor, type EventSourceConstructor } from "../src/index.js";

const url = need("CORRAL_URL");
const token = need("CORRAL_TOKEN");
const work = need("CORRAL_WORK");

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run these tests through go test ./clients/typescript`);
  return v;
}

const authedFetch: typeof fetch = (input, init) =>
  fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), Authorization: "Bearer " + token } });

function client(baseUrl = url): CorralClient {
  return new CorralClient({
    baseUrl,
    token,
    WebSocket: WebSocket as unknown as WebSocketConstructor,
    EventSource: class extends EventSource {
      constructor(u: string, init?: { withCredentials?: boolean }) {
        super(u, { ...init, fetch: authedFetch });
      }
    } as unknown as EventSourceConstructor,
  });
}

/** Reads an iterator until match, returning what it read. */
async function until<T>(it: AsyncIterator<T>, match: (v: T) => boolean): Promise<T[]> {
  const out: T[] = [];
  for (;;) {
    const r = await it.next();
    assert.ok(!r.done, `the stream ended after ${out.length} items`);
    out.push(r.value);
    if (match(r.value)) return out;
  }
}

async function rejects(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof CorralError && e.code === code);
}

test("the scenario: create, send, answer, review, wait, stream, feed, terminal, delete", async () => {
  const c = client();
  const health = await c.health();
  assert.equal(health.ok, true);

  const s = await c.createSession({ engine: "script", cwd: work, scenario: work + "/scenario.yaml", mode: "review" });
  assert.match(s.id, /^[0-9a-f]{12}$/);
  assert.equal(s.live, true);

  const events = c.events(s.id);
  const sent = await c.command(s.id, { cmd: "send", text: "build it" });
  assert.match(sent.id, /^m\d+$/);

  const ask = await c.wait(s.id, { for: "human" });
  assert.equal(ask.met, true);
  const opened = ask.events[0] as SessionEvent;
  assert.equal(opened.type, "askOpened");
  if (opened.type !== "askOpened") return;
  const answered = await c.command(s.id, { cmd: "answer", askId: opened.data.askId, decision: "allow" });
  assert.deepEqual(answered, { askId: opened.data.askId, decision: "allow" });

  const review = await c.wait(s.id, { for: "human" });
  const staged = review.events[0] as SessionEvent;
  assert.equal(staged.type, "hunkStaged");
  if (staged.type !== "hunkStaged") return;
  const hunk = staged.data.edit?.hunks?.[0];
  assert.ok(hunk);
  const decided = await c.command(s.id, { cmd: "decideHunk", editId: staged.data.editId, hunkId: hunk.id, decision: "accept" });
  assert.equal(decided.decision, "accept");

  const ended = await c.wait(s.id, { for: "turnEnd", after: staged.seq });
  assert.equal(ended.met, true);
  const turnEnded = ended.events[0] as SessionEvent;
  assert.equal(turnEnded.type, "turnEnded");
  if (turnEnded.type === "turnEnded") assert.equal(turnEnded.data.outcome, "done");

  const seen = await until(events, (e) => e.type === "turnEnded");
  seen.forEach((e, i) => assert.equal(e.seq, i + 1, "seqs run from 1 without a gap"));
  const types = seen.map((e) => e.type);
  for (const t of ["queueChanged", "askOpened", "askAnswered", "hunkStaged", "hunkDecided", "editApplied", "turnEnded"] as const) {
    assert.ok(types.includes(t), `${t} in ${types}`);
  }

  const status = await c.command(s.id, { cmd: "status" });
  assert.equal(status.state, "idle");
  assert.equal(status.lastSeq >= turnEnded.seq, true);

  // The multiplexed stream, from the start: the backlog, then live.
  const feed = c.feed({ from: "start", sessions: [s.id] });
  const backlog = await until(feed, (it) => it.stream?.type === "streamLive");
  const logged = backlog.filter((it) => it.event).map((it) => it.event?.seq);
  assert.ok(logged.length >= seen.length, `backlog ${logged}`);
  logged.forEach((seq, i) => assert.equal(seq, i + 1, "the backlog is the log, in order"));
  assert.ok(backlog.slice(0, -1).every((it) => it.session === s.id && it.cursor === undefined));

  // A terminal.
  // (The program waits for a line: one that ends before the attach is
  // handed over loses the race, a bug of the terminal hand-over.)
  const term = await c.attachTerminal(s.id, { termId: "t1", command: ["sh", "-c", 'read line; echo "got:$line"; exit 3'], cols: 80, rows: 24 });
  assert.equal(term.role, "owner");
  term.input("hello\r");
  let out = "";
  let exit: number | undefined;
  for await (const ev of term) {
    if (ev.output) out += new TextDecoder().decode(ev.output);
    if (ev.exit) exit = ev.exit.code;
  }
  assert.match(out, /got:hello/);
  assert.equal(exit, 3);

  // Refusals are typed.
  await rejects(c.session("000000000000"), "not_found");
  await rejects(c.command(s.id, { cmd: "answer", askId: "a999", decision: "deny" }), "not_found");

  await c.deleteSession(s.id);
  // Stopping the runner may log an event or two; then the stream ends.
  await rejects(
    (async () => {
      for (;;) await events.next();
    })(),
    "not_found",
  );
  const gone = await until(feed, (it) => it.lifecycle?.type === "sessionDeleted");
  assert.equal(gone.at(-1)?.session, s.id);
  await feed.return(undefined);
});

test("a followed stream resumes after a cut connection, without repeating or losing an event", async () => {
  // A proxy that can sever every connection it carries.
  const target = new URL(url);
  const conns = new Set<net.Socket>();
  const proxy = net.createServer((inbound) => {
    const outbound = net.connect(Number(target.port), target.hostname);
    conns.add(inbound).add(outbound);
    inbound.pipe(outbound).pipe(inbound);
    const drop = () => {
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on("error", drop).on("close", drop);
    outbound.on("error", drop).on("close", drop);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const port = (proxy.address() as net.AddressInfo).port;
  try {
    const direct = client();
    const s = await direct.createSession({ engine: "script", cwd: work, scenario: work + "/scenario.yaml" });
    const notes: string[] = [];
    const events = client(`http://127.0.0.1:${port}`).events(s.id, {
      onReconnect: (lost) => notes.push(lost === undefined ? "resumed" : "lost"),
      onOpen: () => notes.push("open"),
    });
    await direct.command(s.id, { cmd: "send", text: "hello" });
    const first = await until(events, (e) => e.type === "turnEnded");
    assert.deepEqual(notes, ["open"], "the stream said once that it was open");
    for (const c of conns) c.destroy();
    await direct.command(s.id, { cmd: "send", text: "again" });
    const second = await until(events, (e) => e.type === "turnEnded");
    const seqs = first.concat(second).map((e) => e.seq);
    seqs.forEach((seq, i) => assert.equal(seq, i + 1));
    assert.deepEqual(notes, ["open", "lost", "resumed", "open"]);
    await events.return(undefined);
    await direct.deleteSession(s.id);
  } finally {
    for (const c of conns) c.destroy();
    await new Promise((resolve) => proxy.close(resolve));
  }
});

test("the same events through an EventSource", async () => {
  const c = client();
  const s = await c.createSession({ engine: "script", cwd: work, scenario: work + "/scenario.yaml" });
  await c.command(s.id, { cmd: "send", text: "hello" });
  const ctrl = new AbortController();
  const es = c.eventSourceEvents(s.id, { signal: ctrl.signal });
  const viaES = await until(es, (e) => e.type === "turnEnded");
  const fetched = c.events(s.id, { follow: false });
  const viaFetch = await until(fetched, (e) => e.type === "turnEnded");
  assert.deepEqual(viaES, viaFetch);
  ctrl.abort();
  assert.equal((await es.next()).done, true, "an aborted stream ends");
  await fetched.return(undefined);
  await c.deleteSession(s.id);
});

test("wait gives up when its timeout passes", async () => {
  const c = client();
  const s = await c.createSession({ engine: "script", cwd: work, scenario: work + "/scenario.yaml" });
  const r = await c.wait(s.id, { for: "human", timeoutMs: 100 });
  assert.equal(r.met, false);
  await c.deleteSession(s.id);
});
