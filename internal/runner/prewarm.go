package runner

import (
	"context"
	"maps"
	"path/filepath"
	"sync"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// prewarmer is an engine whose process can be started before its session
// exists, so that the session's first turn does not wait for the CLI to
// start. Prewarm starts and initializes the process for a session of opts'
// shape (opts.Host is nil: no turn runs yet). A later Start on the same
// Engine adopts that process when its options match what the process was
// started with (the engine decides which fields matter: for Claude Code
// the folder, cwd, model, endpoint, settings, preset and key; for Codex
// all but the cwd, model and preset, which its thread takes); otherwise it
// stops the process and starts cold. A process that died meanwhile is
// replaced by a cold start. Close stops a process never adopted.
type prewarmer interface {
	Prewarm(ctx context.Context, opts engine.StartOptions) error
}

// WarmEngine is an engine started ahead of its session by Prewarm, for the
// session folder it names. A Runner given it in Options.Warm owns it.
type WarmEngine struct {
	name string
	dir  string
	eng  engine.Engine
	once sync.Once
}

// Prewarm starts the engine spec names for the session expected in folder
// dir, with the credentials its live.ensure would carry. An engine that
// cannot start ahead is refused with bad_request.
func Prewarm(ctx context.Context, o Options, spec wire.Spec, dir string, creds map[string]string) (*WarmEngine, error) {
	if !filepath.IsAbs(dir) {
		return nil, wire.Errorf(wire.CodeBadRequest, "prewarm dir %q must be an absolute path", dir)
	}
	if spec.NeedsPlugin() || o.Engines[spec.Engine] == nil {
		return nil, wire.Errorf(wire.CodeBadRequest, "the %s engine cannot be started ahead", spec.Engine)
	}
	o.Credentials = creds
	factory, opts := engineStart(o, spec, filepath.Clean(dir))
	eng := factory()
	p, ok := eng.(prewarmer)
	if !ok {
		eng.Close()
		return nil, wire.Errorf(wire.CodeBadRequest, "the %s engine cannot be started ahead", spec.Engine)
	}
	if o.Logger != nil {
		opts.Logger = o.Logger.Named("engine")
	}
	if err := p.Prewarm(ctx, opts); err != nil {
		eng.Close()
		return nil, engineErr(err)
	}
	return &WarmEngine{name: spec.Engine, dir: filepath.Clean(dir), eng: eng}, nil
}

// fits says whether the warm engine may serve a session on engine name in
// folder dir; whether it adopts its process is its Start's to decide.
func (w *WarmEngine) fits(name, dir string) bool {
	return w.name == name && w.dir == filepath.Clean(dir)
}

// Close stops the warm engine's process. It is safe to call more than once.
func (w *WarmEngine) Close() error {
	var err error
	w.once.Do(func() { err = w.eng.Close() })
	return err
}

// takeWarm hands over the warm engine the runner was given, once.
func (r *Runner) takeWarm() *WarmEngine {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.opts.Warm
	r.opts.Warm = nil
	return w
}

// engineStart returns the factory of the engine spec names and the options
// of a start in session folder dir, without Host and Logger: the runner's
// own settings (the shared cache folder), the session's over them, and what
// the spec says of a plugin over both.
func engineStart(o Options, spec wire.Spec, dir string) (engine.Factory, engine.StartOptions) {
	config := maps.Clone(o.EngineConfig)
	if config == nil {
		config = map[string]string{}
	}
	maps.Copy(config, spec.EngineConfig.Strings())
	if spec.PluginPath != "" {
		config["pluginPath"] = spec.PluginPath
	}
	factory, ok := o.Engines[spec.Engine]
	if !ok {
		// An engine name Corral does not know is a plugin's, looked up
		// in the plugins folder.
		factory = o.Engines["plugin"]
		config["plugin"] = spec.Engine
	}
	return factory, engine.StartOptions{
		SessionID:     spec.ID,
		Dir:           dir,
		Cwd:           spec.Cwd,
		Model:         spec.Model,
		ModelEndpoint: spec.ModelEndpoint,
		Resume:        spec.EngineSession,
		Scenario:      spec.Scenario,
		Credentials:   o.Credentials,
		Env:           o.Env,
		Config:        config,
		Agent:         spec.Agent,
	}
}
