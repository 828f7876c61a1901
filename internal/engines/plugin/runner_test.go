package plugin

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/eventlog/eventlogtest"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/runner"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// waitLimit bounds every wait in these tests; it is a deadlock guard, not a
// timing goal.
const waitLimit = 30 * time.Second

// scriptPlugin is cmd/corral-script-plugin, built once for the package.
var scriptPlugin string

func TestMain(m *testing.M) {
	flag.Parse()
	// A fuzz worker runs only a fuzz target, which needs no binary.
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "corral-plugin-engine-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scriptPlugin = filepath.Join(dir, "corral-script-plugin")
	cmd := exec.Command("go", "build", "-o", scriptPlugin, "github.com/corral-dev/corral/cmd/corral-script-plugin")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the script plugin:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// session is a runner driving the plugin engine, with a recorder of its
// mirrored events (the pattern of internal/runner's own tests).
type session struct {
	t   *testing.T
	r   *runner.Runner
	cwd string
	rec *eventlogtest.Recorder
}

func newSession(t *testing.T, scenario string, tweak func(*wire.Spec)) *session {
	t.Helper()
	s := &session{t: t, cwd: t.TempDir(), rec: eventlogtest.New(waitLimit)}
	sc := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(sc, []byte(scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := wire.Spec{ID: "p1", Engine: "plugin", Cwd: s.cwd, Scenario: sc}
	if tweak != nil {
		tweak(&spec)
	}
	r, err := runner.New(runner.Options{
		Dir:          t.TempDir(),
		Spec:         spec,
		Engines:      map[string]engine.Factory{"plugin": New},
		EngineConfig: map[string]string{KeyPluginPath: scriptPlugin},
		Env:          proc.BaseEnv(),
		Mirror:       s.rec.Record,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.r = r
	t.Cleanup(func() { r.Close() })
	return s
}

func (s *session) do(cmd command.Request) {
	s.t.Helper()
	if reply := s.r.Do(context.Background(), cmd); !reply.OK {
		s.t.Fatalf("%s refused: %v", cmd.Cmd(), reply.Error)
	}
}

const askAndEdit = `
turns:
  - steps:
      - say: "Checking the machine, then editing f.txt."
      - tool: shell
        command: "uptime"
      - tool: write
        path: f.txt
        content: "A\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\nB\n"
      - say: "Done."
`

// A plugin's tool calls take the runner's path: the gate asks a person
// about the command, and the edit is staged as hunks; with one hunk
// rejected the runner writes the accepted one and the plugin's tool call
// is refused with the reviewer's note.
func TestPluginSessionThroughTheRunnersGateAndHunks(t *testing.T) {
	base := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n"
	s := newSession(t, askAndEdit, nil)
	path := filepath.Join(s.cwd, "f.txt")
	if err := os.WriteFile(path, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	started, _ := s.waitType(0, event.SessionStarted)
	if d := decode[event.SessionStartedData](t, started); d.Engine != "plugin" || d.EngineSession != "script-p1" {
		t.Fatalf("sessionStarted %+v", d)
	}

	s.do(command.Send{Text: "go"})
	ev, i := s.waitType(0, event.AskOpened)
	ask := decode[event.AskOpenedData](t, ev)
	if ask.Command != "uptime" || ask.Category != "shell" {
		t.Fatalf("ask %+v", ask)
	}
	s.do(command.Answer{AskID: ask.AskID, Decision: command.DecisionAllow})
	fin, i := s.waitType(i, event.ToolFinished)
	if d := decode[event.ToolFinishedData](t, fin); d.Outcome != "ok" || d.Output == "" {
		t.Fatalf("the allowed command finished %+v", d)
	}

	ev, i = s.waitType(i, event.HunkStaged)
	staged := decode[event.HunkStagedData](t, ev)
	if staged.Path != "f.txt" || len(staged.Edit.Hunks) != 2 {
		t.Fatalf("staged %+v", staged)
	}
	s.do(command.DecideHunk{EditID: staged.EditID, HunkID: "h1", Decision: command.DecisionReject, Note: "keep line 1"})
	s.do(command.DecideHunk{EditID: staged.EditID, HunkID: "h2", Decision: command.DecisionAccept})
	fin, i = s.waitType(i, event.ToolFinished)
	write := decode[event.ToolFinishedData](t, fin)
	if write.Outcome != "partial" || !strings.Contains(write.Message, "keep line 1") {
		t.Fatalf("the partly accepted edit finished %+v", write)
	}
	ended, _ := s.waitType(i, event.TurnEnded)
	if d := decode[event.TurnEndedData](t, ended); d.Outcome != "done" {
		t.Fatalf("turnEnded %+v\n%s", d, s.dump())
	}
	got, err := os.ReadFile(path)
	if want := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\nB\n"; err != nil || string(got) != want {
		t.Fatalf("f.txt holds %q, %v; want %q", got, err, want)
	}
	if len(s.all(event.Usage)) == 0 {
		t.Fatalf("no usage reached the runner:\n%s", s.dump())
	}
}

const crashThenResume = `
turns:
  - match: doomed
    steps:
      - tool: shell
        command: "echo plugin-pid=$PPID"
      - sleepMs: 60000
  - match: again
    steps:
      - tool: shell
        command: "echo plugin-pid=$PPID"
      - say: "Back again."
`

// A plugin killed mid-turn fails the turn with engineError and its stderr
// tail; the runner survives and the next message runs in a fresh plugin.
func TestPluginKilledMidTurnThroughTheRunner(t *testing.T) {
	s := newSession(t, crashThenResume, func(sp *wire.Spec) { sp.Allow = []string{"echo *"} })
	s.do(command.Send{Text: "doomed"})
	fin, i := s.waitType(0, event.ToolFinished)
	var pid int
	if _, err := fmt.Sscanf(decode[event.ToolFinishedData](t, fin).Output, "plugin-pid=%d", &pid); err != nil {
		t.Fatalf("no plugin pid: %v\n%s", err, s.dump())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ev, i := s.waitType(i, event.Failure)
	f := decode[event.FailureData](t, ev)
	if f.Code != event.FailEngineError || !strings.Contains(f.Message, "killed") || len(f.Stderr) == 0 {
		t.Fatalf("failure %+v", f)
	}
	ended, i := s.waitType(i, event.TurnEnded)
	if d := decode[event.TurnEndedData](t, ended); d.Outcome != "failed" {
		t.Fatalf("turnEnded %+v", d)
	}

	s.do(command.Send{Text: "again"})
	fin, i = s.waitType(i, event.ToolFinished)
	var again int
	if _, err := fmt.Sscanf(decode[event.ToolFinishedData](t, fin).Output, "plugin-pid=%d", &again); err != nil || again == pid {
		t.Fatalf("the next turn ran in plugin %d (killed: %d): %v", again, pid, err)
	}
	ended, _ = s.waitType(i, event.TurnEnded)
	if d := decode[event.TurnEndedData](t, ended); d.Outcome != "done" {
		t.Fatalf("the turn after the crash: %+v\n%s", d, s.dump())
	}
}

func TestUnresolvablePluginFailsTheSessionStart(t *testing.T) {
	r, err := runner.New(runner.Options{
		Dir:          t.TempDir(),
		Spec:         wire.Spec{ID: "p2", Engine: "plugin", Cwd: t.TempDir()},
		Engines:      map[string]engine.Factory{"plugin": New},
		EngineConfig: map[string]string{KeyPlugin: "../escape", KeyPluginsDir: t.TempDir()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = r.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not a path") {
		t.Fatalf("start: %v", err)
	}
}

func (s *session) waitType(from int, typ event.Type) (event.Event, int) {
	s.t.Helper()
	return s.rec.WaitType(s.t, from, typ)
}

func (s *session) all(typ event.Type) []event.Event { return s.rec.All(typ) }

func (s *session) dump() string { return s.rec.Dump() }

func decode[T any](t *testing.T, ev event.Event) T {
	t.Helper()
	return eventlogtest.Decode[T](t, ev)
}
