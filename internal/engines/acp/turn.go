package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// turnState is the running turn. Its fields are guarded by Engine.mu.
type turnState struct {
	// permits is the context of the turn's Permit calls: it ends when the
	// turn is interrupted or over, so a waiting ask is answered.
	permits       context.Context
	cancelPermits context.CancelFunc

	tools map[string]*toolCall
	order []string

	// segment is the assistant text since the last tool call; lastText
	// the last segment that ended.
	segment  strings.Builder
	lastText string

	// interrupted is set by Interrupt: the turn stops and is reported
	// stopped, and waiting steers are not sent.
	interrupted bool
	// steers wait to be sent as the next prompt of this turn. They were
	// taken at a tool boundary, and the running prompt was cancelled so
	// that the agent takes them before it goes on.
	steers          []string
	steerCancelSent bool
	// cancelled is closed once that cancel has been written, so that it
	// cannot reach the agent after the next prompt and cancel that one.
	cancelled chan struct{}

	// approved holds the commands and read paths a permission request
	// allowed, so that the terminal or read carrying them out is not
	// asked about again.
	approved map[string]int

	// refused names the last call Corral refused, for a turn the agent
	// then ends in error (an agent may stop the turn when refused).
	refused string

	usage    event.UsageData
	hasUsage bool
	plans    int
}

func newTurn() *turnState {
	ctx, cancel := context.WithCancel(context.Background())
	return &turnState{permits: ctx, cancelPermits: cancel, tools: map[string]*toolCall{}, approved: map[string]int{}}
}

// Turn sends the user's message as a prompt and returns once the agent has
// answered it (and any steer taken on the way).
func (e *Engine) Turn(ctx context.Context, in engine.TurnInput) (engine.TurnResult, error) {
	e.turnMu.Lock()
	defer e.turnMu.Unlock()
	a, err := e.ready(ctx)
	if err != nil {
		return engine.TurnResult{}, err
	}
	t := newTurn()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return engine.TurnResult{}, &engine.Failure{Code: event.FailEngineError, Message: "acp: the engine is closed"}
	}
	e.turn = t
	e.mu.Unlock()

	text := in.Text
	var stop string
	for {
		res, err := e.prompt(ctx, a, text)
		if err != nil {
			return e.endTurn(t, stop, e.turnFailure(ctx, a, t, err))
		}
		stop = res.StopReason
		e.mu.Lock()
		e.addUsageLocked(t, res.Usage)
		steers, cancelled := t.steers, t.cancelled
		t.steers, t.steerCancelSent, t.cancelled = nil, false, nil
		interrupted := t.interrupted
		e.mu.Unlock()
		if cancelled != nil {
			<-cancelled
		}
		if len(steers) == 0 || interrupted {
			break
		}
		// The steers taken at a tool boundary go to the agent now, as
		// the turn's next prompt.
		text = strings.Join(steers, "\n\n")
		e.log.Debug("sending steers as the next prompt", zap.Int("steers", len(steers)))
	}
	return e.endTurn(t, stop, nil)
}

// prompt runs one session/prompt. When ctx ends first, the agent is asked
// to cancel, and killed if it does not within cancelGrace.
func (e *Engine) prompt(ctx context.Context, a *agent, text string) (promptResult, error) {
	type outcome struct {
		res promptResult
		err error
	}
	ch := make(chan outcome, 1)
	e.mu.Lock()
	id := e.sessionID
	e.mu.Unlock()
	go func() {
		var res promptResult
		// Not ctx: the reply (or the agent's end) settles the call, so
		// the agent is never left mid-prompt with nobody listening.
		err := a.conn.Call(context.Background(), mSessionPrompt, promptParams{SessionID: id, Prompt: []contentBlock{{Type: "text", Text: text}}}, &res)
		ch <- outcome{res, err}
	}()
	select {
	case o := <-ch:
		return o.res, o.err
	case <-ctx.Done():
	}
	e.mu.Lock()
	if e.turn != nil {
		e.turn.interrupted = true
		e.turn.cancelPermits()
	}
	e.mu.Unlock()
	if err := a.conn.Notify(mSessionCancel, cancelParams{SessionID: id}); err != nil {
		e.log.Warn("acp: session/cancel after the turn's context ended", zap.Error(err))
	}
	t := time.NewTimer(cancelGrace)
	defer t.Stop()
	select {
	case o := <-ch:
		return o.res, ctx.Err()
	case <-t.C:
		e.log.Warn("the ACP agent did not stop in time; killing it")
		a.child.Kill()
		<-ch
		return promptResult{}, ctx.Err()
	}
}

// turnFailure maps a failed prompt onto the turn's error.
func (e *Engine) turnFailure(ctx context.Context, a *agent, t *turnState, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("acp: turn: %w", ctx.Err())
	}
	var ee *jsonrpc.ExitError
	if errors.As(err, &ee) {
		return e.failure(a, "acp: the turn failed; the next message starts the agent again and resumes the session", err)
	}
	e.mu.Lock()
	refused := t.refused
	e.mu.Unlock()
	if refused != "" {
		return e.failure(a, "acp: the agent ended the turn after Corral refused "+refused, err)
	}
	return e.failure(a, "acp: the turn failed", err)
}

// endTurn closes what the turn left open and reports it.
func (e *Engine) endTurn(t *turnState, stop string, err error) (engine.TurnResult, error) {
	e.mu.Lock()
	e.flushTextLocked(t)
	for _, id := range t.order {
		if tc := t.tools[id]; !tc.finished {
			e.finishToolLocked(t, tc, "stopped", "")
		}
	}
	res := engine.TurnResult{
		Stopped:  t.interrupted || stop == stopCancelled,
		Text:     t.lastText,
		Usage:    t.usage,
		HasUsage: t.hasUsage,
	}
	e.turn = nil
	e.mu.Unlock()
	t.cancelPermits()
	if err != nil {
		res.Stopped = res.Stopped || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
		return res, err
	}
	if stop != "" && stop != stopEndTurn && stop != stopCancelled {
		e.log.Info("the ACP agent ended the turn early", zap.String("stopReason", stop))
	}
	return res, nil
}

// Interrupt asks the agent to cancel the running prompt; the turn then
// ends stopped. Waiting permission requests are answered "cancelled".
func (e *Engine) Interrupt(ctx context.Context) error {
	e.mu.Lock()
	t, a, id := e.turn, e.agent, e.sessionID
	if t == nil || a == nil {
		e.mu.Unlock()
		return nil
	}
	t.interrupted = true
	t.steers = nil
	e.mu.Unlock()
	t.cancelPermits()
	if err := a.conn.Notify(mSessionCancel, cancelParams{SessionID: id}); err != nil {
		return fmt.Errorf("acp: session/cancel: %w", err)
	}
	return nil
}

// takeSteersLocked is called at every tool boundary: steers waiting there
// are taken now and sent as the next prompt of the turn, once the running
// prompt is cancelled (ACP has no way to add input to a running prompt).
func (e *Engine) takeSteersLocked(t *turnState, a *agent, toolID string) {
	if t.interrupted {
		return
	}
	steers := e.host.TakeSteers(toolID)
	if len(steers) == 0 {
		return
	}
	t.steers = append(t.steers, steers...)
	if t.steerCancelSent {
		return
	}
	t.steerCancelSent = true
	id := e.sessionID
	done := make(chan struct{})
	t.cancelled = done
	// Not on the reading goroutine: a write must never wait on it.
	go func() {
		defer close(done)
		if err := a.conn.Notify(mSessionCancel, cancelParams{SessionID: id}); err != nil {
			e.log.Warn("acp: cancel the prompt to hand over a steer", zap.Error(err))
		}
	}()
}

// addUsageLocked takes a prompt's reported token usage.
func (e *Engine) addUsageLocked(t *turnState, u *turnUsage) {
	if u == nil {
		return
	}
	d := event.UsageData{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Estimated: true, Model: e.opts.Model}
	if u.CachedReadTokens != nil {
		d.CacheReadTokens = *u.CachedReadTokens
	}
	if u.CachedWriteTokens != nil {
		d.CacheWriteTokens = *u.CachedWriteTokens
	}
	e.host.Emit(event.Usage, d)
	t.usage.InputTokens += d.InputTokens
	t.usage.OutputTokens += d.OutputTokens
	t.usage.CacheReadTokens += d.CacheReadTokens
	t.usage.CacheWriteTokens += d.CacheWriteTokens
	t.usage.Model = d.Model
	if t.usage.CostUSD == 0 {
		t.usage.Estimated = true
	}
	t.hasUsage = true
}
