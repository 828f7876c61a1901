// Package jsonrpc is Corral's one JSON-RPC 2.0 connection, shared by every
// engine whose agent speaks JSON-RPC over stdio: Codex's app-server
// (newline-delimited, without the "jsonrpc" member), the Copilot CLI
// (Content-Length framed) and ACP agents (newline-delimited).
//
// The package has three layers:
//
//   - [Framing] delimits messages on a byte stream: [Lines] (one JSON
//     value per line) or [ContentLength] (LSP-style header blocks). Each
//     reader is bounded, and a stream that breaks the framing is reported
//     as a [*FrameError].
//   - [Conn] is the protocol: request ids, calls waiting for their replies
//     (with context cancellation), notifications, the peer's requests
//     answered by a handler on their own goroutines, errors as typed
//     values ([*Error], [ErrClosed], [ErrProtocol]).
//   - [Child] runs the peer as a child process in its own process group
//     and closes the connection in order when it dies: every waiting call
//     fails with an [*ExitError] carrying the exit status and the last
//     lines of stderr, never with "broken pipe".
package jsonrpc
