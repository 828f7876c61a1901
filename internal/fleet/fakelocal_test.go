package fleet

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// history records when each session's runner was live on which node, on
// this process's clock, so a test can check that no session was ever live
// on two nodes at once.
type history struct {
	mu    sync.Mutex
	spans map[string][]*span
}

type span struct {
	node        string
	fence       uint64
	start, stop time.Time // stop zero: still live
}

func newHistory() *history { return &history{spans: map[string][]*span{}} }

func (h *history) started(session, node string, fence uint64) *span {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &span{node: node, fence: fence, start: time.Now()}
	h.spans[session] = append(h.spans[session], s)
	return s
}

func (h *history) stopped(s *span) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.stop.IsZero() {
		s.stop = time.Now()
	}
}

// liveOn returns the node session is live on now, or "".
func (h *history) liveOn(session string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.spans[session] {
		if s.stop.IsZero() {
			return s.node
		}
	}
	return ""
}

// check fails the test if any session was live on two nodes at once, or
// if a later holding had a smaller fence.
func (h *history) check(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for session, spans := range h.spans {
		sorted := append([]*span(nil), spans...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].start.Before(sorted[j].start) })
		for i := 1; i < len(sorted); i++ {
			prev, cur := sorted[i-1], sorted[i]
			if prev.stop.IsZero() || !prev.stop.Before(cur.start) {
				t.Errorf("session %s live twice: on %s from %v (stopped %v) and on %s from %v",
					session, prev.node, prev.start.Format(time.StampMicro), prev.stop.Format(time.StampMicro),
					cur.node, cur.start.Format(time.StampMicro))
			}
			if cur.fence <= prev.fence {
				t.Errorf("session %s: fence %d on %s after fence %d on %s", session, cur.fence, cur.node, prev.fence, prev.node)
			}
		}
	}
}

func (h *history) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for session, spans := range h.spans {
		fmt.Fprintf(&b, "%s:", session)
		for _, s := range spans {
			fmt.Fprintf(&b, " %s[%d] %s-%s", s.node, s.fence, s.start.Format("05.000"), s.stop.Format("05.000"))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// storage is what several fake nodes share: which session folders exist
// on it, and their event logs.
type storage struct {
	name    string
	log     *memLog
	mu      sync.Mutex
	folders map[string]bool
}

func newStorage(name string) *storage {
	return &storage{name: name, log: newMemLog(), folders: map[string]bool{}}
}

func (s *storage) addFolder(id string) {
	s.mu.Lock()
	s.folders[id] = true
	s.mu.Unlock()
}

// fakeLocal is a node's supervisor without processes: a "runner" is a
// record in the history, started under a claim and stopped when told.
type fakeLocal struct {
	name    string
	store   *storage
	hist    *history
	maxLive int
	node    *Node

	mu      sync.Mutex
	live    map[string]*fakeRunner
	crashed bool
}

type fakeRunner struct {
	span  *span
	claim *Claim
}

func newFakeLocal(name string, store *storage, hist *history) *fakeLocal {
	return &fakeLocal{name: name, store: store, hist: hist, maxLive: 64, live: map[string]*fakeRunner{}}
}

func (l *fakeLocal) Events(ctx context.Context, session string, from int64, follow bool) (EventStream, error) {
	return l.store.log.Events(ctx, session, from, follow)
}

func (l *fakeLocal) Capacity() Capacity {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Capacity{Live: len(l.live), MaxLive: l.maxLive, MemAvailable: 8 << 30}
}

// start makes session id live here, as the supervisor does before a
// command: under a claim.
func (l *fakeLocal) start(ctx context.Context, id string) error {
	l.mu.Lock()
	if l.live[id] != nil {
		l.mu.Unlock()
		return nil
	}
	if l.crashed {
		l.mu.Unlock()
		return fmt.Errorf("crashed")
	}
	l.mu.Unlock()
	c, err := l.node.Hold(ctx, id)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live[id] = &fakeRunner{span: l.hist.started(id, l.name, c.Fence()), claim: c}
	return nil
}

func (l *fakeLocal) Resume(ctx context.Context, id string) error { return l.start(ctx, id) }

func (l *fakeLocal) StopRunner(id string, deadline time.Time) {
	l.stop(id)
}

// stop ends session id's runner and releases its claim, as the
// supervisor does when a runner exits.
func (l *fakeLocal) stop(id string) {
	l.mu.Lock()
	r := l.live[id]
	delete(l.live, id)
	l.mu.Unlock()
	if r != nil {
		l.hist.stopped(r.span)
		r.claim.Release()
	}
}

func (l *fakeLocal) Reachable(id string) bool {
	l.store.mu.Lock()
	defer l.store.mu.Unlock()
	return l.store.folders[id]
}

// crash kills every runner at once without releasing anything, as a
// supervisor killed with SIGKILL (its runners die with it).
func (l *fakeLocal) crash() {
	l.mu.Lock()
	l.crashed = true
	live := l.live
	l.live = map[string]*fakeRunner{}
	l.mu.Unlock()
	for _, r := range live {
		l.hist.stopped(r.span)
	}
}

// liveCount counts the runners live here.
func (l *fakeLocal) liveCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.live)
}

// testNode is one fake node of a test fleet.
type testNode struct {
	*Node
	local *fakeLocal
	nc    *nats.Conn
}

// joinNode joins a fake node to fleet over a connection to urls.
func joinNode(t *testing.T, fleet, name string, store *storage, hist *history, labels map[string]string, urls ...string) *testNode {
	t.Helper()
	return joinNodeWith(t, fleet, name, store, hist, labels, nil, testTiming(), urls...)
}

func joinNodeWith(t testing.TB, fleet, name string, store *storage, hist *history, labels map[string]string, handlers map[string]Handler, timing Timing, urls ...string) *testNode {
	t.Helper()
	nc := connect(t, urls...)
	local := newFakeLocal(name, store, hist)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := Join(ctx, nc, Config{
		Fabric: FabricConfig{Fleet: fleet, Timing: timing},
		Node:   name, Labels: labels, Engines: []string{"script"}, Storage: store.name,
		Handlers: handlers, Logger: testLogger(t),
	}, local)
	if err != nil {
		t.Fatal(err)
	}
	local.node = n
	n.Start()
	tn := &testNode{Node: n, local: local, nc: nc}
	t.Cleanup(func() { tn.leave() })
	return tn
}

// leave stops the node's runners and leaves the fleet, as a supervisor
// stopped with SIGTERM.
func (n *testNode) leave() {
	n.local.mu.Lock()
	var ids []string
	for id := range n.local.live {
		ids = append(ids, id)
	}
	n.local.mu.Unlock()
	for _, id := range ids {
		n.local.stop(id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n.Close(ctx)
	n.nc.Close()
}

// kill ends the node as SIGKILL would: its runners die, its connection
// drops, nothing is released or said.
func (n *testNode) kill() {
	n.local.crash()
	n.nc.Close()
	n.stop()
	n.rpc.close()
}

// create makes a session on this node as the supervisor does: a folder on
// its storage, a catalog record, then a live runner.
func (n *testNode) create(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n.local.store.addFolder(id)
	if err := n.Register(ctx, id, "script", Placement{Node: n.Name(), Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := n.local.start(ctx, id); err != nil {
		t.Fatal(err)
	}
}
