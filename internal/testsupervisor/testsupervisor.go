// Package testsupervisor runs the real supervisor for tests of the API's
// clients: it builds cmd/supervisor and cmd/runner once per test process,
// starts `supervisor serve` on a fresh state folder (on its unix socket, and
// on loopback TCP with a bearer token when asked), and stops or restarts it
// on the same state and address.
package testsupervisor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/cgroup"
	"github.com/corral-dev/corral/internal/testbin"
	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/internal/testport"
	"github.com/corral-dev/corral/internal/testproc"
	"github.com/corral-dev/corral/pkg/client"
)

var built testbin.Once

// Binaries builds cmd/supervisor and cmd/runner once per test process, as
// the Makefile does, and returns their paths.
func Binaries(tb testing.TB) (supervisorBin, runnerBin string) {
	tb.Helper()
	dir := built.Build(tb, "github.com/corral-dev/corral/cmd/supervisor", "github.com/corral-dev/corral/cmd/runner")
	return filepath.Join(dir, "supervisor"), filepath.Join(dir, "runner")
}

// Options say how to start a supervisor.
type Options struct {
	// TCP also serves on a loopback port, with a bearer token.
	TCP bool
	// Args are more flags for `supervisor serve`.
	Args []string
	// RunnerGrace, when positive, lets sessions outlive the supervisor
	// (serve --runner-grace): Stop and Kill leave runners with work
	// under way running, and a restart re-attaches to them. Zero:
	// --stop-runners-on-exit, runners die with the supervisor.
	RunnerGrace time.Duration
	// State is the state folder to use (a small file system, say); empty
	// means a fresh one under the test's temporary folder.
	State string
}

// Supervisor is a running `supervisor serve`.
type Supervisor struct {
	tb   testing.TB
	opts Options
	bin  string
	run  string // the runner

	// State is the state folder, Work an empty folder for sessions' cwd.
	State, Work string
	// Socket is the supervisor's unix socket.
	Socket string
	// URL and Token reach it over TCP (with Options.TCP).
	URL, Token string
	// Client talks to it over its socket.
	Client *client.Client

	addr   string            // the TCP address, kept across restarts
	p      *testproc.Process // nil when stopped
	stderr *testio.Buffer
}

// Start starts a supervisor on a fresh state folder; it is stopped when the
// test ends, and its log is shown if the test failed.
func Start(tb testing.TB, opts Options) *Supervisor {
	tb.Helper()
	sup, runner := Binaries(tb)
	base := tb.TempDir()
	s := &Supervisor{
		tb: tb, opts: opts, bin: sup, run: runner,
		State:  filepath.Join(base, "state"),
		Work:   filepath.Join(base, "work"),
		stderr: &testio.Buffer{},
	}
	if opts.State != "" {
		s.State = opts.State
	}
	s.Socket = filepath.Join(s.State, "supervisor.sock")
	if err := os.Mkdir(s.Work, 0o700); err != nil {
		tb.Fatal(err)
	}
	if opts.TCP {
		s.addr = testport.Addr(tb) // the same on a restart
		s.URL = "http://" + s.addr
		s.Token = strings.Repeat("5e", 32)
		if err := os.MkdirAll(s.State, 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.State, "token"), []byte(s.Token+"\n"), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	var err error
	if s.Client, err = client.New(client.Options{Socket: s.Socket}); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		s.Stop()
		// A supervisor with a runner grace leaves runners with work
		// under way running: they go with the test.
		StopRunners(s.run, s.State)
		if tb.Failed() {
			tb.Logf("supervisor log:\n%s", s.Log())
		}
		// The runners' cgroups: the empty leaves of runners that
		// stopped with no supervisor to remove them, and the subtree.
		if state, err := filepath.Abs(s.State); err == nil {
			if err := cgroup.Remove(cgroup.SubtreeName(state)); err != nil && !errors.Is(err, cgroup.ErrUnavailable) {
				tb.Errorf("removing the supervisor's cgroups: %v", err)
			}
		}
	})
	s.launch()
	return s
}

func (s *Supervisor) launch() {
	s.tb.Helper()
	args := []string{"serve", "--state", s.State, "--runner", s.run, "--log-level", "debug"}
	if s.opts.TCP {
		args = append(args, "--listen-tcp", s.addr)
	}
	if s.opts.RunnerGrace > 0 {
		args = append(args, "--runner-grace", s.opts.RunnerGrace.String())
	} else {
		args = append(args, "--stop-runners-on-exit")
	}
	args = append(args, s.opts.Args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Stderr = s.stderr
	s.p = testproc.Start(s.tb, cmd)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := s.Client.Health(context.Background()); err == nil {
			return
		}
		select {
		case <-s.p.Exited():
			s.tb.Fatalf("supervisor exited:\n%s", s.Log())
		default:
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("supervisor did not answer within 30s:\n%s", s.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Stop stops the supervisor with SIGTERM (which stops its runners, or with
// a RunnerGrace leaves those with work under way for the next one) and
// waits for it, killing its process group if it takes longer than 20 s.
func (s *Supervisor) Stop() {
	if s.p == nil {
		return
	}
	s.p.Stop(20 * time.Second)
	s.p = nil
}

// Kill kills the supervisor with SIGKILL, as a crash would, and waits for
// it to be gone; its runners die with it (their parent-death signal), or
// with a RunnerGrace wait for the next one. Restart starts it again.
func (s *Supervisor) Kill() {
	if s.p == nil {
		return
	}
	s.p.Kill()
	s.p = nil
}

// PID is the running supervisor's process id.
func (s *Supervisor) PID() int {
	if s.p == nil {
		return 0
	}
	return s.p.Pid()
}

// Restart stops the supervisor and starts it again on the same state folder
// and TCP address.
func (s *Supervisor) Restart() {
	s.tb.Helper()
	s.Stop()
	s.launch()
}

// TCPClient returns a client that reaches the supervisor over TCP with its
// token.
func (s *Supervisor) TCPClient() *client.Client {
	s.tb.Helper()
	if !s.opts.TCP {
		s.tb.Fatal("testsupervisor: TCPClient needs Options.TCP")
	}
	c, err := client.New(client.Options{BaseURL: s.URL, Token: s.Token})
	if err != nil {
		s.tb.Fatal(err)
	}
	return c
}

// Log is what the supervisor has written to stderr.
func (s *Supervisor) Log() string { return s.stderr.String() }
