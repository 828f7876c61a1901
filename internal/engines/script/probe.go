package script

import (
	"context"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/engine"
)

// Probe: the script engine is built into the runner and needs no
// credential, so a session on it can always start.
func (e *Engine) Probe(context.Context, engine.ProbeOptions) engine.ProbeResult {
	return engine.ProbeResult{Checks: []api.EngineCheck{engineprobe.OK(engine.CheckCLI, "built into the runner; no CLI and no credential needed")}}
}
