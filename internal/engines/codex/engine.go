package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/pricing"
	"github.com/corral-dev/corral/pkg/engine"
)

// Name is the engine's registered name.
const Name = "codex"

// initTimeout bounds the initialize handshake and opening the thread.
const initTimeout = 60 * time.Second

// notificationsOptedOut are notifications Corral never uses; the server is
// asked not to send them. turn/diff/updated repeats the turn's whole diff
// after every step.
var notificationsOptedOut = []string{"turn/diff/updated", "account/rateLimits/updated"}

// Engine drives one Codex thread through "codex app-server". Build it with
// New; the zero value is not usable.
type Engine struct {
	// Seams for tests; New sets the real ones.
	launch  launchFunc
	locate  func(config map[string]string) (string, error)
	version func(ctx context.Context, bin string, env []string) (string, error)
	trace   func(dir jsonrpc.Direction, body []byte)
	// extraConfig is appended to config.toml (tests: a key the CLI
	// rejects).
	extraConfig []byte

	// Set by Start, then read-only.
	opts engine.StartOptions
	log  *zap.Logger
	// cliVersion is the CLI's version ("0.171.0"), as checkVersion read it.
	cliVersion string
	settings   settings
	spec       spawnSpec
	price      pricing.Price
	priced     bool

	// turnMu serialises Turn, Fork, Judge and Compact: one thread runs
	// one turn at a time.
	turnMu sync.Mutex

	mu       sync.Mutex
	started  bool
	closed   bool
	srv      *serverProc
	threadID string
	model    string
	turns    map[string]*turnState     // the running turn of each thread
	totals   map[string]tokenBreakdown // cumulative usage by thread
	rejected *engine.Failure           // a configWarning that was not benign
	// warm is the server Prewarm started, until Start adopts or drops it.
	warm *warmServer
}

// New returns a Codex engine, for the runner's engine registry.
func New() engine.Engine {
	return &Engine{
		launch: spawn,
		locate: func(config map[string]string) (string, error) {
			bin, _, err := locate.Binary("codex", config)
			return bin, err
		},
		version: checkVersion,
		turns:   map[string]*turnState{},
		totals:  map[string]tokenBreakdown{},
	}
}

var (
	_ engine.Engine    = (*Engine)(nil)
	_ engine.Steerer   = (*Engine)(nil)
	_ engine.Forker    = (*Engine)(nil)
	_ engine.Judge     = (*Engine)(nil)
	_ engine.Compactor = (*Engine)(nil)
)

// Start locates and checks the CLI, writes the session's CODEX_HOME, starts
// the app-server and opens the thread: a new one, or opts.Resume.
func (e *Engine) Start(ctx context.Context, opts engine.StartOptions) (string, error) {
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return "", errors.New("codex: Start called twice")
	}
	e.started = true
	e.mu.Unlock()

	if opts.Host == nil {
		return "", errors.New("codex: StartOptions.Host is required")
	}
	srv, adopted := e.adoptWarm(opts)
	if !adopted {
		var err error
		if srv, err = e.startServer(ctx, opts); err != nil {
			return "", err
		}
	}
	res, err := e.openThread(ctx, srv, opts.Resume)
	if err != nil && adopted {
		// The server started ahead failed the session (it died as the
		// session took it): a cold start says whether a server of the
		// session's own does too.
		e.log.Info("codex app-server started ahead did not open the thread; starting cold", zap.Error(err))
		srv.stop()
		if srv, err = e.startServer(ctx, opts); err != nil {
			return "", err
		}
		res, err = e.openThread(ctx, srv, opts.Resume)
	}
	if err != nil {
		srv.stop()
		return "", err
	}
	p, priced, err := priceFor(res.Model, opts.Config)
	if err != nil {
		srv.stop()
		return "", engineFailure("codex", err, nil)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		srv.stop()
		return "", errors.New("codex: closed during Start")
	}
	e.price, e.priced = p, priced
	e.srv, e.threadID, e.model = srv, res.Thread.ID, res.Model
	e.log.Info("codex thread open", zap.String("thread", res.Thread.ID), zap.String("model", res.Model), zap.String("provider", res.ModelProvider), zap.Bool("resumed", opts.Resume != ""))
	return res.Thread.ID, nil
}

// prepare checks opts, writes the session's CODEX_HOME, and locates and
// checks the CLI: what a server for opts is started with (e.spec).
func (e *Engine) prepare(ctx context.Context, opts engine.StartOptions) error {
	if opts.Dir == "" || !filepath.IsAbs(opts.Cwd) {
		return fmt.Errorf("codex: StartOptions need a session folder and an absolute cwd (got %q, %q)", opts.Dir, opts.Cwd)
	}
	e.opts = opts
	e.log = opts.Logger
	if e.log == nil {
		e.log = zap.NewNop()
	}
	e.log = e.log.With(zap.String("engine", Name))

	s, err := newSettings(opts)
	if err != nil {
		return engineFailure("codex", err, nil)
	}
	e.settings = s
	bin, err := e.locate(opts.Config)
	if err != nil {
		return engineFailure("codex: locate the CLI", err, nil)
	}
	home := filepath.Join(opts.Dir, "engine", "codex")
	if err := prepareHome(home, s, opts, e.extraConfig); err != nil {
		return engineFailure("codex", err, nil)
	}
	env := childEnv(opts.Env, home, opts.Credentials[CredentialItem])
	if native, extra, ok := nativeBinary(bin); ok {
		bin, env = native, withEnv(env, extra...)
	}
	v, err := e.version(ctx, bin, env)
	if err != nil {
		return engineFailure("codex", err, nil)
	}
	e.cliVersion = v
	e.spec = spawnSpec{bin: bin, dir: opts.Cwd, env: env, trace: e.trace, stderrLine: func(line []byte) { e.log.Debug("codex stderr", zap.ByteString("line", line)) }}
	return nil
}

// startServer prepares a server for opts and starts it.
func (e *Engine) startServer(ctx context.Context, opts engine.StartOptions) (*serverProc, error) {
	if err := e.prepare(ctx, opts); err != nil {
		return nil, err
	}
	return e.connect(ctx)
}

// connect starts a server and completes the initialize handshake.
func (e *Engine) connect(ctx context.Context) (*serverProc, error) {
	srv, err := e.launch(e.spec, serverHooks{notify: e.notify, request: e.serveRequest, badLine: e.badLine, gone: e.serverGone})
	if err != nil {
		return nil, engineFailure("codex", err, nil)
	}
	ictx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	var init initializeResult
	err = srv.conn.Call(ictx, mInitialize, initializeParams{
		ClientInfo: clientInfo{Name: "corral", Title: "Corral", Version: "1"},
		Capabilities: initializeCapabilities{
			OptOutNotificationMethods: notificationsOptedOut,
		},
	}, &init)
	if err == nil {
		err = srv.conn.Notify(mInitialized, nil)
	}
	if err != nil {
		srv.stop()
		return nil, engineFailure("codex: app-server did not initialize", err, srv.stderr())
	}
	return srv, nil
}

// threadParams restates Corral's policy for thread/start, resume and fork.
func (e *Engine) threadParams() threadParams {
	return threadParams{
		Cwd:               e.opts.Cwd,
		Model:             e.opts.Model,
		ApprovalPolicy:    approvalOnRequest,
		ApprovalsReviewer: reviewerUser,
		Sandbox:           sandboxReadOnly,

		DeveloperInstructions: presetInstructions(e.opts.Agent),
	}
}

// openThread starts or resumes the thread and checks that the server runs
// it with the policy Corral asked for.
func (e *Engine) openThread(ctx context.Context, srv *serverProc, resume string) (threadResult, error) {
	params := e.threadParams()
	method := mThreadStart
	if resume != "" {
		method = mThreadResume
		params.ThreadID = resume
		params.ExcludeTurns = true
	}
	ctx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	var res threadResult
	err := srv.conn.Call(ctx, method, params, &res)
	// Warnings about the configuration arrive right after initialize,
	// before this response.
	if f := e.configRejected(); f != nil {
		f.Stderr = srv.stderr()
		return threadResult{}, f
	}
	if err != nil {
		what := "start a thread"
		if resume != "" {
			what = "resume thread " + resume
		}
		return threadResult{}, engineFailure("codex: "+what, err, srv.stderr())
	}
	if err := e.checkPolicy(res); err != nil {
		return threadResult{}, engineFailure("codex", err, srv.stderr())
	}
	return res, nil
}

// checkPolicy refuses a thread the server runs with another policy than
// Corral's (a managed requirements file can impose one) or with another
// provider (a configuration fallback).
func (e *Engine) checkPolicy(res threadResult) error {
	if res.Thread.ID == "" {
		return errors.New("the server returned a thread without an id")
	}
	var policy string
	if json.Unmarshal(res.ApprovalPolicy, &policy) != nil || policy != approvalOnRequest {
		return fmt.Errorf("the thread runs with approval policy %s, Corral requires %q", res.ApprovalPolicy, approvalOnRequest)
	}
	if res.Sandbox.Type != sandboxTypeRO || (res.Sandbox.NetworkAccess != nil && res.Sandbox.NetworkAccess != false) {
		return fmt.Errorf("the thread runs with sandbox %s (network %v), Corral requires read-only without network", res.Sandbox.Type, res.Sandbox.NetworkAccess)
	}
	if res.ApprovalsReviewer != "" && res.ApprovalsReviewer != reviewerUser {
		return fmt.Errorf("the thread routes approvals to %q, Corral requires %q", res.ApprovalsReviewer, reviewerUser)
	}
	if e.settings.Provider && res.ModelProvider != providerID {
		return fmt.Errorf("the thread uses model provider %q, not the configured %q", res.ModelProvider, providerID)
	}
	return nil
}

func (e *Engine) configRejected() *engine.Failure {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rejected == nil {
		return nil
	}
	f := *e.rejected
	return &f
}

// ready returns a running server for the session's thread. A server that
// died (crashed, killed) is replaced, and the thread resumed in the new one.
func (e *Engine) ready(ctx context.Context) (*serverProc, string, error) {
	e.mu.Lock()
	if e.closed || !e.started || e.srv == nil {
		e.mu.Unlock()
		return nil, "", engineFailure("codex: the engine is not running", nil, nil)
	}
	srv, thread := e.srv, e.threadID
	e.mu.Unlock()
	if f := e.configRejected(); f != nil {
		return nil, "", f
	}
	if srv.alive() {
		return srv, thread, nil
	}
	e.log.Info("codex app-server is gone; starting a new one to resume the thread", zap.String("thread", thread), zap.String("exit", srv.exit))
	fresh, err := e.connect(ctx)
	if err != nil {
		return nil, "", err
	}
	if _, err := e.openThread(ctx, fresh, thread); err != nil {
		fresh.stop()
		return nil, "", err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		fresh.stop()
		return nil, "", engineFailure("codex: the engine is closed", nil, nil)
	}
	e.srv = fresh
	return fresh, thread, nil
}

// Close stops the server and waits for the requests it was answering.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	srv := e.srv
	turns := make([]*turnState, 0, len(e.turns))
	for _, ts := range e.turns {
		turns = append(turns, ts)
	}
	e.mu.Unlock()
	for _, ts := range turns {
		ts.cancel()
	}
	if srv != nil {
		// The server's connection waits for the requests it was
		// answering before it is gone.
		srv.stop()
	}
	if w := e.takeWarm(); w != nil {
		w.srv.stop()
	}
	return nil
}

func (e *Engine) register(ts *turnState) {
	e.mu.Lock()
	e.turns[ts.threadID] = ts
	e.mu.Unlock()
}

func (e *Engine) unregister(ts *turnState) {
	e.mu.Lock()
	if e.turns[ts.threadID] == ts {
		delete(e.turns, ts.threadID)
	}
	e.mu.Unlock()
	ts.cancel()
}

func (e *Engine) turnFor(threadID string) *turnState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.turns[threadID]
}

// serverGone runs after a server exits: whatever waits on it gives up.
func (e *Engine) serverGone(srv *serverProc) {
	e.mu.Lock()
	var turns []*turnState
	if e.srv == srv || e.srv == nil {
		for _, ts := range e.turns {
			turns = append(turns, ts)
		}
	}
	e.mu.Unlock()
	for _, ts := range turns {
		ts.cancel()
	}
	e.log.Info("codex app-server gone", zap.String("exit", srv.exit))
}
