// Package script is Corral's built-in deterministic engine. It plays a
// scenario (streamed text, tool calls, failures) with realistic usage and
// cost figures, and its tool calls take exactly the path a real engine's
// take: the runner's permission callback, the gate, hunk review. It needs no
// API key, which is why `make run` and most tests use it.
package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// Engine plays a Scenario.
type Engine struct {
	opts  engine.StartOptions
	sc    *Scenario
	state state

	mu     sync.Mutex
	cancel context.CancelFunc // of the running turn
	toolNo int
	forks  int
}

// state survives a restart so a resumed session continues the script.
type state struct {
	Conversation string `json:"conversation"`
	Played       []int  `json:"played"`
	// HistoryTokens approximates the conversation's size.
	HistoryTokens int64 `json:"historyTokens"`
}

// New returns a script engine.
func New() engine.Engine { return &Engine{} }

var (
	_ engine.Judge     = (*Engine)(nil)
	_ engine.Compactor = (*Engine)(nil)
	_ engine.Forker    = (*Engine)(nil)
)

func (e *Engine) statePath() string {
	return filepath.Join(e.opts.Dir, "engine", "script", "state.json")
}

// Start loads the scenario and, when resuming, the script's progress.
func (e *Engine) Start(ctx context.Context, opts engine.StartOptions) (string, error) {
	e.opts = opts
	sc, err := LoadScenario(opts.Scenario)
	if err != nil {
		return "", &engine.Failure{Code: event.FailEngineError, Message: "load scenario", Err: err}
	}
	e.sc = sc
	if opts.Agent != nil {
		e.sc.SystemTokens += tokens(opts.Agent.Instructions)
	}
	if opts.Resume != "" {
		raw, err := os.ReadFile(e.statePath())
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			return "", &engine.Failure{Code: event.FailEngineError, Message: "read script state", Err: err}
		default:
			if err := json.Unmarshal(raw, &e.state); err != nil {
				return "", &engine.Failure{Code: event.FailEngineError, Message: "read script state", Err: err}
			}
		}
	}
	switch {
	case opts.Resume != "":
		e.state.Conversation = opts.Resume
	case e.state.Conversation == "":
		e.state.Conversation = "script-" + opts.SessionID
	}
	if err := e.save(); err != nil {
		return "", err
	}
	return e.state.Conversation, nil
}

func (e *Engine) save() error {
	raw, _ := json.Marshal(e.state)
	if err := os.MkdirAll(filepath.Dir(e.statePath()), 0o700); err != nil {
		return &engine.Failure{Code: event.FailEngineError, Message: "save script state", Err: err}
	}
	// Replaced, not rewritten in place: a runner killed mid-write must not
	// leave a torn state that no later runner can resume from (the
	// reliability harness's runner kills found one).
	if err := atomicfile.WriteNoSync(e.statePath(), raw, 0o600); err != nil {
		return &engine.Failure{Code: event.FailEngineError, Message: "save script state", Err: err}
	}
	return nil
}

// pick chooses the turn that answers text.
func (e *Engine) pick(text string) Turn {
	lower := strings.ToLower(text)
	for i, t := range e.sc.Turns {
		if contains(e.state.Played, i) {
			continue
		}
		if t.Match == "" || strings.Contains(lower, strings.ToLower(t.Match)) {
			e.state.Played = append(e.state.Played, i)
			return t
		}
	}
	if e.sc.Fallback != nil {
		return *e.sc.Fallback
	}
	return Turn{Steps: []Step{{Say: "Nothing is scripted for that message."}}}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// Turn plays the turn that answers the message.
func (e *Engine) Turn(ctx context.Context, in engine.TurnInput) (engine.TurnResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	e.mu.Lock()
	e.cancel = cancel
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.cancel = nil
		e.mu.Unlock()
		cancel()
	}()

	t := e.pick(in.Text)
	p := &player{e: e, ctx: ctx, host: e.opts.Host}
	p.pendingIn = tokens(in.Text)
	err := p.play(t.Steps)
	p.endCall() // the final model call
	saveErr := e.save()
	res := engine.TurnResult{Text: p.lastText, Usage: p.usage, HasUsage: true}
	if ctx.Err() != nil {
		res.Stopped = true
		return res, nil
	}
	if err != nil {
		return res, err
	}
	return res, saveErr
}

// Interrupt cancels the running turn: streaming stops and a running command
// is killed.
func (e *Engine) Interrupt(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel != nil {
		e.cancel()
	}
	return nil
}

// Close has nothing to release: commands die with their turn.
func (e *Engine) Close() error { return nil }

// Judge answers a goal check from the scenario's goals: the prompt's clauses
// are the lines starting with "- ".
func (e *Engine) Judge(_ context.Context, prompt string) (string, event.UsageData, error) {
	var b strings.Builder
	for _, line := range strings.Split(prompt, "\n") {
		clause, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if !ok {
			continue
		}
		v := GoalVerdict{Evidence: "nothing in the session shows it"}
		for _, g := range e.sc.Goals {
			if strings.Contains(strings.ToLower(clause), strings.ToLower(g.Match)) {
				v = g
				break
			}
		}
		if v.Garbled {
			fmt.Fprintf(&b, "%s => probably?\n", clause)
			continue
		}
		verdict := "UNMET"
		if v.Met {
			verdict = "MET"
		}
		fmt.Fprintf(&b, "%s: %s — %s\n", verdict, clause, v.Evidence)
	}
	u := e.price(tokens(prompt)+e.sc.SystemTokens, tokens(b.String()))
	return b.String(), u, nil
}

// tokens approximates a text's size in tokens (four bytes a token).
func tokens(s string) int64 { return int64(len(s)+3) / 4 }

// prices per million tokens (input, output) for the script engine's
// models; docs/engines.md lists them.
var prices = map[string][2]float64{
	"script-1": {3, 15},
}

func (e *Engine) price(in, out int64) event.UsageData {
	p, ok := prices[e.sc.Model]
	if !ok {
		p = prices["script-1"]
	}
	return event.UsageData{
		InputTokens: in, OutputTokens: out, Model: e.sc.Model, Estimated: true,
		CostUSD: (float64(in)*p[0] + float64(out)*p[1]) / 1e6,
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Compact shrinks the scripted conversation to a summary's size, as a real
// engine's compaction would.
func (e *Engine) Compact(context.Context) error {
	e.mu.Lock()
	e.state.HistoryTokens /= 10
	used := e.sc.SystemTokens + e.state.HistoryTokens
	e.mu.Unlock()
	e.opts.Host.Emit(event.Context, event.ContextData{UsedTokens: used, WindowTokens: e.sc.ContextWindow,
		Percent: 100 * float64(used) / float64(e.sc.ContextWindow)})
	return e.save()
}

// Fork names a branch of the scripted conversation. The runner copies the
// engine's state folder to the new session and resumes it under this id, so
// the branch continues the script from where it was.
func (e *Engine) Fork(context.Context) (string, error) {
	if err := e.save(); err != nil {
		return "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.forks++
	return fmt.Sprintf("%s-fork%d", e.state.Conversation, e.forks), nil
}
