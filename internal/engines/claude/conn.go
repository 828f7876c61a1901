package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/wire"
)

// maxFrameBytes bounds one stdout line. Tool results and Write inputs travel
// in frames, so this is generous; a longer line is a protocol failure.
const maxFrameBytes = 64 << 20

// stderrLines is how much of the CLI's stderr a failure carries.
const stderrLines = 40

// errConnGone reports a request to a CLI process that has exited.
var errConnGone = errors.New("the claude CLI process has exited")

// launchSpec is everything needed to start one CLI process.
type launchSpec struct {
	bin  string
	args []string
	dir  string
	env  []string
	key  string // the API key, handed over on a pipe (keyPipe), never in env
}

// conn is one running CLI process and the protocol over its stdio. Frames
// other than replies to the host's own requests go to handle, on the reader
// goroutine, in the order the CLI wrote them.
type conn struct {
	cmd    *exec.Cmd
	stderr *proc.Tail
	logger *zap.Logger
	handle func(*conn, *frame)
	tap    func(dir jsonrpc.Direction, line []byte)

	// ctx ends when the process is gone or being closed; request handlers
	// run under it.
	ctx    context.Context
	cancel context.CancelFunc

	// The write queue: frames are written in order by one goroutine, so the
	// reader never blocks on a full stdin pipe.
	wmu      sync.Mutex
	wcond    *sync.Cond
	queue    [][]byte
	wclosed  bool
	writeErr error

	mu      sync.Mutex
	nextID  int
	pending map[string]chan controlReply
	permits map[string]context.CancelFunc // can_use_tool request id -> its Permit

	handlers sync.WaitGroup // request handlers and watchdogs
	io       sync.WaitGroup // reader and writer

	done     chan struct{} // closed once the process has exited and its I/O ended
	exitErr  error         // from Wait; valid after done
	protoErr error         // why reading stopped early; valid after done
}

// startConn starts the CLI. The caller owns the returned conn and must close
// it.
func startConn(spec launchSpec, logger *zap.Logger, handle func(*conn, *frame), tap func(jsonrpc.Direction, []byte)) (*conn, error) {
	cmd := exec.Command(spec.bin, spec.args...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	proc.Configure(cmd)
	// A tool's stray grandchild may hold the CLI's stderr open after the CLI
	// exits; Wait then gives up on it after this long.
	cmd.WaitDelay = 2 * time.Second
	started, err := keyPipe(cmd, spec.key)
	if err != nil {
		return nil, err
	}
	defer started()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("claude CLI stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("claude CLI stdout: %w", err)
	}
	tail := proc.NewTail(stderrLines)
	cmd.Stderr = tail
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start claude CLI %s: %w", spec.bin, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		cmd:     cmd,
		stderr:  tail,
		logger:  logger.With(zap.Int("pid", cmd.Process.Pid)),
		handle:  handle,
		tap:     tap,
		ctx:     ctx,
		cancel:  cancel,
		pending: map[string]chan controlReply{},
		permits: map[string]context.CancelFunc{},
		done:    make(chan struct{}),
	}
	c.wcond = sync.NewCond(&c.wmu)
	c.io.Add(2)
	go c.writeLoop(stdin)
	go c.readLoop(stdout)
	return c, nil
}

// pid is the CLI's process id, which is also its process group id.
func (c *conn) pid() int { return c.cmd.Process.Pid }

// alive reports whether the process is still running.
func (c *conn) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// send queues one frame.
func (c *conn) send(f outFrame) error {
	line, err := encodeFrame(f)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wclosed {
		return errConnGone
	}
	if c.writeErr != nil {
		return fmt.Errorf("write to claude CLI: %w", c.writeErr)
	}
	c.queue = append(c.queue, line)
	c.wcond.Signal()
	return nil
}

func (c *conn) writeLoop(stdin io.WriteCloser) {
	defer c.io.Done()
	defer stdin.Close()
	for {
		c.wmu.Lock()
		for len(c.queue) == 0 && !c.wclosed {
			c.wcond.Wait()
		}
		if len(c.queue) == 0 {
			c.wmu.Unlock()
			return
		}
		line := c.queue[0]
		c.queue[0] = nil
		c.queue = c.queue[1:]
		failed := c.writeErr != nil
		c.wmu.Unlock()
		if failed {
			continue
		}
		if c.tap != nil {
			c.tap(jsonrpc.Sent, line)
		}
		if _, err := stdin.Write(line); err != nil {
			c.wmu.Lock()
			c.writeErr = err
			c.wmu.Unlock()
		}
	}
}

// closeStdin lets the writer flush what is queued and then close the CLI's
// stdin, which makes an idle CLI exit.
func (c *conn) closeStdin() {
	c.wmu.Lock()
	c.wclosed = true
	c.wcond.Broadcast()
	c.wmu.Unlock()
}

func (c *conn) readLoop(stdout io.Reader) {
	defer c.io.Done()
	lines := wire.NewLineReader(stdout, maxFrameBytes)
	for {
		line, err := lines.Next()
		if err != nil {
			var lerr *wire.LineError
			switch {
			case errors.Is(err, io.EOF):
			case errors.As(err, &lerr):
				c.failProtocol(fmt.Errorf("stdout line %d is longer than %d bytes", lerr.Line, maxFrameBytes))
			default:
				c.logger.Debug("claude CLI stdout ended", zap.Error(err))
			}
			break
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if c.tap != nil {
			c.tap(jsonrpc.Received, line)
		}
		f, err := parseFrame(line)
		if err != nil {
			c.failProtocol(err)
			break
		}
		c.route(f)
	}
	c.exitErr = c.cmd.Wait()
	c.cancel()
	c.closeStdin()
	c.mu.Lock()
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
}

// failProtocol records why the stream cannot go on and kills the CLI: after
// a line the adapter does not understand, it cannot know what the CLI
// expects.
func (c *conn) failProtocol(err error) {
	c.protoErr = err
	c.logger.Warn("claude CLI protocol failure; killing it", zap.Error(err))
	proc.KillGroup(c.pid())
}

func (c *conn) route(f *frame) {
	switch f.Type {
	case typeControlResponse:
		r, err := f.controlReply()
		if err != nil {
			c.logger.Warn("undecodable control response", zap.Error(err))
			return
		}
		c.mu.Lock()
		ch, ok := c.pending[r.RequestID]
		delete(c.pending, r.RequestID)
		c.mu.Unlock()
		if ok {
			ch <- r
		}
	case typeControlCancel:
		c.mu.Lock()
		cancel, ok := c.permits[f.RequestID]
		c.mu.Unlock()
		if ok {
			cancel()
		}
	default:
		c.handle(c, f)
	}
}

// request sends a control request and waits for the CLI's answer.
func (c *conn) request(ctx context.Context, body any) (json.RawMessage, error) {
	c.mu.Lock()
	c.nextID++
	id := "corral-" + strconv.Itoa(c.nextID)
	ch := make(chan controlReply, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	forget := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
	if err := c.send(controlRequestOut{Type: typeControlRequest, RequestID: id, Request: body}); err != nil {
		forget()
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, errConnGone
		}
		if r.Subtype == "error" {
			return nil, fmt.Errorf("claude CLI refused the request: %s", r.Error)
		}
		return r.Response, nil
	case <-c.done:
		forget()
		return nil, errConnGone
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}
}

// trackPermit registers the cancel func of a can_use_tool request's
// Permit, so a control_cancel_request can end it.
func (c *conn) trackPermit(requestID string, cancel context.CancelFunc) {
	c.mu.Lock()
	c.permits[requestID] = cancel
	c.mu.Unlock()
}

func (c *conn) untrackPermit(requestID string) {
	c.mu.Lock()
	delete(c.permits, requestID)
	c.mu.Unlock()
}

// goHandle runs fn on its own goroutine, accounted for by close.
func (c *conn) goHandle(fn func()) {
	c.handlers.Add(1)
	go func() {
		defer c.handlers.Done()
		fn()
	}()
}

// kill SIGKILLs the CLI's process group: the CLI and every tool it runs.
func (c *conn) kill() { proc.KillGroup(c.pid()) }

// close ends the process: stdin is closed so an idle CLI exits by itself;
// after grace the group is terminated, then killed. It returns once every
// goroutine of the conn has ended.
func (c *conn) close(grace time.Duration) {
	c.closeStdin()
	t := time.NewTimer(grace)
	select {
	case <-c.done:
		t.Stop()
	case <-t.C:
		proc.StopGroup(c.cmd, c.done, grace)
	}
	// Whatever the CLI left in its group (a tool's background job) goes too.
	proc.KillGroup(c.pid())
	c.cancel()
	c.io.Wait()
	c.handlers.Wait()
}

// exitDescription says how the process ended, for failures.
func (c *conn) exitDescription() string {
	code, sig := proc.ExitStatus(c.exitErr)
	switch {
	case sig != "":
		return "ended on a signal (" + sig + ")"
	case c.exitErr == nil:
		return "exited with status 0"
	default:
		return "exited with status " + strconv.Itoa(code)
	}
}
