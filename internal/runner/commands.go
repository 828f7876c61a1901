package runner

import (
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// admit lets a command in, or refuses it: every command but status needs
// a live session that is not shutting down, and none but a fork's own runs
// while a fork is under way (see fork). The command holds its admission
// until it calls release.
func (r *Runner) admit(req command.Request) (release func(), err error) {
	_, fork := req.(command.ForkSession)
	r.mu.Lock()
	live, closed := r.live, r.closed
	r.mu.Unlock()
	switch {
	case closed:
		return nil, wire.Errorf(wire.CodeUnavailable, "session is shutting down")
	case !live:
		return nil, wire.Errorf(wire.CodeUnavailable, "session is not live yet")
	case fork:
		// A fork takes the session for itself.
		return func() {}, nil
	case r.storage.down.Load() && r.recoverStorage() != nil:
		return nil, r.refuseForStorage()
	case !r.cmds.TryRLock():
		return nil, wire.Errorf(wire.CodeConflict, "the session is forking or shutting down; send again once it is done")
	}
	return r.cmds.RUnlock, nil
}

func (r *Runner) cancelQueued(id string) (event.Queued, error) {
	if q, ok := r.turns.cancel(id); ok {
		r.presence.touch()
		return q, nil
	}
	return event.Queued{}, wire.Errorf(wire.CodeNotFound, "no queued message %q", id)
}

func (r *Runner) setMode(mode string) (event.ModeChangedData, error) {
	switch mode {
	case "review", "auto", "readonly":
	default:
		return event.ModeChangedData{}, wire.Errorf(wire.CodeBadRequest, "mode must be review, auto or readonly, not %q", mode)
	}
	spec := r.updateSpec(func(s *wire.Spec) { s.Mode = mode })
	if err := r.gate.setMode(mode); err != nil {
		return event.ModeChangedData{}, err
	}
	if err := r.store.saveSpec(spec); err != nil {
		return event.ModeChangedData{}, err
	}
	r.emit(event.ModeChanged, event.ModeChangedData{Mode: mode})
	r.presence.touch()
	return event.ModeChangedData{Mode: mode}, nil
}

func (r *Runner) setSpendCap(capUSD *float64) (event.SpendCapSetData, error) {
	if capUSD == nil || *capUSD < 0 {
		return event.SpendCapSetData{}, wire.Errorf(wire.CodeBadRequest, "setSpendCap needs spendCapUsd >= 0 (0 removes the cap)")
	}
	// The spec and the meter change together, so that two of these at
	// once leave them agreeing.
	r.mu.Lock()
	r.spec.SpendCapUSD = *capUSD
	r.meter.setCap(*capUSD)
	spec := r.spec
	r.mu.Unlock()
	// Raised past what was spent, the cap no longer holds the queue.
	r.turns.notify()
	if err := r.store.saveSpec(spec); err != nil {
		return event.SpendCapSetData{}, err
	}
	r.emit(event.SpendCapSet, event.SpendCapSetData{SpendCapUSD: *capUSD})
	return event.SpendCapSetData{SpendCapUSD: *capUSD}, nil
}

// stateLocked is the session's state and activity: storageFailed, whatever
// else it was doing, while its storage is down. r.mu is held.
func (r *Runner) stateLocked() (wire.State, string) {
	if r.storage.down.Load() {
		return wire.StateStorageFailed, "the event log cannot be written; waiting for room in the state folder"
	}
	return r.state, r.activity
}

// status snapshots the session for the status command and presence.json.
func (r *Runner) status() command.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	turnNo, queued := r.turns.snapshot()
	state, activity := r.stateLocked()
	return command.Status{
		Session: r.spec.ID, Title: r.spec.Title, Engine: r.spec.Engine, State: state, Activity: activity,
		Mode: r.spec.Mode, Turn: turnNo, Queued: queued,
		OpenAsks: r.asks.openIDs(), PendingEdit: r.review.pendingIDs(), Usage: r.meter.usage(),
		LastSeq: r.evlog().LastSeq(), SpendCapUSD: r.spec.SpendCapUSD, Held: r.meter.reached(), Unattended: r.spec.Unattended,
	}
}
