package plugin

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-plugin/runner"
	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/engine"
)

// newChild builds the plugin's process for go-plugin: own process group,
// killed with the runner, stdin from /dev/null (a runner's stdin may be its
// wire protocol), the session's cleaned environment, the worktree as its
// folder.
func (p *process) newChild(spec *exec.Cmd, socketDir string, opts engine.StartOptions) (*child, error) {
	cmd := exec.Command(p.path)
	cmd.Env = append(proc.CleanEnv(opts.Env), spec.Env...)
	cmd.Dir = opts.Cwd
	proc.Configure(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	ch := &child{cmd: cmd, stdout: stdout, stderr: stderr, socketDir: socketDir, exited: make(chan struct{})}
	p.child.Store(ch)
	return ch, nil
}

// child runs the plugin process for go-plugin (a runner.Runner).
type child struct {
	cmd            *exec.Cmd
	stdout, stderr io.ReadCloser
	socketDir      string
	started        atomic.Bool
	exited         chan struct{}
	// waitErr is set before exited closes.
	waitErr error
}

var _ runner.Runner = (*child)(nil)

func (c *child) Start(context.Context) error {
	if err := c.cmd.Start(); err != nil {
		return err
	}
	c.started.Store(true)
	return nil
}

// Wait is called once, by go-plugin, after the plugin's stdout and stderr
// reached their end.
func (c *child) Wait(context.Context) error {
	if !c.started.Load() {
		return errors.New("the plugin was not started")
	}
	c.waitErr = c.cmd.Wait()
	close(c.exited)
	return c.waitErr
}

func (c *child) Kill(context.Context) error {
	c.kill()
	return nil
}

// kill SIGKILLs the plugin's process group.
func (c *child) kill() {
	if c.started.Load() {
		proc.KillGroup(c.cmd.Process.Pid)
	}
}

func (c *child) waitExit(d time.Duration) bool {
	if !c.started.Load() {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitSummary says how the process ended; call it once exited is closed.
func (c *child) exitSummary() string {
	select {
	case <-c.exited:
	default:
		return "still running"
	}
	code, sig := proc.ExitStatus(c.waitErr)
	switch {
	case sig != "":
		return "killed by signal: " + sig
	case code >= 0:
		return "exit status " + strconv.Itoa(code)
	}
	return c.waitErr.Error()
}

func (c *child) Diagnose(context.Context) string { return "" }
func (c *child) Stdout() io.ReadCloser           { return c.stdout }
func (c *child) Stderr() io.ReadCloser           { return c.stderr }
func (c *child) Name() string                    { return c.cmd.Path }

func (c *child) ID() string {
	if !c.started.Load() {
		return ""
	}
	return strconv.Itoa(c.cmd.Process.Pid)
}

// The plugin shares the runner's network and file system, so addresses
// need no translation.
func (c *child) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (c *child) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// maxLine bounds an unterminated line kept from a plugin's output.
const maxLine = 4096

// lineWriter hands complete lines of a plugin's output to its crash tail
// (when tail is set) and to the runner's debug log. Two writers share one
// tail, so each hands over whole lines only.
type lineWriter struct {
	tail   *proc.Tail
	log    *zap.Logger
	stream string

	mu      sync.Mutex
	partial []byte
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range b {
		if c == '\n' {
			w.emitLocked()
			continue
		}
		if len(w.partial) < maxLine {
			w.partial = append(w.partial, c)
		}
	}
	return len(b), nil
}

// flush hands over an unterminated last line.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.emitLocked()
	}
}

func (w *lineWriter) emitLocked() {
	line := string(w.partial)
	w.partial = w.partial[:0]
	if w.tail != nil {
		_, _ = w.tail.Write([]byte(line + "\n"))
	}
	w.log.Debug("engine plugin "+w.stream, zap.String("line", line))
}
