package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// runTurns runs queued messages one turn at a time until the runner
// closes.
func (r *Runner) runTurns() {
	defer close(r.loopDone)
	r.store.waitSpecWritten()
	for {
		r.mu.Lock()
		t, ctx, closed := r.turns.next()
		eng := r.eng
		if t != nil {
			r.state, r.activity = wire.StateWorking, "thinking"
		}
		r.mu.Unlock()
		switch {
		case closed:
			return
		case t == nil:
			<-r.turns.wakeups()
			continue
		}
		r.presence.touch()
		r.runTurn(ctx, t, eng)
		t.cancel()
	}
}

func (r *Runner) runTurn(ctx context.Context, t *turn, eng engine.Engine) {
	r.meter.beginTurn()
	r.review.beginTurn()
	var res engine.TurnResult
	err := r.store.record(event.TurnStarted, event.TurnStartedData{Turn: t.no, MessageID: t.msg.ID, Text: t.msg.Text})
	if err == nil {
		r.shell.turnStarted()
		// A turn the log does not hold never reaches the engine.
		res, err = eng.Turn(ctx, engine.TurnInput{ID: t.msg.ID, Text: t.msg.Text, Kind: t.kind})
	}

	var exact *event.UsageData
	if res.HasUsage && !res.Usage.Estimated {
		exact = &res.Usage
	}
	// The engine has stopped: what changed since the last look is the
	// turn's too (a process a command left running).
	if changes, running := r.shell.turnEnded(); running {
		r.stageCaptured("", byCommand, changes)
	} else {
		r.stageCaptured("", byOutside, changes)
	}
	r.verdicts.clear()
	usage := r.meter.endTurn(exact)
	changed := r.review.endTurn()

	// The turn is over before turnEnded is seen, so a shell may act on
	// turnEnded at once; the policies that follow keep the runner
	// "settling" so nothing (a fork, print mode's exit) mistakes that gap
	// for idleness. The steers the turn leaves are taken in the same step
	// that ends it: a steer from then on finds no turn and is queued.
	r.mu.Lock()
	stopped, leftover := r.turns.end(t, res.Stopped)
	outcome := "done"
	switch {
	case stopped:
		outcome = "stopped"
	case err != nil:
		outcome = "failed"
	}
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
			r.emit(event.SteerRequeued, event.SteerData{Text: text})
			r.enqueueOwn(text, kindSend, true)
		}
	}
	if outcome == "failed" {
		r.fail(err)
	}
	ended := event.TurnEndedData{
		Turn: t.no, Outcome: outcome, DurationMS: time.Since(t.start).Milliseconds(),
		Usage: usage, Files: len(changed.files), Added: changed.added, Removed: changed.removed,
	}
	if ended.Files > 0 {
		ended.Summary = fmt.Sprintf("%d file%s · +%d −%d", ended.Files, plural(ended.Files), ended.Added, ended.Removed)
	}
	// turnEnded before done: a stop waiting for this turn emits stopped
	// once done closes, and the log must say the turn ended first.
	r.emit(event.TurnEnded, ended)
	close(t.done)
	if err := r.evlog().Sync(); err != nil {
		r.log.Error("sync event log at turn end", zap.Error(err))
	}
	if res.Conversation != "" && res.Conversation != r.Spec().EngineSession {
		r.continueCleared(r.backgroundCtx, res.Conversation)
		eng = r.engine()
	}
	for _, p := range r.policies {
		p.afterTurn(ctx, turnEnd{outcome: outcome, eng: eng})
	}
	r.turns.settle()
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

// enqueue adds a message of kind to the queue and records it: its
// userMessage event comes before the turnStarted it leads to. A message
// whose event cannot be recorded (the storage failed) is not queued and
// its error returned: nothing is acknowledged that is not in the log. A
// person's message resets the goal's count of checks in a row.
func (r *Runner) enqueue(text, kind string, queuedBehindTurn bool) (event.Queued, error) {
	return r.enqueueRequest(text, kind, queuedBehindTurn, "")
}

// enqueueSend queues a person's message sent with requestID ("" for none),
// which its userMessage event records.
func (r *Runner) enqueueSend(text, requestID string) (event.Queued, error) {
	return r.enqueueRequest(text, kindSend, false, requestID)
}

func (r *Runner) enqueueRequest(text, kind string, queuedBehindTurn bool, requestID string) (event.Queued, error) {
	if kind == kindSend {
		r.goal.reset()
	}
	q, err := r.turns.add(kind, text, queuedBehindTurn, func(m event.Queued, queued bool) error {
		return r.store.record(event.UserMessage, event.UserMessageData{ID: m.ID, Text: text, Kind: kind, Queued: queued, RequestID: requestID})
	})
	r.presence.touch()
	return q, err
}

// enqueueOwn queues a message the runner makes itself (a goal check, a
// loop's prompt, a parent's handoff, a steer that found no tool boundary):
// one whose event cannot be recorded is lost with the storage, which the
// failure event reports.
func (r *Runner) enqueueOwn(text, kind string, queuedBehindTurn bool) {
	if _, err := r.enqueue(text, kind, queuedBehindTurn); err != nil {
		r.log.Warn("queue a message", zap.String("kind", kind), zap.Error(err))
	}
}

// tickLoop is a timed loop's tick: it queues prompt unless a turn runs or
// a message waits (the previous run, say), and reports whether it did.
// Like a command, it does nothing while a fork is under way.
func (r *Runner) tickLoop(prompt string) bool {
	if !r.cmds.TryRLock() {
		return false
	}
	defer r.cmds.RUnlock()
	if r.turns.busy() {
		return false
	}
	_, err := r.enqueue(prompt, kindLoop, false)
	return err == nil
}

// stop interrupts the running turn, denies open asks, rejects pending hunks
// and clears the queue. It waits (bounded) for the turn to end so the reply
// is a receipt of what was cancelled.
func (r *Runner) stop(ctx context.Context, reason string) event.StoppedData {
	r.mu.Lock()
	t, cleared := r.turns.clear()
	eng, timed := r.eng, r.timed
	r.mu.Unlock()
	receipt := event.StoppedData{Reason: reason, InterruptedTurn: t != nil, ClearedQueue: cleared}
	if timed != nil {
		// A stop halts a timed loop too: the Stop button stops everything.
		timed.stop()
	}

	by := "stopped"
	if reason == "shutdown" {
		by = "shutdown"
	}
	receipt.DeniedAsks = r.asks.denyAll(by)
	receipt.RejectedHunks = r.review.rejectAll(by)
	r.interruptTurn(ctx, t, eng)
	r.emit(event.Stopped, receipt)
	r.presence.touch()
	return receipt
}

// interruptTurn asks the engine to end turn t (nil: none runs) and waits,
// bounded, until it has; an engine that does not end it in-band has the
// turn's context cancelled.
func (r *Runner) interruptTurn(ctx context.Context, t *turn, eng engine.Engine) {
	if t == nil {
		return
	}
	ictx, cancel := context.WithTimeout(ctx, interruptGrace)
	if err := eng.Interrupt(ictx); err != nil {
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

func (r *Runner) steer(ctx context.Context, text string) (command.SteerResult, error) {
	if s, ok := r.engine().(engine.Steerer); ok {
		if !r.turns.inTurn() {
			return r.steerQueued(text, false)
		}
		err := s.Steer(ctx, text)
		if err == nil {
			r.emit(event.SteerDelivered, event.SteerData{Text: text, Native: true})
			return command.SteerResult{Delivery: "native"}, nil
		}
		if err != engine.ErrNoTurn {
			return command.SteerResult{}, engineErr(err)
		}
		return r.steerQueued(text, true)
	}
	if r.turns.steer(text) {
		return command.SteerResult{Delivery: "boundary"}, nil
	}
	return r.steerQueued(text, false)
}

// steerQueued queues a steer that found no turn to take it.
func (r *Runner) steerQueued(text string, behindTurn bool) (command.SteerResult, error) {
	q, err := r.enqueue(text, kindSend, behindTurn)
	if err != nil {
		return command.SteerResult{}, err
	}
	return command.SteerResult{Delivery: "queued", MessageID: q.ID}, nil
}
