package runner

import (
	"context"
	"fmt"
	"sync"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// defaultCompactAt is the context fill, in percent, that triggers
// compaction at the end of a turn.
const defaultCompactAt = 95

// compaction keeps the engine's last reported context fill and, at the end
// of a turn that ended normally with the context nearly full, compacts the
// conversation through the engine's own compaction, or reports contextFull
// when the engine has none or it fails.
type compaction struct {
	host policyHost

	mu      sync.Mutex
	percent float64
}

// observe takes the engine's report of the context fill.
func (c *compaction) observe(percent float64) {
	c.mu.Lock()
	c.percent = percent
	c.mu.Unlock()
}

func (c *compaction) afterTurn(ctx context.Context, end turnEnd) {
	if end.outcome != "done" {
		return
	}
	threshold := c.host.spec().CompactAt
	if threshold <= 0 {
		threshold = defaultCompactAt
	}
	c.mu.Lock()
	fill := c.percent
	c.mu.Unlock()
	if fill < threshold {
		return
	}
	cp, ok := end.eng.(engine.Compactor)
	if !ok {
		c.host.emit(event.Failure, event.FailureData{Code: event.FailContextFull,
			Message: fmt.Sprintf("the context is %.0f%% full and this engine cannot compact it", fill), Action: actionFor(event.FailContextFull)})
		return
	}
	if err := cp.Compact(ctx); err != nil {
		c.host.emit(event.Failure, event.FailureData{Code: event.FailContextFull,
			Message: fmt.Sprintf("the context is %.0f%% full and compaction failed: %v", fill, err), Action: actionFor(event.FailContextFull)})
		return
	}
	c.observe(0)
	c.host.emit(event.Compacted, event.CompactedData{BeforePercent: fill})
}
