package runner

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// askBroker holds the asks: tool calls waiting for a person to allow or
// deny them. Every ask gets exactly one answer, and the broker records it
// (askAnswered) before the waiting call sees it, whoever gives it: a
// person (answer), a stop or shutdown (denyAll), the engine withdrawing
// the call (cancelled), or expiry (expire). The askOpened event is the
// runner's to record, after it has said the session waits.
type askBroker struct {
	emit func(event.Type, any)
	now  func() time.Time

	mu   sync.Mutex
	open map[string]*ask
	// answered holds the asks answered and closed, for as long as the
	// runner lives: a second answer to one is a conflict, not an unknown
	// ask.
	answered map[string]bool
}

// ask is a tool call waiting for a person's allow or deny.
type ask struct {
	id     string
	seq    int64 // orders asks oldest first
	opened time.Time
	answer chan askAnswer // buffered: the first answer wins
	done   bool           // guarded by askBroker.mu
}

type askAnswer struct{ decision, note string }

func newAskBroker(emit func(event.Type, any)) *askBroker {
	return &askBroker{emit: emit, now: time.Now, open: map[string]*ask{}, answered: map[string]bool{}}
}

// add registers a new ask; seq orders it among the others.
func (b *askBroker) add(id string, seq int64) *ask {
	a := &ask{id: id, seq: seq, opened: b.now(), answer: make(chan askAnswer, 1)}
	b.mu.Lock()
	b.open[id] = a
	b.mu.Unlock()
	return a
}

// wait returns a's answer. When ctx ends first (the engine withdrew the
// call) the ask is denied as cancelled, unless an answer came first.
func (b *askBroker) wait(ctx context.Context, a *ask) askAnswer {
	select {
	case ans := <-a.answer:
		return ans
	case <-ctx.Done():
		// Loses to an answer that arrived first; either way one is queued.
		_ = b.resolve(a, command.DecisionDeny, "", "cancelled")
		return <-a.answer
	}
}

// forget drops a once its call has its answer and returns how many asks
// are still open.
func (b *askBroker) forget(a *ask) (stillOpen int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.open, a.id)
	b.answered[a.id] = true
	return len(b.open)
}

// resolve answers a once; a second answer is a conflict.
func (b *askBroker) resolve(a *ask, decision, note, by string) error {
	b.mu.Lock()
	if a.done {
		b.mu.Unlock()
		return wire.Errorf(wire.CodeConflict, "ask %s was already answered", a.id)
	}
	a.done = true
	b.mu.Unlock()
	b.emit(event.AskAnswered, event.AskAnsweredData{AskID: a.id, Decision: decision, Note: note, By: by})
	a.answer <- askAnswer{decision, note}
	return nil
}

// answer is a person's answer to ask id.
func (b *askBroker) answer(id, decision, note string) error {
	if decision != command.DecisionAllow && decision != command.DecisionDeny {
		return wire.Errorf(wire.CodeBadRequest, "answer needs decision allow or deny, not %q", decision)
	}
	b.mu.Lock()
	a, ok := b.open[id]
	answered := b.answered[id]
	b.mu.Unlock()
	if answered {
		return wire.Errorf(wire.CodeConflict, "ask %s was already answered", id)
	}
	if !ok {
		return wire.Errorf(wire.CodeNotFound, "no open ask %q", id)
	}
	return b.resolve(a, decision, note, "user")
}

// denyAll denies every unanswered ask, oldest first, as by (stopped,
// shutdown), and returns how many it denied.
func (b *askBroker) denyAll(by string) int {
	n := 0
	for _, a := range b.unanswered() {
		if b.resolve(a, command.DecisionDeny, "", by) == nil {
			n++
		}
	}
	return n
}

// expire denies, as expired, every unanswered ask opened before cutoff and
// returns how many it denied: the hook for asks that must not wait for a
// person forever.
func (b *askBroker) expire(cutoff time.Time) int {
	n := 0
	for _, a := range b.unanswered() {
		if a.opened.Before(cutoff) && b.resolve(a, command.DecisionDeny, "", "expired") == nil {
			n++
		}
	}
	return n
}

// openIDs lists the unanswered asks' ids, oldest first.
func (b *askBroker) openIDs() []string {
	asks := b.unanswered()
	ids := make([]string, len(asks))
	for i, a := range asks {
		ids[i] = a.id
	}
	return ids
}

// unanswered lists the unanswered asks, oldest first.
func (b *askBroker) unanswered() []*ask {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*ask, 0, len(b.open))
	for _, a := range b.open {
		if !a.done {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}
