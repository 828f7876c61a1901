package supervisor

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// What a session's state means to a wait: the status that meets one at
// once, and the states that end one (a storage failure, a queue the spend
// cap holds).

// storageUnavailable is the refusal of a wait on a session whose event log
// cannot be written (storageFailed): nothing it waits for can be recorded
// until the log takes writes again.
func storageUnavailable(id string) error {
	return wire.Errorf(wire.CodeStorageUnavailable,
		"session %s is storageFailed: its event log cannot be written (is the state folder's disk full?); it takes no commands until it has room", id)
}

// storageFailed reports whether session id's runner last reported its event
// log failed.
func (m *Manager) storageFailed(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[id]
	if e == nil {
		return false
	}
	select {
	case <-e.ready:
	default:
		return false
	}
	if e.err != nil {
		return false
	}
	st := e.child.state.Load()
	return st != nil && st.State == wire.StateStorageFailed
}

// heldNow follows, for a human wait, the events after which the spend cap
// may hold messages in the queue (the cap reached, a turn ended, a message
// queued), and reports, from the session's status, whether it does.
func (w *waiter) heldNow(ctx context.Context, typ string, line []byte) (bool, error) {
	if typ == string(event.Failure) && isSpendCapFailure(typ, eventData(line)) {
		w.capReached = true
	} else if !w.capReached || (typ != string(event.TurnEnded) && typ != string(event.QueueChanged)) {
		return false, nil
	}
	s, err := w.m.Get(ctx, w.id)
	if err != nil {
		return false, err
	}
	w.live, w.st = s.Live, s.Status
	if !s.Live || !heldQueue(s.Status) {
		return false, nil
	}
	w.events = []json.RawMessage{bytes.Clone(line)}
	return true, nil
}

// heldQueue reports whether st shows messages waiting in a queue the spend
// cap holds, with no turn running: they wait for a person to raise the cap
// or clear the queue.
func heldQueue(st *command.Status) bool {
	return st != nil && st.Held && len(st.Queued) > 0 && !turnRunning(st)
}

// isSpendCapFailure reports whether an event is the failure of a spend cap
// reached.
func isSpendCapFailure(typ string, data []byte) bool {
	if typ != string(event.Failure) {
		return false
	}
	var d event.FailureData
	return json.Unmarshal(data, &d) == nil && d.Code == event.FailSpendCap
}

// turnUnderWay reports whether a turn runs, or a message waits for one
// that the spend cap does not hold back.
func turnUnderWay(st *command.Status) bool {
	return turnRunning(st) || (len(st.Queued) > 0 && !st.Held)
}

// turnRunning reports whether a turn runs.
func turnRunning(st *command.Status) bool {
	switch st.State {
	case wire.StateWorking, wire.StateWaitingForApproval, wire.StateWaitingForReview:
		return true
	}
	return false
}

// statusIdle reports whether a runner's own status shows nothing under way
// or waiting for a person.
func statusIdle(st *command.Status) bool {
	switch st.State {
	case wire.StateIdle, wire.StateStopped, wire.StateFailed, "":
	default:
		return false
	}
	return len(st.Queued) == 0 && len(st.OpenAsks) == 0 && len(st.PendingEdit) == 0
}
