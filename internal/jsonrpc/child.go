package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/proc"
)

// Default graces of a Child. They only bound how long a stuck process can
// delay an end; a healthy one takes a fraction of each.
const (
	// DefaultExitGrace is how long a process whose output has ended (or
	// that stopped reading its input) gets to exit before its process
	// group is killed.
	DefaultExitGrace = 3 * time.Second
	// DefaultDrainGrace is how long a process's output may stay open
	// after it exited (held by a grandchild) before it is closed.
	DefaultDrainGrace = 2 * time.Second
	// DefaultStopGrace is how long Stop waits between SIGTERM and SIGKILL.
	DefaultStopGrace = 2 * time.Second
	// DefaultStderrLines is how many of the last stderr lines are kept.
	DefaultStderrLines = 40
)

// ChildOptions configure a Child. Every field is optional.
type ChildOptions struct {
	// Conn configures the connection. Its OnEnd and OnWriteError are
	// the Child's own and must be left nil.
	Conn Options
	// StderrLines is how many of the last stderr lines are kept for
	// errors (DefaultStderrLines when 0).
	StderrLines int
	// StderrLine, when set, also receives each line the child writes to
	// stderr (for a log), without its line ending; blank lines are left
	// out.
	StderrLine func(line []byte)
	// ExitGrace, DrainGrace and StopGrace default to DefaultExitGrace,
	// DefaultDrainGrace and DefaultStopGrace.
	ExitGrace, DrainGrace, StopGrace time.Duration
	// Gone, when set, runs once after the process and the connection have
	// both ended, and before Done is closed. It must not wait on Done.
	Gone func(*Child)
}

// ExitError is why a Child's connection ended: how its process exited and
// what it last wrote to stderr.
type ExitError struct {
	// Code is the exit code, -1 when a signal ended the process.
	Code int
	// Signal names the signal that ended the process, if one did.
	Signal string
	// Stderr holds the last lines the process wrote to stderr.
	Stderr []string
	// ReadErr is set when the connection broke (a framing or protocol
	// error, which makes the child useless, so it was killed) rather than
	// ending with the process.
	ReadErr error
}

// Status says how the process ended: "exited with status 0", "ended by
// signal killed".
func (e *ExitError) Status() string {
	if e.Signal != "" {
		return "ended by signal " + e.Signal
	}
	return fmt.Sprintf("exited with status %d", e.Code)
}

// LastLine is the last non-blank stderr line, or "".
func (e *ExitError) LastLine() string {
	for i := len(e.Stderr) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(e.Stderr[i]); s != "" {
			return s
		}
	}
	return ""
}

func (e *ExitError) Error() string {
	msg := "the process " + e.Status()
	if e.ReadErr != nil {
		msg = "the process's output broke off (" + e.ReadErr.Error() + "); it " + e.Status()
	}
	if line := e.LastLine(); line != "" {
		msg += ": " + line
	}
	return msg
}

func (e *ExitError) Unwrap() error { return e.ReadErr }

// Child is a JSON-RPC peer running as a child process, in its own process
// group, with the connection on its stdin and stdout. When the process
// dies, or its output ends, every waiting call fails with ErrClosed
// wrapping an *ExitError; nothing the process left in its group outlives
// it.
type Child struct {
	cmd    *exec.Cmd
	conn   *Conn
	stderr *proc.Tail
	opts   ChildOptions
	stdout io.Closer // our read end
	stdin  io.Closer // our write end

	exited  chan struct{} // closed once the process has been waited for
	waitErr error         // valid after exited
	ended   chan struct{} // closed once reading has ended
	served  chan struct{} // closed once the connection and the process are both finished
	done    chan struct{} // closed after served, once Gone has returned
	exit    *ExitError    // valid after done

	mu       sync.Mutex
	drained  bool // the output was closed by the Child after the process exited
	watching bool // a write failed and the exit grace is running
	stopOnce sync.Once
}

// StartChild starts cmd (which must have no Stdin, Stdout or Stderr set) in
// its own process group and connects to it. The connection is served until
// the process is gone.
func StartChild(cmd *exec.Cmd, opts ChildOptions) (*Child, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil || cmd.Stderr != nil {
		return nil, errors.New("jsonrpc: StartChild wants a command without its stdio set")
	}
	// Our own pipes, not exec's: the Child reads the output itself and
	// closes it if a grandchild keeps the write end open after the
	// process is gone.
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("jsonrpc: stdin pipe: %w", err)
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		stdin.Close()
		return nil, fmt.Errorf("jsonrpc: stdout pipe: %w", err)
	}
	tail := proc.NewTail(orInt(opts.StderrLines, DefaultStderrLines))
	cmd.Stdin, cmd.Stdout = childIn, childOut
	if opts.StderrLine != nil {
		cmd.Stderr = io.MultiWriter(tail, &lineWriter{line: opts.StderrLine})
	} else {
		cmd.Stderr = tail
	}
	// A grandchild holding stderr must not keep Wait from returning.
	cmd.WaitDelay = orDuration(opts.DrainGrace, DefaultDrainGrace)
	proc.Configure(cmd)
	err = cmd.Start()
	childIn.Close()
	childOut.Close()
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, fmt.Errorf("jsonrpc: start %s: %w", cmd.Path, err)
	}
	return adopt(cmd, stdout, stdin, tail, opts), nil
}

// AdoptChild connects to a started process whose protocol runs over
// stdout and stdin rather than its own stdio (tests put a replayer there),
// and whose stderr, if anything, goes to stderr. The process must have been
// started in its own process group (proc.Configure) and not be waited for
// by anyone else.
func AdoptChild(cmd *exec.Cmd, stdout io.ReadCloser, stdin io.WriteCloser, stderr *proc.Tail, opts ChildOptions) *Child {
	return adopt(cmd, stdout, stdin, stderr, opts)
}

func adopt(cmd *exec.Cmd, stdout io.ReadCloser, stdin io.WriteCloser, tail *proc.Tail, opts ChildOptions) *Child {
	c := &Child{
		cmd:    cmd,
		stderr: tail,
		opts:   opts,
		stdout: stdout,
		stdin:  stdin,
		exited: make(chan struct{}),
		ended:  make(chan struct{}),
		served: make(chan struct{}),
		done:   make(chan struct{}),
	}
	connOpts := opts.Conn
	connOpts.OnEnd = c.onEnd
	connOpts.OnWriteError = c.onWriteError
	c.conn = NewConn(stdout, stdin, connOpts)
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	go c.drainWatch()
	go func() {
		_ = c.conn.Serve()
		close(c.served)
		// Gone runs before Done closes, so whoever waits on Done also
		// waits for Gone: nothing it does (a log line, a field it sets)
		// outlives the wait.
		if opts.Gone != nil {
			opts.Gone(c)
		}
		close(c.done)
	}()
	return c
}

// drainWatch closes the output when the process has exited but something
// it started still holds the output open.
func (c *Child) drainWatch() {
	select {
	case <-c.ended:
		return
	case <-c.exited:
	}
	t := time.NewTimer(orDuration(c.opts.DrainGrace, DefaultDrainGrace))
	defer t.Stop()
	select {
	case <-c.ended:
	case <-t.C:
		c.mu.Lock()
		c.drained = true
		c.mu.Unlock()
		c.stdout.Close()
	}
}

// onEnd runs when reading has ended: it makes sure the process ends too,
// and says how it did.
func (c *Child) onEnd(readErr error) error {
	close(c.ended)
	c.mu.Lock()
	drained := c.drained
	c.mu.Unlock()
	if drained && errors.Is(readErr, os.ErrClosed) {
		readErr = nil
	}
	if readErr != nil {
		// A broken stream cannot be resynchronised; the process is no use.
		c.Kill()
	}
	select {
	case <-c.exited:
	case <-time.After(orDuration(c.opts.ExitGrace, DefaultExitGrace)):
		// Its output ended yet it runs on: end it.
		c.Kill()
		<-c.exited
	}
	// Nothing the process left behind in its group outlives it.
	c.Kill()
	c.stdin.Close()
	c.stdout.Close()
	code, sig := proc.ExitStatus(c.waitErr)
	c.exit = &ExitError{Code: code, Signal: sig, Stderr: c.stderr.Lines(), ReadErr: readErr}
	return c.exit
}

// onWriteError runs when the process stops reading its input: it gets the
// exit grace to go, then its group is killed, so the output ends and every
// waiting call learns how the process ended.
func (c *Child) onWriteError(error) {
	c.mu.Lock()
	if c.watching {
		c.mu.Unlock()
		return
	}
	c.watching = true
	c.mu.Unlock()
	go func() {
		t := time.NewTimer(orDuration(c.opts.ExitGrace, DefaultExitGrace))
		defer t.Stop()
		select {
		case <-c.exited:
		case <-c.served:
		case <-t.C:
			c.Kill()
		}
	}()
}

// Conn is the connection to the process.
func (c *Child) Conn() *Conn { return c.conn }

// Pid is the process id, which is also its process group id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Done is closed once the process has exited, the connection has ended
// and Gone has returned.
func (c *Child) Done() <-chan struct{} { return c.done }

// Exited is closed once the process has exited (its output may still be
// draining).
func (c *Child) Exited() <-chan struct{} { return c.exited }

// Alive reports whether the process runs and the connection works.
func (c *Child) Alive() bool {
	select {
	case <-c.served:
		return false
	case <-c.ended:
		return false
	default:
		return true
	}
}

// Err returns how the process ended, once Done is closed (nil before).
func (c *Child) Err() *ExitError {
	select {
	case <-c.served:
		return c.exit
	default:
		return nil
	}
}

// Stderr returns the last lines the process wrote to stderr.
func (c *Child) Stderr() []string { return c.stderr.Lines() }

// Kill SIGKILLs the process group: the process and everything it started.
func (c *Child) Kill() {
	if c.cmd.Process != nil {
		proc.KillGroup(c.cmd.Process.Pid)
	}
}

// CloseInput closes the process's stdin, which asks a well-behaved peer to
// exit.
func (c *Child) CloseInput() { c.stdin.Close() }

// Stop ends the process: its stdin closes so it can exit on its own; after
// grace its group gets SIGTERM, and after StopGrace SIGKILL. It returns
// once the process and the connection are both finished.
func (c *Child) Stop(grace time.Duration) {
	c.stopOnce.Do(func() {
		c.CloseInput()
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-c.exited:
		case <-t.C:
			proc.StopGroup(c.cmd, c.exited, orDuration(c.opts.StopGrace, DefaultStopGrace))
		}
	})
	<-c.served
}

// lineWriter hands what is written to it to line, one line at a time.
type lineWriter struct {
	line func([]byte)
	mu   sync.Mutex
	buf  []byte
}

// maxStderrLine bounds a line held back waiting for its end.
const maxStderrLine = 64 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		if line := bytes.TrimSpace(w.buf[:i]); len(line) > 0 {
			w.line(line)
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxStderrLine {
		w.line(w.buf)
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

func orDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func orInt(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}
