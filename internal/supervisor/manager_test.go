package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testrunner"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestCreateSendReadsEventsToTurnEnd(t *testing.T) {
	m := newScriptManager(t, "")
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	if !validID(s.ID) || len(s.ID) != 12 || !s.Live || s.Status == nil || s.Status.State != wire.StateIdle {
		t.Fatalf("created session = %+v", s)
	}
	fi, err := os.Stat(m.dir(s.ID))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("session folder: %v %v", fi.Mode(), err)
	}
	var onDisk wire.Spec
	raw, _ := os.ReadFile(filepath.Join(m.dir(s.ID), metaFile))
	if err := json.Unmarshal(raw, &onDisk); err != nil || onDisk.ID != s.ID || onDisk.Engine != "script" {
		t.Fatalf("meta.json = %s (%v)", raw, err)
	}

	mustCommand(t, m, s.ID, command.Send{Text: "hello"})
	evs := readUntil(t, m, s.ID, 1, "turnEnded")
	want := []string{"sessionStarted", "userMessage", "queueChanged", "queueChanged", "turnStarted",
		"assistantDelta", "assistantText", "usage", "context", "turnEnded"}
	if got := types(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	checkSeqs(t, evs, 1)
}

func TestConcurrentCallersShareOneStart(t *testing.T) {
	m := newScriptManager(t, testrunner.ReadyDelayPrefix+"150ms")
	spec, err := createFolder(m.sessions, scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := m.Command(ctxT(t), spec.ID, command.GetGoal{})
			if err == nil {
				err = r.Err()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := spawnCount(t, m, spec.ID); n != 1 {
		t.Fatalf("runner started %d times for 16 concurrent callers, want 1", n)
	}
}

func TestRunnerExitRejectsPendingCallWithCodeAndStderr(t *testing.T) {
	m := newScriptManager(t, testrunner.CrashOnSend)
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Command(ctxT(t), s.ID, command.Send{Text: "boom"})
	if !errors.Is(err, wire.ErrRunnerCrashed) {
		t.Fatalf("err = %v, want runner_crashed", err)
	}
	var we *wire.Error
	if !errors.As(err, &we) || we.Detail == nil {
		t.Fatalf("err = %#v, want a *wire.Error with a crash detail", err)
	}
	if we.Detail.ExitCode != 3 || we.Detail.Signal != "" {
		t.Fatalf("crash = %+v, want exit code 3", we.Detail)
	}
	if !strings.Contains(strings.Join(we.Detail.Stderr, "\n"), "engine exploded") {
		t.Fatalf("stderr tail = %q, want the runner's last words", we.Detail.Stderr)
	}
	if !strings.Contains(we.Message, "exited with code 3") || api.StatusFor(we.Code) != 502 {
		t.Fatalf("message %q code %s", we.Message, we.Code)
	}
	if m.Live(s.ID) {
		t.Fatal("session still live after its runner died")
	}
	got, err := m.Get(ctxT(t), s.ID)
	if err != nil || got.Live || got.LastCrash == nil || got.LastCrash.Detail.ExitCode != 3 {
		t.Fatalf("session after the crash: %+v %v", got, err)
	}
}

func TestKilledRunnerRejectsPendingCallsAndResumesLog(t *testing.T) {
	m := newScriptManager(t, testrunner.IgnoreCommand)
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	before := readAll(t, m, s.ID)
	pid := childPID(t, m, s.ID)

	const callers = 3
	errs := make(chan error, callers)
	for range callers {
		go func() {
			// A steer: a send would be sent again to the next runner.
			_, err := m.Command(ctxT(t), s.ID, command.Steer{Text: "never answered"})
			errs <- err
		}()
	}
	// Kill only once every call is registered with the runner.
	waitFor(t, func() bool {
		e := m.holdLive(s.ID)
		if e == nil {
			return false
		}
		defer m.release(e, false)
		e.child.mu.Lock()
		defer e.child.mu.Unlock()
		return len(e.child.pending) == callers
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for range callers {
		err := <-errs
		var we *wire.Error
		if !errors.Is(err, wire.ErrRunnerCrashed) || !errors.As(err, &we) {
			t.Fatalf("err = %v, want runner_crashed", err)
		}
		if we.Detail.Signal != "killed" || we.Detail.ExitCode != -1 || !strings.Contains(we.Message, "killed") {
			t.Fatalf("crash = %+v (%q), want killed by SIGKILL", we.Detail, we.Message)
		}
	}

	// The next call starts a new runner, which resumes the log.
	r, err := m.Command(ctxT(t), s.ID, command.GetGoal{})
	if err != nil || !r.OK {
		t.Fatalf("status after crash: %v %+v", err, r)
	}
	after := readAll(t, m, s.ID)
	checkSeqs(t, after, 1)
	// The runner behind the fault's proxy can see its input end (the
	// proxy's pipes close as it dies) a moment before the kill that
	// follows its parent's death reaches it, and write the "stopped" of
	// a runner whose supervisor went while it had nothing under way.
	added := after[len(before):]
	if len(added) == 2 && added[0].Type == event.Stopped {
		added = added[1:]
	}
	if len(added) != 1 || added[0].Type != event.SessionResumed {
		t.Fatalf("events after restart = %v", types(after))
	}
	if n := spawnCount(t, m, s.ID); n != 2 {
		t.Fatalf("runner started %d times, want 2", n)
	}
}

func TestProtocolMismatchFailsStart(t *testing.T) {
	m := newScriptManager(t, testrunner.ProtoPrefix+"99")
	_, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if !errors.Is(err, wire.ErrProtocol) {
		t.Fatalf("err = %v, want protocol_mismatch", err)
	}
	for _, want := range []string{"protocol version 99", "speaks " + strconv.Itoa(wire.ProtocolVersion)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	list, err := m.List(ctxT(t))
	if err != nil || len(list) != 0 {
		t.Fatalf("sessions after a failed start: %v %v", list, err)
	}
}

func TestStartFailures(t *testing.T) {
	tests := []struct {
		name     string
		fault    testrunner.Fault
		scenario string // the spec's scenario file
		timeout  time.Duration
		want     error
		text     string
	}{
		{"engine refuses live.ensure", "", "/nonexistent/scenario.yaml", time.Minute, wire.ErrEngine, "read scenario"},
		{"runner never answers hello", testrunner.Silent, "", 300 * time.Millisecond, wire.ErrTimeout, "did not answer hello"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newScriptManager(t, tc.fault, func(c *Config) { c.StartTimeout = tc.timeout })
			_, err := m.Create(ctxT(t), wire.Spec{Engine: "script", Scenario: tc.scenario})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %v, want %v saying %q", err, tc.want, tc.text)
			}
		})
	}
}

func TestMalformedRunnerLinesAreSkipped(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	m := newScriptManager(t, testrunner.Garbage, func(c *Config) {
		c.MaxLine = 1024
		c.Logger = zap.New(core)
	})
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	mustCommand(t, m, s.ID, command.Send{Text: "hi"})
	evs := readUntil(t, m, s.ID, 1, "turnEnded")
	checkSeqs(t, evs, 1)
	for _, msg := range []string{"skipping runner output line", "skipping malformed runner message"} {
		if logs.FilterMessage(msg).Len() == 0 {
			t.Errorf("no %q warning logged", msg)
		}
	}
}

func TestReapSparesBusyRunners(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var clockMu sync.Mutex
	clock := func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		clockMu.Lock()
		now = now.Add(d)
		clockMu.Unlock()
	}
	ttl := time.Minute
	// One manager per behaviour keeps each runner's mode its own.
	t.Cleanup(trackLeaks(t))
	newM := func(f testrunner.Fault) *Manager {
		return startScriptManager(t, f, func(c *Config) { c.IdleTTL = ttl; c.Now = clock })
	}
	idle, working, asking, pending, term := newM(""), newM(""), newM(""), newM(testrunner.IgnoreCommand), newM("")
	scenarios := map[*Manager]string{idle: echoScenario, working: slowScenario, asking: askScenario, pending: echoScenario, term: echoScenario}
	ids := map[*Manager]string{}
	for _, m := range []*Manager{idle, working, asking, pending, term} {
		s, err := m.Create(ctxT(t), scriptSpec(t, scenarios[m]))
		if err != nil {
			t.Fatal(err)
		}
		ids[m] = s.ID
	}
	mustCommand(t, working, ids[working], command.Send{Text: "long job"})
	mustCommand(t, asking, ids[asking], command.Send{Text: "needs approval"})
	readUntil(t, working, ids[working], 1, "turnStarted")
	readUntil(t, asking, ids[asking], 1, "askOpened")
	pendingDone := make(chan error, 1)
	pctx, cancelPending := context.WithCancel(context.Background())
	defer cancelPending()
	go func() {
		_, err := pending.Command(pctx, ids[pending], command.Send{Text: "unanswered"})
		pendingDone <- err
	}()
	waitFor(t, func() bool {
		e := pending.holdLive(ids[pending])
		if e == nil {
			return false
		}
		defer pending.release(e, false)
		pending.mu.Lock()
		defer pending.mu.Unlock()
		return e.holds > 1
	})
	sink := make(chan wire.Message, 4)
	if _, err := term.OpenTerm(ctxT(t), ids[term], wire.TermOpen{TermID: "t1", ClientID: "c1"}, func(m wire.Message) {
		select {
		case sink <- m:
		default: // Only the first output is read.
		}
	}); err != nil {
		t.Fatal(err)
	}
	if got, ok := (<-sink).(*wire.TermData); !ok || len(got.Data) == 0 {
		t.Fatalf("terminal output = %+v", got)
	}

	// Before the TTL nothing goes.
	for _, m := range []*Manager{idle, working, asking, pending, term} {
		if n := m.Reap(ctxT(t)); n != 0 {
			t.Fatalf("reaped %d before the TTL", n)
		}
	}
	advance(ttl + time.Second)
	if n := idle.Reap(ctxT(t)); n != 1 || idle.Live(ids[idle]) {
		t.Fatalf("idle runner: reaped %d, live %v", n, idle.Live(ids[idle]))
	}
	for name, m := range map[string]*Manager{"working": working, "asking": asking, "pending call": pending, "terminal": term} {
		if n := m.Reap(ctxT(t)); n != 0 || !m.Live(ids[m]) {
			t.Errorf("%s runner: reaped %d, live %v", name, n, m.Live(ids[m]))
		}
	}

	// Once the terminal is closed and the time passes, it goes too.
	if err := term.CloseTerm(ids[term], "t1", "c1"); err != nil {
		t.Fatal(err)
	}
	if n := term.Reap(ctxT(t)); n != 0 {
		t.Fatalf("reaped %d right after the terminal closed", n)
	}
	advance(ttl + time.Second)
	if n := term.Reap(ctxT(t)); n != 1 {
		t.Fatalf("after the terminal closed: reaped %d", n)
	}
	cancelPending()
	if err := <-pendingDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("pending call: %v", err)
	}

	// A reaped session comes back on the next command, its log continued.
	mustCommand(t, idle, ids[idle], command.Send{Text: "again"})
	evs := readUntil(t, idle, ids[idle], 1, "turnEnded")
	checkSeqs(t, evs, 1)
	// The reaped runner's last word, then the new one's first.
	if got := types(evs); len(got) < 3 || got[1] != string(event.Stopped) || got[2] != string(event.SessionResumed) {
		t.Fatalf("events after reap = %v", got)
	}
}

func TestReaperRunsOnItsOwn(t *testing.T) {
	m := newScriptManager(t, "", func(c *Config) { c.IdleTTL = 50 * time.Millisecond })
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.RunReaper(ctx) }()
	waitFor(t, func() bool { return !m.Live(s.ID) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRotateAliasesNewSessionToSameRunner(t *testing.T) {
	m := newScriptManager(t, "")
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	raw := mustCommand(t, m, s.ID, command.ForkSession{})
	var res command.ForkResult
	if err := json.Unmarshal(raw, &res); err != nil || res.To == "" {
		t.Fatalf("fork result %s: %v", raw, err)
	}
	if !m.Live(res.To) {
		t.Fatal("forked session is not live")
	}
	e1, e2 := m.holdLive(s.ID), m.holdLive(res.To)
	if e1 == nil || e2 == nil || e1.child != e2.child {
		t.Fatal("old and new ids do not share the runner")
	}
	m.release(e1, false)
	m.release(e2, false)

	// Mirrors after the rotated event belong to the new session, whose log
	// continues the old one.
	mustCommand(t, m, res.To, command.Send{Text: "on the fork"})
	evs := readUntil(t, m, res.To, 1, "turnEnded")
	checkSeqs(t, evs, 1)
	old := readAll(t, m, s.ID)
	last := old[len(old)-1]
	if last.Type != event.Rotated || evs[len(old)-1].Type != event.Rotated || evs[len(old)].Type != event.SessionResumed {
		t.Fatalf("old session %v, forked session %v", types(old), types(evs))
	}
	h := m.hub(s.ID)
	h.mu.Lock()
	carried := h.last
	h.mu.Unlock()
	if carried != last.Seq {
		t.Fatalf("the old session's feed carried seq %d, its log ends at %d", carried, last.Seq)
	}
	if n := spawnCount(t, m, s.ID); n != 1 {
		t.Fatalf("%d runners started, want 1", n)
	}
}

func TestShutdownLeavesNoChild(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fault    testrunner.Fault
		scenario string
	}{
		{"on", "", echoScenario},
		{"slow-turn", "", slowScenario},
		{"hang-shutdown", testrunner.HangShutdown, slowScenario},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newScriptManager(t, tc.fault, func(c *Config) {
				c.ShutdownGrace = 300 * time.Millisecond
				c.KillGrace = 300 * time.Millisecond
			})
			var pids []int
			for range 3 {
				s, err := m.Create(ctxT(t), scriptSpec(t, tc.scenario))
				if err != nil {
					t.Fatal(err)
				}
				mustCommand(t, m, s.ID, command.Send{Text: "work"})
				pids = append(pids, childPID(t, m, s.ID))
			}
			if err := m.Shutdown(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			for _, pid := range pids {
				if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
					t.Errorf("runner %d still exists after shutdown (%v)", pid, err)
				}
			}
			if _, err := m.Create(ctxT(t), wire.Spec{Engine: "script"}); !errors.Is(err, wire.ErrUnavailable) {
				t.Fatalf("create after shutdown: %v", err)
			}
		})
	}
}

func TestUnknownAndInvalidIDsAreNotFound(t *testing.T) {
	m := newScriptManager(t, "")
	for _, id := range []string{"000000000000", "../../etc", "", "a/b"} {
		if _, err := m.Command(ctxT(t), id, command.GetStatus{}); !errors.Is(err, wire.ErrNotFound) {
			t.Errorf("command on %q: %v", id, err)
		}
		if _, err := m.Get(ctxT(t), id); !errors.Is(err, wire.ErrNotFound) {
			t.Errorf("get %q: %v", id, err)
		}
		if err := m.Delete(ctxT(t), id); !errors.Is(err, wire.ErrNotFound) {
			t.Errorf("delete %q: %v", id, err)
		}
		if _, err := m.Events(ctxT(t), id, 1, true); !errors.Is(err, wire.ErrNotFound) {
			t.Errorf("events of %q: %v", id, err)
		}
	}
}

func TestCreateRejectsBadSpecs(t *testing.T) {
	m := newScriptManager(t, "")
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	for _, spec := range []wire.Spec{
		{},
		{Engine: "script", ID: "mine"},
		{Engine: "script", Cwd: "relative/dir"},
		{Engine: "script", Cwd: file},
		{Engine: "script", SpendCapUSD: -1},
		{Engine: "script", Parent: "../x"},
	} {
		if _, err := m.Create(ctxT(t), spec); !errors.Is(err, wire.ErrBadRequest) {
			t.Errorf("create %+v: %v, want bad_request", spec, err)
		}
	}
}

func TestDeleteStopsRunnerEndsStreamsRemovesFolder(t *testing.T) {
	m := newScriptManager(t, "")
	s, err := m.Create(ctxT(t), scriptSpec(t, slowScenario))
	if err != nil {
		t.Fatal(err)
	}
	mustCommand(t, m, s.ID, command.Send{Text: "x"})
	st, err := m.Events(ctxT(t), s.ID, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pid := runnerPID(t, m, s.ID)
	if err := m.Delete(ctxT(t), s.ID); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := st.Next(ctxT(t))
		if err != nil {
			if !errors.Is(err, wire.ErrNotFound) {
				t.Fatalf("stream ended with %v, want not_found", err)
			}
			break
		}
	}
	if _, err := os.Stat(m.dir(s.ID)); !os.IsNotExist(err) {
		t.Fatalf("folder still there: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("runner still exists: %v", err)
	}
	if _, err := m.Command(ctxT(t), s.ID, command.GetStatus{}); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("command after delete: %v", err)
	}
}

func TestNotLiveRunnerIsMadeLiveAgain(t *testing.T) {
	m := newScriptManager(t, testrunner.NotLiveOnce)
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	mustCommand(t, m, s.ID, command.GetStatus{})
}

// TestCommandsOtherThanSend: what once had requests of its own (a
// capability, an approval, an interrupt) is a command like any other, with
// its typed result.
func TestCommandsOtherThanSend(t *testing.T) {
	m := newScriptManager(t, "")
	s, err := m.Create(ctxT(t), scriptSpec(t, askScenario))
	if err != nil {
		t.Fatal(err)
	}
	reply, err := m.Command(ctxT(t), s.ID, command.GetGoal{})
	if goal, rerr := command.Result(command.GetGoal{}, reply); err != nil || rerr != nil || goal.Goal != "" {
		t.Fatalf("getGoal = %+v, %v, %v", goal, err, rerr)
	}
	if r, err := m.Command(ctxT(t), s.ID, unknownCommand{"nope"}); err != nil || !errors.Is(r.Err(), wire.ErrBadRequest) {
		t.Fatalf("unknown command: %+v %v", r, err)
	}
	mustCommand(t, m, s.ID, command.Send{Text: "ask me"})
	ask := openedAsk(t, readUntil(t, m, s.ID, 1, "askOpened"))
	if r, err := m.Command(ctxT(t), s.ID, command.Answer{AskID: ask, Decision: command.DecisionAllow}); err != nil || !r.OK {
		t.Fatalf("answer: %+v %v", r, err)
	}
	if r, err := m.Command(ctxT(t), s.ID, command.Answer{AskID: ask, Decision: "maybe"}); err != nil || !errors.Is(r.Err(), wire.ErrBadRequest) {
		t.Fatalf("bad decision: %+v %v", r, err)
	}
	readUntil(t, m, s.ID, 1, "turnEnded")
	if r, err := m.Command(ctxT(t), s.ID, command.Stop{}); err != nil || !r.OK {
		t.Fatalf("stop: %+v %v", r, err)
	}
}

// openedAsk is the id of the last ask opened in evs.
func openedAsk(t *testing.T, evs []event.Event) string {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == event.AskOpened {
			var d event.AskOpenedData
			if err := json.Unmarshal(evs[i].Data, &d); err != nil {
				t.Fatal(err)
			}
			return d.AskID
		}
	}
	t.Fatalf("no askOpened in %v", types(evs))
	return ""
}

// unknownCommand is a command no runner knows.
type unknownCommand struct{ name command.Name }

func (c unknownCommand) Cmd() command.Name { return c.name }

func toString(m map[string]any) string {
	raw, _ := json.Marshal(m)
	return string(raw)
}

func TestSweepKillsOnlyOwnStaleRunners(t *testing.T) {
	state := t.TempDir()
	sessions := filepath.Join(state, "sessions")
	mk := func(name string) string {
		dir := filepath.Join(sessions, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	staleDir, otherDir, handDir := mk("aaaaaaaaaaaa"), mk("bbbbbbbbbbbb"), mk("cccccccccccc")
	spareDir, pluginDir, strayDir := mk("eeeeeeeeeeee"), mk("ffffffffffff"), mk("gggggggggggg")
	// Runners left over by a previous supervisor: stdio runners of their
	// folder, named on the command line or, for a spare that took a
	// session, as the working directory.
	stale := startProcess(t, "", "runner", "--session-dir", staleDir, "--stdio")
	spare := startProcess(t, spareDir, "runner", "--stdio")
	plugin := startProcess(t, "", "plugin-runner", "--stdio", "--session-dir", pluginDir)
	// A process whose pid happens to be in a runner.pid: not a runner.
	other := startProcess(t, "", "sleeper", "--session-dir", otherDir, "--stdio")
	// A runner someone started by hand, without --stdio.
	hand := startProcess(t, "", "runner", "--session-dir", handDir)
	// A spare-started runner working elsewhere: not that folder's runner.
	stray := startProcess(t, otherDir, "runner", "--stdio")
	for dir, p := range map[string]*os.Process{staleDir: stale, spareDir: spare, pluginDir: plugin,
		otherDir: other, handDir: hand, strayDir: stray} {
		os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(p.Pid)+"\n"), 0o600)
	}
	goneDir := mk("dddddddddddd")
	os.WriteFile(filepath.Join(goneDir, pidFile), []byte("999999999\n"), 0o600)

	m, err := New(Config{StateDir: state, RunnerPath: os.Args[0], Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	for name, p := range map[string]*os.Process{"stale runner": stale, "stale spare": spare, "stale plugin-runner": plugin} {
		if st, _ := p.Wait(); st == nil || st.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("%s: %v", name, st)
		}
	}
	for name, p := range map[string]*os.Process{"other program": other, "hand-started runner": hand, "runner of another folder": stray} {
		if err := p.Signal(syscall.Signal(0)); err != nil {
			t.Errorf("%s was killed: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(goneDir, pidFile)); !os.IsNotExist(err) {
		t.Errorf("runner.pid of a dead runner kept: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startProcess starts a process in dir (empty: this one) that sleeps until
// killed, showing args as its command line.
func startProcess(t *testing.T, dir string, args ...string) *os.Process {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Args = args
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), sleepEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd.Process
}

func TestRefusedTerminalIsNotTracked(t *testing.T) {
	m := newScriptManager(t, testrunner.NoTerminal)
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.OpenTerm(ctxT(t), s.ID, wire.TermOpen{TermID: "t1", ClientID: "c1"}, func(wire.Message) {})
	if !errors.Is(err, wire.ErrUnavailable) || !strings.Contains(err.Error(), "no terminal support") {
		t.Fatalf("err = %v", err)
	}
	e := m.holdLive(s.ID)
	defer m.release(e, false)
	if e.child.holdsTerminal() {
		t.Fatal("a refused terminal keeps the runner from being reaped")
	}
	if _, err := m.OpenTerm(ctxT(t), s.ID, wire.TermOpen{}, nil); !errors.Is(err, wire.ErrBadRequest) {
		t.Fatalf("no termId: %v", err)
	}
}

func TestShutdownEndsStartsUnderWay(t *testing.T) {
	m := newScriptManager(t, testrunner.Silent, func(c *Config) { c.StartTimeout = time.Minute })
	done := make(chan error, 1)
	go func() {
		_, err := m.Create(context.Background(), wire.Spec{Engine: "script"})
		done <- err
	}()
	waitFor(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.entries) == 1
	})
	if err := m.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("a start cut by shutdown succeeded")
	}
}

func TestTerminalExitDetachesClient(t *testing.T) {
	m := newScriptManager(t, "")
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan wire.Message, 256)
	term, err := m.OpenTerm(ctxT(t), s.ID, wire.TermOpen{TermID: "t1", ClientID: "c1", Role: "owner"}, func(m wire.Message) { got <- m })
	if err != nil || term.Role != "owner" {
		t.Fatalf("open: %+v %v", term, err)
	}
	if first := <-got; first.Type() != wire.TTermData {
		t.Fatalf("first message %s", first.Type())
	}
	if err := m.TermResize(s.ID, wire.TermResize{TermID: "t1", ClientID: "c1", Cols: 80, Rows: 24}); err != nil {
		t.Fatal(err)
	}
	if err := m.TermInput(s.ID, wire.TermInput{TermID: "t1", ClientID: "c1", Data: []byte("exit\n")}); err != nil {
		t.Fatal(err)
	}
	// The shell echoes and says goodbye; its exit comes last.
	last := <-got
	for last.Type() == wire.TTermData {
		last = <-got
	}
	if last.Type() != wire.TTermExit {
		t.Fatalf("last message %s", last.Type())
	}
	e := m.holdLive(s.ID)
	defer m.release(e, false)
	if e.child.holdsTerminal() {
		t.Fatal("a client whose program exited still counts as attached")
	}
	if err := m.TermInput("000000000000", wire.TermInput{TermID: "t1"}); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("input to no session: %v", err)
	}
}
