package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/testrunner"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

// sleepEnv makes the test binary a process that only sleeps.
const sleepEnv = "SUPERVISOR_TEST_SLEEP"

// TestMain doubles as a fault in front of the real runner (testrunner), as
// a sleeper and as a terminal reader: the tests start this very binary so.
func TestMain(m *testing.M) {
	if os.Getenv(sleepEnv) != "" {
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	if testrunner.IsFault() {
		os.Exit(testrunner.Main(os.Args[1:]))
	}
	if os.Getenv(termReaderEnv) != "" {
		os.Exit(termReaderMain())
	}
	testenv.PlainShell()
	code := m.Run()
	testrunner.Remove()
	built.Remove()
	if textPayload.dir != "" {
		os.RemoveAll(textPayload.dir)
	}
	os.Exit(code)
}

// What the script engine plays in these tests: an answer, a turn that
// waits to be stopped, a turn that asks before a command runs.
const (
	echoScenario = `fallback: {steps: [{say: "echo"}]}`
	slowScenario = `fallback: {steps: [{sleepMs: 600000}]}`
	askScenario  = `fallback: {steps: [{tool: shell, command: "make --version"}, {say: "ran it"}]}`
)

// askOf is the ask id of an askOpened event line.
func askOf(t testing.TB, line []byte) string {
	t.Helper()
	var e event.Event
	var d event.AskOpenedData
	if err := json.Unmarshal(line, &e); err != nil || e.Type != event.AskOpened || json.Unmarshal(e.Data, &d) != nil {
		t.Fatalf("not an askOpened event: %s", line)
	}
	return d.AskID
}

// scriptSpec is a script session playing scenario in a folder of its own.
func scriptSpec(t testing.TB, scenario string) wire.Spec {
	t.Helper()
	return wire.Spec{Engine: "script", Cwd: t.TempDir(), Scenario: testrunner.Scenario(t, scenario)}
}

// newScriptManager starts a manager whose runners are the real runner, or
// the fault f in front of it (none when empty). Its cleanup shuts it down
// and checks that no goroutine, file descriptor or child process is left.
func newScriptManager(t *testing.T, f testrunner.Fault, tweak ...func(*Config)) *Manager {
	t.Helper()
	t.Cleanup(trackLeaks(t))
	return startScriptManager(t, f, tweak...)
}

// startScriptManager is newScriptManager without the leak check.
func startScriptManager(t *testing.T, f testrunner.Fault, tweak ...func(*Config)) *Manager {
	t.Helper()
	runner := testrunner.Path(t)
	use := func(c *Config) {
		c.RunnerPath, c.Env = runner, nil
		if f != "" {
			c.RunnerPath, c.Env = os.Args[0], testrunner.Env(runner, f)
		}
	}
	return startManager(t, append([]func(*Config){use}, tweak...)...)
}

// startManager starts a manager with the test's defaults, changed by
// tweak, and shuts it down when the test ends.
func startManager(t *testing.T, tweak ...func(*Config)) *Manager {
	t.Helper()
	cfg := Config{
		StateDir:      t.TempDir(),
		Logger:        zaptest.NewLogger(t),
		ShutdownGrace: 2 * time.Second,
		KillGrace:     time.Second,
		StartTimeout:  time.Minute,
	}
	for _, f := range tweak {
		f(&cfg)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return m
}

// trackLeaks returns a check that no goroutine, descriptor or child process
// was added since it was made.
func trackLeaks(t *testing.T) func() {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	// The runtime's poller opens its own descriptors at its first use,
	// for good: in a test process of its own (smallfs) that comes after
	// the count. A pipe starts it first.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	fds := countFDs(t)
	return func() {
		t.Helper()
		if err := goleak.Find(ignore); err != nil {
			t.Errorf("goroutines left: %v", err)
		}
		var now int
		for range 100 {
			if now = countFDs(t); now <= fds {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if now > fds {
			t.Errorf("file descriptors: %d before, %d after", fds, now)
		}
		if kids := childPIDs(t); len(kids) > 0 {
			t.Errorf("child processes left: %v", kids)
		}
	}
}

func countFDs(t *testing.T) int {
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("count fds: %v", err)
	}
	return len(des)
}

// childPIDs lists the processes whose parent is this test, zombies too.
func childPIDs(t *testing.T) []int {
	t.Helper()
	des, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	me := os.Getpid()
	var out []int
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", de.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the parenthesised name: state, ppid, ...
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(me) {
			out = append(out, pid)
		}
	}
	return out
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustCommand runs cmd and fails the test unless the runner accepted it.
func mustCommand(t testing.TB, m *Manager, id string, cmd command.Request) json.RawMessage {
	t.Helper()
	r, err := m.Command(ctxT(t), id, cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd.Cmd(), err)
	}
	if err := r.Err(); err != nil {
		t.Fatalf("%s refused: %v", cmd.Cmd(), err)
	}
	return r.Result
}

// readUntil reads events of session id from seq from until one of type
// stop, returning every event read.
func readUntil(t *testing.T, m *Manager, id string, from int64, stop string) []event.Event {
	t.Helper()
	s, err := m.Events(ctxT(t), id, from, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []event.Event
	for {
		ev, err := s.Next(ctxT(t))
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		var e event.Event
		if err := json.Unmarshal(ev.Line, &e); err != nil {
			t.Fatalf("event line %q: %v", ev.Line, err)
		}
		if e.Seq != ev.Seq || string(e.Type) != string(ev.Type) {
			t.Fatalf("stream says seq %d type %s, line says %d %s", ev.Seq, ev.Type, e.Seq, e.Type)
		}
		out = append(out, e)
		if string(e.Type) == stop {
			return out
		}
	}
}

// readAll returns every event in session id's log.
func readAll(t *testing.T, m *Manager, id string) []event.Event {
	t.Helper()
	s, err := m.Events(ctxT(t), id, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []event.Event
	for {
		ev, err := s.Next(ctxT(t))
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var e event.Event
		if err := json.Unmarshal(ev.Line, &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}

func types(evs []event.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Type)
	}
	return out
}

// checkSeqs fails unless evs run from first upwards with no gap.
func checkSeqs(t *testing.T, evs []event.Event, first int64) {
	t.Helper()
	for i, e := range evs {
		if e.Seq != first+int64(i) {
			t.Fatalf("event %d has seq %d, want %d (types %v)", i, e.Seq, first+int64(i), types(evs))
		}
	}
}

// runnerPID reads the pid the session's runner wrote.
func runnerPID(t testing.TB, m *Manager, id string) int {
	t.Helper()
	return readPIDFile(t, m.dir(id))
}

// childPID is the pid of the process the manager started for session id:
// the runner, or the fault in front of it.
func childPID(t testing.TB, m *Manager, id string) int {
	t.Helper()
	e := m.holdLive(id)
	if e == nil {
		t.Fatalf("session %s is not live", id)
	}
	defer m.release(e, false)
	return e.child.cmd.Process.Pid
}

// readPIDFile reads the pid a runner wrote in session folder dir.
func readPIDFile(t testing.TB, dir string) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// spawnCount counts the runners that opened session id: each writes
// sessionStarted or sessionResumed to its log as it opens it.
func spawnCount(t *testing.T, m *Manager, id string) int {
	t.Helper()
	n := 0
	for _, e := range readAll(t, m, id) {
		if e.Type == event.SessionStarted || e.Type == event.SessionResumed {
			n++
		}
	}
	return n
}

// spawned reports whether a runner ever opened session id's folder (it
// writes its pid there).
func spawned(t *testing.T, m *Manager, id string) bool {
	t.Helper()
	_, err := os.Stat(filepath.Join(m.dir(id), pidFile))
	return err == nil
}
