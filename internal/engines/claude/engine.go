package claude

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Timeouts of the adapter's own waits.
const (
	// initTimeout bounds a new CLI process's answer to initialize; a cold
	// start of the 370 MB binary takes about a second.
	initTimeout = 60 * time.Second
	// defaultStopTimeout is how long a turn may take to end after an interrupt
	// before the CLI's process group is killed (the conversation then
	// resumes in a new process on the next turn).
	defaultStopTimeout = 15 * time.Second
	// closeGrace is how long an idle CLI gets to exit after its stdin
	// closes, and then after SIGTERM, before it is killed.
	closeGrace = 3 * time.Second
)

// Engine drives one Claude Code conversation through the CLI's stream-json
// control protocol. Build it with New.
type Engine struct {
	// tap, when set before Start, sees every frame written (jsonrpc.Sent)
	// and read (jsonrpc.Received): a golden transcript is recorded
	// through it (jsonrpc.Traffic).
	tap func(dir jsonrpc.Direction, line []byte)
	// stopTimeout is how long a turn may take to end after an interrupt.
	stopTimeout time.Duration

	// ops serialises the operations that use the conversation: Turn, Fork,
	// Judge and Compact. Interrupt and Close do not take it.
	ops sync.Mutex

	// Set by Start.
	opts    engine.StartOptions
	host    engine.Host
	logger  *zap.Logger
	bin     string
	version string
	env     []string
	key     string // the API key, for keyPipe

	mu      sync.Mutex
	started bool
	closed  bool
	conn    *conn
	convID  string
	// persisted says the conversation has taken a message, so a new
	// process of this engine --resumes it. The CLI may not have written
	// the message to its file yet (stored.go): an engine started on the
	// conversation later decides from the file, not from this.
	persisted bool
	// convs records the conversations this engine begins (stored.go).
	convs *conversations
	// forkFrom is the conversation a new, not yet stored fork continues.
	forkFrom string
	turn     *turnState
	// starting is set while a turn starts its process; a stop then is
	// kept in stopPending and ends the turn before it begins.
	starting    bool
	stopPending bool
	cost        costLedger
	model       string
	windows     map[string]int64 // context windows the CLI reported
	// warm is the process Prewarm started, until Start adopts or drops it.
	warm *warmProcess
}

// New returns a Claude Code engine; the runner registers it as "claude".
func New() engine.Engine { return &Engine{stopTimeout: defaultStopTimeout} }

var (
	_ engine.Forker    = (*Engine)(nil)
	_ engine.Inheritor = (*Engine)(nil)
	_ engine.Judge     = (*Engine)(nil)
	_ engine.Compactor = (*Engine)(nil)
)

// Errors of operations the engine's state does not allow.
var (
	errClosed     = errors.New("claude engine is closed")
	errNotStarted = errors.New("claude engine is not started")
)

// Start locates and checks the CLI, starts its process for the session and
// returns the conversation id: opts.Resume, or a new id the CLI is told to
// use.
func (e *Engine) Start(ctx context.Context, opts engine.StartOptions) (string, error) {
	return e.start(ctx, opts, "")
}

// StartFork starts the session on a branch of the conversation from, which
// the runner copied into the session's config folder with the rest of the
// parent's engine state: the CLI runs with --resume FROM --fork-session
// --session-id NEW, and the parent's conversation stays as it was.
func (e *Engine) StartFork(ctx context.Context, opts engine.StartOptions, from string) (string, error) {
	if from == "" {
		return "", errors.New("claude engine: StartFork needs the conversation to fork")
	}
	opts.Resume = ""
	return e.start(ctx, opts, from)
}

func (e *Engine) start(ctx context.Context, opts engine.StartOptions, forkFrom string) (string, error) {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return "", fmt.Errorf("claude engine already started: %w", wire.ErrConflict)
	}
	e.started = true
	e.mu.Unlock()

	if opts.Host == nil {
		return "", errors.New("claude engine: StartOptions.Host is nil")
	}
	if convID, ok := e.adoptWarm(opts, forkFrom); ok {
		return convID, nil
	}
	logger := opts.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	l, err := prepareLaunch(ctx, opts)
	if err != nil {
		return "", err
	}
	logger = logger.With(zap.String("engine", "claude"))
	convs := conversationsFor(opts.Dir)
	convID, persisted := opts.Resume, false
	if convID != "" {
		if persisted, forkFrom, err = takeUp(convs, configDirFor(opts.Dir), convID, logger); err != nil {
			return "", &engine.Failure{Code: event.FailEngineError, Message: "take up the claude conversation " + convID, Err: err}
		}
	} else {
		if convID, err = newConversationID(); err != nil {
			return "", err
		}
		if err := convs.record(convID, begun{ForkFrom: forkFrom}); err != nil {
			return "", &engine.Failure{Code: event.FailEngineError, Message: "record the new claude conversation", Err: err}
		}
	}
	e.mu.Lock()
	e.opts, e.host, e.logger = opts, opts.Host, logger
	e.convs = convs
	e.bin, e.version, e.env, e.key = l.bin, l.version, l.env, l.key
	e.convID, e.persisted, e.forkFrom = convID, persisted, forkFrom
	// A new conversation has cost nothing yet; a resumed or forked one has
	// a total the first result will report.
	e.cost = costLedger{known: !persisted && forkFrom == ""}
	e.windows = map[string]int64{}
	e.mu.Unlock()

	if _, err := e.connect(ctx); err != nil {
		return "", err
	}
	e.logger.Info("claude CLI started", zap.String("bin", l.bin), zap.String("version", l.version), zap.String("conversation", convID))
	return convID, nil
}

// unusableLocked says why the engine cannot run an operation, if it cannot.
func (e *Engine) unusableLocked() error {
	switch {
	case e.closed:
		return errClosed
	case e.bin == "":
		return errNotStarted
	}
	return nil
}

// connect returns the running CLI process, starting one (and initializing
// the protocol) when there is none.
func (e *Engine) connect(ctx context.Context) (*conn, error) {
	e.mu.Lock()
	if err := e.unusableLocked(); err != nil {
		e.mu.Unlock()
		return nil, err
	}
	if e.conn != nil && e.conn.alive() {
		c := e.conn
		e.mu.Unlock()
		return c, nil
	}
	args := processArgs(e.opts, e.convID, e.persisted, e.forkFrom)
	spec := launchSpec{bin: e.bin, args: args, dir: e.opts.Cwd, env: e.env, key: e.key}
	e.mu.Unlock()
	return e.launch(ctx, spec)
}

// launch starts a CLI process and initializes it; on success it becomes the
// engine's process.
func (e *Engine) launch(ctx context.Context, spec launchSpec) (*conn, error) {
	c, err := e.startInitialized(ctx, spec)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		c.close(closeGrace)
		return nil, errClosed
	}
	old := e.conn
	e.conn = c
	e.mu.Unlock()
	if old != nil {
		old.close(closeGrace)
	}
	e.logger.Debug("claude CLI initialized", zap.Int("pid", c.pid()), zap.Strings("args", spec.args))
	return c, nil
}

// startInitialized starts a CLI process and initializes it.
func (e *Engine) startInitialized(ctx context.Context, spec launchSpec) (*conn, error) {
	c, err := startConn(spec, e.logger, e.handleFrame, e.tap)
	if err != nil {
		return nil, &engine.Failure{Code: event.FailEngineError, Message: "start the claude CLI", Err: err}
	}
	ictx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	if _, err := c.request(ictx, newInitialize()); err != nil {
		exited := !c.alive()
		c.close(closeGrace)
		f := &engine.Failure{Code: event.FailEngineError, Message: "the claude CLI did not initialize", Stderr: c.stderr.Lines(), Err: err}
		if exited {
			f.Message, f.Err = "the claude CLI "+c.exitDescription()+" before it initialized", nil
		}
		return nil, f
	}
	return c, nil
}

// Turn sends one user message and returns when the CLI reports the turn's
// result.
func (e *Engine) Turn(ctx context.Context, in engine.TurnInput) (engine.TurnResult, error) {
	if !e.ops.TryLock() {
		return engine.TurnResult{}, fmt.Errorf("claude engine: a turn is already running: %w", wire.ErrConflict)
	}
	defer e.ops.Unlock()
	res, _, err := e.runTurn(ctx, in.Text, false)
	return res, err
}

// runTurn runs one turn; quiet turns (compaction) emit no text or per-call
// usage events.
func (e *Engine) runTurn(ctx context.Context, text string, quiet bool) (engine.TurnResult, *turnState, error) {
	e.mu.Lock()
	e.starting, e.stopPending = true, false
	e.mu.Unlock()
	c, err := e.connect(ctx)
	e.mu.Lock()
	e.starting = false
	stopped := e.stopPending
	if err != nil || stopped {
		e.mu.Unlock()
		return engine.TurnResult{Stopped: stopped && err == nil}, nil, err
	}
	t := newTurn(c, quiet)
	e.turn = t
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		if e.turn == t {
			e.turn = nil
		}
		e.mu.Unlock()
	}()

	if err := c.send(newUserMessage(text)); err != nil {
		c.kill()
		<-c.done
		return engine.TurnResult{}, t, e.connFailure(c, t)
	}
	ctxDone := ctx.Done()
	for {
		select {
		case <-t.done:
			res, err := e.finishTurn(t)
			if err == nil && ctx.Err() != nil {
				err = ctx.Err()
			}
			return res, t, err
		case <-c.done:
			select {
			case <-t.done:
				continue
			default:
			}
			return engine.TurnResult{}, t, e.connFailure(c, t)
		case <-ctxDone:
			ctxDone = nil
			e.stop(t, true)
		}
	}
}

// Interrupt stops the running turn with the CLI's interrupt request and
// returns once the CLI has acknowledged it. The turn then ends with
// Stopped set; the process stays for the next turn.
func (e *Engine) Interrupt(ctx context.Context) error {
	e.mu.Lock()
	t := e.turn
	if t == nil && e.starting {
		e.stopPending = true
	}
	e.mu.Unlock()
	if t == nil {
		return nil
	}
	select {
	case err := <-e.stop(t, true):
		// A process that is gone ends its turn by itself, as a failure.
		if err != nil && !errors.Is(err, errAlreadyStopping) && !errors.Is(err, errConnGone) {
			return fmt.Errorf("interrupt claude turn: %w", err)
		}
		return nil
	case <-t.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errAlreadyStopping reports a stop of a turn that is already stopping.
var errAlreadyStopping = errors.New("the turn is already stopping")

// stop sends the CLI an interrupt for t and arms the watchdog that kills the
// CLI if the turn does not end within e.stopTimeout. byUser marks the turn as
// stopped on request (an interrupt for a rejected key is not). The returned
// channel gets the outcome of the interrupt request.
func (e *Engine) stop(t *turnState, byUser bool) <-chan error {
	ack := make(chan error, 1)
	t.mu.Lock()
	if byUser {
		t.stopRequested = true
	}
	already := t.interruptSent
	t.interruptSent = true
	t.mu.Unlock()
	if already {
		ack <- errAlreadyStopping
		return ack
	}
	c := t.conn
	c.goHandle(func() {
		ctx, cancel := context.WithTimeout(c.ctx, e.stopTimeout)
		defer cancel()
		_, err := c.request(ctx, simpleRequest{Subtype: "interrupt"})
		ack <- err
	})
	c.goHandle(func() {
		timer := time.NewTimer(e.stopTimeout)
		defer timer.Stop()
		select {
		case <-t.done:
		case <-c.done:
		case <-timer.C:
			t.mu.Lock()
			t.stopTimedOut = true
			t.mu.Unlock()
			e.logger.Warn("claude CLI did not end the turn after an interrupt; killing it", zap.Duration("timeout", e.stopTimeout))
			c.kill()
		}
	})
	return ack
}

// connFailure describes a process that ended during a turn. The process is
// dropped, so the next turn resumes the conversation in a new one.
func (e *Engine) connFailure(c *conn, t *turnState) error {
	c.close(closeGrace)
	e.mu.Lock()
	if e.conn == c {
		e.conn = nil
	}
	closed := e.closed
	e.mu.Unlock()
	t.mu.Lock()
	timedOut := t.stopTimedOut
	t.mu.Unlock()
	f := &engine.Failure{Code: event.FailEngineError, Stderr: c.stderr.Lines()}
	switch {
	case closed:
		f.Message, f.Err = "the claude engine was closed during the turn", errClosed
	case timedOut:
		f.Message = fmt.Sprintf("the claude CLI did not end the turn within %s of the interrupt and was killed; the conversation resumes on the next turn", e.stopTimeout)
	case c.protoErr != nil:
		f.Message, f.Err = "the claude CLI wrote a line that is not a protocol frame and was killed; the conversation resumes on the next turn", c.protoErr
	default:
		f.Message = "the claude CLI " + c.exitDescription() + " during the turn; the conversation resumes on the next turn"
	}
	return f
}

// Close ends the CLI process and every process it started. It is safe to
// call more than once.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	c := e.conn
	e.conn = nil
	e.mu.Unlock()
	if c != nil {
		c.close(closeGrace)
	}
	if w := e.takeWarm(); w != nil {
		w.conn.close(closeGrace)
	}
	return nil
}
