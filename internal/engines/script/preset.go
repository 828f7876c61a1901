package script

import (
	"slices"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

var _ engine.Presetter = (*Engine)(nil)

// CheckPreset accepts any preset: the instructions lengthen the scripted
// system prompt (and so every call's input tokens), and a tool allowlist of
// the script's tool names (Write, Edit, Delete, Read, Bash, WebFetch) makes
// a step calling any other tool fail as an unknown tool, before the gate.
func (e *Engine) CheckPreset(wire.AgentPreset) error { return nil }

// toolOffered says whether the session's preset lets the model call tool.
func (e *Engine) toolOffered(tool string) bool {
	p := e.opts.Agent
	return p == nil || len(p.Tools) == 0 || slices.Contains(p.Tools, tool)
}
