package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// Standard JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a JSON-RPC error object, as received in a response or returned
// by a request handler.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// ErrClosed is returned by calls made on, or still waiting on, a closed Conn.
var ErrClosed = errors.New("jsonrpc: connection closed")

// ErrProtocol is matched by errors about messages that are well framed but
// are not valid JSON-RPC 2.0.
var ErrProtocol = errors.New("jsonrpc: protocol error")

// message is any JSON-RPC 2.0 message; which fields are set tells its kind.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Direction says which way a traced message went.
type Direction string

// Directions of traced messages.
const (
	Sent     Direction = "sent"
	Received Direction = "received"
)

// Options configure a Conn. Every callback is optional.
type Options struct {
	// MaxBody bounds one received message (DefaultMaxBody when 0).
	MaxBody int

	// Notify receives each notification, in stream order, on the
	// goroutine running Serve. It must not block on the Conn (for example
	// by making a Call and waiting for it): the reply could only be read
	// after Notify returns.
	Notify func(method string, params json.RawMessage)

	// Request answers a request from the peer. It runs on its own
	// goroutine, with a context that ends when the connection does; Serve
	// waits for it before returning. Without it, and for any method it
	// does not know (it returns an *Error with CodeMethodNotFound for
	// those), the peer gets an explicit "method not found" error.
	Request func(ctx context.Context, method string, params json.RawMessage) (result any, err error)

	// Trace sees every message body sent or received, before it is
	// processed. The body must not be retained or modified.
	Trace func(dir Direction, body []byte)
}

// ReplyFunc receives the outcome of a call: its result, or an error (an
// *Error from the peer, or ErrClosed, or the Conn's failure).
type ReplyFunc func(result json.RawMessage, err error)

// Conn is one JSON-RPC 2.0 connection. Serve must run for replies and
// notifications to be delivered.
type Conn struct {
	r    *Reader
	w    *Writer
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
	ctx, cancel := context.WithCancel(context.Background())
	return &Conn{
		r:       NewReader(r, opts.MaxBody),
		w:       NewWriter(w),
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
	err := c.readLoop()
	c.cancel()
	c.handlers.Wait()
	c.fail(err)
	close(c.done)
	return err
}

// Done is closed when Serve has returned.
func (c *Conn) Done() <-chan struct{} { return c.done }

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
			return err
		}
	}
}

func (c *Conn) dispatch(body []byte) error {
	var m message
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&m); err != nil {
		return fmt.Errorf("%w: body is not a JSON object: %v: %q", ErrProtocol, err, truncate(body))
	}
	if dec.More() {
		return fmt.Errorf("%w: data after the JSON object: %q", ErrProtocol, truncate(body))
	}
	if m.JSONRPC != "2.0" {
		return fmt.Errorf("%w: jsonrpc member is %q, not \"2.0\": %q", ErrProtocol, m.JSONRPC, truncate(body))
	}
	switch {
	case m.Method != "" && len(m.ID) == 0:
		if c.opts.Notify != nil {
			c.opts.Notify(m.Method, m.Params)
		}
	case m.Method != "":
		c.serveRequest(m)
	case len(m.ID) > 0 && (m.Result != nil || m.Error != nil):
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			return fmt.Errorf("%w: reply id %s is not one this side sent", ErrProtocol, m.ID)
		}
		c.mu.Lock()
		reply, ok := c.pending[id]
		delete(c.pending, id)
		closed := c.closed
		c.mu.Unlock()
		if !ok {
			if closed {
				return nil // a late reply to a call that Close already failed
			}
			return fmt.Errorf("%w: reply to unknown request id %d", ErrProtocol, id)
		}
		if m.Error != nil {
			reply(nil, m.Error)
		} else {
			reply(m.Result, nil)
		}
	default:
		return fmt.Errorf("%w: neither a request, a notification nor a reply: %q", ErrProtocol, truncate(body))
	}
	return nil
}

// serveRequest answers a peer's request on its own goroutine, so a slow
// handler never stalls the stream.
func (c *Conn) serveRequest(m message) {
	c.handlers.Add(1)
	go func() {
		defer c.handlers.Done()
		var (
			result any
			err    error
		)
		if c.opts.Request != nil {
			result, err = c.opts.Request(c.ctx, m.Method, m.Params)
		} else {
			err = &Error{Code: CodeMethodNotFound, Message: "method not found: " + m.Method}
		}
		out := message{JSONRPC: "2.0", ID: m.ID}
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
		// A write error means the stream is gone; Serve will notice.
		_ = c.send(out)
	}()
}

// Go sends a request and arranges for reply to be called exactly once with
// its outcome. A reply from the peer is delivered on the goroutine running
// Serve, before any later message is dispatched, so it is seen in stream
// order; like Options.Notify, reply must not block on the Conn. When the
// Conn closes first, reply gets the closing error on the goroutine that
// closed it. If the request cannot be sent, Go returns the error and reply
// is never called.
func (c *Conn) Go(method string, params any, reply ReplyFunc) error {
	rawParams, err := encodeParams(method, params)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed {
		err := c.closeErr
		c.mu.Unlock()
		return err
	}
	id := c.nextID
	c.nextID++
	c.pending[id] = reply
	c.mu.Unlock()

	m := message{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: rawParams}
	if err := c.send(m); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("jsonrpc: send %s: %w", method, err)
	}
	return nil
}

// Call sends a request and waits for its reply, decoding the result into
// result (unless result is nil). If ctx ends first, Call returns ctx's
// error; the reply, when it comes, is dropped.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	type outcome struct {
		raw json.RawMessage
		err error
	}
	ch := make(chan outcome, 1)
	if err := c.Go(method, params, func(raw json.RawMessage, err error) { ch <- outcome{raw, err} }); err != nil {
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
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Notify sends a notification.
func (c *Conn) Notify(method string, params any) error {
	rawParams, err := encodeParams(method, params)
	if err != nil {
		return err
	}
	return c.send(message{JSONRPC: "2.0", Method: method, Params: rawParams})
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

func (c *Conn) send(m message) error {
	c.mu.Lock()
	closed, closeErr := c.closed, c.closeErr
	c.mu.Unlock()
	if closed {
		return closeErr
	}
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("jsonrpc: encode message: %w", err)
	}
	if c.opts.Trace != nil {
		c.opts.Trace(Sent, body)
	}
	return c.w.Write(body)
}

// Close stops sending and fails every waiting call with ErrClosed. It does
// not close the underlying streams; Serve returns once the peer closes its
// side.
func (c *Conn) Close() {
	c.fail(nil)
}

// fail closes the Conn with cause (ErrClosed when nil) and fails every
// waiting call.
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
