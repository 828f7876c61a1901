package supervisor

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/internal/cgroup"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/supervisor/termhost"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// stderrTailLines is how many stderr lines a runner_crashed error carries.
const stderrTailLines = 40

// child is one runner process and the protocol spoken with it.
type child struct {
	log *zap.Logger
	// cmd is the process this supervisor started; nil for a runner it
	// re-attached to (adopt_linux.go), which only pid names.
	cmd  *exec.Cmd
	pid  int    // the runner, leader of its process group
	path string // its program, for messages
	// leaf is the runner's cgroup, swept when it ends (cgroups.go); nil
	// without cgroups.
	leaf *cgroup.Leaf
	enc  *wire.Encoder
	// stdin and stdout are the link: the runner's pipes, or for an
	// adopted runner both the one connection on its runner.sock.
	stdin  io.Closer
	stdout io.Closer
	tail   *proc.Tail
	hooks  childHooks
	// buffers, when set, is where the output of terminal frames goes (the
	// handshake always asks for frames).
	buffers *termBuffers
	// masters is where the runner hands over the terminals it exports;
	// nil where that is not possible. exportMu keeps one export in
	// flight, so the next master on it is the one asked for.
	masters  *net.UnixConn
	exportMu sync.Mutex

	ready  chan *wire.Ready // the handshake's answer
	exited chan struct{}    // closed once the process was waited for
	done   chan struct{}    // closed once every pending call was rejected

	nextReq atomic.Uint64

	// madeLive: the runner opened a session, so its exit is a session
	// runner's (Observer.RunnerExit); a spare or a failed start is not.
	madeLive atomic.Bool
	// state is the runner's last report of what its session is doing
	// (nil before the first), kept by the reader and read by the reaper.
	state atomic.Pointer[wire.StateReport]
	// idleSince is when the session last stopped being busy (Unix
	// nanoseconds by the manager's clock): the idle clock starts there,
	// not at the call that queued the turn.
	idleSince atomic.Int64
	now       func() time.Time

	mu       sync.Mutex
	pending  map[string]chan wire.Message
	terms    map[termKey]func(wire.Message)
	session  string // the session the runner is on now (changes on rotate)
	engine   string // its spec's engine, for the observer
	stopping bool   // an exit now is a shutdown, not a crash
	detached bool   // let go of, alive, for the next supervisor (detach)
	broken   error  // why the reader gave up on the runner's output, which killed it
	death    *wire.Error
}

type termKey struct{ term, client string }

// childHooks connect a child to its manager. They run on the child's reader
// goroutine (hub, rotate) or its waiter goroutine (exit).
type childHooks struct {
	hub    func(session string) *hub
	rotate func(c *child, from, to string)
	exit   func(c *child)
	// storage, when set, is told each time the runner reports its
	// session's event log failed or writable again.
	storage func(c *child, failed bool)
	// observer sees every mirrored event (never nil).
	observer Observer
}

type spawnSpec struct {
	runner  string
	dir     string // the session folder, also the working directory; empty for a spare
	workDir string // a spare's working directory until it takes a session
	session string
	env     []string
	maxLine int
	buffers *termBuffers // where terminal frames' output goes; nil: fresh allocations
	log     *zap.Logger
	// runnerLog is where the runner's own log lines go, each with the
	// session it is on when it writes them.
	runnerLog *zap.Logger
	// grace, when positive, lets the runner's session outlive this
	// supervisor by that long (--reattach-grace): no parent-death signal.
	grace time.Duration
	// leaf, when set, is the cgroup the runner starts in (cgroups.go).
	leaf  *cgroup.Leaf
	now   func() time.Time
	hooks childHooks
}

// startChild starts a runner process and its reader and waiter. The
// handshake is the caller's next step.
func startChild(sp spawnSpec) (*child, error) {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("runner stdin: %w", err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil, fmt.Errorf("runner stdout: %w", err)
	}
	growPipe(stdoutR)
	masters, theirs, err := termhost.NewMasterChannel()
	if err != nil {
		sp.log.Debug("terminals will not be handed over", zap.Error(err))
	}
	c := &child{
		log:     sp.log,
		stdin:   stdinW,
		enc:     wire.NewEncoder(stdinW),
		tail:    proc.NewTail(stderrTailLines),
		hooks:   sp.hooks,
		buffers: sp.buffers,
		masters: masters,
		ready:   make(chan *wire.Ready, 1),
		exited:  make(chan struct{}),
		done:    make(chan struct{}),
		pending: map[string]chan wire.Message{},
		terms:   map[termKey]func(wire.Message){},
		session: sp.session,
		leaf:    sp.leaf,
		now:     sp.now,
	}
	cmd := exec.Command(sp.runner, "--stdio", "--log-format", "json", "--log-level", runnerLevel(sp.runnerLog))
	if sp.grace > 0 {
		cmd.Args = append(cmd.Args, "--reattach-grace", sp.grace.String())
	}
	cmd.Dir = sp.workDir
	if sp.dir != "" {
		cmd.Args = append(cmd.Args, "--session-dir", sp.dir)
		cmd.Dir = sp.dir
	}
	cmd.Env = append(proc.BaseEnv(), sp.env...)
	if theirs != nil {
		// The first extra file is descriptor 3 in the runner.
		cmd.ExtraFiles = []*os.File{theirs}
		cmd.Args = append(cmd.Args, "--term-fds", "3")
	}
	cmd.Stdin = stdinR
	cmd.Stdout = stdoutW
	sink := &stderrSink{tail: c.tail, session: c.currentSession}
	cmd.Stderr = sink
	// A grandchild holding stderr open must not keep Wait from returning.
	cmd.WaitDelay = time.Second
	if sp.grace > 0 {
		proc.ConfigureDetached(cmd)
	} else {
		proc.Configure(cmd)
	}
	var leafFD io.Closer
	if sp.leaf != nil {
		// The runner kills the rest of its cgroup when it stops on its
		// own, with no supervisor left to sweep it.
		cmd.Args = append(cmd.Args, "--own-cgroup")
		if leafFD, err = placeIn(cmd, sp.leaf); err != nil {
			err = fmt.Errorf("runner cgroup: %w", err)
		}
	}
	if err == nil {
		err = cmd.Start()
	}
	if leafFD != nil {
		leafFD.Close()
	}
	// The child has its own copies now.
	stdinR.Close()
	stdoutW.Close()
	if theirs != nil {
		theirs.Close()
	}
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		if masters != nil {
			masters.Close()
		}
		sweepLeaf(sp.log, sp.leaf)
		return nil, fmt.Errorf("start runner %s: %w", sp.runner, err)
	}
	c.cmd, c.pid, c.path, c.stdout = cmd, cmd.Process.Pid, sp.runner, stdoutR
	c.log = sp.log.With(zap.Int("pid", cmd.Process.Pid))
	sink.start(sp.runnerLog.With(zap.Int("pid", cmd.Process.Pid)))

	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer stdoutR.Close()
		c.read(stdoutR, sp.maxLine)
	}()
	go c.wait(readerDone)
	return c, nil
}

// wait reaps the process, gives the reader a moment to drain what the runner
// wrote before it died, and then rejects every pending call.
func (c *child) wait(readerDone <-chan struct{}) {
	err := c.cmd.Wait()
	close(c.exited)
	code, sig := proc.ExitStatus(err)
	c.finish(readerDone, code, sig)
}

// finish tears the link down once the runner's process is gone, and rejects
// every pending call with how it ended.
func (c *child) finish(readerDone <-chan struct{}, code int, sig string) {
	// Nothing the runner left in its group, or in its cgroup, may
	// outlive it.
	proc.KillGroup(c.pid)
	sweepLeaf(c.log, c.leaf)
	select {
	case <-readerDone:
	case <-time.After(time.Second):
		// Something still holds the pipe open; stop reading.
		c.stdout.Close()
		<-readerDone
	}
	c.stdin.Close()
	if c.masters != nil {
		c.masters.Close()
	}

	c.mu.Lock()
	c.death = c.deathError(code, sig)
	pending := len(c.pending)
	c.pending = nil
	terms := c.terms
	c.terms = nil
	stopping := c.stopping
	c.mu.Unlock()
	// Attached terminal clients get no more output: tell each one why.
	for k, sink := range terms {
		sink(&wire.TermError{TermID: k.term, ClientID: k.client, Error: c.death})
	}
	if stopping {
		c.log.Debug("runner exited", zap.Int("exitCode", code), zap.String("signal", sig))
	} else {
		c.log.Warn("runner exited", zap.Int("exitCode", code), zap.String("signal", sig), zap.Int("pendingCalls", pending))
	}
	c.hooks.exit(c)
	close(c.done)
}

func (c *child) deathError(code int, sig string) *wire.Error {
	how := "exited with code " + strconv.Itoa(code)
	if sig != "" {
		how = "was killed by signal " + sig
	}
	lines := c.tail.Lines()
	e := &wire.Error{Detail: &wire.Crash{ExitCode: code, Signal: sig, Stderr: lines}}
	switch {
	case c.broken != nil:
		e.Code = wire.CodeRunnerCrashed
		e.Message = fmt.Sprintf("runner for session %s was killed: its output could not be read: %v", c.session, c.broken)
	case c.stopping:
		e.Code = wire.CodeUnavailable
		e.Message = fmt.Sprintf("runner for session %s was shut down", c.session)
	default:
		if c.cmd == nil && code == -1 && sig == "" {
			// Re-attached: its exit status went to the supervisor that
			// started it, or to init.
			how = "ended"
		}
		e.Code = wire.CodeRunnerCrashed
		e.Message = fmt.Sprintf("runner for session %s %s", c.session, how)
		if len(lines) > 0 {
			e.Message += ": " + lines[len(lines)-1]
		}
	}
	return e
}

// err returns why the child can take no more calls, or nil while it can.
func (c *child) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.death != nil {
		return c.death
	}
	return nil
}

func (c *child) alive() bool { return c.err() == nil }

// identity returns the session the runner is on and its engine.
func (c *child) identity() (session, engine string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session, c.engine
}

func (c *child) setEngine(engine string) {
	c.mu.Lock()
	c.engine = engine
	c.mu.Unlock()
}

// takeSession binds a spare to the session it is about to open.
func (c *child) takeSession(id string) {
	c.mu.Lock()
	c.session = id
	c.mu.Unlock()
}

func (c *child) currentSession() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// stop asks the runner to shut down and waits up to grace for it to exit;
// then it terminates the runner's process group (SIGTERM, then SIGKILL after
// kill). It returns once every pending call was rejected.
func (c *child) stop(grace, kill time.Duration) {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	deadline := time.Now().Add(grace)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	if _, err := call(ctx, c, &wire.Shutdown{}); err != nil && c.alive() {
		c.log.Debug("runner did not acknowledge shutdown", zap.Error(err))
	}
	select {
	case <-c.exited:
	case <-ctx.Done():
	}
	cancel()
	select {
	case <-c.exited:
	default:
		if proc.StopGroupOf(c.pid, c.exited, kill) {
			c.log.Warn("runner ignored SIGTERM; killed")
		}
	}
	<-c.done
}

// detach lets go of a live runner, which goes on for the next supervisor
// (Config.RunnerGrace): the link is closed, which the runner reads as its
// supervisor gone, and nothing here waits for the process. Calls still
// pending on it are not answered.
func (c *child) detach() {
	c.mu.Lock()
	c.stopping, c.detached = true, true
	c.mu.Unlock()
	c.stdin.Close()
	c.stdout.Close()
	if c.masters != nil {
		c.masters.Close()
	}
}

// abort ends a runner whose start failed: SIGTERM first, so that one
// caught warming up as a spare removes its scratch folder, then SIGKILL
// after grace.
func (c *child) abort(grace time.Duration) {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	proc.StopGroupOf(c.pid, c.exited, grace)
	<-c.done
}

func (c *child) holdsTerminal() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.terms) > 0
}
