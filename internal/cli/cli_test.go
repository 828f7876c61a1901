package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/supervisor/daemon"
	"github.com/corral-dev/corral/internal/testrunner"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testrunner.Remove()
	os.Exit(code)
}

// What the script engine plays in these tests: an answer, a turn that
// waits to be stopped, a turn that asks before a command runs.
const (
	echoScenario = `fallback: {steps: [{say: "echo"}]}`
	slowScenario = `fallback: {steps: [{sleepMs: 600000}]}`
	askScenario  = `fallback: {steps: [{tool: shell, command: "make --version"}, {say: "ran it"}]}`
)

// newScript creates a script session playing scenario and returns its id.
func newScript(t *testing.T, scenario string, args ...string) string {
	t.Helper()
	args = append([]string{"new", "--engine", "script", "--cwd", t.TempDir(), "--scenario", testrunner.Scenario(t, scenario)}, args...)
	return strings.TrimSpace(mustRun(t, args...))
}

// startDaemon runs a supervisor with real runners on a fresh state folder,
// which it returns; CORRAL_STATE points at it.
func startDaemon(t *testing.T) string {
	t.Helper()
	runner := testrunner.Path(t)
	state := t.TempDir()
	t.Setenv("CORRAL_STATE", state)
	ignore := goleak.IgnoreCurrent()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(ctx, daemon.Config{StateDir: state, RunnerPath: runner, Logger: zaptest.NewLogger(t),
			Ready: func(daemon.Listening) { close(ready) }})
	}()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		if err := goleak.Find(ignore); err != nil {
			t.Error(err)
		}
	})
	return state
}

// run runs the command line and returns exit status, stdout and stderr.
func run(args ...string) (int, string, string) {
	var out, errw bytes.Buffer
	code := Main(args, &out, &errw)
	return code, out.String(), errw.String()
}

// jsonResult decodes the result of a --json command's envelope into v.
func jsonResult(out string, v any) error {
	var env wire.Reply
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		return fmt.Errorf("not one JSON envelope: %w: %q", err, out)
	}
	if !env.OK {
		return fmt.Errorf("envelope says it failed: %q", out)
	}
	return json.Unmarshal(env.Result, v)
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := run(args...)
	if code != 0 {
		t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
	}
	return out
}

// waitEvents polls the events command until its output holds want.
func waitEvents(t *testing.T, id, want string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out := mustRun(t, "events", id)
		if strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("events never showed %q:\n%s", want, out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSessionFromTheCommandLine(t *testing.T) {
	state := startDaemon(t)
	cwd := t.TempDir()
	out := mustRun(t, "new", "--engine", "script", "--cwd", cwd, "--scenario", testrunner.Scenario(t, echoScenario))
	id := strings.TrimSpace(out)
	if len(id) != 12 || out != id+"\n" {
		t.Fatalf("new printed %q, want the id alone", out)
	}
	raw, err := os.ReadFile(filepath.Join(state, "sessions", id, "meta.json"))
	if err != nil || !strings.Contains(string(raw), `"cwd": "`+cwd+`"`) {
		t.Fatalf("meta.json %s %v", raw, err)
	}

	table := mustRun(t, "ls")
	if !strings.HasPrefix(table, "ID") || !strings.Contains(table, id) || !strings.Contains(table, "script") {
		t.Fatalf("ls:\n%s", table)
	}
	var list []api.Session
	if err := jsonResult(mustRun(t, "ls", "--json"), &list); err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("ls --json: %v %v", list, err)
	}

	// Flags may follow the positional arguments; words are joined.
	reply := mustRun(t, "send", id, "hello", "there", "--state", state)
	if !strings.Contains(reply, `"id":"m`) {
		t.Fatalf("send printed %q", reply)
	}
	events := waitEvents(t, id, `"type":"turnEnded"`)
	lines := strings.Split(strings.TrimSuffix(events, "\n"), "\n")
	onDisk, _ := os.ReadFile(filepath.Join(state, "sessions", id, "events.jsonl"))
	if !strings.HasPrefix(string(onDisk), events) || !strings.Contains(lines[1], `"text":"hello there"`) {
		t.Fatalf("events differ from the log:\n%s\n%s", events, onDisk)
	}
	if tail := mustRun(t, "events", id, "--from", "3"); !strings.HasPrefix(tail, `{"seq":3,`) {
		t.Fatalf("events --from 3:\n%s", tail)
	}

	var st api.Session
	if err := json.Unmarshal([]byte(mustRun(t, "status", id)), &st); err != nil || st.Status == nil || st.Status.Turn != 1 {
		t.Fatalf("status: %+v %v", st, err)
	}
	mustRun(t, "stop", id)
	mustRun(t, "rm", id)
	code, _, errOut := run("status", id)
	if code != 1 || errOut != "supervisor status: session "+id+" not found\n" {
		t.Fatalf("status after rm: %d %q", code, errOut)
	}
}

func TestAnswerAndHunkCommands(t *testing.T) {
	startDaemon(t)
	id := newScript(t, askScenario)
	mustRun(t, "send", id, "please ask")
	ask := askID(t, waitEvents(t, id, `"type":"askOpened"`))
	mustRun(t, "answer", id, ask, "allow", "--note", "fine by me")
	waitEvents(t, id, `"type":"turnEnded"`)

	// No edit is open: the runner's refusal proves the command went.
	code, _, errOut := run("hunk", id, "e1/h2", "accept", "--note", "ok")
	if code != 1 || !strings.Contains(errOut, `no edit "e1" open`) {
		t.Fatalf("hunk e1/h2: %d %q", code, errOut)
	}
	code, _, errOut = run("hunk", id, "h2", "reject")
	if code != 1 || !strings.Contains(errOut, "no edit is open for decisions") {
		t.Fatalf("bare hunk: %d %q", code, errOut)
	}
	code, _, errOut = run("answer", id, "a9", "deny")
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, `no open ask "a9"`) {
		t.Fatalf("answer to no ask: %d %q", code, errOut)
	}
}

// askID is the id of the ask opened in events, the output of the events
// command.
func askID(t *testing.T, events string) string {
	t.Helper()
	for _, line := range strings.Split(events, "\n") {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				AskID string `json:"askId"`
			} `json:"data"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "askOpened" {
			return ev.Data.AskID
		}
	}
	t.Fatalf("no askOpened event in:\n%s", events)
	return ""
}

func TestUsageMistakesExit2(t *testing.T) {
	t.Setenv("CORRAL_STATE", t.TempDir())
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"send", "abc"},
		{"send", "abc", " "},
		{"stop"},
		{"stop", "a", "b"},
		{"answer", "id", "a1", "maybe"},
		{"hunk", "id", "e1/", "accept"},
		{"hunk", "id", "/h1", "accept"},
		{"hunk", "id", "e1/h1/x", "accept"},
		{"hunk", "id", "h1", "allow"},
		{"new"},
		{"events", "id", "--from", "x"},
		{"serve", "--idle-ttl", "0s"},
		{"serve", "extra"},
		{"serve", "--log-level", "loud"},
		{"goal", "id"},
		{"goal", "id", "set"},
		{"goal", "id", "maybe"},
		{"goal", "id", "clear", "extra"},
		{"mode", "id"},
		{"spend-cap", "id", "-1"},
		{"spend-cap", "id", "lots"},
		{"fork"},
		{"run"},
	} {
		if code, _, errOut := run(args...); code != 2 || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	for _, c := range commands() {
		code, _, errOut := run(c.name, "--help")
		if code != 0 || !strings.HasPrefix(errOut, "Usage: supervisor "+c.name) {
			t.Errorf("%s --help: exit %d, %q", c.name, code, errOut)
		}
	}
	if code, out, _ := run("help"); code != 0 || !strings.Contains(out, "events ID") {
		t.Errorf("help: %d %q", code, out)
	}
}

func TestNoDaemonIsAOneLineError(t *testing.T) {
	t.Setenv("CORRAL_STATE", t.TempDir())
	code, _, errOut := run("ls")
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "no supervisor answers") {
		t.Fatalf("ls without a daemon: %d %q", code, errOut)
	}
}

func TestExternalCommandsAreDispatched(t *testing.T) {
	var got []string
	ext := External{Name: "hunks", Summary: "diff and apply hunks", Main: func(args []string, stdout, _ io.Writer) int {
		got = args
		return 7
	}}
	var out, errw bytes.Buffer
	if code := Main([]string{"hunks", "diff", "a", "b"}, &out, &errw, ext); code != 7 || strings.Join(got, " ") != "diff a b" {
		t.Fatalf("exit %d, args %q", code, got)
	}
	Main([]string{"help"}, &out, &errw, ext)
	if !strings.Contains(out.String(), "diff and apply hunks") {
		t.Fatalf("help does not list the external command:\n%s", out.String())
	}
}

func TestWaitAndCancel(t *testing.T) {
	startDaemon(t)
	id := newScript(t, slowScenario)
	mustRun(t, "send", id, "first")
	// A stop before the turn starts would only clear the queue.
	waitEvents(t, id, `"type":"turnStarted"`)
	queued := mustRun(t, "send", id, "second")
	var q struct {
		MessageID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(queued), &q); err != nil || q.MessageID == "" {
		t.Fatalf("send's result %q: %v", queued, err)
	}
	if code, _, errOut := run("wait", id, "--for", "idle", "--timeout", "50ms"); code != 1 || !strings.Contains(errOut, "did not happen within 50ms") {
		t.Fatalf("wait on a running turn: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := run("cancel", id, "m999"); code != 1 || !strings.Contains(errOut, `no queued message "m999"`) {
		t.Fatalf("cancel of an unknown message: exit %d, stderr %q", code, errOut)
	}
	if out := mustRun(t, "cancel", id, q.MessageID); !strings.Contains(out, `"text":"second"`) {
		t.Fatalf("cancel printed %q", out)
	}
	mustRun(t, "stop", id)
	out := mustRun(t, "wait", id, "--for", "turnEnd", "--after", "0")
	if !strings.Contains(out, `"type":"turnEnded"`) || strings.Count(out, "\n") != 1 {
		t.Fatalf("wait printed %q, want the turnEnded line", out)
	}
	var r api.WaitReply
	if err := jsonResult(mustRun(t, "wait", id, "--json"), &r); err != nil || !r.Met || r.For != api.WaitIdle {
		t.Fatalf("wait --json: %+v %v", r, err)
	}
	if code, _, errOut := run("wait", id, "--for", "lunch"); code != 2 || !strings.Contains(errOut, "turnEnd, human or idle") {
		t.Fatalf("bad --for: exit %d %q", code, errOut)
	}
}
