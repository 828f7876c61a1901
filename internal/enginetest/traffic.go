package enginetest

import (
	"sync"

	"github.com/corral-dev/corral/internal/jsonrpc"
)

// Traffic records the protocol messages an engine's trace hook sees, for
// golden transcripts. Its Record is safe for concurrent use.
type Traffic struct {
	mu   sync.Mutex
	msgs []Message
}

// Message is one recorded protocol message.
type Message struct {
	Dir  jsonrpc.Direction
	Body []byte
}

// Record keeps a copy of body; it fits the engines' trace hooks.
func (t *Traffic) Record(dir jsonrpc.Direction, body []byte) {
	t.mu.Lock()
	t.msgs = append(t.msgs, Message{dir, append([]byte(nil), body...)})
	t.mu.Unlock()
}

// Messages returns what was recorded, in order.
func (t *Traffic) Messages() []Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Message(nil), t.msgs...)
}
