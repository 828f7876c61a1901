package api

import (
	"encoding/json"

	"github.com/corral-dev/corral/pkg/command"
)

// WaitFor names what GET /v1/sessions/{id}/wait waits for.
type WaitFor string

// What a wait can wait for.
const (
	// WaitTurnEnd: a turn ends. With after=SEQ, the first turnEnded past
	// that seq; without, the turn running or queued when the call came,
	// or at once (with the last turnEnded) when none was.
	WaitTurnEnd WaitFor = "turnEnd"
	// WaitHuman: the session needs a person: an ask is open or an edit
	// waits for review. At once when one already is.
	WaitHuman WaitFor = "human"
	// WaitIdle: nothing runs, nothing is queued, no ask is open and no
	// edit waits for review. At once when that is so already, as for a
	// session whose runner is not live.
	WaitIdle WaitFor = "idle"
)

// WaitFors lists every WaitFor.
func WaitFors() []WaitFor { return []WaitFor{WaitTurnEnd, WaitHuman, WaitIdle} }

// WaitReply is the body of GET /v1/sessions/{id}/wait.
type WaitReply struct {
	OK bool `json:"ok"`
	// For is what was waited for.
	For WaitFor `json:"for"`
	// Met is false when the wait's timeout passed first.
	Met bool `json:"met"`
	// Events are the events that decided it: the turnEnded (turnEnd, and
	// idle after a turn); the askOpened and hunkStaged events still open
	// (human). Each is its events.jsonl line.
	Events []json.RawMessage `json:"events"`
	// Lifecycle is set when the session's runner failed or was stopped
	// (sessionFailed, sessionReaped), which decided a turnEnd or idle wait.
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
	// LastSeq is the session's last seq when the wait ended: pass it as
	// after= to wait for what comes next.
	LastSeq int64 `json:"lastSeq"`
	// Status is the session's status when the wait ended (nil when it has
	// none yet).
	Status *command.Status `json:"status,omitempty"`
}
