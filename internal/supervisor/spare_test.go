package supervisor

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// spareManager is a manager of real runners keeping a spare.
func spareManager(t *testing.T) *Manager {
	t.Helper()
	_, runner := realBinaries(t)
	return newScriptManager(t, "", func(c *Config) {
		c.RunnerPath = runner
		c.Env = nil
		c.SpareRunner = true
	})
}

// sayOK is a spec whose turns say "ok" and end.
func sayOK(t testing.TB) wire.Spec {
	t.Helper()
	cwd := t.TempDir()
	scenario := filepath.Join(cwd, "scenario.json")
	if err := os.WriteFile(scenario, []byte(`{"fallback":{"steps":[{"say":"ok"}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return wire.Spec{Engine: "script", Cwd: cwd, Scenario: scenario}
}

// waitSpare waits for the manager's spare and returns it.
func waitSpare(t *testing.T, m *Manager) *child {
	t.Helper()
	var c *child
	waitFor(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		c = m.spare.child
		return c != nil
	})
	return c
}

// playTurn sends text to session id and reads its events to the turn's end.
func playTurn(t testing.TB, m *Manager, id, text string) {
	t.Helper()
	st, err := m.Events(ctxT(t), id, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mustCommand(t, m, id, command.Send{Text: text})
	for {
		ev, err := st.Next(ctxT(t))
		if err != nil {
			t.Fatalf("events of %s: %v", id, err)
		}
		if string(ev.Type) == string(event.TurnEnded) {
			return
		}
	}
}

// A session on a built-in engine opens in the spare started ahead of it,
// in the session's folder, and another spare is started behind it.
func TestSessionOpensInTheSpare(t *testing.T) {
	m := spareManager(t)
	spare := waitSpare(t, m)
	s, err := m.Create(ctxT(t), sayOK(t))
	if err != nil {
		t.Fatal(err)
	}
	pid := runnerPID(t, m, s.ID)
	if pid != spare.cmd.Process.Pid {
		t.Fatalf("the session runs in %d, the spare was %d", pid, spare.cmd.Process.Pid)
	}
	if cwd, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd")); err != nil || cwd != m.dir(s.ID) {
		t.Fatalf("the runner works in %q (%v), want the session folder", cwd, err)
	}
	if next := waitSpare(t, m); next == spare {
		t.Fatal("no new spare behind the one taken")
	}
	playTurn(t, m, s.ID, "hello")
	// meta.json holds what the runner stored as it opened.
	spec, err := readSpec(m.dir(s.ID), s.ID)
	if err != nil || spec.EngineSession == "" {
		t.Fatalf("meta.json %+v, %v: no engine session id", spec, err)
	}
}

// A spare that dies just before it is handed a session costs the session
// nothing: it starts in a runner of its own.
func TestDeadSpareIsReplaced(t *testing.T) {
	m := spareManager(t)
	spare := waitSpare(t, m)
	if err := spare.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s, err := m.Create(ctxT(t), sayOK(t))
	if err != nil {
		t.Fatal(err)
	}
	if pid := runnerPID(t, m, s.ID); pid == spare.cmd.Process.Pid {
		t.Fatalf("the session runs in the killed spare %d", pid)
	}
	playTurn(t, m, s.ID, "hello")
}

// A supervisor shut down while its spare warms up leaves no scratch folder
// behind: the spare finishes the warm-up's clean-up before it exits.
func TestShutdownDuringWarmUpLeavesNoScratch(t *testing.T) {
	t.Cleanup(trackLeaks(t))
	_, runner := realBinaries(t)
	caught := 0
	for attempt := 0; attempt < 20 && caught < 3; attempt++ {
		tmp := t.TempDir()
		m := startScriptManager(t, "", func(c *Config) {
			c.RunnerPath = runner
			c.Env = []string{"TMPDIR=" + tmp}
			c.SpareRunner = true
		})
		// Wait for the warm-up's folder, or for the spare to be ready
		// (the warm-up came and went between two looks).
		warming := false
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
			if des, _ := os.ReadDir(tmp); len(des) > 0 {
				warming = true
				break
			}
			m.mu.Lock()
			ready := m.spare.child != nil
			m.mu.Unlock()
			if ready {
				break
			}
			runtime.Gosched()
		}
		if err := m.Shutdown(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		if !warming {
			continue
		}
		caught++
		if des, _ := os.ReadDir(tmp); len(des) > 0 {
			t.Fatalf("attempt %d: the spare left %s in its temporary folder", attempt, des[0].Name())
		}
	}
	if caught == 0 {
		t.Fatal("no shutdown landed during a warm-up in 20 attempts")
	}
	t.Logf("%d shutdowns landed during a warm-up", caught)
}
