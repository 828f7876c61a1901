package claude

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// A Claude Code process fixes at its start everything but the conversation
// itself: its working directory, its config folder (the session's), its
// flags (model, preset, the conversation's id) and its key. So Prewarm
// starts a process for one exact session shape, and Start adopts it only
// for a new conversation of that shape (warmFits); anything else stops it
// and starts cold.

// launch is what a CLI process for a session is started with.
type launch struct {
	bin, version string
	env          []string
	key          string
}

// prepareLaunch checks opts (but Host), creates the session's config
// folder, builds the CLI's environment and locates and checks the CLI.
func prepareLaunch(ctx context.Context, opts engine.StartOptions) (launch, error) {
	switch {
	case opts.Dir == "":
		return launch{}, fmt.Errorf("claude engine: StartOptions.Dir is empty")
	case opts.Cwd == "":
		return launch{}, fmt.Errorf("claude engine: StartOptions.Cwd is empty")
	}
	key := opts.Credentials[CredentialItem]
	if key == "" {
		return launch{}, &engine.Failure{
			Code:    event.FailSignInExpired,
			Message: "no " + CredentialItem + " credential: store an Anthropic API key in the OS keyring (service dev.corral) or the credentials file",
		}
	}
	configDir := configDirFor(opts.Dir)
	if err := os.MkdirAll(configDir, 0o700); err != nil {
		return launch{}, &engine.Failure{Code: event.FailEngineError, Message: "create the claude config folder", Err: err}
	}
	base := opts.Env
	if base == nil {
		base = proc.BaseEnv()
	}
	env := buildEnv(base, configDir, opts.ModelEndpoint)
	bin, version, err := locateCLI(ctx, opts.Config, env)
	if err != nil {
		return launch{}, &engine.Failure{Code: event.FailEngineError, Message: "claude CLI unavailable", Err: err}
	}
	return launch{bin: bin, version: version, env: env, key: key}, nil
}

// processArgs are the flags of a session's long-lived CLI process.
func processArgs(opts engine.StartOptions, convID string, persisted bool, forkFrom string) []string {
	args := baseArgs()
	args = append(args, sessionArgs(convID, persisted, forkFrom)...)
	args = append(args, presetArgs(opts.Agent)...)
	if opts.Model != "" {
		args = append(args, "--model", opts.Model)
	}
	return args
}

// warmProcess is a CLI process Prewarm started for a new conversation,
// initialized and waiting for its session.
type warmProcess struct {
	opts   engine.StartOptions
	launch launch
	convID string
	conn   *conn
}

// Prewarm starts and initializes the CLI process of a new conversation for
// a session of opts' shape, before the session exists; opts.Host may be
// nil. Start adopts it (see warmFits).
func (e *Engine) Prewarm(ctx context.Context, opts engine.StartOptions) error {
	e.mu.Lock()
	if e.started || e.closed || e.warm != nil {
		e.mu.Unlock()
		return fmt.Errorf("claude engine: prewarm after start, close or another prewarm: %w", wire.ErrConflict)
	}
	logger := opts.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	// The reader of the process's frames logs through e.logger.
	e.logger = logger.With(zap.String("engine", "claude"))
	e.windows = map[string]int64{}
	e.mu.Unlock()
	if opts.Resume != "" {
		return fmt.Errorf("claude engine: a prewarmed process starts a new conversation, not %s: %w", opts.Resume, wire.ErrBadRequest)
	}
	l, err := prepareLaunch(ctx, opts)
	if err != nil {
		return err
	}
	convID, err := newConversationID()
	if err != nil {
		return err
	}
	spec := launchSpec{bin: l.bin, args: processArgs(opts, convID, false, ""), dir: opts.Cwd, env: l.env, key: l.key}
	c, err := e.startInitialized(ctx, spec)
	if err != nil {
		return err
	}
	e.prime(ctx, c)
	opts.Host, opts.Logger = nil, nil
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.started {
		c.close(closeGrace)
		return fmt.Errorf("claude engine: closed or started during prewarm: %w", wire.ErrConflict)
	}
	e.warm = &warmProcess{opts: opts, launch: l, convID: convID, conn: c}
	e.logger.Debug("claude CLI started ahead", zap.Int("pid", c.pid()), zap.String("conversation", convID))
	return nil
}

// primeTimeout bounds prime's request.
const primeTimeout = 10 * time.Second

// prime has a new process do, ahead of its first message, the work that
// message would otherwise wait for: the CLI builds its system prompt and
// tool list (and compiles the code that does it) lazily, on the first
// message or on a request for the context's breakdown. get_context_usage
// with detail "summary" asks for that breakdown from local estimates,
// without a model or token-count call, and stores nothing; measured on
// 2.1.332, the first turn's CPU time fell from about 190 to 140 ms. A CLI
// that refuses the request is only not primed.
func (e *Engine) prime(ctx context.Context, c *conn) {
	ctx, cancel := context.WithTimeout(ctx, primeTimeout)
	defer cancel()
	if _, err := c.request(ctx, contextUsageRequest{Subtype: "get_context_usage", Detail: "summary"}); err != nil {
		e.logger.Debug("claude CLI started ahead not primed", zap.Error(err))
	}
}

// warmFits says whether a process started for warm serves a new
// conversation started with opts: everything the process fixed at its
// start must be what opts asks for.
func warmFits(warm, opts engine.StartOptions) bool {
	return opts.Resume == "" &&
		warm.Dir == opts.Dir && warm.Cwd == opts.Cwd &&
		warm.Model == opts.Model && warm.ModelEndpoint == opts.ModelEndpoint &&
		warm.Credentials[CredentialItem] == opts.Credentials[CredentialItem] &&
		reflect.DeepEqual(warm.Config, opts.Config) &&
		slices.Equal(warm.Env, opts.Env) &&
		reflect.DeepEqual(warm.Agent, opts.Agent)
}

// takeWarm hands over the prewarmed process, once.
func (e *Engine) takeWarm() *warmProcess {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.warm
	e.warm = nil
	return w
}

// adoptWarm makes the prewarmed process the session's when it fits opts
// and is still running, and returns its conversation id; otherwise it
// stops the process (if any) and says no, and Start starts cold.
func (e *Engine) adoptWarm(opts engine.StartOptions, forkFrom string) (string, bool) {
	w := e.takeWarm()
	if w == nil {
		return "", false
	}
	// The process's reader logs through the logger it was started with,
	// which stays.
	e.mu.Lock()
	logger := e.logger
	e.mu.Unlock()
	// A process that has ended may not have closed its pipes yet: ask
	// the kernel too.
	running := w.conn.alive() && syscall.Kill(w.conn.pid(), 0) == nil
	if forkFrom != "" || !warmFits(w.opts, opts) || !running {
		logger.Info("claude CLI started ahead does not fit the session; starting cold",
			zap.Bool("running", running), zap.Bool("fork", forkFrom != ""))
		w.conn.close(closeGrace)
		return "", false
	}
	convs := conversationsFor(opts.Dir)
	if err := convs.record(w.convID, begun{}); err != nil {
		logger.Warn("claude CLI started ahead cannot record its conversation; starting cold", zap.Error(err))
		w.conn.close(closeGrace)
		return "", false
	}
	e.mu.Lock()
	e.opts, e.host, e.convs = opts, opts.Host, convs
	e.bin, e.version, e.env, e.key = w.launch.bin, w.launch.version, w.launch.env, w.launch.key
	e.convID, e.persisted, e.forkFrom = w.convID, false, ""
	e.cost = costLedger{known: true}
	e.conn = w.conn
	e.mu.Unlock()
	logger.Info("claude CLI started ahead takes the session", zap.Int("pid", w.conn.pid()), zap.String("conversation", w.convID))
	return w.convID, true
}
