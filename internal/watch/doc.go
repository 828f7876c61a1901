// Package watch is Corral's terminal shell: it renders a session's event
// stream as a transcript a person reads at a glance, follows it live, and —
// when stdin is a terminal — answers asks and reviews staged hunks in place,
// through the same commands every other shell sends (docs/watch.md).
//
// The renderer (Render) is a pure function of events and a per-session
// State, so transcripts are golden-tested; the interactive program (a
// bubbletea program in inline mode) and the plain line mode are thin layers
// over it and over the Prompter, which decides what to ask a person next.
package watch
