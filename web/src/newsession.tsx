// The "new session" form: engine, model, worktree, mode, goal, spend cap,
// and optionally a workspace (a git worktree of its own on a new branch).
// Engines and their readiness come from GET /v1/engines when the
// supervisor serves it; otherwise the built-in engines are offered as they
// are and a failed start says why.
import { useEffect, useRef, useState } from 'preact/hooks';
import { client, engineChoices, type EngineChoice, type Spec } from './api';
import { errorText } from './util';

type Mode = NonNullable<Spec['mode']>;

const builtIn: EngineChoice[] = [
  { name: 'script', models: [] }, { name: 'claude', models: [] }, { name: 'codex', models: [] }, { name: 'copilot', models: [] },
];

async function loadEngines(): Promise<{ list: EngineChoice[]; known: boolean }> {
  const list = await engineChoices().catch(() => undefined);
  return list ? { list, known: true } : { list: builtIn, known: false };
}

export function NewSession({ onCreated }: { onCreated: (id: string) => void }) {
  const [engines, setEngines] = useState<{ list: EngineChoice[]; known: boolean }>({ list: builtIn, known: false });
  const [engine, setEngine] = useState('script');
  const [model, setModel] = useState('');
  const [cwd, setCwd] = useState('');
  const [scenario, setScenario] = useState('');
  const [mode, setMode] = useState<Mode>('review');
  const [goal, setGoal] = useState('');
  const [cap, setCap] = useState('');
  const [useWorkspace, setUseWorkspace] = useState(false);
  const [base, setBase] = useState('HEAD');
  const [keep, setKeep] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const first = useRef<HTMLSelectElement>(null);

  useEffect(() => {
    loadEngines().then(setEngines);
    first.current?.focus();
  }, []);

  const chosen = engines.list.find((e) => e.name === engine);
  const submit = async (ev: Event) => {
    ev.preventDefault();
    setError(undefined);
    const spec: Spec = { engine, mode };
    if (model.trim()) spec.model = model.trim();
    if (cwd.trim()) spec.cwd = cwd.trim();
    if (engine === 'script' && scenario.trim()) spec.scenario = scenario.trim();
    if (goal.trim()) spec.goal = { text: goal.trim() };
    if (cap.trim()) {
      const n = Number(cap);
      if (!Number.isFinite(n) || n < 0) {
        setError('The spend cap is a number of dollars, 0 or more.');
        return;
      }
      spec.spendCapUsd = n;
    }
    if (useWorkspace) spec.workspace = { base: base.trim() || 'HEAD', keep };
    setBusy(true);
    try {
      const s = await client.createSession(spec);
      onCreated(s.id);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="panel narrow" aria-labelledby="new-title">
      <h1 id="new-title">New session</h1>
      <form onSubmit={submit} class="form" data-testid="new-session-form">
        <label>
          Engine
          <select ref={first} value={engine} onChange={(e) => setEngine((e.target as HTMLSelectElement).value)} name="engine">
            {engines.list.map((e) => (
              <option key={e.name} value={e.name}>
                {e.name}{e.ready === false ? ' (not ready)' : e.ready ? ' (ready)' : ''}
              </option>
            ))}
          </select>
        </label>
        {chosen?.ready === false && <p class="warn" role="note">{chosen.name} is not ready: {chosen.reason ?? 'see supervisor engines'}</p>}
        {!engines.known && <p class="hint">This supervisor does not report engine readiness; a start that fails says why.</p>}
        <label>
          Model <span class="hint">(optional)</span>
          <input name="model" list="models" value={model} onInput={(e) => setModel((e.target as HTMLInputElement).value)} />
          <datalist id="models">{(chosen?.models ?? []).map((m) => <option key={m} value={m} />)}</datalist>
          {chosen?.summary && <span class="hint">{chosen.name}: {chosen.summary}</span>}
        </label>
        <label>
          Worktree <span class="hint">(absolute path of a folder; empty: the supervisor's folder)</span>
          <input name="cwd" value={cwd} onInput={(e) => setCwd((e.target as HTMLInputElement).value)} placeholder="/home/me/project" />
        </label>
        {engine === 'script' && (
          <label>
            Scenario <span class="hint">(script engine: a file or “demo”)</span>
            <input name="scenario" value={scenario} onInput={(e) => setScenario((e.target as HTMLInputElement).value)} placeholder="demo" />
          </label>
        )}
        <fieldset class="inline">
          <legend>Mode</legend>
          {(['review', 'auto', 'readonly'] as const).map((m) => (
            <label key={m} class="radio">
              <input type="radio" name="mode" value={m} checked={mode === m} onChange={() => setMode(m)} /> {m}
            </label>
          ))}
        </fieldset>
        <label>
          Goal <span class="hint">(optional; checked after every turn)</span>
          <textarea name="goal" rows={2} value={goal} onInput={(e) => setGoal((e.target as HTMLTextAreaElement).value)} />
        </label>
        <label>
          Spend cap in USD <span class="hint">(optional; 0 or empty: none)</span>
          <input name="spendCap" inputMode="decimal" value={cap} onInput={(e) => setCap((e.target as HTMLInputElement).value)} />
        </label>
        <fieldset>
          <legend>Workspace</legend>
          <label class="radio">
            <input type="checkbox" name="workspace" checked={useWorkspace} onChange={(e) => setUseWorkspace((e.target as HTMLInputElement).checked)} />
            Work in a git worktree of its own, on a new branch
          </label>
          {useWorkspace && (
            <>
              <label>
                Base <span class="hint">(branch or commit of the worktree's repository)</span>
                <input name="base" value={base} onInput={(e) => setBase((e.target as HTMLInputElement).value)} />
              </label>
              <label class="radio">
                <input type="checkbox" name="keep" checked={keep} onChange={(e) => setKeep((e.target as HTMLInputElement).checked)} />
                Keep the worktree and branch when the session is deleted
              </label>
            </>
          )}
        </fieldset>
        {error && <p class="error" role="alert">{error}</p>}
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>{busy ? 'Starting…' : 'Start session'}</button>
          <a class="button ghost" href="#/">Cancel</a>
        </div>
      </form>
    </section>
  );
}
