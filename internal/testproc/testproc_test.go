package testproc

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/testio"
)

// startShell starts sh running script, which prints a line once it is
// ready (its traps set), and waits for that line.
func startShell(t *testing.T, script string) (*Process, *testio.Buffer) {
	t.Helper()
	cmd := exec.Command(testenv.NeedProgram(t, "sh"), "-c", script)
	out := &testio.Buffer{}
	cmd.Stdout = out
	p := Start(t, cmd)
	t.Cleanup(func() { p.Kill() })
	for !strings.Contains(out.String(), "\n") {
		select {
		case <-p.Exited():
			t.Fatalf("the shell ended before it was ready: %v", p.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return p, out
}

func TestStopEndsAProcessThatHeedsSIGTERM(t *testing.T) {
	p, _ := startShell(t, "trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done")
	if killed := p.Stop(time.Minute); killed {
		t.Fatal("a process that heeds SIGTERM was killed")
	}
	var exit *exec.ExitError
	if err := p.Err(); !errors.As(err, &exit) || exit.ExitCode() != 7 {
		t.Fatalf("ended with %v, want its own exit status 7", err)
	}
}

func TestStopKillsTheGroupOfAProcessThatIgnoresSIGTERM(t *testing.T) {
	// The shell's child holds the shell's output: Exited closes (the
	// output read to its end) only once the child is gone too.
	p, _ := startShell(t, "trap '' TERM; sleep 60 & echo ready; wait")
	if killed := p.Stop(200 * time.Millisecond); !killed {
		t.Fatal("a process that ignores SIGTERM was not killed")
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned before the process and its group ended")
	}
}

func TestKillEndsTheProcessWithSIGKILL(t *testing.T) {
	p, _ := startShell(t, "trap '' TERM; echo ready; while :; do sleep 0.05; done")
	p.Kill()
	var exit *exec.ExitError
	if err := p.Err(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("ended with %v, want SIGKILL", err)
	}
}
