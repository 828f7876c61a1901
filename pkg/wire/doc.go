// Package wire defines the protocol between the Corral supervisor and its
// runner children: one typed message per operation and direction, the
// NDJSON codec with its binary terminal frames, the encoder and fast
// decoder of each hot line shape (mirror.go, state.go), and the errors that
// survive process boundaries.
//
// Supervisor and runner exchange NDJSON over the runner's stdin and stdout:
// one [Message] per line, a JSON object whose "t" is its [Type]. A request
// ([Request]) carries a "reqId" and is answered by exactly one message of
// its reply type echoing it. Errors cross the boundary as {message, code}
// and are rebuilt as [*Error] values that match the sentinel errors of this
// package with errors.Is; codes carry no transport's status.
//
// The link carries what other packages define without looking into it: a
// control command (package command) as its JSON object, and session events
// (package event) as the raw lines of events.jsonl. docs/wire.md describes
// every message with an example.
package wire

// ProtocolVersion is the version of the supervisor <-> runner protocol. Both
// sides send it (hello, ready) and a mismatch fails the session's start.
const ProtocolVersion = 2
