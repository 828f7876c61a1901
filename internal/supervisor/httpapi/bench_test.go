package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/metrics"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/supervisor/fakerunner"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// BenchmarkMirrorToSSE measures events per second from a runner's stdout
// through the supervisor (reader, fan-out, SSE writer) to an SSE client on
// a unix socket. The fake runner emits b.N events in one burst, as fast as
// it can write them. metrics=on feeds every event to the supervisor's
// metrics too, as the daemon does; metrics=off is the baseline.
func BenchmarkMirrorToSSE(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "metrics=off"
		if on {
			name = "metrics=on"
		}
		b.Run(name, func(b *testing.B) { benchMirrorToSSE(b, on) })
	}
}

func benchMirrorToSSE(b *testing.B, withMetrics bool) {
	state := b.TempDir()
	var observer supervisor.Observer
	if withMetrics {
		observer = metrics.New(func() metrics.Census { return metrics.Census{} })
	}
	m, err := supervisor.New(supervisor.Config{
		StateDir:   state,
		RunnerPath: os.Args[0],
		Env: []string{fakerunner.EnvVar + "=" + fakerunner.ModeOn,
			"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")},
		Logger:   zap.NewNop(),
		Observer: observer,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	ctx := context.Background()
	s, err := m.Create(ctx, wire.Spec{Engine: "script"})
	if err != nil {
		b.Fatal(err)
	}
	socket := filepath.Join(state, "bench.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: New(FromManager(m), Options{Logger: zap.NewNop()})}
	go srv.Serve(ln)
	defer srv.Close()

	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}}
	resp, err := hc.Get("http://supervisor/v1/sessions/" + s.ID + "/events?from=2")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 64<<10)

	b.ResetTimer()
	cpu0 := cpuTime(b)
	t0 := time.Now()
	if _, err := m.Command(ctx, s.ID, command.Send{Text: fakerunner.BurstPrefix + strconv.Itoa(b.N)}); err != nil {
		b.Fatal(err)
	}
	// userMessage and turnStarted come first, then the burst.
	want, got := b.N+2, 0
	for got < want {
		line, err := r.ReadSlice('\n')
		if err != nil {
			b.Fatalf("after %d events: %v", got, err)
		}
		if bytes.HasPrefix(line, []byte("id: ")) {
			got++
		}
	}
	elapsed := time.Since(t0)
	cpu := cpuTime(b) - cpu0
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	// CPU this process (the supervisor and the SSE client) spent per
	// event: steadier than wall time on a loaded machine.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/event")
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
