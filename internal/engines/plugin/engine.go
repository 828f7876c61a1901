package plugin

import (
	"context"
	"os"

	"github.com/corral-dev/corral/pkg/engine"
	pluginengine "github.com/corral-dev/corral/pkg/engine/plugin"
	"github.com/corral-dev/corral/pkg/event"
)

// Engine is the plugin engine of one session. Until Start it knows no
// binary; Start resolves it from the session's configuration.
type Engine struct {
	eng *pluginengine.Engine
}

// New returns a plugin engine; it is the runner's factory for "plugin".
func New() engine.Engine { return &Engine{} }

// Start finds the plugin binary and starts its conversation.
func (e *Engine) Start(ctx context.Context, opts engine.StartOptions) (string, error) {
	if e.eng != nil {
		return "", &engine.Failure{Code: event.FailEngineError, Message: "plugin engine: Start may be called once"}
	}
	path, err := Resolve(opts.Config, os.Getenv)
	if err != nil {
		return "", &engine.Failure{Code: event.FailEngineError, Message: "locate engine plugin", Err: err}
	}
	e.eng = pluginengine.New(path)
	return e.eng.Start(ctx, opts)
}

// Started returns the engine to drive once Start succeeded: it implements
// exactly the optional interfaces the plugin advertised.
func (e *Engine) Started() engine.Engine {
	if e.eng == nil {
		return e
	}
	return e.eng.Started()
}

// Turn runs one turn in the plugin.
func (e *Engine) Turn(ctx context.Context, in engine.TurnInput) (engine.TurnResult, error) {
	if e.eng == nil {
		return engine.TurnResult{}, &engine.Failure{Code: event.FailEngineError, Message: "plugin engine: Start was not called"}
	}
	return e.eng.Turn(ctx, in)
}

// Interrupt stops the running turn; a no-op before Start.
func (e *Engine) Interrupt(ctx context.Context) error {
	if e.eng == nil {
		return nil
	}
	return e.eng.Interrupt(ctx)
}

// Close ends the plugin; safe before Start and more than once.
func (e *Engine) Close() error {
	if e.eng == nil {
		return nil
	}
	return e.eng.Close()
}
