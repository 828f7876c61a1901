package codex

import (
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
)

// TestPrewarm runs the engines' prewarm checks against the real CLI: a
// Codex thread takes its cwd at thread/start, so a warm app-server serves a
// session in any cwd.
func TestPrewarm(t *testing.T) {
	enginetest.TestPrewarm(t, enginetest.PrewarmConfig{
		NewRig: func(t *testing.T) *enginetest.Rig {
			return newRig(t, script(fakemodel.Step{Name: "hello", Text: "Warm hello."}), nil).Rig
		},
		Answer: "Warm hello.",
		PID:    processID,
		AnyCwd: true,
	})
}

// processID is the engine's app-server: the warm one, else the session's.
func processID(e engine.Engine) int {
	eng := e.(*Engine)
	eng.mu.Lock()
	defer eng.mu.Unlock()
	switch {
	case eng.warm != nil:
		return eng.warm.srv.pid
	case eng.srv != nil && eng.srv.alive():
		return eng.srv.pid
	}
	return 0
}
