package supervisor

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/command"
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
	} {
		if got := c.st.WaitsForPerson(); got != c.want {
			t.Errorf("%+v: %v, want %v", c.st, got, c.want)
		}
	}
}
