package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/engines/versions"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/proc"
)

// supportedRange describes the supported versions in messages
// (internal/engines/versions decides them).
const supportedRange = versions.CodexRange

// How long the CLI gets to exit on its own after its stdin closes (it
// needs about half a second) before its process group is signalled.
const (
	exitGrace = 3 * time.Second
	termGrace = 2 * time.Second
)

// stderrLines is how many stderr lines a failure carries.
const stderrLines = 40

// checkVersion runs "codex --version" and refuses a CLI outside the
// supported range, naming what it found.
func checkVersion(ctx context.Context, bin string, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = env
	proc.ConfigureContext(cmd, time.Second)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("run %s --version: %w", bin, err)
	}
	v, err := versions.Codex(string(out))
	if err != nil {
		return v, fmt.Errorf("%s: %w", bin, err)
	}
	return v, nil
}

// serverProc is one running "codex app-server" process, or in tests a
// stand-in speaking the protocol over pipes.
type serverProc struct {
	conn *jsonrpc.Conn
	// stderr returns the server's last stderr lines.
	stderr func() []string
	// gone is closed once the server's output has ended and the process
	// has been waited for; exit is set before.
	gone <-chan struct{}
	exit string
	// closeInput closes the server's stdin, which asks it to exit.
	closeInput func()
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
	trace func(dir jsonrpc.Direction, body []byte)
	// stderrLine, when set, also receives each line of the server's
	// stderr (logging).
	stderrLine func([]byte)
}

// serverHooks are the engine's callbacks for a server. notify and badLine
// run on the reading goroutine, request on a goroutine of its own; gone
// runs once after the server is gone.
type serverHooks struct {
	notify  func(method string, params json.RawMessage)
	request func(ctx context.Context, srv *serverProc, method string, params json.RawMessage) (any, error)
	badLine func([]byte, error)
	gone    func(*serverProc)
}

// connOptions are the connection settings of the app-server protocol:
// newline-delimited JSON-RPC without the "jsonrpc" member, where a line
// Corral cannot read is logged and skipped.
func connOptions(s *serverProc, spec spawnSpec, hooks serverHooks) jsonrpc.Options {
	return jsonrpc.Options{
		Framing:     jsonrpc.Lines,
		MaxBody:     maxLineBytes,
		OmitVersion: true,
		BadMessage:  hooks.badLine,
		Notify:      hooks.notify,
		Request: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			return hooks.request(ctx, s, method, params)
		},
		Trace: spec.trace,
	}
}

// launchFunc starts a server.
type launchFunc func(spawnSpec, serverHooks) (*serverProc, error)

// spawn starts "codex app-server" in its own process group, and its reader.
func spawn(spec spawnSpec, hooks serverHooks) (*serverProc, error) {
	cmd := exec.Command(spec.bin, "app-server")
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	s := &serverProc{}
	child, err := jsonrpc.StartChild(cmd, jsonrpc.ChildOptions{
		Conn:        connOptions(s, spec, hooks),
		StderrLines: stderrLines,
		StderrLine:  spec.stderrLine,
		ExitGrace:   exitGrace,
		StopGrace:   termGrace,
		Gone: func(c *jsonrpc.Child) {
			s.exit = describeExit(c.Err())
			hooks.gone(s)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("start %s app-server: %w", spec.bin, err)
	}
	s.conn, s.stderr, s.gone, s.pid = child.Conn(), child.Stderr, child.Done(), child.Pid()
	s.closeInput = child.CloseInput
	s.kill = func() { child.Stop(0) }
	return s, nil
}

// describeExit says how the server ended, for logs and failures.
func describeExit(ee *jsonrpc.ExitError) string {
	if ee == nil {
		return "exited"
	}
	var d string
	switch {
	case ee.Signal != "":
		d = "was killed by " + ee.Signal
	case ee.Code == 0:
		d = "exited"
	default:
		d = fmt.Sprintf("exited with code %d", ee.Code)
	}
	if ee.ReadErr != nil {
		d += " (" + ee.ReadErr.Error() + ")"
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
		s.closeInput()
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
