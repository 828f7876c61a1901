package runner

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// loop runs queued messages one turn at a time until the runner closes.
func (r *Runner) loop() {
	defer close(r.loopDone)
	r.waitSpecStored()
	for {
		r.mu.Lock()
		for !r.closed && (len(r.queue) == 0 || r.spendCapHit) {
			r.mu.Unlock()
			<-r.wake
			r.mu.Lock()
		}
		if r.closed {
			r.mu.Unlock()
			return
		}
		msg := r.queue[0]
		r.queue = r.queue[1:]
		r.turnNo++
		ctx, cancel := context.WithCancel(context.Background())
		t := &turn{no: r.turnNo, msg: msg, kind: kindOf(msg), cancel: cancel, done: make(chan struct{}), files: map[string]bool{}, start: time.Now()}
		r.running = t
		r.state, r.activity = wire.StateWorking, "thinking"
		r.mu.Unlock()
		r.presence.touch()
		r.runTurn(ctx, t)
		cancel()
	}
}

// kindOf reads the message kind encoded in a queued message's id prefix.
func kindOf(q wire.Queued) string {
	switch {
	case len(q.ID) < 2:
		return "send"
	case q.ID[0] == 'g':
		return "goalCheck"
	case q.ID[0] == 'l':
		return "loop"
	case q.ID[0] == 'i':
		return "inherit"
	default:
		return "send"
	}
}

func (r *Runner) runTurn(ctx context.Context, t *turn) {
	r.emit(wire.EvTurnStarted, wire.TurnStartedData{Turn: t.no, MessageID: t.msg.ID, Text: t.msg.Text})
	res, err := r.eng.Turn(ctx, engine.TurnInput{ID: t.msg.ID, Text: t.msg.Text, Kind: t.kind})

	// The turn is over before turnEnded is seen, so a shell may act on
	// turnEnded at once; the goal check that follows keeps the runner
	// "settling" so nothing (a fork, print mode's exit) mistakes that gap
	// for idleness. The steers it leaves are taken in the same step that
	// ends it: a steer from then on finds no turn and becomes a message.
	settled := make(chan struct{})
	r.mu.Lock()
	outcome := "done"
	switch {
	case t.stopped || res.Stopped:
		outcome = "stopped"
	case err != nil:
		outcome = "failed"
	}
	stopped := outcome == "stopped"
	if res.HasUsage && !res.Usage.Estimated {
		// The engine's exact figure replaces the running estimate.
		r.usage.CostUSD += res.Usage.CostUSD - t.usage.CostUSD
		t.usage = res.Usage
	}
	// The exact figure may bring the session to its cap, which then holds
	// the queue like a cap crossed during the turn.
	capReached := !r.spendCapHit && r.overCapLocked()
	if capReached {
		r.spendCapHit = true
	}
	spent, capUSD := r.usage.CostUSD, r.spec.SpendCapUSD
	leftover := r.steers
	r.steers = nil
	ended := wire.TurnEndedData{
		Turn: t.no, Outcome: outcome, DurationMS: time.Since(t.start).Milliseconds(),
		Usage: t.usage, Files: len(t.files), Added: t.added, Removed: t.removed,
	}
	r.running = nil
	r.settled = settled
	switch {
	case err != nil:
		r.state, r.activity = wire.StateFailed, err.Error()
	case stopped:
		r.state, r.activity = wire.StateStopped, "stopped"
	default:
		r.state, r.activity = wire.StateIdle, ""
	}
	r.mu.Unlock()

	// A steer that found no tool boundary becomes the next message.
	if !stopped {
		for _, text := range leftover {
			r.emit(wire.EvSteerRequeued, wire.SteerData{Text: text})
			r.enqueue(text, "send", true)
		}
	}
	if outcome == "failed" {
		r.fail(err)
	}
	if ended.Files > 0 {
		ended.Summary = fmt.Sprintf("%d file%s · +%d −%d", ended.Files, plural(ended.Files), ended.Added, ended.Removed)
	}
	r.finalizeEdits()

	// turnEnded before done: a stop waiting for this turn emits stopped
	// once done closes, and the log must say the turn ended first.
	r.emit(wire.EvTurnEnded, ended)
	close(t.done)
	if err := r.evlog().Sync(); err != nil {
		r.log.Error("sync event log at turn end", zap.Error(err))
	}
	if capReached {
		r.emit(wire.EvFailure, spendCapFailure(spent, capUSD))
	}
	if outcome == "done" {
		r.compactIfFull(ctx)
		r.checkGoal(ctx)
	}
	r.mu.Lock()
	r.settled = nil
	close(settled)
	r.mu.Unlock()
	r.presence.touch()
	select {
	case r.turnDone <- struct{}{}:
	default:
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// enqueue adds a message to the queue and records it. The userMessage event
// is appended before the turn loop can see the message, so it always
// precedes the turnStarted it leads to.
func (r *Runner) enqueue(text, kind string, queuedBehindTurn bool) wire.Queued {
	r.mu.Lock()
	defer r.mu.Unlock()
	prefix := "m"
	switch kind {
	case "goalCheck":
		prefix = "g"
	case "loop":
		prefix = "l"
	case "inherit":
		prefix = "i"
	case "send":
		r.goalAttempts = 0
	}
	q := wire.Queued{ID: r.newID(prefix), Text: text}
	queued := queuedBehindTurn || r.running != nil || r.settled != nil || len(r.queue) > 0
	r.emit(wire.EvUserMessage, wire.UserMessageData{ID: q.ID, Text: text, Kind: kind, Queued: queued})
	r.queue = append(r.queue, q)
	r.notify()
	return q
}

// stop interrupts the running turn, denies open asks, rejects pending hunks
// and clears the queue. It waits (bounded) for the turn to end so the reply
// is a receipt of what was cancelled.
func (r *Runner) stop(ctx context.Context, reason string) wire.StoppedData {
	r.mu.Lock()
	t := r.running
	receipt := wire.StoppedData{Reason: reason, InterruptedTurn: t != nil, ClearedQueue: len(r.queue)}
	if t != nil {
		t.stopped = true
	}
	r.queue = nil
	r.steers = nil
	if r.stopLoop != nil {
		// A stop halts a timed loop too: the Stop button stops everything.
		r.stopLoop()
	}
	asks := r.openAsksLocked()
	edits := r.pendingEditsLocked()
	r.mu.Unlock()

	by := "stopped"
	if reason == "shutdown" {
		by = "shutdown"
	}
	for _, a := range asks {
		if r.resolveAsk(a, wire.DecisionDeny, "", by) == nil {
			receipt.DeniedAsks++
		}
	}
	for _, e := range edits {
		receipt.RejectedHunks += r.rejectAllPending(e, by, "")
	}
	if t != nil {
		ictx, cancel := context.WithTimeout(ctx, interruptGrace)
		if err := r.eng.Interrupt(ictx); err != nil {
			r.log.Warn("engine interrupt", zap.Error(err))
		}
		cancel()
		select {
		case <-t.done:
		case <-time.After(interruptGrace):
			// The engine did not end the turn in-band: cancel it.
			t.cancel()
			select {
			case <-t.done:
			case <-time.After(stopWait - interruptGrace):
				r.log.Error("turn did not end after stop", zap.Int("turn", t.no))
			}
		}
	}
	r.emit(wire.EvStopped, receipt)
	r.presence.touch()
	return receipt
}
