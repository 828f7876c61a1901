package runner

import (
	"encoding/json"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/command"
)

// presenceDelay coalesces bursts of state changes into one write.
const presenceDelay = 20 * time.Millisecond

// presenceWriter keeps presence.json, replaced atomically, so a status bar
// or another process can read a session's state without talking to it, and
// tells changed of every change, at once.
type presenceWriter struct {
	path    func() string
	status  func() command.Status
	log     *zap.Logger
	changed func() // nil: nobody else listens

	mu      sync.Mutex
	pending bool
	closed  bool
	timer   *time.Timer
	writing sync.WaitGroup

	// wmu makes writes one at a time, each reading the status it writes
	// once the one before has been renamed into place: two timers' writes
	// running at once could otherwise rename an older status over a newer.
	wmu sync.Mutex
}

func newPresenceWriter(path func() string, status func() command.Status, log *zap.Logger) *presenceWriter {
	return &presenceWriter{path: path, status: status, log: log}
}

// touch says the session's state may have changed: it schedules a write
// and tells changed. It must not be called with the runner's lock held.
func (p *presenceWriter) touch() {
	if p.changed != nil {
		p.changed()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.pending {
		return
	}
	p.pending = true
	p.writing.Add(1)
	p.timer = time.AfterFunc(presenceDelay, func() {
		defer p.writing.Done()
		p.mu.Lock()
		p.pending = false
		closed := p.closed
		p.mu.Unlock()
		if !closed {
			p.write()
		}
	})
}

func (p *presenceWriter) write() {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	raw, err := json.MarshalIndent(p.status(), "", "  ")
	if err == nil {
		err = writeAtomic(p.path(), append(raw, '\n'), 0o600)
	}
	if err != nil {
		p.log.Warn("write presence", zap.Error(err))
	}
}

// close writes the final state and stops further writes.
func (p *presenceWriter) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	if p.timer != nil && p.timer.Stop() {
		p.writing.Done()
	}
	p.mu.Unlock()
	p.writing.Wait()
	p.write()
}
