package fleet

import (
	"strings"
	"testing"
	"time"
)

func TestTimingKeepsRoomForRenewalsAndTheStop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		timing Timing
		err    string
	}{
		{name: "the defaults", timing: DefaultTiming()},
		{name: "the tests' timing", timing: testTiming().WithDefaults()},
		{name: "a TTL too short to mean anything", timing: Timing{LeaseTTL: 100 * time.Millisecond}.WithDefaults(), err: "too short"},
		{name: "renewals too rare for the TTL", timing: Timing{LeaseTTL: 10 * time.Second, Renew: 4 * time.Second}.WithDefaults(), err: "fewer than two renewals"},
		{name: "a margin that eats the TTL", timing: Timing{LeaseTTL: 10 * time.Second, Margin: 9 * time.Second}.WithDefaults(), err: "fewer than two renewals"},
		{name: "heartbeats too rare for the node TTL", timing: Timing{LeaseTTL: 10 * time.Second, Heartbeat: 6 * time.Second}.WithDefaults(), err: "fewer than two heartbeats"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.timing.Check()
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("Check() = %v, want %q", err, tc.err)
			}
		})
	}
	// The default arithmetic, as docs/fleet.md states it.
	d := DefaultTiming()
	if d.holdFor() != 24*time.Second || d.stopAfter() != 21*time.Second || d.Renew != 3*time.Second {
		t.Fatalf("defaults: hold %v, stop after %v, renew %v", d.holdFor(), d.stopAfter(), d.Renew)
	}
}

func TestAttemptsWaitLongerEachTimeUpToTheRequestTimeout(t *testing.T) {
	timing := DefaultTiming()
	want := []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for k, w := range want {
		if got := timing.attempt(k); got != w {
			t.Errorf("attempt %d waits %v, want %v", k, got, w)
		}
	}
	if got := timing.attempt(1 << 20); got != timing.Request {
		t.Errorf("a late attempt waits %v, want the request timeout %v", got, timing.Request)
	}
}
