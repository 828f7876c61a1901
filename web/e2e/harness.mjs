// The browser tests' rig: a real supervisor (the binaries the Go test
// built), `supervisor console` in front of it, and Debian's Chromium
// driven by playwright-core. Nothing here downloads anything.
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync, mkdirSync, writeFileSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);
export const here = dirname(new URL(import.meta.url).pathname);
export const bin = process.env.CORRAL_BIN ?? join(here, '..', '..', 'bin');
export const shots = process.env.CORRAL_SCREENSHOTS ?? mkdtempSync(join(tmpdir(), 'corral-shots-'));
const chromiumPath = process.env.CORRAL_CHROMIUM ?? '/usr/bin/chromium';

/** Supervisor is one `supervisor serve` on a state folder. */
export class Supervisor {
  constructor(state) {
    this.state = state;
    this.proc = undefined;
    this.log = [];
  }
  async start() {
    // Sessions get their credentials from an empty credentials file, not
    // from this user's keyring: what the console shows of the engines'
    // readiness is the same on every machine.
    const creds = join(mkdtempSync(join(tmpdir(), 'corral-creds-')), 'credentials.json');
    writeFileSync(creds, '{}', { mode: 0o600 });
    const p = spawn(join(bin, 'supervisor'), ['serve', '--state', this.state, '--idle-ttl', '10m', '--log-level', 'warn', '--stop-runners-on-exit', '--credentials', creds], {
      env: { ...process.env, SHELL: '/bin/sh', CORRAL_STATE: this.state },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    p.stderr.on('data', (d) => this.log.push(String(d)));
    this.proc = p;
    const exited = new Promise((r) => p.once('exit', r));
    this.exited = exited;
    const sock = join(this.state, 'supervisor.sock');
    // Ready when the health route answers over the socket.
    for (let i = 0; i < 400; i++) {
      if (existsSync(sock) && (await this.cli(['ls', '--json'])).code === 0) return;
      await sleep(25);
    }
    throw new Error(`supervisor did not start: ${this.log.join('')}`);
  }
  /** kill ends it with a signal and waits for it to be gone. */
  async kill(signal = 'SIGKILL') {
    this.proc.kill(signal);
    await this.exited;
  }
  cli(args) {
    return run(join(bin, 'supervisor'), [...args, '--state', this.state]);
  }
  /** api sends one request to the HTTP API over the unix socket and returns {status, body}. */
  api(method, path, body) {
    return new Promise((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = request({
        socketPath: join(this.state, 'supervisor.sock'), path: '/v1' + path, method,
        headers: data === undefined ? {} : { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) },
      }, (resp) => {
        let text = '';
        resp.setEncoding('utf8');
        resp.on('data', (d) => (text += d));
        resp.on('end', () => {
          try {
            resolve({ status: resp.statusCode, body: JSON.parse(text) });
          } catch (e) {
            reject(new Error(`${method} ${path}: ${resp.statusCode} ${text}`));
          }
        });
      });
      req.on('error', reject);
      req.end(data);
    });
  }
}

/**
 * rig starts what every browser test file needs: a supervisor on a fresh
 * state folder, `supervisor console` in front of it, Chromium, and a page
 * signed in through the one-time link. close() stops them all.
 */
export async function rig(root, { contextOptions = {} } = {}) {
  const state = join(root, 'state');
  const sup = new Supervisor(state);
  await sup.start();
  const con = await startConsole(state);
  const browser = await launch();
  const context = await browser.newContext({ viewport: { width: 1280, height: 820 }, ...contextOptions });
  const page = await context.newPage();
  page.on('pageerror', (e) => console.error('page error:', e));
  const r = {
    state, sup, con, browser, context, page,
    async signIn() {
      await page.goto(con.link);
      await page.locator('h1', { hasText: 'Sessions' }).waitFor();
    },
    async close() {
      await browser.close();
      con.proc.kill('SIGTERM');
      if (r.sup.proc && r.sup.proc.exitCode === null) await r.sup.kill('SIGTERM');
    },
  };
  return r;
}

export function run(cmd, args, opts = {}) {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('exit', (code) => resolve({ code, out, err }));
  });
}

/** startConsole runs `supervisor console` and returns its one-time link. */
export async function startConsole(state) {
  const p = spawn(join(bin, 'supervisor'), ['console', '--state', state, '--open=false'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  p.stderr.on('data', (d) => (err += d));
  const link = await new Promise((resolve, reject) => {
    p.stdout.on('data', (d) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl).trim());
    });
    p.once('exit', (code) => reject(new Error(`supervisor console exited ${code}: ${err}`)));
  });
  const url = new URL(link);
  return { proc: p, link, origin: url.origin };
}

export async function launch() {
  // playwright-core gives every launch a fresh, temporary profile
  // (--user-data-dir) of its own.
  const args = [
    '--headless', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync',
  ];
  if (process.getuid?.() === 0) args.push('--no-sandbox');
  return chromium.launch({ executablePath: chromiumPath, args, headless: true });
}

/** newWorktree makes a folder for a session to work in. */
export function newWorktree(root, name, files = {}) {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [f, body] of Object.entries(files)) writeFileSync(join(dir, f), body);
  return dir;
}

export async function screenshot(page, name) {
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, `${name}.png`) });
}

const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** axe runs axe-core on the page and returns its serious and critical violations. */
export async function axe(page) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) {
    // The console's CSP forbids inline scripts; evaluate runs outside it.
    await page.evaluate(axeSource);
  }
  const res = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  return res.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/**
 * pageHelpers are the steps every test file takes on a session's page;
 * page() is the file's current page, used unless another is given.
 */
export function pageHelpers(page) {
  const transcript = (p = page()) => p.locator('[data-testid=transcript]');
  async function send(text, p = page()) {
    await p.locator('[data-testid=composer]').fill(text);
    await p.locator('[data-testid=composer]').press('Enter');
  }
  async function sessionState(p = page()) {
    return p.locator('.session-head [data-testid=state]').textContent();
  }
  /** checkA11y fails on any serious or critical violation axe-core finds. */
  async function checkA11y(name, p = page()) {
    assert.deepEqual(await axe(p), [], `${name}: axe-core found serious or critical violations`);
  }
  return { transcript, send, sessionState, checkA11y };
}

/** until polls fn until it returns a truthy value, or fails after ms. */
export async function until(what, fn, ms = 30000) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what} (last: ${last})`);
    await sleep(50);
  }
}
