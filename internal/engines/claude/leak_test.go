package claude

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fakemodel"
)

// TestCloseLeavesNothingBehind runs a session with a tool call and closes
// it: no goroutine, file descriptor or process of it may remain. It does not
// run in parallel, so the counts are its own.
func TestCloseLeavesNothingBehind(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	fds := openFDs(t)

	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("bash", "", call("toolu_bash", "Bash", map[string]string{"command": "echo hi", "description": "Say hi"})),
		textStep("final", "Done."),
	}}
	s := newSession(t, sc, sessionOpts{decide: allowAll})
	s.MustTurn("Say hi.")
	pid := s.pid()
	if err := s.eng.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.eng.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	s.Fake.Close()
	waitGone(t, pid)
	if members := groupMembers(pid); len(members) > 0 {
		t.Errorf("processes of the CLI's group remain: %v", members)
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		g, f := runtime.NumGoroutine(), openFDs(t)
		if g <= goroutines && f <= fds {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("after Close: %d goroutines (before %d), %d fds (before %d)\n%s", g, goroutines, f, fds, buf[:n])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// groupMembers lists live processes in process group pgid.
func groupMembers(pgid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(raw)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			out = append(out, pid)
		}
	}
	return out
}
