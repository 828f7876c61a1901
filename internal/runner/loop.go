package runner

import (
	"context"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
)

// validateLoop checks that a timed loop can never wait for a human or spend
// without bound.
func validateLoop(spec wire.Spec) error {
	l := spec.Loop
	if l == nil {
		return nil
	}
	switch {
	case l.Prompt == "":
		return wire.Errorf(wire.CodeBadRequest, "a loop needs a prompt")
	case l.EveryMS < 1000:
		return wire.Errorf(wire.CodeBadRequest, "a loop runs at most once a second (everyMs >= 1000)")
	case !spec.Unattended:
		return wire.Errorf(wire.CodeBadRequest, "a loop must be unattended: nobody waits on its asks")
	case spec.SpendCapUSD <= 0:
		return wire.Errorf(wire.CodeBadRequest, "a loop needs a spend cap (spendCapUsd > 0)")
	}
	return nil
}

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
