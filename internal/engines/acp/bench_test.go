package acp

import (
	"context"
	"testing"

	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
)

// BenchmarkStart is Start on the claude-code preset: the agent (node and
// the Claude Code CLI under it) started, initialized, and a session
// opened, until the first prompt could be sent.
func BenchmarkStart(b *testing.B) {
	r := agentRig(b, fakemodel.Scenario{}, nil)
	for b.Loop() {
		eng, _, err := r.TryStart("")
		if err != nil {
			b.Fatal(err)
		}
		eng.Close()
	}
}

// BenchmarkTextTurn is one prompt answered with text by the fake model.
func BenchmarkTextTurn(b *testing.B) {
	r := agentRig(b, fakemodel.Scenario{Fallback: &fakemodel.Step{Text: "Done."}}, nil)
	eng, _ := r.Start("")
	for b.Loop() {
		if _, err := eng.Turn(context.Background(), engine.TurnInput{Text: "Say done."}); err != nil {
			b.Fatal(err)
		}
	}
}
