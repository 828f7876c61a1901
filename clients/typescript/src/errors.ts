import type { Code, Crash, Error as WireError, HTTPError } from "./types.gen.js";

/**
 * A failure the supervisor reported, or one reaching it: branch on `code`
 * (never on the message). A supervisor that does not answer is
 * `unavailable`.
 */
export class CorralError extends Error {
  readonly code: Code;
  /** The HTTP status the code maps to (0 when no HTTP answer came). */
  readonly statusCode: number;
  /** How a runner died, for `runner_crashed`. */
  readonly detail?: Crash;

  constructor(code: Code, message: string, statusCode = 0, detail?: Crash) {
    super(message);
    this.name = "CorralError";
    this.code = code;
    this.statusCode = statusCode;
    if (detail) this.detail = detail;
  }

  /** Rebuilds the error of a failed reply. */
  static from(e: WireError | HTTPError, statusCode?: number): CorralError {
    // The HTTP API's errors carry their status; an error from elsewhere
    // (a runner's reply) takes the answer's.
    const own = "statusCode" in e ? e.statusCode : 0;
    return new CorralError(e.code, e.message, own || statusCode || 0, e.detail);
  }
}

/** The code a status means when a failed answer has no body to read. */
export function codeForStatus(status: number): Code {
  switch (status) {
    case 400:
    case 405:
      return "bad_request";
    case 401:
      return "unauthorized";
    case 403:
      return "forbidden";
    case 404:
      return "not_found";
    case 409:
      return "conflict";
    case 503:
      return "unavailable";
    case 504:
      return "timeout";
    default:
      return "internal";
  }
}

/** Whether a followed stream that ended with err is worth reopening. */
export function resumable(err: unknown): boolean {
  if (err instanceof CorralError) {
    return err.code === "unavailable" || err.code === "timeout";
  }
  return !isAbort(err); // a lost connection, a cut line
}

/** Whether err is an abort (AbortSignal). */
export function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === "AbortError" || err.name === "TimeoutError");
}
