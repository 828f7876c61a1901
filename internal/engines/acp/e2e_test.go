package acp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// These tests drive the real Claude Code ACP agent (the pinned
// @zed-industries/claude-code-acp, on the pinned Claude Code CLI) against
// the fake model server on loopback.

// testKey is the API key the agent is handed; the fake server accepts no
// other, so a passing test also proves the credential reached the agent.
const testKey = "sk-ant-corral-acp-test-key"

// agentRig prepares the engine on the claude-code preset against sc.
func agentRig(t testing.TB, sc fakemodel.Scenario, decide func(context.Context, engine.ToolCall) engine.Verdict) *enginetest.Rig {
	t.Helper()
	return agentRigOn(t, false, sc, decide)
}

// agentRigOn is agentRig on the oldest supported agent and Claude Code CLI
// when oldest is set.
func agentRigOn(t testing.TB, oldest bool, sc fakemodel.Scenario, decide func(context.Context, engine.ToolCall) engine.Verdict) *enginetest.Rig {
	t.Helper()
	testenv.NeedProgram(t, "node")
	r := enginetest.NewRig(t, enginetest.RigConfig{
		New: New, CLI: "claude-code-acp", Oldest: oldest, Scenario: sc, Decide: decide,
		Credential: "anthropic-api-key", Key: testKey,
	})
	if oldest {
		testenv.NeedOldestEngineCLI(t, "claude")
	} else {
		testenv.NeedEngineCLI(t, "claude")
	}
	return r
}

// toolStep is a model answer calling one of the agent's tools.
func toolStep(name, text, tool string, input map[string]any) fakemodel.Step {
	raw, _ := json.Marshal(input)
	return fakemodel.Step{Name: name, Text: text, Tools: fakemodel.ToolSet{Anthropic: []fakemodel.ToolCall{{Name: tool, Input: raw}}}}
}

func writeBashScenario() fakemodel.Scenario {
	return fakemodel.Scenario{Name: "acp-write-bash", Steps: []fakemodel.Step{
		toolStep("write", "I'll create the file.", "mcp__acp__Write", map[string]any{"file_path": "${cwd}/hello.txt", "content": "hello\n"}),
		toolStep("bash", "", "mcp__acp__Bash", map[string]any{"command": "cat hello.txt", "description": "Show hello.txt", "timeout": 10000}),
		{Name: "final", Text: "Done."},
	}}
}

// lastToolResult is the newest tool result the model was sent.
func lastToolResult(r *enginetest.Rig) string {
	reqs := r.ModelRequests(fakemodel.APIAnthropic)
	if len(reqs) == 0 {
		return ""
	}
	return reqs[len(reqs)-1].LastToolResult()
}

func TestAgentWritesThroughReviewAndRunsThroughTheGate(t *testing.T) {
	t.Parallel()
	var c calls
	r := agentRig(t, writeBashScenario(), c.decide)
	r.Start("")
	res := r.MustTurn("Create hello.txt, then show it.")
	if res.Stopped || res.Text != "Done." {
		t.Errorf("result %+v", res)
	}
	if b, err := os.ReadFile(r.FileIn("hello.txt")); err != nil || string(b) != "hello\n" {
		t.Fatalf("hello.txt = %q, %v", b, err)
	}
	var shell, review []engine.ToolCall
	for _, call := range c.all() {
		switch {
		case call.Kind == engine.KindShell:
			shell = append(shell, call)
		case call.Kind == engine.KindEdit && call.Edit != nil:
			review = append(review, call)
		}
	}
	if len(shell) != 1 || shell[0].Command != "cat hello.txt" || shell[0].Tool != "mcp__acp__Bash" {
		t.Errorf("shell calls %+v", shell)
	}
	if len(review) != 1 || review[0].Edit.Path != r.FileIn("hello.txt") || review[0].Edit.Existed || string(review[0].Edit.After) != "hello\n" {
		t.Errorf("edits staged for review %+v", review)
	}
	fins := map[string]event.ToolFinishedData{}
	for _, f := range enginetest.Events[event.ToolFinishedData](t, r.Host, event.ToolFinished) {
		fins[f.Tool] = f
	}
	if f := fins["mcp__acp__Bash"]; f.Outcome != "ok" || !strings.Contains(f.Output, "hello") || f.ExitCode == nil || *f.ExitCode != 0 {
		t.Errorf("Bash finished %+v", f)
	}
	if f := fins["mcp__acp__Write"]; f.Outcome != "ok" {
		t.Errorf("Write finished %+v", f)
	}
	if got := lastToolResult(r); !strings.Contains(got, "hello") {
		t.Errorf("the model got %q as the command's result", got)
	}
}

func TestTheGateAndTheReviewerRefuseAndTheModelLearnsWhy(t *testing.T) {
	t.Parallel()
	c := calls{answer: func(call engine.ToolCall) engine.Verdict {
		switch {
		case call.Kind == engine.KindEdit && call.Edit != nil:
			return engine.Verdict{Message: "The reviewer rejected every hunk of this edit: say hi instead."}
		case call.Kind == engine.KindShell:
			return engine.Verdict{Message: "Corral's gate denied this shell call: no."}
		}
		return engine.Verdict{Allow: true}
	}}
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("write", "", "mcp__acp__Write", map[string]any{"file_path": "${cwd}/hello.txt", "content": "hello\n"}),
		toolStep("bash", "", "mcp__acp__Bash", map[string]any{"command": "touch ran.txt", "description": "Mark", "timeout": 10000}),
		{Name: "final", Text: "Understood."},
	}}
	r := agentRig(t, sc, c.decide)
	r.Start("")
	r.MustTurn("Create hello.txt.")
	for _, name := range []string{"hello.txt", "ran.txt"} {
		if _, err := os.Stat(r.FileIn(name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists: %v", name, err)
		}
	}
	reqs := r.ModelRequests(fakemodel.APIAnthropic)
	if len(reqs) < 3 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if got := reqs[1].LastToolResult(); !strings.Contains(got, "say hi instead") {
		t.Errorf("after the write the model got %q, want the reviewer's words", got)
	}
	fins := map[string]event.ToolFinishedData{}
	for _, f := range enginetest.Events[event.ToolFinishedData](t, r.Host, event.ToolFinished) {
		fins[f.Tool] = f
	}
	if f := fins["mcp__acp__Bash"]; f.Outcome != "denied" {
		t.Errorf("Bash %+v", f)
	}
	if f := fins["mcp__acp__Write"]; f.Outcome != "denied" {
		t.Errorf("Write %+v", f)
	}
}

func TestStopEndsTheTurnAndTheSessionGoesOn(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		{Name: "slow", Text: "word0 word1 word2 word3 word4 word5 word6 word7", Chunks: 8, Hold: true, HoldAfter: 4},
		{Name: "next", Text: "Still here.", Match: &fakemodel.Match{LastUserContains: "are you there"}},
	}}
	r := agentRig(t, sc, nil)
	r.Start("")
	done := r.GoTurn("Write a long answer.")
	r.WaitHeld("slow")
	r.WaitEvent(event.AssistantDelta, "streamed text", nil)
	if err := r.Eng.Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := r.WaitTurn(done)
	if o.Err != nil || !o.Res.Stopped {
		t.Fatalf("stopped turn %+v %v", o.Res, enginetest.Describe(o.Err))
	}
	if res := r.MustTurn("are you there?"); res.Text != "Still here." || res.Stopped {
		t.Fatalf("next turn %+v", res)
	}
}

func TestASteerReachesTheAgentAtTheNextToolBoundary(t *testing.T) {
	t.Parallel()
	const steer = "STEER: keep it short"
	var r *enginetest.Rig
	var once sync.Once
	decide := func(_ context.Context, call engine.ToolCall) engine.Verdict {
		if call.Kind == engine.KindShell {
			once.Do(func() { r.Host.QueueSteer(steer) })
		}
		return engine.Verdict{Allow: true}
	}
	sc := fakemodel.Scenario{
		Steps: []fakemodel.Step{
			toolStep("bash", "", "mcp__acp__Bash", map[string]any{"command": "true", "description": "Nothing", "timeout": 10000}),
			// The answer after the command: the steer cancels it.
			{Name: "after", Text: "Going on at length.", Hold: true},
		},
		Side: []fakemodel.Step{{Name: "steered", Text: "Short it is.", Match: &fakemodel.Match{LastUserContains: steer}}},
	}
	r = agentRig(t, sc, decide)
	r.Start("")
	res := r.MustTurn("Run a command.")
	if res.Stopped || res.Text != "Short it is." {
		t.Fatalf("result %+v", res)
	}
	steers := enginetest.Events[event.SteerData](t, r.Host, event.SteerDelivered)
	if len(steers) != 1 || steers[0].Text != steer {
		t.Fatalf("steerDelivered %+v", steers)
	}
}

func TestResumeContinuesTheConversationInANewProcess(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		{Name: "one", Text: "The word is APPLE."},
		{Name: "two", Text: "It was APPLE.", Match: &fakemodel.Match{Contains: "The word is APPLE."}},
	}}
	r := agentRig(t, sc, nil)
	first, id := r.Start("")
	r.MustTurn("Pick a word.")
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	_, again := r.Start(id)
	if again != id {
		t.Fatalf("resumed as %q, want %q", again, id)
	}
	if res := r.MustTurn("What was the word?"); res.Text != "It was APPLE." {
		t.Fatalf("the resumed conversation answered %q: its request lacked the history", res.Text)
	}
}

// TestGoldenCanonicalTurn records the ACP traffic of the canonical turn on
// the newest and the oldest supported agent, each against the golden
// transcript of its version (testdata/golden/<version>/).
func TestGoldenCanonicalTurn(t *testing.T) {
	enginetest.OnEachVersion(t, goldenCanonicalTurn)
}

func goldenCanonicalTurn(t *testing.T, oldest bool) {
	var tr jsonrpc.Traffic
	r := agentRigOn(t, oldest, writeBashScenario(), nil)
	eng := New().(*Engine)
	eng.trace = tr.Record
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := eng.Start(ctx, r.Opts); err != nil {
		t.Fatalf("Start: %v", enginetest.Describe(err))
	}
	r.Eng = eng
	eng.mu.Lock()
	info := eng.agent.info.AgentInfo
	eng.mu.Unlock()
	if info == nil || info.Version == "" {
		t.Fatal("the agent named no version in its answer to initialize")
	}
	r.MustTurn("Create hello.txt, then show it.")
	eng.Close()
	checkGolden(t, info.Version, "canonical-turn.txt", renderTranscript(tr.Messages(), map[string]string{r.Cwd: "<cwd>", r.Dir: "<session>"}))
}
