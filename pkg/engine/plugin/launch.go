package plugin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// Named limits of a plugin process's life.
const (
	// handshakeTimeout bounds the wait for a launched plugin's handshake
	// line.
	handshakeTimeout = 30 * time.Second
	// closeWait bounds the plugin's own Close of its engine.
	closeWait = 5 * time.Second
	// killWait bounds go-plugin's shutdown of the process (it asks the
	// plugin to quit, then kills it) before the runner kills the process
	// group itself.
	killWait = 5 * time.Second
	// exitWait is how long a plugin whose connection dropped gets to
	// exit before it is killed.
	exitWait = 2 * time.Second
	// hostWait bounds the wait for the Host stream and its calls to end
	// once the connection is gone.
	hostWait = 10 * time.Second
	// stderrLines is the crash tail kept from a plugin's stderr.
	stderrLines = 40
)

// process is one launched plugin: the child, its go-plugin client, the
// protocol connection and the tail of its stderr.
type process struct {
	path   string
	log    *zap.Logger
	tail   *proc.Tail
	stderr *lineWriter
	synced *lineWriter
	client *goplugin.Client
	child  atomic.Pointer[child]
	remote *remote
	// live ends when the process is shut down.
	live    context.Context
	endLive context.CancelFunc
	once    sync.Once
}

// launch starts the plugin at path, completes the handshake and dispenses
// its engine. Its errors are *engine.Failure.
func launch(ctx context.Context, path string, opts engine.StartOptions, log *zap.Logger) (*process, error) {
	p := &process{path: path, log: log, tail: proc.NewTail(stderrLines)}
	p.live, p.endLive = context.WithCancel(context.Background())
	p.stderr = &lineWriter{tail: p.tail, log: log, stream: "stderr"}
	p.synced = &lineWriter{tail: p.tail, log: log, stream: "stderr"}
	p.client = goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  Handshake(),
		VersionedPlugins: map[int]goplugin.PluginSet{ProtocolVersion: {pluginName: &rpcPlugin{}}},
		RunnerFunc: func(_ hclog.Logger, cmd *exec.Cmd, socketDir string) (runner.Runner, error) {
			return p.newChild(cmd, socketDir, opts)
		},
		// The child's environment is opts.Env, already stripped of
		// credential variables, plus go-plugin's handshake variables.
		SkipHostEnv:      true,
		StartTimeout:     handshakeTimeout,
		Stderr:           p.stderr,
		SyncStderr:       p.synced,
		SyncStdout:       &lineWriter{log: log, stream: "stdout"},
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolNetRPC},
		Logger:           hclog.NewNullLogger(),
	})

	type connected struct {
		remote *remote
		err    error
	}
	res := make(chan connected, 1)
	go func() {
		r, err := p.connect()
		res <- connected{r, err}
	}()
	var c connected
	select {
	case c = <-res:
	case <-ctx.Done():
		// Killing the child ends the handshake at once.
		if ch := p.child.Load(); ch != nil {
			ch.kill()
		}
		c = <-res
		if c.err == nil {
			c.err = ctx.Err()
		}
	}
	if c.err == nil {
		p.remote = c.remote
		return p, nil
	}
	p.shutdown()
	return nil, p.launchFailure(ctx, c.err)
}

func (p *process) connect() (*remote, error) {
	cp, err := p.client.Client()
	if err != nil {
		return nil, err
	}
	raw, err := cp.Dispense(pluginName)
	if err != nil {
		return nil, fmt.Errorf("dispense the engine: %w", err)
	}
	r, ok := raw.(*remote)
	if !ok {
		return nil, fmt.Errorf("dispense the engine: got %T", raw)
	}
	return r, nil
}

// launchFailure describes why a launch failed.
func (p *process) launchFailure(ctx context.Context, err error) error {
	name := filepath.Base(p.path)
	ch := p.child.Load()
	switch {
	case ctx.Err() != nil:
		return &engine.Failure{Code: event.FailEngineError, Message: "starting engine plugin " + name + " was cancelled", Stderr: p.tailLines(), Err: ctx.Err()}
	case ch == nil || !ch.started.Load():
		return &engine.Failure{Code: event.FailEngineError, Message: "run engine plugin " + p.path, Err: err}
	}
	exited := ch.waitExit(exitWait)
	lines := p.tailLines()
	first := ""
	if len(lines) > 0 {
		first = lines[0]
	}
	he := &HandshakeError{Path: p.path, Expected: expectedHandshake(), Found: describeHandshake(err, exited, ch.exitSummary(), first), Err: err}
	return &engine.Failure{Code: event.FailEngineError, Message: "engine plugin handshake failed", Stderr: lines, Err: he}
}

// tailLines returns the crash tail, with any unterminated last lines.
func (p *process) tailLines() []string {
	p.stderr.flush()
	p.synced.flush()
	return p.tail.Lines()
}

// exited reports whether the plugin process has ended.
func (p *process) exited() bool {
	ch := p.child.Load()
	if ch == nil {
		return true
	}
	select {
	case <-ch.exited:
		return true
	default:
		return false
	}
}

// reap waits up to exitWait for a process whose connection dropped to
// exit, shuts it down, and says how it ended.
func (p *process) reap() string {
	ch := p.child.Load()
	if ch == nil {
		p.shutdown()
		return "did not start"
	}
	exitedByItself := ch.waitExit(exitWait)
	p.shutdown()
	if !exitedByItself {
		return "dropped its connection and was killed"
	}
	return "exited (" + ch.exitSummary() + ")"
}

// shutdown ends the process and everything serving it: the Host calls in
// progress, go-plugin's client (which asks the plugin to quit, then kills
// it), the process group, the socket folder. It never blocks for long on a
// dead or stuck plugin, and is safe to call more than once.
func (p *process) shutdown() {
	p.once.Do(func() {
		p.endLive()
		done := make(chan struct{})
		go func() {
			p.client.Kill()
			close(done)
		}()
		t := time.NewTimer(killWait)
		defer t.Stop()
		ch := p.child.Load()
		select {
		case <-done:
		case <-t.C:
			p.log.Warn("engine plugin did not shut down; killing its process group", zap.String("plugin", p.path))
			if ch != nil {
				ch.kill()
			}
			t.Reset(killWait)
			select {
			case <-done:
			case <-t.C:
				// Something outside the process group still holds
				// the plugin's output open; go-plugin's client
				// waits for it, the runner does not.
				p.log.Error("engine plugin output still open after its process group was killed", zap.String("plugin", p.path))
			}
		}
		if ch != nil {
			// Whatever the plugin left in its process group goes too.
			ch.kill()
			_ = os.RemoveAll(ch.socketDir)
		}
		if p.remote != nil && !p.remote.wait(hostWait) {
			p.log.Error("host calls of an engine plugin did not end", zap.String("plugin", p.path))
		}
	})
}
