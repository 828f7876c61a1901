package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Past MaxLive the least recently used idle runner is stopped to make room,
// and its session resumes in a new runner at its next use.
func TestMaxLiveStopsTheLeastRecentlyUsedIdleRunner(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var clockMu sync.Mutex
	clock := func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		now = now.Add(time.Second) // every use is later than the last
		return now
	}
	m := newScriptManager(t, "", func(c *Config) { c.MaxLive = 2; c.Now = clock })
	create := func() string {
		t.Helper()
		s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
		if err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	a, b := create(), create()
	c := create()
	waitFor(t, func() bool { return !m.Live(a) })
	if !m.Live(b) || !m.Live(c) || m.LiveCount() != 2 {
		t.Fatalf("live: a %v, b %v, c %v, count %d", m.Live(a), m.Live(b), m.Live(c), m.LiveCount())
	}
	// a comes back; b is now the least recently used.
	mustCommand(t, m, a, command.GetGoal{})
	waitFor(t, func() bool { return !m.Live(b) })
	if !m.Live(a) || !m.Live(c) {
		t.Fatalf("live: a %v, c %v", m.Live(a), m.Live(c))
	}
}

// When every live runner is busy, a start past MaxLive fails with
// unavailable and stops nothing.
func TestMaxLiveRefusesWhenEveryRunnerIsBusy(t *testing.T) {
	m := newScriptManager(t, "", func(c *Config) { c.MaxLive = 1 })
	s, err := m.Create(ctxT(t), scriptSpec(t, slowScenario))
	if err != nil {
		t.Fatal(err)
	}
	mustCommand(t, m, s.ID, command.Send{Text: "long job"})
	readUntil(t, m, s.ID, 1, "turnStarted")
	_, err = m.Create(ctxT(t), scriptSpec(t, slowScenario))
	if !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("create past the cap: %v, want unavailable", err)
	}
	if !m.Live(s.ID) {
		t.Fatal("the busy runner was stopped")
	}
	if list, err := m.List(ctxT(t)); err != nil || len(list) != 1 {
		t.Fatalf("sessions after the refused create: %d, %v", len(list), err)
	}
}

// Sessions waiting for a person (here on an ask) have a budget of their
// own (MaxWaiting): up to it they do not hold a MaxLive slot, so a new
// session starts beside them and they keep their runners; past it they
// count as live again.
func TestSessionsWaitingForAPersonDoNotBlockNewOnes(t *testing.T) {
	m := newScriptManager(t, "", func(c *Config) { c.MaxLive = 1; c.MaxWaiting = 1 })
	waiting := func() string {
		t.Helper()
		s, err := m.Create(ctxT(t), scriptSpec(t, askScenario))
		if err != nil {
			t.Fatal(err)
		}
		mustCommand(t, m, s.ID, command.Send{Text: "run make"})
		readUntil(t, m, s.ID, 1, "askOpened")
		// The runner reports the state just after the event.
		waitFor(t, func() bool {
			m.mu.Lock()
			defer m.mu.Unlock()
			e := m.entries[s.ID]
			return e != nil && waitsForPerson(e)
		})
		return s.ID
	}
	first := waiting()
	// The one live slot is free: the asking session waits outside it.
	second := waiting()
	if !m.Live(first) || !m.Live(second) {
		t.Fatalf("live: first %v, second %v", m.Live(first), m.Live(second))
	}
	// Two wait now, one past the budget: it holds the slot, and with no
	// runner quiet a new session is refused as at the cap.
	if _, err := m.Create(ctxT(t), scriptSpec(t, echoScenario)); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("create past both budgets: %v, want unavailable", err)
	}
	if !m.Live(first) || !m.Live(second) {
		t.Fatal("a waiting session's runner was stopped")
	}
}

// cappedScenario spends $2 at its first turn's first call, past a $1 cap;
// every later turn runs until it is stopped.
const cappedScenario = `
turns:
  - steps:
      - {tool: read, path: notes.txt, costUsd: 2}
      - {say: "spent"}
fallback: {steps: [{sleepMs: 600000}]}
`

// A session its spend cap holds with messages queued waits for a person
// (to raise the cap or clear the queue), so it waits outside MaxLive like
// one waiting on an ask: a new session starts beside such sessions. Raised
// past what was spent, the cap lets the queued turn start at once, and the
// session counts as live again even past MaxLive; while it does, with
// every live runner busy, a new session is refused. Cleared, the queue no
// longer waits for anyone: the session is an idle one like any other.
func TestSessionsHeldByTheirSpendCapDoNotBlockNewOnes(t *testing.T) {
	m := newScriptManager(t, "", func(c *Config) { c.MaxLive = 1; c.MaxWaiting = 2 })
	held := func() (id, queued string) {
		t.Helper()
		spec := scriptSpec(t, cappedScenario)
		spec.SpendCapUSD = 1
		s, err := m.Create(ctxT(t), spec)
		if err != nil {
			t.Fatal(err)
		}
		mustCommand(t, m, s.ID, command.Send{Text: "spend"})
		readUntil(t, m, s.ID, 1, "turnEnded")
		// A held queue needs a person: a human wait under way as the
		// message is queued is met, as is one that begins after.
		human := make(chan api.WaitReply, 1)
		go func() {
			r, err := m.Wait(ctxT(t), s.ID, WaitOptions{For: api.WaitHuman})
			if err != nil {
				t.Error(err)
			}
			human <- r
		}()
		waitFor(t, func() bool { return busWaited(m) })
		var q event.Queued
		if err := json.Unmarshal(mustCommand(t, m, s.ID, command.Send{Text: "more"}), &q); err != nil {
			t.Fatal(err)
		}
		if r := <-human; !r.Met || len(r.Events) != 1 {
			t.Fatalf("a human wait on a held queue: %+v", r)
		}
		for _, f := range []api.WaitFor{api.WaitHuman, api.WaitTurnEnd} {
			if r, err := m.Wait(ctxT(t), s.ID, WaitOptions{For: f}); err != nil || !r.Met {
				t.Fatalf("a %s wait on a held queue: %+v, %v", f, r, err)
			}
		}
		waitFor(t, func() bool { return entryWaits(m, s.ID) })
		st := status(t, m, s.ID)
		if !st.Held || len(st.Queued) != 1 {
			t.Fatalf("past the cap with a message queued, status %+v", st)
		}
		return s.ID, q.ID
	}
	first, _ := held()
	second, queued := held()

	// The one live slot is free: both held sessions wait outside it.
	busy, err := m.Create(ctxT(t), scriptSpec(t, slowScenario))
	if err != nil {
		t.Fatalf("a new session beside two held ones: %v", err)
	}
	mustCommand(t, m, busy.ID, command.Send{Text: "long job"})
	readUntil(t, m, busy.ID, 1, "turnStarted")
	if !m.Live(first) || !m.Live(second) {
		t.Fatal("a held session's runner was stopped")
	}

	// Raised, the cap releases the queued message: its turn starts at
	// once, and the session holds a live slot again, past MaxLive.
	raised := 5.0
	mustCommand(t, m, first, command.SetSpendCap{SpendCapUSD: &raised})
	readUntil(t, m, first, 1, "turnStarted")
	waitFor(t, func() bool { return !entryWaits(m, first) })
	if st := status(t, m, first); st.Held || st.State != wire.StateWorking {
		t.Fatalf("after the cap was raised, status %+v", st)
	}
	short, cancel := context.WithTimeout(ctxT(t), 5*time.Second)
	defer cancel()
	if _, err := m.Create(short, scriptSpec(t, echoScenario)); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("create with two busy sessions over --max-live 1: %v, want unavailable", err)
	}

	// Cleared, the other's queue waits for no one: it stays held, but
	// idle, so it no longer waits outside the cap.
	mustCommand(t, m, second, command.CancelQueued{MessageID: queued})
	if entryWaits(m, second) {
		t.Fatal("a held session with an empty queue still waits for a person")
	}
	if st := status(t, m, second); !st.Held || len(st.Queued) != 0 {
		t.Fatalf("after its queue was cleared, status %+v", st)
	}
}

// busWaited reports whether a reader waits on m's bus for the next item:
// a feed (a wait's) has read all there is.
func busWaited(m *Manager) bool {
	m.bus.mu.Lock()
	defer m.bus.mu.Unlock()
	return m.bus.waiting
}

// entryWaits reports whether session id's runner waits for a person by
// its last state report.
func entryWaits(m *Manager, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[id]
	return e != nil && waitsForPerson(e)
}

// status is session id's status by its runner.
func status(t *testing.T, m *Manager, id string) command.Status {
	t.Helper()
	var st command.Status
	if err := json.Unmarshal(mustCommand(t, m, id, command.GetStatus{}), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestWaitsForPerson(t *testing.T) {
	for _, c := range []struct {
		st   wire.StateReport
		want bool
	}{
		{wire.StateReport{State: wire.StateWaitingForApproval, OpenAsks: 1}, true},
		{wire.StateReport{State: wire.StateWaitingForReview, PendingEdits: 1}, true},
		{wire.StateReport{State: wire.StateIdle, Queued: 2}, false}, // a turn may be starting
		{wire.StateReport{State: wire.StateIdle, PendingEdits: 1}, true},
		{wire.StateReport{State: wire.StateIdle, Queued: 1, Settling: true}, false},
		{wire.StateReport{State: wire.StateIdle}, false},
		{wire.StateReport{State: wire.StateWorking, Queued: 3}, false},
		{wire.StateReport{State: wire.StateStorageFailed}, false},
		{wire.StateReport{State: wire.StateStopped, Queued: 1, Held: true}, true}, // the spend cap holds the queue
		{wire.StateReport{State: wire.StateIdle, Held: true}, false},              // nothing waits
		{wire.StateReport{State: wire.StateIdle, Queued: 1, Held: true, Settling: true}, false},
		{wire.StateReport{State: wire.StateWorking, Queued: 1, Held: true}, false},       // a turn runs
		{wire.StateReport{State: wire.StateStorageFailed, Queued: 1, Held: true}, false}, // waits for room, not a person
	} {
		if got := c.st.WaitsForPerson(); got != c.want {
			t.Errorf("%+v: %v, want %v", c.st, got, c.want)
		}
	}
}

// Load, what a fleet places by, counts a runner being stopped to make room
// and one still starting beside the live ones: on a busy machine a node
// turning runners over must not report a free slot it does not have
// (LiveCount, which says what is up now, leaves both out).
func TestLoadCountsRunnersStartingAndStopping(t *testing.T) {
	m := newScriptManager(t, "", func(*Config) {})
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Load(); got != 1 {
		t.Fatalf("load with one live runner: %d", got)
	}
	// As fitLive leaves them while the one stops and the other starts.
	m.mu.Lock()
	e := m.entries[s.ID]
	e.retiring = true
	m.entries["starting"] = &entry{ids: []string{"starting"}, ready: make(chan struct{})}
	m.mu.Unlock()
	load, live := m.Load(), m.LiveCount()
	m.mu.Lock()
	e.retiring = false
	delete(m.entries, "starting")
	m.mu.Unlock()
	if load != 2 || live != 0 {
		t.Fatalf("one runner stopping and one starting: load %d (want 2), live count %d (want 0)", load, live)
	}
}
