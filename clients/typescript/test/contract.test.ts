// The contract, from TypeScript's side. The Go test that runs these
// (client_test.go) generates golden.gen.ts from Go's samples, so the
// compiler has type-checked every one against the generated types before
// this runs. Here each sample is decoded through the client itself (a
// fetch or a WebSocket that serves it), and what the client decoded, with
// requests TypeScript builds itself, is written to CORRAL_CONTRACT_TS for
// Go to validate and decode.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { golden } from "./golden.gen.js";
import {
  CorralClient,
  CorralError,
  Terminal,
  type Command,
  type CommandOf,
  type FeedItem,
  type ErrorReply,
  type OpenRequest,
  type RunEvent,
  type SubmitBody,
  type Reply,
  type SessionEvent,
  type SignInRequest,
  type Spec,
  type TermEvent,
  type TermFrame,
  type WebSocketLike,
} from "../src/index.js";

const goDir = process.env["CORRAL_CONTRACT_GO"];
const tsDir = process.env["CORRAL_CONTRACT_TS"];
if (!goDir || !tsDir) throw new Error("CORRAL_CONTRACT_GO and CORRAL_CONTRACT_TS are not set: run these tests through go test ./clients/typescript");

interface Sample {
  name: string;
  def: string;
}
const index = JSON.parse(fs.readFileSync(path.join(goDir, "index.json"), "utf8")) as Sample[];
const read = (name: string): unknown => JSON.parse(fs.readFileSync(path.join(goDir, name + ".json"), "utf8"));
const of = (prefix: string) => index.filter((s) => s.name.startsWith(prefix));

// What TypeScript writes back for Go.
const written: Sample[] = [];
function write(name: string, def: string, value: unknown): void {
  fs.writeFileSync(path.join(tsDir!, name + ".json"), JSON.stringify(value) + "\n");
  written.push({ name, def });
}
after(() => fs.writeFileSync(path.join(tsDir!, "index.json"), JSON.stringify(written, null, 2) + "\n"));

/** A client whose fetch answers every request with respond's answer. */
function serving(respond: (url: string, init?: RequestInit) => Response): CorralClient {
  return new CorralClient({ baseUrl: "http://supervisor.test", fetch: async (input, init) => respond(String(input), init) });
}
const json = (v: unknown, status = 200) => new Response(JSON.stringify(v), { status, headers: { "Content-Type": "application/json" } });
const ndjson = (lines: unknown[]) => new Response(lines.map((l) => JSON.stringify(l) + "\n").join(""), { headers: { "Content-Type": "application/x-ndjson" } });

test("the golden samples the compiler checked are Go's", () => {
  for (const s of index) {
    assert.deepEqual((golden as Record<string, unknown>)[s.name], read(s.name), s.name);
  }
});

test("every event decodes through a session's stream", async () => {
  const samples = of("event.").map((s) => read(s.name) as SessionEvent);
  const c = serving(() => ndjson(samples));
  const got: SessionEvent[] = [];
  for await (const ev of c.events("3f2a9c0d1e4b", { follow: false })) got.push(ev);
  assert.deepEqual(got, samples);
  for (const ev of got) write("event." + ev.type, "SessionEvent", ev);
});

test("every command's result decodes, typed by its command", async () => {
  for (const s of of("command.")) {
    const cmd = read(s.name) as Command;
    const result = read("result." + cmd.cmd);
    let sent: unknown;
    const c = serving((_, init) => {
      sent = JSON.parse(String(init?.body));
      return json({ ok: true, result });
    });
    const got = await c.command("3f2a9c0d1e4b", cmd);
    // The client names every attempt with a new requestId of its own.
    const { requestId, ...rest } = sent as Command;
    assert.match(String(requestId), /^[0-9a-f]{32}$/);
    assert.deepEqual(rest, cmd);
    assert.deepEqual(got, result);
    write("command." + cmd.cmd, "Command", rest);
    write("result." + cmd.cmd, "CommandResults." + cmd.cmd, got);
  }
});

test("every error becomes a CorralError with its code", async () => {
  for (const s of of("error.")) {
    const reply = read(s.name) as ErrorReply;
    const e = reply.error;
    const c = serving(() => json(reply, e.statusCode));
    await assert.rejects(c.session("3f2a9c0d1e4b"), (err: unknown) => {
      assert.ok(err instanceof CorralError);
      assert.equal(err.code, e.code);
      assert.equal(err.statusCode, e.statusCode);
      assert.deepEqual(err.detail, e.detail);
      return true;
    });
    write(s.name, "ErrorReply", { ok: false, error: { message: e.message, code: e.code, statusCode: e.statusCode, ...(e.detail ? { detail: e.detail } : {}) } });
  }
});

test("every route's reply decodes", async () => {
  const reply = (name: string) => serving(() => json(read(name)));
  const health = await reply("route.health.reply").health();
  write("route.health.reply", "HealthReply", health);
  const created = await reply("route.createSession.reply").createSession(read("route.createSession.request") as Spec);
  write("route.createSession.reply", "SessionReply", { ok: true, session: created });
  const list = await reply("route.listSessions.reply").sessions();
  write("route.listSessions.reply", "SessionsReply", { ok: true, sessions: list });
  const one = await reply("route.getSession.reply").session("9b0d4f11a2c3");
  write("route.getSession.reply", "SessionReply", { ok: true, session: one });
  await reply("route.deleteSession.reply").deleteSession("9b0d4f11a2c3");
  write("route.deleteSession.reply", "Reply", { ok: true });
  write("route.command.reply", "Reply", read("route.command.reply"));
  const ws = await reply("route.workspace.reply").workspace("3f2a9c0d1e4b");
  write("route.workspace.reply", "WorkspaceReply", { ok: true, workspace: ws });
  let committed: unknown;
  const commit = await serving((_, init) => {
    committed = JSON.parse(String(init?.body));
    return json(read("route.workspaceCommit.reply"));
  }).commitWorkspace("3f2a9c0d1e4b", (read("route.workspaceCommit.request") as { message: string }).message);
  assert.deepEqual(committed, read("route.workspaceCommit.request"));
  write("route.workspaceCommit.request", "CommitRequest", committed);
  write("route.workspaceCommit.reply", "CommitReply", { ok: true, commit });
  for (const name of ["route.workspaceMerge.reply", "route.workspaceMerge.conflict"]) {
    const merged = await reply(name).mergeWorkspace("3f2a9c0d1e4b");
    write(name, "MergeReply", { ok: true, result: merged });
  }
  let asked = "";
  const engines = await serving((url) => {
    asked = url;
    return json(read("route.engines.reply"));
  }).engines({ refresh: true, accepted: true, modelEndpoint: "http://127.0.0.1:4000" });
  assert.equal(asked, "http://supervisor.test/v1/engines?refresh=true&check=accepted&modelEndpoint=http%3A%2F%2F127.0.0.1%3A4000");
  assert.deepEqual(engines, read("route.engines.reply"));
  write("route.engines.reply", "EnginesReply", engines);
  const stored = await reply("route.credentials.reply").listCredentials();
  write("route.credentials.reply", "CredentialsReply", stored);
  let setBody: unknown;
  let setURL = "";
  const set = await serving((url, init) => {
    setURL = `${init?.method} ${url}`;
    setBody = JSON.parse(String(init?.body));
    return json(read("route.setCredential.reply"));
  }).setCredential("github-token", (read("route.setCredential.request") as { secret: string }).secret);
  assert.equal(setURL, "PUT http://supervisor.test/v1/credentials/github-token");
  assert.deepEqual(setBody, read("route.setCredential.request"));
  write("route.setCredential.request", "SetCredentialRequest", setBody);
  write("route.setCredential.reply", "CredentialsReply", set);
  const removed = await reply("route.setCredential.reply").deleteCredential("github-token");
  assert.equal(removed.items.length, 1);
  for (const name of ["route.wait.reply", "route.wait.timedOut"]) {
    const w = await reply(name).wait("3f2a9c0d1e4b", { for: "turnEnd", timeoutMs: 50 });
    assert.deepEqual(w, read(name));
    write(name, "WaitReply", w);
  }
});

test("every sign-in route's reply decodes", async () => {
  const reply = (name: string) => serving(() => json(read(name)));
  let sent: unknown;
  const signedIn = await serving((_, init) => {
    sent = JSON.parse(String(init?.body));
    return json(read("route.signIn.reply"));
  }).signIn((read("route.signIn.request") as SignInRequest).code);
  assert.deepEqual(sent, read("route.signIn.request"));
  assert.deepEqual(signedIn, read("route.signIn.reply"));
  write("route.signIn.request", "SignInRequest", sent);
  write("route.signIn.reply", "SignInReply", signedIn);
  await reply("route.signOut.reply").signOut();
  write("route.signOut.reply", "Reply", { ok: true });
  const ticket = await reply("route.ticket.reply").ticket();
  assert.deepEqual(ticket, read("route.ticket.reply"));
  write("route.ticket.reply", "TicketReply", ticket);
  const code = await reply("route.loginCode.reply").loginCode();
  assert.deepEqual(code, read("route.loginCode.reply"));
  write("route.loginCode.reply", "LoginCodeReply", code);
});

test("every graph route's reply decodes", async () => {
  const reply = (name: string) => serving(() => json(read(name)));
  let sent: unknown;
  const echoing = (name: string) =>
    serving((_, init) => {
      sent = init?.body === undefined ? undefined : JSON.parse(String(init.body));
      return json(read(name));
    });
  const opened = await echoing("route.openGraph.reply").openGraph(read("route.openGraph.request") as OpenRequest);
  assert.deepEqual(sent, read("route.openGraph.request"));
  write("route.openGraph.request", "OpenRequest", sent);
  write("route.openGraph.reply", "OpenResponse", opened);
  write("route.graphs.reply", "StatusResponse", { ok: true, runs: await reply("route.graphs.reply").graphs() });
  write("route.graph.reply", "StatusResponse", { ok: true, run: await reply("route.graph.reply").graph("r1") });
  write("route.graphNext.reply", "NextResponse", await reply("route.graphNext.reply").graphNext("r1"));
  for (const name of ["route.runNode.reply", "route.runNode.needsHuman", "route.runNode.self"]) {
    write(name, "VerdictResponse", { ok: true, verdict: await reply(name).runNode("r1", "gate:U3") });
  }
  const submitted = await echoing("route.submitNode.reply").submitNode("r1", "report", read("route.submitNode.request") as SubmitBody);
  assert.deepEqual(sent, read("route.submitNode.request"));
  write("route.submitNode.request", "SubmitBody", sent);
  write("route.submitNode.reply", "VerdictResponse", { ok: true, verdict: submitted });
  for (const name of ["route.retryGraph.reply", "route.retryGraph.settled"]) {
    const r = await echoing(name).retryGraph("r1", "U3");
    assert.deepEqual(sent, read("route.retryGraph.request"));
    write(name, "RetryResponse", r);
  }
  write("route.retryGraph.request", "RetryBody", sent);
});

test("a graph run's events decode", async () => {
  const samples = of("route.graphEvents.").map((s) => ({ name: s.name, ev: read(s.name) as RunEvent }));
  const c = serving(() => ndjson(samples.map((s) => s.ev)));
  const got: RunEvent[] = [];
  for await (const ev of c.graphEvents("r1", { follow: false })) got.push(ev);
  assert.deepEqual(got, samples.map((s) => s.ev));
  samples.forEach((s, i) => write(s.name, "RunEvent", got[i]));
});

test("every item of the multiplexed stream decodes, and streamEnded ends it", async () => {
  const samples = of("route.feed.").map((s) => ({ name: s.name, item: read(s.name) as FeedItem }));
  let calls = 0;
  const c = serving(() => {
    calls++;
    // The first connection carries every item and ends with streamEnded
    // (unavailable); the reconnection finds no such session.
    return calls === 1 ? ndjson(samples.map((s) => s.item)) : json({ ok: false, error: { message: "gone", code: "not_found", statusCode: 404 } }, 404);
  });
  const got: FeedItem[] = [];
  await assert.rejects(
    (async () => {
      for await (const it of c.feed({ from: "start" })) got.push(it);
    })(),
    (e: unknown) => e instanceof CorralError && e.code === "not_found",
  );
  const ended = samples.find((s) => s.item.stream?.type === "streamEnded")!;
  assert.deepEqual(got, samples.filter((s) => s !== ended).map((s) => s.item));
  let j = 0;
  for (const s of samples) write(s.name, "FeedItem", s === ended ? s.item : got[j++]);
});

test("every terminal frame decodes", async () => {
  const sent: unknown[] = [];
  const ws: WebSocketLike = {
    binaryType: "arraybuffer",
    readyState: 1,
    send: (d) => sent.push(d),
    close: () => {},
    onopen: null,
    onmessage: null,
    onerror: null,
    onclose: null,
  };
  const opened = read("route.terminal.opened") as TermFrame;
  const term = new Terminal(ws, opened);
  assert.equal(term.role, opened.role);
  assert.equal(term.cols, opened.cols);
  const notice = read("route.terminal.notice") as TermFrame;
  const exit = read("route.terminal.exit") as TermFrame;
  ws.onmessage?.({ data: new TextEncoder().encode("hi").buffer });
  ws.onmessage?.({ data: JSON.stringify(notice) });
  ws.onmessage?.({ data: JSON.stringify(exit) });
  const evs: TermEvent[] = [];
  for await (const ev of term) evs.push(ev);
  assert.equal(new TextDecoder().decode(evs[0]?.output), "hi");
  assert.equal(evs[1]?.notice?.code, notice.code);
  assert.deepEqual(evs[2]?.exit, { code: exit.exitCode, signal: exit.signal });
  term.resize(100, 30);
  assert.deepEqual(JSON.parse(sent[0] as string), read("route.terminal.resize"));
  write("route.terminal.resize", "TermFrame", JSON.parse(sent[0] as string));
  for (const name of ["route.terminal.opened", "route.terminal.notice", "route.terminal.exit", "route.terminal.fatal"]) {
    write(name, "TermFrame", read(name));
  }
});

test("requests TypeScript builds itself", () => {
  const spec: Omit<Spec, "id"> = {
    engine: "script",
    cwd: "/home/me/project",
    mode: "auto",
    unattended: true,
    spendCapUsd: 1.5,
    goal: { text: "tests pass" },
    loop: { prompt: "check the build", everyMs: 60_000, count: 3 },
  };
  write("ts.spec", "Spec", spec);
  const commands: { [C in Command["cmd"]]: CommandOf<C> } = {
    send: { cmd: "send", text: "add a README" },
    steer: { cmd: "steer", text: "British spelling" },
    stop: { cmd: "stop" },
    answer: { cmd: "answer", askId: "a1", decision: "deny", note: "no network" },
    status: { cmd: "status" },
    decideHunk: { cmd: "decideHunk", hunkId: "e2/h1", decision: "accept" },
    setMode: { cmd: "setMode", mode: "readonly" },
    setGoal: { cmd: "setGoal", goal: "tests pass" },
    getGoal: { cmd: "getGoal" },
    clearGoal: { cmd: "clearGoal" },
    markGoalDone: { cmd: "markGoalDone" },
    setSpendCap: { cmd: "setSpendCap", spendCapUsd: 0 },
    forkSession: { cmd: "forkSession" },
    cancelQueued: { cmd: "cancelQueued", messageId: "m7" },
    rename: { cmd: "rename", title: "Fix the flaky test" },
  };
  for (const [name, cmd] of Object.entries(commands)) write("ts.command." + name, "Command", cmd);
});
