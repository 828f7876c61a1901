package claude

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

func (s *session) interrupt() {
	s.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	if err := s.eng.Interrupt(ctx); err != nil {
		s.T.Fatalf("Interrupt: %v", err)
	}
}

func (s *session) pid() int {
	s.eng.mu.Lock()
	defer s.eng.mu.Unlock()
	if s.eng.conn == nil {
		return 0
	}
	return s.eng.conn.pid()
}

func TestStopMidStream(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		{Name: "slow", Text: "word0 word1 word2 word3 word4 word5 word6 word7", Chunks: 8, Hold: true, HoldAfter: 4},
		{Name: "followup", Text: "Still here.", Match: &fakemodel.Match{LastUserContains: "are you there"}},
	}}
	s := newSession(t, sc, sessionOpts{decide: allowAll})
	pid := s.pid()
	done := s.GoTurn("Write a long answer.")
	if err := s.Host.WaitFor(turnTimeout, "a streamed delta", func(evs []enginetest.Event) bool {
		for _, e := range evs {
			if e.Type == event.AssistantDelta {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	s.interrupt()
	o := s.WaitTurn(done)
	if o.Err != nil || !o.Res.Stopped {
		t.Fatalf("stopped turn = %+v, %v; want Stopped and no error", o.Res, o.Err)
	}
	if got := s.pid(); got != pid {
		t.Errorf("the CLI process changed from %d to %d; a stop keeps it", pid, got)
	}
	res := s.MustTurn("are you there?")
	if res.Text != "Still here." || s.pid() != pid {
		t.Errorf("the next turn = %+v on pid %d (want %d)", res, s.pid(), pid)
	}
}

func TestStopMidToolKillsTheCommand(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("sleep", "", call("toolu_sleep", "Bash", map[string]string{"command": "echo waiting; sleep 30; echo done", "description": "Wait"})),
		textStep("after", "Stopped waiting."),
	}}
	s := newSession(t, sc, sessionOpts{decide: allowAll})
	done := s.GoTurn("Wait a while.")
	sleeper := waitForProcess(t, s.pid(), "sleep\x0030")
	s.interrupt()
	o := s.WaitTurn(done)
	if o.Err != nil || !o.Res.Stopped {
		t.Fatalf("stopped turn = %+v, %v", o.Res, o.Err)
	}
	waitGone(t, sleeper)
	fin := s.toolFinished()
	if len(fin) != 1 || fin[0].Outcome != "stopped" {
		t.Errorf("toolFinished = %+v, want the Bash call stopped", fin)
	}
	if !s.eng.conn.alive() {
		t.Error("the CLI process ended with the stop")
	}
}

func TestStopWithPermissionPending(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("write", "", call("toolu_write", "Write", map[string]string{"file_path": "${cwd}/never.txt", "content": "no\n"})),
		textStep("final", "Done."),
	}}
	asked := make(chan struct{})
	withdrawn := make(chan error, 1)
	decide := func(ctx context.Context, _ engine.ToolCall) engine.Verdict {
		close(asked)
		<-ctx.Done() // nobody answers; the CLI withdraws the request
		withdrawn <- ctx.Err()
		return engine.Verdict{Message: "withdrawn"}
	}
	s := newSession(t, sc, sessionOpts{decide: decide})
	done := s.GoTurn("Write never.txt.")
	select {
	case <-asked:
	case <-time.After(turnTimeout):
		t.Fatal("the gate was never asked")
	}
	s.interrupt()
	o := s.WaitTurn(done)
	if o.Err != nil || !o.Res.Stopped {
		t.Fatalf("stopped turn = %+v, %v", o.Res, o.Err)
	}
	select {
	case err := <-withdrawn:
		if err == nil {
			t.Error("the pending Permit ended without its context ending")
		}
	case <-time.After(turnTimeout):
		t.Fatal("the pending Permit was not cancelled")
	}
	if _, err := os.Stat(filepath.Join(s.Cwd, "never.txt")); !os.IsNotExist(err) {
		t.Errorf("never.txt exists after the stop (%v)", err)
	}
}

func TestCLIKilledMidTurnFailsAndResumes(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		textStep("first", "First answer."),
		{Name: "held", Text: "never finished", Hold: true, HoldAfter: 2},
		{Name: "again", Text: "Back again.", Match: &fakemodel.Match{Contains: "First answer."}},
	}}
	s := newSession(t, sc, sessionOpts{decide: allowAll})
	s.MustTurn("Say something.")
	pid := s.pid()
	done := s.GoTurn("Say more.")
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	if err := s.Fake.WaitHeld(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	if err := killProcess(pid); err != nil {
		t.Fatal(err)
	}
	o := s.WaitTurn(done)
	f, ok := o.Err.(*engine.Failure)
	if !ok || f.Code != event.FailEngineError || !strings.Contains(f.Message, "killed") {
		t.Fatalf("turn after the kill = %+v, %v; want an engineError failure saying the CLI was killed", o.Res, o.Err)
	}
	res := s.MustTurn("Are you back?")
	if res.Text != "Back again." {
		t.Errorf("the resumed turn answered %q; its request lacked the earlier history", res.Text)
	}
	if s.pid() == pid || s.pid() == 0 {
		t.Errorf("the turn after the kill ran on pid %d (killed: %d)", s.pid(), pid)
	}
}

// waitForProcess waits for a descendant of root whose command line
// (NUL-separated) is cmdline, and returns its pid.
func waitForProcess(t *testing.T, root int, cmdline string) int {
	t.Helper()
	deadline := time.Now().Add(turnTimeout)
	for time.Now().Before(deadline) {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err != nil || strings.TrimRight(string(raw), "\x00") != cmdline {
				continue
			}
			if descends(pid, root) {
				return pid
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no process %q under pid %d", strings.ReplaceAll(cmdline, "\x00", " "), root)
	return 0
}

// descends reports whether pid has ancestor root.
func descends(pid, root int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		if pid == root {
			return true
		}
		pid = parentPid(pid)
	}
	return false
}

func parentPid(pid int) int {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The command name may hold spaces; the fields after it start at the
	// last ')'.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// waitGone waits for pid to exit (a zombie counts as gone).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(turnTimeout)
	for time.Now().Before(deadline) {
		raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(string(raw), ')'); i >= 0 && strings.HasPrefix(strings.TrimSpace(string(raw[i+1:])), "Z") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("process %d is still running", pid)
}

func killProcess(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
