import { useEffect, useRef, useState } from 'preact/hooks';

export function money(usd: number | undefined): string {
  if (!usd) return '$0.00';
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

/** millis is an RFC 3339 time (microseconds and all) in milliseconds; NaN when it is none. */
export function millis(ts: string | undefined): number {
  return ts ? Date.parse(ts.replace(/(\.\d{3})\d+/, '$1')) : NaN;
}

export function ago(ts: string | undefined, now = Date.now()): string {
  const t = millis(ts);
  if (Number.isNaN(t)) return '';
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

/** useInterval calls fn every ms while the component lives. */
export function useInterval(fn: () => void, ms: number): void {
  const saved = useRef(fn);
  saved.current = fn;
  useEffect(() => {
    const t = setInterval(() => saved.current(), ms);
    return () => clearInterval(t);
  }, [ms]);
}

/** useNow re-renders every ms with the current time, for "3m ago". */
export function useNow(ms = 5000): number {
  const [now, setNow] = useState(Date.now());
  useInterval(() => setNow(Date.now()), ms);
  return now;
}

export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * coalesce wraps an async job so that at most one run is under way: a call
 * that comes meanwhile asks for one more run after it (however many came),
 * so the last call is always followed by a run that started after it.
 */
export function coalesce(job: () => Promise<void>): () => void {
  let running = false;
  let again = false;
  return async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await job().catch(() => {});
      } while (again);
    } finally {
      running = false;
    }
  };
}

/** duration is a span of milliseconds as "4s", "2m 5s", "1h 3m". */
export function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}
