package codex

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// slowStep streams text slowly and holds after a few events, so a test can
// act while the model is mid-stream.
func slowStep(name string) fakemodel.Step {
	return fakemodel.Step{
		Name: name, Text: strings.Repeat("streaming words ", 30), Chunks: 30,
		Delay: fakemodel.Duration(20 * time.Millisecond), Hold: true, HoldAfter: 6,
	}
}

func (r *rig) steer(text string) {
	r.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), turnDeadline)
	defer cancel()
	if err := r.eng.Steer(ctx, text); err != nil {
		r.T.Fatalf("Steer: %v", err)
	}
}

func (r *rig) interrupt() {
	r.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), turnDeadline)
	defer cancel()
	if err := r.eng.Interrupt(ctx); err != nil {
		r.T.Fatalf("Interrupt: %v", err)
	}
}

// checkToolsClosed checks that every toolStarted has its toolFinished.
func checkToolsClosed(t testing.TB, r *rig) map[string]event.ToolFinishedData {
	t.Helper()
	fins := map[string]event.ToolFinishedData{}
	for _, f := range enginetest.Events[event.ToolFinishedData](t, r.Host, event.ToolFinished) {
		fins[f.ToolID] = f
	}
	for _, s := range enginetest.Events[event.ToolStartedData](t, r.Host, event.ToolStarted) {
		if _, ok := fins[s.ToolID]; !ok {
			t.Errorf("tool %s (%s) started and never finished", s.ToolID, s.Summary)
		}
	}
	return fins
}

func TestSteerWhileTheModelStreams(t *testing.T) {
	t.Parallel()
	r := newRig(t, script(slowStep("slow"), fakemodel.Step{
		Name: "after", Match: &fakemodel.Match{LastUserContains: "STEER: mention bananas"}, Text: "Bananas it is.",
	}), nil)
	r.start("")
	done := r.GoTurn("tell me a long story")
	r.WaitHeld("slow")
	r.steer("STEER: mention bananas")
	o := r.WaitTurn(done)
	if o.Err != nil || o.Res.Stopped {
		t.Fatalf("turn: %+v %v", o.Res, describe(o.Err))
	}
	if o.Res.Text != "Bananas it is." {
		t.Errorf("final text %q", o.Res.Text)
	}
	reqs := r.requestsContaining("STEER: mention bananas")
	if len(reqs) != 1 || reqs[0].LastUserText() != "STEER: mention bananas" {
		t.Fatalf("want one model request ending with the steer, got %d", len(reqs))
	}
}

func TestSteerWhileACommandRuns(t *testing.T) {
	t.Parallel()
	r := newRig(t, script(
		fakemodel.Step{Name: "cmd", Tools: tools(shellCall("call_sleep", "sleep 2; echo slept", false))},
		fakemodel.Step{Name: "after", Match: &fakemodel.Match{LastUserContains: "STEER: during the command"}, Text: "Noted."},
	), nil)
	r.start("")
	done := r.GoTurn("run something slow")
	r.WaitEvent(event.ToolStarted, "the command to start", nil)
	r.steer("STEER: during the command")
	o := r.WaitTurn(done)
	if o.Err != nil {
		t.Fatalf("turn: %v", describe(o.Err))
	}
	reqs := r.requestsContaining("STEER: during the command")
	if len(reqs) != 1 {
		t.Fatalf("want one model request carrying the steer, got %d", len(reqs))
	}
	// The steer follows the command's output: it was held for the tool.
	if !strings.Contains(reqs[0].LastToolResult(), "slept") {
		t.Errorf("the steered request's last tool result %q lacks the command output", reqs[0].LastToolResult())
	}
	fins := checkToolsClosed(t, r)
	if f := fins["call_sleep"]; f.Outcome != "ok" || f.ExitCode == nil || *f.ExitCode != 0 || !strings.Contains(f.Output, "slept") {
		t.Errorf("command finished %+v", f)
	}
}

func TestStopWhileTheModelStreams(t *testing.T) {
	t.Parallel()
	r := newRig(t, script(slowStep("slow"), fakemodel.Step{Name: "next", Text: "Fresh start."}), nil)
	r.start("")
	done := r.GoTurn("tell me a long story")
	r.WaitHeld("slow")
	r.WaitEvent(event.AssistantDelta, "streamed text", nil)
	r.interrupt()
	o := r.WaitTurn(done)
	if o.Err != nil || !o.Res.Stopped {
		t.Fatalf("interrupted turn: %+v %v, want Stopped", o.Res, describe(o.Err))
	}
	// The thread stays usable.
	if res := r.MustTurn("again"); res.Text != "Fresh start." {
		t.Errorf("next turn text %q", res.Text)
	}
}

func TestStopWhileAnApprovalIsPending(t *testing.T) {
	t.Parallel()
	asked := make(chan struct{})
	permitEnded := make(chan error, 1)
	r := newRig(t, script(
		fakemodel.Step{Name: "cmd", Tools: tools(shellCall("call_rm", "rm -rf build", true))},
	), func(ctx context.Context, call engine.ToolCall) engine.Verdict {
		close(asked)
		<-ctx.Done() // a human who never answers
		permitEnded <- ctx.Err()
		return engine.Verdict{Message: "stopped"}
	})
	r.start("")
	done := r.GoTurn("clean up")
	<-asked
	r.interrupt()
	o := r.WaitTurn(done)
	if o.Err != nil || !o.Res.Stopped {
		t.Fatalf("interrupted turn: %+v %v, want Stopped", o.Res, describe(o.Err))
	}
	select {
	case <-permitEnded:
	case <-time.After(turnDeadline):
		t.Fatal("the pending Permit was never released")
	}
	fins := checkToolsClosed(t, r)
	if f := fins["call_rm"]; f.Outcome != "stopped" && f.Outcome != "denied" {
		t.Errorf("the command ended %q, want stopped or denied", f.Outcome)
	}
}

// An interrupt kills a running command and Codex never completes its
// item; Corral closes it so no client shows it running forever.
func TestStopWhileACommandRunsClosesTheTool(t *testing.T) {
	t.Parallel()
	r := newRig(t, script(fakemodel.Step{Name: "cmd", Tools: tools(shellCall("call_long", "sleep 30", false))}), nil)
	r.start("")
	done := r.GoTurn("wait a while")
	r.WaitEvent(event.ToolStarted, "the command to start", nil)
	r.interrupt()
	o := r.WaitTurn(done)
	if o.Err != nil || !o.Res.Stopped {
		t.Fatalf("interrupted turn: %+v %v", o.Res, describe(o.Err))
	}
	if f := checkToolsClosed(t, r)["call_long"]; f.Outcome != "stopped" {
		t.Errorf("the command ended %+v, want stopped", f)
	}
}

func TestResumeInANewProcessKeepsHistory(t *testing.T) {
	t.Parallel()
	r := newRig(t, script(
		fakemodel.Step{Name: "one", Text: "I will remember the banana."},
		fakemodel.Step{Name: "two", Match: &fakemodel.Match{Contains: "I will remember the banana."}, Text: "You said banana."},
	), nil)
	first, thread := r.start("")
	r.MustTurn("remember: banana")
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	_, resumed := r.start(thread)
	if resumed != thread {
		t.Fatalf("resumed thread %s, want %s", resumed, thread)
	}
	res := r.MustTurn("what did I say?")
	if res.Text != "You said banana." {
		t.Fatalf("resumed turn text %q: the history did not reach the model", res.Text)
	}
	last := r.requestsContaining("what did I say?")
	if len(last) != 1 || !last[0].ContainsText("remember: banana") {
		t.Fatal("the resumed request lacks the first turn")
	}
	// Usage restored on resume is a baseline, not new spend.
	if res.Usage.InputTokens != 100 || res.Usage.OutputTokens != 10 {
		t.Errorf("resumed turn usage %+v, want just its own call", res.Usage)
	}
}

func TestForkContinuesOnANewThread(t *testing.T) {
	t.Parallel()
	r := newRig(t, script(fakemodel.Step{Name: "one", Text: "Base answer."}), nil)
	_, thread := r.start("")
	r.MustTurn("base question")
	ctx, cancel := context.WithTimeout(context.Background(), turnDeadline)
	defer cancel()
	fork, err := r.eng.Fork(ctx)
	if err != nil {
		t.Fatalf("Fork: %v", describe(err))
	}
	if fork == "" || fork == thread {
		t.Fatalf("fork id %q, parent %q", fork, thread)
	}
	r.MustTurn("question on the fork")
	reqs := r.requestsContaining("question on the fork")
	if len(reqs) != 1 || !reqs[0].ContainsText("base question") {
		t.Fatal("the fork's request lacks the parent's history")
	}
	if got := reqs[0].Headers["thread-id"]; got != fork {
		t.Errorf("the fork's request ran on thread %q, want %q", got, fork)
	}
	// The parent stays resumable without the fork's turn.
	r.eng.Close()
	r.start(thread)
	r.MustTurn("back on the parent")
	back := r.requestsContaining("back on the parent")
	if len(back) != 1 || back[0].ContainsText("question on the fork") {
		t.Fatal("the parent thread picked up the fork's turn")
	}
}

func TestJudgeDoesNotEnterTheConversation(t *testing.T) {
	t.Parallel()
	r := newRig(t, script(
		fakemodel.Step{Name: "one", Text: "Working on it."},
		fakemodel.Step{Name: "judge", Match: &fakemodel.Match{LastUserContains: "Is the goal met?"}, Text: "NO: tests missing", Usage: &fakemodel.Usage{Input: 500, Output: 5}},
		fakemodel.Step{Name: "two", Text: "Continuing."},
	), nil)
	r.start("")
	r.MustTurn("start the task")
	before := len(r.Host.Events())
	ctx, cancel := context.WithTimeout(context.Background(), turnDeadline)
	defer cancel()
	answer, usage, err := r.eng.Judge(ctx, "Is the goal met?")
	if err != nil {
		t.Fatalf("Judge: %v", describe(err))
	}
	if answer != "NO: tests missing" {
		t.Errorf("judge answer %q", answer)
	}
	if usage.InputTokens != 500 || usage.OutputTokens != 5 || !usage.Estimated {
		t.Errorf("judge usage %+v, want the side question's own figures", usage)
	}
	if n := len(r.Host.Events()); n != before {
		t.Errorf("the side question emitted %d events", n-before)
	}
	r.MustTurn("go on")
	if reqs := r.requestsContaining("go on"); len(reqs) != 1 || reqs[0].ContainsText("Is the goal met?") {
		t.Fatal("the side question leaked into the conversation")
	}
}

func TestCompactSummarisesTheThread(t *testing.T) {
	t.Parallel()
	sc := script(fakemodel.Step{Name: "one", Text: "First answer."}, fakemodel.Step{Name: "two", Text: "After compaction."})
	sc.Side = []fakemodel.Step{{Name: "summary", Match: &fakemodel.Match{Contains: "CONTEXT CHECKPOINT COMPACTION"}, Text: "SUMMARY: the user asked twice."}}
	r := newRig(t, sc, nil)
	r.start("")
	r.MustTurn("first question")
	ctx, cancel := context.WithTimeout(context.Background(), turnDeadline)
	defer cancel()
	if err := r.eng.Compact(ctx); err != nil {
		t.Fatalf("Compact: %v", describe(err))
	}
	r.MustTurn("second question")
	reqs := r.requestsContaining("second question")
	if len(reqs) != 1 || !reqs[0].ContainsText("SUMMARY: the user asked twice.") || reqs[0].ContainsText("First answer.") {
		t.Fatal("the request after compaction does not carry the summary in place of the history")
	}
}

func TestKilledCLIFailsTheTurnAndTheNextTurnResumes(t *testing.T) {
	t.Parallel()
	r := newRig(t, script(
		slowStep("slow"),
		fakemodel.Step{Name: "again", Match: &fakemodel.Match{Contains: "remember: kiwi"}, Text: "Still here: kiwi."},
	), nil)
	r.start("")
	done := r.GoTurn("remember: kiwi, then talk")
	r.WaitHeld("slow")
	r.eng.mu.Lock()
	pid := r.eng.srv.pid
	r.eng.mu.Unlock()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the CLI: %v", err)
	}
	o := r.WaitTurn(done)
	f := wantFailure(t, o.Err, event.FailEngineError)
	if !strings.Contains(f.Message, "killed") {
		t.Errorf("failure %q does not say the CLI was killed", f.Message)
	}
	if len(f.Stderr) == 0 {
		t.Error("the failure carries no stderr tail")
	}
	checkToolsClosed(t, r)
	res := r.MustTurn("are you there?")
	if res.Text != "Still here: kiwi." {
		t.Fatalf("after the crash: %q", res.Text)
	}
}

func TestModelEndpointFailures(t *testing.T) {
	t.Parallel()
	always := func(s fakemodel.Step) fakemodel.Scenario {
		s.Always = true
		return fakemodel.Scenario{Steps: []fakemodel.Step{s}}
	}
	zero := 0
	cases := []struct {
		name     string
		scenario fakemodel.Scenario
		dead     bool
		key      string
		want     event.FailureCode
		retries  bool
	}{
		{name: "dead endpoint", dead: true, want: event.FailEngineError},
		{name: "401", scenario: always(fakemodel.Step{Text: "never"}), key: "sk-wrong", want: event.FailSignInExpired},
		{name: "500", scenario: always(fakemodel.Step{Error: &fakemodel.ErrorReply{Status: 500}}), want: event.FailEngineError, retries: true},
		{name: "cut stream", scenario: always(fakemodel.Step{Text: "partial answer", Chunks: 4, CutAfter: &zero}), want: event.FailEngineError, retries: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, tc.scenario, nil)
			if tc.dead {
				r.Opts.ModelEndpoint = deadEndpoint(t)
			}
			if tc.key != "" {
				r.Opts.Credentials = map[string]string{CredentialItem: tc.key}
			}
			r.start("")
			_, err := r.Turn("hello?")
			f := wantFailure(t, err, tc.want)
			t.Logf("%s: %s", tc.name, f.Message)
			if tc.retries && len(r.Host.OfType(event.Retry)) == 0 {
				t.Error("no retry events before the failure")
			}
		})
	}
}

// deadEndpoint returns the URL of a loopback port nothing listens on.
func deadEndpoint(t testing.TB) string {
	fake := fakemodel.New(fakemodel.Scenario{})
	url, err := fake.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fake.Close()
	return url
}

func TestRejectedConfigFailsTheSession(t *testing.T) {
	t.Parallel()
	r := newRig(t, script(), nil)
	eng := New().(*Engine)
	eng.extraConfig = []byte("\n[corral_typo]\nnot_a_codex_key = 1\n")
	ctx, cancel := context.WithTimeout(context.Background(), turnDeadline)
	defer cancel()
	_, err := eng.Start(ctx, r.Opts)
	defer eng.Close()
	f := wantFailure(t, err, event.FailEngineError)
	if !strings.Contains(f.Message, "corral_typo") {
		t.Errorf("failure %q does not name the rejected setting", f.Message)
	}
	if n := len(r.Fake.Requests()); n != 0 {
		t.Errorf("the model endpoint got %d requests", n)
	}
}

func TestUsageAndContextEvents(t *testing.T) {
	t.Parallel()
	r := newRig(t, script(
		fakemodel.Step{Name: "one", Tools: tools(shellCall("call_ls", "ls", false)), Usage: &fakemodel.Usage{Input: 2000, Output: 40, CacheRead: 500}},
		fakemodel.Step{Name: "two", Text: "Listed.", Usage: &fakemodel.Usage{Input: 2100, Output: 10}},
	), nil)
	r.start("")
	res := r.MustTurn("list files")
	us := enginetest.Events[event.UsageData](t, r.Host, event.Usage)
	if len(us) != 2 {
		t.Fatalf("usage events %+v, want one per model call", us)
	}
	if u := us[0]; u.InputTokens != 1500 || u.CacheReadTokens != 500 || u.OutputTokens != 40 || !u.Estimated || u.CostUSD <= 0 || u.Model != testModel {
		t.Errorf("first usage %+v", u)
	}
	if res.Usage.InputTokens != 1500+2100 || res.Usage.OutputTokens != 50 || !res.HasUsage {
		t.Errorf("turn usage %+v", res.Usage)
	}
	cs := enginetest.Events[event.ContextData](t, r.Host, event.Context)
	if len(cs) == 0 {
		t.Fatal("no context events")
	}
	if c := cs[len(cs)-1]; c.UsedTokens != 2110 || c.WindowTokens <= c.UsedTokens || c.Percent <= 0 {
		t.Errorf("last context %+v", c)
	}
	raw, _ := json.Marshal(res.Usage)
	t.Logf("turn usage %s", raw)
}
