package codex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/proc"
)

// Supported CLI versions: the pinned 0.169.0 and its patch releases. The
// protocol changes between minor releases often enough that an unknown one
// is refused rather than half-working.
const (
	supportedMajor = 0
	supportedMinor = 169
	supportedRange = "0.169.x"
)

// How long the CLI gets to exit on its own after its stdin closes (it
// needs about half a second) before its process group is signalled.
const (
	exitGrace = 3 * time.Second
	termGrace = 2 * time.Second
)

// stderrLines is how many stderr lines a failure carries.
const stderrLines = 40

var versionRE = regexp.MustCompile(`codex-cli (\d+)\.(\d+)\.(\d+)\S*`)

// checkVersion runs "codex --version" and refuses a CLI outside the
// supported range, naming what it found.
func checkVersion(ctx context.Context, bin string, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = env
	proc.Configure(cmd)
	cmd.Cancel = func() error { proc.KillGroup(cmd.Process.Pid); return nil }
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("run %s --version: %w", bin, err)
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return "", fmt.Errorf("%s --version printed %q, not a codex-cli version; Corral needs codex-cli %s", bin, clip(out, 80), supportedRange)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major != supportedMajor || minor != supportedMinor {
		return m[0], fmt.Errorf("%s is %s; Corral needs codex-cli %s (run deploy/engines/install.sh or configure the path of a supported CLI)", bin, m[0], supportedRange)
	}
	return strings.TrimPrefix(m[0], "codex-cli "), nil
}

// serverProc is one running "codex app-server" process, or in tests a
// stand-in speaking the protocol over pipes.
type serverProc struct {
	conn   *conn
	stderr *proc.Tail
	// gone is closed once the server's stdout has ended and the process
	// has been waited for; exit is set before.
	gone chan struct{}
	exit string
	// kill ends the server and waits until it is gone.
	kill func()
	// pid is the process id (0 for a stand-in).
	pid int

	stopOnce sync.Once
}

// spawnSpec is what starting a server needs.
type spawnSpec struct {
	bin   string
	dir   string
	env   []string
	trace tracer
	// stderr, when set, also receives the server's stderr (logging).
	stderr io.Writer
}

// serverHooks are the engine's callbacks for a server. handle and badLine
// run on the reading goroutine; gone runs once after the server is gone.
type serverHooks struct {
	handle  func(*serverProc, message)
	badLine func([]byte, error)
	gone    func(*serverProc)
}

// launchFunc starts a server.
type launchFunc func(spawnSpec, serverHooks) (*serverProc, error)

// spawn starts "codex app-server" in its own process group, and its reader.
func spawn(spec spawnSpec, hooks serverHooks) (*serverProc, error) {
	cmd := exec.Command(spec.bin, "app-server")
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	proc.Configure(cmd)
	// A command Codex left running in the background must not keep Wait
	// from returning through an inherited stderr.
	cmd.WaitDelay = 2 * time.Second
	s := &serverProc{stderr: proc.NewTail(stderrLines), gone: make(chan struct{})}
	if spec.stderr != nil {
		cmd.Stderr = io.MultiWriter(s.stderr, spec.stderr)
	} else {
		cmd.Stderr = s.stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("codex app-server stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stdin.Close()
		return nil, fmt.Errorf("codex app-server stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		stdin.Close()
		stdout.Close()
		return nil, fmt.Errorf("start %s app-server: %w", spec.bin, err)
	}
	s.conn = newConn(stdin, spec.trace)
	s.pid = cmd.Process.Pid
	s.kill = func() { proc.StopGroup(cmd, s.gone, termGrace) }
	go func() {
		readErr := s.conn.serve(stdout, func(m message) { hooks.handle(s, m) }, hooks.badLine)
		if !errors.Is(readErr, errConnClosed) {
			// The stream is unusable (an oversized line): stop the
			// process rather than leave it writing into a closed pipe.
			proc.KillGroup(cmd.Process.Pid)
		}
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		var waitErr error
		select {
		case waitErr = <-waited:
		case <-time.After(exitGrace):
			// Its stdout is closed yet it runs on: end it.
			proc.KillGroup(cmd.Process.Pid)
			waitErr = <-waited
		}
		// Whatever the server left in its group dies with it.
		proc.KillGroup(cmd.Process.Pid)
		s.exit = describeExit(waitErr, readErr)
		close(s.gone)
		hooks.gone(s)
	}()
	return s, nil
}

func describeExit(waitErr, readErr error) string {
	code, sig := proc.ExitStatus(waitErr)
	var d string
	switch {
	case sig != "":
		d = "was killed by " + sig
	case waitErr == nil:
		d = "exited"
	default:
		d = fmt.Sprintf("exited with code %d", code)
	}
	if readErr != nil && !errors.Is(readErr, errConnClosed) {
		d += " (" + readErr.Error() + ")"
	}
	return d
}

// alive reports whether the server is still running.
func (s *serverProc) alive() bool {
	select {
	case <-s.gone:
		return false
	default:
		return true
	}
}

// stop ends the server: stdin closes so it can exit on its own, then it is
// terminated and, if need be, killed. It returns once the server is gone.
func (s *serverProc) stop() {
	s.stopOnce.Do(func() {
		_ = s.conn.closeWrite()
		t := time.NewTimer(exitGrace)
		defer t.Stop()
		select {
		case <-s.gone:
		case <-t.C:
			s.kill()
		}
	})
	<-s.gone
}
