package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// EventsOptions select the events to stream.
type EventsOptions struct {
	// From is the first seq wanted (0 or 1: from the start).
	From int64
	// Follow keeps the stream open for live events after the log's end.
	// A followed stream outlives its connection: see [EventStream].
	Follow bool
	// OnReconnect, when set, hears about a followed stream's connection:
	// lost is why the connection ended before the stream did, and nil
	// once the stream has been reopened where it stopped. It is called
	// from Next, so it must not call Next.
	OnReconnect func(lost error)
}

// Reconnection back-off of followed streams.
const (
	reconnectFirst = 50 * time.Millisecond
	reconnectMax   = 2 * time.Second
)

// Events streams session id's events as their events.jsonl lines. The first
// request is made before Events returns, so an unknown session or an absent
// supervisor is reported here.
func (c *Client) Events(ctx context.Context, id string, opts EventsOptions) (*EventStream, error) {
	s := &EventStream{next: max(opts.From, 1)}
	path := "/sessions/" + url.PathEscape(id) + "/events?"
	err := s.lines.start(ctx, c, opts.Follow, opts.OnReconnect, func() string {
		q := url.Values{}
		q.Set("format", "ndjson")
		q.Set("from", strconv.FormatInt(s.next, 10))
		q.Set("follow", strconv.FormatBool(opts.Follow))
		return path + q.Encode()
	}, replyEnd)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// EventStream is a session's events, one events.jsonl line at a time, in
// seq order.
//
// A followed stream survives the loss of its connection: when the
// connection breaks, or the supervisor stops (it ends streams with
// unavailable) and starts again, Next reconnects with a growing pause (up to
// 2 s) and resumes from the seq after the last event it returned, so the
// caller sees every event once, with no gap, until the context given to
// Events ends, Close is called, or the session is deleted (not_found).
//
// Next must be called from one goroutine at a time; Close may be called
// from any.
type EventStream struct {
	lines lineStream
	next  int64 // lowest seq not yet returned
	ev    event.Event
}

// Next returns the next event line, without its newline; the slice is
// valid until the next call. A stream that does not follow returns io.EOF
// after the last event; a followed one returns the reason it ended: the
// context's error, or the supervisor's *wire.Error (not_found once the
// session is deleted).
func (s *EventStream) Next() ([]byte, error) {
	for {
		line, err := s.lines.next()
		if err != nil {
			return nil, err
		}
		seq := lineSeq(line)
		if seq > 0 && seq < s.next {
			continue // already returned before a reconnection
		}
		if seq > 0 {
			s.next = seq + 1
		}
		return line, nil
	}
}

// NextEvent is Next, decoded. The event's Data is valid until the next
// call.
func (s *EventStream) NextEvent() (*event.Event, error) {
	line, err := s.Next()
	if err != nil {
		return nil, err
	}
	s.ev = event.Event{}
	if err := json.Unmarshal(line, &s.ev); err != nil {
		return nil, wire.Errorf(wire.CodeProtocol, "event line %.80q: %v", line, err)
	}
	return &s.ev, nil
}

// Close ends the stream; a Next waiting in another goroutine returns.
func (s *EventStream) Close() error { return s.lines.close() }

// lineStream is an NDJSON stream that, when it follows, reopens itself
// after a lost connection with the request its owner builds for where it
// stands.
type lineStream struct {
	c           *Client
	ctx         context.Context
	cancel      context.CancelFunc
	follow      bool
	onReconnect func(error)
	path        func() string           // the request path (after /v1), query included
	end         func(line []byte) error // the stream's end reason, if the line says one

	mu    sync.Mutex    // guards body: close may close it from any goroutine
	body  io.ReadCloser // nil between connections
	lines *wire.LineReader
}

// start opens the stream's first connection.
func (l *lineStream) start(ctx context.Context, c *Client, follow bool, onReconnect func(error), path func() string, end func([]byte) error) error {
	l.c, l.follow, l.onReconnect, l.path, l.end = c, follow, onReconnect, path, end
	l.ctx, l.cancel = context.WithCancel(ctx)
	if err := l.open(); err != nil {
		l.cancel()
		return err
	}
	return nil
}

// open makes one request.
func (l *lineStream) open() error {
	req, err := l.c.newRequest(l.ctx, http.MethodGet, l.path(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", api.MediaNDJSON)
	resp, err := l.c.do(req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return replyError(resp.StatusCode, raw)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx.Err() != nil { // closed meanwhile
		resp.Body.Close()
		return l.ctx.Err()
	}
	l.body, l.lines = resp.Body, wire.NewLineReader(resp.Body, 0)
	return nil
}

// next returns the next line, reconnecting a followed stream as needed.
func (l *lineStream) next() ([]byte, error) {
	for {
		if l.lines == nil {
			if err := l.reconnect(); err != nil {
				return nil, err
			}
		}
		line, err := l.readLine()
		if err == nil {
			return line, nil
		}
		if l.ctx.Err() != nil {
			l.dropBody()
			return nil, l.ctx.Err()
		}
		if !l.follow || !resumable(err) {
			return nil, err
		}
		l.dropBody()
		if l.onReconnect != nil {
			l.onReconnect(err)
		}
	}
}

// readLine returns the next non-blank, newline-terminated line; a stream
// ended for a reason yields that reason.
func (l *lineStream) readLine() ([]byte, error) {
	for {
		line, err := l.lines.Next()
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !l.lines.Terminated() {
			return nil, io.ErrUnexpectedEOF
		}
		if err := l.end(line); err != nil {
			return nil, err
		}
		return line, nil
	}
}

// reconnect reopens a followed stream, pausing between tries, until it
// succeeds, the context ends, or the supervisor refuses for good.
func (l *lineStream) reconnect() error {
	wait := reconnectFirst
	for {
		err := l.open()
		if err == nil {
			if l.onReconnect != nil {
				l.onReconnect(nil)
			}
			return nil
		}
		if l.ctx.Err() != nil {
			return l.ctx.Err()
		}
		if !resumable(err) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-l.ctx.Done():
			t.Stop()
			return l.ctx.Err()
		}
		wait = min(2*wait, reconnectMax)
	}
}

func (l *lineStream) dropBody() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.body != nil {
		l.body.Close()
	}
	l.body, l.lines = nil, nil
}

func (l *lineStream) close() error {
	l.cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.body != nil {
		l.body.Close() // next, the only user of lines, drops them
	}
	return nil
}

// replyEnd reads the end of a session's stream: a failed reply, which has
// no seq.
func replyEnd(line []byte) error {
	if !bytes.HasPrefix(line, []byte(`{"ok":false`)) {
		return nil
	}
	var r api.ErrorReply
	if json.Unmarshal(line, &r) == nil && r.Error != nil {
		return r.Error.Wire()
	}
	return nil
}

// resumable reports whether a followed stream that ended with err is worth
// reopening: a lost connection, a supervisor stopping or not answering
// (yet), a timeout. The supervisor's refusals (not_found, unauthorized,
// bad_request, ...) are final.
func resumable(err error) bool {
	var we *wire.Error
	if !errors.As(err, &we) {
		return true // transport: connection reset, cut mid-line, EOF
	}
	switch we.Code {
	case wire.CodeUnavailable, wire.CodeTimeout:
		return true
	}
	return false
}

// lineSeq reads the top-level seq of an event line, 0 when it has none.
// The runner writes seq first, so the common case needs no decoding.
func lineSeq(line []byte) int64 {
	const prefix = `{"seq":`
	if bytes.HasPrefix(line, []byte(prefix)) {
		rest := line[len(prefix):]
		end := bytes.IndexAny(rest, ",}")
		if end > 0 {
			if n, err := strconv.ParseInt(string(rest[:end]), 10, 64); err == nil {
				return n
			}
		}
	}
	var ev struct {
		Seq int64 `json:"seq"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return 0
	}
	return ev.Seq
}
