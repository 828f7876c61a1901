package runner

import (
	"context"
	"strings"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Do runs one control command: the single road into a session, for
// control.sock, the link's command message (and so the supervisor's HTTP
// API and CLI) and print mode. A refused command is a reply with its
// error.
//
// A command whose ctx carries a requestId (command.WithRequestID) runs once:
// a retry with the same requestId gets the first reply that succeeded
// (requests.go).
func (r *Runner) Do(ctx context.Context, req command.Request) *wire.Reply {
	if id := command.RequestIDFrom(ctx); id != "" {
		return r.requests.once(id, req.Cmd(), func() *wire.Reply { return r.doOnce(ctx, req) })
	}
	return r.doOnce(ctx, req)
}

func (r *Runner) doOnce(ctx context.Context, req command.Request) *wire.Reply {
	result, err := r.do(ctx, req)
	if err != nil {
		return wire.ErrReply(err)
	}
	return wire.OKReply(result)
}

func (r *Runner) do(ctx context.Context, req command.Request) (any, error) {
	if err := command.CheckLimits(req); err != nil {
		return nil, err
	}
	h, ok := handlers[req.Cmd()]
	if !ok {
		return nil, wire.Errorf(wire.CodeBadRequest, "unknown command %q", req.Cmd())
	}
	if h.beforeLive {
		return h.run(r, ctx, req)
	}
	release, err := r.admit(req)
	if err != nil {
		return nil, err
	}
	defer release()
	failures := r.storage.failures.Load()
	result, err := h.run(r, ctx, req)
	if _, send := req.(command.Send); send {
		// A send's one event is recorded or refused by its own append
		// (enqueue): its reply says which, so a retry of a send that got
		// in finds it rather than queueing it again.
		return result, err
	}
	if err == nil && (r.storage.failures.Load() != failures || r.storage.down.Load()) {
		// The log failed while the command ran: some of its events may
		// not be in the file, and nothing is acknowledged that is not.
		return nil, r.refuseForStorage()
	}
	return result, err
}

// handler runs one command.
type handler struct {
	name command.Name
	run  func(r *Runner, ctx context.Context, req command.Request) (any, error)
	// beforeLive: the command works on a session that is not live yet.
	beforeLive bool
}

// handle makes the handler of command Q from a function that returns its
// result R: the compiler holds each command to its own result type.
func handle[Q command.Call[R], R any](fn func(r *Runner, ctx context.Context, c Q) (R, error)) handler {
	var q Q
	return handler{name: q.Cmd(), run: func(r *Runner, ctx context.Context, req command.Request) (any, error) {
		res, err := fn(r, ctx, req.(Q))
		if err != nil {
			return nil, err
		}
		return res, nil
	}}
}

// handlers holds one handler per command of command.Registry; adding a
// command adds its line here.
var handlers = handlerTable(
	handle(func(r *Runner, ctx context.Context, c command.Send) (event.Queued, error) {
		if strings.TrimSpace(c.Text) == "" {
			return event.Queued{}, wire.Errorf(wire.CodeBadRequest, "send needs text")
		}
		return r.enqueueSend(c.Text, command.RequestIDFrom(ctx))
	}),
	handle(func(r *Runner, ctx context.Context, c command.Steer) (command.SteerResult, error) {
		if strings.TrimSpace(c.Text) == "" {
			return command.SteerResult{}, wire.Errorf(wire.CodeBadRequest, "steer needs text")
		}
		return r.steer(ctx, c.Text)
	}),
	handle(func(r *Runner, ctx context.Context, _ command.Stop) (event.StoppedData, error) {
		return r.stop(ctx, "user"), nil
	}),
	handle(func(r *Runner, _ context.Context, c command.Answer) (command.AnswerResult, error) {
		if err := r.asks.answer(c.AskID, c.Decision, c.Note); err != nil {
			return command.AnswerResult{}, err
		}
		return command.AnswerResult{AskID: c.AskID, Decision: c.Decision}, nil
	}),
	handle(func(r *Runner, _ context.Context, c command.DecideHunk) (event.HunkDecidedData, error) {
		return r.review.decide(c.EditID, c.HunkID, c.Decision, c.Note)
	}),
	anyTime(handle(func(r *Runner, _ context.Context, _ command.GetStatus) (command.Status, error) {
		return r.status(), nil
	})),
	handle(func(r *Runner, _ context.Context, c command.SetMode) (event.ModeChangedData, error) {
		return r.setMode(c.Mode)
	}),
	handle(func(r *Runner, _ context.Context, c command.SetGoal) (event.GoalSetData, error) {
		return r.setGoal(c.Goal)
	}),
	handle(func(r *Runner, _ context.Context, _ command.GetGoal) (command.GoalState, error) {
		return r.getGoal()
	}),
	handle(func(r *Runner, _ context.Context, _ command.ClearGoal) (command.ClearGoalResult, error) {
		return r.clearGoal()
	}),
	handle(func(r *Runner, _ context.Context, _ command.MarkGoalDone) (event.GoalCheckData, error) {
		return r.markGoalDone()
	}),
	handle(func(r *Runner, _ context.Context, c command.SetSpendCap) (event.SpendCapSetData, error) {
		return r.setSpendCap(c.SpendCapUSD)
	}),
	handle(func(r *Runner, _ context.Context, c command.CancelQueued) (event.Queued, error) {
		return r.cancelQueued(c.MessageID)
	}),
	handle(func(r *Runner, ctx context.Context, _ command.ForkSession) (command.ForkResult, error) {
		return r.fork(ctx)
	}),
	handle(func(r *Runner, _ context.Context, c command.Rename) (command.RenameResult, error) {
		return r.rename(c)
	}),
)

// anyTime marks a handler that works before the session is live.
func anyTime(h handler) handler {
	h.beforeLive = true
	return h
}

// handlerTable keys handlers by their command's name. The name comes from
// the type each handler takes, so a table entry cannot name one command
// and handle another.
func handlerTable(hs ...handler) map[command.Name]handler {
	out := make(map[command.Name]handler, len(hs))
	for _, h := range hs {
		out[h.name] = h
	}
	return out
}
