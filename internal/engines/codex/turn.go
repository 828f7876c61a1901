package codex

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// stopWait is how long a turn whose context ended waits for the server to
// confirm the interrupt before giving up on it.
const stopWait = 10 * time.Second

// Turn runs one turn: turn/start, then the streamed notifications until
// turn/completed.
func (e *Engine) Turn(ctx context.Context, in engine.TurnInput) (engine.TurnResult, error) {
	e.turnMu.Lock()
	defer e.turnMu.Unlock()
	srv, thread, err := e.ready(ctx)
	if err != nil {
		return engine.TurnResult{}, err
	}
	ts := newTurnState(context.Background(), thread, e.opts.Host.Emit, false)
	e.register(ts)
	defer e.unregister(ts)
	return e.runTurn(ctx, srv, ts, func(ctx context.Context) error {
		var res turnResult
		if err := srv.conn.Call(ctx, mTurnStart, turnStartParams{ThreadID: thread, Input: textInput(in.Text)}, &res); err != nil {
			return err
		}
		ts.adopt(res.Turn.ID)
		return nil
	})
}

// runTurn starts a turn with start and follows it to its end.
func (e *Engine) runTurn(ctx context.Context, srv *serverProc, ts *turnState, start func(context.Context) error) (engine.TurnResult, error) {
	if err := start(ctx); err != nil {
		ts.finish(turnInfo{Status: "failed"}, "the turn did not start")
		if !srv.alive() {
			return engine.TurnResult{}, e.crashFailure(srv)
		}
		if ctx.Err() != nil {
			return engine.TurnResult{}, ctx.Err()
		}
		return engine.TurnResult{}, engineFailure("codex: start the turn", err, srv.stderr())
	}
	select {
	case <-ts.done:
	case <-srv.gone:
	case <-ctx.Done():
	}
	switch {
	case ts.ended():
	case !srv.alive():
		ts.finish(turnInfo{Status: "failed"}, "the Codex CLI exited during the turn")
		return ts.result(), e.crashFailure(srv)
	default: // ctx ended: stop the turn through the protocol, then give up.
		e.interruptTurn(srv, ts)
		t := time.NewTimer(stopWait)
		select {
		case <-ts.done:
		case <-srv.gone:
		case <-t.C:
		}
		t.Stop()
		ts.finish(turnInfo{Status: "interrupted"}, "the turn was abandoned")
		res := ts.result()
		res.Stopped = true
		return res, ctx.Err()
	}
	res := ts.result()
	ts.mu.Lock()
	final := ts.final
	ts.mu.Unlock()
	switch final.Status {
	case "completed":
		return res, nil
	case "interrupted":
		res.Stopped = true
		return res, nil
	default:
		return res, turnFailure(final.Error)
	}
}

// result is what the turn produced so far.
func (t *turnState) result() engine.TurnResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	return engine.TurnResult{Text: t.text, Usage: t.usage, HasUsage: t.hasUsage}
}

// crashFailure describes a server that died under a turn. The thread is
// on disk, so the next turn resumes it in a new server.
func (e *Engine) crashFailure(srv *serverProc) error {
	<-srv.gone
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return engineFailure("codex: the engine was closed during the turn", nil, nil)
	}
	return engineFailure(fmt.Sprintf("codex: the Codex CLI %s during the turn; the next message resumes the conversation in a new process", srv.exit), nil, srv.stderr())
}

// Interrupt stops the running turn with turn/interrupt. The turn then ends
// as stopped; a pending approval is resolved by the server.
func (e *Engine) Interrupt(ctx context.Context) error {
	e.mu.Lock()
	ts, srv := e.turns[e.threadID], e.srv
	e.mu.Unlock()
	if ts == nil || ts.judge || srv == nil {
		return nil
	}
	if _, ok := ts.waitID(ctx); !ok {
		return ctx.Err()
	}
	return e.interruptTurn(srv, ts)
}

func (e *Engine) interruptTurn(srv *serverProc, ts *turnState) error {
	id := ts.turnID()
	if id == "" || ts.ended() || !srv.alive() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopWait)
	defer cancel()
	err := srv.conn.Call(ctx, mTurnInterrupt, turnRef{ThreadID: ts.threadID, TurnID: id}, nil)
	var rerr *jsonrpc.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rerr), !srv.alive(), ts.ended():
		// The turn ended on its own meanwhile ("no active turn").
		e.log.Debug("codex interrupt after the turn ended", zap.Error(err))
		return nil
	default:
		return fmt.Errorf("codex: interrupt: %w", err)
	}
}

// Steer delivers text into the running turn with turn/steer. Codex adds it
// to the turn at once while the model streams (the partial answer is
// dropped and the model is asked again) and after the running tool call
// otherwise.
func (e *Engine) Steer(ctx context.Context, text string) error {
	e.mu.Lock()
	ts, srv := e.turns[e.threadID], e.srv
	e.mu.Unlock()
	if ts == nil || ts.judge || !ts.steerable() || srv == nil || ts.ended() {
		return engine.ErrNoTurn
	}
	id, ok := ts.waitID(ctx)
	if !ok {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return engine.ErrNoTurn
	}
	err := srv.conn.Call(ctx, mTurnSteer, turnSteerParams{ThreadID: ts.threadID, ExpectedTurnID: id, Input: textInput(text)}, nil)
	var rerr *jsonrpc.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rerr), !srv.alive():
		// "no active turn to steer", or the turn id moved on.
		return fmt.Errorf("%w (%v)", engine.ErrNoTurn, err)
	default:
		return fmt.Errorf("codex: steer: %w", err)
	}
}

// Fork branches the thread with thread/fork; the session continues on the
// new thread, whose id it returns. The old thread stays resumable.
func (e *Engine) Fork(ctx context.Context) (string, error) {
	e.turnMu.Lock()
	defer e.turnMu.Unlock()
	srv, thread, err := e.ready(ctx)
	if err != nil {
		return "", err
	}
	params := e.threadParams()
	params.ThreadID, params.ExcludeTurns = thread, true
	var res threadResult
	if err := srv.conn.Call(ctx, mThreadFork, params, &res); err != nil {
		return "", engineFailure("codex: fork the thread", err, nil)
	}
	if err := e.checkPolicy(res); err != nil {
		return "", engineFailure("codex", err, nil)
	}
	e.mu.Lock()
	// A fork starts from its parent's cumulative figures.
	e.totals[res.Thread.ID] = e.totals[thread]
	e.threadID = res.Thread.ID
	e.mu.Unlock()
	e.log.Info("codex thread forked", zap.String("from", thread), zap.String("to", res.Thread.ID))
	return res.Thread.ID, nil
}

// judgeInstructions keep a side question from doing work.
const judgeInstructions = "You are answering a side question about this conversation. Answer it directly in plain text from what you already know. Do not run commands, edit files or call any tool."

// Judge answers prompt in an ephemeral fork of the thread, so neither the
// question nor the answer enters the conversation. Any approval the fork
// asks for is declined.
func (e *Engine) Judge(ctx context.Context, prompt string) (string, event.UsageData, error) {
	e.turnMu.Lock()
	defer e.turnMu.Unlock()
	srv, thread, err := e.ready(ctx)
	if err != nil {
		return "", event.UsageData{}, err
	}
	params := e.threadParams()
	params.ThreadID, params.ExcludeTurns, params.Ephemeral = thread, true, true
	params.DeveloperInstructions = judgeInstructions
	if own := presetInstructions(e.opts.Agent); own != "" {
		params.DeveloperInstructions = own + "\n\n" + judgeInstructions
	}
	var res threadResult
	if err := srv.conn.Call(ctx, mThreadFork, params, &res); err != nil {
		return "", event.UsageData{}, engineFailure("codex: fork the thread for a side question", err, nil)
	}
	fork := res.Thread.ID
	defer func() {
		// Unload the fork; it was never written to disk.
		uctx, cancel := context.WithTimeout(context.Background(), stopWait)
		defer cancel()
		if srv.alive() {
			_ = srv.conn.Call(uctx, mThreadUnsubscribe, threadRef{ThreadID: fork}, nil)
		}
		e.mu.Lock()
		delete(e.totals, fork)
		e.mu.Unlock()
	}()
	if err := e.checkPolicy(res); err != nil {
		return "", event.UsageData{}, engineFailure("codex", err, nil)
	}
	e.mu.Lock()
	e.totals[fork] = e.totals[thread]
	e.mu.Unlock()
	ts := newTurnState(context.Background(), fork, nil, true)
	e.register(ts)
	defer e.unregister(ts)
	out, err := e.runTurn(ctx, srv, ts, func(ctx context.Context) error {
		var tr turnResult
		if err := srv.conn.Call(ctx, mTurnStart, turnStartParams{ThreadID: fork, Input: textInput(prompt)}, &tr); err != nil {
			return err
		}
		ts.adopt(tr.Turn.ID)
		return nil
	})
	if err == nil && out.Stopped {
		err = engineFailure("codex: the side question was interrupted", nil, nil)
	}
	return out.Text, out.Usage, err
}

// Compact compacts the thread's context with thread/compact/start, which
// runs as a turn of its own, and waits for it.
func (e *Engine) Compact(ctx context.Context) error {
	e.turnMu.Lock()
	defer e.turnMu.Unlock()
	srv, thread, err := e.ready(ctx)
	if err != nil {
		return err
	}
	ts := newTurnState(context.Background(), thread, e.opts.Host.Emit, false)
	ts.compaction = true
	e.register(ts)
	defer e.unregister(ts)
	out, err := e.runTurn(ctx, srv, ts, func(ctx context.Context) error {
		return srv.conn.Call(ctx, mThreadCompact, threadRef{ThreadID: thread}, nil)
	})
	if err == nil && out.Stopped {
		return engineFailure("codex: compaction was interrupted", nil, nil)
	}
	return err
}
