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
