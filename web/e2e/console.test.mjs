// The web console in real headless Chromium against a real supervisor on
// the script engine (docs/console.md): every case of issue #23's proof, an
// axe-core check of every screen, and a screenshot of each.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Supervisor, rig, newWorktree, screenshot, until, here, run, pageHelpers } from './harness.mjs';

const root = mkdtempSync(join(tmpdir(), 'corral-console-e2e-'));
const scenario = join(here, 'scenario.yaml');
const notes = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join('');
const worktree = newWorktree(root, 'work', { 'notes.txt': notes });

let r;
let con;
let browser;
let context;
let page;
let sid;

const { transcript, send, sessionState, checkA11y } = pageHelpers(() => page);

before(async () => {
  r = await rig(root);
  ({ con, browser, context, page } = r);
});

after(async () => {
  await r?.close();
  // The state folder holds the engines' caches (Copilot unpacks ~235 MB
  // into it), so each run would leave that behind.
  rmSync(root, { recursive: true, force: true });
});

test('the one-time link signs the browser in, once', async () => {
  await page.goto(con.link);
  await page.locator('h1', { hasText: 'Sessions' }).waitFor();
  assert.match(page.url(), new RegExp(`^${con.origin}/`));
  // The code is spent: another browser cannot use it.
  const other = await browser.newContext();
  const p2 = await other.newPage();
  const resp = await p2.goto(con.link);
  assert.equal(resp.status(), 403);
  const api = await p2.goto(`${con.origin}/v1/sessions`);
  assert.equal(api.status(), 401);
  await other.close();
  await screenshot(page, 'home');
  await checkA11y('home');
});

test('create a session in the new-session dialog', async () => {
  await page.locator('[data-testid=new-session]').click();
  const form = page.locator('[data-testid=new-session-form]');
  await form.waitFor();
  // The engines and whether each could start come from GET /v1/engines
  // (the first answer runs every CLI's --version: give it time).
  const option = (name) => form.locator(`select[name=engine] option[value=${name}]`);
  await until('engines from the supervisor', async () => ((await option('script').textContent()) ?? '').includes('(ready)'), 120000);
  assert.equal(await form.locator('.hint', { hasText: 'does not report engine readiness' }).count(), 0);
  // Copilot has no github-token here: the dialog says it is not ready, and why.
  assert.match(await option('copilot').textContent(), /not ready/);
  await form.locator('select[name=engine]').selectOption('copilot');
  assert.match(await form.locator('[role=note]').textContent(), /copilot is not ready: .+/);
  await form.locator('select[name=engine]').selectOption('script');
  await form.locator('input[name=cwd]').fill(worktree);
  await form.locator('input[name=scenario]').fill(scenario);
  await form.locator('textarea[name=goal]').fill('notes.txt is reviewed');
  await screenshot(page, 'new-session');
  await checkA11y('new session');
  await form.locator('button[type=submit]').click();
  await page.waitForURL(/#\/sessions\/[0-9a-f]+$/);
  sid = /#\/sessions\/([0-9a-f]+)/.exec(page.url())[1];
  await page.locator('[data-testid=feed]', { hasText: 'live' }).waitFor();
  await page.locator(`[data-testid=session-list] [data-session="${sid}"]`).waitFor();
});

test('send a message and see the streamed answer', async () => {
  await send('hello there');
  await transcript().locator('[data-testid=user-message]', { hasText: 'hello there' }).waitFor();
  await transcript().locator('[data-testid=assistant]', { hasText: 'Echo: message received.' }).waitFor();
  await transcript().locator('[data-testid=turn-end]').first().waitFor();
  await until('idle', async () => (await sessionState()) === 'idle');
});

test('answer an ask: the command runs', async () => {
  await send('please ask first');
  const ask = transcript().locator('[data-testid=ask]').last();
  await ask.locator('[data-testid=allow]').waitFor();
  assert.match(await ask.textContent(), /ls && touch asked\.txt/);
  // Each part of the compound command carries its own verdict.
  assert.match(await ask.locator('.parts').textContent(), /allow.*ls[\s\S]*ask.*touch asked\.txt/);
  await until('waiting badge', async () => (await sessionState()) === 'waiting for you');
  await screenshot(page, 'ask');
  await checkA11y('ask');
  await ask.locator('input').fill('fine in the scratch worktree');
  await ask.locator('[data-testid=allow]').click();
  await ask.locator('[data-testid=ask-outcome]', { hasText: 'Allowed' }).waitFor();
  await transcript().locator('[data-testid=assistant]', { hasText: 'The command ran.' }).waitFor();
  await until('asked.txt', () => existsSync(join(worktree, 'asked.txt')));
});

test('deny an ask from the keyboard alone', async () => {
  await send('you will refuse this one');
  const ask = transcript().locator('[data-testid=ask]').last();
  await ask.locator('[data-testid=deny]').waitFor();
  // Out of the message box, d denies the open ask.
  await transcript().focus();
  await page.keyboard.press('d');
  await ask.locator('[data-testid=ask-outcome]', { hasText: 'Denied' }).waitFor();
  await transcript().locator('[data-testid=assistant]', { hasText: 'Understood, I will not.' }).waitFor();
  assert.equal(existsSync(join(worktree, 'refused.txt')), false, 'a denied command ran');
});

test('accept one hunk and reject another: the file holds exactly the accepted one', async () => {
  await send('now edit the notes');
  const edit = transcript().locator('[data-testid=edit]').last();
  await edit.locator('[data-hunk=h2] [data-testid=reject]').waitFor();
  await until('review state', async () => (await sessionState()) === 'waiting for review');
  await screenshot(page, 'hunks');
  await checkA11y('hunks');
  await edit.locator('.seg button', { hasText: 'Side by side' }).click();
  await edit.locator('table.diff.split').first().waitFor();
  await screenshot(page, 'hunks-side-by-side');
  await checkA11y('hunks side by side');
  await edit.locator('.seg button', { hasText: 'Unified' }).click();
  await edit.locator('[data-hunk=h1] [data-testid=accept]').click();
  await edit.locator('[data-hunk=h1] [data-testid=hunk-outcome]', { hasText: 'accepted' }).waitFor();
  await edit.locator('[data-hunk=h2] input').fill('keep line 19 as it was');
  await edit.locator('[data-hunk=h2] [data-testid=reject]').click();
  await edit.locator('[data-testid=applied]', { hasText: 'Partly applied: h1' }).waitFor();
  await transcript().locator('[data-testid=assistant]', { hasText: 'Edited notes.txt.' }).waitFor();
  const want = notes.replace('line 2\n', 'line two\n');
  assert.equal(readFileSync(join(worktree, 'notes.txt'), 'utf8'), want);
});

test('Stop mid-turn returns its receipt', async () => {
  await send('a long job please');
  await transcript().locator('[data-testid=assistant]', { hasText: 'This takes a while.' }).waitFor();
  await until('working', async () => (await sessionState()) === 'working');
  // The list follows the multiplexed stream: its row says so too.
  await page.locator(`[data-testid=session-list] [data-session="${sid}"][data-state=working]`).waitFor();
  await page.locator('[data-testid=stop]').click();
  const receipt = page.locator('[data-testid=receipt]');
  await receipt.filter({ hasText: 'interrupted the turn' }).waitFor();
  assert.match(await receipt.textContent(), /Stopped: interrupted the turn, denied 0 asks, rejected 0 hunks, cleared 0 queued messages\./);
  await transcript().locator('[data-testid=stopped]').waitFor();
  await until('stopped state', async () => (await sessionState()) === 'stopped');
  await page.locator(`[data-testid=session-list] [data-session="${sid}"][data-state=stopped]`).waitFor();
  await screenshot(page, 'stopped');
  await checkA11y('stopped');
});

test('type in the terminal and see the echo', async () => {
  await page.locator('[data-testid=tab-terminal]').click();
  await page.locator('[data-testid=term-state]', { hasText: 'attached (owner)' }).waitFor();
  await page.locator('.xterm-helper-textarea').focus();
  await page.keyboard.type('echo $((6*7))xyz\n');
  await until('echo in the terminal', async () =>
    /42xyz/.test(await page.locator('.xterm-rows').textContent()));
  await screenshot(page, 'terminal');
  await checkA11y('terminal');
  await page.locator('[data-testid=tab-transcript]').click();
});

test('a supervisor killed and started again: the page resumes without a reload', async () => {
  await page.evaluate(() => { window.__sameDocument = true; });
  const before = Number(await page.locator('[data-session-view]').getAttribute('data-last-seq'));
  await r.sup.kill('SIGKILL');
  await page.locator('[data-testid=feed]', { hasText: 'reconnecting' }).waitFor();
  await screenshot(page, 'reconnecting');
  r.sup = new Supervisor(r.state);
  await r.sup.start();
  await page.locator('[data-testid=feed]', { hasText: 'live' }).waitFor();
  await send('back after the restart');
  await transcript().locator('[data-testid=user-message]', { hasText: 'back after the restart' }).waitFor();
  await until('the answer after the restart', async () =>
    (await transcript().locator('[data-testid=assistant]', { hasText: 'Echo: message received.' }).count()) >= 2);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the page was reloaded');
  const after = Number(await page.locator('[data-session-view]').getAttribute('data-last-seq'));
  assert.ok(after > before, `seq went on: ${before} → ${after}`);
  // Nothing twice: every seq on screen is unique.
  const seqs = await transcript().locator('[data-seq]').evaluateAll((els) => els.map((e) => e.getAttribute('data-seq')));
  assert.equal(new Set(seqs).size, seqs.length);
});

test('two tabs on one session agree', async () => {
  const other = await context.newPage();
  await other.goto(`${con.origin}/#/sessions/${sid}`);
  await other.locator('[data-testid=feed]', { hasText: 'live' }).waitFor();
  await send('seen by both tabs');
  for (const p of [page, other]) {
    await p.locator('[data-testid=transcript] [data-testid=user-message]', { hasText: 'seen by both tabs' }).waitFor();
  }
  await until('same last seq', async () => {
    const a = await page.locator('[data-session-view]').getAttribute('data-last-seq');
    const b = await other.locator('[data-session-view]').getAttribute('data-last-seq');
    return a === b && (await sessionState(page)) === 'idle' && (await sessionState(other)) === 'idle';
  });
  const text = (p) => p.locator('[data-testid=transcript]').evaluate((el) =>
    [...el.querySelectorAll('[data-seq]')].map((e) => `${e.getAttribute('data-seq')}:${e.textContent}`).join('\n'));
  assert.equal(await text(other), await text(page));
  await other.close();
});

test('a workspace: the branch diff, a review note to the agent, commit, merge into the base', async () => {
  const repo = newWorktree(root, 'repo', { 'notes.txt': notes });
  const git = (...args) => run('git', ['-C', repo, ...args]);
  for (const args of [['init', '-q', '-b', 'main'], ['add', '.'], ['-c', 'user.name=T', '-c', 'user.email=t@example.com', 'commit', '-qm', 'start']]) {
    const r = await git(...args);
    assert.equal(r.code, 0, r.err);
  }
  await page.locator('[data-testid=new-session]').click();
  const form = page.locator('[data-testid=new-session-form]');
  await form.locator('input[name=cwd]').fill(repo);
  await form.locator('input[name=scenario]').fill(scenario);
  await form.locator('input[name=mode][value=auto]').check();
  await form.locator('input[name=workspace]').check();
  await form.locator('input[name=base]').fill('main');
  await form.locator('button[type=submit]').click();
  await page.waitForURL(/#\/sessions\/[0-9a-f]+$/);
  await page.locator('[data-testid=feed]', { hasText: 'live' }).waitFor();
  // Auto mode: the edit lands at once, in the workspace only.
  await send('edit the notes');
  await transcript().locator('[data-testid=assistant]', { hasText: 'Edited notes.txt.' }).waitFor();
  assert.equal(readFileSync(join(repo, 'notes.txt'), 'utf8'), notes, 'the edit reached the base repository');
  await page.locator('[data-testid=tab-workspace]').click();
  const ws = page.locator('[data-testid=workspace]');
  await ws.locator('.file-head', { hasText: 'notes.txt' }).waitFor();
  await screenshot(page, 'workspace');
  await checkA11y('workspace');
  // A review note on a diff line goes to the agent as the next message.
  await ws.locator('button[aria-label="Note on line 2"]').first().click();
  await ws.locator('.notebox textarea').fill('say two as a digit');
  await ws.locator('.notebox button', { hasText: 'Send as next message' }).click();
  await ws.locator('[data-testid=commit-message]').fill('Notes: two and nineteen');
  await ws.locator('button', { hasText: 'Commit' }).click();
  await ws.locator('.receipt', { hasText: 'Committed' }).waitFor();
  await ws.locator('button', { hasText: 'Merge into main' }).click();
  await ws.locator('[data-testid=merge-result]', { hasText: 'Merged into main' }).waitFor();
  assert.equal(readFileSync(join(repo, 'notes.txt'), 'utf8'), notes.replace('line 2\n', 'line two\n').replace('line 19\n', 'line nineteen\n'));
  await page.locator('[data-testid=tab-transcript]').click();
  await transcript().locator('[data-testid=user-message]', { hasText: 'Review note on notes.txt:2' }).waitFor();
  await page.goto(`${con.origin}/#/sessions/${sid}`);
  await page.locator('[data-testid=feed]', { hasText: 'live' }).waitFor();
});

test('dark theme and the session list pass axe too', async () => {
  await page.locator('button', { hasText: 'Dark' }).click();
  await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
  await screenshot(page, 'session-dark');
  await checkA11y('session, dark');
  await page.locator('.chip', { hasText: 'Idle' }).click();
  await page.locator(`[data-testid=session-list] [data-session="${sid}"]`).waitFor();
  await page.locator('button', { hasText: 'Light' }).click();
  await screenshot(page, 'session');
  await checkA11y('session, light');
});
