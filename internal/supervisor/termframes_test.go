package supervisor

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/supervisor/fakerunner"
	"github.com/corral-dev/corral/internal/testio"
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
	_, runner := realBinaries(t)
	file, content := testio.EveryByteFile(t, 3<<20)
	core, logs := observer.New(zap.DebugLevel)
	m := newManager(t, "", func(c *Config) {
		c.RunnerPath, c.Env = runner, nil
		c.Logger = zap.New(core)
	})
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

// TestFakeRunnerFramesAndSkippedBadFrames: a runner that answers in frames
// reaches the client, and a frame of an unknown kind is skipped with the
// stream going on.
func TestFakeRunnerFramesAndSkippedBadFrames(t *testing.T) {
	for _, modes := range []string{fakerunner.ModeTermFrames, fakerunner.ModeTermFrames + "," + fakerunner.ModeBadFrames, fakerunner.ModeOn} {
		t.Run(modes, func(t *testing.T) { fakeRunnerOutput(t, modes) })
	}
}

func fakeRunnerOutput(t *testing.T, modes string) {
	m := newManager(t, modes)
	s, err := m.Create(ctxT(t), wire.Spec{Engine: "script"})
	if err != nil {
		t.Fatal(err)
	}
	out := newTermSink()
	if _, err := m.OpenTerm(ctxT(t), s.ID, wire.TermOpen{TermID: "t", ClientID: "c", Role: "owner"}, out.sink); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"echo\xff\x00\n", "exit\n"} {
		if err := m.TermInput(s.ID, wire.TermInput{TermID: "t", ClientID: "c", Data: []byte(in)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, got := awaitTerm[*wire.TermExit](t, out); string(got) != "$ echo\xff\x00\n" {
		t.Errorf("%s: got %q", modes, got)
	}
}

// TestBrokenFrameKillsTheRunner: a frame whose end is not where its lengths
// say leaves no way to tell where the next message starts, so the
// supervisor kills the runner, and its clients and callers hear why.
func TestBrokenFrameKillsTheRunner(t *testing.T) {
	m := newManager(t, fakerunner.ModeTermFrames+","+fakerunner.ModeBrokenFrame)
	s, err := m.Create(ctxT(t), wire.Spec{Engine: "script"})
	if err != nil {
		t.Fatal(err)
	}
	pid := runnerPID(t, m, s.ID)
	out := newTermSink()
	if _, err := m.OpenTerm(ctxT(t), s.ID, wire.TermOpen{TermID: "t", ClientID: "c", Role: "owner"}, out.sink); err != nil {
		t.Fatal(err)
	}
	if err := m.TermInput(s.ID, wire.TermInput{TermID: "t", ClientID: "c", Data: []byte("break\n")}); err != nil {
		t.Fatal(err)
	}
	end, got := awaitTerm[*wire.TermError](t, out)
	if !errors.Is(end.Error, wire.ErrRunnerCrashed) || !strings.Contains(end.Error.Message, "could not be read") {
		t.Fatalf("the client's stream ended with %+v, want runner_crashed saying the output could not be read", end.Error)
	}
	if strings.Contains(string(got), "broken") || strings.Contains(string(got), "whatever") {
		t.Errorf("output after the broken frame reached the client: %q", got)
	}
	waitFor(t, func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
	// The session itself is fine: the next call starts a new runner.
	mustCommand(t, m, s.ID, command.GetGoal{})
}
