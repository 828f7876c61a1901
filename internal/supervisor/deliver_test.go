package supervisor

import (
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// TestTermDataForEveryClientGivesEachSinkItsOwnBuffer: output that names
// no client reaches every client's sink, and a sink may recycle the buffer
// it got (Manager.RecycleTermData), so no two sinks may share one.
func TestTermDataForEveryClientGivesEachSinkItsOwnBuffer(t *testing.T) {
	got := map[string][]byte{}
	sinkFor := func(client string) func(wire.Message) {
		return func(m wire.Message) { got[client] = m.(*wire.TermData).Data }
	}
	c := &child{log: zap.NewNop(), pending: map[string]chan wire.Message{}, terms: map[termKey]func(wire.Message){
		{"t", "a"}: sinkFor("a"), {"t", "b"}: sinkFor("b"), {"t", "c"}: sinkFor("c"), {"other", "d"}: sinkFor("d"),
	}}
	data := []byte("output")
	c.deliver("", &wire.TermData{TermID: "t", Data: data})
	if len(got) != 3 || got["d"] != nil {
		t.Fatalf("delivered to %d sinks (%v), want the terminal's 3", len(got), got)
	}
	seen := map[*byte]string{}
	for client, p := range got {
		if string(p) != "output" {
			t.Errorf("sink %s got %q", client, p)
		}
		if other, ok := seen[&p[0]]; ok {
			t.Errorf("sinks %s and %s share one buffer", client, other)
		}
		seen[&p[0]] = client
	}
}

// TestStateReportsStartTheIdleClock: the runner's reports say whether it
// is busy, and the idle clock starts when a busy session stops being busy,
// not at each report.
func TestStateReportsStartTheIdleClock(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	c := &child{log: zap.NewNop(), now: func() time.Time { return now }}
	steps := []struct {
		report    wire.StateReport
		busy      bool
		idleSince time.Time // zero: unchanged from the step before
	}{
		{wire.StateReport{State: wire.StateIdle}, false, time.Time{}},
		{wire.StateReport{State: wire.StateWorking, Turn: 1}, true, time.Time{}},
		{wire.StateReport{State: wire.StateWaitingForApproval, Turn: 1, OpenAsks: 1}, true, time.Time{}},
		{wire.StateReport{State: wire.StateIdle, Turn: 1}, false, now.Add(3 * time.Second)},
		{wire.StateReport{State: wire.StateIdle, Turn: 1, Queued: 1}, true, time.Time{}},
		{wire.StateReport{State: wire.StateStopped, Turn: 2}, false, now.Add(5 * time.Second)},
		{wire.StateReport{State: wire.StateFailed, Turn: 2}, false, time.Time{}},
		{wire.StateReport{State: wire.StateIdle, Turn: 2, PendingEdits: 1}, true, time.Time{}},
	}
	var want int64
	for i, s := range steps {
		now = time.Unix(1_700_000_000, 0).Add(time.Duration(i) * time.Second)
		c.report(&s.report)
		if !s.idleSince.IsZero() {
			want = s.idleSince.UnixNano()
		}
		if c.busy() != s.busy || c.idleSince.Load() != want {
			t.Fatalf("after %+v: busy %v, idle since %d; want %v, %d", s.report, c.busy(), c.idleSince.Load(), s.busy, want)
		}
	}
}
