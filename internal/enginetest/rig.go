package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// DefaultTurnTimeout bounds one turn, and every wait, of a Rig. It is a
// deadline against hangs, not a timing goal: a turn against the fake model
// takes about a second, a cold CLI start on a busy machine a few.
const DefaultTurnTimeout = 2 * time.Minute

// RigConfig says what a Rig runs. Only New is required.
type RigConfig struct {
	// New builds the engine under test; Prepare, when set, adjusts each
	// one before it starts (a tap, a test seam).
	New     engine.Factory
	Prepare func(engine.Engine)
	// CLI is the pinned agent CLI the engine drives ("claude", "codex"...),
	// checked with testenv.NeedEngineCLI, which skips the test (or fails
	// it in CI) when it is missing. Empty for engines without one.
	CLI string
	// Oldest runs the oldest supported version of the CLI
	// (testenv.NeedOldestEngineCLI) instead of the newest.
	Oldest bool

	// Scenario is what the fake model server plays, with Vars (and the
	// worktree as "cwd"). A scenario without Auth gets Key as its only
	// accepted API key.
	Scenario fakemodel.Scenario
	Vars     map[string]string
	// Server shares a running fake model server (resume and fork tests)
	// instead of starting one for Scenario.
	Server *fakemodel.Server

	// Decide answers the engine's Permit calls; nil allows everything.
	Decide func(context.Context, engine.ToolCall) engine.Verdict

	// Credential and Key are the credential item the engine takes and the
	// key handed to it.
	Credential, Key string
	// Model is StartOptions.Model.
	Model string
	// Env is the engine's base environment; nil means CleanEnv.
	Env []string
	// Dir and Cwd reuse a session folder and worktree (resume); empty
	// means new temporary ones.
	Dir, Cwd string
	// TurnTimeout bounds each turn and wait (DefaultTurnTimeout when 0).
	TurnTimeout time.Duration
	// LogLevel is the engine logger's level (debug when unset).
	LogLevel zapcore.LevelEnabler
}

// Rig is one engine under test against the fake model server on loopback:
// the one test rig every engine's tests use. NewRig serves the scenario
// and prepares StartOptions with a recording Host; Start builds and starts
// the engine; Turn runs a turn; Host holds what the engine emitted.
type Rig struct {
	T    testing.TB
	Fake *fakemodel.Server
	// URL is the fake model server's base URL.
	URL  string
	Host *Host
	// Opts are the options Start passes; a test may change them before.
	Opts engine.StartOptions
	// Dir is the session folder, Cwd the worktree.
	Dir, Cwd string
	// Eng is the engine Start started last, and ConvID its conversation.
	Eng    engine.Engine
	ConvID string

	cfg     RigConfig
	timeout time.Duration
}

// NewRig serves cfg.Scenario on loopback (or shares cfg.Server) and
// prepares, but does not start, an engine pointed at it.
func NewRig(t testing.TB, cfg RigConfig) *Rig {
	t.Helper()
	if cfg.New == nil {
		t.Fatal("enginetest.RigConfig needs New")
	}
	r := &Rig{T: t, cfg: cfg, Dir: cfg.Dir, Cwd: cfg.Cwd, timeout: cfg.TurnTimeout}
	if r.timeout == 0 {
		r.timeout = DefaultTurnTimeout
	}
	config := map[string]string{}
	switch {
	case cfg.CLI != "" && cfg.Oldest:
		config[locate.KeyEnginesDir] = testenv.NeedOldestEngineCLI(t, cfg.CLI)
	case cfg.CLI != "":
		config[locate.KeyEnginesDir] = testenv.NeedEngineCLI(t, cfg.CLI)
	}
	if r.Dir == "" {
		r.Dir = t.TempDir()
	}
	if r.Cwd == "" {
		r.Cwd = t.TempDir()
	}
	if cfg.Server != nil {
		r.Fake, r.URL = cfg.Server, cfg.Server.URL()
	} else {
		r.Fake, r.URL = StartFake(t, cfg.Scenario, cfg.Key, withCwd(cfg.Vars, r.Cwd))
	}
	r.Host = NewHost(cfg.Decide)
	env := cfg.Env
	if env == nil {
		env = CleanEnv(t)
	}
	var creds map[string]string
	if cfg.Credential != "" {
		creds = map[string]string{cfg.Credential: cfg.Key}
	}
	logger := zaptest.NewLogger(t)
	if cfg.LogLevel != nil {
		logger = zaptest.NewLogger(t, zaptest.Level(cfg.LogLevel))
	}
	r.Opts = engine.StartOptions{
		SessionID:     "s-test",
		Dir:           r.Dir,
		Cwd:           r.Cwd,
		Model:         cfg.Model,
		ModelEndpoint: r.URL,
		Credentials:   creds,
		Env:           env,
		Config:        config,
		Host:          r.Host,
		Logger:        logger,
	}
	return r
}

func withCwd(vars map[string]string, cwd string) map[string]string {
	out := map[string]string{"cwd": cwd}
	for k, v := range vars {
		out[k] = v
	}
	return out
}

// StartFake serves sc on loopback for the test's lifetime. A scenario
// without Auth accepts only key (when set).
func StartFake(t testing.TB, sc fakemodel.Scenario, key string, vars map[string]string) (*fakemodel.Server, string) {
	t.Helper()
	if sc.Auth == nil && key != "" {
		sc.Auth = &fakemodel.Auth{APIKey: key}
	}
	srv := fakemodel.New(sc, fakemodel.WithVars(vars))
	url, err := srv.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fake model server: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, url
}

// CleanEnv is the test process's environment without provider credentials
// and with a home of its own, so an agent CLI does not read (or spend a
// second in) the profile of whoever runs the tests.
func CleanEnv(t testing.TB) []string {
	env := []string{"HOME=" + t.TempDir()}
	for _, kv := range proc.BaseEnv() {
		if !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return env
}

// Start builds a fresh engine and starts it (resuming conversation when
// set, else Opts.Resume); the engine is closed when the test ends. It fails the test when
// Start fails.
func (r *Rig) Start(resume string) (engine.Engine, string) {
	r.T.Helper()
	eng, id, err := r.TryStart(resume)
	if err != nil {
		r.T.Fatalf("Start: %v", Describe(err))
	}
	return eng, id
}

// TryStart is Start returning the error instead.
func (r *Rig) TryStart(resume string) (engine.Engine, string, error) {
	r.T.Helper()
	eng := r.cfg.New()
	if r.cfg.Prepare != nil {
		r.cfg.Prepare(eng)
	}
	opts := r.Opts
	if resume != "" {
		opts.Resume = resume
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	id, err := eng.Start(ctx, opts)
	r.T.Cleanup(func() { eng.Close() })
	r.Eng = eng
	if err != nil {
		return eng, "", err
	}
	r.ConvID = id
	return eng, id, nil
}

// Turn runs one turn on text, to its end.
func (r *Rig) Turn(text string) (engine.TurnResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	return r.Eng.Turn(ctx, engine.TurnInput{ID: "m1", Text: text, Kind: "send"})
}

// MustTurn runs a turn that must succeed.
func (r *Rig) MustTurn(text string) engine.TurnResult {
	r.T.Helper()
	res, err := r.Turn(text)
	if err != nil {
		r.T.Fatalf("Turn(%q): %v", text, Describe(err))
	}
	return res
}

// TurnOutcome is how a turn run in the background ended.
type TurnOutcome struct {
	Res engine.TurnResult
	Err error
}

// GoTurn runs a turn in the background.
func (r *Rig) GoTurn(text string) <-chan TurnOutcome {
	ch := make(chan TurnOutcome, 1)
	go func() {
		res, err := r.Turn(text)
		ch <- TurnOutcome{res, err}
	}()
	return ch
}

// WaitTurn waits for a turn GoTurn started.
func (r *Rig) WaitTurn(ch <-chan TurnOutcome) TurnOutcome {
	r.T.Helper()
	select {
	case out := <-ch:
		return out
	case <-time.After(r.timeout + 10*time.Second): // the turn's own deadline comes first
		r.T.Fatal("the turn did not end")
		return TurnOutcome{}
	}
}

// WaitEvent waits for an event of typ whose data satisfies match (any,
// when nil).
func (r *Rig) WaitEvent(typ event.Type, what string, match func(json.RawMessage) bool) {
	r.T.Helper()
	err := r.Host.WaitFor(r.timeout, what, func(events []Event) bool {
		for _, e := range events {
			if e.Type == typ && (match == nil || match(e.Data)) {
				return true
			}
		}
		return false
	})
	if err != nil {
		r.T.Fatal(err)
	}
}

// WaitHeld waits until the fake model server holds the named step.
func (r *Rig) WaitHeld(name string) {
	r.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	if err := r.Fake.WaitHeld(ctx, name); err != nil {
		r.T.Fatal(err)
	}
}

// ModelRequests are the model calls the fake server answered in the given
// format (every format when api is empty).
func (r *Rig) ModelRequests(api fakemodel.API) []fakemodel.Request {
	var out []fakemodel.Request
	for _, req := range r.Fake.Requests() {
		if req.API != "" && (api == "" || req.API == api) {
			out = append(out, req)
		}
	}
	return out
}

// FileIn is the path of name in the worktree.
func (r *Rig) FileIn(name string) string { return filepath.Join(r.Cwd, name) }

// Events decodes the recorded events of typ into T.
func Events[T any](t testing.TB, h *Host, typ event.Type) []T {
	t.Helper()
	var out []T
	for _, raw := range h.OfType(typ) {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("decode %s event %s: %v", typ, raw, err)
		}
		out = append(out, v)
	}
	return out
}

// Describe renders an error with a failure's code and the engine's stderr.
func Describe(err error) string {
	var f *engine.Failure
	if !errors.As(err, &f) {
		return fmt.Sprint(err)
	}
	if len(f.Stderr) == 0 {
		return fmt.Sprintf("%v [code %s]", err, f.Code)
	}
	return fmt.Sprintf("%v [code %s]\nstderr:\n%s", err, f.Code, strings.Join(f.Stderr, "\n"))
}

// WantFailure checks that err is a failure with code, and returns it.
func WantFailure(t testing.TB, err error, code event.FailureCode) *engine.Failure {
	t.Helper()
	var f *engine.Failure
	if !errors.As(err, &f) {
		t.Fatalf("want a %s failure, got %v", code, Describe(err))
	}
	if f.Code != code {
		t.Fatalf("want failure code %s, got %s: %v", code, f.Code, Describe(err))
	}
	return f
}

// AllowAll is a Decide that allows every call.
func AllowAll(context.Context, engine.ToolCall) engine.Verdict { return engine.Verdict{Allow: true} }

// OnEachVersion runs test as parallel subtests "newest" and "oldest", once
// on each supported version of the engine's CLI (RigConfig.Oldest).
func OnEachVersion(t *testing.T, test func(t *testing.T, oldest bool)) {
	for _, oldest := range []bool{false, true} {
		name := "newest"
		if oldest {
			name = "oldest"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, oldest)
		})
	}
}
