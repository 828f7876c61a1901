package supervisor

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/internal/testrunner"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// termSink collects what a runner client of the manager receives.
type termSink struct {
	mu   sync.Mutex
	data []byte
	msgs []wire.Message
	more chan struct{}
}

func newTermSink() *termSink { return &termSink{more: make(chan struct{}, 1)} }

func (s *termSink) sink(m wire.Message) {
	s.mu.Lock()
	s.msgs = append(s.msgs, m)
	if d, ok := m.(*wire.TermData); ok {
		s.data = append(s.data, d.Data...)
	}
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

// awaitTerm waits for a message of type M and returns it with the output so
// far.
func awaitTerm[M wire.Message](t *testing.T, s *termSink) (M, []byte) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		for _, m := range s.msgs {
			if m, ok := m.(M); ok {
				out := bytes.Clone(s.data)
				s.mu.Unlock()
				return m, out
			}
		}
		s.mu.Unlock()
		select {
		case <-s.more:
		case <-deadline:
			var m M
			t.Fatalf("no %T", m)
		}
	}
}

// TestRealRunnerOutputReachesItsClientExactlyInFrames prints a file of
// every byte value on a terminal of the real runner (a runner client that
// is not handed the terminal, so the output crosses the link) and checks
// that it arrives exactly, in the binary frames the supervisor asks for.
func TestRealRunnerOutputReachesItsClientExactlyInFrames(t *testing.T) {
	file, content := testio.EveryByteFile(t, 3<<20)
	core, logs := observer.New(zap.DebugLevel)
	m := newScriptManager(t, "", func(c *Config) { c.Logger = zap.New(core) })
	s, err := m.Create(ctxT(t), wire.Spec{Engine: "script", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out := newTermSink()
	// In raw mode the terminal passes every byte through as it is.
	if _, err := m.OpenTerm(ctxT(t), s.ID, wire.TermOpen{TermID: "t", ClientID: "c", Role: "owner",
		Command: []string{"sh", "-c", "stty raw -echo; read go; cat " + file}}, out.sink); err != nil {
		t.Fatal(err)
	}
	if err := m.TermInput(s.ID, wire.TermInput{TermID: "t", ClientID: "c", Data: []byte("go\n")}); err != nil {
		t.Fatal(err)
	}
	exit, got := awaitTerm[*wire.TermExit](t, out)
	if exit.ExitCode == nil || *exit.ExitCode != 0 {
		t.Errorf("exit %+v", exit)
	}
	// The stream may begin with what the terminal echoed before stty
	// took effect; it ends with the file, whole.
	if !bytes.HasSuffix(got, content) || len(got) > len(content)+16 {
		t.Errorf("got %d bytes, not the file's %d", len(got), len(content))
	}
	ready := logs.FilterMessage("runner ready").All()
	if len(ready) != 1 || ready[0].ContextMap()["termFrames"] != true {
		t.Errorf("the runner's answer to hello: %v; want it to send frames", ready)
	}
}

// TestRunnerOutputInFramesSkipsBadFramesAndTakesLines: the real runner's
// terminal output reaches the client whether it comes in frames, in frames
// with a frame of an unknown kind before each (skipped, the stream going
// on), or as JSON lines (a hello that does not ask for frames).
func TestRunnerOutputInFramesSkipsBadFramesAndTakesLines(t *testing.T) {
	for _, f := range []testrunner.Fault{"", testrunner.BadFrames, testrunner.NoFrames} {
		name := string(f)
		if name == "" {
			name = "frames"
		}
		t.Run(name, func(t *testing.T) { runnerTermOutput(t, f) })
	}
}

func runnerTermOutput(t *testing.T, f testrunner.Fault) {
	core, logs := observer.New(zap.DebugLevel)
	m := newScriptManager(t, f, func(c *Config) { c.Logger = zap.New(core) })
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	out := newTermSink()
	// In raw mode the terminal passes the input's bytes through as they
	// are; the program says when it is, then gives back what it reads.
	if _, err := m.OpenTerm(ctxT(t), s.ID, wire.TermOpen{TermID: "t", ClientID: "c", Role: "owner",
		Command: []string{"sh", "-c", "stty raw -echo; echo ready; head -c 7; exit 3"}}, out.sink); err != nil {
		t.Fatal(err)
	}
	awaitOutput(t, out, "ready\n")
	if err := m.TermInput(s.ID, wire.TermInput{TermID: "t", ClientID: "c", Data: []byte("echo\xff\x00\n")}); err != nil {
		t.Fatal(err)
	}
	exit, got := awaitTerm[*wire.TermExit](t, out)
	if string(got) != "ready\necho\xff\x00\n" {
		t.Errorf("got %q", got)
	}
	if exit.ExitCode == nil || *exit.ExitCode != 3 {
		t.Errorf("exit %+v, want status 3", exit)
	}
	ready := logs.FilterMessage("runner ready").All()
	if wantFrames := f != testrunner.NoFrames; len(ready) != 1 || ready[0].ContextMap()["termFrames"] != wantFrames {
		t.Errorf("the runner's answer to hello: %v; want frames %v", ready, wantFrames)
	}
}

// awaitOutput waits until the output so far ends with want.
func awaitOutput(t *testing.T, s *termSink, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		s.mu.Lock()
		done := bytes.HasSuffix(s.data, []byte(want))
		s.mu.Unlock()
		if done {
			return
		}
		select {
		case <-s.more:
		case <-deadline:
			t.Fatalf("no output ending %q", want)
		}
	}
}

// TestBrokenFrameKillsTheRunner: a frame whose end is not where its lengths
// say leaves no way to tell where the next message starts, so the
// supervisor kills the runner, and its clients and callers hear why.
func TestBrokenFrameKillsTheRunner(t *testing.T) {
	m := newScriptManager(t, testrunner.BrokenFrame)
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	pid := runnerPID(t, m, s.ID)
	out := newTermSink()
	if _, err := m.OpenTerm(ctxT(t), s.ID, wire.TermOpen{TermID: "t", ClientID: "c", Role: "owner",
		Command: []string{"cat"}}, out.sink); err != nil {
		t.Fatal(err)
	}
	if err := m.TermInput(s.ID, wire.TermInput{TermID: "t", ClientID: "c", Data: []byte(testrunner.BreakInput)}); err != nil {
		t.Fatal(err)
	}
	end, got := awaitTerm[*wire.TermError](t, out)
	if !errors.Is(end.Error, wire.ErrRunnerCrashed) || !strings.Contains(end.Error.Message, "could not be read") {
		t.Fatalf("the client's stream ended with %+v, want runner_crashed saying the output could not be read", end.Error)
	}
	for _, w := range testrunner.BrokenFrameWords {
		if strings.Contains(string(got), w) {
			t.Errorf("output after the broken frame reached the client: %q", got)
		}
	}
	waitFor(t, func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
	// The session itself is fine: the next call starts a new runner.
	mustCommand(t, m, s.ID, command.GetGoal{})
}
