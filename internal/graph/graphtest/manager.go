package graphtest

import (
	"context"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/testsupervisor"
	"go.uber.org/zap"
)

// Manager starts a supervisor's session manager on the real runner, in a
// fresh state folder (its StateDir), tweaked as given; it is shut down when
// the test ends.
func Manager(t testing.TB, tweak ...func(*supervisor.Config)) (*supervisor.Manager, string) {
	t.Helper()
	_, runner := testsupervisor.Binaries(t)
	cfg := supervisor.Config{StateDir: t.TempDir(), RunnerPath: runner, Logger: zap.NewNop(),
		ShutdownGrace: 5 * time.Second, KillGrace: time.Second, StartTimeout: 2 * time.Minute}
	for _, f := range tweak {
		f(&cfg)
	}
	m, err := supervisor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return m, cfg.StateDir
}

// P50 times fn per call of a benchmark and reports the median in
// milliseconds (p50-ms).
func P50(b *testing.B, fn func() error) {
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t := time.Now()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t))
	}
	b.ReportMetric(float64(Median(ds).Microseconds())/1000, "p50-ms")
}
