package store

import (
	"context"
	"time"
)

// Clock is the store's time: wall time for the records it writes, and a
// monotonic reading for waits, so that a wall-clock jump (NTP, a person
// setting the date) neither ends a lock wait early nor stretches it.
type Clock interface {
	// Now is the wall time stamped on records.
	Now() time.Time
	// Mono is a monotonic reading: only differences between two readings
	// mean anything.
	Mono() time.Duration
	// Sleep pauses for d or until ctx ends.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real clock.
func SystemClock() Clock { return systemClock{base: time.Now()} }

type systemClock struct{ base time.Time }

func (systemClock) Now() time.Time { return time.Now().UTC() }

// Mono uses the monotonic reading time.Now carries: time.Since of a time
// taken with it ignores the wall clock.
func (c systemClock) Mono() time.Duration { return time.Since(c.base) }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
