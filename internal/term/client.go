package term

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Role is the access a client has to a terminal.
type Role string

const (
	// RoleOwner may type into and resize the terminal. A terminal has at
	// most one owner at a time.
	RoleOwner Role = "owner"
	// RoleReadOnly sees the terminal's output and nothing else.
	RoleReadOnly Role = "read-only"
)

// MaxDataBytes bounds the slice passed to one Sink.Data call, so a replayed
// scrollback or a burst of output maps onto wire messages of bounded size.
const MaxDataBytes = 64 << 10

// Sink receives one client's view of a terminal. The hub calls a client's
// Sink from a goroutine of its own, one call at a time, in stream order:
// Opened once, Data any number of times, then exactly one of Exit or Closed,
// and then never again.
//
// A Sink must not call Client.Close of its own client (Close waits for the
// Sink's last call to return); to stop, return an error from Data.
type Sink interface {
	// Opened starts the stream with what Attach granted, before any output,
	// so a consumer that announces the grant (term.opened) can never be
	// overtaken by the client's first output.
	Opened(g Grant)

	// Data delivers terminal output, in order: first the scrollback replay,
	// then live output. p holds at most MaxDataBytes bytes. It may be shared
	// with other clients, so it must not be modified, but it is never
	// reused and may be kept. Returning an error detaches the client; its
	// stream then ends with Closed carrying that error.
	Data(p []byte) error

	// Exit reports that the terminal's program ended, after all of its
	// output. code is its exit status, or -1 when a signal killed it, in
	// which case signal names it ("SIGKILL").
	Exit(code int, signal string)

	// Closed reports that the stream ended before the program did:
	// ErrSlowClient, ErrHubClosed, the error Data returned, the cause of the
	// attach context, or nil after Client.Close.
	Closed(err error)
}

// Client is one attachment to a terminal.
type Client struct {
	id   string
	role Role
	term *terminal
	sink Sink

	// grant and replay (the scrollback when the client joined) open the
	// stream. Only the pump goroutine touches replay after Attach.
	grant   Grant
	replay  []byte
	stopCtx func() // releases the attach context; set before pump starts

	wake chan struct{} // capacity 1: "queue or final changed"
	done chan struct{} // closed when the pump has made its last Sink call
	cut  atomic.Bool   // the queue was dropped; stop delivering at once

	mu      sync.Mutex
	queue   [][]byte // live chunks, shared read-only with other clients
	pending int      // live bytes queued or being delivered
	final   *ending  // how the stream ends, once decided
}

// ending is the last event of a client's stream.
type ending struct {
	exited bool
	code   int
	signal string
	err    error
}

func (e *ending) notify(s Sink) {
	if e.exited {
		s.Exit(e.code, e.signal)
		return
	}
	s.Closed(e.err)
}

// ID returns the client id given to Attach.
func (c *Client) ID() string { return c.id }

// TermID returns the id of the terminal the client is attached to.
func (c *Client) TermID() string { return c.term.id }

// Role returns the role the client was granted.
func (c *Client) Role() Role { return c.role }

// Input types p into the terminal. Read-only clients get ErrReadOnly and
// their bytes never reach the program. A program that stops reading its
// input makes Input fail after HubOptions.InputTimeout rather than block.
func (c *Client) Input(p []byte) error {
	if c.role != RoleOwner {
		return ErrReadOnly
	}
	if c.ended() {
		return ErrDetached
	}
	return c.term.write(p)
}

// Resize sets the terminal's size; the program sees SIGWINCH. Only the
// owner may resize, since the terminal has one size for everyone.
func (c *Client) Resize(cols, rows uint16) error {
	if c.role != RoleOwner {
		return ErrReadOnly
	}
	if cols == 0 || rows == 0 {
		return fmt.Errorf("term: resize to %dx%d: columns and rows must be positive", cols, rows)
	}
	if c.ended() {
		return ErrDetached
	}
	return c.term.resize(cols, rows)
}

// Close detaches the client: its Sink gets Closed(nil) unless its stream
// already ended, and Close returns once the Sink's last call has returned.
// The terminal keeps running for the other clients, and with none attached
// it keeps running until its program exits or the hub closes, so a client
// can come back to it. Close is idempotent.
func (c *Client) Close() {
	c.term.detach(c, &ending{})
	<-c.done
}

func (c *Client) ended() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.final != nil
}

// enqueue queues a live chunk for delivery. It reports false, queuing
// nothing, when the chunk would put the client more than bound bytes behind.
// The caller holds the terminal's lock.
func (c *Client) enqueue(chunk []byte, bound int) bool {
	c.mu.Lock()
	if c.final != nil {
		c.mu.Unlock()
		return true
	}
	if c.pending+len(chunk) > bound {
		c.mu.Unlock()
		return false
	}
	c.queue = append(c.queue, chunk)
	c.pending += len(chunk)
	c.mu.Unlock()
	c.poke()
	return true
}

// queued is how many live bytes wait for delivery.
func (c *Client) queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending
}

// end decides how the stream ends, unless that is already decided. An exit
// lets queued output drain first; any other ending drops it.
func (c *Client) end(e *ending) {
	c.mu.Lock()
	if c.final != nil {
		c.mu.Unlock()
		return
	}
	c.final = e
	if !e.exited {
		c.queue = nil
		c.cut.Store(true)
	}
	c.mu.Unlock()
	c.poke()
}

func (c *Client) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Client) take() ([][]byte, *ending) {
	c.mu.Lock()
	defer c.mu.Unlock()
	batch := c.queue
	c.queue = nil
	return batch, c.final
}

// pump is the client's delivery goroutine. It is the only caller of the
// client's Sink, which is what keeps a slow Sink from holding up anyone
// else.
func (c *Client) pump() {
	defer c.term.hub.wg.Done()
	defer close(c.done)
	defer c.stopCtx()

	c.sink.Opened(c.grant)
	replay := c.replay
	c.replay = nil
	if err := c.send([][]byte{replay}, false); err != nil {
		c.fail(err)
	}
	for {
		batch, final := c.take()
		if len(batch) > 0 {
			if err := c.send(batch, true); err != nil {
				c.fail(err)
			}
			continue
		}
		if final != nil {
			final.notify(c.sink)
			return
		}
		<-c.wake
	}
}

// errCut stops a delivery whose queue was dropped.
var errCut = errors.New("term: stream cut")

// send hands batch to the Sink in pieces of at most MaxDataBytes. counted
// says the bytes are live output included in pending.
func (c *Client) send(batch [][]byte, counted bool) error {
	for len(batch) > 0 {
		if len(batch[0]) == 0 {
			batch = batch[1:]
			continue
		}
		if c.cut.Load() {
			return errCut
		}
		var p []byte
		p, batch = nextPiece(batch)
		if err := c.sink.Data(p); err != nil {
			return err
		}
		if counted {
			c.mu.Lock()
			c.pending -= len(p)
			c.mu.Unlock()
			c.term.pokeRoom()
		}
	}
	return nil
}

// nextPiece takes up to MaxDataBytes from the front of batch, joining small
// chunks so a burst of output is not delivered a few bytes at a time. A
// joined piece is a fresh allocation, never reused, so a Sink may keep any
// piece it is given.
func nextPiece(batch [][]byte) (piece []byte, rest [][]byte) {
	first := batch[0]
	if len(first) >= MaxDataBytes {
		batch[0] = first[MaxDataBytes:]
		return first[:MaxDataBytes], batch
	}
	n, size := 1, len(first)
	for n < len(batch) && size+len(batch[n]) <= MaxDataBytes {
		size += len(batch[n])
		n++
	}
	if n == 1 {
		return first, batch[1:]
	}
	piece = make([]byte, 0, size)
	for _, chunk := range batch[:n] {
		piece = append(piece, chunk...)
	}
	return piece, batch[n:]
}

// fail ends the stream after a failed delivery. A cut stream already has its
// ending; a Sink error becomes the ending, even over a pending exit, because
// the Sink has said it can take no more.
func (c *Client) fail(err error) {
	if errors.Is(err, errCut) {
		return
	}
	e := &ending{err: fmt.Errorf("term: deliver output to client %q: %w", c.id, err)}
	c.term.detach(c, e)
	c.mu.Lock()
	if c.final.exited {
		c.final = e
	}
	c.queue = nil
	c.cut.Store(true)
	c.mu.Unlock()
}
