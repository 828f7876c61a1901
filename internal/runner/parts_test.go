package runner

import (
	"errors"
	"sync"

	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// emitted records what a part emits, for the parts' tests.
type emitted struct {
	mu     sync.Mutex
	events []emittedEvent
}

type emittedEvent struct {
	typ  event.Type
	data any
}

func (e *emitted) emit(typ event.Type, data any) {
	e.mu.Lock()
	e.events = append(e.events, emittedEvent{typ, data})
	e.mu.Unlock()
}

// of returns the data of the events of type typ, in order.
func of[T any](e *emitted, typ event.Type) []T {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []T
	for _, ev := range e.events {
		if ev.typ == typ {
			out = append(out, ev.data.(T))
		}
	}
	return out
}

// codeOf is err's wire code, or "" when it has none.
func codeOf(err error) wire.Code {
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return ""
}
