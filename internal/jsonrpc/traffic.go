package jsonrpc

import "sync"

// Traffic records the messages a connection's trace hook sees: the
// engines' golden transcripts, in their tests and in a replay (`supervisor
// doctor engines`). Its Record is safe for concurrent use.
type Traffic struct {
	mu   sync.Mutex
	msgs []Traced
}

// Traced is one recorded message.
type Traced struct {
	Dir  Direction
	Body []byte
}

// Record keeps a copy of body; it fits the engines' trace hooks.
func (t *Traffic) Record(dir Direction, body []byte) {
	t.mu.Lock()
	t.msgs = append(t.msgs, Traced{dir, append([]byte(nil), body...)})
	t.mu.Unlock()
}

// Messages returns what was recorded, in order.
func (t *Traffic) Messages() []Traced {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Traced(nil), t.msgs...)
}
