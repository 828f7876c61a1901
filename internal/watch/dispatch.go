package watch

import (
	"context"
	"sync"
)

// result is what became of a sent command.
type result struct {
	req Request
	err error
}

// dispatcher sends commands one at a time, in the order they were given,
// so that a steer typed before a message reaches the session first; the
// watcher never waits for the supervisor's answer.
type dispatcher struct {
	ctx     context.Context
	snd     Sender
	results chan result // each command's result, for the watcher to read

	mu     sync.Mutex
	queue  []Request
	wake   chan struct{} // a request was queued
	closed chan struct{} // close was called
	done   chan struct{} // the worker has ended
}

// newDispatcher starts a dispatcher whose commands run with ctx.
func newDispatcher(ctx context.Context, snd Sender) *dispatcher {
	d := &dispatcher{
		ctx:     ctx,
		snd:     snd,
		results: make(chan result),
		wake:    make(chan struct{}, 1),
		closed:  make(chan struct{}),
		done:    make(chan struct{}),
	}
	go d.work()
	return d
}

// send queues requests.
func (d *dispatcher) send(reqs ...Request) {
	if len(reqs) == 0 {
		return
	}
	d.mu.Lock()
	d.queue = append(d.queue, reqs...)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// close sends what is still queued — a decision made just before
// quitting is not dropped — and waits for the worker; results nobody
// reads any more are dropped.
func (d *dispatcher) close() {
	close(d.closed)
	<-d.done
}

func (d *dispatcher) work() {
	defer close(d.done)
	for {
		d.mu.Lock()
		var req Request
		ok := len(d.queue) > 0
		if ok {
			req = d.queue[0]
			d.queue = d.queue[1:]
		}
		d.mu.Unlock()
		if !ok {
			select {
			case <-d.wake:
				continue
			case <-d.closed:
				return
			}
		}
		_, err := d.snd.Command(d.ctx, req.Session, req.Cmd)
		select {
		case d.results <- result{req, err}:
		case <-d.closed:
		}
	}
}
