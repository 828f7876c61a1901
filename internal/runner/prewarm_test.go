package runner

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/corral-dev/corral/internal/engines/script"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// warmEngine is a fakeEngine that can start ahead; it records the options
// of its Prewarm and of its Start.
type warmEngine struct {
	fakeEngine
	prewarmed *engine.StartOptions
	started   *engine.StartOptions
}

func (e *warmEngine) Prewarm(_ context.Context, opts engine.StartOptions) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.prewarmed = &opts
	return nil
}

func (e *warmEngine) Start(ctx context.Context, opts engine.StartOptions) (string, error) {
	e.mu.Lock()
	e.started = &opts
	e.mu.Unlock()
	return e.fakeEngine.Start(ctx, opts)
}

// warmSpare is a spare runner's Link (no session folder) over pipes, with
// the engine "claude" played by warmEngine; built lists every instance.
type warmSpare struct {
	*linkPeer
	mu    sync.Mutex
	built []*warmEngine
}

func startSpare(t *testing.T) *warmSpare {
	t.Helper()
	s := &warmSpare{}
	factory := func() engine.Engine {
		e := &warmEngine{}
		s.mu.Lock()
		s.built = append(s.built, e)
		s.mu.Unlock()
		return e
	}
	p := serveLink(t, &Link{
		Build:   buildRunner,
		Options: Options{Engines: map[string]engine.Factory{"claude": factory, "script": script.New}},
	})
	s.linkPeer = p
	return s
}

func (s *warmSpare) engines() []*warmEngine {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*warmEngine(nil), s.built...)
}

func (e *warmEngine) state() (prewarmed, started *engine.StartOptions, closed bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.prewarmed, e.started, e.closed
}

func TestSpareStartsTheEngineAheadAndItsSessionTakesIt(t *testing.T) {
	// The folders first: their removal must come after the link's end.
	dir := filepath.Join(t.TempDir(), "9b1c0e2f4a7d")
	cwd := t.TempDir()
	s := startSpare(t)
	creds := map[string]string{"anthropic-api-key": "sk-1"}
	s.send("1", &wire.Prewarm{Spec: wire.Spec{ID: "9b1c0e2f4a7d", Engine: "claude", Cwd: cwd}, Dir: dir, Credentials: creds})
	if m := await[*wire.Prewarmed](s.linkPeer, "prewarmed", "1", nil); m.Error != nil {
		t.Fatalf("prewarmed: %v", m.Error)
	}
	built := s.engines()
	if len(built) != 1 {
		t.Fatalf("%d engines built for a prewarm, want 1", len(built))
	}
	warmed, _, _ := built[0].state()
	if warmed == nil || warmed.Dir != dir || warmed.Cwd != cwd || warmed.Credentials["anthropic-api-key"] != "sk-1" || warmed.Host != nil {
		t.Fatalf("Prewarm got %+v", warmed)
	}
	s.send("2", &wire.Prewarm{Spec: wire.Spec{Engine: "claude", Cwd: cwd}, Dir: dir})
	if m := await[*wire.Prewarmed](s.linkPeer, "prewarmed", "2", nil); !errors.Is(m.Error, wire.ErrConflict) {
		t.Fatalf("a second prewarm: %v, want conflict", m.Error)
	}

	s.send("3", &wire.LiveEnsure{Spec: wire.Spec{ID: "9b1c0e2f4a7d", Engine: "claude", Cwd: cwd, Mode: "auto"}, Dir: dir, Credentials: creds})
	if m := await[*wire.LiveReady](s.linkPeer, "live.ready", "3", nil); m.Error != nil {
		t.Fatalf("live.ready: %v", m.Error)
	}
	if n := len(s.engines()); n != 1 {
		t.Fatalf("%d engines built, want the prewarmed one only", n)
	}
	_, started, closed := built[0].state()
	if started == nil || started.Host == nil || started.Dir != dir || closed {
		t.Fatalf("the session did not start in the prewarmed engine: started %+v, closed %v", started, closed)
	}
}

func TestSpareClosesAnEngineStartedAheadThatItsSessionCannotUse(t *testing.T) {
	for name, ensure := range map[string]func(dir, cwd string) *wire.LiveEnsure{
		"another engine": func(dir, cwd string) *wire.LiveEnsure {
			return &wire.LiveEnsure{Spec: wire.Spec{ID: "s1", Engine: "script", Cwd: cwd}, Dir: dir}
		},
		"a resumed conversation": func(dir, cwd string) *wire.LiveEnsure {
			return &wire.LiveEnsure{Spec: wire.Spec{ID: "s1", Engine: "claude", Cwd: cwd, EngineSession: "conv-0"}, Dir: dir}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir, cwd := filepath.Join(t.TempDir(), "s1"), t.TempDir()
			s := startSpare(t)
			s.send("1", &wire.Prewarm{Spec: wire.Spec{ID: "s1", Engine: "claude", Cwd: cwd}, Dir: dir})
			if m := await[*wire.Prewarmed](s.linkPeer, "prewarmed", "1", nil); m.Error != nil {
				t.Fatalf("prewarmed: %v", m.Error)
			}
			s.send("2", ensure(dir, cwd))
			if m := await[*wire.LiveReady](s.linkPeer, "live.ready", "2", nil); m.Error != nil {
				t.Fatalf("live.ready: %v", m.Error)
			}
			_, started, closed := s.engines()[0].state()
			if started != nil || !closed {
				t.Fatalf("the engine started ahead: started %+v, closed %v; want closed, never started", started, closed)
			}
		})
	}
}

func TestPrewarmRefusals(t *testing.T) {
	s := startSpare(t)
	s.send("1", &wire.Prewarm{Spec: wire.Spec{Engine: "script", Cwd: t.TempDir()}, Dir: filepath.Join(t.TempDir(), "s1")})
	if m := await[*wire.Prewarmed](s.linkPeer, "prewarmed", "1", nil); !errors.Is(m.Error, wire.ErrBadRequest) {
		t.Fatalf("prewarm of an engine that cannot start ahead: %v, want bad_request", m.Error)
	}
	s.send("2", &wire.Prewarm{Spec: wire.Spec{Engine: "claude", Cwd: t.TempDir()}, Dir: "relative"})
	if m := await[*wire.Prewarmed](s.linkPeer, "prewarmed", "2", nil); !errors.Is(m.Error, wire.ErrBadRequest) {
		t.Fatalf("prewarm in a relative folder: %v, want bad_request", m.Error)
	}
}

func TestShutdownClosesAnEngineStartedAhead(t *testing.T) {
	s := startSpare(t)
	s.send("1", &wire.Prewarm{Spec: wire.Spec{Engine: "claude", Cwd: t.TempDir()}, Dir: filepath.Join(t.TempDir(), "s1")})
	if m := await[*wire.Prewarmed](s.linkPeer, "prewarmed", "1", nil); m.Error != nil {
		t.Fatalf("prewarmed: %v", m.Error)
	}
	s.send("2", &wire.Shutdown{})
	await[*wire.Bye](s.linkPeer, "bye", "2", nil)
	if _, _, closed := s.engines()[0].state(); !closed {
		t.Fatal("the engine started ahead is still open after shutdown")
	}
}
