package copilot

import (
	"fmt"
	"strings"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

var _ engine.Presetter = (*Engine)(nil)

// CheckPreset accepts instructions and a tool allowlist of the CLI's tool
// names (view, edit, create, bash, grep, glob...).
func (e *Engine) CheckPreset(p wire.AgentPreset) error {
	for _, tool := range p.Tools {
		if strings.TrimSpace(tool) == "" {
			return fmt.Errorf("tool %q is not a Copilot CLI tool name", tool)
		}
	}
	return nil
}

// applyPreset puts the session's preset into session.create and
// session.resume: the instructions appended to the CLI's system message,
// the allowlist as availableTools.
func applyPreset(params *sessionParams, p *wire.AgentPreset) {
	if p == nil {
		return
	}
	if p.Instructions != "" {
		params.SystemMessage = &systemMessage{Mode: "append", Content: p.Instructions}
	}
	params.AvailableTools = p.Tools
}
