package runner

import (
	"context"
	"fmt"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// defaultCompactAt is the context fill, in percent, that triggers
// compaction at the end of a turn.
const defaultCompactAt = 95

// compactIfFull compacts the conversation through the engine's own
// compaction when the context is nearly full, and reports contextFull when
// the engine has none or it fails.
func (r *Runner) compactIfFull(ctx context.Context) {
	r.mu.Lock()
	threshold := r.spec.CompactAt
	if threshold <= 0 {
		threshold = defaultCompactAt
	}
	fill := r.contextPercent
	c, ok := r.eng.(engine.Compactor)
	r.mu.Unlock()
	if fill < threshold {
		return
	}
	if !ok {
		r.emit(wire.EvFailure, wire.FailureData{Code: wire.FailContextFull,
			Message: fmt.Sprintf("the context is %.0f%% full and this engine cannot compact it", fill), Action: actionFor(wire.FailContextFull)})
		return
	}
	if err := c.Compact(ctx); err != nil {
		r.emit(wire.EvFailure, wire.FailureData{Code: wire.FailContextFull,
			Message: fmt.Sprintf("the context is %.0f%% full and compaction failed: %v", fill, err), Action: actionFor(wire.FailContextFull)})
		return
	}
	r.mu.Lock()
	r.contextPercent = 0
	r.mu.Unlock()
	r.emit(wire.EvCompacted, wire.CompactedData{BeforePercent: fill})
}
