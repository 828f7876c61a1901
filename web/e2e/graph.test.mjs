// A graph run in the console (docs/console.md, Graph runs), in real
// headless Chromium against a real supervisor: the run is opened and its
// nodes are run one at a time through the HTTP API, on the script engine
// with the graph tests' scenarios (internal/graph/graphtest), and the page
// follows it live from the run's event stream. The implement node works in
// review mode, so it waits for a person: the page links the node to its
// session, where its hunk is accepted, and the file's bytes are checked.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rig, newWorktree, screenshot, until, here, run, pageHelpers } from './harness.mjs';

const root = mkdtempSync(join(tmpdir(), 'corral-console-graph-'));
const scenarios = join(here, '..', '..', 'internal', 'graph', 'graphtest', 'testdata', 'scenarios', 'happy');
const stageFiles = {
  plan: 'plan.yaml', setgoal: 'setgoal.yaml', critique: 'critique.yaml', implement: 'implement.yaml',
  test: 'test.yaml', gate: 'gate.yaml', 'gate:goal': 'goal.yaml', report: 'report.yaml',
};

let r;
let page;
let repo;

const { checkA11y } = pageHelpers(() => page);

before(async () => {
  r = await rig(root);
  page = r.page;
  await r.signIn();
  repo = newWorktree(root, 'repo');
  for (const args of [['init', '-q', '-b', 'main'], ['-c', 'user.name=T', '-c', 'user.email=t@example.com', 'commit', '-q', '--allow-empty', '-m', 'start']]) {
    const g = await run('git', ['-C', repo, ...args]);
    assert.equal(g.code, 0, g.err);
  }
  const stages = {};
  for (const [stage, file] of Object.entries(stageFiles)) stages[stage] = { scenario: join(scenarios, file) };
  // A person reviews what the implement node writes.
  stages.implement.mode = 'review';
  const opened = await r.sup.api('POST', '/graphs', {
    runId: 'g1', request: 'Write a greeting to hello.txt.', cwd: repo, policy: { engine: 'script', stages },
  });
  assert.equal(opened.status, 201, JSON.stringify(opened.body));
});

after(async () => {
  await r?.close();
  // The state folder holds the engines' caches (Copilot unpacks ~235 MB
  // into it), so each run would leave that behind.
  rmSync(root, { recursive: true, force: true });
});

/** runNode runs one node to its verdict through the API. */
async function runNode(node) {
  const res = await r.sup.api('POST', `/graphs/g1/nodes/${node}/run`);
  assert.equal(res.status, 200, `${node}: ${JSON.stringify(res.body)}`);
  return res.body.verdict;
}

const flow = () => page.locator('[data-testid=graph-flow]');
const stage = (name) => flow().locator(`.rail [data-stage="${name}"]`);

test('the list of runs links to the run', async () => {
  await page.locator('[data-testid=nav-graphs]').click();
  const row = page.locator('[data-testid=graph-list] [data-run=g1]');
  await row.waitFor();
  assert.match(await row.textContent(), /open.*Write a greeting to hello\.txt\./);
  await checkA11y('graph runs');
  await row.locator('a', { hasText: 'g1' }).click();
  await page.waitForURL(/#\/graphs\/g1$/);
  await page.locator('[data-testid=graph-feed]', { hasText: 'live' }).waitFor();
  await page.locator('[data-testid=graph-next]', { hasText: 'plan' }).waitFor();
});

test('the flow follows the run as its nodes pass', async () => {
  assert.equal(await stage('plan').getAttribute('class'), 'stage s-pending');
  for (const node of ['plan', 'setgoal', 'critique']) {
    const v = await runNode(node);
    assert.equal(v.state, 'passed', JSON.stringify(v));
    await stage(node).and(page.locator('.s-passed')).waitFor();
  }
  // The spec made one subgoal: its row, and what may run next.
  const row = flow().locator('[data-testid=graph-subgoals] [data-subgoal=U1]');
  await row.waitFor();
  assert.match(await row.textContent(), /Write hello\.txt/);
  await page.locator('[data-testid=graph-next]', { hasText: 'implement:U1' }).waitFor();
  assert.match(await page.locator('[data-testid=graph-last]').textContent(), /critique.*passed · sound · script/);
});

test('a node waiting for a person links to its session, where its hunk is accepted', async () => {
  const v = await runNode('implement:U1');
  assert.equal(v.needsHuman, true, JSON.stringify(v));
  const now = page.locator('[data-testid=graph-now]');
  const link = now.locator(`[data-testid=node-session]`, { hasText: v.session });
  await link.waitFor();
  // The session's own state, from the session list, beside the node.
  await now.locator('[data-testid=state]', { hasText: 'waiting for review' }).waitFor();
  await stage('implement').and(page.locator('.s-running')).waitFor();
  await screenshot(page, 'graph-flow');
  await checkA11y('graph flow');
  await page.locator('[data-testid=graph-tab-nodes]').click();
  const doing = page.locator('[data-testid=graph-doing] [data-node="implement:U1"]');
  await doing.waitFor();
  assert.match(await doing.textContent(), /implement:U1 \(script, .*session [0-9a-f]{12}/);
  assert.match(await doing.textContent(), /run policy: engine script/);
  assert.match(await page.locator('[data-testid=graph-todo]').textContent(), /test:U1 waits for implement:U1/);
  await checkA11y('graph nodes');

  await doing.locator('[data-testid=node-session]').click();
  await page.waitForURL(new RegExp(`#/sessions/${v.session}$`));
  const edit = page.locator('[data-testid=transcript] [data-testid=edit]').last();
  await edit.locator('[data-hunk=h1] [data-testid=accept]').click();
  await edit.locator('[data-testid=applied]', { hasText: 'Applied: h1' }).waitFor();
  await until('hello.txt', () => {
    try { return readFileSync(join(repo, 'hello.txt'), 'utf8') === 'Hello from the graph!\n'; } catch { return false; }
  });
  await page.goBack();
  await page.waitForURL(/#\/graphs\/g1$/);
  // The same process runs the node on: it waits for the session's turn.
  const done = await runNode('implement:U1');
  assert.equal(done.state, 'passed', JSON.stringify(done));
  await page.locator('[data-testid=graph-tab-flow]').click();
  await flow().locator('[data-subgoal=U1] [data-node="implement:U1"].n-passed').waitFor();
});

test('the run completes: the outcome, the gates bar and every node with its session', async () => {
  for (const node of ['test:U1', 'gate:U1', 'gate:goal', 'report']) {
    const v = await runNode(node);
    assert.equal(v.state, 'passed', JSON.stringify(v));
  }
  await page.locator('.graph [data-testid=run-state]', { hasText: 'complete' }).waitFor();
  await page.locator('[data-testid=graph-feed]', { hasText: 'ended' }).waitFor();
  const outcome = page.locator('[data-testid=graph-outcome]');
  await outcome.waitFor();
  assert.match(await outcome.textContent(), /Shipped: U1 · goal gate: verified · report: report/);
  assert.match(await page.locator('[data-testid=graph-gates]').textContent(), /1\/1 accepted · goal ✓ verified/);
  assert.match(await flow().locator('[data-subgoal=U1]').textContent(), /passed.*passed.*passed · accept/);
  await page.locator('[data-testid=graph-tab-nodes]').click();
  const done = page.locator('[data-testid=graph-done]');
  const nodes = await done.locator('li').evaluateAll((els) => els.map((e) => e.getAttribute('data-node')));
  assert.deepEqual(nodes.sort(), ['critique', 'gate:U1', 'gate:goal', 'implement:U1', 'plan', 'report', 'setgoal', 'test:U1']);
  // Each node links to the session that ran it.
  for (const node of nodes) {
    assert.match(await done.locator(`[data-node="${node}"] a`).first().textContent(), /^session [0-9a-f]{12}$/, node);
  }
  await screenshot(page, 'graph-nodes');
  await checkA11y('graph nodes, complete');
  // The list says so too.
  await page.locator('[data-testid=nav-graphs]').click();
  await page.locator('[data-testid=graph-list] [data-run=g1]', { hasText: 'complete' }).waitFor();
});
