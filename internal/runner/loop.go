package runner

import (
	"context"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
)

// validateLoop checks a timed loop: see wire.Spec.CheckLoop.
func validateLoop(spec wire.Spec) error { return spec.CheckLoop() }

// timedLoop queues a loop's prompt on its schedule until its count or end
// time, or until it is stopped (a stop command, or the runner closing).
// It runs on a clock rather than at turn ends, so it is not a turn-end
// policy: each tick asks the runner to queue the prompt, which the runner
// declines while the previous run is still queued or running.
type timedLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startTimedLoop starts l. tryQueue queues the prompt unless the session
// is busy, and reports whether it did.
func startTimedLoop(l wire.Loop, tryQueue func() bool) *timedLoop {
	ctx, cancel := context.WithCancel(context.Background())
	tl := &timedLoop{cancel: cancel, done: make(chan struct{})}
	ticker := time.NewTicker(time.Duration(l.EveryMS) * time.Millisecond)
	go func() {
		defer close(tl.done)
		defer ticker.Stop()
		runLoop(ctx, l, ticker.C, time.Now, tryQueue)
	}()
	return tl
}

// stop ends the loop and waits for it.
func (tl *timedLoop) stop() {
	tl.cancel()
	<-tl.done
}

// runLoop is the schedule: a run at once, then one per tick, counting
// only the runs tryQueue took, until l's count or end time or ctx's end.
func runLoop(ctx context.Context, l wire.Loop, ticks <-chan time.Time, now func() time.Time, tryQueue func() bool) {
	runs := 0
	fire := func() bool {
		if !l.Until.IsZero() && now().After(l.Until) {
			return false
		}
		if tryQueue() {
			runs++
		}
		return l.Count == 0 || runs < l.Count
	}
	if !fire() {
		return
	}
	for {
		select {
		case <-ticks:
			if !fire() {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
