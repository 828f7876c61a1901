package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/internal/eventstream"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The fleet's multiplexed stream (GET /v1/events on any node) reads the
// event replica, where every session's events are whichever node owns
// it, and the sessions' lifecycle changes, which each node publishes
// there too (<fleet>.life.<session>). An item's cursor is its place in
// the replica, "fleet-<stream seq>-<line>", so a subscriber resumes from
// it on any node, across restarts.

// FeedOptions select what the fleet's multiplexed stream carries, as they
// do a supervisor's.
type FeedOptions = eventstream.FeedOptions

const cursorPrefix = "fleet-"

// PublishLifecycle puts a lifecycle change of session into the replica.
func (n *Node) PublishLifecycle(ctx context.Context, session string, line []byte) error {
	if !validToken(session) {
		return wire.Errorf(wire.CodeBadRequest, "%q is not a session id", session)
	}
	_, err := n.f.js.PublishMsgAsync(&nats.Msg{Subject: n.f.names.life(session), Data: line})
	return err
}

// Feed opens the fleet's multiplexed stream.
func (n *Node) Feed(ctx context.Context, opts FeedOptions) (*Feed, error) {
	f := &Feed{n: n, types: map[string]bool{}}
	for _, t := range opts.Types {
		f.types[t] = true
	}
	var filters []string
	for _, id := range opts.Sessions {
		if !validToken(id) {
			return nil, wire.Errorf(wire.CodeBadRequest, "session=%q is not a session id", id)
		}
		filters = append(filters, n.f.names.sessionEvents(id), n.f.names.life(id))
	}
	if len(filters) == 0 {
		filters = []string{n.f.names.allEvents(), n.f.names.allLife()}
	}
	var info *jetstream.StreamInfo
	err := n.f.retry(ctx, func(ctx context.Context) error {
		var err error
		info, err = n.f.events.Info(ctx)
		return err
	})
	if err != nil {
		return nil, replicaUnavailable(err)
	}
	start := info.State.LastSeq + 1
	switch {
	case opts.Cursor != "":
		seq, line, ok := parseCursor(opts.Cursor)
		if ok && seq >= info.State.FirstSeq && seq <= info.State.LastSeq {
			start, f.skipSeq, f.skipLines = seq, seq, line+1
		} else {
			f.head.SetMark(api.MarkReset, "the cursor "+opts.Cursor+" is not one the fleet's event replica still holds")
		}
	case opts.FromStart:
		ids := opts.Sessions
		if len(ids) == 0 {
			for _, rec := range n.Records() {
				ids = append(ids, rec.ID)
			}
			slices.Sort(ids)
		}
		f.head.SetBacklog(eventstream.NewBacklog(ids, opts.FromSeq, f.types, func(ctx context.Context, id string, from int64) (EventStream, error) {
			return n.f.Replay(ctx, id, from, false)
		}))
	}
	if f.src, err = n.f.follow(ctx, filters, start); err != nil {
		return nil, replicaUnavailable(err)
	}
	return f, nil
}

func parseCursor(c string) (seq uint64, line int, ok bool) {
	rest, found := strings.CutPrefix(c, cursorPrefix)
	if !found {
		return 0, 0, false
	}
	s, l, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, false
	}
	seq, err1 := strconv.ParseUint(s, 10, 64)
	line, err2 := strconv.Atoi(l)
	return seq, line, err1 == nil && err2 == nil && seq > 0 && line >= 0
}

// Feed is one subscriber's stream of the fleet. Not safe for concurrent
// use.
type Feed struct {
	n     *Node
	types map[string]bool
	src   *follower

	// head is what comes before live items: a mark, or from the start
	// each session's log from the replica (live items past what it
	// delivered follow).
	head eventstream.Head

	// From a cursor: the lines of its message up to it are skipped.
	skipSeq   uint64
	skipLines int

	// The current live message.
	msgSeq  uint64
	session string
	life    bool
	lines   []byte
	line    int
	long    []byte
	cursor  []byte // the last item's cursor
}

// Next returns the next item.
func (f *Feed) Next(ctx context.Context) (eventstream.FeedEvent, error) {
	for {
		if f.head.Pending() {
			ev, ok, err := f.head.Next(ctx)
			if ok || err != nil {
				return ev, err
			}
			continue
		}
		if it, ok := f.nextLine(); ok {
			return it, nil
		}
		msg, err := f.src.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return eventstream.FeedEvent{}, ctx.Err()
			}
			return eventstream.FeedEvent{}, replicaUnavailable(err)
		}
		f.take(msg)
	}
}

// take reads a live message of the replica.
func (f *Feed) take(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		return
	}
	f.msgSeq, f.line, f.lines = meta.Sequence.Stream, 0, nil
	subject := msg.Subject()
	if id, ok := strings.CutPrefix(subject, f.n.f.names.life("")); ok {
		f.session, f.life, f.lines = id, true, msg.Data()
		return
	}
	rest, ok := strings.CutPrefix(subject, f.n.f.names.fleet+".ev.")
	if !ok {
		return
	}
	f.session, _, _ = strings.Cut(rest, ".")
	f.life = false
	_, _, part, parts, err := replicaHeaders(msg.Headers())
	if err != nil {
		return
	}
	if parts == 0 {
		f.lines = msg.Data()
		return
	}
	if part == 1 {
		f.long = f.long[:0]
	}
	f.long = append(f.long, msg.Data()...)
	if part == parts {
		f.lines = f.long
	}
}

// nextLine returns the next wanted item of the current message.
func (f *Feed) nextLine() (eventstream.FeedEvent, bool) {
	for len(f.lines) > 0 {
		var line []byte
		if f.life {
			line, f.lines = f.lines, nil
		} else {
			if i := bytes.IndexByte(f.lines, '\n'); i >= 0 {
				line, f.lines = f.lines[:i], f.lines[i+1:]
			} else {
				line, f.lines = f.lines, nil
			}
		}
		n := f.line
		f.line++
		if f.msgSeq == f.skipSeq && n < f.skipLines {
			continue
		}
		var typ []byte
		if f.life {
			var l struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(line, &l) != nil {
				continue
			}
			typ = []byte(l.Type)
		} else {
			seq, t, err := wire.ScanEvent(line)
			if err != nil {
				continue
			}
			if f.head.Sent(f.session, seq) {
				continue // the backlog sent it
			}
			typ = t
		}
		if len(f.types) > 0 && !f.types[string(typ)] {
			continue
		}
		f.cursor = append(f.cursor[:0], cursorPrefix...)
		f.cursor = strconv.AppendUint(f.cursor, f.msgSeq, 10)
		f.cursor = append(f.cursor, '-')
		f.cursor = strconv.AppendInt(f.cursor, int64(n), 10)
		it := eventstream.FeedEvent{Kind: eventstream.FeedSessionEvent, Cursor: f.cursor, Session: f.session, Type: typ, Line: line}
		if f.life {
			it.Kind = eventstream.FeedLifecycle
		}
		return it, true
	}
	return eventstream.FeedEvent{}, false
}

// Buffered reports whether Next has an item at hand without waiting.
func (f *Feed) Buffered() bool {
	return len(f.lines) > 0 || f.head.Buffered()
}

// Close ends the stream.
func (f *Feed) Close() error {
	f.head.Close()
	f.src.Stop()
	return nil
}
