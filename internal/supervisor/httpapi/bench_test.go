package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/metrics"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/testrunner"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// BenchmarkMirrorToSSE measures events per second from a runner's stdout
// through the supervisor (reader, fan-out, SSE writer) to an SSE client on
// a unix socket. The producer is the real runner behind the MirrorBurst
// fault (testrunner), which answers the send itself and writes b.N
// pre-encoded mirror lines as fast as the pipe takes them: faster than any
// engine, so that the figure is the supervisor's path alone. metrics=on feeds every event to the supervisor's
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
		Env:        testrunner.Env(testrunner.Path(b), testrunner.MirrorBurst),
		Logger:     zap.NewNop(),
		Observer:   observer,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	ctx := context.Background()
	s, err := m.Create(ctx, wire.Spec{Engine: "script", Scenario: testrunner.Scenario(b, echoScenario)})
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
	// The stream starts after what the runner wrote before the burst.
	rep, err := m.Command(ctx, s.ID, command.GetStatus{})
	var st command.Status
	if err != nil || json.Unmarshal(rep.Result, &st) != nil {
		b.Fatalf("status: %v %+v", err, rep)
	}
	resp, err := hc.Get("http://supervisor/v1/sessions/" + s.ID + "/events?from=" + strconv.FormatInt(st.LastSeq+1, 10))
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 64<<10)

	b.ResetTimer()
	cpu0 := cpuTime(b)
	t0 := time.Now()
	if _, err := m.Command(ctx, s.ID, command.Send{Text: testrunner.BurstPrefix + strconv.Itoa(b.N)}); err != nil {
		b.Fatal(err)
	}
	// The burst is all there is: the fault keeps the send from the
	// runner.
	want, got := b.N, 0
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
