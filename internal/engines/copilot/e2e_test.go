package copilot

// End-to-end tests: the real Copilot CLI (the pinned install under
// deploy/engines) against the fake model server on loopback, the provider
// passed per session. They run in parallel; each starts its own CLI.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

func TestApprovedWriteCreatesTheFile(t *testing.T) {
	t.Parallel()
	for _, api := range []string{"completions", "responses"} {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, fakemodel.Scenario{Steps: []fakemodel.Step{
				toolStep("create", `{"path":"${cwd}/hello.txt","file_text":"Hello from the fake model!\n"}`),
				{Text: "Created hello.txt.", Chunks: 3},
			}}, allow, withWireAPI(api))
			r.start()
			res := r.MustTurn("Please create hello.txt containing a greeting.")

			if got := readFile(t, filepath.Join(r.Cwd, "hello.txt")); got != "Hello from the fake model!\n" {
				t.Fatalf("hello.txt = %q", got)
			}
			if res.Stopped || res.Text != "Created hello.txt." || !res.HasUsage || res.Usage.InputTokens != 200 {
				t.Fatalf("result = %+v", res)
			}
			calls := r.Host.Calls()
			if len(calls) != 1 {
				t.Fatalf("permission calls = %+v", calls)
			}
			c := calls[0]
			if c.Kind != engine.KindEdit || c.Tool != "create" || c.Path != filepath.Join(r.Cwd, "hello.txt") ||
				c.Edit == nil || c.Edit.Existed || len(c.Edit.Before) != 0 || string(c.Edit.After) != "Hello from the fake model!\n" {
				t.Fatalf("permission call = %+v (edit %+v)", c, c.Edit)
			}
			started := enginetest.Events[event.ToolStartedData](t, r.Host, event.ToolStarted)
			finished := enginetest.Events[event.ToolFinishedData](t, r.Host, event.ToolFinished)
			if len(started) != 1 || started[0].Kind != "edit" || started[0].ToolID != c.ID || started[0].Path != c.Path {
				t.Fatalf("toolStarted = %+v", started)
			}
			if len(finished) != 1 || finished[0].Outcome != "ok" || finished[0].ToolID != c.ID {
				t.Fatalf("toolFinished = %+v", finished)
			}
			var deltas strings.Builder
			for _, d := range enginetest.Events[event.TextData](t, r.Host, event.AssistantDelta) {
				deltas.WriteString(d.Text)
			}
			if deltas.String() != "Created hello.txt." {
				t.Fatalf("deltas add up to %q", deltas.String())
			}
			usage := enginetest.Events[event.UsageData](t, r.Host, event.Usage)
			// Two model calls at the fake's 100 in / 10 out, priced as gpt-4.1.
			if len(usage) != 2 || usage[0].InputTokens != 100 || usage[0].OutputTokens != 10 || !usage[0].Estimated ||
				usage[0].Model != "gpt-4.1" || usage[0].CostUSD != (100*2.00+10*8.00)/1e6 {
				t.Fatalf("usage = %+v", usage)
			}
			if ctxs := enginetest.Events[event.ContextData](t, r.Host, event.Context); len(ctxs) == 0 || ctxs[0].WindowTokens == 0 || ctxs[0].UsedTokens == 0 {
				t.Fatalf("context = %+v", ctxs)
			}
			path := "/chat/completions"
			if api == "responses" {
				path = "/responses"
			}
			for _, req := range r.ModelRequests("") {
				if req.Path != path {
					t.Fatalf("the CLI called %s, want %s", req.Path, path)
				}
			}
		})
	}
}

func TestRefusalFeedbackReachesTheModel(t *testing.T) {
	t.Parallel()
	const feedback = "Put it in docs/ instead; the root stays clean."
	r := newRig(t, fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("create", `{"path":"${cwd}/deny.txt","file_text":"nope\n"}`),
		{Text: "Understood."},
	}}, func(context.Context, engine.ToolCall) engine.Verdict {
		return engine.Verdict{Allow: false, Message: feedback}
	})
	r.start()
	r.MustTurn("Create deny.txt.")

	if _, err := os.Stat(filepath.Join(r.Cwd, "deny.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("deny.txt exists after a refusal (stat: %v)", err)
	}
	reqs := r.ModelRequests("")
	if len(reqs) != 2 || !strings.Contains(reqs[1].LastToolResult(), feedback) {
		t.Fatalf("the model's next request does not carry the feedback; tool result: %q", reqs[len(reqs)-1].LastToolResult())
	}
	finished := enginetest.Events[event.ToolFinishedData](t, r.Host, event.ToolFinished)
	if len(finished) != 1 || finished[0].Outcome != "denied" || finished[0].Message != feedback {
		t.Fatalf("toolFinished = %+v", finished)
	}
}

func TestAppliedVerdictKeepsTheRunnersBytes(t *testing.T) {
	t.Parallel()
	const (
		original = "alpha\nbeta\ngamma\ndelta\n"
		proposed = "alpha\nBETA\nGAMMA\ndelta\n"
		// The runner, acting on a reviewer who accepted only the first
		// changed line, writes this itself.
		written = "alpha\nBETA\ngamma\ndelta\n"
		message = "Corral applied part of your edit of notes.txt: beta became BETA. The change of gamma was rejected."
	)
	var proposal *engine.EditProposal
	var r *rig
	r = newRig(t, fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("edit", `{"path":"${cwd}/notes.txt","old_str":"beta\ngamma","new_str":"BETA\nGAMMA"}`),
		{Text: "Noted."},
	}}, func(_ context.Context, call engine.ToolCall) engine.Verdict {
		proposal = call.Edit
		if err := os.WriteFile(filepath.Join(r.Cwd, "notes.txt"), []byte(written), 0o644); err != nil {
			t.Error(err)
		}
		return engine.Verdict{Allow: false, Applied: true, Message: message}
	})
	if err := os.WriteFile(filepath.Join(r.Cwd, "notes.txt"), []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	r.start()
	r.MustTurn("Capitalise beta and gamma in notes.txt.")

	if proposal == nil || !proposal.Existed || proposal.Delete || string(proposal.Before) != original || string(proposal.After) != proposed ||
		proposal.Path != filepath.Join(r.Cwd, "notes.txt") {
		t.Fatalf("edit proposal = %+v", proposal)
	}
	if got := readFile(t, filepath.Join(r.Cwd, "notes.txt")); got != written {
		t.Fatalf("notes.txt = %q, want the runner's %q", got, written)
	}
	reqs := r.ModelRequests("")
	if len(reqs) != 2 || !strings.Contains(reqs[1].LastToolResult(), message) {
		t.Fatalf("the model was not told what was applied; tool result: %q", reqs[len(reqs)-1].LastToolResult())
	}
}

func TestSteerReachesTheModelWithinTheTurn(t *testing.T) {
	t.Parallel()
	const steer = "Use bullet points, please."
	r := newRig(t, fakemodel.Scenario{Steps: []fakemodel.Step{
		{Name: "first", Text: "Thinking about it.", Chunks: 2, Hold: true, HoldAfter: 1},
		{Text: "- steered"},
	}}, allow)
	r.start()
	ctx := context.Background()
	if err := r.eng.Steer(ctx, "too early"); !errors.Is(err, engine.ErrNoTurn) {
		t.Fatalf("Steer before any turn = %v, want ErrNoTurn", err)
	}
	turn := r.GoTurn("Tell me about the project.")
	r.WaitHeld("first")
	if err := r.eng.Steer(ctx, steer); err != nil {
		t.Fatalf("Steer: %v", err)
	}
	if err := r.Fake.Release("first"); err != nil {
		t.Fatal(err)
	}
	out := r.WaitTurn(turn)
	if out.Err != nil || out.Res.Text != "- steered" {
		t.Fatalf("turn = %+v, %v", out.Res, out.Err)
	}
	reqs := r.ModelRequests("")
	if len(reqs) != 2 || !strings.Contains(reqs[1].LastUserText(), steer) {
		t.Fatalf("the steer did not reach the model's next request: %d requests", len(reqs))
	}
	if err := r.eng.Steer(ctx, "too late"); !errors.Is(err, engine.ErrNoTurn) {
		t.Fatalf("Steer after the turn = %v, want ErrNoTurn", err)
	}
}

func TestStopWhileStreaming(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakemodel.Scenario{Steps: []fakemodel.Step{
		{Name: "long", Text: "tick tick tick tick tick", Chunks: 5, Hold: true, HoldAfter: 3},
		{Text: "Fresh answer."},
	}}, allow)
	r.start()
	turn := r.GoTurn("Tell me a long story.")
	r.WaitHeld("long")
	r.WaitEvent(event.AssistantDelta, "the first streamed text", nil)
	if err := r.eng.Interrupt(context.Background()); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	out := r.WaitTurn(turn)
	if out.Err != nil || !out.Res.Stopped {
		t.Fatalf("stopped turn = %+v, %v", out.Res, out.Err)
	}
	if got := r.Host.OfType(event.AssistantText); len(got) != 0 {
		t.Fatalf("an aborted stream produced assistantText %s", got)
	}
	// The conversation goes on.
	if res := r.MustTurn("Something short then."); res.Text != "Fresh answer." || res.Stopped {
		t.Fatalf("turn after the stop = %+v", res)
	}
}

func TestStopRightAfterTheSend(t *testing.T) {
	t.Parallel()
	// The held answer is for the stopped message only: the abort makes the
	// CLI drop the message before it reaches the model, so later requests
	// get the fallback.
	r := newRig(t, fakemodel.Scenario{
		Steps:    []fakemodel.Step{{Name: "never", Match: &fakemodel.Match{LastUserContains: "Start something."}, Text: "too late", Hold: true}},
		Fallback: &fakemodel.Step{Text: "Fresh answer."},
	}, allow)
	r.start()
	turn := r.GoTurn("Start something.")
	// Stop as soon as the CLI has taken the message, before it runs it.
	deadline := time.Now().Add(testWait)
	for {
		r.eng.mu.Lock()
		accepted := r.eng.turn != nil && r.eng.turn.accepted
		r.eng.mu.Unlock()
		if accepted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the CLI never took the message")
		}
		time.Sleep(time.Millisecond)
	}
	if err := r.eng.Interrupt(context.Background()); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	out := r.WaitTurn(turn)
	if out.Err != nil || !out.Res.Stopped {
		t.Fatalf("stopped turn = %+v, %v", out.Res, out.Err)
	}
	if res := r.MustTurn("Something else."); res.Stopped || res.Text != "Fresh answer." {
		t.Fatalf("turn after the stop = %+v", res)
	}
}

func TestStopWhilePermissionIsPending(t *testing.T) {
	t.Parallel()
	asked := make(chan struct{})
	released := make(chan struct{})
	r := newRig(t, fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("create", `{"path":"${cwd}/slow.txt","file_text":"late\n"}`),
		{Text: "Fresh answer."},
	}}, func(ctx context.Context, call engine.ToolCall) engine.Verdict {
		if call.Path != "" && strings.HasSuffix(call.Path, "slow.txt") {
			close(asked)
			<-ctx.Done() // a human who never answers
			close(released)
			return engine.Verdict{Allow: false, Message: "no answer"}
		}
		return engine.Verdict{Allow: true}
	})
	r.start()
	turn := r.GoTurn("Create slow.txt.")
	<-asked
	if err := r.eng.Interrupt(context.Background()); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	out := r.WaitTurn(turn)
	if out.Err != nil || !out.Res.Stopped {
		t.Fatalf("stopped turn = %+v, %v", out.Res, out.Err)
	}
	select {
	case <-released:
	case <-time.After(testWait):
		t.Fatal("the stop did not cancel the pending permission ask")
	}
	if _, err := os.Stat(filepath.Join(r.Cwd, "slow.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("slow.txt was written after the stop (stat: %v)", err)
	}
	finished := enginetest.Events[event.ToolFinishedData](t, r.Host, event.ToolFinished)
	if len(finished) != 1 || finished[0].Outcome == "ok" {
		t.Fatalf("toolFinished = %+v", finished)
	}
	if n := r.pendingPermissions(); n != 0 {
		t.Fatalf("the CLI still holds %d pending permission requests after the stop", n)
	}
	if res := r.MustTurn("Never mind."); res.Text != "Fresh answer." {
		t.Fatalf("turn after the stop = %+v", res)
	}
}

func TestStopWhileShellCommandRuns(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("bash", `{"command":"echo $$ > shell.pid; sleep 300 & echo $! > sleep.pid; wait","description":"sleep a while","mode":"sync"}`),
		{Text: "Fresh answer."},
	}}, allow)
	r.start()
	turn := r.GoTurn("Run the slow command.")
	shellPID := r.waitPIDFile("shell.pid")
	sleepPID := r.waitPIDFile("sleep.pid")
	if err := r.eng.Interrupt(context.Background()); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	out := r.WaitTurn(turn)
	if out.Err != nil || !out.Res.Stopped {
		t.Fatalf("stopped turn = %+v, %v", out.Res, out.Err)
	}
	for name, pid := range map[string]int{"shell": shellPID, "sleep": sleepPID} {
		if !waitProcessGone(pid) {
			t.Errorf("the %s process %d outlived the stop", name, pid)
		}
	}
	calls := r.Host.Calls()
	if len(calls) != 1 || calls[0].Kind != engine.KindShell || !strings.HasPrefix(calls[0].Command, "echo $$ > shell.pid;") {
		t.Fatalf("permission calls = %+v", calls)
	}
	if res := r.MustTurn("Never mind."); res.Text != "Fresh answer." {
		t.Fatalf("turn after the stop = %+v", res)
	}
}

func TestResumeInANewProcessKeepsHistory(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakemodel.Scenario{Steps: []fakemodel.Step{
		{Text: "I will remember APPLE."},
		{Text: "It was APPLE."},
	}}, allow)
	id := r.start()
	r.MustTurn("Remember the word APPLE.")
	firstPID := r.cliPID()
	if err := r.eng.Close(); err != nil {
		t.Fatal(err)
	}
	if !waitProcessGone(firstPID) {
		t.Fatalf("the first CLI %d outlived Close", firstPID)
	}

	r.eng = New().(*Engine)
	r.Opts.Resume = id
	if got := r.start(); got != id {
		t.Fatalf("resumed conversation id = %q, want %q", got, id)
	}
	if r.cliPID() == firstPID {
		t.Fatal("the resumed session runs in the same process")
	}
	if res := r.MustTurn("Which word was it?"); res.Text != "It was APPLE." {
		t.Fatalf("result = %+v", res)
	}
	reqs := r.ModelRequests("")
	last := reqs[len(reqs)-1]
	if !last.ContainsText("Remember the word APPLE.") || !last.ContainsText("I will remember APPLE.") {
		t.Fatal("the resumed conversation's model request lacks the earlier turn")
	}
}

func TestResumeOfUnknownConversationFails(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakemodel.Scenario{}, allow)
	r.Opts.Resume = "00000000-0000-4000-8000-000000000000"
	err := r.tryStart()
	var f *engine.Failure
	if !errors.As(err, &f) || f.Code != event.FailEngineError || !strings.Contains(f.Error(), "resume conversation") {
		t.Fatalf("Start = %v, want an engineError about the resume", err)
	}
	r.eng.Close()
}

func TestKilledCLIFailsTheTurnAndTheSessionResumes(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakemodel.Scenario{Steps: []fakemodel.Step{
		{Text: "First answer."},
		{Name: "hang", Text: "never finished", Hold: true},
		{Text: "Back again."},
	}}, allow)
	r.start()
	r.MustTurn("Remember the word PEAR.")
	turn := r.GoTurn("Take your time.")
	r.WaitHeld("hang")
	pid := r.cliPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	out := r.WaitTurn(turn)
	var f *engine.Failure
	if !errors.As(out.Err, &f) || f.Code != event.FailEngineError || !strings.Contains(f.Message, "signal") {
		t.Fatalf("turn after kill -9 = %+v, %v; want an engineError naming the signal", out.Res, out.Err)
	}
	if !waitProcessGone(pid) {
		t.Fatalf("the killed CLI %d is still there", pid)
	}
	// The same engine starts a new CLI and resumes the conversation.
	if res := r.MustTurn("Are you back?"); res.Text != "Back again." {
		t.Fatalf("turn after the crash = %+v", res)
	}
	if r.cliPID() == pid {
		t.Fatal("no new CLI was started")
	}
	reqs := r.ModelRequests("")
	if !reqs[len(reqs)-1].ContainsText("Remember the word PEAR.") {
		t.Fatal("the conversation lost its history in the crash")
	}
}

func TestUnauthorizedProviderMeansSignInExpired(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakemodel.Scenario{
		Auth:  &fakemodel.Auth{APIKey: "sk-right"},
		Steps: []fakemodel.Step{{Text: "never"}},
	}, allow, withCredentials(map[string]string{"openai-api-key": "sk-wrong"}))
	r.start()
	_, err := r.Turn("Hello?")
	var f *engine.Failure
	if !errors.As(err, &f) || f.Code != event.FailSignInExpired {
		t.Fatalf("turn = %v, want a signInExpired failure", err)
	}
	for _, req := range r.Fake.Requests() {
		if req.Status != 0 && req.Status != 401 {
			t.Fatalf("a model request got %d", req.Status)
		}
	}
	if len(r.Host.OfType(event.Retry)) == 0 {
		t.Fatal("the CLI's retries were not reported")
	}
}

func TestGitHubTokenStaysOutOfToolShells(t *testing.T) {
	t.Parallel()
	const secret = "ghp_corraltestsecret0123456789"
	r := newRig(t, fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("bash", `{"command":"env > env.txt","description":"dump the environment","mode":"sync"}`),
		{Text: "Done."},
	}}, allow, withCredentials(map[string]string{"github-token": secret}))
	r.start()
	r.MustTurn("Dump the environment.")
	env := readFile(t, filepath.Join(r.Cwd, "env.txt"))
	if !strings.Contains(env, "PATH=") {
		t.Fatalf("env.txt does not look like an environment dump: %q", env)
	}
	if strings.Contains(env, secret) || strings.Contains(env, tokenEnvVar) {
		t.Fatal("the github-token reached the tool's shell")
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(r.cliPID()) + "/cmdline")
	if err == nil && !strings.Contains(string(cmdline), "--auth-token-env\x00"+tokenEnvVar) {
		t.Fatalf("the CLI was not given the token variable: %q", cmdline)
	}
}

// cliPID is the running CLI's process id.
func (r *rig) cliPID() int {
	r.T.Helper()
	r.eng.mu.Lock()
	defer r.eng.mu.Unlock()
	if r.eng.cli == nil {
		r.T.Fatal("no CLI is running")
	}
	return r.eng.cli.pid()
}

// pendingPermissions asks the CLI how many permission requests it holds.
func (r *rig) pendingPermissions() int {
	r.T.Helper()
	r.eng.mu.Lock()
	c, id := r.eng.cli, r.eng.sessionID
	r.eng.mu.Unlock()
	var res struct {
		Items []any `json:"items"`
	}
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := c.conn.Call(ctx, "session.permissions.pendingRequests", sessionIDParams{SessionID: id}, &res); err != nil {
		r.T.Fatal(err)
	}
	return len(res.Items)
}

// waitPIDFile waits for a tool to write a process id into name.
func (r *rig) waitPIDFile(name string) int {
	r.T.Helper()
	deadline := time.Now().Add(testWait)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(filepath.Join(r.Cwd, name))
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.T.Fatalf("no process id in %s", name)
	return 0
}

// waitProcessGone waits until pid no longer runs (a zombie nobody reaps
// counts as gone: it runs nothing).
func waitProcessGone(pid int) bool {
	deadline := time.Now().Add(testWait)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			if syscall.Kill(pid, 0) == syscall.ESRCH {
				return true
			}
		} else if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
