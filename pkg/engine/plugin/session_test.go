package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

func decodeJSON[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %T: %v", v, err)
	}
	return v
}

const endToEnd = `
onSteer: "Noted — {steer}."
turns:
  - steps:
      - say: "Looking around the worktree first."
      - tool: shell
        command: "echo plugin-pid=$PPID"
      - tool: write
        path: notes.txt
        content: "one\ntwo\n"
      - say: "All done."
goals:
  - match: notes
    met: true
    evidence: "notes.txt holds two lines"
`

func TestPluginSessionEndToEnd(t *testing.T) {
	const applied = "Corral applied hunk h1 of notes.txt itself; do not write it again."
	var (
		mu    sync.Mutex
		asked []engine.ToolCall
	)
	var s *session
	decide := func(_ context.Context, c engine.ToolCall) engine.Verdict {
		mu.Lock()
		asked = append(asked, c)
		mu.Unlock()
		switch c.Kind {
		case engine.KindShell:
			// A steer arrives while the command is being approved; the
			// plugin takes it at this tool's boundary.
			s.host.QueueSteer("use tabs")
			return engine.Verdict{Allow: true}
		case engine.KindEdit:
			return engine.Verdict{Applied: true, Message: applied}
		}
		return engine.Verdict{Message: "unexpected tool " + c.Tool}
	}
	s, conv := mustStart(t, sessionOptions{scenario: endToEnd, decide: decide})
	if conv != "script-s1" {
		t.Fatalf("conversation %q, want script-s1", conv)
	}

	res, err := s.turn("go")
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	if res.Stopped || res.Text != "All done." || !res.HasUsage || res.Usage.OutputTokens == 0 {
		t.Fatalf("turn result %+v", res)
	}

	var streamed strings.Builder
	deltas := s.host.OfType(event.AssistantDelta)
	for _, raw := range deltas[:5] {
		streamed.WriteString(decodeJSON[event.TextData](t, raw).Text)
	}
	if got := streamed.String(); got != "Looking around the worktree first." {
		t.Fatalf("streamed %q in %d deltas", got, len(deltas))
	}

	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 {
		t.Fatalf("%d permission asks, want 2: %+v", len(asked), asked)
	}
	if asked[0].Kind != engine.KindShell || asked[0].Command != "echo plugin-pid=$PPID" {
		t.Fatalf("first ask %+v", asked[0])
	}
	ed := asked[1].Edit
	if asked[1].Kind != engine.KindEdit || ed == nil || ed.Path != filepath.Join(s.cwd, "notes.txt") || ed.Existed || string(ed.After) != "one\ntwo\n" {
		t.Fatalf("edit ask %+v (proposal %+v)", asked[1], ed)
	}

	fins := s.host.OfType(event.ToolFinished)
	if len(fins) != 2 {
		t.Fatalf("%d toolFinished events, want 2", len(fins))
	}
	shell := decodeJSON[event.ToolFinishedData](t, fins[0])
	if shell.Outcome != "ok" || !strings.HasPrefix(shell.Output, "plugin-pid=") {
		t.Fatalf("shell finished %+v", shell)
	}
	write := decodeJSON[event.ToolFinishedData](t, fins[1])
	if write.Outcome != "partial" || write.Message != applied {
		t.Fatalf("edit finished %+v", write)
	}
	if _, err := os.Stat(filepath.Join(s.cwd, "notes.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the plugin wrote an edit the runner applied itself: %v", err)
	}

	steers := s.host.OfType(event.SteerDelivered)
	if len(steers) != 1 || decodeJSON[event.SteerData](t, steers[0]).ToolID != "tool-1" {
		t.Fatalf("steerDelivered %s", steers)
	}
	var texts []string
	for _, raw := range s.host.OfType(event.AssistantText) {
		texts = append(texts, decodeJSON[event.TextData](t, raw).Text)
	}
	if strings.Join(texts, "|") != "Looking around the worktree first.|Noted — use tabs.|All done." {
		t.Fatalf("assistant texts %q", texts)
	}
	if len(s.host.OfType(event.Usage)) == 0 || len(s.host.OfType(event.Context)) == 0 {
		t.Fatal("no usage or context events crossed")
	}

	// The script engine judges, forks and compacts, and has no native
	// steering: the started engine claims exactly that.
	started := s.eng.Started()
	if _, ok := started.(engine.Steerer); ok {
		t.Fatal("the started engine claims native steering the plugin lacks")
	}
	j, okJ := started.(engine.Judge)
	f, okF := started.(engine.Forker)
	c, okC := started.(engine.Compactor)
	if !okJ || !okF || !okC {
		t.Fatalf("the started engine lacks advertised interfaces: judge %v fork %v compact %v", okJ, okF, okC)
	}
	ctx := context.Background()
	answer, usage, err := j.Judge(ctx, "Goal:\n- notes exist\n- tests pass\n")
	if err != nil || !strings.Contains(answer, "MET: notes exist") || !strings.Contains(answer, "UNMET: tests pass") || usage.InputTokens == 0 {
		t.Fatalf("judge: %q %+v %v", answer, usage, err)
	}
	if branch, err := f.Fork(ctx); err != nil || branch != "script-s1-fork1" {
		t.Fatalf("fork: %q %v", branch, err)
	}
	before := len(s.host.OfType(event.Context))
	if err := c.Compact(ctx); err != nil || len(s.host.OfType(event.Context)) != before+1 {
		t.Fatalf("compact: %v", err)
	}

	pid := s.pluginPID(0)
	if err := s.eng.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("plugin process %d still exists after Close: %v", pid, err)
	}
	if err := s.eng.Close(); err != nil {
		t.Fatalf("a second close: %v", err)
	}
}

const slowTurn = `
turns:
  - match: first
    steps:
      - say: "Working on it."
      - sleepMs: 60000
      - say: "never said"
  - match: second
    steps:
      - say: "Second turn."
`

func TestInterruptStopsTheTurnAndKeepsTheConversation(t *testing.T) {
	s, _ := mustStart(t, sessionOptions{scenario: slowTurn})
	turn := s.turnAsync(context.Background(), "first")
	s.waitType(event.AssistantDelta, 3) // "Working on it."
	if err := s.eng.Interrupt(context.Background()); err != nil {
		t.Fatalf("interrupt: %v", err)
	}
	r := await(t, turn)
	if r.err != nil || !r.res.Stopped {
		t.Fatalf("interrupted turn: %+v %v", r.res, r.err)
	}
	res, err := s.turn("second")
	if err != nil || res.Text != "Second turn." {
		t.Fatalf("the turn after the interrupt: %+v %v", res, err)
	}
	if err := s.eng.Interrupt(context.Background()); err != nil {
		t.Fatalf("interrupt with no turn running: %v", err)
	}
}

const askThenSay = `
turns:
  - steps:
      - tool: shell
        command: "uptime"
      - say: "never said"
`

// A turn whose context ends while the runner waits for a person: the
// cancellation crosses to the plugin, whose Permit call crosses back and
// ends the runner's wait.
func TestCancelledTurnCancelsThePendingPermit(t *testing.T) {
	asking := make(chan struct{})
	sawCancel := make(chan error, 1)
	decide := func(ctx context.Context, _ engine.ToolCall) engine.Verdict {
		close(asking)
		<-ctx.Done()
		sawCancel <- ctx.Err()
		return engine.Verdict{Message: "stopped"}
	}
	s, _ := mustStart(t, sessionOptions{scenario: askThenSay, decide: decide})
	ctx, cancel := context.WithCancel(context.Background())
	turn := s.turnAsync(ctx, "go")
	<-asking
	cancel()
	r := await(t, turn)
	if r.err != nil || !r.res.Stopped {
		t.Fatalf("cancelled turn: %+v %v", r.res, r.err)
	}
	if err := <-sawCancel; !errors.Is(err, context.Canceled) {
		t.Fatalf("the pending Permit saw %v", err)
	}
	fin := decodeJSON[event.ToolFinishedData](t, s.host.OfType(event.ToolFinished)[0])
	if fin.Outcome != "stopped" {
		t.Fatalf("tool outcome %q, want stopped", fin.Outcome)
	}
}

const envProbe = `
turns:
  - steps:
      - tool: shell
        command: "tr '\\0' '\\n' < /proc/$PPID/environ; echo ARGV; tr '\\0' '\\n' < /proc/$PPID/cmdline"
`

// Credentials reach the plugin over the connection only: neither its
// environment nor its command line holds them, and a credential variable
// of the runner's environment is stripped.
func TestCredentialsNeverInThePluginEnvironmentOrArgv(t *testing.T) {
	const secret = "sk-test-0123456789-secret"
	s, _ := mustStart(t, sessionOptions{
		scenario: envProbe,
		creds:    map[string]string{"anthropic-api-key": secret},
		env:      []string{"OPENAI_API_KEY=" + secret},
	})
	if _, err := s.turn("go"); err != nil {
		t.Fatal(err)
	}
	out := decodeJSON[event.ToolFinishedData](t, s.host.OfType(event.ToolFinished)[0]).Output
	env, argv, ok := strings.Cut(out, "ARGV\n")
	if !ok || !strings.Contains(env, MagicCookieKey+"="+MagicCookieValue) {
		t.Fatalf("could not read the plugin's environment:\n%s", out)
	}
	if strings.Contains(out, secret) {
		t.Fatalf("a credential reached the plugin's environment or argv:\n%s", out)
	}
	if strings.TrimSpace(argv) != bins.script {
		t.Fatalf("plugin argv %q, want just the binary", argv)
	}
}
