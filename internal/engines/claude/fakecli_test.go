package claude

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// Some failures cannot be provoked from the real CLI: a request type it
// does not send yet, a garbled stdout, a turn that ignores an interrupt. For
// those the test binary stands in for the CLI: run with fakeCLIEnv set, it
// plays the mode named there.
const fakeCLIEnv = "CORRAL_TEST_FAKE_CLAUDE"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeCLIEnv); mode != "" {
		os.Exit(runFakeCLI(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// runFakeCLI speaks just enough of the protocol for one mode.
func runFakeCLI(mode string, args []string) int {
	if len(args) == 1 && args[0] == "--version" {
		if v, ok := strings.CutPrefix(mode, "version="); ok {
			fmt.Println(v)
			return 0
		}
		fmt.Println("2.1.328 (Claude Code)")
		return 0
	}
	out := json.NewEncoder(os.Stdout)
	emit := func(v any) { _ = out.Encode(v) }
	result := func(isError bool, text string) {
		emit(map[string]any{"type": "result", "subtype": "success", "is_error": isError, "result": text, "total_cost_usd": 0.01,
			"usage": map[string]any{"input_tokens": 1, "output_tokens": 1}})
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	for in.Scan() {
		var f struct {
			Type      string          `json:"type"`
			RequestID string          `json:"request_id"`
			Request   json.RawMessage `json:"request"`
			Response  struct {
				Subtype   string `json:"subtype"`
				RequestID string `json:"request_id"`
				Error     string `json:"error"`
			} `json:"response"`
		}
		if err := json.Unmarshal(in.Bytes(), &f); err != nil {
			fmt.Fprintf(os.Stderr, "Error parsing streaming input line: %v\n", err)
			return 1
		}
		var req struct {
			Subtype string `json:"subtype"`
		}
		_ = json.Unmarshal(f.Request, &req)
		switch {
		case f.Type == "control_request" && req.Subtype == "initialize":
			emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": f.RequestID, "response": map[string]any{}}})
		case f.Type == "control_request" && req.Subtype == "interrupt":
			emit(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": f.RequestID, "response": map[string]any{}}})
			// mode ignore-interrupt: acknowledge, and never end the turn
		case f.Type == "user":
			emit(map[string]any{"type": "system", "subtype": "init", "model": "fake"})
			switch mode {
			case "unknown-request":
				emit(map[string]any{"type": "control_request", "request_id": "x-1", "request": map[string]any{"subtype": "elicitation", "message": "pick one"}})
			case "garbage":
				fmt.Fprintln(os.Stderr, "fake CLI: about to write garbage")
				fmt.Println("this is not json")
			case "exit":
				fmt.Fprintln(os.Stderr, "fake CLI: boom")
				return 3
			case "ignore-interrupt":
			default:
				result(false, "ok")
			}
		case f.Type == "control_response" && f.Response.RequestID == "x-1":
			// The host's answer to the unknown request: it must be an
			// explicit error.
			if f.Response.Subtype == "error" && f.Response.Error != "" {
				result(false, "answered with error: "+f.Response.Error)
			} else {
				result(true, "the unknown request was not refused: "+in.Text())
			}
		}
	}
	return 0
}

// fakeSession starts the engine on the fake CLI in mode.
func fakeSession(t *testing.T, mode string) (*Engine, *enginetest.Host) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	host := enginetest.NewHost(nil)
	e := New().(*Engine)
	e.stopTimeout = 500 * time.Millisecond
	_, err = e.Start(context.Background(), engine.StartOptions{
		Dir:         t.TempDir(),
		Cwd:         t.TempDir(),
		Credentials: map[string]string{CredentialItem: "k"},
		Env:         append(testEnv(t), fakeCLIEnv+"="+mode),
		Config:      map[string]string{locate.KeyPath: exe},
		Host:        host,
		Logger:      zaptest.NewLogger(t),
	})
	if err != nil {
		t.Fatalf("Start on the fake CLI (%s): %v", mode, describe(err))
	}
	t.Cleanup(func() { e.Close() })
	return e, host
}

func fakeTurn(t *testing.T, e *Engine) (engine.TurnResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return e.Turn(ctx, engine.TurnInput{ID: "m", Text: "go"})
}

func TestUnknownControlRequestGetsAnError(t *testing.T) {
	t.Parallel()
	e, _ := fakeSession(t, "unknown-request")
	res, err := fakeTurn(t, e)
	if err != nil {
		t.Fatalf("turn: %v", describe(err))
	}
	if !strings.Contains(res.Text, "answered with error: Corral does not handle the control request elicitation") {
		t.Errorf("result = %q", res.Text)
	}
}

func TestUnparsableStdoutFailsWithStderr(t *testing.T) {
	t.Parallel()
	e, _ := fakeSession(t, "garbage")
	_, err := fakeTurn(t, e)
	var f *engine.Failure
	if !errors.As(err, &f) || f.Code != event.FailEngineError || !errors.Is(f, errNotFrame) {
		t.Fatalf("turn error = %v; want an engineError about a line that is not a frame", err)
	}
	if !strings.Contains(strings.Join(f.Stderr, "\n"), "about to write garbage") {
		t.Errorf("failure stderr = %q; want the CLI's stderr tail", f.Stderr)
	}
	// The next turn starts a new process (resuming the conversation).
	if _, err := fakeTurn(t, e); err == nil || !errors.Is(err, errNotFrame) {
		t.Errorf("second turn: %v; want the same failure from a fresh process", err)
	}
}

func TestCLIExitMidTurn(t *testing.T) {
	t.Parallel()
	e, _ := fakeSession(t, "exit")
	_, err := fakeTurn(t, e)
	var f *engine.Failure
	if !errors.As(err, &f) || f.Code != event.FailEngineError || !strings.Contains(f.Message, "exited with status 3") {
		t.Fatalf("turn error = %v; want an engineError naming the exit status", err)
	}
	if !strings.Contains(strings.Join(f.Stderr, "\n"), "fake CLI: boom") {
		t.Errorf("failure stderr = %q", f.Stderr)
	}
}

func TestStopTimeoutKillsTheCLI(t *testing.T) {
	t.Parallel()
	e, _ := fakeSession(t, "ignore-interrupt")
	pid := e.conn.pid()
	done := make(chan error, 1)
	go func() {
		_, err := fakeTurn(t, e)
		done <- err
	}()
	// Wait for the turn to be running before stopping it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		e.mu.Lock()
		running := e.turn != nil
		e.mu.Unlock()
		if running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the turn never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := e.Interrupt(context.Background()); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn did not end after the stop timeout")
	}
	var f *engine.Failure
	if !errors.As(err, &f) || f.Code != event.FailEngineError || !strings.Contains(f.Message, "did not end the turn") {
		t.Fatalf("turn error = %v; want the stop-timeout failure", err)
	}
	waitGone(t, pid)
}

func TestUnsupportedOrMissingCLI(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, mode string
		want             []string
	}{
		{"old version", exe, "version=2.0.77 (Claude Code)", []string{"found Claude Code 2.0.77", "need Claude Code 2.1.x with x >= 328"}},
		{"next minor", exe, "version=2.2.0 (Claude Code)", []string{"found Claude Code 2.2.0"}},
		{"not claude", exe, "version=1.2.3 (Something Else)", []string{"not a Claude Code version", "need"}},
		{"missing", "/nonexistent/claude", "", []string{"/nonexistent/claude", "need Claude Code 2.1.x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := New()
			_, err := e.Start(context.Background(), engine.StartOptions{
				Dir:         t.TempDir(),
				Cwd:         t.TempDir(),
				Credentials: map[string]string{CredentialItem: "k"},
				Env:         append(testEnv(t), fakeCLIEnv+"="+tc.mode),
				Config:      map[string]string{locate.KeyPath: tc.path},
				Host:        enginetest.NewHost(nil),
			})
			defer e.Close()
			var f *engine.Failure
			if !errors.As(err, &f) || f.Code != event.FailEngineError {
				t.Fatalf("Start = %v; want an engineError failure", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(f.Error(), w) {
					t.Errorf("failure %q does not say %q", f.Error(), w)
				}
			}
		})
	}
}

func TestStartWithoutKeyIsSignInExpired(t *testing.T) {
	t.Parallel()
	e := New()
	defer e.Close()
	_, err := e.Start(context.Background(), engine.StartOptions{
		Dir: t.TempDir(), Cwd: t.TempDir(), Host: enginetest.NewHost(nil),
		Env: testEnv(t), Credentials: map[string]string{},
	})
	var f *engine.Failure
	if !errors.As(err, &f) || f.Code != event.FailSignInExpired {
		t.Fatalf("Start = %v; want signInExpired", err)
	}
}
