package supervisor

import (
	"sync"

	"github.com/corral-dev/corral/internal/eventstream"
)

// Event is one session event on its way to a shell (the shape every
// reader of session events shares, the fleet's too).
type Event = eventstream.Event

// hub fans one session's mirrored events out to its subscribers. Publishing
// never blocks: a subscriber whose buffer is full is cut off the live feed,
// and its Stream catches up from events.jsonl instead, so a slow shell can
// never hold up the runner's stdout.
type hub struct {
	id  string
	bus *bus // the multiplexed stream, fed every event published here

	mu     sync.Mutex
	subs   []*subscription
	last   int64 // highest seq published
	closed error
}

type subscription struct {
	ch  chan Event
	cut chan struct{} // closed when dropped from the hub
}

func (h *hub) publish(ev Event) {
	one := [1]Event{ev}
	h.publishBatch(one[:])
}

// publishBatch publishes events read together from the runner's output,
// under one lock of the hub and one of the feed's ring: a busy runner's
// lines arrive many to a read, and a lock each was a fifth of the feed's
// CPU with a thousand sessions.
func (h *hub) publishBatch(evs []Event) {
	h.mu.Lock()
	for _, ev := range evs {
		if ev.Seq > h.last {
			h.last = ev.Seq
		}
		for i := 0; i < len(h.subs); {
			s := h.subs[i]
			select {
			case s.ch <- ev:
				i++
			default:
				close(s.cut)
				h.removeAt(i)
			}
		}
	}
	h.mu.Unlock()
	if h.bus != nil {
		h.bus.publishEvents(h.id, evs)
	}
}

// subscribe registers a subscriber with a buffer of size events. It returns
// the highest seq published so far, so the reader knows what the log must
// hold before it follows live.
func (h *hub) subscribe(size int) (*subscription, int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed != nil {
		return nil, 0, h.closed
	}
	s := &subscription{ch: make(chan Event, size), cut: make(chan struct{})}
	h.subs = append(h.subs, s)
	return s, h.last, nil
}

func (h *hub) unsubscribe(s *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, x := range h.subs {
		if x == s {
			close(s.cut)
			h.removeAt(i)
			return
		}
	}
}

func (h *hub) removeAt(i int) {
	last := len(h.subs) - 1
	h.subs[i] = h.subs[last]
	h.subs[last] = nil
	h.subs = h.subs[:last]
}

// close cuts every subscriber and makes later subscriptions fail with err.
func (h *hub) close(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed != nil {
		return
	}
	h.closed = err
	for _, s := range h.subs {
		close(s.cut)
	}
	h.subs = nil
}

func (h *hub) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}
