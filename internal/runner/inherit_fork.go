package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/sessiondir"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// startInherited starts the first engine of a session that names a parent.
// When the parent ran on the same engine, has a conversation, and the
// engine can start on a branch of it (engine.Inheritor), the parent's
// engine state is copied into this session's folder and the conversation
// forked: the session continues the parent's conversation itself, and
// forkedFrom names it. Otherwise the engine starts anew, and inherit
// queues a handoff brief.
func (r *Runner) startInherited(ctx context.Context, spec wire.Spec) (eng engine.Engine, conv, forkedFrom string, err error) {
	parentDir := filepath.Join(filepath.Dir(r.Dir()), spec.Parent)
	parent, ok, perr := ReadSpec(parentDir)
	if perr != nil || !ok || parent.Engine != spec.Engine || parent.EngineSession == "" || parent.PluginPath != spec.PluginPath {
		eng, conv, err = r.startEngine(ctx, spec)
		return eng, conv, "", err
	}
	eng, conv, err = r.startEngineWith(ctx, spec, func(e engine.Engine, opts engine.StartOptions) (string, bool, error) {
		inh, ok := e.(engine.Inheritor)
		if !ok {
			return "", false, nil
		}
		if err := copyEngineState(parentDir, r.Dir()); err != nil {
			// The brief still hands the work over.
			r.log.Warn("copy the parent's engine state to fork its conversation", zap.Error(err))
			return "", false, nil
		}
		c, err := inh.StartFork(ctx, opts, parent.EngineSession)
		if err == nil {
			forkedFrom = parent.EngineSession
		}
		return c, true, err
	})
	return eng, conv, forkedFrom, err
}

// copyEngineState replaces the engine folder of the session at dir with a
// copy of the parent's. A session not yet started has nothing of its own
// there worth keeping: whatever an earlier failed start left goes.
func copyEngineState(parentDir, dir string) error {
	dst := filepath.Join(dir, sessiondir.EngineDir)
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("clear the engine folder: %w", err)
	}
	if err := copyTree(filepath.Join(parentDir, sessiondir.EngineDir), dst); err != nil {
		return fmt.Errorf("copy the parent's engine folder: %w", err)
	}
	return nil
}
