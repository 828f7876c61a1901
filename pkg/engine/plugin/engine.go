package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/rpc"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// interruptWait bounds the plugin's answer to Interrupt, on top of the
// caller's context, so a stuck plugin cannot hold a stop.
const interruptWait = 5 * time.Second

// Engine is an engine.Engine whose conversation runs in a plugin binary.
//
// A plugin that dies fails the call in progress with an engineError
// carrying its stderr tail; the next Turn (or Fork, Judge, Compact)
// launches a fresh process and resumes the conversation in it.
type Engine struct {
	path string

	// launching serialises launches: the first at Start and relaunches
	// after a crash.
	launching sync.Mutex

	mu      sync.Mutex
	opts    engine.StartOptions
	log     *zap.Logger
	conv    string
	caps    Capabilities
	started bool
	closed  bool
	cur     *process
}

// New returns an Engine that runs the plugin binary at path.
func New(path string) *Engine { return &Engine{path: path, log: zap.NewNop()} }

var _ engine.Engine = (*Engine)(nil)

// Start launches the plugin and starts (or resumes) its conversation.
// opts travel to the plugin, credentials included, over the plugin
// connection; Host and Logger stay in the runner.
func (e *Engine) Start(ctx context.Context, opts engine.StartOptions) (string, error) {
	if opts.Host == nil {
		return "", &engine.Failure{Code: event.FailEngineError, Message: "engine plugin: StartOptions.Host is nil"}
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	e.launching.Lock()
	defer e.launching.Unlock()
	e.mu.Lock()
	if e.started || e.closed {
		e.mu.Unlock()
		return "", &engine.Failure{Code: event.FailEngineError, Message: "engine plugin: Start may be called once"}
	}
	e.opts, e.log = opts, opts.Logger
	e.mu.Unlock()

	p, conv, caps, err := e.launch(ctx, opts)
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		p.shutdown()
		return "", &engine.Failure{Code: event.FailEngineError, Message: "engine plugin: closed while starting"}
	}
	e.cur, e.conv, e.caps, e.started = p, conv, caps, true
	return conv, nil
}

// launch starts a plugin process and its conversation.
func (e *Engine) launch(ctx context.Context, opts engine.StartOptions) (*process, string, Capabilities, error) {
	p, err := launch(ctx, e.path, opts, opts.Logger.With(zap.String("plugin", e.path)))
	if err != nil {
		return nil, "", Capabilities{}, err
	}
	conv, caps, err := p.remote.start(ctx, p.live, opts, opts.Logger)
	if err != nil {
		if lostConnection(err) {
			return nil, "", Capabilities{}, e.failure(p, "while starting the conversation", err)
		}
		p.shutdown()
		return nil, "", Capabilities{}, asFailure("engine plugin "+e.name()+" did not start the conversation", err)
	}
	return p, conv, caps, nil
}

func (e *Engine) name() string { return filepath.Base(e.path) }

// Capabilities reports the optional interfaces the plugin's engine
// implements, as its last Start said.
func (e *Engine) Capabilities() Capabilities {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.caps
}

// ready returns the live plugin process, relaunching the plugin to resume
// the conversation when the last one died.
func (e *Engine) ready(ctx context.Context) (*process, error) {
	e.launching.Lock()
	defer e.launching.Unlock()
	e.mu.Lock()
	closed, started, p := e.closed, e.started, e.cur
	opts := e.opts
	opts.Resume = e.conv
	e.mu.Unlock()
	switch {
	case closed:
		return nil, &engine.Failure{Code: event.FailEngineError, Message: "engine plugin: the engine is closed"}
	case !started:
		return nil, &engine.Failure{Code: event.FailEngineError, Message: "engine plugin: Start was not called"}
	case p != nil && !p.exited():
		return p, nil
	case p != nil:
		how := p.reap()
		e.log.Warn("engine plugin exited between calls", zap.String("how", how), zap.Strings("stderr", p.tailLines()))
	}

	e.log.Info("relaunching the engine plugin to resume the conversation", zap.String("conversation", opts.Resume))
	np, conv, caps, err := e.launch(ctx, opts)
	if err != nil {
		e.mu.Lock()
		if e.cur == p {
			e.cur = nil
		}
		e.mu.Unlock()
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		np.shutdown()
		return nil, &engine.Failure{Code: event.FailEngineError, Message: "engine plugin: the engine is closed"}
	}
	if conv != opts.Resume {
		e.log.Warn("the relaunched plugin resumed under another conversation id", zap.String("was", opts.Resume), zap.String("now", conv))
	}
	if caps != e.caps {
		e.log.Warn("the relaunched plugin reports other capabilities", zap.Any("was", e.caps), zap.Any("now", caps))
	}
	e.cur, e.conv, e.caps = np, conv, caps
	return np, nil
}

func (e *Engine) current() *process {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur
}

func (e *Engine) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// Turn runs one turn in the plugin.
func (e *Engine) Turn(ctx context.Context, in engine.TurnInput) (engine.TurnResult, error) {
	p, err := e.ready(ctx)
	if err != nil {
		return engine.TurnResult{}, err
	}
	res, err := p.remote.turn(ctx, in)
	switch {
	case err == nil:
		return res, nil
	case lostConnection(err) && e.isClosed():
		// Close ended the turn.
		return engine.TurnResult{Stopped: true}, nil
	case lostConnection(err):
		return res, e.failure(p, "during the turn", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return res, err
	}
	return res, asFailure("engine plugin "+e.name()+" turn", err)
}

// Interrupt asks the plugin to stop the running turn. It is a no-op when
// no plugin runs, and bounded by interruptWait when the plugin is stuck.
func (e *Engine) Interrupt(ctx context.Context) error {
	p := e.current()
	if p == nil || p.exited() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, interruptWait)
	defer cancel()
	if err := p.remote.interrupt(ctx); err != nil {
		return fmt.Errorf("interrupt engine plugin %s: %w", e.name(), err)
	}
	return nil
}

// Close closes the plugin's engine and ends the plugin process. It is safe
// to call more than once, and bounded however the plugin behaves.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	p := e.cur
	e.cur = nil
	e.mu.Unlock()
	if p == nil {
		return nil
	}
	var err error
	if !p.exited() {
		if err = p.remote.close(closeWait); err != nil {
			err = fmt.Errorf("close engine plugin %s: %w", e.name(), err)
		}
	}
	p.shutdown()
	return err
}

// steer delivers a steer to a plugin that advertised native steering. A
// plugin that is gone has no turn running.
func (e *Engine) steer(ctx context.Context, text string) error {
	p := e.current()
	if p == nil || p.exited() {
		return engine.ErrNoTurn
	}
	if !e.Capabilities().Steer {
		return e.lacks("steering")
	}
	err := p.remote.steer(ctx, text)
	if lostConnection(err) {
		return engine.ErrNoTurn
	}
	return err
}

func (e *Engine) fork(ctx context.Context) (string, error) {
	p, err := e.ready(ctx)
	if err != nil {
		return "", err
	}
	if !e.Capabilities().Fork {
		return "", e.lacks("forking")
	}
	conv, err := p.remote.fork(ctx)
	if lostConnection(err) {
		return "", e.failure(p, "while forking", err)
	}
	return conv, err
}

func (e *Engine) judge(ctx context.Context, prompt string) (string, event.UsageData, error) {
	p, err := e.ready(ctx)
	if err != nil {
		return "", event.UsageData{}, err
	}
	if !e.Capabilities().Judge {
		return "", event.UsageData{}, e.lacks("judging")
	}
	answer, usage, err := p.remote.judge(ctx, prompt)
	if lostConnection(err) {
		return "", usage, e.failure(p, "while judging", err)
	}
	return answer, usage, err
}

func (e *Engine) compact(ctx context.Context) error {
	p, err := e.ready(ctx)
	if err != nil {
		return err
	}
	if !e.Capabilities().Compact {
		return e.lacks("compaction")
	}
	err = p.remote.compact(ctx)
	if lostConnection(err) {
		return e.failure(p, "while compacting", err)
	}
	return err
}

// lacks is the error of an optional call the running plugin no longer
// implements (a relaunch found a different binary).
func (e *Engine) lacks(what string) error {
	return &engine.Failure{Code: event.FailEngineError, Message: fmt.Sprintf("engine plugin %s no longer implements %s", e.name(), what)}
}

// failure reaps a plugin whose connection was lost (killing it if it is
// still there) and describes how it ended, with its stderr tail. The next
// call relaunches it.
func (e *Engine) failure(p *process, when string, err error) error {
	how := p.reap()
	if errors.Is(err, errCancelUnanswered) {
		how = "stopped answering and was killed"
	}
	e.mu.Lock()
	if e.cur == p {
		e.cur = nil
	}
	e.mu.Unlock()
	return &engine.Failure{
		Code:    event.FailEngineError,
		Message: fmt.Sprintf("engine plugin %s %s %s", e.name(), how, when),
		Stderr:  p.tailLines(),
		Err:     err,
	}
}

// lostConnection reports whether err means the plugin is gone or stuck:
// the connection ended, or a cancelled call went unanswered.
func lostConnection(err error) bool {
	return errors.Is(err, errPluginGone) || errors.Is(err, errCancelUnanswered)
}

// asFailure keeps an *engine.Failure and wraps anything else in one.
func asFailure(msg string, err error) error {
	var f *engine.Failure
	if errors.As(err, &f) {
		return err
	}
	var se rpc.ServerError
	if errors.As(err, &se) {
		msg += ": protocol error"
	}
	return &engine.Failure{Code: event.FailEngineError, Message: msg, Err: err}
}
