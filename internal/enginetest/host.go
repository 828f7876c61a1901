// Package enginetest is the one rig every engine's tests use. Host is an
// engine.Host without a runner: it records every event, answers permission
// requests through a function the test supplies, and hands out steers the
// test queues. Rig puts an engine together with a Host and the fake model
// server on loopback, finds the pinned agent CLI (skipping, or failing in
// CI, when it is missing), starts the engine and runs its turns.
package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// Event is one recorded event.
type Event struct {
	Type event.Type
	Data json.RawMessage
}

// Host records events and answers Permit with Decide.
type Host struct {
	// Decide answers a tool call; nil allows everything.
	Decide func(ctx context.Context, call engine.ToolCall) engine.Verdict

	mu      sync.Mutex
	events  []Event
	calls   []engine.ToolCall
	steers  []string
	changed chan struct{}
}

// NewHost returns a Host answering with decide (nil allows everything).
func NewHost(decide func(ctx context.Context, call engine.ToolCall) engine.Verdict) *Host {
	return &Host{Decide: decide, changed: make(chan struct{})}
}

// Emit records an event.
func (h *Host) Emit(typ event.Type, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		raw, _ = json.Marshal(map[string]string{"marshalError": err.Error()})
	}
	h.mu.Lock()
	h.events = append(h.events, Event{Type: typ, Data: raw})
	h.notifyLocked()
	h.mu.Unlock()
}

// Permit records the call and answers it with Decide.
func (h *Host) Permit(ctx context.Context, call engine.ToolCall) engine.Verdict {
	h.mu.Lock()
	h.calls = append(h.calls, call)
	h.notifyLocked()
	decide := h.Decide
	h.mu.Unlock()
	if decide == nil {
		return engine.Verdict{Allow: true}
	}
	return decide(ctx, call)
}

// TakeSteers hands out every queued steer.
func (h *Host) TakeSteers(toolID string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.steers
	h.steers = nil
	for _, text := range s {
		raw, _ := json.Marshal(event.SteerData{Text: text, ToolID: toolID})
		h.events = append(h.events, Event{Type: event.SteerDelivered, Data: raw})
	}
	if len(s) > 0 {
		h.notifyLocked()
	}
	return s
}

// QueueSteer queues text for the next tool boundary.
func (h *Host) QueueSteer(text string) {
	h.mu.Lock()
	h.steers = append(h.steers, text)
	h.mu.Unlock()
}

// Events returns the recorded events.
func (h *Host) Events() []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Event(nil), h.events...)
}

// Calls returns the recorded permission requests.
func (h *Host) Calls() []engine.ToolCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]engine.ToolCall(nil), h.calls...)
}

// OfType returns the data of every recorded event of type typ.
func (h *Host) OfType(typ event.Type) []json.RawMessage {
	var out []json.RawMessage
	for _, e := range h.Events() {
		if e.Type == typ {
			out = append(out, e.Data)
		}
	}
	return out
}

// WaitFor blocks until cond holds over the recorded events, or the timeout
// passes (an error naming what was awaited).
func (h *Host) WaitFor(timeout time.Duration, what string, cond func(events []Event) bool) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		ok := cond(h.events)
		ch := h.changed
		h.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-deadline.C:
			return fmt.Errorf("waited %s for %s; saw %d events", timeout, what, len(h.Events()))
		}
	}
}

func (h *Host) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

var _ engine.Host = (*Host)(nil)
