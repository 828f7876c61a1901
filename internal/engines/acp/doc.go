// Package acp is the engine that drives any agent speaking the Agent
// Client Protocol (ACP): JSON-RPC 2.0 over the agent's stdin and stdout,
// one message per line.
//
// Corral is the ACP client. It starts the agent command of the session's
// engine config, negotiates the protocol version, opens a session
// (session/new, or session/load to resume), sends each user message as a
// session/prompt and turns the agent's session/update notifications into
// Corral events. Whatever the agent asks of its client goes through
// Corral's gate: session/request_permission becomes a Permit call, and the
// client methods Corral serves are the points where the agent acts on the
// world: fs/read_text_file (a read the gate judges), fs/write_text_file
// (an edit staged as hunks for review before anything is written), and
// terminal/create and its companions (a shell command the gate judges, run
// in a process group of its own).
//
// The protocol is described in docs/engines-acp.md.
package acp
