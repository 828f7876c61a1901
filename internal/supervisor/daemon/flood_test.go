package daemon

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testproc"
	"github.com/corral-dev/corral/internal/testrunner"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// floodEnv makes the test binary a daemon with a low open-file limit: the
// value is its state folder; floodRunnerEnv is its runner.
const (
	floodEnv       = "CORRAL_TEST_FLOOD_DAEMON"
	floodRunnerEnv = "CORRAL_TEST_FLOOD_RUNNER"
)

// floodNoFile is the child daemon's open-file limit (soft and hard, so the
// Go runtime cannot raise it).
const floodNoFile = 256

// floodDaemon runs in the child: it lowers its open-file limit, serves on
// a loopback port, prints "ready ADDR" and serves until SIGTERM.
func floodDaemon(state string) int {
	os.Unsetenv(floodEnv)
	lim := unix.Rlimit{Cur: floodNoFile, Max: floodNoFile}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		return 1
	}
	err := Run(context.Background(), Config{StateDir: state, RunnerPath: os.Getenv(floodRunnerEnv), Listen: "127.0.0.1:0", Logger: zap.NewNop(),
		Ready: func(l Listening) { fmt.Printf("ready %s\n", l.TCPAddr) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestUnixSocketAnswersThroughATCPFlood is finding 5 of issue 18: clients
// without a token holding TCP connections open (headers sent slowly, or a
// body never finished) cannot take the files the unix socket needs. The
// daemon runs in a child process whose open-file limit is 256; 800 such
// clients connect, and the owner must be able to check the daemon's health,
// create a session and command it over the socket while they hold on
// (before the header timeout frees any of them).
func TestUnixSocketAnswersThroughATCPFlood(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floodEnv+"="+state, floodRunnerEnv+"="+testrunner.Path(t))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := testproc.Start(t, cmd)
	defer p.Stop(30 * time.Second)
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		t.Fatalf("child daemon did not start: %q %v", line, err)
	}

	const each = 400
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 2 * each {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
		if i%2 == 0 {
			// Headers sent slowly: only the first line.
			fmt.Fprintf(c, "GET /v1/sessions HTTP/1.1\r\n")
		} else {
			// A body never finished, under the 256 KiB net/http reads
			// to reuse a connection.
			fmt.Fprintf(c, "POST /v1/sessions HTTP/1.1\r\nHost: %s\r\nContent-Length: 200000\r\n\r\n{", addr)
		}
	}

	// Well inside the 10 s header timeout: nothing has freed the slow
	// clients yet.
	ctx, cancel := context.WithTimeout(context.Background(), headerTimeout*8/10)
	defer cancel()
	c, err := client.ForState(state)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Health(ctx); err != nil {
		t.Fatalf("the unix socket did not answer through the flood: %v", err)
	}
	// And the owner can work: a session needs a runner, its pipes, its
	// files.
	s, err := c.CreateSession(ctx, wire.Spec{Engine: "script"})
	if err != nil {
		t.Fatalf("create a session through the flood: %v", err)
	}
	if _, err := c.Command(ctx, s.ID, command.GetStatus{}); err != nil {
		t.Fatalf("a command through the flood: %v", err)
	}
}
