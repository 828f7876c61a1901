package plugin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// discardHost is a Host that allows everything and records nothing, so a
// benchmark measures the plugin boundary rather than a recorder.
type discardHost struct{}

func (discardHost) Emit(event.Type, any) {}
func (discardHost) Permit(context.Context, engine.ToolCall) engine.Verdict {
	return engine.Verdict{Allow: true}
}
func (discardHost) TakeSteers(string) []string { return nil }

func benchEngine(b *testing.B, scenario string) *Engine {
	b.Helper()
	dir := b.TempDir()
	opts := engine.StartOptions{SessionID: "bench", Dir: dir, Cwd: dir, Host: discardHost{}}
	if scenario != "" {
		opts.Scenario = filepath.Join(dir, "scenario.yaml")
		if err := os.WriteFile(opts.Scenario, []byte(scenario), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	e := New(bins.script)
	if _, err := e.Start(context.Background(), opts); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

// BenchmarkTurnRoundTrip measures one short turn through a plugin process:
// the Turn call, the events it emits back (a delta, the text, usage,
// context) and the reply.
func BenchmarkTurnRoundTrip(b *testing.B) {
	e := benchEngine(b, "fallback:\n  steps:\n    - say: \"ok\"\n")
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := e.Turn(ctx, engine.TurnInput{ID: "m", Text: "go"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamedDelta measures one streamed assistant delta crossing
// from the plugin to the runner's Host (a turn of 500 one-word deltas).
func BenchmarkStreamedDelta(b *testing.B) {
	const words = 500
	e := benchEngine(b, "fallback:\n  steps:\n    - say: \""+strings.Repeat("word ", words)+"\"\n")
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := e.Turn(ctx, engine.TurnInput{ID: "m", Text: "go"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*words), "ns/delta")
}

// BenchmarkLaunchAndClose measures starting a plugin process, its
// handshake and conversation, and closing it.
func BenchmarkLaunchAndClose(b *testing.B) {
	for range b.N {
		dir := b.TempDir()
		e := New(bins.script)
		if _, err := e.Start(context.Background(), engine.StartOptions{SessionID: "bench", Dir: dir, Cwd: dir, Host: discardHost{}}); err != nil {
			b.Fatal(err)
		}
		if err := e.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
