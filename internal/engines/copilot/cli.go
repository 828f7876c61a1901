package copilot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
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
	child   *jsonrpc.Child
	conn    *jsonrpc.Conn
	gone    <-chan struct{} // closed once the connection and process are both finished
	version string
}

// handlers are the engine's side of a CLI's connection.
type handlers struct {
	notify func(c *cli, method string, params json.RawMessage)
	trace  func(dir jsonrpc.Direction, body []byte)
	// gone runs once when the connection and the process have ended.
	gone func(c *cli)
}

// childOptions are the connection and shutdown settings of a CLI process.
func childOptions(c *cli, h handlers) jsonrpc.ChildOptions {
	return jsonrpc.ChildOptions{
		Conn: jsonrpc.Options{
			Framing: jsonrpc.ContentLength,
			Notify:  func(method string, params json.RawMessage) { h.notify(c, method, params) },
			Trace:   h.trace,
		},
		StderrLines: stderrLines,
		DrainGrace:  drainGrace,
		StopGrace:   stopGrace,
		Gone: func(*jsonrpc.Child) {
			if h.gone != nil {
				h.gone(c)
			}
		},
	}
}

// startCLI spawns the CLI in its own process group and connects to it,
// checking its protocol version. ctx bounds the handshake only.
func startCLI(ctx context.Context, s settings, h handlers) (*cli, error) {
	for _, dir := range []string{s.home, s.cacheDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("copilot: state folder: %w", err)
		}
	}
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.cwd
	cmd.Env = s.env
	c := &cli{}
	child, err := jsonrpc.StartChild(cmd, childOptions(c, h))
	if err != nil {
		return nil, fmt.Errorf("copilot: start %s: %w", s.bin, err)
	}
	c.attach(child)
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

// attach binds c to its running child.
func (c *cli) attach(child *jsonrpc.Child) {
	c.child, c.conn, c.gone = child, child.Conn(), child.Done()
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
			Code:    event.FailEngineError,
			Message: fmt.Sprintf("copilot CLI %s reports no protocol version; this adapter needs protocol version %s", version, need),
		}
	}
	if *got < minProtocolVersion || *got > maxProtocolVersion {
		return &engine.Failure{
			Code:    event.FailEngineError,
			Message: fmt.Sprintf("copilot CLI %s speaks protocol version %d; this adapter needs protocol version %s (install the pinned CLI with deploy/engines/install.sh)", version, *got, need),
		}
	}
	return nil
}

// alive reports whether the CLI's connection still works.
func (c *cli) alive() bool { return c.child.Alive() }

// pid is the CLI's process id.
func (c *cli) pid() int { return c.child.Pid() }

// kill SIGKILLs the CLI's process group.
func (c *cli) kill() { c.child.Kill() }

// shutdown asks the CLI to save its state and exit, then stops its process
// group, forcing it if it does not go.
func (c *cli) shutdown() {
	if c.alive() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		// The CLI exits right after answering, or never answers; either way
		// the stop below settles it.
		_ = c.conn.Call(ctx, methodRuntimeShutdown, struct{}{}, nil)
		cancel()
		c.conn.Close()
	}
	// End of input asks for a graceful exit too.
	c.child.Stop(shutdownGrace)
}

// exitDescription says how the process ended, once it has.
func (c *cli) exitDescription() string {
	ee := c.child.Err()
	if ee == nil {
		return "the CLI's output ended"
	}
	switch {
	case ee.Signal != "":
		return "the CLI ended by signal (" + ee.Signal + ")"
	case ee.Code == 0:
		return "the CLI exited"
	default:
		return fmt.Sprintf("the CLI exited with status %d", ee.Code)
	}
}

// failure wraps err as an engineError carrying the CLI's stderr tail;
// died says the CLI ended on its own, which the message then describes.
func (c *cli) failure(context string, err error, died bool) *engine.Failure {
	var f *engine.Failure
	if errors.As(err, &f) {
		if len(f.Stderr) == 0 {
			f.Stderr = c.child.Stderr()
		}
		return f
	}
	msg := context
	if died {
		msg += ": " + c.exitDescription()
		if lines := c.child.Stderr(); len(lines) > 0 {
			msg += ": " + strings.TrimSpace(lines[len(lines)-1])
		}
	}
	return &engine.Failure{Code: event.FailEngineError, Message: msg, Stderr: c.child.Stderr(), Err: err}
}

// crashFailure describes the CLI going away on its own.
func (c *cli) crashFailure() *engine.Failure {
	var readErr error
	if ee := c.child.Err(); ee != nil {
		readErr = ee.ReadErr
	}
	msg := "copilot: " + c.exitDescription() + " during the turn"
	if readErr != nil {
		msg = "copilot: the CLI's output broke off during the turn (" + readErr.Error() + "); " + c.exitDescription()
	}
	lines := c.child.Stderr()
	if len(lines) > 0 {
		msg += ": " + strings.TrimSpace(lines[len(lines)-1])
	}
	return &engine.Failure{Code: event.FailEngineError, Message: msg, Stderr: lines, Err: readErr}
}
