// The console's shell: a header, the session list beside the open session
// or graph run, the hash route (#/sessions/ID, #/new, #/graphs,
// #/graphs/RUN) and the theme. Routes live in the fragment, so the
// supervisor serves one page and a reload keeps its place.
import { useEffect, useState } from 'preact/hooks';
import { SessionList, useSessions } from './sessions';
import { NewSession } from './newsession';
import { SessionView } from './session';
import { GraphList, GraphView } from './graphs';

type Route =
  | { name: 'home' } | { name: 'session'; id: string } | { name: 'new' } | { name: 'graphs' } | { name: 'graph'; run: string };

function parseRoute(hash: string): Route {
  const m = /^#\/sessions\/([A-Za-z0-9_-]+)/.exec(hash);
  if (m) return { name: 'session', id: m[1] };
  const g = /^#\/graphs\/([A-Za-z0-9_-]+)/.exec(hash);
  if (g) return { name: 'graph', run: g[1] };
  if (hash.startsWith('#/graphs')) return { name: 'graphs' };
  if (hash.startsWith('#/new')) return { name: 'new' };
  return { name: 'home' };
}

export function navigate(to: string): void {
  location.hash = to;
}

type Theme = 'light' | 'dark';

function initialTheme(): Theme {
  const saved = localStorage.getItem('corral.theme');
  if (saved === 'light' || saved === 'dark') return saved;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

export function App() {
  const [route, setRoute] = useState<Route>(parseRoute(location.hash));
  const [theme, setTheme] = useState<Theme>(initialTheme);
  const sessions = useSessions();

  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);

  const waiting = sessions.list.filter((s) => s.waiting).length;
  useEffect(() => {
    document.title = waiting ? `(${waiting}) Corral` : 'Corral';
  }, [waiting]);

  const flipTheme = () => {
    const next: Theme = theme === 'dark' ? 'light' : 'dark';
    localStorage.setItem('corral.theme', next);
    setTheme(next);
  };

  return (
    <div class="shell">
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <a class="brand" href="#/">Corral</a>
        <nav aria-label="Views" class="views">
          <a href="#/" aria-current={route.name === 'home' || route.name === 'session' || route.name === 'new' ? 'page' : undefined}>Sessions</a>
          <a href="#/graphs" aria-current={route.name === 'graphs' || route.name === 'graph' ? 'page' : undefined} data-testid="nav-graphs">Graph runs</a>
        </nav>
        {waiting > 0 && (
          <span class="badge waiting" role="status" data-testid="waiting-badge">
            {waiting} waiting for you
          </span>
        )}
        <span class="spacer" />
        {sessions.error && <span class="conn bad" role="status">{sessions.error}</span>}
        <NotifyToggle />
        <button type="button" class="ghost" onClick={flipTheme} aria-label={`Switch to ${theme === 'dark' ? 'light' : 'dark'} theme`}>
          {theme === 'dark' ? '☀ Light' : '☾ Dark'}
        </button>
        <a class="button primary" href="#/new" data-testid="new-session">New session</a>
      </header>
      <div class="body">
        <nav class="side" aria-label="Sessions">
          <SessionList sessions={sessions} current={route.name === 'session' ? route.id : undefined} />
        </nav>
        <main id="main" class="main" tabIndex={-1}>
          {route.name === 'new' && <NewSession onCreated={(id) => navigate(`/sessions/${id}`)} />}
          {route.name === 'session' && <SessionView key={route.id} id={route.id} row={sessions.list.find((r) => r.id === route.id)} />}
          {route.name === 'home' && <Home count={sessions.list.length} />}
          {route.name === 'graphs' && <GraphList />}
          {route.name === 'graph' && <GraphView key={route.run} run={route.run} sessions={sessions.list} />}
        </main>
      </div>
    </div>
  );
}

function Home({ count }: { count: number }) {
  return (
    <section class="home">
      <h1>Sessions</h1>
      <p>
        {count === 0
          ? 'No session yet. Start one with “New session”.'
          : 'Pick a session on the left to follow it, answer its asks, review its edits and use its terminal.'}
      </p>
      <h2>Keys</h2>
      <dl class="keys">
        <dt><kbd>Enter</kbd></dt><dd>send the message (<kbd>Shift</kbd>+<kbd>Enter</kbd>: a new line)</dd>
        <dt><kbd>Alt</kbd>+<kbd>Enter</kbd></dt><dd>steer the running turn</dd>
        <dt><kbd>Esc</kbd></dt><dd>back to the message box</dd>
        <dt><kbd>a</kbd> / <kbd>d</kbd></dt><dd>on an ask: allow / deny</dd>
        <dt><kbd>y</kbd> / <kbd>n</kbd></dt><dd>on a hunk: accept / reject</dd>
        <dt><kbd>Ctrl</kbd>+<kbd>.</kbd></dt><dd>stop the session</dd>
      </dl>
    </section>
  );
}

function NotifyToggle() {
  const supported = typeof Notification !== 'undefined';
  const [perm, setPerm] = useState(supported ? Notification.permission : 'denied');
  const [on, setOn] = useState(localStorage.getItem('corral.notify') === 'on');
  if (!supported) return null;
  const toggle = async () => {
    if (on) {
      localStorage.setItem('corral.notify', 'off');
      setOn(false);
      return;
    }
    const p = perm === 'granted' ? perm : await Notification.requestPermission();
    setPerm(p);
    if (p === 'granted') {
      localStorage.setItem('corral.notify', 'on');
      setOn(true);
    }
  };
  return (
    <button type="button" class="ghost" aria-pressed={on} onClick={toggle} disabled={perm === 'denied' && !on}
      title={perm === 'denied' ? 'Notifications are blocked for this page' : 'Notify me when a session waits for me'}>
      {on ? 'Notifying' : 'Notify me'}
    </button>
  );
}
