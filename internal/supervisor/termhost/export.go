package termhost

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/term"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// An exported terminal (Manager.ExportTerm) is one whose master the runner
// handed over: the mux reads its output, types into it and resizes it
// itself, and the runner only runs the program and reports its end. A
// terminal's output then passes through one process on its way to a
// client instead of two, and to a lone client with nothing queued it goes
// straight from the read to the connection: together that took a client
// from about two thirds of the rate of a raw read of the terminal to about
// nine tenths (docs/performance.md).

// drainGrace is how long the mux waits, after the runner reported the
// program's exit, for the rest of the output: a process that left the
// program's session with the terminal open would otherwise hold the
// stream open for ever. The runner allows the session as long to end.
const drainGrace = term.DefaultKillGrace

// exported is the state of a mux whose terminal was handed over.
type exported struct {
	master    *os.File
	readDone  chan struct{} // closed when the reader has stopped
	closed    chan struct{} // closed with the master
	room      chan struct{} // capacity 1: a client took output or left
	inputMu   sync.Mutex    // one write of input at a time
	closeOnce sync.Once
}

// openExported asks the runner to hand the terminal over, and takes it
// over when it does: the runner's replay is the scrollback so far. It
// returns the runner's answer, whether the runner handed the terminal over
// or attached the mux as a client (its output then comes through sink).
func (x *termMux) openExported(ctx context.Context, t wire.TermOpen) (*wire.TermOpened, error) {
	// The program's exit may come before the answer is read: it waits
	// for the reader (or, without one, for the answer).
	x.mu.Lock()
	x.opening = true
	x.mu.Unlock()
	got, master, err := x.set.m.ExportTerm(ctx, x.key.session, t, x.sink)
	x.mu.Lock()
	x.opening = false
	ended := false
	if master != nil {
		x.exp = &exported{master: master, readDone: make(chan struct{}), closed: make(chan struct{}), room: make(chan struct{}, 1)}
		x.received += int64(len(got.Data))
		x.scroll.Write(got.Data)
		go x.readMaster()
	} else if end := x.drained; end != nil && x.end == nil {
		x.endLocked(end)
		ended = true
	}
	x.mu.Unlock()
	if ended {
		// A later attach starts afresh, as after any exit.
		x.forget()
	}
	return got, err
}

// readMaster reads the output until the program's session is gone (EIO) or
// the master is closed, and then lets through the exit the runner reported.
func (x *termMux) readMaster() {
	e := x.exp
	defer close(e.readDone)
	r := term.OutputReader{Master: e.master, Buf: make([]byte, api.MaxTermFrame), Deliver: x.deliver, Ready: x.waitForRoom}
	r.Run()
	e.close()
	x.mu.Lock()
	end := x.drained
	x.readerEnded = true
	if end != nil && x.end == nil {
		x.endLocked(end)
	}
	x.mu.Unlock()
	if end != nil {
		x.forget()
	}
}

// deliver hands a batch of output, the reader's buffer, to the clients:
// straight to the connection of a lone client with nothing queued, else
// into each client's outbox.
func (x *termMux) deliver(p []byte) {
	x.mu.Lock()
	if x.end != nil {
		x.mu.Unlock()
		return
	}
	x.received += int64(len(p))
	x.scroll.Write(p)
	if len(x.clients) == 1 {
		for c := range x.clients {
			if c.out.claimInline() {
				// Outside the lock: attaches and detaches must not
				// wait for the client.
				x.mu.Unlock()
				c.out.writeInline(p)
				return
			}
		}
	}
	var d *termData
	for c := range x.clients {
		if d == nil {
			// The clients' queues share one copy: the reader reuses p.
			d = newTermData(x.set.m.TermBuffer(len(p)), x.set.m.RecycleTermData)
			copy(d.p, p)
		}
		if !c.out.push(d) {
			x.dropLocked(c) // cut as too slow
		}
	}
	if d != nil {
		d.release()
	}
	x.mu.Unlock()
}

// waitForRoom holds the reader while even the fastest client has
// termWindowBytes of output queued, as the runner holds a terminal back for
// its link (termWindowBytes): the program goes at the pace of the fastest
// client, and a slower one may fall the rest of its buffer behind before it
// is cut. It reports false once the stream has ended.
func (x *termMux) waitForRoom() bool {
	for {
		x.mu.Lock()
		ended := x.end != nil
		behind := len(x.clients) > 0
		for c := range x.clients {
			if c.out.queuedBytes() < termWindowBytes {
				behind = false
				break
			}
		}
		x.mu.Unlock()
		if ended {
			return false
		}
		if !behind {
			return true
		}
		select {
		case <-x.exp.room:
		case <-x.exp.closed:
			return false
		}
	}
}

// pokeRoom wakes a reader waiting for room.
func (e *exported) pokeRoom() {
	select {
	case e.room <- struct{}{}:
	default:
	}
}

// close closes the master, which ends the reader.
func (e *exported) close() {
	e.closeOnce.Do(func() {
		close(e.closed)
		e.master.Close()
	})
}

// input types p into the exported terminal.
func (e *exported) input(p []byte) error {
	e.inputMu.Lock()
	defer e.inputMu.Unlock()
	if err := term.Type(e.master, p, term.DefaultInputTimeout); err != nil {
		return fmt.Errorf("type into the terminal: %w", err)
	}
	return nil
}

// unexport stops reading and gives the output back to the runner, with the
// scrollback, for a client that attaches later; unless the program has
// ended or the runner is gone, and nothing is left to give back.
func (x *termMux) unexport() {
	x.exp.close()
	<-x.exp.readDone
	x.mu.Lock()
	gone := x.drained != nil || x.end != nil
	replay := x.scroll.Replay()
	x.mu.Unlock()
	if !gone {
		// An error means the runner is gone, and the terminal with it.
		x.set.m.UnexportTerm(x.key.session, x.key.term, x.clientID, replay)
	}
}

// holdExitLocked keeps the runner's report of the program's exit until the
// reader has read the rest of the output, or drainGrace has passed, and
// reports whether it did.
func (x *termMux) holdExitLocked(end *termEnd) bool {
	if !x.opening && (x.exp == nil || x.readerEnded) {
		return false
	}
	x.drained = end
	time.AfterFunc(drainGrace, func() {
		x.mu.Lock()
		e := x.exp
		x.mu.Unlock()
		if e != nil {
			e.close()
		}
	})
	return true
}
