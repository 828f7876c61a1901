/**
 * Reads a fetch response's body as NDJSON: one line at a time, without its
 * newline. A last line without a newline is a line cut short: it throws.
 */
export async function* ndjsonLines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        if (line.trim() !== "") yield line;
      }
    }
    buf += decoder.decode();
    if (buf.trim() !== "") throw new CutShort();
  } finally {
    reader.releaseLock();
    body.cancel().catch(() => {});
  }
}

/** A stream that ended in the middle of a line. */
export class CutShort extends Error {
  constructor() {
    super("the stream ended in the middle of a line");
    this.name = "CutShort";
  }
}

/** Waits ms, or until signal aborts (then throws its reason). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Reconnection back-off of followed streams, as the Go client's. */
export const reconnectFirstMs = 50;
export const reconnectMaxMs = 2000;
