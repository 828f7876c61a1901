package runner

import (
	"context"
	"strings"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Do runs one control command. It is the single handler behind control.sock,
// the wire protocol's inject, approval.resolve, cap and live.interrupt, and
// the supervisor's HTTP API.
func (r *Runner) Do(ctx context.Context, cmd wire.Command) *wire.Reply {
	result, err := r.do(ctx, cmd)
	if err != nil {
		return wire.ErrReply(err)
	}
	return wire.OKReply(result)
}

func (r *Runner) do(ctx context.Context, cmd wire.Command) (any, error) {
	switch cmd.Cmd {
	case wire.CmdStatus:
		return r.status(), nil
	}
	release, err := r.admit(cmd.Cmd)
	if err != nil {
		return nil, err
	}
	defer release()
	switch cmd.Cmd {
	case wire.CmdSend:
		if strings.TrimSpace(cmd.Text) == "" {
			return nil, wire.Errorf(wire.CodeBadRequest, "send needs text")
		}
		return r.enqueue(cmd.Text, kindSend, false), nil
	case wire.CmdSteer:
		if strings.TrimSpace(cmd.Text) == "" {
			return nil, wire.Errorf(wire.CodeBadRequest, "steer needs text")
		}
		return r.steer(ctx, cmd.Text)
	case wire.CmdStop:
		return r.stop(ctx, "user"), nil
	case wire.CmdAnswer:
		if err := r.asks.answer(cmd.AskID, cmd.Decision, cmd.Note); err != nil {
			return nil, err
		}
		return wire.AnswerResult{AskID: cmd.AskID, Decision: cmd.Decision}, nil
	case wire.CmdDecideHunk:
		return r.review.decide(cmd.EditID, cmd.HunkID, cmd.Decision, cmd.Note)
	case wire.CmdSetMode:
		return r.setMode(cmd.Mode)
	case wire.CmdCancelQueued:
		return r.cancelQueued(cmd.MessageID)
	case wire.CmdSetSpendCap:
		return r.setSpendCap(cmd.SpendCapUSD)
	case wire.CmdSetGoal:
		return r.setGoal(cmd.Goal)
	case wire.CmdGetGoal:
		return r.getGoal()
	case wire.CmdClearGoal:
		return r.clearGoal()
	case wire.CmdMarkGoalDone:
		return r.markGoalDone()
	case wire.CmdForkSession:
		return r.fork(ctx)
	case "":
		return nil, wire.Errorf(wire.CodeBadRequest, "command has no \"cmd\"")
	default:
		return nil, wire.Errorf(wire.CodeBadRequest, "unknown command %q", cmd.Cmd)
	}
}

// admit lets a command in, or refuses it: every command but status needs
// a live session that is not shutting down, and none but a fork's own runs
// while a fork is under way (see fork). The command holds its admission
// until it calls release.
func (r *Runner) admit(cmd wire.Cmd) (release func(), err error) {
	r.mu.Lock()
	live, closed := r.live, r.closed
	r.mu.Unlock()
	switch {
	case closed:
		return nil, wire.Errorf(wire.CodeUnavailable, "session is shutting down")
	case !live:
		return nil, wire.Errorf(wire.CodeUnavailable, "session is not live yet")
	case cmd == wire.CmdForkSession:
		// A fork takes the session for itself.
		return func() {}, nil
	case !r.cmds.TryRLock():
		return nil, wire.Errorf(wire.CodeConflict, "the session is forking or shutting down; send again once it is done")
	}
	return r.cmds.RUnlock, nil
}

func (r *Runner) cancelQueued(id string) (any, error) {
	if q, ok := r.turns.cancel(id); ok {
		return q, nil
	}
	return nil, wire.Errorf(wire.CodeNotFound, "no queued message %q", id)
}

func (r *Runner) setMode(mode string) (any, error) {
	switch mode {
	case "review", "auto", "readonly":
	default:
		return nil, wire.Errorf(wire.CodeBadRequest, "mode must be review, auto or readonly, not %q", mode)
	}
	spec := r.updateSpec(func(s *wire.Spec) { s.Mode = mode })
	if err := r.gate.setMode(mode); err != nil {
		return nil, err
	}
	if err := r.store.saveSpec(spec); err != nil {
		return nil, err
	}
	r.emit(event.ModeChanged, event.ModeChangedData{Mode: mode})
	r.presence.touch()
	return event.ModeChangedData{Mode: mode}, nil
}

func (r *Runner) setSpendCap(capUSD *float64) (any, error) {
	if capUSD == nil || *capUSD < 0 {
		return nil, wire.Errorf(wire.CodeBadRequest, "setSpendCap needs spendCapUsd >= 0 (0 removes the cap)")
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
		return nil, err
	}
	r.emit(event.SpendCapSet, event.SpendCapSetData{SpendCapUSD: *capUSD})
	return event.SpendCapSetData{SpendCapUSD: *capUSD}, nil
}

// status snapshots the session for the status command and presence.json.
func (r *Runner) status() command.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	turnNo, queued := r.turns.snapshot()
	return command.Status{
		Session: r.spec.ID, Engine: r.spec.Engine, State: r.state, Activity: r.activity,
		Mode: r.spec.Mode, Turn: turnNo, Queued: queued,
		OpenAsks: r.asks.openIDs(), PendingEdit: r.review.pendingIDs(), Usage: r.meter.usage(),
		LastSeq: r.evlog().LastSeq(), SpendCapUSD: r.spec.SpendCapUSD, Unattended: r.spec.Unattended,
	}
}
