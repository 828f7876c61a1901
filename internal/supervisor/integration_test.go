package supervisor

// Integration tests: the real supervisor and runner binaries, built from
// this tree, driving the script engine.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/sessiondir"
	"github.com/corral-dev/corral/internal/testbin"
	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/internal/testproc"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// built holds the binaries built for this test run; TestMain removes them.
var built testbin.Once

// realBinaries builds cmd/supervisor, cmd/runner, cmd/plugin-runner and
// cmd/corral-script-plugin once per test run, as the Makefile does.
func realBinaries(t testing.TB) (supervisorBin, runnerBin string) {
	t.Helper()
	dir := built.Build(t, "github.com/corral-dev/corral/cmd/supervisor", "github.com/corral-dev/corral/cmd/runner",
		"github.com/corral-dev/corral/cmd/plugin-runner", "github.com/corral-dev/corral/cmd/corral-script-plugin")
	return filepath.Join(dir, "supervisor"), filepath.Join(dir, "runner")
}

// scenario is what the script engine plays in these tests.
const scenario = `{
  "turns": [
    {"match": "slow", "steps": [{"say": "working on it"}, {"sleepMs": 4000}, {"say": "done"}]},
    {"match": "slow", "steps": [{"say": "working on it"}, {"sleepMs": 4000}, {"say": "done"}]},
    {"match": "long", "steps": [{"say": "working on it"}, {"sleepMs": 120000}, {"say": "done"}]},
    {"match": "steer", "steps": [
      {"say": "reading"}, {"tool": "read", "path": "notes.txt"},
      {"tool": "write", "path": "steered.txt", "content": "held for review\n"},
      {"say": "finished"}]}
  ],
  "fallback": {"steps": [{"say": "hello from the script"}]},
  "onSteer": "steered: {steer}"
}`

// daemonProc is a running supervisor binary.
type daemonProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	state  string
	cwd    string
	c      *client.Client
	stderr *testio.Buffer
	p      *testproc.Process
	exited <-chan struct{}
}

// startDaemon starts `supervisor serve` on a fresh state folder. Its runner
// is a wrapper that writes a line to stderr and then becomes the real
// runner, so a crash has a stderr tail to show.
func startDaemon(t *testing.T, extra ...string) *daemonProc {
	t.Helper()
	sup, runner := realBinaries(t)
	base := t.TempDir()
	wrapperDir := filepath.Join(base, "bin")
	os.Mkdir(wrapperDir, 0o700)
	wrapper := filepath.Join(wrapperDir, "runner")
	script := "#!/bin/sh\necho \"runner wrapper: starting pid $$\" >&2\nexec " + strconv.Quote(runner) + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	d := &daemonProc{t: t, state: filepath.Join(base, "state"), cwd: filepath.Join(base, "work"), stderr: &testio.Buffer{}}
	os.Mkdir(d.cwd, 0o700)
	os.WriteFile(filepath.Join(d.cwd, "notes.txt"), []byte("some notes\n"), 0o600)
	os.WriteFile(filepath.Join(d.cwd, "scenario.json"), []byte(scenario), 0o600)
	// Runners stop with the supervisor here, as these tests expect; the
	// reliability harness tests sessions that outlive it.
	args := append([]string{"serve", "--state", d.state, "--runner", wrapper, "--log-level", "debug", "--stop-runners-on-exit"}, extra...)
	d.cmd = exec.Command(sup, args...)
	d.cmd.Stderr = d.stderr
	d.p = testproc.Start(t, d.cmd)
	d.exited = d.p.Exited()
	t.Cleanup(func() {
		d.p.Stop(20 * time.Second)
		if t.Failed() {
			t.Logf("supervisor log:\n%s", d.log())
		}
	})
	var err error
	if d.c, err = client.ForState(d.state); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, d.c, d.exited, d.log, 15*time.Second)
	return d
}

// waitHealthy waits until a supervisor started by a test answers on its
// socket, failing the test if it exits or stays silent for limit.
func waitHealthy(tb testing.TB, c *client.Client, exited <-chan struct{}, log func() string, limit time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for {
		if _, err := c.Health(context.Background()); err == nil {
			return
		}
		select {
		case <-exited:
			tb.Fatalf("supervisor exited:\n%s", log())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("supervisor did not answer:\n%s", log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (d *daemonProc) log() string { return d.stderr.String() }

func (d *daemonProc) create(t *testing.T) string {
	t.Helper()
	s, err := d.c.CreateSession(ctxT(t), wire.Spec{Engine: "script", Cwd: d.cwd, Scenario: filepath.Join(d.cwd, "scenario.json")})
	if err != nil {
		t.Fatalf("create: %v\n%s", err, d.log())
	}
	return s.ID
}

func (d *daemonProc) command(t *testing.T, id string, cmd command.Request) json.RawMessage {
	t.Helper()
	r, err := d.c.Command(ctxT(t), id, cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd.Cmd(), err)
	}
	return r.Result
}

// follow reads session id's events from seq from until match holds for one,
// returning every event read.
func (d *daemonProc) follow(t *testing.T, id string, from int64, match func(event.Event) bool) []event.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := d.c.Events(ctx, id, client.EventsOptions{From: from, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out []event.Event
	for {
		line, err := st.Next()
		if err != nil {
			t.Fatalf("after %v: %v", types(out), err)
		}
		var ev event.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("event %s: %v", line, err)
		}
		out = append(out, ev)
		if match(ev) {
			return out
		}
	}
}

func ofType(typ event.Type) func(event.Event) bool {
	return func(ev event.Event) bool { return ev.Type == typ }
}

// nth matches the n-th event of type typ.
func nth(n int, typ event.Type) func(event.Event) bool {
	seen := 0
	return func(ev event.Event) bool {
		if ev.Type == typ {
			seen++
		}
		return seen == n
	}
}

func (d *daemonProc) runnerPID(t *testing.T, id string) int {
	t.Helper()
	return readPIDFile(t, filepath.Join(d.state, "sessions", id))
}

// runners returns the pids of every runner of the daemon, once it has one
// for each of sessions and the spare started behind them.
func (d *daemonProc) runners(t *testing.T, sessions ...string) []int {
	t.Helper()
	var pids []int
	waitFor(t, func() bool {
		pids = childrenOf(t, d.cmd.Process.Pid)
		return len(pids) == len(sessions)+1
	})
	for _, id := range sessions {
		if pid := d.runnerPID(t, id); !slices.Contains(pids, pid) {
			t.Fatalf("session %s's runner %d is not among the supervisor's children %v", id, pid, pids)
		}
	}
	return pids
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(t *testing.T, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // gone since the glob
		}
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			out = append(out, child)
		}
	}
	return out
}

// gone waits until no process has pid (a zombie counts as gone: it runs
// nothing and its parent reaps it).
func gone(t *testing.T, pid int) {
	t.Helper()
	waitFor(t, func() bool {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		return len(f) > 0 && f[0] == "Z"
	})
}

func dataOf[T any](t *testing.T, ev event.Event) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		t.Fatalf("%s data %s: %v", ev.Type, ev.Data, err)
	}
	return v
}

func TestRealSendReadsEventsToTurnEnd(t *testing.T) {
	d := startDaemon(t)
	id := d.create(t)
	d.command(t, id, command.Send{Text: "hello"})
	evs := d.follow(t, id, 1, ofType(event.TurnEnded))
	checkSeqs(t, evs, 1)
	for _, want := range []event.Type{event.SessionStarted, event.UserMessage, event.TurnStarted, event.AssistantText} {
		if !strings.Contains(strings.Join(types(evs), " "), string(want)) {
			t.Fatalf("no %s in %v", want, types(evs))
		}
	}
	if text := dataOf[event.TextData](t, evs[len(evs)-1-countAfter(evs, event.AssistantText)]); !strings.Contains(text.Text, "hello from the script") {
		t.Fatalf("assistant said %q", text.Text)
	}
}

// countAfter counts the events after the last one of type typ.
func countAfter(evs []event.Event, typ event.Type) int {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == typ {
			return len(evs) - 1 - i
		}
	}
	return len(evs)
}

func TestRealSecondSendQueuesDuringTurn(t *testing.T) {
	d := startDaemon(t)
	id := d.create(t)
	d.command(t, id, command.Send{Text: "slow one"})
	d.follow(t, id, 1, ofType(event.TurnStarted))
	d.command(t, id, command.Send{Text: "and then this"})
	evs := d.follow(t, id, 1, nth(2, event.TurnEnded))
	checkSeqs(t, evs, 1)
	var msgs []event.UserMessageData
	var turns []event.TurnStartedData
	for _, ev := range evs {
		switch ev.Type {
		case event.UserMessage:
			msgs = append(msgs, dataOf[event.UserMessageData](t, ev))
		case event.TurnStarted:
			turns = append(turns, dataOf[event.TurnStartedData](t, ev))
		}
	}
	if len(msgs) != 2 || msgs[0].Queued || !msgs[1].Queued {
		t.Fatalf("user messages %+v: the second should be queued", msgs)
	}
	if len(turns) != 2 || turns[1].Text != "and then this" {
		t.Fatalf("turns %+v", turns)
	}
	// The queued message started only after the first turn ended.
	first := nth(1, event.TurnEnded)
	for _, ev := range evs {
		if first(ev) {
			break
		}
		if ev.Type == event.TurnStarted && dataOf[event.TurnStartedData](t, ev).Text == "and then this" {
			t.Fatal("the second turn started before the first ended")
		}
	}
}

// TestRealSteerLandsAtNextToolBoundary steers a turn between its first
// tool's end and its second's. The second tool is a write held for review,
// so the turn waits there until the test has sent the steer and accepted
// the hunk: how fast the machine runs cannot move the steer to another
// boundary.
func TestRealSteerLandsAtNextToolBoundary(t *testing.T) {
	d := startDaemon(t)
	id := d.create(t)
	d.command(t, id, command.Send{Text: "steer test"})
	staged := d.follow(t, id, 1, ofType(event.HunkStaged))
	if countType(staged, event.ToolFinished) != 1 {
		t.Fatalf("the write was staged after %d tools ended, want 1: %v", countType(staged, event.ToolFinished), types(staged))
	}
	d.command(t, id, command.Steer{Text: "use the other file"})
	edit := dataOf[event.HunkStagedData](t, staged[len(staged)-1])
	d.command(t, id, command.DecideHunk{EditID: edit.EditID, HunkID: "h1", Decision: command.DecisionAccept})
	evs := d.follow(t, id, 1, ofType(event.TurnEnded))
	t.Logf("events: %v", types(evs))
	for i, ev := range evs {
		if ev.Type != event.SteerDelivered {
			continue
		}
		if s := dataOf[event.SteerData](t, ev); s.Text != "use the other file" {
			t.Fatalf("steer %+v", s)
		}
		// At the next tool boundary: right after the second tool's end,
		// while the turn still runs.
		if evs[i-1].Type != event.ToolFinished || countType(evs[:i], event.ToolFinished) != 2 {
			t.Fatalf("steer delivered at %d, not at the next tool boundary: %v", i, types(evs))
		}
		return
	}
	t.Fatalf("no steerDelivered in %v", types(evs))
}

func countType(evs []event.Event, typ event.Type) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func TestRealStopMidTurn(t *testing.T) {
	d := startDaemon(t)
	id := d.create(t)
	d.command(t, id, command.Send{Text: "long"})
	d.follow(t, id, 1, ofType(event.TurnStarted))
	d.command(t, id, command.Stop{})
	evs := d.follow(t, id, 1, ofType(event.Stopped))
	if st := dataOf[event.StoppedData](t, evs[len(evs)-1]); !st.InterruptedTurn {
		t.Fatalf("stopped %+v", st)
	}
	var ended *event.TurnEndedData
	for _, ev := range evs {
		if ev.Type == event.TurnEnded {
			e := dataOf[event.TurnEndedData](t, ev)
			ended = &e
		}
	}
	if ended == nil || ended.Outcome != "stopped" {
		t.Fatalf("turn ended %+v: %v", ended, types(evs))
	}
	for _, ev := range evs {
		if ev.Type == event.AssistantText && strings.Contains(string(ev.Data), "done") {
			t.Fatalf("the turn ran its course instead of stopping: %v", types(evs))
		}
	}
}

func TestRealKilledRunnerReportsCrashAndResumes(t *testing.T) {
	d := startDaemon(t)
	id := d.create(t)
	d.command(t, id, command.Send{Text: "long"})
	d.follow(t, id, 1, ofType(event.TurnStarted))
	pid := d.runnerPID(t, id)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var s *apiSession
	waitFor(t, func() bool {
		got, err := d.c.Session(ctxT(t), id)
		if err != nil {
			t.Fatal(err)
		}
		s = (*apiSession)(got)
		return !got.Live && got.LastCrash != nil
	})
	crash := s.LastCrash.Wire()
	if !errors.Is(crash, wire.ErrRunnerCrashed) || crash.Detail == nil || crash.Detail.Signal != "killed" || crash.Detail.ExitCode != -1 {
		t.Fatalf("crash %+v", crash)
	}
	if !strings.Contains(strings.Join(crash.Detail.Stderr, "\n"), "runner wrapper: starting pid "+strconv.Itoa(pid)) {
		t.Fatalf("stderr tail %q lacks the runner's own line", crash.Detail.Stderr)
	}
	if !strings.Contains(crash.Message, "killed") {
		t.Fatalf("message %q", crash.Message)
	}

	// A new command starts a new runner, which continues the log.
	d.command(t, id, command.Send{Text: "after the crash"})
	resumed := false
	after := d.follow(t, id, 1, func(ev event.Event) bool {
		resumed = resumed || ev.Type == event.SessionResumed
		return resumed && ev.Type == event.TurnEnded
	})
	checkSeqs(t, after, 1)
	if last := dataOf[event.TurnEndedData](t, after[len(after)-1]); last.Outcome != "done" {
		t.Fatalf("the turn after the crash ended %+v", last)
	}
	if newPID := d.runnerPID(t, id); newPID == pid {
		t.Fatal("the same runner pid after a crash")
	}
}

// apiSession keeps the test's use of the client type short.
type apiSession = struct {
	ID        string            `json:"id"`
	Spec      wire.Spec         `json:"spec"`
	Live      bool              `json:"live"`
	Status    *command.Status   `json:"status,omitempty"`
	UpdatedAt time.Time         `json:"updatedAt"`
	LastCrash *api.Error        `json:"lastCrash,omitempty"`
	Fleet     *api.SessionFleet `json:"fleet,omitempty"`
}

func TestRealIdleRunnerIsReapedAndResumes(t *testing.T) {
	d := startDaemon(t, "--idle-ttl", "2s")
	id := d.create(t)
	d.command(t, id, command.Send{Text: "hi"})
	first := d.follow(t, id, 1, ofType(event.TurnEnded))
	pid := d.runnerPID(t, id)
	waitFor(t, func() bool {
		s, err := d.c.Session(ctxT(t), id)
		return err == nil && !s.Live
	})
	gone(t, pid)
	s, err := d.c.Session(ctxT(t), id)
	if err != nil || s.Status == nil || s.Status.State != wire.StateIdle || s.LastCrash != nil {
		t.Fatalf("reaped session %+v %v", s, err)
	}
	d.command(t, id, command.Send{Text: "back again"})
	evs := d.follow(t, id, 1, nth(2, event.TurnEnded))
	checkSeqs(t, evs, 1)
	if !strings.Contains(strings.Join(types(evs[len(first):]), " "), "sessionResumed userMessage") {
		t.Fatalf("after the reap: %v", types(evs[len(first):]))
	}
}

// With --stop-runners-on-exit (startDaemon), SIGTERM stops every runner,
// busy or not, before the supervisor exits.
func TestRealSupervisorSIGTERMStopsEveryRunner(t *testing.T) {
	d := startDaemon(t)
	busy, idle := d.create(t), d.create(t)
	d.command(t, busy, command.Send{Text: "long"})
	d.follow(t, busy, 1, ofType(event.TurnStarted))
	pids := d.runners(t, busy, idle)
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("supervisor did not exit on SIGTERM")
	}
	if err := d.p.Err(); err != nil {
		t.Fatalf("supervisor exit: %v\n%s", err, d.log())
	}
	for _, pid := range pids {
		gone(t, pid)
	}
	if _, err := os.Lstat(filepath.Join(d.state, "supervisor.sock")); !os.IsNotExist(err) {
		t.Fatalf("socket left: %v", err)
	}
	// The busy session's log was closed properly: its turn ended.
	raw, _ := os.ReadFile(filepath.Join(d.state, "sessions", busy, eventsFile))
	if !bytes.HasSuffix(raw, []byte("\n")) {
		t.Fatal("events.jsonl ends with a torn line")
	}
}

// With --stop-runners-on-exit (startDaemon), runners die with a supervisor
// killed with SIGKILL (their parent-death signal).
func TestRealSupervisorKill9TakesRunnersWithIt(t *testing.T) {
	d := startDaemon(t)
	a, b := d.create(t), d.create(t)
	d.command(t, a, command.Send{Text: "long"})
	d.follow(t, a, 1, ofType(event.TurnStarted))
	pids := d.runners(t, a, b)
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-d.exited
	for _, pid := range pids {
		gone(t, pid)
	}
}

// TestRenameGoesThroughTheSupervisorUnknown: a command the supervisor has
// no code for (rename, the worked example of docs/architecture.md) goes
// from the API to the runner and back, and its title is in the session's
// status, its meta.json and its events.
func TestRenameGoesThroughTheSupervisorUnknown(t *testing.T) {
	d := startDaemon(t)
	id := d.create(t)
	got, err := client.Run(ctxT(t), d.c, id, command.Rename{Title: "  Fix the flaky test  "})
	if err != nil || got.Title != "Fix the flaky test" {
		t.Fatalf("rename: %+v, %v", got, err)
	}
	renamed := d.follow(t, id, 1, ofType(event.Renamed))
	if data := dataOf[event.RenamedData](t, renamed[len(renamed)-1]); data.Title != "Fix the flaky test" {
		t.Fatalf("renamed event %+v", data)
	}
	s, err := d.c.Session(ctxT(t), id)
	if err != nil || s.Status == nil || s.Status.Title != "Fix the flaky test" {
		t.Fatalf("status after rename: %+v, %v", s, err)
	}
	spec, _, err := sessiondir.ReadSpec(filepath.Join(d.state, "sessions", id))
	if err != nil || spec.Title != "Fix the flaky test" {
		t.Fatalf("meta.json after rename: %+v, %v", spec, err)
	}
	if _, err := d.c.Command(ctxT(t), id, command.Rename{Title: strings.Repeat("x", wire.MaxTitle+1)}); !errors.Is(err, wire.ErrBadRequest) {
		t.Fatalf("a title too long: %v", err)
	}
}
