package claude

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// writeBashScenario writes hello.txt, shows it with Bash, then answers.
func writeBashScenario() fakemodel.Scenario {
	return fakemodel.Scenario{
		Name: "write-bash",
		Steps: []fakemodel.Step{
			toolStep("write", "I'll create the file.", call("toolu_write", "Write", map[string]string{"file_path": "${cwd}/hello.txt", "content": "hello\n"})),
			toolStep("bash", "", call("toolu_bash", "Bash", map[string]string{"command": "cat hello.txt", "description": "Show hello.txt"})),
			textStep("final", "Done."),
		},
	}
}

func TestTurnWriteAndBashAllowed(t *testing.T) {
	t.Parallel()
	s := newSession(t, writeBashScenario(), sessionOpts{decide: allowAll})
	res := s.MustTurn("Create hello.txt, then show it.")

	if got, err := os.ReadFile(filepath.Join(s.Cwd, "hello.txt")); err != nil || string(got) != "hello\n" {
		t.Fatalf("hello.txt = %q, %v; want the Write's content", got, err)
	}
	if res.Stopped || res.Text != "Done." {
		t.Errorf("result = %+v, want Done. and not stopped", res)
	}
	if !res.HasUsage || res.Usage.Estimated || res.Usage.CostUSD <= 0 {
		t.Errorf("usage = %+v, want an exact cost", res.Usage)
	}
	calls := s.Host.Calls()
	if len(calls) != 2 {
		t.Fatalf("Permit calls = %d, want 2 (Write, Bash): %+v", len(calls), calls)
	}
	w, b := calls[0], calls[1]
	if w.Tool != "Write" || w.Kind != engine.KindEdit || w.Edit == nil || string(w.Edit.After) != "hello\n" || w.Edit.Existed {
		t.Errorf("Write call = %+v (edit %+v)", w, w.Edit)
	}
	if b.Tool != "Bash" || b.Kind != engine.KindShell || b.Command != "cat hello.txt" {
		t.Errorf("Bash call = %+v", b)
	}
	fin := s.toolFinished()
	if len(fin) != 2 || fin[0].Outcome != "ok" || fin[1].Outcome != "ok" || fin[1].Output != "hello" || fin[1].ExitCode == nil || *fin[1].ExitCode != 0 {
		t.Errorf("toolFinished = %+v", fin)
	}
	if n := len(s.Host.OfType(event.Usage)); n != 3 {
		t.Errorf("usage events = %d, want one per model call (3)", n)
	}
	if n := len(s.Host.OfType(event.Context)); n != 3 {
		t.Errorf("context events = %d, want 3", n)
	}
	var texts []string
	for _, raw := range s.Host.OfType(event.AssistantText) {
		var d event.TextData
		_ = json.Unmarshal(raw, &d)
		texts = append(texts, d.Text)
	}
	if strings.Join(texts, "|") != "I'll create the file.|Done." {
		t.Errorf("assistantText = %q", texts)
	}
	if len(s.Host.OfType(event.AssistantDelta)) == 0 {
		t.Error("no assistantDelta events")
	}
}

func TestTurnAsksAndDenies(t *testing.T) {
	t.Parallel()
	// The Write is an ask: the gate waits for a person, played by a test
	// goroutine that answers after a moment. The Bash is denied outright.
	type ask struct {
		call   engine.ToolCall
		answer chan engine.Verdict
	}
	asks := make(chan ask)
	decide := func(ctx context.Context, c engine.ToolCall) engine.Verdict {
		if c.Tool != "Write" {
			return engine.Verdict{Message: "no shell commands in this session"}
		}
		a := ask{call: c, answer: make(chan engine.Verdict, 1)}
		select {
		case asks <- a:
		case <-ctx.Done():
			return engine.Verdict{Message: "cancelled"}
		}
		select {
		case v := <-a.answer:
			return v
		case <-ctx.Done():
			return engine.Verdict{Message: "cancelled"}
		}
	}
	ui := make(chan string, 1)
	go func() {
		a := <-asks
		time.Sleep(300 * time.Millisecond)
		a.answer <- engine.Verdict{Allow: true}
		ui <- a.call.Path
	}()
	s := newSession(t, writeBashScenario(), sessionOpts{decide: decide})
	s.MustTurn("Create hello.txt, then show it.")

	if path := <-ui; path != filepath.Join(s.Cwd, "hello.txt") {
		t.Errorf("the person was asked about %q", path)
	}
	if got, _ := os.ReadFile(filepath.Join(s.Cwd, "hello.txt")); string(got) != "hello\n" {
		t.Errorf("hello.txt = %q after the asked Write was allowed", got)
	}
	fin := s.toolFinished()
	if len(fin) != 2 || fin[0].Outcome != "ok" || fin[1].Outcome != "denied" || fin[1].Message != "no shell commands in this session" {
		t.Fatalf("toolFinished = %+v", fin)
	}
	reqs := s.modelRequests()
	text, isErr, ok := toolResultFor(reqs[len(reqs)-1], "toolu_bash")
	if !ok || !isErr || !strings.Contains(text, "no shell commands in this session") {
		t.Errorf("the model got tool_result %q (error %v, found %v) for the denied Bash", text, isErr, ok)
	}
}

// TestRetryIsReported: an overloaded API is retried by the CLI, visibly.
func TestRetryIsReported(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		{Name: "overloaded", Error: &fakemodel.ErrorReply{Status: 529, Headers: map[string]string{"retry-after": "0"}}},
		textStep("ok", "Made it."),
	}}
	s := newSession(t, sc, sessionOpts{decide: allowAll})
	res := s.MustTurn("Hello?")
	if res.Text != "Made it." {
		t.Fatalf("turn = %q", res.Text)
	}
	retries := s.Host.OfType(event.Retry)
	var d event.RetryData
	if len(retries) != 1 || json.Unmarshal(retries[0], &d) != nil || d.Attempt != 1 || !strings.HasPrefix(d.Error, "HTTP 529") {
		t.Errorf("retry events = %s", retries)
	}
}
