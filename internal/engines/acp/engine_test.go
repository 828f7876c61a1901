package acp

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// calls records the Permit calls a test's gate saw and answers them.
type calls struct {
	mu     sync.Mutex
	seen   []engine.ToolCall
	answer func(engine.ToolCall) engine.Verdict
}

func (c *calls) decide(_ context.Context, call engine.ToolCall) engine.Verdict {
	c.mu.Lock()
	c.seen = append(c.seen, call)
	answer := c.answer
	c.mu.Unlock()
	if answer == nil {
		return engine.Verdict{Allow: true}
	}
	return answer(call)
}

func (c *calls) all() []engine.ToolCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]engine.ToolCall(nil), c.seen...)
}

func TestATurnMapsUpdatesAndServesTheAgentThroughTheGate(t *testing.T) {
	t.Parallel()
	var c calls
	r := fakeRig(t, "work", c.decide)
	r.Start("")
	if r.ConvID != "sess-1" {
		t.Fatalf("conversation id %q", r.ConvID)
	}
	res := r.MustTurn("go")
	if res.Text != `The file holds "hello\n". Done.` || res.Stopped {
		t.Errorf("result %+v", res)
	}
	if b, err := os.ReadFile(r.FileIn("hello.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("hello.txt = %q, %v", b, err)
	}

	// The gate saw the command and the edit at permission time, the write
	// again with its content for hunk review, and the read no tool call
	// announced. The command ran in a terminal without asking twice.
	seen := c.all()
	if len(seen) != 4 {
		t.Fatalf("Permit calls %+v", seen)
	}
	if s := seen[0]; s.Kind != engine.KindShell || s.Command != "echo hi" || s.ID != "t1" || s.Tool != "Fakeexecute" {
		t.Errorf("command call %+v", s)
	}
	if s := seen[1]; s.Kind != engine.KindEdit || s.Path != r.FileIn("hello.txt") || s.Edit != nil {
		t.Errorf("edit permission %+v", s)
	}
	if s := seen[2]; s.Kind != engine.KindEdit || s.ID != "t2" || s.Edit == nil || s.Edit.Existed || string(s.Edit.After) != "hello\n" {
		t.Errorf("write %+v", s)
	}
	if s := seen[3]; s.Kind != engine.KindRead || s.ID != "acp-read-1" || s.Path != r.FileIn("hello.txt") {
		t.Errorf("read %+v", s)
	}

	fins := enginetest.Events[event.ToolFinishedData](t, r.Host, event.ToolFinished)
	byID := map[string]event.ToolFinishedData{}
	for _, f := range fins {
		byID[f.ToolID] = f
	}
	if f := byID["t1"]; f.Outcome != "ok" || f.Output != "exit 0: hi\n" || f.ExitCode == nil || *f.ExitCode != 0 {
		t.Errorf("command finished %+v", f)
	}
	if f := byID["t2"]; f.Outcome != "ok" {
		t.Errorf("write finished %+v", f)
	}
	if f := byID["plan-1"]; f.Tool != "plan" || f.Output != "[~] say hi\n[ ] write hello.txt\n" {
		t.Errorf("plan %+v", f)
	}
	starts := enginetest.Events[event.ToolStartedData](t, r.Host, event.ToolStarted)
	if len(starts) != len(fins) {
		t.Errorf("%d toolStarted, %d toolFinished", len(starts), len(fins))
	}
	for _, s := range starts {
		if s.ToolID == "t1" && (s.Kind != "shell" || s.Command != "echo hi" || s.Summary != "`echo hi`") {
			t.Errorf("command started %+v", s)
		}
	}
	texts := enginetest.Events[event.TextData](t, r.Host, event.AssistantText)
	if len(texts) != 2 || texts[0].Text != "Let me work." {
		t.Errorf("assistantText %+v", texts)
	}

	// Usage: the agent's cumulative cost as deltas, its context, and the
	// prompt's tokens.
	var cost float64
	var tokens int64
	for _, u := range enginetest.Events[event.UsageData](t, r.Host, event.Usage) {
		cost += u.CostUSD
		tokens += u.InputTokens
	}
	if cost < 0.0299 || cost > 0.0301 || tokens != 1200 {
		t.Errorf("usage: cost %v tokens %d", cost, tokens)
	}
	if !res.HasUsage || res.Usage.Estimated || res.Usage.CostUSD < 0.0299 || res.Usage.OutputTokens != 30 {
		t.Errorf("turn usage %+v", res.Usage)
	}
	ctxs := enginetest.Events[event.ContextData](t, r.Host, event.Context)
	if len(ctxs) != 2 || ctxs[1].UsedTokens != 60000 || ctxs[1].Percent != 30 {
		t.Errorf("context %+v", ctxs)
	}
}

func TestRefusalsReachTheAgentAndNothingIsWritten(t *testing.T) {
	t.Parallel()
	c := calls{answer: func(call engine.ToolCall) engine.Verdict {
		if call.Kind == engine.KindEdit && call.Edit != nil {
			return engine.Verdict{Message: "The reviewer rejected every hunk of this edit."}
		}
		if call.Kind == engine.KindShell {
			return engine.Verdict{Message: "Corral's gate denied this shell call."}
		}
		return engine.Verdict{Allow: true}
	}}
	r := fakeRig(t, "work", c.decide)
	r.Start("")
	res := r.MustTurn("go")
	if _, err := os.Stat(r.FileIn("hello.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hello.txt exists: %v", err)
	}
	fins := map[string]event.ToolFinishedData{}
	for _, f := range enginetest.Events[event.ToolFinishedData](t, r.Host, event.ToolFinished) {
		fins[f.ToolID] = f
	}
	if f := fins["t1"]; f.Outcome != "denied" || f.Message != "Corral's gate denied this shell call." {
		t.Errorf("command %+v", f)
	}
	if f := fins["t2"]; f.Outcome != "denied" || !strings.Contains(f.Output, "The reviewer rejected every hunk") {
		t.Errorf("write %+v: the agent should have seen the reviewer's words", f)
	}
	if !strings.Contains(res.Text, "The read failed") {
		t.Errorf("result %q", res.Text)
	}
}

func TestWhatTheAgentDoesUnannouncedIsStillGated(t *testing.T) {
	t.Parallel()
	c := calls{answer: func(call engine.ToolCall) engine.Verdict {
		return engine.Verdict{Allow: call.Kind == engine.KindEdit, Message: "not that command"}
	}}
	r := fakeRig(t, "direct", c.decide)
	r.Start("")
	res := r.MustTurn("go")
	seen := c.all()
	if len(seen) != 2 || seen[0].Kind != engine.KindShell || seen[0].Command != "echo direct > direct.txt; cat direct.txt" ||
		seen[1].Kind != engine.KindEdit || seen[1].Edit == nil {
		t.Fatalf("Permit calls %+v", seen)
	}
	if _, err := os.Stat(r.FileIn("direct.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused command ran: %v", err)
	}
	if b, _ := os.ReadFile(r.FileIn("hello.txt")); string(b) != "direct\n" {
		t.Errorf("hello.txt = %q", b)
	}
	if !strings.Contains(res.Text, "not that command") {
		t.Errorf("the agent did not learn why: %q", res.Text)
	}
	outcomes := map[string]string{}
	for _, f := range enginetest.Events[event.ToolFinishedData](t, r.Host, event.ToolFinished) {
		outcomes[f.Tool] = f.Outcome
	}
	if len(outcomes) != 2 || outcomes["execute"] != "denied" || outcomes["edit"] != "ok" {
		t.Errorf("unannounced calls finished as %v, want the command denied and the write ok", outcomes)
	}
}

func TestAProtocolVersionMismatchFailsTheSession(t *testing.T) {
	t.Parallel()
	r := fakeRig(t, "version2", nil)
	_, _, err := r.TryStart("")
	f := enginetest.WantFailure(t, err, event.FailEngineError)
	if !strings.Contains(f.Message, "speaks ACP protocol version 2; Corral speaks version 1") || !strings.Contains(f.Message, "fake-agent 0.0.1") {
		t.Fatalf("failure %q", f.Message)
	}
}

func TestAnAgentWantingAuthenticationIsSignInExpired(t *testing.T) {
	t.Parallel()
	r := fakeRig(t, "auth", nil)
	_, _, err := r.TryStart("")
	f := enginetest.WantFailure(t, err, event.FailSignInExpired)
	if !strings.Contains(f.Message, "Authentication required") {
		t.Fatalf("failure %q", f.Message)
	}
}

func TestAnAgentThatDiesFailsTheTurnWithItsExitAndStderr(t *testing.T) {
	t.Parallel()
	r := fakeRig(t, "crash", nil)
	r.Start("")
	_, err := r.Turn("go")
	f := enginetest.WantFailure(t, err, event.FailEngineError)
	if !strings.Contains(f.Message, "exited with status 7") || !strings.Contains(f.Message, "fake-agent: fatal: out of tokens") ||
		strings.Contains(f.Message, "broken pipe") {
		t.Fatalf("failure %q", f.Message)
	}
	if len(f.Stderr) == 0 || f.Stderr[len(f.Stderr)-1] != "fake-agent: fatal: out of tokens" {
		t.Fatalf("stderr %q", f.Stderr)
	}
	// The next turn starts the agent again and resumes the session.
	res, err := r.Turn("again")
	if err == nil || !strings.Contains(err.Error(), "status 7") {
		t.Fatalf("next turn = %+v, %v; want the restarted agent to fail the same way", res, err)
	}
}

func TestInterruptStopsTheTurn(t *testing.T) {
	t.Parallel()
	r := fakeRig(t, "slow", nil)
	r.Start("")
	done := r.GoTurn("talk")
	r.WaitEvent(event.AssistantDelta, "streaming", nil)
	if err := r.Eng.Interrupt(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := r.WaitTurn(done)
	if o.Err != nil || !o.Res.Stopped {
		t.Fatalf("turn %+v %v, want stopped", o.Res, o.Err)
	}
	// The session goes on.
	if res := r.MustTurn("again"); res.Stopped {
		t.Fatalf("next turn %+v", res)
	}
}

func TestASteerAtAToolBoundaryBecomesTheNextPrompt(t *testing.T) {
	t.Parallel()
	var r *enginetest.Rig
	c := calls{answer: func(engine.ToolCall) engine.Verdict {
		// The steer arrives while the tool call waits for approval.
		r.Host.QueueSteer("STEER: keep it short")
		return engine.Verdict{Allow: true}
	}}
	r = fakeRig(t, "steer", c.decide)
	r.Start("")
	res := r.MustTurn("go")
	if res.Stopped || res.Text != "Steered: STEER: keep it short" {
		t.Fatalf("result %+v", res)
	}
	steers := enginetest.Events[event.SteerData](t, r.Host, event.SteerDelivered)
	if len(steers) != 1 || steers[0].ToolID != "t1" {
		t.Fatalf("steerDelivered %+v", steers)
	}
}

func TestResumeLoadsTheSessionWithoutReplayingIt(t *testing.T) {
	t.Parallel()
	r := fakeRig(t, "load", nil)
	if _, id := r.Start("sess-1"); id != "sess-1" {
		t.Fatalf("resumed id %q", id)
	}
	res := r.MustTurn("go")
	if res.Text != "fresh answer" {
		t.Fatalf("result %+v", res)
	}
	for _, d := range enginetest.Events[event.TextData](t, r.Host, event.AssistantDelta) {
		if strings.Contains(d.Text, "old history") {
			t.Fatal("the loaded history was replayed as events")
		}
	}
	noload := fakeRig(t, "noload", nil)
	_, _, err := noload.TryStart("sess-1")
	if f := enginetest.WantFailure(t, err, event.FailEngineError); !strings.Contains(f.Message, "cannot load sessions") {
		t.Fatalf("failure %q", f.Message)
	}
}

func TestAnAgentEndingTheTurnWhenRefusedSaysSo(t *testing.T) {
	t.Parallel()
	c := calls{answer: func(engine.ToolCall) engine.Verdict {
		return engine.Verdict{Message: "Corral's gate denied this shell call: / is outside the worktree."}
	}}
	r := fakeRig(t, "quits", c.decide)
	r.Start("")
	_, err := r.Turn("go")
	f := enginetest.WantFailure(t, err, event.FailEngineError)
	if !strings.Contains(f.Message, "ended the turn after Corral refused Fakeexecute") || !strings.Contains(f.Message, "outside the worktree") {
		t.Fatalf("failure %q", f.Message)
	}
}
