package runner

import (
	"context"

	"go.uber.org/zap"
)

// continueCleared moves the session on after a turn in which the engine
// cleared its conversation (Claude Code's /clear) and went on in the new
// one, conv: like a fork, the session continues under a new id (a rotated
// event with reason "clear") whose engine resumes conv, and the old id
// keeps the conversation as it was before the clear. It runs in the turn
// loop while the turn settles, so no turn starts meanwhile.
func (r *Runner) continueCleared(ctx context.Context, conv string) {
	r.mu.Lock()
	if r.closed {
		// Shutting down: the session keeps its id and resumes the new
		// conversation, which is what the person asked for.
		r.spec.EngineSession = conv
		spec := r.spec
		r.mu.Unlock()
		if err := r.store.saveSpec(spec); err != nil {
			r.log.Error("store the cleared conversation's id", zap.Error(err))
		}
		return
	}
	// Close waits for this before it takes cmds: were it to take them
	// first, the loop would wait for them here and Close for the loop.
	done := make(chan struct{})
	r.rotating = done
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.rotating = nil
		r.mu.Unlock()
		close(done)
	}()

	r.cmds.Lock()
	res, err := r.moveToNewSession(ctx, "clear", conv)
	r.cmds.Unlock()
	if err != nil {
		r.log.Error("continue the cleared conversation under a new session id", zap.Error(err))
		return
	}
	// Commands are let in again before anyone hears of the new session.
	if r.opts.Rotate != nil {
		r.opts.Rotate(res.From, res.To)
	}
	r.presence.touch()
}
