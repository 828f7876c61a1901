package codex

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// These tests drive the engine with recorded app-server traffic: no CLI
// and no model, so they pin the protocol handling down exactly.

func TestReplayApprovalsAllowed(t *testing.T) {
	t.Parallel()
	rr := newReplayRig(t, "approve-1", nil)
	rr.start("")
	res, err := rr.turn("Please create hello.txt containing hello.")
	if err != nil {
		t.Fatalf("turn: %v", describe(err))
	}
	if res.Text != "Done." || res.Stopped {
		t.Errorf("result %+v", res)
	}
	calls := rr.host.Calls()
	if len(calls) != 2 {
		t.Fatalf("Permit calls %+v", calls)
	}
	if c := calls[0]; c.Kind != engine.KindShell || c.Command != "echo hello > hello.txt && cat hello.txt" || c.ID != "call_3" {
		t.Errorf("command call %+v", c)
	}
	checkEdit(t, calls[1], filepath.Join(rr.cwd, "hello_patch.txt"), "", false, "hello from apply_patch\n")

	want := []string{"initialize", "initialized", "thread/start", "turn/start", `reply 0 {"decision":"accept"}`, `reply 1 {"decision":"accept"}`}
	if got := rr.r.sent(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sent:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	fins := enginetest.Events[event.ToolFinishedData](t, rr.host, event.ToolFinished)
	if len(fins) != 2 {
		t.Fatalf("toolFinished %+v", fins)
	}
	if f := fins[0]; f.ToolID != "call_3" || f.Outcome != "ok" || f.ExitCode == nil || *f.ExitCode != 0 || f.Output != "hello\n" || f.DurationMS != 59 {
		t.Errorf("command finished %+v", f)
	}
	if f := fins[1]; f.ToolID != "call_6" || f.Outcome != "ok" || !strings.Contains(f.Output, "added") {
		t.Errorf("patch finished %+v", f)
	}
	starts := enginetest.Events[event.ToolStartedData](t, rr.host, event.ToolStarted)
	if len(starts) != 2 || starts[0].Kind != "shell" || starts[1].Kind != "edit" || starts[1].Path != filepath.Join(rr.cwd, "hello_patch.txt") {
		t.Errorf("toolStarted %+v", starts)
	}
	// Three model calls of 1000 input tokens (100 cached); 20, 20 and 1 output.
	us := enginetest.Events[event.UsageData](t, rr.host, event.Usage)
	if len(us) != 3 {
		t.Fatalf("usage events %+v", us)
	}
	if res.Usage.InputTokens != 2700 || res.Usage.CacheReadTokens != 300 || res.Usage.OutputTokens != 41 || !res.Usage.Estimated {
		t.Errorf("turn usage %+v", res.Usage)
	}
	texts := enginetest.Events[event.TextData](t, rr.host, event.AssistantText)
	if len(texts) != 1 || texts[0].Text != "Done." {
		t.Errorf("assistantText %+v", texts)
	}
}

func TestReplayApprovalsDeclinedTellTheModelWhy(t *testing.T) {
	t.Parallel()
	rr := newReplayRig(t, "approve-decline", func(_ context.Context, c engine.ToolCall) engine.Verdict {
		return engine.Verdict{Message: "refused: " + c.ID}
	})
	rr.start("")
	if _, err := rr.turn("Please create hello.txt containing hello."); err != nil {
		t.Fatalf("turn: %v", describe(err))
	}
	sent := strings.Join(rr.r.sent(), "\n")
	// Each decline is preceded by the steer carrying the reason (the
	// recording has no answer for it, so the replay refuses it).
	want := "turn/start\nturn/steer\nreply 0 {\"decision\":\"decline\"}\nturn/steer\nreply 1 {\"decision\":\"decline\"}"
	if !strings.Contains(sent, want) {
		t.Errorf("sent:\n%s\nwant it to contain:\n%s", sent, want)
	}
	for _, f := range enginetest.Events[event.ToolFinishedData](t, rr.host, event.ToolFinished) {
		if f.Outcome != "denied" || !strings.Contains(f.Message, "refused: "+f.ToolID) {
			t.Errorf("tool finished %+v, want denied with the gate's message", f)
		}
	}
}

func TestReplayInterruptClosesOpenTools(t *testing.T) {
	t.Parallel()
	rr := newReplayRig(t, "interrupt", nil)
	// The recorder interrupted its second turn twice; the second got "no
	// active turn". The engine sends one.
	rr.r.skip = func(req jsonrpc.Message) bool { return string(req.ID) == "6" }
	rr.start("")

	stop := func(what string, ready event.Type) engine.TurnResult {
		t.Helper()
		done := make(chan enginetest.TurnOutcome, 1)
		go func() {
			res, err := rr.turn(what)
			done <- enginetest.TurnOutcome{Res: res, Err: err}
		}()
		if err := rr.host.WaitFor(turnDeadline, string(ready), func(evs []enginetest.Event) bool { return hasEvent(evs, ready) }); err != nil {
			t.Fatal(err)
		}
		if err := rr.eng.Interrupt(context.Background()); err != nil {
			t.Fatalf("Interrupt: %v", err)
		}
		o := <-done
		if o.Err != nil || !o.Res.Stopped {
			t.Fatalf("%s: %+v %v, want stopped", what, o.Res, describe(o.Err))
		}
		return o.Res
	}
	stop("Give me a slow answer.", event.AssistantDelta)
	stop("cmdsleep please", event.ToolStarted)
	fins := enginetest.Events[event.ToolFinishedData](t, rr.host, event.ToolFinished)
	if len(fins) != 1 || fins[0].Outcome != "stopped" {
		t.Fatalf("the killed command was not closed as stopped: %+v", fins)
	}
	res, err := rr.turn("ping after interrupt")
	if err != nil || res.Stopped || res.Text == "" {
		t.Fatalf("turn after the interrupts: %+v %v", res, describe(err))
	}
}

func TestReplaySteer(t *testing.T) {
	t.Parallel()
	rr := newReplayRig(t, "steer", nil)
	rr.r.skip = func(req jsonrpc.Message) bool {
		// The recorder's probes: steers with wrong ids, a turn/start
		// during a turn, and a final thread/read.
		p := string(req.Params)
		return strings.Contains(p, `"expectedTurnId":"nope"`) || strings.Contains(p, `"expectedTurnId":"wrong-turn-id"`) ||
			strings.Contains(p, "STEER: via turn/start") || req.Method == "thread/read"
	}
	rr.start("")
	if err := rr.eng.Steer(context.Background(), "nobody listens"); !errors.Is(err, engine.ErrNoTurn) {
		t.Fatalf("Steer while idle: %v, want ErrNoTurn", err)
	}
	if err := rr.eng.Interrupt(context.Background()); err != nil {
		t.Fatalf("Interrupt while idle: %v, want nil", err)
	}
	steerDuring := func(what, steer string, ready event.Type) engine.TurnResult {
		t.Helper()
		done := make(chan enginetest.TurnOutcome, 1)
		go func() {
			res, err := rr.turn(what)
			done <- enginetest.TurnOutcome{Res: res, Err: err}
		}()
		if err := rr.host.WaitFor(turnDeadline, string(ready), func(evs []enginetest.Event) bool { return hasEvent(evs, ready) }); err != nil {
			t.Fatal(err)
		}
		if err := rr.eng.Steer(context.Background(), steer); err != nil {
			t.Fatalf("Steer: %v", err)
		}
		o := <-done
		if o.Err != nil {
			t.Fatalf("%s: %v", what, describe(o.Err))
		}
		return o.Res
	}
	if res := steerDuring("Give me a slow answer.", "STEER: also mention bananas", event.AssistantDelta); res.Text != "Steered: STEER: also mention bananas" {
		t.Errorf("steered turn text %q", res.Text)
	}
	if res, err := rr.turn("Give me a slow answer again."); err != nil || res.Text != "Steered: STEER: via turn/start" {
		t.Errorf("second turn %+v %v", res, err)
	}
	res := steerDuring("cmdsleep please", "STEER: during command", event.ToolStarted)
	if res.Text != "Steered: STEER: during command" {
		t.Errorf("steered turn text %q", res.Text)
	}
	// A steer sends the command to the background; Codex never completes
	// it, so Corral closes it when the turn ends.
	var closed bool
	for _, f := range enginetest.Events[event.ToolFinishedData](t, rr.host, event.ToolFinished) {
		closed = closed || f.Outcome == "stopped"
	}
	if !closed {
		t.Error("the backgrounded command was left open")
	}
}

func TestReplayResumeCountsOnlyNewUsage(t *testing.T) {
	t.Parallel()
	rr := newReplayRig(t, "resume", nil)
	rr.r.skip = func(req jsonrpc.Message) bool { return req.Method == "thread/list" }
	const thread = "01a229ad-a886-7833-9142-34d8842e249f"
	if id := rr.start(thread); id != thread {
		t.Fatalf("resumed %s", id)
	}
	res, err := rr.turn("What did we do before?")
	if err != nil {
		t.Fatalf("turn: %v", describe(err))
	}
	// The resumed thread's restored totals (3041) are a baseline; the
	// one new call used 1000 input (100 cached) and the rest output.
	if res.Usage.InputTokens+res.Usage.CacheReadTokens > 1100 || res.Usage.InputTokens == 0 {
		t.Errorf("usage %+v counts the restored history", res.Usage)
	}
	sent := rr.r.sent()
	if len(sent) < 3 || sent[2] != "thread/resume" {
		t.Errorf("sent %v", sent)
	}
}

func TestReplayModelFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
	}{
		{"fail-deadport-bounded", "Connection failed"},
		{"fail-fail500", "internalServerError"},
		{"fail-failstream", "stream disconnected before completion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rr := newReplayRig(t, tc.name, nil)
			rr.start("")
			_, err := rr.turn("hello?")
			f := wantFailure(t, err, event.FailEngineError)
			if !strings.Contains(f.Message, tc.want) {
				t.Errorf("failure %q lacks %q", f.Message, tc.want)
			}
		})
	}
}

func TestReplayRefusesAFallbackProvider(t *testing.T) {
	t.Parallel()
	rr := newReplayRigProvider(t, "approve-1", nil, false)
	_, err := rr.eng.Start(context.Background(), rr.opts)
	f := wantFailure(t, err, event.FailEngineError)
	if !strings.Contains(f.Message, `model provider "mock"`) {
		t.Errorf("failure %q does not name the provider", f.Message)
	}
}
