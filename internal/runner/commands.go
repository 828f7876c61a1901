package runner

import (
	"context"
	"strings"

	"github.com/corral-dev/corral/pkg/engine"
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
	r.mu.Lock()
	live, closed := r.live, r.closed
	r.mu.Unlock()
	if closed {
		return nil, wire.Errorf(wire.CodeUnavailable, "session is shutting down")
	}
	if !live {
		return nil, wire.Errorf(wire.CodeUnavailable, "session is not live yet")
	}
	if cmd.Cmd != wire.CmdForkSession {
		// A fork takes the session for itself (see fork).
		if !r.cmds.TryRLock() {
			return nil, wire.Errorf(wire.CodeConflict, "the session is forking or shutting down; send again once it is done")
		}
		defer r.cmds.RUnlock()
	}
	switch cmd.Cmd {
	case wire.CmdSend:
		if strings.TrimSpace(cmd.Text) == "" {
			return nil, wire.Errorf(wire.CodeBadRequest, "send needs text")
		}
		return r.enqueue(cmd.Text, "send", false), nil
	case wire.CmdSteer:
		if strings.TrimSpace(cmd.Text) == "" {
			return nil, wire.Errorf(wire.CodeBadRequest, "steer needs text")
		}
		return r.steer(ctx, cmd.Text)
	case wire.CmdStop:
		return r.stop(ctx, "user"), nil
	case wire.CmdAnswer:
		return r.answer(cmd)
	case wire.CmdDecideHunk:
		return r.decideHunk(cmd)
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

// SteerResult says how a steer was taken.
type SteerResult struct {
	// Delivery is "native" (handed to the engine at once), "boundary"
	// (waiting for the next tool boundary) or "queued" (no turn was
	// running, so it became a send).
	Delivery string `json:"delivery"`
	// MessageID is set when the steer was queued as a send.
	MessageID string `json:"messageId,omitempty"`
}

func (r *Runner) steer(ctx context.Context, text string) (SteerResult, error) {
	r.mu.Lock()
	running := r.running != nil
	eng := r.eng
	if !running {
		r.mu.Unlock()
		q := r.enqueue(text, "send", false)
		return SteerResult{Delivery: "queued", MessageID: q.ID}, nil
	}
	if s, ok := eng.(engine.Steerer); ok {
		r.mu.Unlock()
		err := s.Steer(ctx, text)
		if err == nil {
			r.emit(wire.EvSteerDelivered, wire.SteerData{Text: text, Native: true})
			return SteerResult{Delivery: "native"}, nil
		}
		if err != engine.ErrNoTurn {
			return SteerResult{}, engineErr(err)
		}
		q := r.enqueue(text, "send", true)
		return SteerResult{Delivery: "queued", MessageID: q.ID}, nil
	}
	r.steers = append(r.steers, text)
	r.mu.Unlock()
	return SteerResult{Delivery: "boundary"}, nil
}

func (r *Runner) cancelQueued(id string) (any, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, q := range r.queue {
		if q.ID == id {
			r.queue = append(r.queue[:i], r.queue[i+1:]...)
			return q, nil
		}
	}
	return nil, wire.Errorf(wire.CodeNotFound, "no queued message %q", id)
}

func (r *Runner) setMode(mode string) (any, error) {
	switch mode {
	case "review", "auto", "readonly":
	default:
		return nil, wire.Errorf(wire.CodeBadRequest, "mode must be review, auto or readonly, not %q", mode)
	}
	r.mu.Lock()
	r.spec.Mode = mode
	spec := r.spec
	r.mu.Unlock()
	if err := r.gate.setMode(mode); err != nil {
		return nil, err
	}
	if err := r.saveSpec(spec); err != nil {
		return nil, err
	}
	r.emit(wire.EvModeChanged, map[string]string{"mode": mode})
	r.presence.touch()
	return map[string]string{"mode": mode}, nil
}

func (r *Runner) setSpendCap(capUSD *float64) (any, error) {
	if capUSD == nil || *capUSD < 0 {
		return nil, wire.Errorf(wire.CodeBadRequest, "setSpendCap needs spendCapUsd >= 0 (0 removes the cap)")
	}
	r.mu.Lock()
	r.spec.SpendCapUSD = *capUSD
	r.spendCapHit = r.overCapLocked()
	spec := r.spec
	r.notify()
	r.mu.Unlock()
	if err := r.saveSpec(spec); err != nil {
		return nil, err
	}
	r.emit(wire.EvSpendCapSet, map[string]float64{"spendCapUsd": *capUSD})
	return map[string]float64{"spendCapUsd": *capUSD}, nil
}

func (r *Runner) overCapLocked() bool {
	return r.spec.SpendCapUSD > 0 && r.usage.CostUSD >= r.spec.SpendCapUSD
}

// status snapshots the session for the status command and presence.json.
func (r *Runner) status() wire.Status {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := wire.Status{
		Session: r.spec.ID, Engine: r.spec.Engine, State: r.state, Activity: r.activity,
		Mode: r.spec.Mode, Turn: r.turnNo, Queued: append([]wire.Queued{}, r.queue...),
		OpenAsks: []string{}, PendingEdit: []string{}, Usage: r.usage,
		LastSeq: r.evlog().LastSeq(), SpendCapUSD: r.spec.SpendCapUSD, Unattended: r.spec.Unattended,
	}
	for _, a := range r.openAsksLocked() {
		s.OpenAsks = append(s.OpenAsks, a.id)
	}
	for _, e := range r.pendingEditsLocked() {
		s.PendingEdit = append(s.PendingEdit, e.id)
	}
	return s
}
