package runnercmd

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/runner"
	"github.com/corral-dev/corral/internal/testenv"
)

// dialEnv makes the test binary a helper for
// TestRunnerSocketTakesOnlyItsOwnUser (TestMain): run as another user, it
// connects to the socket it names and waits for the runner to close it.
const dialEnv = "CORRAL_TEST_DIAL_SOCKET"

func dialRunnerSocket(path string) int {
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	io.Copy(io.Discard, c)
	return 0
}

// TestRunnerSocketTakesOnlyItsOwnUser: even with runner.sock and its folder
// opened to everyone (modes loosened by mistake), a process of another
// user is refused by its credentials; one of the runner's own user is
// let in.
func TestRunnerSocketTakesOnlyItsOwnUser(t *testing.T) {
	testenv.NeedRoot(t, "connecting as another local user")
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := runner.ListenAttach(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	path := filepath.Join(dir, runner.RunnerSock)
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	// The helper is this test binary, copied where the other user can run
	// it.
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	helper := filepath.Join(dir, "helper")
	if err := os.WriteFile(helper, self, 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		uid    uint32
		refuse bool
	}{
		{"another user", 65534, true},
		{"the runner's own user", uint32(os.Geteuid()), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(helper)
			cmd.Env = append(os.Environ(), dialEnv+"="+path)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: tc.uid, Gid: tc.uid}}
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			c, err := ln.AcceptUnix()
			if err != nil {
				t.Fatal(err)
			}
			err = checkPeer(c)
			c.Close() // the helper then ends
			if werr := cmd.Wait(); werr != nil {
				t.Fatalf("helper: %v\n%s", werr, out.String())
			}
			switch {
			case tc.refuse && err == nil:
				t.Fatal("a process of another user was let in")
			case tc.refuse && !strings.Contains(err.Error(), "uid 65534"):
				t.Fatalf("refused for another reason: %v", err)
			case !tc.refuse && err != nil:
				t.Fatalf("the runner's own user was refused: %v", err)
			}
		})
	}
}
