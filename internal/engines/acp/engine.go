package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// Name is the engine's registered name.
const Name = "acp"

// Bounds on the agent's steps. They are deadlines against a stuck agent,
// not timing goals.
const (
	// initTimeout bounds initialize and opening the session.
	initTimeout = 60 * time.Second
	// closeGrace is how long the agent has to exit after its stdin closes
	// (Close) before it gets SIGTERM; agents need not exit at the end of
	// their input (claude-code-acp does not), so it is short. stopGrace is
	// how long SIGTERM has before SIGKILL.
	closeGrace = 500 * time.Millisecond
	stopGrace  = 2 * time.Second
	// cancelGrace is how long a turn whose context ended waits for the
	// agent to honour session/cancel before the agent is killed.
	cancelGrace = 5 * time.Second
	// stderrLines is how much of the agent's stderr a failure carries.
	stderrLines = 40
	// maxMessageBytes bounds one protocol message: tool results and file
	// contents travel in them.
	maxMessageBytes = 64 << 20
)

// Engine drives one ACP session of one agent process. Build it with New.
type Engine struct {
	// trace sees every protocol message (tests: golden transcripts).
	trace func(dir jsonrpc.Direction, body []byte)

	// Set by Start, then read-only.
	opts engine.StartOptions
	host engine.Host
	log  *zap.Logger
	set  settings

	// turnMu serialises turns: one session runs one prompt at a time.
	turnMu sync.Mutex

	mu        sync.Mutex
	started   bool
	closed    bool
	agent     *agent // nil before Start and after the agent went away
	sessionID string
	turn      *turnState // the running turn
	terms     *terminals
	seq       int // for ids of calls Corral names itself
}

// agent is one running agent process.
type agent struct {
	child *jsonrpc.Child
	conn  *jsonrpc.Conn
	info  initializeResult
	// costSeen is the agent's cumulative session cost last reported (USD).
	costSeen float64
}

// New returns an ACP engine, for the runner's engine registry.
func New() engine.Engine {
	return &Engine{terms: newTerminals()}
}

var _ engine.Engine = (*Engine)(nil)

// Start starts the agent, negotiates the protocol and opens the session: a
// new one, or opts.Resume through session/load.
func (e *Engine) Start(ctx context.Context, opts engine.StartOptions) (string, error) {
	e.mu.Lock()
	if e.started || e.closed {
		e.mu.Unlock()
		return "", errors.New("acp: Start called twice, or after Close")
	}
	e.started = true
	e.mu.Unlock()
	if opts.Host == nil {
		return "", errors.New("acp: StartOptions.Host is required")
	}
	if opts.Dir == "" || !filepath.IsAbs(opts.Cwd) {
		return "", fmt.Errorf("acp: StartOptions need a session folder and an absolute cwd (got %q, %q)", opts.Dir, opts.Cwd)
	}
	e.opts, e.host = opts, opts.Host
	e.log = opts.Logger
	if e.log == nil {
		e.log = zap.NewNop()
	}
	e.log = e.log.With(zap.String("engine", Name))
	set, err := newSettings(opts)
	if err != nil {
		return "", &engine.Failure{Code: event.FailEngineError, Message: err.Error()}
	}
	e.set = set
	for _, dir := range append([]string{set.home}, set.dirs...) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", &engine.Failure{Code: event.FailEngineError, Message: "acp: state folder: " + err.Error()}
		}
	}
	a, err := e.launch(ctx)
	if err != nil {
		return "", err
	}
	id, err := e.openSession(ctx, a, opts.Resume)
	if err != nil {
		a.child.Stop(closeGrace)
		return "", err
	}
	e.mu.Lock()
	closed := e.closed
	if !closed {
		e.agent, e.sessionID = a, id
	}
	e.mu.Unlock()
	if closed {
		a.child.Stop(closeGrace)
		return "", errors.New("acp: closed during Start")
	}
	name := "(unnamed)"
	if a.info.AgentInfo != nil {
		name = a.info.AgentInfo.Name + " " + a.info.AgentInfo.Version
	}
	e.log.Info("acp session open", zap.String("agent", name), zap.String("session", id), zap.Bool("resumed", opts.Resume != ""))
	return id, nil
}

// launch starts the agent process and completes the initialize handshake,
// refusing an agent of another protocol version.
func (e *Engine) launch(ctx context.Context) (*agent, error) {
	cmd := exec.Command(e.set.argv[0], e.set.argv[1:]...)
	cmd.Dir = e.opts.Cwd
	cmd.Env = e.set.env
	a := &agent{}
	child, err := jsonrpc.StartChild(cmd, jsonrpc.ChildOptions{
		Conn: jsonrpc.Options{
			Framing: jsonrpc.Lines,
			MaxBody: maxMessageBytes,
			Notify:  func(method string, params json.RawMessage) { e.onNotify(a, method, params) },
			Request: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
				return e.onRequest(ctx, a, method, params)
			},
			Trace: e.trace,
		},
		StderrLines: stderrLines,
		StderrLine:  func(line []byte) { e.log.Debug("agent stderr", zap.ByteString("line", line)) },
		StopGrace:   stopGrace,
		Gone:        func(*jsonrpc.Child) { e.agentGone(a) },
	})
	if err != nil {
		return nil, &engine.Failure{Code: event.FailEngineError, Message: fmt.Sprintf("acp: start the agent %s: %v", e.set.argv[0], err)}
	}
	a.child, a.conn = child, child.Conn()
	ictx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	err = a.conn.Call(ictx, mInitialize, initializeParams{
		ProtocolVersion:    ProtocolVersion,
		ClientCapabilities: clientCapabilities{FS: fsCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true},
		ClientInfo:         implementation{Name: "corral", Title: "Corral", Version: "1"},
	}, &a.info)
	if err != nil {
		f := e.failure(a, "acp: the agent did not initialize", err)
		child.Stop(closeGrace)
		return nil, f
	}
	if a.info.ProtocolVersion != ProtocolVersion {
		child.Stop(closeGrace)
		name := strings.Join(e.set.argv, " ")
		if a.info.AgentInfo != nil {
			name = a.info.AgentInfo.Name + " " + a.info.AgentInfo.Version
		}
		return nil, &engine.Failure{Code: event.FailEngineError, Stderr: child.Stderr(), Message: fmt.Sprintf(
			"acp: the agent %s speaks ACP protocol version %d; Corral speaks version %d", name, a.info.ProtocolVersion, ProtocolVersion)}
	}
	return a, nil
}

// openSession opens a new session, or loads resume.
func (e *Engine) openSession(ctx context.Context, a *agent, resume string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	if resume == "" {
		var res newSessionResult
		if err := a.conn.Call(ctx, mSessionNew, newSessionParams{Cwd: e.opts.Cwd, MCPServers: []json.RawMessage{}}, &res); err != nil {
			return "", e.failure(a, "acp: open a session", err)
		}
		if res.SessionID == "" {
			return "", &engine.Failure{Code: event.FailEngineError, Message: "acp: the agent opened a session without an id"}
		}
		return res.SessionID, nil
	}
	if !a.info.AgentCapabilities.LoadSession {
		return "", &engine.Failure{Code: event.FailEngineError, Message: "acp: the agent cannot load sessions (no loadSession capability), so session " + resume + " cannot be resumed"}
	}
	// The agent replays the conversation as session/update notifications
	// before it answers; no turn runs, so they are dropped.
	err := a.conn.Call(ctx, mSessionLoad, loadSessionParams{SessionID: resume, Cwd: e.opts.Cwd, MCPServers: []json.RawMessage{}}, nil)
	if err != nil {
		return "", e.failure(a, "acp: resume session "+resume, err)
	}
	return resume, nil
}

// ready returns a running agent for the session: one that died is
// replaced, and the session loaded in the new one.
func (e *Engine) ready(ctx context.Context) (*agent, error) {
	e.mu.Lock()
	if e.closed || !e.started {
		e.mu.Unlock()
		return nil, &engine.Failure{Code: event.FailEngineError, Message: "acp: the engine is not running"}
	}
	a, id := e.agent, e.sessionID
	e.mu.Unlock()
	if a != nil && a.child.Alive() {
		return a, nil
	}
	e.log.Info("the ACP agent is gone; starting it again to resume the session", zap.String("session", id))
	fresh, err := e.launch(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := e.openSession(ctx, fresh, id); err != nil {
		fresh.child.Stop(closeGrace)
		return nil, err
	}
	e.mu.Lock()
	closed := e.closed
	if !closed {
		e.agent = fresh
	}
	e.mu.Unlock()
	if closed {
		fresh.child.Stop(closeGrace)
		return nil, &engine.Failure{Code: event.FailEngineError, Message: "acp: the engine is closed"}
	}
	return fresh, nil
}

// agentGone runs once an agent process and its connection have ended.
func (e *Engine) agentGone(a *agent) {
	e.mu.Lock()
	current := e.agent == a
	if current {
		e.agent = nil
	}
	closed := e.closed
	e.mu.Unlock()
	// Its terminals were its to release; nobody will now.
	e.terms.killAll()
	if current && !closed {
		ee := a.child.Err()
		e.log.Warn("the ACP agent went away", zap.String("how", ee.Status()), zap.Strings("stderr", ee.Stderr))
	}
}

// Close stops the agent and every terminal it left running.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	a, t := e.agent, e.turn
	e.mu.Unlock()
	if t != nil {
		t.cancelPermits()
	}
	if a != nil {
		a.child.Stop(closeGrace)
	}
	e.terms.killAll()
	return nil
}

// failure describes err from the agent: its own refusal (an authentication
// refusal is signInExpired), or how its process ended, with its stderr.
func (e *Engine) failure(a *agent, what string, err error) *engine.Failure {
	var f *engine.Failure
	if errors.As(err, &f) {
		return f
	}
	var ee *jsonrpc.ExitError
	if errors.As(err, &ee) {
		msg := what + ": the agent " + ee.Status()
		if ee.ReadErr != nil {
			msg += " after its output broke off (" + ee.ReadErr.Error() + ")"
		}
		if line := ee.LastLine(); line != "" {
			msg += ": " + line
		}
		return &engine.Failure{Code: event.FailEngineError, Message: msg, Stderr: ee.Stderr, Err: err}
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		code := event.FailEngineError
		if rpcErr.Code == codeAuthRequired {
			code = event.FailSignInExpired
		}
		return &engine.Failure{Code: code, Message: fmt.Sprintf("%s: the agent refused: %s", what, rpcErr.Message), Stderr: a.child.Stderr(), Err: err}
	}
	return &engine.Failure{Code: event.FailEngineError, Message: what + ": " + err.Error(), Stderr: a.child.Stderr(), Err: err}
}
