// Package eventstream holds what every reader of session events shares,
// wherever the events come from (a supervisor's session folders, or a
// fleet's event replica): a session's event and its stream, the
// multiplexed feed's options and items, and the feed's backlog, which
// sends each session's log from the start before the live items.
package eventstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/corral-dev/corral/pkg/api"
)

// Event is one event of a session, as its stream yields it.
type Event struct {
	Seq int64
	// Type is the event's type, a sub-slice of Line.
	Type []byte
	// Line is the event exactly as events.jsonl holds it, without the
	// newline.
	Line []byte
}

// Stream is one session's events in seq order. Next's slices are valid
// until the next call; Buffered says whether Next has one at hand without
// waiting.
type Stream interface {
	Next(ctx context.Context) (Event, error)
	Buffered() bool
	Close() error
}

// FeedOptions select what a multiplexed stream carries.
type FeedOptions struct {
	// Sessions keeps only these sessions' items (every session when empty).
	Sessions []string
	// Types keeps only events and lifecycle changes of these types (every
	// type when empty). Stream marks always pass.
	Types []string
	// FromStart sends every session's log from seq 1 first, one session
	// after another, then a streamLive mark and the live items.
	FromStart bool
	// FromSeq, with FromStart, starts each log at this seq instead of 1.
	FromSeq int64
	// Cursor resumes after the item it names. A cursor the stream no
	// longer holds gets a streamReset mark, then live items.
	Cursor string
}

// FeedKind says what a FeedEvent carries.
type FeedKind uint8

// Kinds of feed items.
const (
	FeedSessionEvent FeedKind = iota // Line is a session's event line
	FeedLifecycle                    // Line is an api.Lifecycle
	FeedMark                         // Line is an api.StreamMark
)

// FeedEvent is one item of a multiplexed stream. Its slices are valid
// until the next call to the stream's Next.
type FeedEvent struct {
	Kind FeedKind
	// Cursor resumes after this item; empty for the backlog.
	Cursor  []byte
	Session string
	// Type is the event's, the lifecycle change's, or the mark's type.
	Type []byte
	Line []byte
}

// Mark is a stream mark's item, without a cursor.
func Mark(typ api.StreamMarkType, reason string) FeedEvent {
	line, _ := json.Marshal(api.StreamMark{Type: typ, Reason: reason})
	return FeedEvent{Kind: FeedMark, Type: []byte(typ), Line: line}
}

// AppendJSON appends ev as an api.FeedItem's JSON, without decoding or
// re-encoding the event it carries.
func (ev FeedEvent) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	if len(ev.Cursor) > 0 {
		b = append(b, `"cursor":"`...)
		b = append(b, ev.Cursor...) // the streams' cursors: nothing to escape
		b = append(b, `",`...)
	}
	if ev.Session != "" {
		b = append(b, `"session":"`...)
		b = append(b, ev.Session...) // a session id: nothing to escape
		b = append(b, `",`...)
	}
	switch ev.Kind {
	case FeedLifecycle:
		b = append(b, `"lifecycle":`...)
	case FeedMark:
		b = append(b, `"stream":`...)
	default:
		b = append(b, `"event":`...)
	}
	b = append(b, ev.Line...)
	return append(b, '}')
}

// Feed is a multiplexed stream, as Stream is a session's.
type Feed interface {
	Next(ctx context.Context) (FeedEvent, error)
	Buffered() bool
	Close() error
}

// Backlog is the from-start part of a multiplexed stream: each session's
// log in turn, from a first seq on. The live part that follows drops what
// the backlog already sent (Sent). It is not safe for concurrent use.
type Backlog struct {
	open    func(ctx context.Context, session string, from int64) (Stream, error)
	types   map[string]bool // empty: every type
	pending []string
	from    int64
	last    map[string]int64 // the last seq read of each session's log
	stream  Stream
	current string
}

// NewBacklog sends the logs of sessions in their order, each from seq from
// (1 when lower), opened by open; types, when not empty, keeps only the
// events of those types.
func NewBacklog(sessions []string, from int64, types map[string]bool, open func(ctx context.Context, session string, from int64) (Stream, error)) *Backlog {
	return &Backlog{open: open, types: types, pending: sessions, from: max(from, 1), last: map[string]int64{}}
}

// Next returns the next wanted event of the backlog and its session, or
// io.EOF once every log has been read.
func (b *Backlog) Next(ctx context.Context) (session string, ev Event, err error) {
	for {
		if b.stream == nil {
			if len(b.pending) == 0 {
				return "", Event{}, io.EOF
			}
			s, err := b.open(ctx, b.pending[0], b.from)
			if err != nil {
				return "", Event{}, err
			}
			b.current, b.pending, b.stream = b.pending[0], b.pending[1:], s
		}
		ev, err := b.stream.Next(ctx)
		if errors.Is(err, io.EOF) {
			b.stream.Close()
			b.stream = nil
			continue
		}
		if err != nil {
			return "", Event{}, err
		}
		b.last[b.current] = ev.Seq
		if len(b.types) > 0 && !b.types[string(ev.Type)] {
			continue
		}
		return b.current, ev, nil
	}
}

// Sent reports whether the backlog has sent, or was not to send, event seq
// of session: a live item that the stream drops.
func (b *Backlog) Sent(session string, seq int64) bool {
	return seq <= b.last[session] || seq < b.from
}

// Buffered reports whether Next has an event at hand without waiting (a
// log yet to open counts: opening it does not wait for events).
func (b *Backlog) Buffered() bool {
	return b.stream == nil || b.stream.Buffered()
}

// Close releases the log being read.
func (b *Backlog) Close() error {
	if b.stream == nil {
		return nil
	}
	err := b.stream.Close()
	b.stream = nil
	return err
}

// Head is what a multiplexed stream sends before its next live item: a
// stream mark it owes (a reset, say), and from the start, the backlog and
// then its streamLive mark. The zero Head owes nothing. It is not safe for
// concurrent use.
type Head struct {
	mark      FeedEvent
	haveMark  bool
	backlog   *Backlog
	inBacklog bool
}

// SetMark owes a stream mark, sent before anything else.
func (h *Head) SetMark(typ api.StreamMarkType, reason string) {
	h.mark, h.haveMark = Mark(typ, reason), true
}

// SetBacklog sends b's logs, then a streamLive mark, before live items.
func (h *Head) SetBacklog(b *Backlog) { h.backlog, h.inBacklog = b, true }

// Pending reports whether the head has items left to send: the live items
// wait until it has none.
func (h *Head) Pending() bool { return h.haveMark || h.inBacklog }

// Next returns the head's next item, or ok false when it has none left.
func (h *Head) Next(ctx context.Context) (ev FeedEvent, ok bool, err error) {
	if h.haveMark {
		h.haveMark = false
		return h.mark, true, nil
	}
	if !h.inBacklog {
		return FeedEvent{}, false, nil
	}
	session, e, err := h.backlog.Next(ctx)
	switch {
	case errors.Is(err, io.EOF):
		h.inBacklog = false
		return Mark(api.MarkLive, ""), true, nil
	case err != nil:
		return FeedEvent{}, false, err
	}
	return FeedEvent{Kind: FeedSessionEvent, Session: session, Type: e.Type, Line: e.Line}, true, nil
}

// Sent reports whether a live event is one the stream drops: the backlog
// sent it, or it precedes the backlog's first seq.
func (h *Head) Sent(session string, seq int64) bool {
	return h.backlog != nil && h.backlog.Sent(session, seq)
}

// Buffered reports whether Next has an item at hand without waiting.
func (h *Head) Buffered() bool {
	return h.haveMark || h.inBacklog && h.backlog.Buffered()
}

// Close releases the log being read.
func (h *Head) Close() error {
	if h.backlog == nil {
		return nil
	}
	return h.backlog.Close()
}
