package plugin

import (
	"context"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/event"
)

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("count open files: %v", err)
	}
	return len(entries)
}

// A session's goroutines and file descriptors are all released by Close:
// after a clean session, a crashed one, and a refused handshake.
func TestCloseReleasesEveryGoroutineAndFD(t *testing.T) {
	lifecycle := func() {
		s, _ := mustStart(t, sessionOptions{scenario: crashable})
		if _, err := s.turn("first"); err != nil {
			t.Fatal(err)
		}
		if err := s.eng.Close(); err != nil {
			t.Fatal(err)
		}

		s, _ = mustStart(t, sessionOptions{scenario: crashable})
		turn := s.turnAsync(context.Background(), "second")
		s.waitType(event.ToolFinished, 1)
		if err := syscall.Kill(s.pluginPID(0), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if r := await(t, turn); r.err == nil {
			t.Fatal("the killed turn did not fail")
		}
		if err := s.eng.Close(); err != nil {
			t.Fatal(err)
		}

		if _, _, err := startSession(t, sessionOptions{bin: bins.test, env: []string{"TESTPLUGIN_MODE=cookie"}}); err == nil {
			t.Fatal("a mismatched handshake started")
		}
	}
	// The first round starts what lives for the whole process (the
	// signal and timer machinery); it is not a leak.
	lifecycle()
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)
	for range 3 {
		lifecycle()
	}
	deadline := time.Now().Add(waitLimit)
	for {
		g, f := runtime.NumGoroutine(), openFDs(t)
		if g <= goroutines && f <= fds {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("after Close: %d goroutines (was %d), %d open files (was %d)\n%s", g, goroutines, f, fds, buf[:n])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
