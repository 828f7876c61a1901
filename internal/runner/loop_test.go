package runner

import (
	"context"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
)

func TestTimedLoopSchedule(t *testing.T) {
	start := time.Unix(1000, 0)
	cases := []struct {
		name  string
		loop  wire.Loop
		busy  []bool // tryQueue declines while busy; one entry per fire
		ticks int    // ticks offered after the first run; then the loop is stopped
		runs  int    // runs queued
		fires int    // times the loop asked to queue
	}{
		{"count", wire.Loop{Count: 3}, nil, 10, 3, 3},
		{"a busy tick does not count", wire.Loop{Count: 2}, []bool{false, true, true, false}, 10, 2, 4},
		{"until", wire.Loop{Until: start.Add(2500 * time.Millisecond)}, nil, 10, 3, 3},
		{"no end but the ticks", wire.Loop{}, nil, 4, 5, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := start
			fires, runs := 0, 0
			tryQueue := func() bool {
				busy := fires < len(c.busy) && c.busy[fires]
				fires++
				if !busy {
					runs++
				}
				return !busy
			}
			ticks := make(chan time.Time)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				runLoop(ctx, c.loop, ticks, func() time.Time {
					now := clock
					clock = clock.Add(time.Second)
					return now
				}, tryQueue)
			}()
			// Each tick is taken before the next is offered; a loop that
			// ends early takes no more.
		offer:
			for range c.ticks {
				select {
				case ticks <- time.Time{}:
				case <-done:
					break offer
				}
			}
			cancel()
			<-done
			if runs != c.runs || fires != c.fires {
				t.Fatalf("%d runs in %d fires, want %d in %d", runs, fires, c.runs, c.fires)
			}
		})
	}
}
