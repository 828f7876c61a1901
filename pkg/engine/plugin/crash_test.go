package plugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

const crashable = `
turns:
  - match: first
    steps:
      - say: "First turn."
  - match: second
    steps:
      - tool: shell
        command: "echo plugin-pid=$PPID"
      - sleepMs: 60000
  - match: third
    steps:
      - tool: shell
        command: "echo plugin-pid=$PPID"
      - say: "Third turn."
fallback:
  steps:
    - say: "Already played."
`

func containsLine(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}

// A plugin killed mid-turn fails that turn with an engineError carrying its
// stderr tail; the next turn runs in a fresh process that resumed the
// conversation where the script had saved it.
func TestPluginKilledMidTurnFailsTheTurnAndTheNextResumes(t *testing.T) {
	s, conv := mustStart(t, sessionOptions{scenario: crashable})
	if res, err := s.turn("first"); err != nil || res.Text != "First turn." {
		t.Fatalf("first turn: %+v %v", res, err)
	}
	turn := s.turnAsync(context.Background(), "second")
	s.waitType(event.ToolFinished, 1)
	pid := s.pluginPID(0)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := await(t, turn)
	f := asFailureOf(t, r.err)
	t.Logf("failure: %v\nstderr: %q", f, f.Stderr)
	if f.Code != event.FailEngineError || !strings.Contains(f.Message, "exited (killed by signal: killed) during the turn") {
		t.Fatalf("failure %q (%s)", f.Message, f.Code)
	}
	if !containsLine(f.Stderr, "turn started") {
		t.Fatalf("the failure's stderr tail lacks the plugin's log:\n%s", strings.Join(f.Stderr, "\n"))
	}
	if err := s.eng.Interrupt(context.Background()); err != nil {
		t.Fatalf("interrupt after the crash: %v", err)
	}

	res, err := s.turn("third")
	if err != nil || res.Text != "Third turn." {
		t.Fatalf("the turn after the crash: %+v %v", res, err)
	}
	if again := s.pluginPID(1); again == pid {
		t.Fatalf("the turn after the crash ran in the killed process %d", pid)
	}
	// The resumed script remembers that "first" was played.
	if res, err := s.turn("first"); err != nil || res.Text != "Already played." {
		t.Fatalf("the resumed conversation lost its progress: %+v %v", res, err)
	}

	// A fresh engine resumes the conversation too (a runner restart).
	if err := s.eng.Close(); err != nil {
		t.Fatal(err)
	}
	s2, conv2 := mustStart(t, sessionOptions{scenario: crashable, resume: conv, dir: s.dir})
	if conv2 != conv {
		t.Fatalf("resumed as %q, want %q", conv2, conv)
	}
	if res, err := s2.turn("first"); err != nil || res.Text != "Already played." {
		t.Fatalf("a fresh Start did not resume: %+v %v", res, err)
	}
}

func TestPluginPanicMidTurnReportsThePanic(t *testing.T) {
	s, _ := mustStart(t, sessionOptions{bin: bins.test, env: []string{"TESTPLUGIN_MODE=panic"}})
	_, err := s.turn("go")
	f := asFailureOf(t, err)
	if !strings.Contains(f.Message, "exited (exit status 2) during the turn") {
		t.Fatalf("failure %q", f.Message)
	}
	if !containsLine(f.Stderr, "panic: testplugin: deliberate panic mid-turn") {
		t.Fatalf("stderr tail lacks the panic:\n%s", strings.Join(f.Stderr, "\n"))
	}
	if len(f.Stderr) > stderrLines {
		t.Fatalf("stderr tail has %d lines, over %d", len(f.Stderr), stderrLines)
	}
}

// A plugin that ignores cancellation is killed once cancelWait passes, and
// neither Interrupt nor Close waits on it.
func TestStuckPluginIsKilledWhenItsTurnIsCancelled(t *testing.T) {
	s, _ := mustStart(t, sessionOptions{bin: bins.test, env: []string{"TESTPLUGIN_MODE=hang"}})
	ctx, cancel := context.WithCancel(context.Background())
	turn := s.turnAsync(ctx, "go")
	s.waitType(event.AssistantDelta, 1)
	if err := s.eng.Interrupt(context.Background()); err != nil {
		t.Fatalf("interrupt: %v", err)
	}
	cancel()
	r := await(t, turn)
	f := asFailureOf(t, r.err)
	if !strings.Contains(f.Message, "stopped answering and was killed during the turn") || !errors.Is(f, errCancelUnanswered) {
		t.Fatalf("failure %q (%v)", f.Message, f.Err)
	}
	if err := s.eng.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func TestMismatchedHandshakeFailsTheStart(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		bin       string
		mode      string
		handshake bool
		found     string
		stderr    string
	}{
		{name: "another magic cookie", bin: bins.test, mode: "cookie", handshake: true,
			found:  "found the plugin exited (exit status 1) without a handshake line; its stderr begins: This binary is a plugin",
			stderr: "This binary is a plugin"},
		{name: "another protocol version", bin: bins.test, mode: "version", handshake: true,
			found: "found engine protocol 2"},
		{name: "not a plugin", bin: bins.test, mode: "garbage", handshake: true,
			found: `found the line "hello, I am not a plugin" instead of a handshake line`},
		{name: "not executable", bin: notExec, found: "permission denied"},
		{name: "missing", bin: filepath.Join(t.TempDir(), "absent"), found: "no such file or directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := startSession(t, sessionOptions{bin: c.bin, env: []string{"TESTPLUGIN_MODE=" + c.mode}})
			f := asFailureOf(t, err)
			t.Logf("failure: %v\nstderr: %q", f, f.Stderr)
			if f.Code != event.FailEngineError || !strings.Contains(f.Error(), c.found) {
				t.Fatalf("failure %q, want it to say %q", f.Error(), c.found)
			}
			var he *HandshakeError
			if errors.As(err, &he) != c.handshake || errors.Is(err, wire.ErrProtocol) != c.handshake {
				t.Fatalf("handshake error: %v, want %v", errors.As(err, &he), c.handshake)
			}
			if c.handshake && !strings.Contains(f.Error(), "expected "+expectedHandshake()) {
				t.Fatalf("failure %q does not say what was expected", f.Error())
			}
			if c.stderr != "" && !containsLine(f.Stderr, c.stderr) {
				t.Fatalf("stderr tail %q lacks %q", f.Stderr, c.stderr)
			}
		})
	}
}

func TestCallsBeforeStartAndAfterClose(t *testing.T) {
	e := New(bins.script)
	if _, err := e.Turn(context.Background(), engine.TurnInput{Text: "hi"}); err == nil {
		t.Fatal("Turn before Start succeeded")
	}
	if err := e.Interrupt(context.Background()); err != nil {
		t.Fatalf("interrupt before start: %v", err)
	}
	if _, err := e.Start(context.Background(), engine.StartOptions{}); err == nil || !strings.Contains(err.Error(), "Host is nil") {
		t.Fatalf("Start without a host: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	s, _ := mustStart(t, sessionOptions{scenario: slowTurn})
	s.eng.Close()
	if _, err := s.turn("second"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("Turn after Close: %v", err)
	}
}
