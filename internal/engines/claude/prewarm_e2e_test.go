package claude

import (
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
)

// TestPrewarm runs the engines' prewarm checks against the real CLI: a
// Claude Code process fixes its cwd, so a session in another cwd starts
// cold.
func TestPrewarm(t *testing.T) {
	enginetest.TestPrewarm(t, enginetest.PrewarmConfig{
		NewRig: func(t *testing.T) *enginetest.Rig {
			sc := fakemodel.Scenario{Steps: []fakemodel.Step{textStep("hello", "Warm hello.")}}
			return enginetest.NewRig(t, enginetest.RigConfig{
				New: New, CLI: "claude", Scenario: sc, Credential: CredentialItem, Key: testKey, TurnTimeout: turnTimeout,
			})
		},
		Answer: "Warm hello.",
		PID:    processID,
	})
}

// processID is the engine's CLI process: the warm one, else the session's.
func processID(e engine.Engine) int {
	eng := e.(*Engine)
	eng.mu.Lock()
	defer eng.mu.Unlock()
	switch {
	case eng.warm != nil:
		return eng.warm.conn.pid()
	case eng.conn != nil && eng.conn.alive():
		return eng.conn.pid()
	}
	return 0
}
