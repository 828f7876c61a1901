package supervisor

import (
	"os"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
)

// Observer is told what the manager sees, for an operator's metrics
// (internal/metrics implements it). Its methods must be quick and must not
// block: Event runs on a runner's reader goroutine for every mirrored
// event, between reading the line and reading the next.
type Observer interface {
	// SessionStart reports a session made live (err nil) or not: how
	// long it took from the moment its runner was needed, and whether it
	// opened in the spare runner.
	SessionStart(took time.Duration, spare bool, err error)
	// Event reports one mirrored event of session, whose spec names
	// engine: its type and its line as events.jsonl holds it. Both slices
	// are the caller's; the observer must not keep them.
	Event(session, engine string, typ, line []byte)
	// RunnerExit reports a session runner's exit; crashed when nobody
	// asked it to stop.
	RunnerExit(crashed bool)
}

type nopObserver struct{}

func (nopObserver) SessionStart(time.Duration, bool, error) {}
func (nopObserver) Event(string, string, []byte, []byte)    {}
func (nopObserver) RunnerExit(bool)                         {}

// StateNotLive is the census state of a session without a runner.
const StateNotLive wire.State = "notLive"

// censusStates are the states a census counts, each present in
// Census.Sessions even at 0.
var censusStates = []wire.State{
	wire.StateStarting, wire.StateIdle, wire.StateWorking,
	wire.StateWaitingForApproval, wire.StateWaitingForReview, StateNotLive,
}

// Census is a count of the manager's sessions and runners at one moment.
type Census struct {
	// Sessions counts the sessions by state. A live session's state is
	// what its runner last reported (its state message): starting (its
	// runner is starting), waitingForApproval (an ask is open),
	// waitingForReview (hunks wait for a decision), working (a turn runs)
	// or idle. A session without a runner counts as StateNotLive. Every
	// state is present, at 0 when no session is in it.
	Sessions map[wire.State]int
	// Runners counts the live session runners, each once whatever its
	// session's ids; Spare is 1 while a spare runner waits.
	Runners, Spare int
}

// Census counts the sessions by state and the live runners. It reads the
// sessions folder once, so it costs a directory listing.
func (m *Manager) Census() Census {
	c := Census{Sessions: make(map[wire.State]int, len(censusStates))}
	for _, s := range censusStates {
		c.Sessions[s] = 0
	}
	held := map[string]bool{}
	m.mu.Lock()
	seen := map[*entry]bool{}
	for _, e := range m.entries {
		if seen[e] || e.retiring {
			continue
		}
		seen[e] = true
		state := wire.StateStarting
		select {
		case <-e.ready:
			if e.err != nil || !e.child.alive() {
				continue
			}
			state = e.child.activity()
		default:
		}
		c.Runners++
		c.Sessions[state]++
		// A rotated session's earlier ids share the runner but hold only
		// a finished log: they count as not live.
		if e.child != nil {
			held[e.child.currentSession()] = true
		} else {
			held[e.ids[0]] = true
		}
	}
	if m.spare.child != nil {
		c.Spare = 1
	}
	m.mu.Unlock()

	des, err := os.ReadDir(m.sessions)
	if err != nil {
		m.log.Debug("census: sessions folder unreadable")
		return c
	}
	for _, de := range des {
		if de.IsDir() && validID(de.Name()) && !held[de.Name()] {
			c.Sessions[StateNotLive]++
		}
	}
	return c
}

// activity is the session's state as its runner last reported it, in the
// census's terms: an open ask or edits waiting for review first, whatever
// the turn is doing.
func (c *child) activity() wire.State {
	st := c.state.Load()
	switch {
	case st == nil:
		return wire.StateStarting
	case st.OpenAsks > 0:
		return wire.StateWaitingForApproval
	case st.PendingEdits > 0:
		return wire.StateWaitingForReview
	}
	switch st.State {
	case wire.StateStarting, wire.StateWorking, wire.StateWaitingForApproval, wire.StateWaitingForReview:
		return st.State
	}
	return wire.StateIdle
}
