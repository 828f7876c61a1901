package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// FeedOptions select what a multiplexed stream carries.
type FeedOptions struct {
	// Sessions keeps only these sessions' items (every session when empty).
	Sessions []string
	// Types keeps only events and lifecycle changes of these types (every
	// type when empty). Stream marks always pass.
	Types []string
	// FromStart sends every session's log from seq 1 first, one session
	// after another (least recently updated first), then a streamLive mark
	// and the live items.
	FromStart bool
	// FromSeq, with FromStart, starts each log at this seq instead of 1.
	FromSeq int64
	// Cursor resumes after the item it names. A cursor the supervisor no
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

// FeedEvent is one item of a Feed. Its slices are valid until the next call
// to Next.
type FeedEvent struct {
	Kind FeedKind
	// Cursor resumes after this item; empty for the backlog.
	Cursor  []byte
	Session string
	// Type is the event's, the lifecycle change's, or the mark's type.
	Type []byte
	Line []byte
}

// AppendJSON appends ev as an api.FeedItem's JSON, without decoding or
// re-encoding the event it carries.
func (ev FeedEvent) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	if len(ev.Cursor) > 0 {
		b = append(b, `"cursor":"`...)
		b = append(b, ev.Cursor...) // hex, a dash and digits: nothing to escape
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

// Feed is one subscriber's multiplexed stream of every session's events and
// lifecycle changes. It is not safe for concurrent use.
type Feed struct {
	m        *Manager
	sessions map[string]bool // nil: all
	types    map[string]bool // nil: all

	pos   uint64           // the next ring item to read
	batch []busItem        // read from the ring, not yet returned
	at    int              // next in batch
	last  map[string]int64 // the backlog's last seq of each session
	from  int64            // the backlog's first seq

	backlog []string // sessions whose logs are still to send
	stream  *Stream  // the log being sent
	current string
	mark    []byte // a mark to send before anything else
	markTyp api.StreamMarkType
	cursor  []byte // the last item's cursor
}

// maxFeedBatch is how many ring items a Feed takes at once.
const maxFeedBatch = 256

// Feed opens a multiplexed stream.
func (m *Manager) Feed(ctx context.Context, opts FeedOptions) (*Feed, error) {
	f := &Feed{m: m, batch: make([]busItem, 0, maxFeedBatch)}
	if len(opts.Sessions) > 0 {
		f.sessions = map[string]bool{}
		for _, id := range opts.Sessions {
			if !validID(id) {
				return nil, wire.Errorf(wire.CodeBadRequest, "session=%q is not a session id", id)
			}
			f.sessions[id] = true
		}
	}
	if len(opts.Types) > 0 {
		f.types = map[string]bool{}
		for _, t := range opts.Types {
			f.types[t] = true
		}
	}
	// The ring position is taken before any log is read: an event not in
	// a log yet is mirrored after it, so it is in the ring past pos.
	f.pos = m.bus.position()
	switch {
	case opts.Cursor != "":
		n, ok := m.bus.parseCursor(opts.Cursor)
		if ok && n < f.pos {
			f.pos = n + 1 // read: the ring may no longer hold it
		} else {
			f.setMark(api.MarkReset, "the cursor "+opts.Cursor+" is not from this run of the supervisor")
		}
	case opts.FromStart:
		ids, err := m.sessionsByAge()
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if f.sessions == nil || f.sessions[id] {
				f.backlog = append(f.backlog, id)
			}
		}
		f.last = map[string]int64{}
		f.from = max(opts.FromSeq, 1)
	}
	return f, nil
}

func (f *Feed) setMark(typ api.StreamMarkType, reason string) {
	f.mark, _ = json.Marshal(api.StreamMark{Type: typ, Reason: reason})
	f.markTyp = typ
}

// Next returns the next item: the backlog's events, then the ring's. It
// returns the supervisor's end (unavailable at shutdown) when it stops.
func (f *Feed) Next(ctx context.Context) (FeedEvent, error) {
	for {
		if f.mark != nil {
			ev := FeedEvent{Kind: FeedMark, Cursor: f.cursorOf(f.pos - 1), Type: []byte(f.markTyp), Line: f.mark}
			f.mark = nil
			return ev, nil
		}
		if f.backlog != nil {
			ev, ok, err := f.nextBacklog(ctx)
			if err != nil || ok {
				return ev, err
			}
			continue
		}
		if f.at < len(f.batch) {
			it := &f.batch[f.at]
			f.at++
			if !f.wanted(it) {
				continue
			}
			ev := FeedEvent{Kind: FeedSessionEvent, Cursor: f.cursorOf(it.n), Session: it.session, Type: it.typ, Line: it.line}
			if it.life {
				ev.Kind = FeedLifecycle
			}
			return ev, nil
		}
		items, lapped, wait, err := f.m.bus.read(f.pos, f.batch[:0])
		switch {
		case err != nil:
			return FeedEvent{}, err
		case lapped:
			f.pos = f.m.bus.position()
			f.setMark(api.MarkReset, "the supervisor no longer holds the items after this stream's position: it resumed from an old cursor or fell too far behind")
			continue
		case len(items) > 0:
			f.batch, f.at = items, 0
			f.pos = items[len(items)-1].n + 1
			continue
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return FeedEvent{}, ctx.Err()
		}
	}
}

// cursorOf is item n's cursor, in a buffer the next call reuses.
func (f *Feed) cursorOf(n uint64) []byte {
	f.cursor = f.m.bus.appendCursor(f.cursor[:0], n)
	return f.cursor
}

// wanted filters a ring item, dropping what the backlog already sent.
func (f *Feed) wanted(it *busItem) bool {
	if f.sessions != nil && !f.sessions[it.session] {
		return false
	}
	if f.types != nil && !f.types[string(it.typ)] {
		return false
	}
	if !it.life && f.last != nil && (it.seq <= f.last[it.session] || it.seq < f.from) {
		return false
	}
	return true
}

// nextBacklog returns the next event of the backlog, or ok false once a
// log has ended (or the backlog, with its streamLive mark queued).
func (f *Feed) nextBacklog(ctx context.Context) (FeedEvent, bool, error) {
	if f.stream == nil {
		if len(f.backlog) == 0 {
			f.backlog = nil
			f.setMark(api.MarkLive, "")
			return FeedEvent{}, false, nil
		}
		f.current = f.backlog[0]
		f.backlog = f.backlog[1:]
		f.stream = newStream(filepath.Join(f.m.dir(f.current), eventsFile), nil, f.from, 0, f.m.cfg.MaxLine, f.m.log.With(zap.String("session", f.current)))
	}
	for {
		ev, err := f.stream.Next(ctx)
		if errors.Is(err, io.EOF) {
			f.stream.Close()
			f.stream = nil
			return FeedEvent{}, false, nil
		}
		if err != nil {
			return FeedEvent{}, false, err
		}
		f.last[f.current] = ev.Seq
		if f.types != nil && !f.types[string(ev.Type)] {
			continue
		}
		return FeedEvent{Kind: FeedSessionEvent, Session: f.current, Type: ev.Type, Line: ev.Line}, true, nil
	}
}

// Buffered reports whether Next has an item at hand without waiting, so a
// writer knows when to flush. Ring items the filters drop do not count:
// a batch whose rest is filtered out would otherwise keep the items
// already written unflushed until the next wanted one.
func (f *Feed) Buffered() bool {
	for f.at < len(f.batch) && !f.wanted(&f.batch[f.at]) {
		f.at++
	}
	if f.mark != nil || f.at < len(f.batch) {
		return true
	}
	return f.backlog != nil && (f.stream == nil || f.stream.Buffered())
}

// Close releases the log being read.
func (f *Feed) Close() error {
	if f.stream != nil {
		return f.stream.Close()
	}
	return nil
}

// sessionsByAge lists the session ids, least recently updated first.
func (m *Manager) sessionsByAge() ([]string, error) {
	des, err := os.ReadDir(m.sessions)
	if err != nil {
		return nil, err
	}
	type aged struct {
		id  string
		key int64
	}
	var list []aged
	for _, de := range des {
		if !de.IsDir() || !validID(de.Name()) {
			continue
		}
		dir := m.dir(de.Name())
		if _, err := os.Stat(filepath.Join(dir, metaFile)); err != nil {
			continue
		}
		list = append(list, aged{de.Name(), updatedAt(dir).UnixNano()})
	}
	slices.SortStableFunc(list, func(a, b aged) int {
		if a.key != b.key {
			if a.key < b.key {
				return -1
			}
			return 1
		}
		if a.id < b.id {
			return -1
		}
		return 1
	})
	ids := make([]string, len(list))
	for i, a := range list {
		ids[i] = a.id
	}
	return ids, nil
}

// publishLife tells the feed about a change in session id's life.
func (m *Manager) publishLife(id string, l api.Lifecycle) {
	l.TS = time.Now().UTC()
	line, err := json.Marshal(l)
	if err != nil {
		m.log.Error("encode lifecycle", zap.Error(err))
		return
	}
	m.bus.publish(busItem{session: id, typ: []byte(l.Type), line: line, life: true})
}
