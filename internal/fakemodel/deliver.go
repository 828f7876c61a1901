package fakemodel

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// sseEvent is one server-sent event. Chat Completions events have no name.
type sseEvent struct {
	name string
	data []byte
}

func (e sseEvent) writeTo(w io.Writer) error {
	if e.name != "" {
		if _, err := fmt.Fprintf(w, "event: %s\n", e.name); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "data: %s\n\n", e.data)
	return err
}

// deliver sends a, applying the step's delay, hold, cut, hang and stream
// error, and reports the status sent and how the answer ended.
func (s *Server) deliver(ctx context.Context, w http.ResponseWriter, a answer) (int, string) {
	if !a.stream {
		return s.deliverBody(ctx, w, a)
	}
	st := a.step
	rc := http.NewResponseController(w)
	started := false
	begin := func() {
		if !started {
			started = true
			for name, values := range a.header {
				w.Header()[name] = values
			}
			w.WriteHeader(a.status)
		}
	}
	flush := func() error {
		begin()
		return rc.Flush()
	}
	// sent is the status the client got, 0 if the answer never started.
	sent := func() int {
		if started {
			return a.status
		}
		return 0
	}
	// Each control point is clamped to the number of events, so "after 99
	// events" on a shorter stream means after the last one.
	at := func(n int) int { return min(n, len(a.events)) }

	for i := 0; i <= len(a.events); i++ {
		if a.gate != nil && i == at(st.HoldAfter) {
			if i > 0 {
				if err := flush(); err != nil {
					return sent(), s.gone()
				}
			}
			if outcome := s.hold(ctx, a.gate); outcome != "" {
				return sent(), outcome
			}
		}
		if st.CutAfter != nil && i == at(*st.CutAfter) {
			_ = flush()
			return sent(), cutConnection(w)
		}
		if st.HangAfter != nil && i == at(*st.HangAfter) {
			if err := flush(); err != nil {
				return sent(), s.gone()
			}
			return sent(), s.waitGone(ctx)
		}
		if a.streamErr != nil && i == at(st.StreamError.AfterEvents) {
			begin()
			if err := a.streamErr.writeTo(w); err != nil {
				return sent(), s.gone()
			}
			if err := flush(); err != nil {
				return sent(), s.gone()
			}
			return sent(), OutcomeStreamError
		}
		if i == len(a.events) {
			break
		}
		if outcome := s.sleep(ctx, time.Duration(st.Delay)); outcome != "" {
			return sent(), outcome
		}
		begin()
		if err := a.events[i].writeTo(w); err != nil {
			return sent(), s.gone()
		}
		if err := flush(); err != nil {
			return sent(), s.gone()
		}
	}
	return sent(), OutcomeCompleted
}

// deliverBody sends a non-streaming answer: an error or a JSON reply.
func (s *Server) deliverBody(ctx context.Context, w http.ResponseWriter, a answer) (int, string) {
	st := a.step
	if a.gate != nil {
		if outcome := s.hold(ctx, a.gate); outcome != "" {
			return 0, outcome
		}
	}
	switch {
	case st.CutAfter != nil:
		return 0, cutConnection(w)
	case st.HangAfter != nil:
		return 0, s.waitGone(ctx)
	}
	if outcome := s.sleep(ctx, time.Duration(st.Delay)); outcome != "" {
		return 0, outcome
	}
	for name, values := range a.header {
		w.Header()[name] = values
	}
	w.WriteHeader(a.status)
	if _, err := w.Write(a.body); err != nil {
		return a.status, s.gone()
	}
	if a.status >= 400 {
		return a.status, OutcomeError
	}
	return a.status, OutcomeCompleted
}

// cutConnection closes the connection under the response, so the client
// sees the body end without its terminating chunk, as when a real server or
// proxy dies mid-answer.
func cutConnection(w http.ResponseWriter) string {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2 or a recorder: ending the handler is as close as it gets.
		return OutcomeCut
	}
	_ = conn.Close()
	return OutcomeCut
}

// sleep waits d unless the client goes away or the server closes first; it
// returns the outcome that cut it short, or "".
func (s *Server) sleep(ctx context.Context, d time.Duration) string {
	if d <= 0 {
		return ""
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ""
	case <-ctx.Done():
		return s.gone()
	case <-s.closing:
		return OutcomeServerClosed
	}
}

// waitGone keeps a connection open until the client goes away or the
// server closes.
func (s *Server) waitGone(ctx context.Context) string {
	select {
	case <-ctx.Done():
		return s.gone()
	case <-s.closing:
		return OutcomeServerClosed
	}
}

// gone is the outcome of an answer that could not go on: the server's
// closing, if it has begun (closing the server also breaks the connections),
// else the client's leaving.
func (s *Server) gone() string {
	select {
	case <-s.closing:
		return OutcomeServerClosed
	default:
		return OutcomeClientGone
	}
}
