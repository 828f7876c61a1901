package graphtest

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/client"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/testio"
)

// Supervisor is a `supervisor serve` process of a test.
type Supervisor struct {
	Cmd    *exec.Cmd
	State  string
	Stderr *testio.Buffer
	exited chan struct{}
}

// StartSupervisor runs `supervisor serve` on state (with extra arguments)
// until the test ends, and waits until it answers.
func StartSupervisor(t testing.TB, bins Binaries, state string, extra ...string) *Supervisor {
	t.Helper()
	args := append([]string{"serve", "--state", state, "--runner", bins.Runner}, extra...)
	cmd := exec.Command(bins.Supervisor, args...)
	s := &Supervisor{Cmd: cmd, State: state, Stderr: &testio.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = s.Stderr
	proc.Configure(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		if proc.StopGroup(cmd, s.exited, 15*time.Second) {
			t.Errorf("the supervisor had to be killed:\n%s", s.Stderr.String())
		}
	})
	s.Client(t)
	return s
}

// Client returns a client of the supervisor once it answers.
func (s *Supervisor) Client(t testing.TB) *client.Client {
	t.Helper()
	c, err := client.ForState(s.State)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Health(ctx)
		cancel()
		if err == nil {
			return c
		}
		select {
		case <-s.exited:
			t.Fatalf("the supervisor exited:\n%s", s.Stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor does not answer: %v\n%s", err, s.Stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill kills the supervisor with SIGKILL, as a crash would, and waits for
// it to be gone. Its runners die with it (their parent-death signal).
func (s *Supervisor) Kill(t testing.TB) {
	t.Helper()
	s.Cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// RequireCLI returns the pinned agent CLI bin. Without it a test skips,
// except in CI (CI set), where it fails: nothing is silently skipped there.
func RequireCLI(t testing.TB, bin string) (path, enginesDir string) {
	t.Helper()
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := root + "/deploy/engines"
	p, _, err := locate.Binary(bin, map[string]string{locate.KeyEnginesDir: dir})
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the pinned %s CLI is needed (run deploy/engines/install.sh): %v", bin, err)
		}
		t.Skipf("the pinned %s CLI is not installed (run deploy/engines/install.sh): %v", bin, err)
	}
	return p, dir
}
