package termhost

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// termOutbox holds what one WebSocket client has yet to receive. The
// runner's reader goroutine fills it (through termMux.sink) and must never
// wait, since it serves every terminal and event of that runner; the
// connection's writer drains it. Past limit bytes of queued output the
// client is cut: its queue is dropped and its stream ends with an error,
// while the terminal and the other clients carry on.
type termOutbox struct {
	limit int
	wake  chan struct{} // one pending wake-up is enough

	mu      sync.Mutex
	chunks  []outPiece // output, oldest first
	queued  int        // bytes in chunks
	taken   int64      // bytes handed to the writer in all
	notices []api.TermFrame
	end     *termEnd

	// An exported terminal's reader writes a lone client's output
	// straight to its connection while nothing is queued or being
	// written (claimInline): a hand-off to the writer per batch cost more
	// than all else between the terminal and the client.
	ctx     context.Context // the writer's, once the opened frame is out
	conn    *websocket.Conn
	writing bool // the writer is writing output it took
	inline  bool // the reader is writing output
}

// termData is one piece of a terminal's output, shared read-only by the
// outboxes that queued it. Each holder releases it once, when it has
// written it or dropped it; the last release hands the buffer back to be
// reused for later output (Manager.RecycleTermData). A holder that never
// gets that far (its connection failed mid-write) does not release, and
// the garbage collector takes the buffer instead: a missed release costs
// an allocation, an early one would show a client another moment's output.
type termData struct {
	p       []byte
	refs    atomic.Int32
	recycle func([]byte) // nil: the buffer is not reused
}

// newTermData wraps p with one reference, its creator's.
func newTermData(p []byte, recycle func([]byte)) *termData {
	d := &termData{p: p, recycle: recycle}
	d.refs.Store(1)
	return d
}

func (d *termData) hold() { d.refs.Add(1) }

func (d *termData) release() {
	if d.refs.Add(-1) == 0 && d.recycle != nil {
		d.recycle(d.p)
	}
}

// outPiece is output an outbox holds or its writer has taken: p is all or
// the rest of d.p. A piece taken from the middle of a chunk has no d: the
// piece that finishes the chunk carries it, so it is released once.
type outPiece struct {
	p []byte
	d *termData
}

// termEnd is how a stream ends: its last frame and the close status.
type termEnd struct {
	frame  api.TermFrame
	status websocket.StatusCode
	exit   bool // the program exited: the runner has already forgotten the client
}

func newTermOutbox(limit int) *termOutbox {
	return &termOutbox{limit: limit, wake: make(chan struct{}, 1)}
}

func (o *termOutbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// fatalEnd is the end of a stream cut by err.
func fatalEnd(err error) *termEnd {
	e := wire.ToError(err)
	status := websocket.StatusInternalError
	switch e.Code {
	case wire.CodeTimeout:
		status = websocket.StatusTryAgainLater
	case wire.CodeUnavailable:
		status = websocket.StatusGoingAway
	}
	return &termEnd{frame: api.TermFrame{Type: api.FrameError, Code: e.Code, Message: e.Message, Fatal: true}, status: status}
}

// push queues output, taking a reference to d when it does. It reports
// false once the stream has ended, which it does here, cut, when the output
// would pass the limit.
func (o *termOutbox) push(d *termData) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.end != nil {
		return false
	}
	if len(d.p) == 0 {
		return true
	}
	if o.queued+len(d.p) > o.limit {
		o.dropLocked()
		o.end = fatalEnd(wire.Errorf(wire.CodeTimeout,
			"this client fell more than %d bytes behind the terminal's output and was cut; attach again to resync", o.limit))
		o.signal()
		return false
	}
	d.hold()
	o.chunks = append(o.chunks, outPiece{p: d.p, d: d})
	o.queued += len(d.p)
	o.signal()
	return true
}

// dropLocked forgets the queued output.
func (o *termOutbox) dropLocked() {
	for _, c := range o.chunks {
		c.d.release()
	}
	o.chunks, o.queued = nil, 0
}

// notice queues a non-fatal error frame.
func (o *termOutbox) notice(err error) {
	e := wire.ToError(err)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.end != nil {
		return
	}
	o.notices = append(o.notices, api.TermFrame{Type: api.FrameError, Code: e.Code, Message: e.Message})
	o.signal()
}

// finish sets how the stream ends, once; output already queued is still
// sent first unless drop.
func (o *termOutbox) finish(end *termEnd, drop bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.end != nil {
		return
	}
	if drop {
		o.dropLocked()
	}
	o.end = end
	o.signal()
}

// take removes pending notices and up to limit bytes of output, appending
// the output's pieces to pieces; the writer releases each piece's d once it
// has written it. take returns the end only once no output is left.
func (o *termOutbox) take(pieces []outPiece, limit int) ([]api.TermFrame, []outPiece, *termEnd) {
	o.mu.Lock()
	defer o.mu.Unlock()
	notices := o.notices
	o.notices = nil
	n, i := 0, 0
	for ; i < len(o.chunks) && n < limit; i++ {
		c := o.chunks[i]
		if n+len(c.p) > limit {
			k := limit - n
			pieces = append(pieces, outPiece{p: c.p[:k]})
			o.chunks[i].p = c.p[k:]
			n += k
			break
		}
		pieces = append(pieces, c)
		n += len(c.p)
		o.chunks[i] = outPiece{}
	}
	o.chunks = o.chunks[i:]
	if len(o.chunks) == 0 {
		o.chunks = nil // let the backing array go
	}
	o.queued -= n
	o.taken += int64(n)
	o.writing = n > 0
	if len(o.chunks) > 0 {
		return notices, pieces, nil
	}
	return notices, pieces, o.end
}

// sent releases the pieces of output the writer took once it has written
// them.
func sent(pieces []outPiece) {
	for _, p := range pieces {
		if p.d != nil {
			p.d.release()
		}
	}
}

// takenBytes is how much output the writer has taken in all.
func (o *termOutbox) takenBytes() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.taken
}

// run writes first and then the outbox to conn until the stream ends, ctx
// ends, or a write fails, calling taken after each batch of output it takes.
// When shutdown ends first, the client is told the supervisor is going
// away.
func (o *termOutbox) run(ctx, shutdown context.Context, conn *websocket.Conn, first api.TermFrame, taken func()) error {
	if err := writeFrame(ctx, conn, first); err != nil {
		return err
	}
	o.mu.Lock()
	o.ctx, o.conn = ctx, conn
	o.mu.Unlock()
	down := shutdown.Done()
	buf := make([]byte, 0, api.MaxTermFrame)
	var pieces []outPiece
	for {
		var notices []api.TermFrame
		var end *termEnd
		notices, pieces, end = o.take(pieces[:0], api.MaxTermFrame)
		for _, f := range notices {
			if err := writeFrame(ctx, conn, f); err != nil {
				return err
			}
		}
		if len(pieces) > 0 {
			taken()
			frame := pieces[0].p
			if len(pieces) > 1 {
				// Joined, so a burst of small reads costs one frame.
				buf = buf[:0]
				for _, p := range pieces {
					buf = append(buf, p.p...)
				}
				frame = buf
			}
			if err := writeBinary(ctx, conn, frame); err != nil {
				return err
			}
			o.wrote()
			sent(pieces)
			clear(pieces) // the pieces are garbage once written
			continue
		}
		if end != nil {
			if err := writeFrame(ctx, conn, end.frame); err != nil {
				return err
			}
			return conn.Close(end.status, closeReason(end))
		}
		if len(notices) > 0 {
			continue
		}
		select {
		case <-o.wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-down:
			down = nil
			o.finish(fatalEnd(wire.Errorf(wire.CodeUnavailable, "the supervisor is shutting down")), true)
		}
	}
}

func closeReason(end *termEnd) string {
	if end.exit {
		return "program exited"
	}
	return string(end.frame.Code)
}

func writeFrame(ctx context.Context, conn *websocket.Conn, f api.TermFrame) error {
	raw, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("encode %s frame: %w", f.Type, err)
	}
	ctx, cancel := context.WithTimeout(ctx, termWriteTimeout)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, raw)
}

func writeBinary(ctx context.Context, conn *websocket.Conn, p []byte) error {
	ctx, cancel := context.WithTimeout(ctx, termWriteTimeout)
	defer cancel()
	return conn.Write(ctx, websocket.MessageBinary, p)
}

// queuedBytes is how much output waits in the outbox.
func (o *termOutbox) queuedBytes() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.queued
}

// wrote marks the end of the writer's write of the output it took.
func (o *termOutbox) wrote() {
	o.mu.Lock()
	o.writing = false
	o.mu.Unlock()
}

// claimInline reserves the connection for a write of live output on the
// caller's goroutine (writeInline), which keeps the stream in order only
// while nothing is queued or being written. It reports false then, or
// before the opened frame is out, or once the stream has ended.
func (o *termOutbox) claimInline() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conn == nil || o.end != nil || len(o.chunks) > 0 || o.writing || o.inline {
		return false
	}
	o.inline = true
	return true
}

// writeInline writes p, after claimInline. The caller waits for the client
// to take it, which paces the program by its one client; a client that
// takes nothing for termWriteTimeout loses its connection.
func (o *termOutbox) writeInline(p []byte) {
	err := writeBinary(o.ctx, o.conn, p)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.inline = false
	o.taken += int64(len(p))
	// Whoever queues notices or an end wakes the writer; waking it for
	// nothing after each write would cost what writing inline saves.
	if err != nil && o.end == nil {
		o.dropLocked()
		o.end = fatalEnd(wire.Errorf(wire.CodeUnavailable, "writing terminal output: %v", err))
		o.signal()
	}
}
