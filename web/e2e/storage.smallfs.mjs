// A session whose state folder fills up while its page is open: the page
// shows storageFailed without a reload, and the session comes back once
// there is room. The state folder is a small real tmpfs, which only a test
// process in a mount namespace of its own has (Go's TestConsoleStorageFailed
// in internal/console/browsertest runs this file there and names the folder
// in CORRAL_SMALLFS_ROOT), so this file is not one of the *.test.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rig, newWorktree, screenshot, until, here, pageHelpers } from './harness.mjs';

const root = process.env.CORRAL_SMALLFS_ROOT;
const work = mkdtempSync(join(tmpdir(), 'corral-storage-e2e-'));
const worktree = newWorktree(work, 'work', { 'notes.txt': 'line 1\n' });

let r;
let page;
let sid;

const { sessionState, checkA11y } = pageHelpers(() => page);

before(async () => {
  assert.ok(root, 'CORRAL_SMALLFS_ROOT names the small tmpfs to run on');
  r = await rig(root);
  page = r.page;
  await r.signIn();
  const made = await r.sup.api('POST', '/sessions', { engine: 'script', cwd: worktree, scenario: join(here, 'scenario.yaml') });
  assert.equal(made.status, 201, JSON.stringify(made.body));
  sid = made.body.session.id;
  await page.goto(`${r.con.origin}/#/sessions/${sid}`);
  await page.locator('[data-testid=feed]', { hasText: 'live' }).waitFor();
});

after(async () => {
  await r?.close();
  rmSync(work, { recursive: true, force: true });
});

test('a session that cannot record shows it while its page is open, and recovers', async () => {
  // Leave no room, then send until the session's log refuses a write.
  const { bavail, bsize } = statfsSync(root);
  const filler = join(root, 'filler');
  writeFileSync(filler, Buffer.alloc(bavail * bsize));
  let refused;
  for (let i = 0; !refused; i++) {
    assert.ok(i < 2000, 'the disk never filled');
    const res = await r.sup.api('POST', `/sessions/${sid}/commands`, { cmd: 'send', text: `message ${i}` });
    if (res.status !== 200) refused = res;
  }
  assert.equal(refused.status, 507, JSON.stringify(refused.body));
  assert.equal(refused.body.error.code, 'storage_unavailable');

  // No reload: the page learns it from the feed.
  await until('the storageFailed badge', async () => (await sessionState()) === 'out of disk space');
  await page.locator('[data-testid=storage-failed]').waitFor();
  const row = page.locator(`[data-testid=session-list] [data-session="${sid}"]`);
  await until('the list row', async () => (await row.getAttribute('data-state')) === 'storageFailed');
  await screenshot(page, 'storage-failed');
  await checkA11y('storage failed');

  // Room again: the runner's own probe recovers the session.
  rmSync(filler);
  await until('the badge gone', async () => (await sessionState()) !== 'out of disk space');
  assert.equal(await page.locator('[data-testid=storage-failed]').count(), 0);
  await until('the list row back', async () => (await row.getAttribute('data-state')) !== 'storageFailed');
});
