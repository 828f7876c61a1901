package codex

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// An app-server fixes at its start its CODEX_HOME (the session's folder,
// with the config.toml rendered from the settings: endpoint, provider,
// model, retries), its environment and its key; a thread takes its own
// cwd, model, sandbox and instructions at thread/start. So Prewarm starts
// and initializes a server for a session folder and settings, and Start
// adopts it for a new thread whatever the session's cwd and preset
// (warmFits).

// warmServer is an app-server Prewarm started and initialized, waiting for
// its session's thread.
type warmServer struct {
	opts     engine.StartOptions
	settings settings
	srv      *serverProc
}

// Prewarm starts and initializes the app-server of a session of opts'
// shape, before the session exists; opts.Host may be nil. Start adopts it
// (see warmFits).
func (e *Engine) Prewarm(ctx context.Context, opts engine.StartOptions) error {
	e.mu.Lock()
	if e.started || e.closed || e.warm != nil {
		e.mu.Unlock()
		return fmt.Errorf("codex: prewarm after start, close or another prewarm: %w", wire.ErrConflict)
	}
	e.started = true // until the server is up: Start waits for no one
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.started = false
		e.mu.Unlock()
	}()
	if opts.Resume != "" {
		return fmt.Errorf("codex: a prewarmed server opens a new thread, not %s: %w", opts.Resume, wire.ErrBadRequest)
	}
	if err := e.prepare(ctx, opts); err != nil {
		return err
	}
	srv, err := e.connect(ctx)
	if err != nil {
		return err
	}
	opts.Host, opts.Logger = nil, nil
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		srv.stop()
		return errors.New("codex: closed during prewarm")
	}
	e.warm = &warmServer{opts: opts, settings: e.settings, srv: srv}
	e.log.Debug("codex app-server started ahead")
	return nil
}

// warmFits says whether a server started for warm serves a new thread
// started with opts: the folder, settings, environment and key must be the
// same; the cwd, model and preset are the thread's.
func warmFits(warm engine.StartOptions, ws settings, opts engine.StartOptions) bool {
	s, err := newSettings(opts)
	return err == nil && opts.Resume == "" && s == ws &&
		warm.Dir == opts.Dir &&
		warm.Credentials[CredentialItem] == opts.Credentials[CredentialItem] &&
		reflect.DeepEqual(warm.Config, opts.Config) &&
		slices.Equal(warm.Env, opts.Env)
}

// takeWarm hands over the prewarmed server, once.
func (e *Engine) takeWarm() *warmServer {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := e.warm
	e.warm = nil
	return w
}

// adoptWarm makes the prewarmed server the session's when it fits opts
// and still runs; otherwise it stops it (if any) and says no, and Start
// starts cold.
func (e *Engine) adoptWarm(opts engine.StartOptions) (*serverProc, bool) {
	w := e.takeWarm()
	if w == nil {
		return nil, false
	}
	// The server's goroutines log through the logger it was started
	// with, which stays.
	log := e.log
	if !warmFits(w.opts, w.settings, opts) || !w.srv.alive() {
		log.Info("codex app-server started ahead does not fit the session; starting cold", zap.Bool("running", w.srv.alive()))
		w.srv.stop()
		return nil, false
	}
	e.mu.Lock()
	e.opts = opts
	// A server started again later (after a crash) runs in the
	// session's cwd, as a cold start's would.
	e.spec.dir = opts.Cwd
	e.mu.Unlock()
	log.Info("codex app-server started ahead takes the session")
	return w.srv, true
}
