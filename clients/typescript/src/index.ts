/**
 * The TypeScript client of a Corral supervisor's HTTP API (docs/api.md).
 * The types are generated from the supervisor's Go types
 * (types.gen.ts); README.md shows the API.
 */
export { CorralClient } from "./client.js";
export type { ClientOptions, EnginesOptions, EventsOptions, FeedOptions, WaitOptions, EventSourceConstructor } from "./client.js";
export { CorralError, codeForStatus } from "./errors.js";
export { Terminal } from "./terminal.js";
export type { TermOptions, TermEvent, WebSocketConstructor, WebSocketLike } from "./terminal.js";
export * from "./types.gen.js";
