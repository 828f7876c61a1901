package copilot

import (
	"context"
	"testing"

	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
)

// BenchmarkStartToReady is Start with the real CLI: spawn, connect, and
// session.create, until the first turn could be sent.
func BenchmarkStartToReady(b *testing.B) {
	for range b.N {
		b.StopTimer()
		r := newRig(b, fakemodel.Scenario{}, allow)
		b.StartTimer()
		if err := r.tryStart(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		r.eng.Close()
	}
}

// BenchmarkTextTurn is one turn answered with text by the fake model,
// from session.send to the session going idle.
func BenchmarkTextTurn(b *testing.B) {
	r := newRig(b, fakemodel.Scenario{Fallback: &fakemodel.Step{Text: "Done."}}, allow)
	if err := r.tryStart(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.eng.Close() })
	b.ResetTimer()
	for range b.N {
		if _, err := r.eng.Turn(context.Background(), engine.TurnInput{Text: "Say done."}); err != nil {
			b.Fatal(err)
		}
	}
}
