// The console's actions on a session beyond issue #23's proof
// (docs/console.md), in real headless Chromium against a real supervisor
// on the script engine: the opt-in notification when a session starts
// waiting (the list follows GET /v1/events, never polling), "new session"
// and GET /v1/engines, the mode switch and reverting an auto-mode hunk (the
// bytes on disk), the spend cap holding the queue and cancelling a queued
// message, fork, and delete.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rig, newWorktree, screenshot, until, here, pageHelpers } from './harness.mjs';

const root = mkdtempSync(join(tmpdir(), 'corral-console-actions-'));
const scenario = join(here, 'actions.yaml');
const notes = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join('');
const worktree = newWorktree(root, 'work', { 'notes.txt': notes });

let r;
let page;
let origin;
let waiting; // a session left waiting for its ask, deleted at the end
let sid; // the session the page made

// Each Notification the page constructs is recorded before the browser's
// own constructor runs; the permission is granted through playwright.
function recordNotifications() {
  window.__notes = [];
  const Real = window.Notification;
  window.Notification = class extends Real {
    constructor(title, options) {
      super(title, options);
      window.__notes.push({ title, body: options?.body });
    }
  };
}

const { transcript, send, sessionState, checkA11y } = pageHelpers(() => page);

before(async () => {
  r = await rig(root);
  page = r.page;
  origin = r.con.origin;
  await r.context.grantPermissions(['notifications'], { origin });
  await r.context.addInitScript(recordNotifications);
  await r.signIn();
});

after(async () => {
  await r?.close();
  // The state folder holds the engines' caches (Copilot unpacks ~235 MB
  // into it), so each run would leave that behind.
  rmSync(root, { recursive: true, force: true });
});

test('notify me: a session that starts waiting raises a notification, and the list never polls', async () => {
  const listReads = [];
  page.on('request', (req) => {
    if (req.method() === 'GET' && new URL(req.url()).pathname === '/v1/sessions') listReads.push(req.url());
  });
  const toggle = page.locator('button', { hasText: 'Notify me' });
  await toggle.click();
  await page.locator('button[aria-pressed=true]', { hasText: 'Notifying' }).waitFor();
  const made = await r.sup.cli(['new', '--engine', 'script', '--cwd', worktree, '--scenario', scenario]);
  assert.equal(made.code, 0, made.err);
  waiting = made.out.trim();
  const row = page.locator(`[data-testid=session-list] [data-session="${waiting}"]`);
  await row.waitFor();
  const readsBefore = listReads.length;
  const sent = await r.sup.cli(['send', waiting, 'please ask first']);
  assert.equal(sent.code, 0, sent.err);
  await page.locator(`[data-testid=session-list] [data-session="${waiting}"][data-state=waitingForApproval]`).waitFor();
  await page.locator('[data-testid=waiting-badge]', { hasText: '1 waiting for you' }).waitFor();
  const shown = await until('the notification', () => page.evaluate(() => window.__notes.length > 0 && window.__notes));
  assert.deepEqual(shown, [{ title: `Corral: session ${waiting} waiting for you`, body: 'waiting for approval: Bash' }]);
  assert.equal(await page.title(), '(1) Corral');
  // The row moved on the multiplexed stream's items: the list was not read again.
  assert.equal(listReads.length, readsBefore, `GET /v1/sessions again: ${listReads}`);
});

test('new session: the engines come from GET /v1/engines when the supervisor serves it', async () => {
  await page.locator('[data-testid=new-session]').click();
  const form = page.locator('[data-testid=new-session-form]');
  await form.waitFor();
  const engines = await r.sup.api('GET', '/engines');
  const options = () => form.locator('select[name=engine] option').allTextContents();
  if (engines.status === 404) {
    await form.locator('.hint', { hasText: 'does not report engine readiness' }).waitFor();
    assert.deepEqual(await options(), ['script', 'claude', 'codex', 'copilot']);
  } else {
    assert.equal(engines.status, 200, JSON.stringify(engines.body));
    const want = engines.body.engines.map((e) => `${e.name} (${e.ready ? 'ready' : 'not ready'})`);
    await until('the engines of GET /v1/engines', async () => JSON.stringify(await options()) === JSON.stringify(want));
    const notReady = engines.body.engines.find((e) => !e.ready);
    if (notReady) {
      await form.locator('select[name=engine]').selectOption(notReady.name);
      await form.locator('.warn', { hasText: `${notReady.name} is not ready` }).waitFor();
    }
  }
  await form.locator('select[name=engine]').selectOption('script');
  await form.locator('input[name=cwd]').fill(worktree);
  await form.locator('input[name=scenario]').fill(scenario);
  await form.locator('button[type=submit]').click();
  await page.waitForURL(/#\/sessions\/[0-9a-f]+$/);
  sid = /#\/sessions\/([0-9a-f]+)/.exec(page.url())[1];
  await page.locator('[data-testid=feed]', { hasText: 'live' }).waitFor();
});

test('the mode switch: in auto mode an edit lands at once, and Revert takes one hunk back out', async () => {
  const mode = page.locator('.session-head select');
  assert.equal(await mode.inputValue(), 'review');
  await mode.selectOption('auto');
  await transcript().locator('.notice', { hasText: 'Mode set to auto' }).waitFor();
  await send('autoedit please');
  const edit = transcript().locator('[data-testid=edit]').last();
  await edit.locator('.tag', { hasText: 'auto' }).waitFor();
  await transcript().locator('[data-testid=assistant]', { hasText: 'now a long pause' }).waitFor();
  const both = notes.replace('line 2\n', 'line two\n').replace('line 19\n', 'line nineteen\n');
  assert.equal(readFileSync(join(worktree, 'notes.txt'), 'utf8'), both, 'the auto-mode edit did not land');
  // The turn is still open: its hunks can be reverted.
  await edit.locator('[data-hunk=h2] [data-testid=reject]', { hasText: 'Revert h2' }).click();
  await edit.locator('[data-testid=applied]', { hasText: 'Reverted h2' }).waitFor();
  assert.equal(readFileSync(join(worktree, 'notes.txt'), 'utf8'), notes.replace('line 2\n', 'line two\n'));
  await screenshot(page, 'auto-revert');
  await checkA11y('auto mode revert');
  await page.locator('[data-testid=stop]').click();
  await page.locator('[data-testid=receipt]', { hasText: 'interrupted the turn' }).waitFor();
  // The turn has ended: its auto-applied hunks stay revertible until the
  // next turn starts.
  await edit.locator('[data-hunk=h1] [data-testid=reject]', { hasText: 'Revert h1' }).click();
  await edit.locator('[data-testid=applied]', { hasText: 'Reverted h1' }).waitFor();
  assert.equal(readFileSync(join(worktree, 'notes.txt'), 'utf8'), notes);
  await send('hello after the revert');
  await transcript().locator('[data-testid=assistant]', { hasText: 'Echo: message received.' }).last().waitFor();
  await until('no revert once the next turn started', async () => (await edit.locator('[data-testid=reject]').count()) === 0);
  await mode.selectOption('review');
  await transcript().locator('.notice', { hasText: 'Mode set to review' }).waitFor();
});

test('the spend cap holds the queue until it is raised; a queued message can be cancelled', async () => {
  const side = page.locator('aside.side-panel');
  const setCap = async (usd) => {
    await side.locator('input[inputmode=decimal]').fill(String(usd));
    await side.locator('button', { hasText: 'Set' }).click();
  };
  await setCap(0.25);
  await transcript().locator('.notice', { hasText: 'Spend cap set to $0.25' }).waitFor();
  assert.equal(await side.locator('dt:text-is("Spend cap") + dd').textContent(), '$0.25');
  await send('pricey job');
  await transcript().locator('.failure', { hasText: 'spendCap' }).waitFor();
  // 'hello one' is held on its way out while 'hello two' is typed and
  // sent: the page sends them in the order they were typed, and never
  // wipes what is typed while a message goes out.
  let release;
  let sent;
  const held = new Promise((ok) => { release = ok; });
  const out = new Promise((ok) => { sent = ok; });
  const commands = `**/v1/sessions/${sid}/commands`;
  await page.route(commands, async (route) => {
    const first = route.request().postData()?.includes('"hello one"');
    if (first) await held;
    await route.continue();
    if (first) sent();
  });
  await send('hello one');
  await page.locator('[data-testid=composer]').fill('hello two');
  assert.equal(await page.locator('[data-testid=composer]').inputValue(), 'hello two');
  await page.locator('[data-testid=composer]').press('Enter');
  release();
  await out;
  await page.unroute(commands);
  const queue = page.locator('[data-testid=queue]');
  await queue.locator('li', { hasText: 'hello two' }).waitFor();
  assert.match(await queue.textContent(), /hello one[\s\S]*hello two/);
  await transcript().locator('[data-testid=user-message].queued', { hasText: 'hello two' }).waitFor();
  // Held by its cap with messages queued, the session needs a person: the
  // header and its row say so.
  await page.locator('.session-head [data-testid=held]').waitFor();
  await page.locator(`[data-testid=session-list] [data-session="${sid}"] [data-testid=held]`).waitFor();
  await screenshot(page, 'spend-cap');
  await checkA11y('spend cap');
  await queue.locator('li', { hasText: 'hello two' }).locator('button', { hasText: 'Cancel' }).click();
  await until('hello two left the queue', async () => (await queue.locator('li').allTextContents()).join('|').match(/^queued hello one\s*Cancel$/));
  await until('hello two no longer marked queued', async () =>
    (await transcript().locator('[data-testid=user-message].queued', { hasText: 'hello two' }).count()) === 0);
  const echoes = await transcript().locator('[data-testid=assistant]', { hasText: 'Echo: message received.' }).count();
  await setCap(10);
  await transcript().locator('.notice', { hasText: 'Spend cap set to $10' }).waitFor();
  await until('hello one ran', async () =>
    (await transcript().locator('[data-testid=assistant]', { hasText: 'Echo: message received.' }).count()) === echoes + 1);
  await until('idle', async () => (await sessionState()) === 'idle');
  await until('the held badge gone', async () => (await page.locator('.session-head [data-testid=held]').count()) === 0);
  assert.equal(await queue.count(), 0, 'the queue is empty');
  assert.equal(await transcript().locator('[data-testid=assistant]', { hasText: 'Echo: message received.' }).count(), echoes + 1, 'the cancelled message ran');
});

test('fork: the conversation goes on under a new id, the original stays', async () => {
  await page.locator('.session-head button', { hasText: 'Fork' }).click();
  await page.waitForURL((u) => /#\/sessions\/[0-9a-f]+$/.test(u.href) && !u.href.endsWith(sid));
  const fork = /#\/sessions\/([0-9a-f]+)/.exec(page.url())[1];
  await page.locator('[data-testid=feed]', { hasText: 'live' }).waitFor();
  await transcript().locator('.notice', { hasText: `Goes on from session ${sid} (forked)` }).waitFor();
  // The fork holds the conversation so far.
  await transcript().locator('[data-testid=user-message]', { hasText: 'hello one' }).waitFor();
  await send('after the fork');
  await transcript().locator('[data-testid=user-message]', { hasText: 'after the fork' }).waitFor();
  await until('the fork answers', async () => (await sessionState()) === 'idle' &&
    (await transcript().locator('[data-testid=assistant]', { hasText: 'Echo: message received.' }).count()) >= 2);
  for (const id of [sid, fork]) {
    await page.locator(`[data-testid=session-list] [data-session="${id}"]`).waitFor();
    assert.ok(existsSync(join(r.state, 'sessions', id)), `no folder for ${id}`);
  }
  // The original, opened again, did not get the message sent to the fork.
  await page.goto(`${origin}/#/sessions/${sid}`);
  await page.locator('[data-testid=feed]', { hasText: 'live' }).waitFor();
  await transcript().locator('.notice', { hasText: `Continues as session ${fork} (forked)` }).waitFor();
  assert.equal(await transcript().locator('[data-testid=user-message]', { hasText: 'after the fork' }).count(), 0);
});

test('delete: the session and its folder go, and every tab sees it', async () => {
  await page.goto(`${origin}/#/sessions/${waiting}`);
  await page.locator('[data-testid=feed]', { hasText: 'live' }).waitFor();
  const other = await r.context.newPage();
  await other.goto(`${origin}/#/sessions/${waiting}`);
  await other.locator('[data-testid=feed]', { hasText: 'live' }).waitFor();
  page.once('dialog', (d) => d.accept());
  await page.locator('.session-head button', { hasText: 'Delete' }).click();
  await page.waitForURL(`${origin}/#/`);
  for (const p of [page, other]) {
    await until('the row is gone', async () => (await p.locator(`[data-testid=session-list] [data-session="${waiting}"]`).count()) === 0);
  }
  await other.locator('[data-testid=feed]', { hasText: 'session deleted' }).waitFor();
  assert.equal(existsSync(join(r.state, 'sessions', waiting)), false, 'the folder is still there');
  assert.equal(await page.title(), 'Corral', 'nothing waits any more');
  await other.close();
});
