// The console's figures, measured in Chromium with the Performance API
// (docs/performance.md records them):
//   - open a session of 10,000 events: navigation start → its latest
//     screen drawn (the corral-backlog-drawn mark), beside a session of
//     100 events measured in the same run;
//   - a live event: the runner's timestamp → drawn on screen (the
//     corral-event-drawn marks), p50 and p95.
// Run: make build && node web/e2e/perf.mjs  (ROUNDS=N to change the rounds)
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Supervisor, startConsole, launch, newWorktree, until } from './harness.mjs';

const rounds = Number(process.env.ROUNDS ?? 7);
const root = mkdtempSync(join(tmpdir(), 'corral-console-perf-'));
const state = join(root, 'state');
const worktree = newWorktree(root, 'work');

/** synthetic writes a session folder holding n events of ordinary turns. */
function synthetic(id, n) {
  const dir = join(state, 'sessions', id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'meta.json'), JSON.stringify({ id, engine: 'script', cwd: worktree, mode: 'review' }));
  const lines = [];
  let seq = 0;
  const t0 = Date.parse('2026-11-30T10:00:00Z');
  const ev = (type, data) => {
    seq++;
    lines.push(JSON.stringify({ seq, ts: new Date(t0 + seq * 10).toISOString(), type, data }));
  };
  ev('sessionStarted', { engine: 'script', cwd: worktree, mode: 'review' });
  for (let turn = 1; seq < n; turn++) {
    ev('userMessage', { id: `m${turn}`, text: `Request number ${turn}: look at the code and report.`, kind: 'send', queued: false });
    ev('turnStarted', { turn, messageId: `m${turn}`, text: `Request number ${turn}` });
    for (let k = 0; k < 8; k++) ev('assistantDelta', { text: `word${k} ` });
    ev('assistantText', { text: 'word0 word1 word2 word3 word4 word5 word6 word7 **done**' });
    ev('toolStarted', { toolId: `t${turn}`, tool: 'Bash', kind: 'shell', summary: 'ls -la', command: 'ls -la' });
    ev('toolFinished', { toolId: `t${turn}`, tool: 'Bash', outcome: 'ok', durationMs: 4, exitCode: 0, output: 'total 0\n' });
    ev('usage', { inputTokens: 1200, outputTokens: 40, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.004, estimated: true });
    ev('context', { usedTokens: 1300, windowTokens: 200000, percent: 0.65 });
    ev('turnEnded', { turn, outcome: 'done', durationMs: 900, usage: { inputTokens: 1200, outputTokens: 40, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.004, estimated: true }, files: 0, added: 0, removed: 0 });
  }
  writeFileSync(join(dir, 'events.jsonl'), lines.slice(0, n).join('\n') + '\n');
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

synthetic('perf10000000', 10000);
synthetic('perf00000100', 100);
writeFileSync(join(root, 'stream.yaml'), `name: stream
turns:
  - steps:
      - say: "${Array.from({ length: 300 }, (_, i) => `w${i}`).join(' ')}"
        chunks: 300
        delayMs: 15
`);

const sup = new Supervisor(state);
await sup.start();
const con = await startConsole(state);
const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1280, height: 820 } });
const login = await context.newPage();
await login.goto(con.link);
await login.close();

async function open(id) {
  const page = await context.newPage();
  await page.goto(`${con.origin}/#/sessions/${id}`);
  const t = await page.waitForFunction(() => {
    const m = performance.getEntriesByName('corral-backlog-drawn')[0];
    return m && m.startTime;
  }, undefined, { timeout: 30000 });
  const ms = await t.jsonValue();
  const lastSeq = await page.locator('[data-session-view]').getAttribute('data-last-seq');
  await page.close();
  return { ms, lastSeq: Number(lastSeq) };
}

const big = [];
const small = [];
for (let i = 0; i < rounds; i++) {
  // Alternate, so both see the same machine.
  small.push((await open('perf00000100')).ms);
  const b = await open('perf10000000');
  if (b.lastSeq !== 10000) throw new Error(`the 10,000-event session drew seq ${b.lastSeq}`);
  big.push(b.ms);
}

// Live: a script session streaming 300 deltas 15 ms apart.
const created = await sup.cli(['new', '--engine', 'script', '--cwd', worktree, '--scenario', join(root, 'stream.yaml')]);
const sid = created.out.trim();
const page = await context.newPage();
await page.goto(`${con.origin}/#/sessions/${sid}`);
await page.locator('[data-testid=feed]', { hasText: 'live' }).waitFor();
await sup.cli(['send', sid, 'stream please']);
await until('the streamed turn', async () => (await page.locator('[data-testid=turn-end]').count()) > 0, 60000);
const lags = await page.evaluate(() => performance.getEntriesByName('corral-event-drawn').map((m) => m.detail.lagMs));

const out = {
  rounds,
  open10000: { medianMs: +median(big).toFixed(1), allMs: big.map((x) => +x.toFixed(1)) },
  open100: { medianMs: +median(small).toFixed(1), allMs: small.map((x) => +x.toFixed(1)) },
  liveEvent: { events: lags.length, p50Ms: +pct(lags, 50).toFixed(1), p95Ms: +pct(lags, 95).toFixed(1), maxMs: +Math.max(...lags).toFixed(1) },
};
console.log(JSON.stringify(out, null, 2));
await browser.close();
con.proc.kill('SIGTERM');
await sup.kill('SIGTERM');
rmSync(root, { recursive: true, force: true });
