package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/pkg/client"
)

// built holds the supervisor and runner binaries, built once per test
// process.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// binaries builds cmd/supervisor and cmd/runner (static, as make build
// does) into a temporary folder, once, and returns their paths.
func binaries(t testing.TB) (supervisor, runner string) {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "corral-browsertest-"); built.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", built.dir+string(os.PathSeparator),
			"github.com/corral-dev/corral/cmd/supervisor", "github.com/corral-dev/corral/cmd/runner")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out.String())
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return filepath.Join(built.dir, "supervisor"), filepath.Join(built.dir, "runner")
}

// Supervisor is a supervisor process serving a fresh state folder on the
// unix socket and on a loopback TCP port.
type Supervisor struct {
	State  string
	Cwd    string         // a folder for sessions to work in
	URL    string         // http://127.0.0.1:PORT
	Owner  *client.Client // on the unix socket
	Log    *testio.Buffer // its standard error
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartSupervisor starts bin/supervisor serve --listen 127.0.0.1:0 with the
// extra flags, and stops it when the test ends.
func StartSupervisor(t testing.TB, extra ...string) *Supervisor {
	t.Helper()
	sup, runner := binaries(t)
	base := t.TempDir()
	s := &Supervisor{State: filepath.Join(base, "state"), Cwd: filepath.Join(base, "work"), Log: &testio.Buffer{}, exited: make(chan struct{})}
	if err := os.Mkdir(s.Cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--state", s.State, "--runner", runner, "--listen", "127.0.0.1:0", "--log-level", "debug"}, extra...)
	s.cmd = exec.Command(sup, args...)
	// A terminal's default program is $SHELL: one that starts the same
	// everywhere.
	s.cmd.Env = append(os.Environ(), "SHELL=/bin/sh")
	s.cmd.Stderr = s.Log
	proc.Configure(s.cmd)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("supervisor log:\n%s", s.Log.String())
		}
	})
	var err error
	if s.Owner, err = client.ForState(s.State); err != nil {
		t.Fatal(err)
	}
	// The log line that says where it serves comes before it serves.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := s.Owner.Health(context.Background()); err == nil {
			break
		}
		select {
		case <-s.exited:
			t.Fatalf("supervisor exited:\n%s", s.Log.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("supervisor did not answer:\n%s", s.Log.String())
		}
	}
	m := regexp.MustCompile(`"tcp": "([^"]+)"`).FindStringSubmatch(s.Log.String())
	if m == nil {
		t.Fatalf("no TCP address in the log:\n%s", s.Log.String())
	}
	s.URL = "http://" + m[1]
	return s
}

func (s *Supervisor) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		proc.KillGroup(s.cmd.Process.Pid)
		<-s.exited
	}
}
