package copilot

// Transcript-driven tests: recorded CLI traffic (testdata/transcripts) is
// played to the engine over real pipes, without the CLI, to pin down how
// every kind of session event maps onto Corral events and answers.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

func TestReplayApprovedWrite(t *testing.T) {
	r := newReplay(t, "write-approved", allow)
	r.start()
	res, err := r.turn(t, "Please create hello.txt containing a greeting.")
	if err != nil {
		t.Fatal(err)
	}
	const want = "Tool said: Created file /src/project/hello.txt with 27 characters "
	if res.Stopped || res.Text != want || !res.HasUsage || res.Usage.InputTokens != 200 || res.Usage.OutputTokens != 20 {
		t.Fatalf("result = %+v", res)
	}

	calls := r.host.Calls()
	if len(calls) != 1 {
		t.Fatalf("calls = %+v", calls)
	}
	c := calls[0]
	if c.ID != "call_85428264" || c.Tool != "create" || c.Kind != engine.KindEdit || c.Path != "/src/project/hello.txt" ||
		c.Edit == nil || c.Edit.Existed || c.Edit.Delete || string(c.Edit.After) != "Hello from the mock model!\n" {
		t.Fatalf("call = %+v, edit = %+v", c, c.Edit)
	}
	answers := r.p.sent(methodHandlePermission)
	if len(answers) != 1 || decision(t, answers[0]) != (permissionDecision{Kind: "approve-once"}) {
		t.Fatalf("permission answers = %+v", answers)
	}

	var kinds []event.Type
	for _, e := range r.host.Events() {
		if len(kinds) == 0 || kinds[len(kinds)-1] != e.Type {
			kinds = append(kinds, e.Type)
		}
	}
	wantKinds := []event.Type{
		event.Context, event.Usage, event.ToolStarted, event.ToolFinished, event.Context,
		event.AssistantDelta, event.Usage, event.AssistantText,
	}
	if !equalKinds(kinds, wantKinds) {
		t.Fatalf("event kinds = %v, want %v", kinds, wantKinds)
	}
	started := enginetest.Events[event.ToolStartedData](t, r.host, event.ToolStarted)
	if started[0] != (event.ToolStartedData{ToolID: "call_85428264", Tool: "create", Kind: "edit", Summary: "Creating file: hello.txt", Path: "/src/project/hello.txt"}) {
		t.Fatalf("toolStarted = %+v", started[0])
	}
	finished := enginetest.Events[event.ToolFinishedData](t, r.host, event.ToolFinished)
	if f := finished[0]; f.ToolID != "call_85428264" || f.Outcome != "ok" || !strings.HasPrefix(f.Output, "Created file /src/project/hello.txt") {
		t.Fatalf("toolFinished = %+v", f)
	}
	usage := enginetest.Events[event.UsageData](t, r.host, event.Usage)
	if u := usage[0]; u != (event.UsageData{InputTokens: 100, OutputTokens: 10, CostUSD: 0.00028, Estimated: true, Model: "gpt-4.1"}) {
		t.Fatalf("usage = %+v", u)
	}
	ctxs := enginetest.Events[event.ContextData](t, r.host, event.Context)
	if c := ctxs[0]; c.UsedTokens != 8657 || c.WindowTokens != 128000 || c.Percent < 6.7 || c.Percent > 6.8 {
		t.Fatalf("context = %+v", c)
	}
}

func TestReplayRejectedWriteSendsTheFeedback(t *testing.T) {
	r := newReplay(t, "write-rejected", func(context.Context, engine.ToolCall) engine.Verdict {
		return engine.Verdict{Allow: false, Message: "denied by probe driver"}
	})
	r.start()
	res, err := r.turn(t, "Please create deny.txt.")
	if err != nil {
		t.Fatal(err)
	}
	answers := r.p.sent(methodHandlePermission)
	if len(answers) != 1 || decision(t, answers[0]) != (permissionDecision{Kind: "reject", Feedback: "denied by probe driver"}) {
		t.Fatalf("permission answers = %+v", answers)
	}
	finished := enginetest.Events[event.ToolFinishedData](t, r.host, event.ToolFinished)
	if len(finished) != 1 || finished[0].Outcome != "denied" || finished[0].Message != "denied by probe driver" {
		t.Fatalf("toolFinished = %+v", finished)
	}
	if !strings.Contains(res.Text, "rejected") {
		t.Fatalf("final text = %q", res.Text)
	}
}

func TestReplayStopWhileStreaming(t *testing.T) {
	r := newReplay(t, "stream-aborted", allow)
	r.p.before = func(method string, _ json.RawMessage) {
		if method == methodSessionAbort {
			r.interruptWhenStreaming(t)
		}
	}
	r.start()
	res, err := r.turn(t, "SLOW: tell me a long story")
	if err != nil || !res.Stopped || res.Text != "" {
		t.Fatalf("turn = %+v, %v; want stopped without text", res, err)
	}
	if deltas := enginetest.Events[event.TextData](t, r.host, event.AssistantDelta); len(deltas) != 1 || deltas[0].Text != "tick " {
		t.Fatalf("deltas = %+v", deltas)
	}
}

// interruptWhenStreaming stops the turn once its first text has arrived.
func (r *replay) interruptWhenStreaming(t *testing.T) {
	go func() {
		if err := r.host.WaitFor(time.Minute, "streamed text", func(ev []enginetest.Event) bool {
			return len(ev) > 0 && ev[len(ev)-1].Type == event.AssistantDelta
		}); err != nil {
			t.Error(err)
			return
		}
		if err := r.eng.Interrupt(context.Background()); err != nil {
			t.Errorf("Interrupt: %v", err)
		}
	}()
}

func TestReplayStopResolvesThePendingPermission(t *testing.T) {
	asked := make(chan struct{})
	cancelled := make(chan struct{})
	r := newReplay(t, "permission-aborted", func(ctx context.Context, _ engine.ToolCall) engine.Verdict {
		close(asked)
		<-ctx.Done()
		close(cancelled)
		return engine.Verdict{Allow: false}
	})
	r.p.before = func(method string, _ json.RawMessage) {
		if method == methodSessionAbort {
			go func() {
				<-asked
				if err := r.eng.Interrupt(context.Background()); err != nil {
					t.Errorf("Interrupt: %v", err)
				}
			}()
		}
	}
	r.start()
	res, err := r.turn(t, "Please create slowperm.txt.")
	if err != nil || !res.Stopped {
		t.Fatalf("turn = %+v, %v; want stopped", res, err)
	}
	select {
	case <-cancelled:
	case <-time.After(time.Minute):
		t.Fatal("the pending ask was not cancelled by the stop")
	}
	finished := enginetest.Events[event.ToolFinishedData](t, r.host, event.ToolFinished)
	if len(finished) != 1 || finished[0].ToolID != "call_71204533" || finished[0].Outcome != "stopped" {
		t.Fatalf("toolFinished = %+v", finished)
	}
	// Whatever the engine answered for the request, it was a refusal.
	for _, a := range r.p.sent(methodHandlePermission) {
		if d := decision(t, a); d.Kind != "reject" {
			t.Fatalf("answer after a stop = %+v", d)
		}
	}
}

func TestReplayStopWhileShellRuns(t *testing.T) {
	r := newReplay(t, "shell-aborted", allow)
	r.p.before = func(method string, _ json.RawMessage) {
		if method == methodSessionAbort {
			go func() {
				if err := r.eng.Interrupt(context.Background()); err != nil {
					t.Errorf("Interrupt: %v", err)
				}
			}()
		}
	}
	r.start()
	res, err := r.turn(t, "SLEEPTOOL please")
	if err != nil || !res.Stopped {
		t.Fatalf("turn = %+v, %v; want stopped", res, err)
	}
	calls := r.host.Calls()
	if len(calls) != 1 || calls[0].Kind != engine.KindShell || calls[0].Tool != "bash" || calls[0].Command != "sleep 30 && echo done > slept.txt" {
		t.Fatalf("calls = %+v", calls)
	}
	started := enginetest.Events[event.ToolStartedData](t, r.host, event.ToolStarted)
	if len(started) != 1 || started[0].Command != "sleep 30 && echo done > slept.txt" || started[0].Kind != "shell" {
		t.Fatalf("toolStarted = %+v", started)
	}
	finished := enginetest.Events[event.ToolFinishedData](t, r.host, event.ToolFinished)
	if len(finished) != 1 || finished[0].Outcome != "stopped" {
		t.Fatalf("toolFinished = %+v", finished)
	}
}

// steerOnImmediateSends has the engine steered, with the prompt, at each
// immediate session.send it makes: the two steer replays' trigger.
func (r *replay) steerOnImmediateSends(t *testing.T) {
	r.p.before = func(method string, params json.RawMessage) {
		var p sendParams
		json.Unmarshal(params, &p)
		if method == methodSessionSend && p.Mode == "immediate" {
			go func() {
				if err := r.eng.Steer(context.Background(), p.Prompt); err != nil {
					t.Errorf("Steer: %v", err)
				}
			}()
		}
	}
}

func TestReplaySteerWithinTheTurn(t *testing.T) {
	r := newReplay(t, "steer-within-turn", allow)
	r.steerOnImmediateSends(t)
	r.start()
	res, err := r.turn(t, "tell me something")
	if err != nil || res.Text != "after steer" {
		t.Fatalf("turn = %+v, %v", res, err)
	}
	steers := r.p.sent(methodSessionSend)
	if len(steers) != 2 {
		t.Fatalf("sends = %d, want the turn and the steer", len(steers))
	}
	var p sendParams
	json.Unmarshal(steers[1].Params, &p)
	if p != (sendParams{SessionID: replaySession, Prompt: "STEER: use bullet points", Mode: "immediate"}) {
		t.Fatalf("steer = %+v", p)
	}
}

func TestReplaySteerTakenAfterTheIdleStaysInTheTurn(t *testing.T) {
	r := newReplay(t, "steer-after-idle", allow)
	r.steerOnImmediateSends(t)
	r.start()
	res, err := r.turn(t, "Write a haiku.")
	if err != nil || res.Text != "Autumn leaves drift down." {
		t.Fatalf("turn = %+v, %v; want it to run on into the steer's answer", res, err)
	}
	if texts := enginetest.Events[event.TextData](t, r.host, event.AssistantText); len(texts) != 2 {
		t.Fatalf("assistantText = %+v", texts)
	}
}

func TestReplayStrayRunIsAbortedBeforeTheNextTurn(t *testing.T) {
	aborted := make(chan struct{})
	r := newReplay(t, "stray-run", allow)
	r.p.after = func(method string) {
		if method == methodSessionAbort {
			close(aborted)
		}
	}
	r.start()
	if res, err := r.turn(t, "First."); err != nil || res.Text != "One." {
		t.Fatalf("first turn = %+v, %v", res, err)
	}
	<-aborted // the engine saw the stray run and is stopping it
	res, err := r.turn(t, "Second.")
	if err != nil || res.Text != "Two." {
		t.Fatalf("second turn = %+v, %v", res, err)
	}
	if texts := enginetest.Events[event.TextData](t, r.host, event.AssistantText); len(texts) != 2 {
		t.Fatalf("assistantText = %+v; the stray run must not emit into a turn", texts)
	}
}

func TestReplayRunAheadOfTheTurnIsNotTheTurns(t *testing.T) {
	r := newReplay(t, "stray-run-ahead", func(context.Context, engine.ToolCall) engine.Verdict {
		t.Error("the runner was asked about a tool call of a run no turn started")
		return engine.Verdict{}
	})
	r.start()
	res, err := r.turn(t, "Second.")
	if err != nil || res.Text != "Two." {
		t.Fatalf("turn = %+v, %v", res, err)
	}
	if texts := enginetest.Events[event.TextData](t, r.host, event.AssistantText); len(texts) != 1 || texts[0].Text != "Two." {
		t.Fatalf("assistantText = %+v", texts)
	}
	if started := r.host.OfType(event.ToolStarted); len(started) != 0 {
		t.Fatalf("toolStarted = %s", started)
	}
	answers := r.p.sent(methodHandlePermission)
	if len(answers) != 1 || decision(t, answers[0]) != (permissionDecision{Kind: "reject", Feedback: feedbackNoTurn}) {
		t.Fatalf("permission answers = %+v", answers)
	}
}

func TestReplaySessionErrorsMapToFailureCodes(t *testing.T) {
	tests := []struct {
		transcript string
		code       event.FailureCode
		retries    int
	}{
		{"provider-unauthorized", event.FailSignInExpired, 2},
		{"context-full", event.FailContextFull, 0},
	}
	for _, tt := range tests {
		t.Run(tt.transcript, func(t *testing.T) {
			r := newReplay(t, tt.transcript, allow)
			r.start()
			_, err := r.turn(t, "hello")
			var f *engine.Failure
			if !errors.As(err, &f) || f.Code != tt.code {
				t.Fatalf("turn error = %v, want code %s", err, tt.code)
			}
			retries := enginetest.Events[event.RetryData](t, r.host, event.Retry)
			if len(retries) != tt.retries {
				t.Fatalf("retry events = %+v, want %d", retries, tt.retries)
			}
			for i, rd := range retries {
				if rd.Attempt != i+1 || rd.Error == "" {
					t.Fatalf("retry %d = %+v", i, rd)
				}
			}
		})
	}
}

func TestReplayCrashFailsTheTurnWithTheStderrTail(t *testing.T) {
	r := newReplay(t, "stream-aborted", allow)
	r.p.endsEarly = true
	r.p.before = func(method string, _ json.RawMessage) {
		if method == methodSessionAbort {
			go func() {
				r.host.WaitFor(time.Minute, "streamed text", func(ev []enginetest.Event) bool {
					return len(ev) > 0 && ev[len(ev)-1].Type == event.AssistantDelta
				})
				r.stderr.Write([]byte("FATAL: out of memory\n"))
				r.cli.kill()
			}()
		}
	}
	r.start()
	_, err := r.turn(t, "SLOW: tell me a long story")
	var f *engine.Failure
	if !errors.As(err, &f) || f.Code != event.FailEngineError {
		t.Fatalf("turn error = %v, want an engineError", err)
	}
	if !strings.Contains(f.Message, "signal") || !strings.Contains(f.Message, "FATAL: out of memory") ||
		len(f.Stderr) != 1 || f.Stderr[0] != "FATAL: out of memory" {
		t.Fatalf("failure = %+v", f)
	}
	if err := r.eng.Steer(context.Background(), "late"); !errors.Is(err, engine.ErrNoTurn) {
		t.Fatalf("Steer after the crash = %v, want ErrNoTurn", err)
	}
}

func equalKinds(a, b []event.Type) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
