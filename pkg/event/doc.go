// Package event is the vocabulary of a session's event log: the [Event]
// envelope of every events.jsonl line, the event types, and the data each
// type carries. The runner appends events; the supervisor forwards the
// lines as they are (pkg/wire carries them raw) and shells read them.
// docs/events.md lists every type with its fields.
package event
