package runner

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// A session's engineConfig reaches its engine as StartOptions.Config, as
// strings, over the runner's own settings; what the spec says of a plugin
// is not the session's to set.
func TestEngineConfigReachesTheEngine(t *testing.T) {
	eng := &fakeEngine{}
	spec := wire.Spec{ID: "s1", Engine: "fake", Cwd: t.TempDir(), EngineConfig: wire.EngineConfig{
		"requestMaxRetries": 4.0, "offline": false, "inputPricePerMTok": 0.25, "auth": "login", "cacheDir": "/srv/cache",
	}}
	r, err := New(Options{Dir: t.TempDir(), Spec: spec, Mirror: func(eventlog.Batch) {},
		Engines:      map[string]engine.Factory{"fake": func() engine.Engine { return eng }},
		EngineConfig: map[string]string{"cacheDir": "/state/cache", "enginesDir": "/opt/engines"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := map[string]string{
		"requestMaxRetries": "4", "offline": "false", "inputPricePerMTok": "0.25", "auth": "login",
		"cacheDir": "/srv/cache", "enginesDir": "/opt/engines",
	}
	eng.mu.Lock()
	got := eng.config
	eng.mu.Unlock()
	if !maps.Equal(got, want) {
		t.Fatalf("StartOptions.Config = %v, want %v", got, want)
	}
}

// A meta.json whose engineConfig no engine could take is refused when the
// runner opens the session, naming the key.
func TestEngineConfigRefusedByTheRunner(t *testing.T) {
	for name, c := range map[string]wire.EngineConfig{
		"an object value": {"auth": map[string]any{"x": 1.0}},
		"a reserved key":  {"pluginPath": "/tmp/evil"},
		"a key with /":    {"a/b": "x"},
	} {
		t.Run(name, func(t *testing.T) {
			spec := wire.Spec{ID: "s1", Engine: "fake", Cwd: t.TempDir(), EngineConfig: c}
			_, err := New(Options{Dir: t.TempDir(), Spec: spec, Mirror: func(eventlog.Batch) {},
				Engines: map[string]engine.Factory{"fake": func() engine.Engine { return &fakeEngine{} }}})
			if !errors.Is(err, wire.ErrBadRequest) {
				t.Fatalf("New = %v, want bad_request", err)
			}
		})
	}
}
