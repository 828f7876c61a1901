package runner

import (
	"sync"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// maxRequests is how many requestIds the runner remembers: a retry comes
// soon after its first attempt, not thousands of commands later.
const maxRequests = 1024

// requestLog makes a command with a requestId run once: the first attempt
// runs, an attempt while it runs waits for it, and a later one gets the
// reply it got. Only replies that succeeded are kept: a refusal (storage
// unavailable, a conflict, a bad field) changed nothing, so its retry runs
// again. The log's own record of a send (its userMessage event carries the
// requestId) refills it in a new runner, so a send retried after a runner
// crash finds its first reply too; other commands are remembered by the
// runner that ran them.
type requestLog struct {
	mu      sync.Mutex
	done    map[string]doneRequest
	order   []string // done's keys, oldest first
	running map[string]chan struct{}
}

type doneRequest struct {
	cmd   command.Name
	reply *wire.Reply
}

func newRequestLog() *requestLog {
	return &requestLog{done: map[string]doneRequest{}, running: map[string]chan struct{}{}}
}

// once runs the command cmd with requestId id through run, unless it ran
// already: then it returns the first reply. The same id on another
// command is a conflict.
func (l *requestLog) once(id string, cmd command.Name, run func() *wire.Reply) *wire.Reply {
	l.mu.Lock()
	for {
		if d, ok := l.done[id]; ok {
			l.mu.Unlock()
			if d.cmd != cmd {
				return wire.ErrReply(wire.Errorf(wire.CodeConflict, "requestId %q was used by a %s command, not %s", id, d.cmd, cmd))
			}
			return d.reply
		}
		wait, ok := l.running[id]
		if !ok {
			break
		}
		l.mu.Unlock()
		<-wait
		l.mu.Lock()
	}
	finished := make(chan struct{})
	l.running[id] = finished
	l.mu.Unlock()

	reply := run()

	l.mu.Lock()
	delete(l.running, id)
	close(finished)
	if reply.OK {
		l.rememberLocked(id, cmd, reply)
	}
	l.mu.Unlock()
	return reply
}

// remember records reply as the reply of cmd's requestId id.
func (l *requestLog) remember(id string, cmd command.Name, reply *wire.Reply) {
	l.mu.Lock()
	l.rememberLocked(id, cmd, reply)
	l.mu.Unlock()
}

func (l *requestLog) rememberLocked(id string, cmd command.Name, reply *wire.Reply) {
	if _, ok := l.done[id]; !ok {
		l.order = append(l.order, id)
	}
	l.done[id] = doneRequest{cmd, reply}
	if len(l.order) > maxRequests {
		delete(l.done, l.order[0])
		l.order = append(l.order[:0], l.order[1:]...)
	}
}
