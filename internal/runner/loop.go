package runner

import (
	"context"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
)

// validateLoop checks a timed loop: see wire.Spec.CheckLoop.
func validateLoop(spec wire.Spec) error { return spec.CheckLoop() }

// runLoop queues the loop's prompt on its schedule until its count or end
// time, a stop, or the runner's close. A tick that finds the previous
// iteration still queued or running is skipped rather than piling up.
func (r *Runner) runLoop(ctx context.Context, l wire.Loop) {
	every := time.Duration(l.EveryMS) * time.Millisecond
	t := time.NewTicker(every)
	defer t.Stop()
	runs := 0
	fire := func() bool {
		if !l.Until.IsZero() && time.Now().After(l.Until) {
			return false
		}
		// A tick is a command like a send: it waits for no fork, and
		// one under way skips it.
		if !r.cmds.TryRLock() {
			return true
		}
		defer r.cmds.RUnlock()
		r.mu.Lock()
		busy := r.running != nil || len(r.queue) > 0
		r.mu.Unlock()
		if !busy {
			r.enqueue(l.Prompt, "loop", false)
			runs++
		}
		return l.Count == 0 || runs < l.Count
	}
	if !fire() {
		return
	}
	for {
		select {
		case <-t.C:
			if !fire() {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
