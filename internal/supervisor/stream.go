package supervisor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// Stream reads a session's events in seq order from a starting seq: first
// from events.jsonl, then, when following, live as the runner mirrors them.
//
// It joins the live feed only once it has read the log to its end, and then
// reads the log again up to the last event the feed had already carried, so
// nothing published before it joined is lost; events at or below the last
// seq it delivered are dropped, so nothing is repeated. A subscriber cut
// off the feed for being slow goes back to reading the log and rejoins when
// it has caught up. Stream is not safe for concurrent use.
type Stream struct {
	path    string
	hub     *hub // nil when not following
	bufSize int
	maxLine int
	lagWait time.Duration
	log     *zap.Logger

	f        *os.File
	buf      []byte
	start    int  // offset in buf of the next unread byte
	skipping bool // discarding an oversized line up to its newline

	next     int64 // lowest seq not yet delivered
	sub      *subscription
	want     int64 // the log must reach this seq before the stream goes live
	held     Event // a live event that arrived ahead of the log
	haveHeld bool
	live     bool
	lagSince time.Time
	cuts     int // times the stream was cut off the live feed
}

// newStream reads the log at path from seq from; with a hub it follows.
func newStream(path string, h *hub, from int64, bufSize, maxLine int, log *zap.Logger) *Stream {
	return &Stream{
		path:    path,
		hub:     h,
		bufSize: bufSize,
		maxLine: maxLine,
		lagWait: time.Second,
		log:     log,
		buf:     make([]byte, 0, 64<<10),
		next:    max(from, 1),
	}
}

// Next returns the next event. Its slices are valid until the next call.
// It returns io.EOF at the end of the log when not following, and the
// session's end (deletion, shutdown) as an error when following.
func (s *Stream) Next(ctx context.Context) (Event, error) {
	for {
		if s.live {
			ev, ok, err := s.nextLive(ctx)
			if err != nil || ok {
				return ev, err
			}
			continue
		}
		ev, ok, err := s.readLine()
		if err != nil {
			return Event{}, err
		}
		if ok {
			if ev.Seq < s.next {
				continue
			}
			s.next = ev.Seq + 1
			return ev, nil
		}
		// The log has nothing more for now.
		if s.hub == nil {
			return Event{}, io.EOF
		}
		if s.sub == nil {
			sub, last, err := s.hub.subscribe(s.bufSize)
			if err != nil {
				return Event{}, err
			}
			s.sub, s.want = sub, last
			continue // the log may have grown up to last meanwhile
		}
		target := s.want
		if s.haveHeld && s.held.Seq-1 > target {
			target = s.held.Seq - 1
		}
		if s.next <= target {
			// The runner writes an event before it mirrors it, so the
			// log lags the feed only for an instant; wait for it rather
			// than open a gap.
			if err := s.waitForLog(ctx, target); err != nil {
				return Event{}, err
			}
			continue
		}
		s.lagSince = time.Time{}
		s.live = true
		if s.haveHeld {
			s.haveHeld = false
			if s.held.Seq >= s.next {
				s.next = s.held.Seq + 1
				return s.held, nil
			}
		}
	}
}

func (s *Stream) nextLive(ctx context.Context) (Event, bool, error) {
	select {
	case ev := <-s.sub.ch:
		switch {
		case ev.Seq < s.next:
			return Event{}, false, nil
		case ev.Seq > s.next:
			// Ahead of what was delivered: fill the gap from the log.
			s.held, s.haveHeld, s.live = ev, true, false
			return Event{}, false, nil
		}
		s.next++
		return ev, true, nil
	case <-s.sub.cut:
		if err := s.hub.err(); err != nil {
			return Event{}, false, err
		}
		// Too slow for the live feed: catch up from the log.
		s.sub, s.live = nil, false
		s.cuts++
		return Event{}, false, nil
	case <-ctx.Done():
		return Event{}, false, ctx.Err()
	}
}

func (s *Stream) waitForLog(ctx context.Context, target int64) error {
	if s.lagSince.IsZero() {
		s.lagSince = time.Now()
	}
	if time.Since(s.lagSince) > s.lagWait {
		s.log.Warn("event log lacks mirrored events; skipping them",
			zap.String("log", s.path), zap.Int64("from", s.next), zap.Int64("to", target))
		s.next = target + 1
		s.lagSince = time.Time{}
		return nil
	}
	if err := s.hub.err(); err != nil {
		return err
	}
	t := time.NewTimer(time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Buffered reports whether Next has an event at hand without waiting, so a
// writer knows when to flush.
func (s *Stream) Buffered() bool {
	if s.live {
		return len(s.sub.ch) > 0
	}
	return s.haveHeld || bytes.IndexByte(s.buf[s.start:], '\n') >= 0
}

// Close releases the stream's file and subscription.
func (s *Stream) Close() error {
	if s.sub != nil {
		s.hub.unsubscribe(s.sub)
		s.sub = nil
	}
	if s.f != nil {
		err := s.f.Close()
		s.f = nil
		return err
	}
	return nil
}

// readLine returns the next complete line of the log. Only newline
// terminated lines are events: a line being written is left for later.
func (s *Stream) readLine() (Event, bool, error) {
	for {
		rest := s.buf[s.start:]
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line := bytes.TrimSuffix(rest[:i], []byte("\r"))
			s.start += i + 1
			if s.skipping {
				s.skipping = false
				continue
			}
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			if len(line) > s.maxLine {
				s.log.Warn("skipping oversized event line", zap.String("log", s.path), zap.Int("limit", s.maxLine))
				continue
			}
			seq, typ, err := wire.ScanEvent(line)
			if err != nil {
				s.log.Warn("skipping unreadable event line", zap.String("log", s.path), zap.Error(err))
				continue
			}
			return Event{Seq: seq, Type: typ, Line: line}, true, nil
		}
		more, err := s.fill()
		if err != nil || !more {
			return Event{}, false, err
		}
	}
}

// fill reads more of the log into buf, reporting whether it got any.
func (s *Stream) fill() (bool, error) {
	if s.f == nil {
		f, err := os.Open(s.path)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil // no event yet
		}
		if err != nil {
			return false, fmt.Errorf("open event log: %w", err)
		}
		s.f = f
	}
	// Keep the partial line, drop what was consumed.
	n := copy(s.buf, s.buf[s.start:])
	s.buf, s.start = s.buf[:n], 0
	if len(s.buf) >= s.maxLine {
		if !s.skipping {
			s.log.Warn("skipping oversized event line", zap.String("log", s.path), zap.Int("limit", s.maxLine))
		}
		s.buf, s.skipping = s.buf[:0], true
	}
	if len(s.buf) == cap(s.buf) {
		grown := make([]byte, len(s.buf), 2*cap(s.buf))
		copy(grown, s.buf)
		s.buf = grown
	}
	m, err := s.f.Read(s.buf[len(s.buf):cap(s.buf)])
	s.buf = s.buf[:len(s.buf)+m]
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read event log: %w", err)
	}
	if m == 0 && s.replaced() {
		// A runner that repaired the log renamed a new file over it:
		// read that one from its start; the seqs already delivered are
		// skipped.
		s.f.Close()
		s.f, s.buf, s.start, s.skipping = nil, s.buf[:0], 0, false
		return s.fill()
	}
	return m > 0, nil
}

// replaced reports whether the log's path now names another file than the
// one being read.
func (s *Stream) replaced() bool {
	open, err := s.f.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(s.path)
	return err == nil && !os.SameFile(open, now)
}
