package supervisor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/corral-dev/corral/internal/eventstream"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// The multiplexed stream's shapes, shared with the fleet's
// (internal/eventstream).
type (
	FeedOptions = eventstream.FeedOptions
	FeedKind    = eventstream.FeedKind
	FeedEvent   = eventstream.FeedEvent
)

// Kinds of feed items.
const (
	FeedSessionEvent = eventstream.FeedSessionEvent
	FeedLifecycle    = eventstream.FeedLifecycle
	FeedMark         = eventstream.FeedMark
)

// Feed is one subscriber's multiplexed stream of every session's events and
// lifecycle changes. It is not safe for concurrent use.
type Feed struct {
	m        *Manager
	sessions map[string]bool // nil: all
	types    map[string]bool // nil: all

	pos   uint64    // the next ring item to read
	batch []busItem // read from the ring, not yet returned
	at    int       // next in batch

	// head is what comes before live items: a mark, the backlog.
	head   eventstream.Head
	cursor []byte // the last item's cursor
}

// maxFeedBatch is how many ring items a Feed takes at once.
const maxFeedBatch = 256

// Feed opens a multiplexed stream. From the start, the sessions' logs come
// least recently updated first.
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
			f.head.SetMark(api.MarkReset, "the cursor "+opts.Cursor+" is not from this run of the supervisor")
		}
	case opts.FromStart:
		ids, err := m.sessionsByAge()
		if err != nil {
			return nil, err
		}
		var backlog []string
		for _, id := range ids {
			if f.sessions == nil || f.sessions[id] {
				backlog = append(backlog, id)
			}
		}
		f.head.SetBacklog(eventstream.NewBacklog(backlog, opts.FromSeq, f.types, m.openLog))
	}
	return f, nil
}

// openLog reads session id's log from seq from to its end.
func (m *Manager) openLog(_ context.Context, id string, from int64) (eventstream.Stream, error) {
	return newStream(filepath.Join(m.dir(id), eventsFile), nil, from, 0, m.cfg.MaxLine, m.log.With(zap.String("session", id))), nil
}

// Next returns the next item: the backlog's events, then the ring's. It
// returns the supervisor's end (unavailable at shutdown) when it stops.
func (f *Feed) Next(ctx context.Context) (FeedEvent, error) {
	for {
		if f.head.Pending() {
			ev, ok, err := f.head.Next(ctx)
			if ok && ev.Kind == FeedMark {
				ev.Cursor = f.cursorOf(f.pos - 1)
			}
			if ok || err != nil {
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
			f.head.SetMark(api.MarkReset, "the supervisor no longer holds the items after this stream's position: it resumed from an old cursor or fell too far behind")
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
	if !it.life && f.head.Sent(it.session, it.seq) {
		return false
	}
	return true
}

// Buffered reports whether Next has an item at hand without waiting, so a
// writer knows when to flush. Ring items the filters drop do not count:
// a batch whose rest is filtered out would otherwise keep the items
// already written unflushed until the next wanted one.
func (f *Feed) Buffered() bool {
	for f.at < len(f.batch) && !f.wanted(&f.batch[f.at]) {
		f.at++
	}
	return f.at < len(f.batch) || f.head.Buffered()
}

// Close releases the log being read.
func (f *Feed) Close() error { return f.head.Close() }

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
