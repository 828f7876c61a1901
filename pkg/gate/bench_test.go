package gate

import (
	"slices"
	"testing"
	"time"
)

// benchCommand is a typical compound command: a build-and-inspect
// sequence with a pipeline.
const benchCommand = "go test ./... && git status | head -20; ls -la"

// BenchmarkJudgeCompound measures one decision on benchCommand. Besides
// the mean (ns/op) it reports the median latency (p50-ns), the figure
// the gate's goal is stated in, which a busy machine disturbs less.
func BenchmarkJudgeCompound(b *testing.B) {
	p := DefaultPolicy()
	p.Allow = append(p.Allow, "go test *")
	g, err := New(p, b.TempDir(), WithHomeDir(b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Kind: KindShell, Command: benchCommand}
	if j := g.Judge(req); j.Decision != Allow {
		b.Fatalf("benchmark command judged %s: %s", j.Decision, j.Reason)
	}
	latencies := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		g.Judge(req)
		latencies = append(latencies, time.Since(start))
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Nanoseconds()), "p50-ns")
}
