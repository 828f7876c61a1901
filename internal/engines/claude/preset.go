package claude

import (
	"fmt"
	"strings"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

var _ engine.Presetter = (*Engine)(nil)

// CheckPreset accepts instructions and a tool allowlist of Claude Code tool
// names (Read, Edit, Bash, mcp__server__tool...).
func (e *Engine) CheckPreset(p wire.AgentPreset) error {
	for _, tool := range p.Tools {
		if tool == "" || strings.ContainsAny(tool, ", \t\n") {
			return fmt.Errorf("tool %q is not a Claude Code tool name", tool)
		}
	}
	return nil
}

// presetArgs are the flags of a session's agent preset, given to every CLI
// process of the conversation: the instructions through
// --append-system-prompt (after Claude Code's own system prompt), the
// allowlist through --tools (the only built-in tools the model is offered;
// --allowedTools, which would skip the permission prompt, is never used).
func presetArgs(p *wire.AgentPreset) []string {
	if p == nil {
		return nil
	}
	var args []string
	if p.Instructions != "" {
		args = append(args, "--append-system-prompt", p.Instructions)
	}
	if len(p.Tools) > 0 {
		args = append(args, "--tools", strings.Join(p.Tools, ","))
	}
	return args
}
