package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// fakeSource is an in-memory supervisor: sessions with event logs that
// grow while streams follow them, as the API's streams behave.
type fakeSource struct {
	mu      sync.Mutex
	logs    map[string]*fakeLog
	order   []string
	changed chan struct{} // closed and replaced on every change
	// failAt makes the next followed stream of a session fail, once, just
	// before it would deliver that seq.
	failAt map[string]int64
	opens  int // streams opened
}

type fakeLog struct {
	events  []event.Event
	deleted bool
}

func newFakeSource() *fakeSource {
	return &fakeSource{logs: make(map[string]*fakeLog), changed: make(chan struct{}), failAt: make(map[string]int64)}
}

// add appends events to a session's log, creating the session.
func (s *fakeSource) add(id string, evs ...ev) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logs[id]
	if !ok {
		l = &fakeLog{}
		s.logs[id] = l
		s.order = append(s.order, id)
	}
	for _, e := range evs {
		seq := int64(len(l.events) + 1)
		w := event.Event{Seq: seq, TS: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC).Add(time.Duration(seq) * time.Second), Type: event.Type(e.typ)}
		if e.data != "" {
			w.Data = json.RawMessage(e.data)
		}
		l.events = append(l.events, w)
	}
	s.notify()
}

func (s *fakeSource) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logs[id].deleted = true
	s.notify()
}

func (s *fakeSource) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *fakeSource) Sessions(ctx context.Context) ([]api.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []api.Session
	for i, id := range s.order {
		if !s.logs[id].deleted {
			out = append(out, api.Session{ID: id, UpdatedAt: time.Unix(int64(i), 0)})
		}
	}
	return out, nil
}

func (s *fakeSource) Events(ctx context.Context, id string, from int64, follow bool) (EventReader, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.logs[id]; !ok || l.deleted {
		return nil, wire.Errorf(wire.CodeNotFound, "session %s not found", id)
	}
	s.opens++
	st := &fakeStream{src: s, ctx: ctx, id: id, next: max(from, 1), follow: follow}
	if at, ok := s.failAt[id]; ok && follow {
		st.failAt = at
		delete(s.failAt, id)
	}
	return st, nil
}

// Feed is the multiplexed stream from the start of every log: the
// backlogs one session after another, a streamLive mark, then live events
// (a new session's from its first) and deletions, as the supervisor's.
func (s *fakeSource) Feed(ctx context.Context) (FeedReader, error) {
	return &fakeFeed{src: s, ctx: ctx, next: map[string]int64{}, known: map[string]bool{}}, nil
}

type fakeFeed struct {
	src     *fakeSource
	ctx     context.Context
	live    bool
	backlog []string // sessions whose backlog is still to send
	started bool
	next    map[string]int64 // each session's next seq
	known   map[string]bool  // sessions announced (live) or read (backlog)
}

func (f *fakeFeed) Next() (*api.FeedItem, error) {
	for {
		f.src.mu.Lock()
		if !f.started {
			f.started = true
			for _, id := range f.src.order {
				if !f.src.logs[id].deleted {
					f.backlog = append(f.backlog, id)
					f.known[id] = true
				}
			}
		}
		if !f.live {
			for len(f.backlog) > 0 {
				id := f.backlog[0]
				l := f.src.logs[id]
				n := max(f.next[id], 1)
				if int64(len(l.events)) >= n && !l.deleted {
					f.next[id] = n + 1
					raw, err := json.Marshal(l.events[n-1])
					f.src.mu.Unlock()
					return &api.FeedItem{Session: id, Event: raw}, err
				}
				f.backlog = f.backlog[1:]
			}
			f.live = true
			f.src.mu.Unlock()
			return &api.FeedItem{Cursor: "c", Stream: &api.StreamMark{Type: api.MarkLive}}, nil
		}
		for _, id := range f.src.order {
			l := f.src.logs[id]
			if !f.known[id] && !l.deleted {
				f.known[id] = true
				f.src.mu.Unlock()
				return &api.FeedItem{Cursor: "c", Session: id, Lifecycle: &api.Lifecycle{Type: api.LifeCreated}}, nil
			}
			if l.deleted && f.known[id] {
				delete(f.known, id)
				f.src.mu.Unlock()
				return &api.FeedItem{Cursor: "c", Session: id, Lifecycle: &api.Lifecycle{Type: api.LifeDeleted}}, nil
			}
			n := max(f.next[id], 1)
			if f.known[id] && int64(len(l.events)) >= n {
				f.next[id] = n + 1
				raw, err := json.Marshal(l.events[n-1])
				f.src.mu.Unlock()
				return &api.FeedItem{Cursor: "c", Session: id, Event: raw}, err
			}
		}
		changed := f.src.changed
		f.src.mu.Unlock()
		select {
		case <-changed:
		case <-f.ctx.Done():
			return nil, f.ctx.Err()
		}
	}
}

func (f *fakeFeed) Close() error { return nil }

type fakeStream struct {
	src    *fakeSource
	ctx    context.Context
	id     string
	next   int64
	follow bool
	failAt int64
}

func (st *fakeStream) Next() ([]byte, error) {
	for {
		st.src.mu.Lock()
		l := st.src.logs[st.id]
		switch {
		case l.deleted:
			st.src.mu.Unlock()
			return nil, wire.Errorf(wire.CodeNotFound, "session %s was deleted", st.id)
		case st.failAt != 0 && st.next == st.failAt && int64(len(l.events)) >= st.next:
			st.src.mu.Unlock()
			return nil, errors.New("connection reset by peer")
		case int64(len(l.events)) >= st.next:
			raw, err := json.Marshal(l.events[st.next-1])
			st.next++
			st.src.mu.Unlock()
			return raw, err
		case !st.follow:
			st.src.mu.Unlock()
			return nil, io.EOF
		}
		changed := st.src.changed
		st.src.mu.Unlock()
		select {
		case <-changed:
		case <-st.ctx.Done():
			return nil, st.ctx.Err()
		}
	}
}

func (st *fakeStream) Close() error { return nil }

// fakeSender records commands. react, when set, plays the runner: it
// returns the events a command causes, appended to the session's log.
type fakeSender struct {
	mu    sync.Mutex
	src   *fakeSource
	cmds  []Request
	react func(Request) ([]ev, error)
}

func (f *fakeSender) Command(ctx context.Context, id string, cmd command.Request) (*wire.Reply, error) {
	req := Request{Session: id, Cmd: cmd}
	f.mu.Lock()
	f.cmds = append(f.cmds, req)
	react := f.react
	f.mu.Unlock()
	if react == nil {
		return &wire.Reply{OK: true}, nil
	}
	evs, err := react(req)
	if err != nil {
		return nil, err
	}
	f.src.add(id, evs...)
	return &wire.Reply{OK: true}, nil
}

func (f *fakeSender) sent() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.cmds...)
}

// eventually waits until cond holds; the deadline only keeps a broken
// test from hanging.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitFor waits until the buffer holds text.
func waitFor(t *testing.T, b *testio.Buffer, text string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%q in\n%s", text, b.String()), func() bool { return strings.Contains(b.String(), text) })
}

// flatCommand is a command's fields side by side, as the tests compare
// them.
type flatCommand struct {
	Cmd                   command.Name
	AskID, EditID, HunkID string
	Decision, Note, Text  string
}

func flat(req command.Request) flatCommand {
	raw, err := command.Marshal(req)
	if err != nil {
		panic(err)
	}
	var f flatCommand
	if err := json.Unmarshal(raw, &f); err != nil {
		panic(err)
	}
	return f
}
