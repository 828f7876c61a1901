package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// eventsQuery is what a client asked of an event stream.
type eventsQuery struct {
	from   int64
	follow bool
	ndjson bool
}

func parseEventsQuery(r *http.Request) (eventsQuery, error) {
	q := eventsQuery{from: 1, follow: true}
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
		if err != nil || n < 0 {
			return q, wire.Errorf(wire.CodeBadRequest, "Last-Event-ID %q: want a seq", s)
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
	switch f := v.Get("format"); f {
	case "ndjson":
		q.ndjson = true
	case "sse":
	case "":
		q.ndjson = strings.Contains(r.Header.Get("Accept"), api.MediaNDJSON)
	default:
		return q, wire.Errorf(wire.CodeBadRequest, "format=%q: want sse or ndjson", f)
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

	h := w.Header()
	if q.ndjson {
		h.Set("Content-Type", api.MediaNDJSON)
	} else {
		h.Set("Content-Type", api.MediaSSE)
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	ew := &eventWriter{
		bw:     bufio.NewWriterSize(w, 32<<10),
		rc:     http.NewResponseController(w),
		ndjson: q.ndjson,
	}
	// Headers go out at once, so a client knows the stream is open.
	if !q.ndjson {
		ew.bw.WriteString(": stream of session " + id + "\n\n")
	}
	if err := ew.flush(); err != nil {
		return
	}
	err = s.pump(r.Context(), stream, ew)
	switch {
	case errors.Is(err, io.EOF):
		ew.flush()
	case r.Context().Err() != nil:
		// The client left or the server is stopping.
	case errors.Is(err, errWrite):
		s.log.Debug("event stream client went away", zap.String("session", id), zap.Error(err))
	default:
		ew.writeError(err)
		ew.flush()
	}
}

var errWrite = errors.New("write event stream")

// pump copies events to the client, flushing whenever the stream has
// nothing more at hand, and writes a keep-alive comment when it stays idle.
func (s *server) pump(ctx context.Context, stream *supervisor.Stream, ew *eventWriter) error {
	for {
		var ev supervisor.Event
		var err error
		if stream.Buffered() {
			ev, err = stream.Next(ctx)
		} else {
			if ferr := ew.flush(); ferr != nil {
				return ferr
			}
			ev, err = s.nextOrIdle(ctx, stream, ew)
		}
		if err != nil {
			return err
		}
		if err := ew.write(ev); err != nil {
			return err
		}
	}
}

func (s *server) nextOrIdle(ctx context.Context, stream *supervisor.Stream, ew *eventWriter) (supervisor.Event, error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, s.keepAlive)
		ev, err := stream.Next(wctx)
		cancel()
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return ev, err
		}
		if err := ew.keepAlive(); err != nil {
			return ev, err
		}
	}
}

// eventWriter formats events as SSE or NDJSON into a buffer.
type eventWriter struct {
	bw      *bufio.Writer
	rc      *http.ResponseController
	ndjson  bool
	scratch []byte
}

func (ew *eventWriter) write(ev supervisor.Event) error {
	b := ew.scratch[:0]
	line := ev.Line
	if bytes.IndexByte(line, '\r') >= 0 {
		// Only whitespace between JSON tokens can hold a raw CR; SSE would
		// read it as a line end.
		line = bytes.ReplaceAll(line, []byte("\r"), nil)
	}
	if ew.ndjson {
		b = append(b, line...)
		b = append(b, '\n')
	} else {
		b = append(b, "id: "...)
		b = strconv.AppendInt(b, ev.Seq, 10)
		if len(ev.Type) > 0 {
			b = append(b, "\nevent: "...)
			b = append(b, ev.Type...)
		}
		b = append(b, "\ndata: "...)
		b = append(b, line...)
		b = append(b, "\n\n"...)
	}
	ew.scratch = b
	if _, err := ew.bw.Write(b); err != nil {
		return errors.Join(errWrite, err)
	}
	return nil
}

func (ew *eventWriter) keepAlive() error {
	if ew.ndjson {
		return nil // NDJSON has no comments; TCP keep-alive covers it
	}
	if _, err := ew.bw.WriteString(": keep-alive\n\n"); err != nil {
		return errors.Join(errWrite, err)
	}
	return ew.flush()
}

// writeError ends a stream with the reason: an SSE event named error, or
// an NDJSON line without a seq.
func (ew *eventWriter) writeError(err error) {
	raw, _ := json.Marshal(wire.ErrReply(err))
	if ew.ndjson {
		ew.bw.Write(append(raw, '\n'))
		return
	}
	ew.bw.WriteString("event: error\ndata: ")
	ew.bw.Write(raw)
	ew.bw.WriteString("\n\n")
}

func (ew *eventWriter) flush() error {
	if err := ew.bw.Flush(); err != nil {
		return errors.Join(errWrite, err)
	}
	if err := ew.rc.Flush(); err != nil {
		return errors.Join(errWrite, err)
	}
	return nil
}
