package runner

import (
	"sync"

	"github.com/corral-dev/corral/pkg/wire"
)

// stateReporter tells the supervisor what the session is doing (wire
// StateReport) whenever that changes: the supervisor decides from it
// whether the runner may be stopped, instead of guessing from events. A
// report is written at the change, by the goroutine that made it, so the
// reply to a command that changed the state comes after the report of the
// change. Identical reports are not repeated, so a change of activity
// alone (a tool starting) costs nothing on the link.
type stateReporter struct {
	send func(wire.StateReport) // nil: nobody listens (print mode, warm-up)

	mu   sync.Mutex // orders reports as their snapshots were taken
	last wire.StateReport
	sent bool
}

// report sends the snapshot now returns, unless it is the last one sent.
// It must not be called with the runner's lock held: now takes it.
func (s *stateReporter) report(now func() wire.StateReport) {
	if s.send == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := now()
	if s.sent && st == s.last {
		return
	}
	s.last, s.sent = st, true
	s.send(st)
}

// stateReport is what the session is doing, for the supervisor.
func (r *Runner) stateReport() wire.StateReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	turnNo, queued := r.turns.snapshot()
	state, _ := r.stateLocked()
	return wire.StateReport{
		State: state, Turn: turnNo, Queued: len(queued),
		OpenAsks: len(r.asks.openIDs()), PendingEdits: len(r.review.pendingIDs()),
		Settling: r.turns.settled() != nil, Held: r.meter.reached(),
	}
}
