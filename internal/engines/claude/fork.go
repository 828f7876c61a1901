package claude

import (
	"context"
	"fmt"

	"github.com/corral-dev/corral/pkg/wire"
)

// Fork branches the conversation: a new CLI process continues a copy of it
// under a new id (--resume ID --fork-session --session-id NEW) and becomes
// the engine's process. The original conversation stays stored and can be
// resumed by its id.
func (e *Engine) Fork(ctx context.Context) (string, error) {
	if !e.ops.TryLock() {
		return "", fmt.Errorf("claude engine: cannot fork while a turn runs: %w", wire.ErrConflict)
	}
	defer e.ops.Unlock()
	newID, err := newConversationID()
	if err != nil {
		return "", err
	}
	e.mu.Lock()
	if err := e.unusableLocked(); err != nil {
		e.mu.Unlock()
		return "", err
	}
	// The conversation to copy: this one once stored; a fork not yet
	// stored is still its original; with nothing stored the fork is a new
	// conversation.
	var from string
	switch {
	case e.persisted:
		from = e.convID
	case e.forkFrom != "":
		from = e.forkFrom
	}
	args := append(baseArgs(), sessionArgs(newID, false, from)...)
	args = append(args, presetArgs(e.opts.Agent)...)
	if e.opts.Model != "" {
		args = append(args, "--model", e.opts.Model)
	}
	spec := launchSpec{bin: e.bin, args: args, dir: e.opts.Cwd, env: e.env, key: e.key}
	convs := e.convs
	e.mu.Unlock()

	// Recorded first: the CLI stores nothing of the fork until it takes a
	// message, and a runner that moves the session to it starts a new
	// engine on it (stored.go).
	if err := convs.record(newID, begun{ForkFrom: from}); err != nil {
		return "", err
	}
	if _, err := e.launch(ctx, spec); err != nil {
		return "", err
	}
	e.mu.Lock()
	e.convID, e.persisted, e.forkFrom = newID, false, from
	// What total the fork's first result starts from depends on what the
	// CLI had saved of the original; its own per-turn figure is used then.
	e.cost.known = false
	e.mu.Unlock()
	return newID, nil
}
