// Browser access (docs/api.md, "Browsers"): a page on an allowed origin
// signs in with a login code, creates a session, streams its events with
// the cookie and with a ticket, and runs a terminal over the WebSocket;
// pages on other origins try every route and must get nothing. Prints one
// JSON object: {good, others: {origin: {results, statuses}}}.
import { config, launch } from './launch.mjs';

const ctx = await launch();
try {
  const out = { good: null, others: {} };

  const good = await ctx.newPage();
  await good.goto(`${config.good}/#code=${config.code}`);
  out.good = await good.evaluate(goodPage, { sup: config.sup, cwd: config.cwd });

  for (const origin of config.others) {
    const page = await ctx.newPage();
    // What the supervisor answered, as the browser's network layer saw
    // it: a page cannot read a refused cross-origin answer itself.
    const statuses = [];
    page.on('response', (r) => {
      if (r.url().startsWith(config.sup)) statuses.push({ url: r.url(), method: r.request().method(), status: r.status() });
    });
    await page.goto(`${origin}/`);
    const results = await page.evaluate(otherPage, { sup: config.sup, id: out.good.id, marker: config.marker });
    out.others[origin] = { results, statuses };
  }
  console.log(JSON.stringify(out));
} finally {
  await ctx.close();
}

// goodPage runs in the allowed origin's page.
async function goodPage({ sup, cwd }) {
  const out = {};
  const json = { 'Content-Type': 'application/json' };
  const code = new URLSearchParams(location.hash.slice(1)).get('code');
  let r = await fetch(`${sup}/v1/auth/session`, { method: 'POST', credentials: 'include', headers: json, body: JSON.stringify({ code }) });
  out.signIn = r.status;
  // The same code a second time.
  r = await fetch(`${sup}/v1/auth/session`, { method: 'POST', credentials: 'include', headers: json, body: JSON.stringify({ code }) });
  out.signInAgain = r.status;

  r = await fetch(`${sup}/v1/sessions`, { method: 'POST', credentials: 'include', headers: json, body: JSON.stringify({ engine: 'script', cwd }) });
  out.create = r.status;
  const created = await r.json();
  out.id = created.session && created.session.id;
  r = await fetch(`${sup}/v1/sessions`, { credentials: 'include' });
  out.list = r.status;

  // Events with the cookie: EventSource sends it (same site).
  out.cookieEvents = await firstEvent(new EventSource(`${sup}/v1/sessions/${out.id}/events`, { withCredentials: true }));

  // Events with a ticket, and no cookie.
  r = await fetch(`${sup}/v1/auth/ticket`, { method: 'POST', credentials: 'include' });
  const { ticket } = await r.json();
  out.ticketEvents = await firstEvent(new EventSource(`${sup}/v1/sessions/${out.id}/events?ticket=${ticket}`));
  // A used ticket opens nothing.
  out.usedTicketEvents = await firstEvent(new EventSource(`${sup}/v1/sessions/${out.id}/events?ticket=${ticket}`));

  // The terminal: a program that prints and exits.
  const ws = sup.replace(/^http/, 'ws');
  const q = new URLSearchParams([['role', 'owner'], ['command', 'sh'], ['command', '-c'], ['command', 'echo hello-from-the-page']]);
  out.terminal = await terminal(new WebSocket(`${ws}/v1/sessions/${out.id}/terminals/page?${q}`));
  r = await fetch(`${sup}/v1/auth/ticket`, { method: 'POST', credentials: 'include' });
  const second = (await r.json()).ticket;
  q.set('ticket', second);
  q.set('command', 'sh');
  q.append('command', '-c');
  q.append('command', 'echo hello-with-a-ticket');
  out.ticketTerminal = await terminal(new WebSocket(`${ws}/v1/sessions/${out.id}/terminals/ticket?${q}`));

  out.cookieVisible = document.cookie;
  return out;

  function firstEvent(es) {
    return new Promise((resolve) => {
      es.addEventListener('sessionStarted', (e) => {
        es.close();
        resolve({ type: JSON.parse(e.data).type, lastEventId: e.lastEventId });
      });
      es.onerror = () => {
        es.close();
        resolve({ error: true });
      };
    });
  }

  function terminal(sock) {
    return new Promise((resolve) => {
      sock.binaryType = 'arraybuffer';
      let opened = null;
      let output = '';
      sock.onmessage = (m) => {
        if (typeof m.data !== 'string') {
          output += new TextDecoder().decode(m.data);
          return;
        }
        const f = JSON.parse(m.data);
        if (f.type === 'opened') opened = f;
        if (f.type === 'exit') {
          sock.close();
          resolve({ opened, output, exitCode: f.exitCode });
        }
      };
      sock.onerror = () => resolve({ error: true, opened, output });
    });
  }
}

// otherPage runs in a page of an origin that is not allowed. Each attempt
// records what the page could learn; the supervisor's own answers are
// recorded by the driver.
async function otherPage({ sup, id, marker }) {
  const out = {};
  const attempt = async (name, path, init) => {
    try {
      const r = await fetch(`${sup}${path}`, { credentials: 'include', ...init });
      let body = null;
      try {
        body = await r.text();
      } catch (e) {
        body = null;
      }
      out[name] = { status: r.status, type: r.type, body };
    } catch (e) {
      out[name] = { error: String(e) };
    }
  };
  const text = { 'Content-Type': 'text/plain' };
  const json = { 'Content-Type': 'application/json' };
  await attempt('health', '/v1/health');
  await attempt('list', '/v1/sessions');
  await attempt('get', `/v1/sessions/${id}`);
  await attempt('create', '/v1/sessions', { method: 'POST', headers: json, body: '{"engine":"script"}' });
  // no-cors: the browser sends these without a preflight, with the cookie
  // when the page is on the same site; only the supervisor can refuse.
  await attempt('createNoCors', '/v1/sessions', { method: 'POST', mode: 'no-cors', headers: text, body: '{"engine":"script"}' });
  await attempt('sendNoCors', `/v1/sessions/${id}/commands`, { method: 'POST', mode: 'no-cors', headers: text, body: '{"cmd":"send","text":"from-another-origin"}' });
  await attempt('delete', `/v1/sessions/${id}`, { method: 'DELETE' });
  await attempt('eventsFetch', `/v1/sessions/${id}/events?follow=false`);
  await attempt('ticketNoCors', '/v1/auth/ticket', { method: 'POST', mode: 'no-cors' });
  await attempt('ticket', '/v1/auth/ticket', { method: 'POST' });
  await attempt('codeNoCors', '/v1/auth/code', { method: 'POST', mode: 'no-cors' });
  await attempt('signOut', '/v1/auth/session', { method: 'DELETE' });

  out.events = await new Promise((resolve) => {
    const es = new EventSource(`${sup}/v1/sessions/${id}/events`, { withCredentials: true });
    es.onmessage = () => {
      es.close();
      resolve({ got: true });
    };
    es.addEventListener('sessionStarted', () => {
      es.close();
      resolve({ got: true });
    });
    es.onerror = () => {
      es.close();
      resolve({ error: true });
    };
  });

  const ws = sup.replace(/^http/, 'ws');
  const q = new URLSearchParams([['role', 'owner'], ['command', 'sh'], ['command', '-c'], ['command', `touch ${marker}`]]);
  out.terminal = await new Promise((resolve) => {
    const sock = new WebSocket(`${ws}/v1/sessions/${id}/terminals/other?${q}`);
    sock.onopen = () => {
      sock.close();
      resolve({ opened: true });
    };
    sock.onerror = () => resolve({ error: true });
  });
  return out;
}
