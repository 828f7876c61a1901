package copilot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/engines/copilot/jsonrpc"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// Time allowed for shutdown steps. They only bound how long a stuck CLI can
// delay Close; a healthy one takes a fraction of each.
const (
	shutdownGrace = 5 * time.Second // runtime.shutdown, then exit
	stopGrace     = 3 * time.Second // SIGTERM before SIGKILL
	drainGrace    = 2 * time.Second // output after exit, held open by a grandchild
)

// stderrLines is how much of the CLI's stderr a failure carries.
const stderrLines = 40

// cli is one running Copilot CLI process and its connection.
type cli struct {
	cmd     *exec.Cmd
	conn    *jsonrpc.Conn
	stdout  *os.File // our read end
	stdin   *os.File // our write end
	stderr  *proc.Tail
	version string

	exited  chan struct{} // closed once the process has been waited for
	waitErr error         // valid after exited
	gone    chan struct{} // closed once the connection and process are both finished

	mu       sync.Mutex
	serveErr error // why the connection ended, valid after gone
}

// handlers are the engine's side of a CLI's connection.
type handlers struct {
	notify func(c *cli, method string, params json.RawMessage)
	trace  func(dir jsonrpc.Direction, body []byte)
	// gone runs once when the connection and the process have ended.
	gone func(c *cli)
}

// startCLI spawns the CLI in its own process group and connects to it,
// checking its protocol version. ctx bounds the handshake only.
func startCLI(ctx context.Context, s settings, h handlers) (*cli, error) {
	for _, dir := range []string{s.home, s.cacheDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("copilot: state folder: %w", err)
		}
	}
	// Our own pipes, not exec's: the connection reads stdout directly and
	// closes it itself if a grandchild keeps the write end open after the
	// CLI is gone.
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("copilot: stdin pipe: %w", err)
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		stdin.Close()
		return nil, fmt.Errorf("copilot: stdout pipe: %w", err)
	}
	c := &cli{
		stdout: stdout,
		stdin:  stdin,
		stderr: proc.NewTail(stderrLines),
		exited: make(chan struct{}),
		gone:   make(chan struct{}),
	}
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.cwd
	cmd.Env = s.env
	cmd.Stdin = childIn
	cmd.Stdout = childOut
	cmd.Stderr = c.stderr
	// A grandchild holding stderr must not keep Wait from returning.
	cmd.WaitDelay = drainGrace
	proc.Configure(cmd)
	c.cmd = cmd
	err = cmd.Start()
	childIn.Close()
	childOut.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, fmt.Errorf("copilot: start %s: %w", s.bin, err)
	}

	c.conn = jsonrpc.NewConn(stdout, stdin, jsonrpc.Options{
		Notify: func(method string, params json.RawMessage) { h.notify(c, method, params) },
		Trace:  h.trace,
	})
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	go c.supervise(h.gone)

	if err := c.handshake(ctx); err != nil {
		died := errors.Is(err, jsonrpc.ErrClosed)
		if !died {
			c.kill()
		}
		<-c.gone
		return nil, c.failure("copilot: connect to the CLI", err, died)
	}
	return c, nil
}

// supervise serves the connection until it ends, makes sure the process
// ends too, and reports both gone.
func (c *cli) supervise(gone func(*cli)) {
	serveDone := make(chan error, 1)
	go func() { serveDone <- c.conn.Serve() }()
	var serveErr error
	select {
	case serveErr = <-serveDone:
		if serveErr != nil {
			// A broken stream cannot be resynchronised; the CLI is no use.
			c.kill()
		}
		<-c.exited
	case <-c.exited:
		select {
		case serveErr = <-serveDone:
		case <-time.After(drainGrace):
			// Something the CLI started still holds its stdout.
			c.stdout.Close()
			serveErr = <-serveDone
		}
	}
	// Nothing the CLI left behind in its group outlives it.
	c.kill()
	c.stdin.Close()
	c.stdout.Close()
	c.mu.Lock()
	c.serveErr = serveErr
	c.mu.Unlock()
	if gone != nil {
		gone(c)
	}
	close(c.gone)
}

// handshake sends connect and checks the protocol version. A CLI too old
// to know connect is asked with ping, as the official client does.
func (c *cli) handshake(ctx context.Context) error {
	var res connectResult
	err := c.conn.Call(ctx, methodConnect, struct{}{}, &res)
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound {
		var ping pingResult
		if err := c.conn.Call(ctx, methodPing, pingParams{Message: "corral"}, &ping); err != nil {
			return err
		}
		res.ProtocolVersion = ping.ProtocolVersion
	} else if err != nil {
		return err
	}
	c.version = res.Version
	return checkProtocol(res.Version, res.ProtocolVersion)
}

// checkProtocol refuses a CLI whose protocol version the adapter does not
// speak, naming what it found and what it needs.
func checkProtocol(version string, got *int) error {
	if version == "" {
		version = "(unknown version)"
	}
	need := fmt.Sprintf("%d", minProtocolVersion)
	if minProtocolVersion != maxProtocolVersion {
		need = fmt.Sprintf("%d to %d", minProtocolVersion, maxProtocolVersion)
	}
	if got == nil {
		return &engine.Failure{
			Code:    wire.FailEngineError,
			Message: fmt.Sprintf("copilot CLI %s reports no protocol version; this adapter needs protocol version %s", version, need),
		}
	}
	if *got < minProtocolVersion || *got > maxProtocolVersion {
		return &engine.Failure{
			Code:    wire.FailEngineError,
			Message: fmt.Sprintf("copilot CLI %s speaks protocol version %d; this adapter needs protocol version %s (install the pinned CLI with deploy/engines/install.sh)", version, *got, need),
		}
	}
	return nil
}

// alive reports whether the CLI's connection still works.
func (c *cli) alive() bool {
	select {
	case <-c.gone:
		return false
	case <-c.conn.Done():
		return false
	default:
		return true
	}
}

// kill SIGKILLs the CLI's process group.
func (c *cli) kill() {
	if c.cmd.Process != nil {
		proc.KillGroup(c.cmd.Process.Pid)
	}
}

// shutdown asks the CLI to save its state and exit, then stops its process
// group, forcing it if it does not go.
func (c *cli) shutdown() {
	if c.alive() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		// The CLI exits right after answering, or never answers; either way
		// the wait below settles it.
		_ = c.conn.Call(ctx, methodRuntimeShutdown, struct{}{}, nil)
		cancel()
		c.conn.Close()
		c.stdin.Close() // end of input asks for a graceful exit too
		select {
		case <-c.exited:
		case <-time.After(shutdownGrace):
		}
	}
	proc.StopGroup(c.cmd, c.exited, stopGrace)
	<-c.gone
}

// exitDescription says how the process ended, once it has.
func (c *cli) exitDescription() string {
	select {
	case <-c.exited:
	default:
		return "the CLI's output ended"
	}
	code, sig := proc.ExitStatus(c.waitErr)
	switch {
	case sig != "":
		return "the CLI ended by signal (" + sig + ")"
	case c.waitErr == nil:
		return "the CLI exited"
	default:
		return fmt.Sprintf("the CLI exited with status %d", code)
	}
}

// failure wraps err as an engineError carrying the CLI's stderr tail;
// died says the CLI ended on its own, which the message then describes.
func (c *cli) failure(context string, err error, died bool) *engine.Failure {
	var f *engine.Failure
	if errors.As(err, &f) {
		if len(f.Stderr) == 0 {
			f.Stderr = c.stderr.Lines()
		}
		return f
	}
	msg := context
	if died {
		msg += ": " + c.exitDescription()
		if lines := c.stderr.Lines(); len(lines) > 0 {
			msg += ": " + strings.TrimSpace(lines[len(lines)-1])
		}
	}
	return &engine.Failure{Code: wire.FailEngineError, Message: msg, Stderr: c.stderr.Lines(), Err: err}
}

// crashFailure describes the CLI going away on its own.
func (c *cli) crashFailure() *engine.Failure {
	c.mu.Lock()
	serveErr := c.serveErr
	c.mu.Unlock()
	msg := "copilot: " + c.exitDescription() + " during the turn"
	if serveErr != nil && !errors.Is(serveErr, os.ErrClosed) {
		msg = "copilot: the CLI's output broke off during the turn (" + serveErr.Error() + "); " + c.exitDescription()
	}
	if lines := c.stderr.Lines(); len(lines) > 0 {
		msg += ": " + strings.TrimSpace(lines[len(lines)-1])
	}
	return &engine.Failure{Code: wire.FailEngineError, Message: msg, Stderr: c.stderr.Lines(), Err: serveErr}
}
