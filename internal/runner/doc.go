// Package runner is one Corral session in one process: it owns the session
// folder (events.jsonl, control.sock, meta.json, presence.json), drives one
// engine through the engine.Engine interface, and puts every tool call
// through the gate and every edit through hunk review.
//
// Commands arrive from three places that share one handler: the control
// socket, the supervisor over the wire protocol on stdin/stdout, and (when
// the runner runs standalone on a terminal) plain lines typed on stdin.
package runner
