package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// testKey is the API key the tests hand the engine; the fake server checks
// it, so a test also proves the key reached the CLI.
const testKey = "sk-corral-test-key"

// testModel is a model the pinned CLI knows (an unknown one loses the
// apply_patch tool).
const testModel = "gpt-5.5"

// turnDeadline is a generous bound for one turn of the real CLI against the
// loopback fake; timing goals live in the benchmarks.
const turnDeadline = 90 * time.Second

// TestMain points locate at the repository's pinned engines and checks
// that no test leaves a goroutine behind.
func TestMain(m *testing.M) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "deploy", "engines"))
	if err == nil {
		os.Setenv(locate.EnvEnginesDir, dir)
	}
	goleak.VerifyTestMain(m)
}

// requireCLI skips (outside CI) or fails (in CI) the test when the pinned
// CLI is not installed.
func requireCLI(t testing.TB) {
	t.Helper()
	testenv.NeedEngineCLI(t, "codex")
}

// rig is one engine against one fake model server.
type rig struct {
	t    testing.TB
	fake *fakemodel.Server
	url  string
	host *enginetest.Host
	dir  string // session folder
	cwd  string // worktree
	eng  *Engine
	opts engine.StartOptions
}

// newRig starts a fake model server for sc and prepares (but does not
// start) an engine whose Permit answers with decide.
func newRig(t testing.TB, sc fakemodel.Scenario, decide func(context.Context, engine.ToolCall) engine.Verdict) *rig {
	t.Helper()
	requireCLI(t)
	if sc.Auth == nil {
		sc.Auth = &fakemodel.Auth{APIKey: testKey}
	}
	fake := fakemodel.New(sc)
	url, err := fake.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatalf("start fake model server: %v", err)
	}
	t.Cleanup(func() { fake.Close() })
	r := &rig{
		t:    t,
		fake: fake,
		url:  url,
		host: enginetest.NewHost(decide),
		dir:  t.TempDir(),
		cwd:  t.TempDir(),
	}
	r.opts = engine.StartOptions{
		SessionID:     "s-test",
		Dir:           r.dir,
		Cwd:           r.cwd,
		Model:         testModel,
		ModelEndpoint: url,
		Credentials:   map[string]string{CredentialItem: testKey},
		Env:           testEnv(t),
		Config:        map[string]string{},
		Host:          r.host,
		Logger:        zaptest.NewLogger(t),
	}
	return r
}

// testEnv is the runner's environment with HOME pointed at an empty
// folder, so the login shell Codex runs commands in does not spend a second
// in this machine's profile scripts.
func testEnv(t testing.TB) []string {
	env := []string{"HOME=" + t.TempDir()}
	for _, kv := range proc.BaseEnv() {
		if !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return env
}

// start starts a fresh engine (resuming thread when set) and registers its
// Close.
func (r *rig) start(thread string) (*Engine, string) {
	r.t.Helper()
	eng := New().(*Engine)
	opts := r.opts
	opts.Resume = thread
	ctx, cancel := context.WithTimeout(context.Background(), turnDeadline)
	defer cancel()
	id, err := eng.Start(ctx, opts)
	if err != nil {
		r.t.Fatalf("Start: %v", describe(err))
	}
	r.t.Cleanup(func() { eng.Close() })
	r.eng = eng
	return eng, id
}

// turn runs one turn with the test deadline.
func (r *rig) turn(text string) (engine.TurnResult, error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), turnDeadline)
	defer cancel()
	return r.eng.Turn(ctx, engine.TurnInput{ID: "m1", Text: text, Kind: "send"})
}

// mustTurn runs a turn that must succeed.
func (r *rig) mustTurn(text string) engine.TurnResult {
	r.t.Helper()
	res, err := r.turn(text)
	if err != nil {
		r.t.Fatalf("Turn(%q): %v", text, describe(err))
	}
	return res
}

// describe renders an error with a failure's code and stderr.
func describe(err error) string {
	var f *engine.Failure
	if !errors.As(err, &f) {
		return fmt.Sprint(err)
	}
	if len(f.Stderr) == 0 {
		return fmt.Sprintf("%v [code %s]", err, f.Code)
	}
	return fmt.Sprintf("%v [code %s]\nstderr:\n%s", err, f.Code, strings.Join(f.Stderr, "\n"))
}

// wantFailure checks that err is a failure with code.
func wantFailure(t testing.TB, err error, code wire.FailureCode) *engine.Failure {
	t.Helper()
	var f *engine.Failure
	if !errors.As(err, &f) {
		t.Fatalf("want a %s failure, got %v", code, describe(err))
	}
	if f.Code != code {
		t.Fatalf("want failure code %s, got %s: %v", code, f.Code, describe(err))
	}
	return f
}

// waitEvent waits for an event of typ whose data satisfies match.
func (r *rig) waitEvent(typ wire.EventType, what string, match func(json.RawMessage) bool) {
	r.t.Helper()
	err := r.host.WaitFor(turnDeadline, what, func(events []enginetest.Event) bool {
		for _, e := range events {
			if e.Type == typ && (match == nil || match(e.Data)) {
				return true
			}
		}
		return false
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

// events returns the recorded events of typ decoded into T.
func events[T any](t testing.TB, h *enginetest.Host, typ wire.EventType) []T {
	t.Helper()
	var out []T
	for _, raw := range h.OfType(typ) {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("decode %s: %v", typ, err)
		}
		out = append(out, v)
	}
	return out
}

// requestsContaining returns the model requests whose conversation holds s.
func (r *rig) requestsContaining(s string) []fakemodel.Request {
	var out []fakemodel.Request
	for _, req := range r.fake.Requests() {
		if req.API == fakemodel.APIResponses && req.ContainsText(s) {
			out = append(out, req)
		}
	}
	return out
}

// verdicts is a Permit answer queue: each call takes the next verdict.
type verdicts struct {
	mu    sync.Mutex
	queue []func(engine.ToolCall) engine.Verdict
}

func (v *verdicts) add(f func(engine.ToolCall) engine.Verdict) {
	v.mu.Lock()
	v.queue = append(v.queue, f)
	v.mu.Unlock()
}

func (v *verdicts) decide(_ context.Context, call engine.ToolCall) engine.Verdict {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.queue) == 0 {
		return engine.Verdict{Allow: false, Message: "no verdict queued for " + call.ID}
	}
	f := v.queue[0]
	v.queue = v.queue[1:]
	return f(call)
}

func allow(engine.ToolCall) engine.Verdict { return engine.Verdict{Allow: true} }

// call builds a scripted tool call.
func shellCall(id, cmd string, escalated bool) fakemodel.ToolCall {
	in := map[string]any{"cmd": cmd, "yield_time_ms": 10000}
	if escalated {
		in["sandbox_permissions"] = "require_escalated"
		in["justification"] = "needed for the test"
	}
	raw, _ := json.Marshal(in)
	return fakemodel.ToolCall{ID: id, Name: "exec_command", Input: raw}
}

func patchCall(id, patch string) fakemodel.ToolCall {
	return fakemodel.ToolCall{ID: id, Name: "apply_patch", Freeform: patch}
}

func tools(calls ...fakemodel.ToolCall) fakemodel.ToolSet {
	return fakemodel.ToolSet{Responses: calls}
}

var hasTools = true

// script builds a scenario whose steps only answer requests with tools.
func script(steps ...fakemodel.Step) fakemodel.Scenario {
	return fakemodel.Scenario{Match: &fakemodel.Match{HasTools: &hasTools}, Steps: steps}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
