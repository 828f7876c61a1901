package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// sseRetryMS is the reconnection delay an EventSource is told to use.
const sseRetryMS = 1000

// streamQuery is what every event stream takes: its format, and whether SSE
// messages are named after their type.
type streamQuery struct {
	ndjson bool
	// unnamed leaves SSE messages without an event field, so an
	// EventSource delivers every one to onmessage.
	unnamed bool
}

func parseStreamQuery(r *http.Request) (streamQuery, error) {
	var q streamQuery
	v := r.URL.Query()
	switch f := v.Get("format"); f {
	case "ndjson":
		q.ndjson = true
	case "sse":
	case "":
		q.ndjson = strings.Contains(r.Header.Get("Accept"), api.MediaNDJSON)
	default:
		return q, wire.Errorf(wire.CodeBadRequest, "format=%q: want sse or ndjson", f)
	}
	if s := v.Get("named"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return q, wire.Errorf(wire.CodeBadRequest, "named=%q: want true or false", s)
		}
		q.unnamed = !b
	}
	return q, nil
}

// eventsQuery is what a client asked of a session's event stream.
type eventsQuery struct {
	streamQuery
	from   int64
	follow bool
}

func parseEventsQuery(r *http.Request) (eventsQuery, error) {
	q := eventsQuery{from: 1, follow: true}
	var err error
	if q.streamQuery, err = parseStreamQuery(r); err != nil {
		return q, err
	}
	v := r.URL.Query()
	if s := v.Get("from"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return q, wire.Errorf(wire.CodeBadRequest, "from=%q: want a seq, a whole number >= 0", s)
		}
		q.from = n
	}
	// A reconnecting EventSource sends the last id it saw; it wins over
	// the from of the URL it reuses.
	if s := r.Header.Get("Last-Event-ID"); s != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		// The largest seq has no next one: n+1 would wrap round to a
		// replay from the start.
		if err != nil || n < 0 || n == math.MaxInt64 {
			return q, wire.Errorf(wire.CodeBadRequest, "Last-Event-ID %q: want a seq below %d", s, int64(math.MaxInt64))
		}
		q.from = n + 1
	}
	if s := v.Get("follow"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return q, wire.Errorf(wire.CodeBadRequest, "follow=%q: want true or false", s)
		}
		q.follow = b
	}
	return q, nil
}

func (s *server) events(w http.ResponseWriter, r *http.Request) {
	q, err := parseEventsQuery(r)
	if err != nil {
		writeError(w, err)
		return
	}
	id := r.PathValue("id")
	stream, err := s.m.Events(r.Context(), id, q.from, q.follow)
	if err != nil {
		writeError(w, err)
		return
	}
	defer stream.Close()
	var idBuf []byte
	s.serveStream(w, r, q.streamQuery, "session "+id, stream.Buffered, func(ctx context.Context, sw *streamWriter) error {
		ev, err := stream.Next(ctx)
		if err != nil {
			return err
		}
		idBuf = strconv.AppendInt(idBuf[:0], ev.Seq, 10)
		return sw.write(idBuf, ev.Type, ev.Line)
	}, func(sw *streamWriter, err error) {
		raw, _ := json.Marshal(api.ErrorReply{Error: api.NewError(err)})
		sw.end(raw)
	})
}

var errWrite = errors.New("write event stream")

// serveStream answers with an event stream: next writes one item, buffered
// says whether next has one at hand without waiting (else the writer
// flushes first), and end writes the reason the stream ended for one.
func (s *server) serveStream(w http.ResponseWriter, r *http.Request, q streamQuery, what string,
	buffered func() bool, next func(context.Context, *streamWriter) error, end func(*streamWriter, error)) {
	h := w.Header()
	if q.ndjson {
		h.Set("Content-Type", api.MediaNDJSON)
	} else {
		h.Set("Content-Type", api.MediaSSE)
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	sw := &streamWriter{
		bw:      bufio.NewWriterSize(w, 32<<10),
		rc:      http.NewResponseController(w),
		ndjson:  q.ndjson,
		unnamed: q.unnamed,
	}
	// Headers go out at once, so a client knows the stream is open.
	if !q.ndjson {
		fmt.Fprintf(sw.bw, ": stream of %s\nretry: %d\n\n", what, sseRetryMS)
	}
	if err := sw.flush(); err != nil {
		return
	}
	err := s.pump(r.Context(), sw, buffered, next)
	switch {
	case errors.Is(err, io.EOF):
		sw.flush()
	case r.Context().Err() != nil:
		// The client left or the server is stopping.
	case errors.Is(err, errWrite):
		s.log.Debug("event stream client went away", zap.String("stream", what), zap.Error(err))
	default:
		end(sw, err)
		sw.flush()
	}
}

// pump writes items, flushing whenever none is at hand, and writes a
// keep-alive comment when the stream stays idle.
func (s *server) pump(ctx context.Context, sw *streamWriter, buffered func() bool, next func(context.Context, *streamWriter) error) error {
	for {
		if buffered() {
			if err := next(ctx, sw); err != nil {
				return err
			}
			continue
		}
		if err := sw.flush(); err != nil {
			return err
		}
		for {
			wctx, cancel := context.WithTimeout(ctx, s.keepAlive)
			err := next(wctx, sw)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			if err := sw.keepAlive(); err != nil {
				return err
			}
		}
	}
}

// streamWriter formats items as SSE or NDJSON into a buffer.
type streamWriter struct {
	bw      *bufio.Writer
	rc      *http.ResponseController
	ndjson  bool
	unnamed bool
	scratch []byte
}

// streamEnded names the SSE message that ends a stream for a reason. (Not
// "error": an EventSource fires its own error event when a connection
// ends.)
const streamEnded = "streamEnded"

// write writes one item: data is its JSON (one line), id its SSE id (none
// when empty) and name its SSE event name.
func (sw *streamWriter) write(id, name, data []byte) error {
	b := sw.scratch[:0]
	if bytes.IndexByte(data, '\r') >= 0 {
		// Only whitespace between JSON tokens can hold a raw CR; SSE would
		// read it as a line end.
		data = bytes.ReplaceAll(data, []byte("\r"), nil)
	}
	if sw.ndjson {
		b = append(b, data...)
		b = append(b, '\n')
	} else {
		if len(id) > 0 {
			b = append(b, "id: "...)
			b = append(b, id...)
			b = append(b, '\n')
		}
		if len(name) > 0 && !sw.unnamed {
			b = append(b, "event: "...)
			b = append(b, name...)
			b = append(b, '\n')
		}
		b = append(b, "data: "...)
		b = append(b, data...)
		b = append(b, "\n\n"...)
	}
	sw.scratch = b
	if _, err := sw.bw.Write(b); err != nil {
		return errors.Join(errWrite, err)
	}
	return nil
}

// end writes the item that ends a stream for a reason: an SSE message named
// streamEnded, or an NDJSON line.
func (sw *streamWriter) end(data []byte) {
	sw.write(nil, []byte(streamEnded), data)
}

func (sw *streamWriter) keepAlive() error {
	if sw.ndjson {
		return nil // NDJSON has no comments; TCP keep-alive covers it
	}
	if _, err := sw.bw.WriteString(": keep-alive\n\n"); err != nil {
		return errors.Join(errWrite, err)
	}
	return sw.flush()
}

func (sw *streamWriter) flush() error {
	if err := sw.bw.Flush(); err != nil {
		return errors.Join(errWrite, err)
	}
	if err := sw.rc.Flush(); err != nil {
		return errors.Join(errWrite, err)
	}
	return nil
}
