// Package eventlogtest records the events a runner mirrors, for tests that
// wait for them.
package eventlogtest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/event"
)

// Recorder collects mirrored events. Pass its Record method as a runner's
// Mirror option.
type Recorder struct {
	// Limit bounds every wait; it guards against hangs and is not a
	// timing goal.
	Limit time.Duration

	mu     sync.Mutex
	events []event.Event
	bad    []error
	change chan struct{}
}

// New returns a recorder whose waits give up after limit.
func New(limit time.Duration) *Recorder {
	return &Recorder{Limit: limit, change: make(chan struct{})}
}

// Record takes a batch of event lines.
func (r *Recorder) Record(b eventlog.Batch) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, line := range b.Lines {
		var ev event.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			r.bad = append(r.bad, fmt.Errorf("mirrored line is not an event: %w", err))
			continue
		}
		r.events = append(r.events, ev)
	}
	close(r.change)
	r.change = make(chan struct{})
}

// WaitFor returns the first event at or after index from that satisfies
// match, and its index, waiting for it. A mirrored line that was not an
// event fails the test.
func (r *Recorder) WaitFor(t testing.TB, from int, what string, match func(event.Event) bool) (event.Event, int) {
	t.Helper()
	deadline := time.After(r.Limit)
	for {
		r.mu.Lock()
		if len(r.bad) > 0 {
			err := r.bad[0]
			r.mu.Unlock()
			t.Fatal(err)
		}
		for i := from; i < len(r.events); i++ {
			if match(r.events[i]) {
				ev := r.events[i]
				r.mu.Unlock()
				return ev, i
			}
		}
		ch := r.change
		r.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no %s event after %s; saw:\n%s", what, r.Limit, r.Dump())
		}
	}
}

// WaitType waits for the first event of typ at or after index from.
func (r *Recorder) WaitType(t testing.TB, from int, typ event.Type) (event.Event, int) {
	t.Helper()
	return r.WaitFor(t, from, string(typ), func(ev event.Event) bool { return ev.Type == typ })
}

// All returns every recorded event of typ.
func (r *Recorder) All(typ event.Type) []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.Event
	for _, ev := range r.events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// Dump lists the recorded events, one a line, for failure messages.
func (r *Recorder) Dump() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, ev := range r.events {
		fmt.Fprintf(&b, "  %d %s %s\n", ev.Seq, ev.Type, ev.Data)
	}
	return b.String()
}

// Decode decodes an event's data, failing the test when it does not fit.
func Decode[T any](t testing.TB, ev event.Event) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		t.Fatalf("decode %s: %v", ev.Type, err)
	}
	return v
}

// Events returns a copy of every recorded event, in order.
func (r *Recorder) Events() []event.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event.Event(nil), r.events...)
}
