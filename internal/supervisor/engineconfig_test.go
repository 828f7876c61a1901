package supervisor

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// A session's engineConfig is checked against its engine's settings at
// create, and the supervisor's defaults for the engine are written into
// the spec under it.
func TestCreateChecksAndCompletesEngineConfig(t *testing.T) {
	m := newScriptManager(t, "", func(c *Config) {
		c.EngineDefaults = map[string]wire.EngineConfig{"codex": {"requestMaxRetries": 4.0, "auth": "apiKey"}}
	})
	// The spec is written to the session folder, and published, before
	// its runner starts; without the codex CLI the start then fails and
	// the session goes again, so the test reads the spec as written from
	// the feed.
	f, err := m.Feed(ctxT(t), FeedOptions{Types: []string{string(api.LifeCreated)}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, createErr := m.Create(ctxT(t), wire.Spec{Engine: "codex", EngineConfig: wire.EngineConfig{"auth": "login", "inputPricePerMTok": 0.5}})
	ev, err := f.Next(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var created api.Lifecycle
	if err := json.Unmarshal(ev.Line, &created); err != nil || created.Spec == nil {
		t.Fatalf("created item %s: %v", ev.Line, err)
	}
	want := map[string]string{"auth": "login", "requestMaxRetries": "4", "inputPricePerMTok": "0.5"}
	got := created.Spec.EngineConfig.Strings()
	if len(got) != len(want) {
		t.Fatalf("engineConfig = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("engineConfig = %v, want %v", got, want)
		}
	}
	if createErr == nil {
		// With the codex CLI installed the session lives: a new Get
		// reads its meta.json.
		again, err := m.Get(ctxT(t), s.ID)
		if err != nil || again.Spec.EngineConfig.Strings()["requestMaxRetries"] != "4" {
			t.Fatalf("stored spec: %+v %v", again.Spec, err)
		}
	}
	// A session on another engine gets none of codex's defaults.
	other, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil || len(other.Spec.EngineConfig) != 0 {
		t.Fatalf("a script session got %v (%v)", other.Spec.EngineConfig, err)
	}

	for _, tc := range []struct {
		spec wire.Spec
		want string
	}{
		{wire.Spec{Engine: "codex", EngineConfig: wire.EngineConfig{"retries": 1.0}}, "engineConfig.retries: the codex engine has no such setting"},
		{wire.Spec{Engine: "claude", EngineConfig: wire.EngineConfig{"path": "claude"}}, "engineConfig.path: want an absolute path"},
		{wire.Spec{Engine: "copilot", EngineConfig: wire.EngineConfig{"offline": "no"}}, "engineConfig.offline: want true or false"},
	} {
		_, err := m.Create(ctxT(t), tc.spec)
		if !errors.Is(err, wire.ErrBadRequest) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("create %+v: %v, want bad_request %q", tc.spec.EngineConfig, err, tc.want)
		}
	}
}

func TestBadEngineDefaultsAreRefused(t *testing.T) {
	_, err := New(Config{StateDir: t.TempDir(), RunnerPath: "/bin/true",
		EngineDefaults: map[string]wire.EngineConfig{"codex": {"streamIdleTimeoutMs": 0.0}}})
	if err == nil || !strings.Contains(err.Error(), "engineConfig.streamIdleTimeoutMs") {
		t.Fatalf("New with a bad default = %v", err)
	}
}
