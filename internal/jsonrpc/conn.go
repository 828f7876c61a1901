package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// ErrClosed is matched by the error of every call made on, or still
// waiting on, a Conn that has closed. When the Conn closed because its
// peer went away, the error also wraps why (for a Child, its *ExitError).
var ErrClosed = errors.New("jsonrpc: connection closed")

// Direction says which way a traced message went.
type Direction string

// Directions of traced messages.
const (
	Sent     Direction = "sent"
	Received Direction = "received"
)

// Options configure a Conn. Every field is optional.
type Options struct {
	// Framing delimits messages on the streams; Lines when nil.
	Framing Framing
	// MaxBody bounds one received message (DefaultMaxBody when 0).
	MaxBody int

	// OmitVersion leaves the "jsonrpc" member out of sent messages and
	// accepts received messages without it, as Codex's app-server does.
	// Otherwise every received message must say "jsonrpc": "2.0".
	OmitVersion bool

	// BadMessage, when set, receives each message that is well framed
	// but not valid JSON-RPC (or not routable: a reply to an id this side
	// never sent), and the Conn goes on reading. Without it such a
	// message ends the Conn with an ErrProtocol error. A framing error
	// always ends it: the stream is out of step.
	BadMessage func(body []byte, err error)

	// Notify receives each notification, in stream order, on the
	// goroutine running Serve. It must not block on the Conn (for example
	// by making a Call and waiting for it): the reply could only be read
	// after Notify returns.
	Notify func(method string, params json.RawMessage)

	// Request answers a request from the peer. It runs on its own
	// goroutine, with a context that ends when the Conn does; Serve waits
	// for it before returning. The reply is sent when it returns: its
	// result, or its error (an *Error as it is, any other error as an
	// internal error). Without it, the peer gets "method not found".
	Request func(ctx context.Context, method string, params json.RawMessage) (result any, err error)

	// Trace sees every message body sent or received, before it is
	// processed. The body must not be retained or modified.
	Trace func(dir Direction, body []byte)

	// OnEnd runs once, on the goroutine running Serve, when reading has
	// ended (readErr is nil at a clean end of the stream). It returns
	// why the Conn ended, which every waiting and later call gets wrapped
	// in ErrClosed. A Child waits here for its process and returns its
	// *ExitError. Without it, the cause is readErr.
	OnEnd func(readErr error) error

	// OnWriteError runs when a message cannot be written: the peer has
	// stopped reading. Calls then keep waiting, and fail with the cause
	// OnEnd gives once the peer's output ends too (a Child makes sure it
	// does). Without it, the Conn closes at once with the write error.
	OnWriteError func(err error)
}

// ReplyFunc receives the outcome of a call: its result, or an error (an
// *Error from the peer, or ErrClosed with the cause).
type ReplyFunc func(result json.RawMessage, err error)

// Conn is one JSON-RPC 2.0 connection. Serve must run for replies,
// notifications and requests to be delivered.
type Conn struct {
	r    MessageReader
	w    MessageWriter
	opts Options

	mu       sync.Mutex
	nextID   int64
	pending  map[int64]ReplyFunc
	closed   bool
	closeErr error

	handlers sync.WaitGroup
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
}

// NewConn returns a Conn reading from r and writing to w.
func NewConn(r io.Reader, w io.Writer, opts Options) *Conn {
	framing := opts.Framing
	if framing == nil {
		framing = Lines
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Conn{
		r:       framing.NewReader(r, opts.MaxBody),
		w:       framing.NewWriter(w),
		opts:    opts,
		pending: make(map[int64]ReplyFunc),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
	}
}

// Serve reads and dispatches messages until the stream ends or breaks. It
// returns nil when the peer closed the stream cleanly, else the error. On
// return every waiting call has failed and every request handler it
// started has finished.
func (c *Conn) Serve() error {
	readErr := c.readLoop()
	cause := readErr
	if c.opts.OnEnd != nil {
		cause = c.opts.OnEnd(readErr)
	}
	// Waiting calls fail before the handlers are waited for: a handler
	// may itself wait on a call.
	c.fail(cause)
	c.cancel()
	c.handlers.Wait()
	close(c.done)
	return readErr
}

// Done is closed when Serve has returned.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the Conn closed (matching ErrClosed), or nil while it is
// open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

func (c *Conn) readLoop() error {
	for {
		body, err := c.r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if c.opts.Trace != nil {
			c.opts.Trace(Received, body)
		}
		if err := c.dispatch(body); err != nil {
			if c.opts.BadMessage == nil {
				return err
			}
			c.opts.BadMessage(body, err)
		}
	}
}

func (c *Conn) dispatch(body []byte) error {
	m, err := ParseMessage(body)
	if err != nil {
		return err
	}
	switch {
	case m.Version == "2.0":
	case m.Version == "" && c.opts.OmitVersion:
	default:
		return fmt.Errorf("%w: jsonrpc member is %q, not \"2.0\": %q", ErrProtocol, m.Version, truncate(body))
	}
	switch m.Kind {
	case KindNotification:
		if c.opts.Notify != nil {
			c.opts.Notify(m.Method, m.Params)
		}
	case KindRequest:
		c.serveRequest(m)
	case KindReply:
		return c.deliver(m, body)
	}
	return nil
}

// deliver hands a reply to the call waiting for it.
func (c *Conn) deliver(m Message, body []byte) error {
	if m.ID == nil {
		return fmt.Errorf("%w: an error reply with a null id (the peer could not read a message): %q", ErrProtocol, truncate(body))
	}
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil || id < 0 {
		return fmt.Errorf("%w: reply id %s is not one this side sent", ErrProtocol, m.ID)
	}
	c.mu.Lock()
	reply, ok := c.pending[id]
	delete(c.pending, id)
	issued := id < c.nextID
	c.mu.Unlock()
	switch {
	case ok && m.Error != nil:
		reply(nil, m.Error)
	case ok:
		reply(m.Result, nil)
	case !issued:
		return fmt.Errorf("%w: reply to unknown request id %d", ErrProtocol, id)
	}
	// Otherwise a late reply to a call that gave up (its context ended,
	// or the Conn closed): dropped.
	return nil
}

// serveRequest answers a peer's request on its own goroutine, so a slow
// handler never stalls the stream.
func (c *Conn) serveRequest(m Message) {
	c.handlers.Add(1)
	go func() {
		defer c.handlers.Done()
		var (
			result any
			err    error
		)
		if c.opts.Request != nil {
			result, err = c.opts.Request(context.WithValue(c.ctx, requestIDKey{}, m.ID), m.Method, m.Params)
		} else {
			err = &Error{Code: CodeMethodNotFound, Message: "method not found: " + m.Method}
		}
		out := outMessage{ID: m.ID}
		if err != nil {
			var rpcErr *Error
			if !errors.As(err, &rpcErr) {
				rpcErr = &Error{Code: CodeInternalError, Message: err.Error()}
			}
			out.Error = rpcErr
		} else {
			raw, merr := json.Marshal(result)
			if merr != nil {
				out.Error = &Error{Code: CodeInternalError, Message: "encode result: " + merr.Error()}
			} else {
				out.Result = raw
			}
		}
		// A write error means the peer is gone; Serve will notice.
		_ = c.send(out)
	}()
}

type requestIDKey struct{}

// RequestID is the id, in canonical form (see CanonicalID), of the peer's
// request that a Request handler running under ctx answers; nil elsewhere.
// Peers that cancel their requests by id (Codex's serverRequest/resolved)
// need it.
func RequestID(ctx context.Context) json.RawMessage {
	id, _ := ctx.Value(requestIDKey{}).(json.RawMessage)
	return id
}

// errWriteFailed marks a message that could not be written because the
// peer stopped reading; the call waits for the Conn's end instead.
type errWriteFailed struct{ err error }

func (e errWriteFailed) Error() string { return e.err.Error() }
func (e errWriteFailed) Unwrap() error { return e.err }

// Go sends a request and arranges for reply to be called exactly once with
// its outcome. A reply from the peer is delivered on the goroutine running
// Serve, before any later message is dispatched, so it is seen in stream
// order; like Options.Notify, reply must not block on the Conn. When the
// Conn closes first, reply gets the closing error on the goroutine that
// closed it. If the request cannot be sent (the Conn is closed, params do
// not encode), Go returns the error and reply is never called.
func (c *Conn) Go(method string, params any, reply ReplyFunc) error {
	_, err := c.start(method, params, reply)
	return err
}

// start sends a request whose outcome goes to reply, and returns its id.
func (c *Conn) start(method string, params any, reply ReplyFunc) (int64, error) {
	rawParams, err := encodeParams(method, params)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	if c.closed {
		err := c.closeErr
		c.mu.Unlock()
		return 0, err
	}
	id := c.nextID
	c.nextID++
	c.pending[id] = reply
	c.mu.Unlock()

	m := outMessage{ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: rawParams}
	err = c.send(m)
	var wf errWriteFailed
	if err == nil || errors.As(err, &wf) {
		// Written, or the peer stopped reading: either way the call's
		// outcome comes through reply, with the Conn's cause if it ends.
		return id, nil
	}
	c.mu.Lock()
	_, still := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !still {
		return id, nil // the Conn closed meanwhile and reply has its error
	}
	return 0, fmt.Errorf("jsonrpc: send %s: %w", method, err)
}

// Call sends a request and waits for its reply, decoding the result into
// result (unless result is nil). A refusal from the peer is an *Error. If
// ctx ends first, Call returns ctx's error; the reply, when it comes, is
// dropped.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	type outcome struct {
		raw json.RawMessage
		err error
	}
	ch := make(chan outcome, 1)
	id, err := c.start(method, params, func(raw json.RawMessage, err error) { ch <- outcome{raw, err} })
	if err != nil {
		return err
	}
	select {
	case o := <-ch:
		if o.err != nil {
			return fmt.Errorf("%s: %w", method, o.err)
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(o.raw, result); err != nil {
			return fmt.Errorf("%s: decode result: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// forget drops a call that gave up; its reply, if it comes, is dropped.
func (c *Conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Pending is the number of calls waiting for their replies.
func (c *Conn) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	rawParams, err := encodeParams(method, params)
	if err != nil {
		return err
	}
	if err := c.send(outMessage{Method: method, Params: rawParams}); err != nil {
		return fmt.Errorf("jsonrpc: send %s: %w", method, err)
	}
	return nil
}

// encodeParams marshals params; nil params are left out of the message.
func encodeParams(method string, params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("jsonrpc: encode %s params: %w", method, err)
	}
	return raw, nil
}

func (c *Conn) send(m outMessage) error {
	c.mu.Lock()
	closed, closeErr := c.closed, c.closeErr
	c.mu.Unlock()
	if closed {
		return closeErr
	}
	if !c.opts.OmitVersion {
		m.Version = "2.0"
	}
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("jsonrpc: encode message: %w", err)
	}
	if c.opts.Trace != nil {
		c.opts.Trace(Sent, body)
	}
	if err := c.w.Write(body); err != nil {
		if c.opts.OnWriteError != nil {
			c.opts.OnWriteError(err)
		} else {
			c.fail(err)
		}
		return errWriteFailed{err}
	}
	return nil
}

// Close stops sending and fails every waiting call with ErrClosed. It does
// not close the underlying streams; Serve returns once the peer closes its
// side.
func (c *Conn) Close() {
	c.fail(nil)
}

// fail closes the Conn with cause (plain ErrClosed when nil) and fails
// every waiting call.
func (c *Conn) fail(cause error) {
	err := ErrClosed
	if cause != nil {
		err = fmt.Errorf("%w: %w", ErrClosed, cause)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.closeErr = err
	pending := c.pending
	c.pending = map[int64]ReplyFunc{}
	c.mu.Unlock()
	for _, reply := range pending {
		reply(nil, err)
	}
}
