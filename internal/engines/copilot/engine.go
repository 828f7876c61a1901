// Package copilot drives the GitHub Copilot CLI as a Corral engine. Each
// session runs its own CLI in server mode (--headless --stdio) and speaks
// the CLI's JSON-RPC 2.0 protocol to it: one CLI session per Corral
// session, one session.send per turn, steers sent in immediate mode, stops
// through session.abort, and every tool permission the CLI asks for passed
// to the runner's gate. docs/engines-copilot.md describes the mapping.
package copilot

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// Engine is the Copilot CLI engine for one session.
type Engine struct {
	// opMu serialises Start and Turn, which may start a CLI.
	opMu sync.Mutex

	mu        sync.Mutex
	set       settings
	host      engine.Host
	log       *zap.Logger
	cli       *cli // nil before Start and after the CLI went away
	sessionID string
	started   bool
	closed    bool
	turn      *turn
	perms     map[string]*pendingPermission // by request id
	// lastUser is the CLI's id of the user message the running agent loop
	// last started on; empty when the CLI is idle.
	lastUser string
	// unowned is set while the CLI runs an agent loop no turn started (a
	// steer that arrived just after its turn ended); it is being stopped.
	unowned     bool
	unownedDone chan struct{}
	// side holds the judges' forks by CLI session id: their events go
	// there, not to the turn.
	side  map[string]*sideQuestion
	tasks sync.WaitGroup
	clis  []*cli // every CLI started, for Close to wait on

	// trace, when set before Start, sees every JSON-RPC message.
	trace func(dir jsonrpc.Direction, body []byte)
}

var (
	_ engine.Engine  = (*Engine)(nil)
	_ engine.Steerer = (*Engine)(nil)
)

// New returns an Engine; the runner registers it by name.
func New() engine.Engine { return &Engine{log: zap.NewNop()} }

var errClosed = errors.New("copilot: engine closed")

// Start launches the CLI and creates a CLI session, or resumes the one named
// by opts.Resume. The returned id is the CLI's session id.
func (e *Engine) Start(ctx context.Context, opts engine.StartOptions) (string, error) {
	e.opMu.Lock()
	defer e.opMu.Unlock()
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return "", errClosed
	case e.started:
		e.mu.Unlock()
		return "", errors.New("copilot: Start called twice")
	}
	e.mu.Unlock()

	s, err := loadSettings(opts)
	if err != nil {
		return "", err
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	id, resume := opts.Resume, opts.Resume != ""
	if !resume {
		id = newSessionID()
	}
	e.mu.Lock()
	e.set = s
	e.host = opts.Host
	e.log = log.With(zap.String("engine", "copilot"), zap.String("conversation", id))
	e.sessionID = id
	e.perms = map[string]*pendingPermission{}
	e.mu.Unlock()

	if _, err := e.launch(ctx, resume); err != nil {
		return "", err
	}
	e.mu.Lock()
	e.started = true
	e.mu.Unlock()
	return id, nil
}

// launch starts a CLI and opens the session on it: session.create, or
// session.resume for a conversation the CLI saved in the session's home.
func (e *Engine) launch(ctx context.Context, resume bool) (*cli, error) {
	c, err := startCLI(ctx, e.set, handlers{notify: e.onNotify, trace: e.trace, gone: e.onGone})
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		c.shutdown()
		return nil, errClosed
	}
	e.cli = c
	e.clis = append(e.clis, c)
	id := e.sessionID
	e.mu.Unlock()
	e.log.Info("copilot CLI started",
		zap.String("path", e.set.bin), zap.String("found", e.set.binSource),
		zap.String("version", c.version), zap.Int("pid", c.pid()))

	params := sessionParams{
		SessionID:         id,
		Model:             e.set.model,
		Provider:          e.set.provider,
		WorkingDirectory:  e.set.cwd,
		RequestPermission: true,
		Streaming:         true,
		EnvValueMode:      "direct",
	}
	applyPreset(&params, e.set.agent)
	method, verb := methodSessionCreate, "create session"
	if resume {
		method, verb = methodSessionResume, "resume conversation"
	}
	var res sessionResult
	if err := c.conn.Call(ctx, method, params, &res); err != nil {
		died := errors.Is(err, jsonrpc.ErrClosed)
		if died {
			<-c.gone
		}
		f := c.failure(fmt.Sprintf("copilot: %s %s", verb, id), err, died)
		e.mu.Lock()
		if e.cli == c {
			e.cli = nil
		}
		e.mu.Unlock()
		c.shutdown()
		return nil, f
	}
	return c, nil
}

// ready returns a running CLI for the next turn: after a crash it starts a
// new one and resumes the conversation, which the CLI saved as it went.
func (e *Engine) ready(ctx context.Context) (*cli, error) {
	e.mu.Lock()
	closed, started, c := e.closed, e.started, e.cli
	e.mu.Unlock()
	switch {
	case closed:
		return nil, errClosed
	case !started:
		return nil, errors.New("copilot: Turn before Start")
	}
	if c == nil || !c.alive() {
		if c != nil {
			c.shutdown()
		}
		e.log.Warn("the copilot CLI is gone; starting a new one and resuming the conversation")
		var err error
		if c, err = e.launch(ctx, true); err != nil {
			return nil, err
		}
	}
	// A stray agent loop is being aborted; the turn starts after it ends.
	for {
		e.mu.Lock()
		unowned, done := e.unowned, e.unownedDone
		e.mu.Unlock()
		if !unowned {
			return c, nil
		}
		select {
		case <-done:
		case <-c.gone:
			return nil, c.crashFailure()
		case <-ctx.Done():
			return nil, fmt.Errorf("copilot: wait for the CLI to settle: %w", ctx.Err())
		}
	}
}

// Turn sends in.Text with session.send and follows the session's events
// until it is idle again.
func (e *Engine) Turn(ctx context.Context, in engine.TurnInput) (engine.TurnResult, error) {
	e.opMu.Lock()
	defer e.opMu.Unlock()
	c, err := e.ready(ctx)
	if err != nil {
		return engine.TurnResult{}, err
	}
	t := newTurn(ctx)
	e.mu.Lock()
	e.turn = t
	id := e.sessionID
	e.mu.Unlock()

	err = c.conn.Go(methodSessionSend, sendParams{SessionID: id, Prompt: in.Text}, func(raw json.RawMessage, err error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		switch {
		case err == nil:
			var res sendResult
			_ = json.Unmarshal(raw, &res) // without an id the turn owns whatever runs
			t.accepted, t.messageID = true, res.MessageID
		case errors.Is(err, jsonrpc.ErrClosed):
			// The CLI went away; onGone fails the turn with what it knows.
		default:
			t.failure = c.failure("copilot: session.send", err, false)
			if e.finishLocked(t) {
				close(t.done)
			}
		}
	})
	if err != nil {
		e.mu.Lock()
		e.turn = nil
		e.mu.Unlock()
		t.cancel()
		return engine.TurnResult{}, c.failure("copilot: session.send", err, false)
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		e.stopForContext(c, t)
	}
	return e.endTurn(ctx, t)
}

// stopForContext aborts a turn whose context ended and waits for it to
// stop; a CLI that does not stop in time is killed.
func (e *Engine) stopForContext(c *cli, t *turn) {
	actx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	e.mu.Lock()
	t.stopping = true
	e.mu.Unlock()
	if err := e.abort(actx, c, t); err != nil {
		e.log.Warn("abort after the turn's context ended", zap.Error(err))
	}
	select {
	case <-t.done:
	case <-actx.Done():
		c.kill()
		<-t.done
	}
}

// endTurn clears the finished turn and reports it.
func (e *Engine) endTurn(ctx context.Context, t *turn) (engine.TurnResult, error) {
	e.mu.Lock()
	e.turn = nil
	fx := &effects{}
	for _, id := range t.toolOrder {
		if run, ok := t.tools[id]; ok {
			fx.emit(event.ToolFinished, event.ToolFinishedData{
				ToolID: id, Tool: run.name, Outcome: "stopped", DurationMS: run.elapsed(),
			})
		}
	}
	res := engine.TurnResult{Stopped: t.aborted, Text: t.text, Usage: t.usage, HasUsage: t.hasUsage}
	failure := t.failure
	host := e.host
	e.mu.Unlock()
	t.cancel()
	fx.flush(host)
	if ctx.Err() != nil {
		res.Stopped = true
		return res, fmt.Errorf("copilot: turn: %w", ctx.Err())
	}
	if failure != nil {
		return res, failure
	}
	return res, nil
}

// Close shuts the CLI down (it saves the conversation for a later resume)
// and waits for everything the engine started.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	c, clis := e.cli, e.clis
	e.mu.Unlock()
	if c != nil {
		c.shutdown()
	}
	for _, c := range clis {
		<-c.gone
	}
	e.tasks.Wait()
	return nil
}

// onGone is called once for every CLI when its connection and process have
// ended; a turn it was running fails with the CLI's stderr tail.
func (e *Engine) onGone(c *cli) {
	e.mu.Lock()
	if e.cli != c {
		e.mu.Unlock()
		return
	}
	e.cli = nil
	e.lastUser = ""
	e.clearUnownedLocked()
	for id, p := range e.perms {
		p.completed = true // nobody is left to answer
		p.cancel()
		delete(e.perms, id)
	}
	t := e.turn
	finish := false
	if t != nil && !t.finished {
		t.failure = c.crashFailure()
		finish = e.finishLocked(t)
	}
	closed := e.closed
	e.mu.Unlock()
	if !closed {
		e.log.Warn("copilot CLI went away", zap.String("how", c.exitDescription()), zap.Strings("stderr", c.child.Stderr()))
	}
	if finish {
		close(t.done)
	}
}

// spawn runs f on a goroutine Close waits for; after Close it does nothing.
func (e *Engine) spawn(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.tasks.Add(1)
	go func() {
		defer e.tasks.Done()
		f()
	}()
}

// newSessionID returns a random UUID, the form the CLI uses for its ids.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
