package watch

import (
	"strings"
	"time"

	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/hunks"
)

// State is what the renderer remembers of one session between its events:
// what a later event refers to (a tool's name, a staged edit) and what the
// live part of the screen shows (streaming text, what is running).
type State struct {
	session      string
	engine, mode string

	tools     map[string]event.ToolStartedData // running tool calls by toolId
	edits     map[string]*stagedEdit           // staged edits by editId, until their turn ends
	undecided int                              // review-mode hunks awaiting a decision
	openAsks  int
	waitSince time.Time // when the oldest open ask or undecided hunk appeared

	turnRunning bool
	turnStart   time.Time
	toolSummary string
	toolStart   time.Time

	streaming strings.Builder
	context   event.ContextData
	spent     float64 // the session's cost so far

	lastUserMessage string // id of the user message rendered last
	turnMessage     string // id of the message the running turn answers
}

// NewState returns the state of a session not seen yet.
func NewState(session string) *State {
	return &State{
		session: session,
		tools:   make(map[string]event.ToolStartedData),
		edits:   make(map[string]*stagedEdit),
	}
}

// Session is the id of the session the state belongs to.
func (s *State) Session() string { return s.session }

// Streaming is the assistant text streamed since the last complete
// message: the line the screen shows as it grows.
func (s *State) Streaming() string { return s.streaming.String() }

// Activity says what the session is doing now, for the spinner line: a
// short label and since when, or ok=false when no turn runs.
func (s *State) Activity() (label string, since time.Time, ok bool) {
	switch {
	case !s.turnRunning:
		return "", time.Time{}, false
	case s.openAsks > 0:
		return "waiting for an answer", s.waitSince, true
	case s.undecided > 0:
		return "waiting for review", s.waitSince, true
	case s.toolSummary != "":
		return s.toolSummary, s.toolStart, true
	}
	return "working", s.turnStart, true
}

// Spent is the session's cost so far, from its usage events.
func (s *State) Spent() float64 { return s.spent }

func (s *State) startWaiting(at time.Time) {
	if s.openAsks == 0 && s.undecided == 0 {
		s.waitSince = at
	}
}

// stagedEdit is an edit of hunkStaged as the transcript follows it.
type stagedEdit struct {
	path    string
	edit    *hunks.Edit // nil when the event carried none
	auto    bool
	decided map[string]bool // hunk ids decided so far
}
