package supervisor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/pkg/wire"
)

// The kept answer: reused while fresh and asked the same way; probed again
// when stale, when refreshed, or when the request differs (another
// credential, another endpoint). A failed probe is kept by nobody.
func TestEngineChecksKeepAnswers(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	probes := 0
	fail := false
	c := &engineChecks{
		kept: map[string]keptProbe{},
		now:  func() time.Time { return now },
		probe: func(context.Context, engineprobe.Request) (engineprobe.Reply, error) {
			probes++
			if fail {
				return engineprobe.Reply{}, errors.New("runner: exit status 2")
			}
			return engineprobe.Reply{}, nil
		},
	}
	req := engineprobe.Request{Engines: []string{"claude"}, Credentials: map[string]map[string]string{"claude": {"anthropic-api-key": "a"}}}
	get := func(r engineprobe.Request, refresh bool) {
		t.Helper()
		if _, _, err := c.get(context.Background(), r, refresh); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name  string
		do    func()
		total int
	}{
		{"first call probes", func() { get(req, false) }, 1},
		{"fresh: kept", func() { now = now.Add(EngineCheckTTL / 2); get(req, false) }, 1},
		{"refresh probes", func() { get(req, true) }, 2},
		{"another secret probes", func() {
			other := req
			other.Credentials = map[string]map[string]string{"claude": {"anthropic-api-key": "b"}}
			get(other, false)
		}, 3},
		{"another endpoint probes", func() {
			other := req
			other.ModelEndpoint = "http://127.0.0.1:1"
			get(other, false)
		}, 4},
		{"stale probes", func() { now = now.Add(EngineCheckTTL); get(req, false) }, 5},
	}
	for _, s := range steps {
		s.do()
		if probes != s.total {
			t.Fatalf("%s: %d probes, want %d", s.name, probes, s.total)
		}
	}
	fail = true
	now = now.Add(EngineCheckTTL)
	if _, _, err := c.get(context.Background(), req, false); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("a failed probe: %v, want unavailable", err)
	}
	fail = false
	get(req, false)
	if probes != 7 {
		t.Fatalf("after a failed probe the next call must probe: %d probes", probes)
	}
}
