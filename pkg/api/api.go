// Package api holds the JSON bodies of the supervisor's HTTP API, shared by
// the server and every Go client (pkg/client). The session spec, commands,
// replies, events and errors they carry are those of pkg/wire.
// docs/api.md is the reference for shell authors.
package api

import (
	"time"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Version is the path prefix of every endpoint.
const Version = "/v1"

// Session is one session as the API shows it.
type Session struct {
	ID   string    `json:"id"`
	Spec wire.Spec `json:"spec"`
	// Live reports whether a runner process holds the session right now.
	Live bool `json:"live"`
	// Status is the runner's answer to the status command when Live, else
	// the last presence.json the runner wrote; nil when neither exists.
	Status *command.Status `json:"status,omitempty"`
	// UpdatedAt is when the session's event log last changed (its folder's
	// creation when it has no log yet).
	UpdatedAt time.Time `json:"updatedAt"`
	// LastCrash is how the session's runner last died unasked (code
	// runner_crashed, with exit code, signal and stderr tail), while this
	// supervisor ran; the next command starts a new runner.
	LastCrash *Error `json:"lastCrash,omitempty"`
	// Fleet is where the session stands in a fleet of supervisors
	// (docs/fleet.md); absent from a supervisor that is not in one.
	Fleet *SessionFleet `json:"fleet,omitempty"`
}

// SessionFleet is a session's place in a fleet.
type SessionFleet struct {
	// Node is the node the session belongs to: it runs there, or starts
	// there at its next use.
	Node string `json:"node"`
	// Placement is how the session came to its node: the node and, in
	// words, why (chosen by capacity and fit, asked for, or taken over
	// from a node that left).
	Placement FleetPlacement `json:"placement"`
	// State is empty while the session's node is in the fleet, "orphaned"
	// once the node left and before another took the session, "failed"
	// when no node in the fleet reaches the session's folder.
	State string `json:"state,omitempty"`
	// Error says why the session is failed, or how it was orphaned.
	Error string `json:"error,omitempty"`
	// Moves counts the times the session moved to another node.
	Moves int `json:"moves,omitempty"`
}

// FleetPlacement is where a session was placed and why.
type FleetPlacement struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
	// Requested says the node was asked for in the spec.
	Requested bool `json:"requested,omitempty"`
}

// SessionReply is the body of a successful create or get.
type SessionReply struct {
	OK      bool     `json:"ok"`
	Session *Session `json:"session"`
}

// SessionsReply is the body of a successful list.
type SessionsReply struct {
	OK       bool      `json:"ok"`
	Sessions []Session `json:"sessions"`
}

// HealthReply is the body of GET /v1/health.
type HealthReply struct {
	OK    bool `json:"ok"`
	Proto int  `json:"proto"`
	// Sessions counts the sessions with a live runner.
	LiveSessions int `json:"liveSessions"`
	// Version is the supervisor's build: the version the Makefile stamps,
	// else the module's; Revision the VCS revision it was built from;
	// Go the toolchain.
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Go       string `json:"go"`
	// Ready is false while the supervisor cannot take work (it is
	// stopping, or a fleet node has lost its link); NotReady says why.
	Ready    bool     `json:"ready"`
	NotReady []string `json:"notReady,omitempty"`
}

// Media types of the event stream.
const (
	MediaSSE    = "text/event-stream"
	MediaNDJSON = "application/x-ndjson"
)

// RunResult is what print mode (supervisor run -p, runner -p) ends with,
// printed with --json as the result of the CLI's envelope.
type RunResult struct {
	// Answer is the final assistant text of the last turn.
	Answer string `json:"answer"`
	// Outcome is how the last turn ended: done, stopped, failed or
	// interrupted.
	Outcome string `json:"outcome"`
	// Failure is the last failure event's data, if any.
	Failure *event.FailureData `json:"failure,omitempty"`
}
