package codex

import (
	"errors"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

var _ engine.Presetter = (*Engine)(nil)

// CheckPreset accepts instructions, which thread/start, thread/resume and
// thread/fork carry as developerInstructions (after Codex's own base
// instructions). app-server offers no way to narrow the tools a thread
// may use, so a tool allowlist is refused.
func (e *Engine) CheckPreset(p wire.AgentPreset) error {
	if len(p.Tools) > 0 {
		return errors.New("codex app-server cannot narrow the tools a thread offers; leave out tools")
	}
	return nil
}

// presetInstructions are the developer instructions of the session's
// preset, if any.
func presetInstructions(p *wire.AgentPreset) string {
	if p == nil {
		return ""
	}
	return p.Instructions
}
