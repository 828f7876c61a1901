package codex

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// testKey is the API key the tests hand the engine; the fake server checks
// it, so a test also proves the key reached the CLI.
const testKey = "sk-corral-test-key"

// testModel is a model the pinned CLI knows (an unknown one loses the
// apply_patch tool).
const testModel = goldenModel

// turnDeadline is a generous bound for one turn of the real CLI against the
// loopback fake; timing goals live in the benchmarks.
const turnDeadline = 90 * time.Second

// TestMain checks that no test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// rig is one engine against one fake model server: the shared engine rig,
// with the Codex engine Start started last.
type rig struct {
	*enginetest.Rig
	eng *Engine
}

// newRig starts a fake model server for sc and prepares (but does not
// start) an engine whose Permit answers with decide.
func newRig(t testing.TB, sc fakemodel.Scenario, decide func(context.Context, engine.ToolCall) engine.Verdict) *rig {
	t.Helper()
	return newRigOn(t, false, sc, decide)
}

// newRigOn is newRig on the oldest supported CLI when oldest is set.
func newRigOn(t testing.TB, oldest bool, sc fakemodel.Scenario, decide func(context.Context, engine.ToolCall) engine.Verdict) *rig {
	t.Helper()
	return &rig{Rig: enginetest.NewRig(t, enginetest.RigConfig{
		New:         New,
		CLI:         "codex",
		Oldest:      oldest,
		Scenario:    sc,
		Decide:      decide,
		Credential:  CredentialItem,
		Key:         testKey,
		Model:       testModel,
		TurnTimeout: turnDeadline,
	})}
}

// start starts a fresh engine (resuming thread when set) and registers its
// Close.
func (r *rig) start(thread string) (*Engine, string) {
	r.T.Helper()
	eng, id := r.Start(thread)
	r.eng = eng.(*Engine)
	return r.eng, id
}

// describe renders an error with a failure's code and stderr.
func describe(err error) string { return enginetest.Describe(err) }

// wantFailure checks that err is a failure with code.
func wantFailure(t testing.TB, err error, code event.FailureCode) *engine.Failure {
	t.Helper()
	return enginetest.WantFailure(t, err, code)
}

// requestsContaining returns the model requests whose conversation holds s.
func (r *rig) requestsContaining(s string) []fakemodel.Request {
	var out []fakemodel.Request
	for _, req := range r.Fake.Requests() {
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
