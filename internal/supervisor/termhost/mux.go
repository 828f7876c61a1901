package termhost

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/internal/scrollback"
	"github.com/corral-dev/corral/internal/term"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// A terminal's output crosses the runner link once, however many WebSocket
// clients watch it: the supervisor attaches to each session terminal as a
// single runner client holding the owner's seat, and fans the output out
// itself under the same rules the runner's terminal hub applies to its
// clients (docs/terminal.md): one owner, read-only viewers, scrollback on
// joining, a slow client cut alone. With one runner client per WebSocket,
// every byte crossed the link once per client; with ten clients of a fast
// program the link, not the clients, fell behind, and the runner cut them
// all.

// scrollbackBytes is how much recent output a terminal keeps here for the
// clients that join it: the runner's default.
const scrollbackBytes = 1 << 20

// Flow control between the runner and the fan-out: the runner sends at most
// termWindowBytes of output that the fastest client has not taken yet, and
// holds the program back beyond that, instead of cutting everyone because
// the link fell behind. Progress is acknowledged every ackStepBytes. The
// window counts against every client's buffer (termBufferBytes): when the
// fastest client is what holds the program back, the window is full, and
// what is left of the buffer is how far behind it another may fall before
// it is cut. With a 4 MiB window and a 4 MiB buffer that was nothing, and
// ten clients of a fast program were cut for the slightest lag.
const (
	termWindowBytes = 1 << 20
	ackStepBytes    = 256 << 10
)

type muxKey struct{ session, term string }

// termMuxes are the session terminals with WebSocket clients. Lock order:
// termMuxes.mu before termMux.mu.
type termMuxes struct {
	m Manager

	mu    sync.Mutex
	muxes map[muxKey]*termMux
	refs  map[*termMux]int // clients attached or attaching
}

func newTermMuxes(m Manager) *termMuxes {
	return &termMuxes{m: m, muxes: map[muxKey]*termMux{}, refs: map[*termMux]int{}}
}

// termMux is one session terminal: one runner client, many WebSocket
// clients.
type termMux struct {
	set      *termMuxes
	key      muxKey
	clientID string        // the runner client
	ready    chan struct{} // closed once the runner answered the open
	openErr  error         // set before ready closes
	exp      *exported     // set before ready closes when the runner handed the terminal over

	mu         sync.Mutex
	seat       bool // the runner gave this mux the owner's seat
	cols, rows uint16
	scroll     *scrollback.Ring
	clients    map[*muxClient]struct{}
	owner      *muxClient
	end        *termEnd // how the stream ended, once it has
	received   int64    // output bytes from the runner, replay included
	acked      int64    // what the runner was last told was taken

	opening     bool     // the runner has not answered the open yet
	drained     *termEnd // the exit, held until the reader is done
	readerEnded bool     // exported: the reader is done
}

// muxClient is one WebSocket client of a terminal.
type muxClient struct {
	mux    *termMux
	out    *termOutbox
	owner  bool
	base   int64 // termMux.received when the client joined
	replay int   // the scrollback it got on joining
}

// termGrant is what an attach got.
type termGrant struct {
	role       string
	cols, rows uint16
}

// attach joins a client, whose stream goes to out, to the terminal q
// names, opening the terminal on first use. The caller must detach the
// client.
func (s *termMuxes) attach(ctx context.Context, q Request, out *termOutbox) (*muxClient, termGrant, error) {
	key := muxKey{q.Session, q.TermID}
	s.mu.Lock()
	x := s.muxes[key]
	first := x == nil
	if first {
		cid, err := newRunnerClientID()
		if err != nil {
			s.mu.Unlock()
			return nil, termGrant{}, err
		}
		x = &termMux{set: s, key: key, clientID: cid, ready: make(chan struct{}), clients: map[*muxClient]struct{}{}, scroll: scrollback.New(scrollbackBytes)}
		s.muxes[key] = x
	}
	s.refs[x]++
	s.mu.Unlock()

	if first {
		x.open(ctx, q)
	}
	select {
	case <-x.ready:
	case <-ctx.Done():
		x.release()
		return nil, termGrant{}, ctx.Err()
	}
	if x.openErr != nil {
		x.release()
		return nil, termGrant{}, x.openErr
	}
	c, g, resize := x.join(q, out)
	if resize {
		if err := x.resize(q.Cols, q.Rows); err != nil {
			out.notice(fmt.Errorf("resize: %w", err))
		}
	}
	return c, g, nil
}

func newRunnerClientID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("client id: %w", err)
	}
	return "sup-" + hex.EncodeToString(b[:]), nil
}

// open attaches the runner client, asking the runner to hand the terminal
// over (export.go). Otherwise the runner's replay arrives through the
// sink like any output, so it is in the scrollback before anyone joins.
func (x *termMux) open(ctx context.Context, q Request) {
	t, err := x.openExported(ctx, wire.TermOpen{
		TermID: x.key.term, ClientID: x.clientID, Role: api.RoleOwner, Command: q.Command, Cols: q.Cols, Rows: q.Rows,
		Window: termWindowBytes,
	})
	if err != nil {
		x.openErr = err
		x.forget()
	} else {
		x.mu.Lock()
		x.seat = t.Role == api.RoleOwner
		x.cols, x.rows = t.Cols, t.Rows
		x.mu.Unlock()
	}
	close(x.ready)
}

// join adds a client. It gets the scrollback and then live output, with
// nothing lost or repeated between the two, since both happen under the
// lock the sink takes. join reports whether the terminal should take the
// new owner's size.
func (x *termMux) join(q Request, out *termOutbox) (*muxClient, termGrant, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	replay := x.scroll.Replay()
	c := &muxClient{mux: x, out: out, base: x.received, replay: len(replay)}
	out.push(newTermData(replay, nil))
	if x.end != nil {
		// The program ended between the open and this join: the client
		// sees what the others saw.
		out.finish(x.end, false)
		return c, termGrant{role: api.RoleReadOnly, cols: x.cols, rows: x.rows}, false
	}
	resize := false
	if q.Role == api.RoleOwner && x.seat && x.owner == nil {
		c.owner = true
		x.owner = c
		// An owner joining a running terminal gives it its size.
		if q.Cols > 0 && q.Rows > 0 && (q.Cols != x.cols || q.Rows != x.rows) {
			x.cols, x.rows = q.Cols, q.Rows
			resize = true
		}
	}
	x.clients[c] = struct{}{}
	g := termGrant{role: api.RoleReadOnly, cols: x.cols, rows: x.rows}
	if c.owner {
		g.role = api.RoleOwner
	}
	return c, g, resize
}

// sink receives the runner client's messages, on the runner's reader
// goroutine: it must not wait.
func (x *termMux) sink(msg wire.Message) {
	x.mu.Lock()
	if x.end != nil {
		x.mu.Unlock()
		return
	}
	var end *termEnd
	var closing *exported
	switch m := msg.(type) {
	case *wire.TermData:
		x.received += int64(len(m.Data))
		x.scroll.Write(m.Data)
		d := newTermData(m.Data, x.set.m.RecycleTermData)
		for c := range x.clients {
			if !c.out.push(d) {
				x.dropLocked(c) // cut as too slow
			}
		}
		d.release()
	case *wire.TermExit:
		if end = exitEnd(m); x.holdExitLocked(end) {
			end = nil
		}
	case *wire.TermError:
		e := m.Error
		if e == nil {
			e = wire.Errorf(wire.CodeInternal, "the runner reported a terminal error without saying what")
		}
		// A refused input or resize concerns the owner, the only one
		// whose keys and sizes reach the runner; anything else (stream
		// cut, hub closed, runner dead) ends every client's stream.
		if e.Code == wire.CodeConflict || e.Code == wire.CodeBadRequest {
			if x.owner != nil {
				x.owner.out.notice(e)
			}
			break
		}
		end = fatalEnd(e)
		closing = x.exp
	}
	if end != nil {
		x.endLocked(end)
	}
	x.mu.Unlock()
	if closing != nil {
		// Outside the lock: closing the master waits for a read in
		// progress, whose reader may be waiting for the lock
		// (waitForRoom); it then sees the end and stops.
		closing.close()
	}
	if end != nil {
		// A later attach starts afresh: a new program after an exit.
		x.forget()
	}
}

// endLocked ends every client's stream with end.
func (x *termMux) endLocked(end *termEnd) {
	x.end = end
	for c := range x.clients {
		c.out.finish(end, false)
	}
}

func exitEnd(t *wire.TermExit) *termEnd {
	code := -1
	if t.ExitCode != nil {
		code = *t.ExitCode
	}
	return &termEnd{frame: api.TermFrame{Type: api.FrameExit, ExitCode: &code, Signal: t.Signal},
		status: websocket.StatusNormalClosure, exit: true}
}

func (x *termMux) dropLocked(c *muxClient) {
	delete(x.clients, c)
	if x.owner == c {
		// The seat is free for the next client asking for it.
		x.owner = nil
	}
}

// forget removes x from the set, so the next attach opens a new mux.
func (x *termMux) forget() {
	x.set.mu.Lock()
	if x.set.muxes[x.key] == x {
		delete(x.set.muxes, x.key)
	}
	x.set.mu.Unlock()
}

// release drops one reference; the last one detaches the runner client.
func (x *termMux) release() {
	s := x.set
	s.mu.Lock()
	s.refs[x]--
	last := s.refs[x] == 0
	if last {
		delete(s.refs, x)
		if s.muxes[x.key] == x {
			delete(s.muxes, x.key)
		}
	}
	s.mu.Unlock()
	// The last reference is let go after the open is answered: the
	// opener holds one until then.
	if !last || x.openErr != nil {
		return
	}
	x.mu.Lock()
	exited := x.end != nil && x.end.exit
	x.mu.Unlock()
	switch {
	case exited:
		// The runner forgot the client when the program exited.
	case x.exp != nil:
		x.unexport()
	default:
		// An error here means the runner is gone.
		s.m.CloseTerm(x.key.session, x.key.term, x.clientID)
	}
}

// progress tells the runner how far the fastest client has got, once it has
// got another ackStepBytes further. The writers call it after taking output
// from their outboxes.
func (x *termMux) progress() {
	if x.exp != nil {
		x.exp.pokeRoom()
		return
	}
	x.mu.Lock()
	taken := x.received // with no client, the scrollback takes everything
	if len(x.clients) > 0 {
		taken = 0
		for c := range x.clients {
			taken = max(taken, c.base+max(c.out.takenBytes()-int64(c.replay), 0))
		}
	}
	if taken-x.acked < ackStepBytes {
		x.mu.Unlock()
		return
	}
	x.acked = taken
	x.mu.Unlock()
	// An error means the runner is gone; its clients hear of it by the sink.
	x.set.m.TermAck(x.key.session, wire.TermAck{TermID: x.key.term, ClientID: x.clientID, Acked: taken})
}

// detach removes the client; the terminal keeps running.
func (c *muxClient) detach() {
	x := c.mux
	x.mu.Lock()
	x.dropLocked(c)
	x.mu.Unlock()
	if x.exp != nil {
		x.exp.pokeRoom()
	}
	x.release()
}

// input types p into the terminal.
func (c *muxClient) input(p []byte) error {
	if err := c.check("its input was not sent to the terminal"); err != nil {
		return err
	}
	x := c.mux
	if x.exp != nil {
		return x.exp.input(p)
	}
	return x.set.m.TermInput(x.key.session, wire.TermInput{TermID: x.key.term, ClientID: x.clientID, Data: p})
}

// resize gives the terminal a new size.
func (c *muxClient) resize(cols, rows uint16) error {
	if err := c.check("only the owner resizes the terminal"); err != nil {
		return err
	}
	x := c.mux
	if err := x.resize(cols, rows); err != nil {
		return err
	}
	x.mu.Lock()
	x.cols, x.rows = cols, rows
	x.mu.Unlock()
	return nil
}

// resize gives the terminal a new size: through its master when it was
// handed over, else through the runner.
func (x *termMux) resize(cols, rows uint16) error {
	if x.exp != nil {
		return term.Resize(x.exp.master, cols, rows)
	}
	return x.set.m.TermResize(x.key.session, wire.TermResize{TermID: x.key.term, ClientID: x.clientID, Cols: cols, Rows: rows})
}

// check refuses a client that does not hold the owner's seat (any more:
// a cut owner loses it).
func (c *muxClient) check(what string) error {
	x := c.mux
	x.mu.Lock()
	defer x.mu.Unlock()
	if !c.owner {
		return wire.Errorf(wire.CodeConflict, "this client is read-only: %s", what)
	}
	if x.owner != c {
		return wire.Errorf(wire.CodeConflict, "this client no longer owns the terminal: %s", what)
	}
	return nil
}
