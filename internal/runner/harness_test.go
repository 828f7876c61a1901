package runner

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/engines/script"
	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/eventlog/eventlogtest"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
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

	rec *eventlogtest.Recorder
	// engines overrides the script engine (startFake sets it).
	engines map[string]engine.Factory
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
	s := &session{t: t, dir: t.TempDir(), cwd: t.TempDir()}
	spec := wire.Spec{ID: "s1", Engine: "script", Cwd: s.cwd, Scenario: scenarioFile(t, scenario)}
	if tweak != nil {
		tweak(&spec)
	}
	s.start(spec)
	return s
}

func (s *session) start(spec wire.Spec) {
	s.t.Helper()
	if s.rec == nil {
		s.rec = eventlogtest.New(waitLimit)
	}
	engines := s.engines
	if engines == nil {
		engines = map[string]engine.Factory{"script": script.New}
	}
	r, err := New(Options{Dir: s.dir, Spec: spec, Engines: engines, Mirror: s.record})
	if err != nil {
		s.t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		s.t.Fatal(err)
	}
	s.r = r
	s.t.Cleanup(func() { r.Close() })
}

// do runs a command and fails the test if it is refused.
func (s *session) do(cmd command.Request) json.RawMessage {
	s.t.Helper()
	reply := s.r.Do(context.Background(), cmd)
	if !reply.OK {
		s.t.Fatalf("%s refused: %v", cmd.Cmd(), reply.Error)
	}
	return reply.Result
}

func scanEvents(r io.Reader, fn func(event.Event)) error {
	return eventlog.Scan(r, 0, func(_ int64, line []byte) error {
		var ev event.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return err
		}
		fn(ev)
		return nil
	})
}

// record takes the runner's mirrored events; start makes the recorder.
func (s *session) record(b eventlog.Batch) { s.recorder().Record(b) }

func (s *session) recorder() *eventlogtest.Recorder { return s.rec }

// waitFor returns the first event at or after index from that satisfies
// match, waiting for it.
func (s *session) waitFor(from int, what string, match func(event.Event) bool) (event.Event, int) {
	s.t.Helper()
	return s.recorder().WaitFor(s.t, from, what, match)
}

func (s *session) waitType(from int, typ event.Type) (event.Event, int) {
	s.t.Helper()
	return s.recorder().WaitType(s.t, from, typ)
}

func (s *session) dump() string { return s.recorder().Dump() }

func (s *session) all(typ event.Type) []event.Event { return s.recorder().All(typ) }

func decode[T any](t *testing.T, ev event.Event) T {
	t.Helper()
	return eventlogtest.Decode[T](t, ev)
}
