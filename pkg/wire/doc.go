// Package wire defines the protocol between the Corral supervisor and its
// runner children, and the vocabulary every shell speaks: control commands,
// their replies, session events and errors.
//
// Supervisor and runner exchange NDJSON over the runner's stdin and stdout:
// one [Message] per line, tagged by its T field. Requests carry a ReqID and
// replies echo it. Errors cross the boundary as {message, code, statusCode}
// and are rebuilt as [*Error] values that match the sentinel errors of this
// package with errors.Is.
//
// The same [Command] and [Reply] JSON is accepted on a runner's control.sock,
// posted to the supervisor's HTTP API and sent by its CLI. Session events
// (package event) cross the link as the raw lines of events.jsonl.
// docs/wire.md and docs/events.md describe every message with an example.
package wire

// ProtocolVersion is the version of the supervisor <-> runner protocol. Both
// sides send it (hello, ready) and a mismatch fails the session's start.
const ProtocolVersion = 1
