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
const MaxDataBytes = 256 << 10

// Sink receives one client's view of a terminal. The hub calls a client's
// Sink from a goroutine of its own (an InlineSink's TryData also from the
// terminal's reader), one call at a time, in stream order:
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

// InlineSink is a Sink that can also take output on the terminal's reader
// goroutine. A client whose Sink is one and that has nothing queued gets
// each batch of output through TryData, as the reader reads it, with no
// hand-off to the client's own goroutine and no copy: for a sink that
// writes the output straight on (the runner's link to the supervisor),
// that hand-off and that copy are most of what the hub costs.
//
// TryData is called one call at a time and in stream order with the other
// Sink calls, like them. p is the reader's buffer: TryData must not keep
// or modify it after it returns. It must not wait for the client to catch
// up (flow control): when it cannot take p at once it returns false, and
// p is queued and later goes through Data as usual. While TryData runs,
// the terminal's output is not read, so the program waits for it, as it
// does under HubOptions.Pace. An error detaches the client as one from
// Data does.
type InlineSink interface {
	Sink
	TryData(p []byte) (taken bool, err error)
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
	stopCtx func()     // releases the attach context; set before pump starts
	inline  InlineSink // sink, when it can take output on the reader

	wake chan struct{} // capacity 1: "queue or final changed"
	done chan struct{} // closed when the pump has made its last Sink call
	cut  atomic.Bool   // the queue was dropped; stop delivering at once

	mu      sync.Mutex
	queue   [][]byte // live chunks, shared read-only with other clients
	pending int      // live bytes queued or being delivered by the pump
	final   *ending  // how the stream ends, once decided
	// At most one of the pump and the reader delivers at a time, so the
	// Sink sees one call at a time, in order.
	pumping  bool // the pump has output in hand (the replay, a batch)
	inlining bool // the reader is in TryData
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

// take hands the pump what is queued and how the stream ends, once it
// does. It hands nothing while the reader delivers inline (wait reports
// that), so the pump neither delivers nor ends the stream meanwhile.
func (c *Client) take() (batch [][]byte, final *ending, wait bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inlining {
		return nil, nil, true
	}
	batch = c.queue
	c.queue = nil
	c.pumping = len(batch) > 0
	return batch, c.final, false
}

// claimInline reserves the next delivery for the reader, when the Sink can
// take it inline and nothing is queued or being delivered before it. The
// caller holds the terminal's lock, then calls deliverInline.
func (c *Client) claimInline() bool {
	if c.inline == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pumping || c.inlining || c.final != nil || len(c.queue) > 0 {
		return false
	}
	c.inlining = true
	return true
}

// deliverInline hands p to the Sink on the reader's goroutine, after
// claimInline. What the Sink does not take is queued, as queued() (a copy
// of p), for the pump.
func (c *Client) deliverInline(p []byte, queued func() []byte) {
	taken, err := c.inline.TryData(p)
	if err != nil {
		c.mu.Lock()
		c.inlining = false
		c.mu.Unlock()
		c.fail(err)
		c.poke()
		return
	}
	c.mu.Lock()
	c.inlining = false
	if !taken && c.final == nil {
		// Nothing was queued meanwhile: only the reader queues output.
		chunk := queued()
		c.queue = append(c.queue, chunk)
		c.pending += len(chunk)
	}
	wake := c.final != nil || len(c.queue) > 0
	c.mu.Unlock()
	if wake {
		c.poke()
	}
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
		batch, final, wait := c.take()
		if len(batch) > 0 {
			if err := c.send(batch, true); err != nil {
				c.fail(err)
			}
			continue
		}
		if final != nil && !wait {
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
