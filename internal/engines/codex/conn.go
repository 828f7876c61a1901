package codex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
)

// direction says which way a traced line went.
type direction int

const (
	toServer direction = iota + 1
	fromServer
)

// tracer sees every protocol line, for golden transcripts.
type tracer func(dir direction, line []byte)

// errConnClosed is returned by calls once the server's stdout has ended.
var errConnClosed = errors.New("codex app-server connection closed")

// conn is the client side of the app-server's stdio JSON-RPC stream: it
// numbers and matches its own requests, and hands every notification and
// server request to a handler, in the order the server sent them.
type conn struct {
	w      io.WriteCloser
	wmu    sync.Mutex
	trace  tracer
	nextID atomic.Int64
	// maxLine bounds one received line.
	maxLine int

	mu      sync.Mutex
	pending map[string]chan message
	done    chan struct{} // closed when the read loop ends
	err     error         // why it ended
}

func newConn(w io.WriteCloser, trace tracer) *conn {
	return &conn{w: w, trace: trace, maxLine: maxLineBytes, pending: map[string]chan message{}, done: make(chan struct{})}
}

// serve reads r until it ends, routing responses to their callers and
// everything else to handle. handle runs on the reading goroutine, so it
// must not block on the server. serve returns why reading stopped and
// fails every call still waiting.
func (c *conn) serve(r io.Reader, handle func(message), badLine func(line []byte, err error)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var line []byte
		line, err = readLine(br, c.maxLine)
		if len(line) > 0 {
			if c.trace != nil {
				c.trace(fromServer, line)
			}
			m, perr := parseMessage(line)
			switch {
			case errors.Is(perr, errBlankLine):
			case perr != nil:
				badLine(line, perr)
			case m.Kind == kindResponse:
				c.deliver(m)
			default:
				handle(m)
			}
		}
		if err != nil {
			break
		}
	}
	if errors.Is(err, io.EOF) {
		err = errConnClosed
	}
	c.mu.Lock()
	c.err = err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, ch := range pending {
		close(ch)
	}
	close(c.done)
	return err
}

// readLine returns the next line without its newline. A line longer than
// limit is an error: the stream cannot be resynchronised safely.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) > limit {
			return nil, fmt.Errorf("codex app-server sent a line over %d bytes", limit)
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return bytes.TrimRight(buf, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return buf, err
		}
	}
}

func (c *conn) deliver(m message) {
	if m.ID == nil {
		// An error about a line the server could not read: nobody to
		// route it to, and calls time out through their contexts.
		return
	}
	c.mu.Lock()
	ch, ok := c.pending[string(m.ID)]
	delete(c.pending, string(m.ID))
	c.mu.Unlock()
	if ok {
		ch <- m
	}
}

// call sends a request and decodes its result into out (which may be nil).
// A JSON-RPC error comes back as *rpcError.
func (c *conn) call(ctx context.Context, method string, params, out any) error {
	id := json.RawMessage(strconv.FormatInt(c.nextID.Add(1)-1, 10))
	ch := make(chan message, 1)
	c.mu.Lock()
	if c.pending == nil {
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, err)
	}
	c.pending[string(id)] = ch
	c.mu.Unlock()

	if err := c.send(struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params any             `json:"params"`
	}{id, method, params}); err != nil {
		c.forget(id)
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: %w", method, c.closedErr())
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %w", method, m.Error)
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(m.Result, out); err != nil {
			return fmt.Errorf("%s: decode result: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (c *conn) forget(id json.RawMessage) {
	c.mu.Lock()
	if c.pending != nil {
		delete(c.pending, string(id))
	}
	c.mu.Unlock()
}

func (c *conn) closedErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		return errConnClosed
	}
	return c.err
}

// notify sends a notification.
func (c *conn) notify(method string, params any) error {
	msg := struct {
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{method, params}
	if err := c.send(msg); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// respond answers a server request.
func (c *conn) respond(id json.RawMessage, result any) error {
	return c.send(struct {
		ID     json.RawMessage `json:"id"`
		Result any             `json:"result"`
	}{id, result})
}

// respondError refuses a server request.
func (c *conn) respondError(id json.RawMessage, code int, text string) error {
	return c.send(struct {
		ID    json.RawMessage `json:"id"`
		Error rpcError        `json:"error"`
	}{id, rpcError{Code: code, Message: text}})
}

func (c *conn) send(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	line = append(line, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.trace != nil {
		c.trace(toServer, line[:len(line)-1])
	}
	if _, err := c.w.Write(line); err != nil {
		return fmt.Errorf("write to codex app-server: %w", err)
	}
	return nil
}

// closeWrite closes the server's stdin, which asks it to exit.
func (c *conn) closeWrite() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.w.Close()
}
