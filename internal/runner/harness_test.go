package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/engines/script"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// waitLimit bounds every wait in these tests; it is a deadlock guard, not
// a timing goal.
const waitLimit = 20 * time.Second

// session is a runner under test with the script engine and a recorder of
// its mirrored events.
type session struct {
	t   *testing.T
	r   *Runner
	dir string
	cwd string

	mu     sync.Mutex
	events []wire.Event
	change chan struct{}
}

func scenarioFile(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newSession(t *testing.T, scenario string, tweak func(*wire.Spec)) *session {
	t.Helper()
	s := &session{t: t, dir: t.TempDir(), cwd: t.TempDir(), change: make(chan struct{})}
	spec := wire.Spec{ID: "s1", Engine: "script", Cwd: s.cwd, Scenario: scenarioFile(t, scenario)}
	if tweak != nil {
		tweak(&spec)
	}
	s.start(spec)
	return s
}

func (s *session) start(spec wire.Spec) {
	s.t.Helper()
	r, err := New(Options{
		Dir: s.dir, Spec: spec,
		Engines: map[string]engine.Factory{"script": script.New},
		Mirror:  s.record,
	})
	if err != nil {
		s.t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		s.t.Fatal(err)
	}
	s.r = r
	s.t.Cleanup(func() { r.Close() })
}

func (s *session) record(b eventlog.Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, line := range b.Lines {
		var ev wire.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			s.t.Errorf("mirrored line is not an event: %v", err)
			continue
		}
		s.events = append(s.events, ev)
	}
	close(s.change)
	s.change = make(chan struct{})
}

// do runs a command and fails the test if it is refused.
func (s *session) do(cmd wire.Command) json.RawMessage {
	s.t.Helper()
	reply := s.r.Do(context.Background(), cmd)
	if !reply.OK {
		s.t.Fatalf("%s refused: %v", cmd.Cmd, reply.Error)
	}
	return reply.Result
}

// waitFor returns the first event at or after index from that satisfies
// match, waiting for it.
func (s *session) waitFor(from int, what string, match func(wire.Event) bool) (wire.Event, int) {
	s.t.Helper()
	deadline := time.After(waitLimit)
	for {
		s.mu.Lock()
		for i := from; i < len(s.events); i++ {
			if match(s.events[i]) {
				ev := s.events[i]
				s.mu.Unlock()
				return ev, i
			}
		}
		ch := s.change
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			s.t.Fatalf("no %s event after %s; saw:\n%s", what, waitLimit, s.dump())
		}
	}
}

func (s *session) waitType(from int, typ wire.EventType) (wire.Event, int) {
	s.t.Helper()
	return s.waitFor(from, string(typ), func(ev wire.Event) bool { return ev.Type == typ })
}

func (s *session) dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, ev := range s.events {
		fmt.Fprintf(&b, "  %d %s %s\n", ev.Seq, ev.Type, ev.Data)
	}
	return b.String()
}

func (s *session) all(typ wire.EventType) []wire.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []wire.Event
	for _, ev := range s.events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func decode[T any](t *testing.T, ev wire.Event) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		t.Fatalf("decode %s: %v", ev.Type, err)
	}
	return v
}

func scanEvents(r io.Reader, fn func(wire.Event)) error {
	return eventlog.Scan(r, 0, func(_ int64, line []byte) error {
		var ev wire.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return err
		}
		fn(ev)
		return nil
	})
}
