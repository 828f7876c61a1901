package claude

import (
	"context"
	"fmt"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Compact has the CLI compact the conversation with its own /compact
// command. It reports the compaction's exact cost as a usage event and the
// context left as a context event.
func (e *Engine) Compact(ctx context.Context) error {
	if !e.ops.TryLock() {
		return fmt.Errorf("claude engine: cannot compact while a turn runs: %w", wire.ErrConflict)
	}
	defer e.ops.Unlock()
	e.mu.Lock()
	stored := e.persisted
	e.mu.Unlock()
	if !stored {
		return nil // an empty conversation has nothing to compact
	}
	res, t, err := e.runTurn(ctx, "/compact", true)
	if err != nil {
		return err
	}
	if res.Stopped {
		return fmt.Errorf("claude compaction was stopped: %w", context.Canceled)
	}
	t.mu.Lock()
	result, msg, left := t.compactResult, t.compactError, t.compactTokens
	t.mu.Unlock()
	if result != "" && result != "success" {
		return &engine.Failure{Code: event.FailEngineError, Message: "claude compaction failed: " + firstNonEmpty(msg, result)}
	}
	usage := res.Usage
	usage.Estimated = false
	e.host.Emit(event.Usage, usage)
	if left > 0 {
		e.mu.Lock()
		window := windowFor(e.model, e.windows)
		e.mu.Unlock()
		used := callUsage{input: left}
		e.host.Emit(event.Context, used.contextData(window))
	}
	return nil
}
