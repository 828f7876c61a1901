package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// benchManager is a manager whose runners are the real runner binary, with
// a spare runner as the daemon has by default.
func benchManager(b *testing.B) *Manager { return benchManagerSpare(b, true) }

func benchManagerSpare(b *testing.B, spare bool) *Manager {
	b.Helper()
	_, runner := realBinaries(b)
	m, err := New(Config{StateDir: b.TempDir(), RunnerPath: runner, SpareRunner: spare, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Shutdown(context.Background()) })
	return m
}

// reportQuantiles reports the p50 and p99 of samples in unit.
func reportQuantiles(b *testing.B, samples []time.Duration, unit time.Duration, name string) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	q := func(p float64) float64 {
		return float64(samples[int(p*float64(len(samples)-1))]) / float64(unit)
	}
	b.ReportMetric(q(0.50), "p50-"+name)
	b.ReportMetric(q(0.99), "p99-"+name)
}

// BenchmarkSessionCreate measures creating a session until its runner (the
// real one, script engine) is live and has answered status: "spare" as the
// daemon runs by default, where the session opens in the runner started
// ahead of it, and "cold", where a runner process is started for it. Each
// create follows the last after a pause (untimed) in which the spare is
// replaced, as between sessions a person or a host creates; "burst" creates
// back to back, so each waits for the spare started behind the last.
func BenchmarkSessionCreate(b *testing.B) {
	for _, bc := range []struct {
		name  string
		spare bool
		pause time.Duration
	}{
		{"spare", true, 100 * time.Millisecond},
		{"cold", false, 100 * time.Millisecond},
		{"burst", true, 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := benchManagerSpare(b, bc.spare)
			cwd := b.TempDir()
			ctx := context.Background()
			samples := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				time.Sleep(bc.pause)
				b.StartTimer()
				t0 := time.Now()
				s, err := m.Create(ctx, wire.Spec{Engine: "script", Cwd: cwd})
				samples = append(samples, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := m.Delete(ctx, s.ID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.StopTimer()
			reportQuantiles(b, samples, time.Millisecond, "ms")
		})
	}
}

// BenchmarkInjectToFirstMirror measures a send from the call to the first
// event it causes reaching a live subscriber, with the real runner. The
// turn it starts is played out untimed.
func BenchmarkInjectToFirstMirror(b *testing.B) {
	m := benchManager(b)
	ctx := context.Background()
	cwd := b.TempDir()
	scenario := filepath.Join(cwd, "scenario.json")
	if err := os.WriteFile(scenario, []byte(`{"fallback":{"steps":[{"say":"ok"}]}}`), 0o600); err != nil {
		b.Fatal(err)
	}
	s, err := m.Create(ctx, wire.Spec{Engine: "script", Cwd: cwd, Scenario: scenario})
	if err != nil {
		b.Fatal(err)
	}
	st, err := m.Events(ctx, s.ID, 1, true)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	// Catch up with what the start wrote.
	for {
		ev, err := st.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if string(ev.Type) == "sessionStarted" {
			break
		}
	}
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := m.Command(ctx, s.ID, command.Send{Text: "go"}); err != nil {
			b.Fatal(err)
		}
		ev, err := st.Next(ctx)
		samples = append(samples, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		// Play the turn out: its userMessage and its turnEnded, in
		// whichever order the runner writes them.
		b.StopTimer()
		var sawMessage, sawEnd bool
		for {
			sawMessage = sawMessage || string(ev.Type) == "userMessage"
			sawEnd = sawEnd || string(ev.Type) == "turnEnded"
			if sawMessage && sawEnd {
				break
			}
			if ev, err = st.Next(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	reportQuantiles(b, samples, time.Microsecond, "µs")
}

// BenchmarkSupervisorMemory reports the resident memory of the supervisor
// binary holding 1,000 idle sessions (created through its API, their
// runners reaped), and of one idle live runner. Run it with -benchtime=1x.
func BenchmarkSupervisorMemory(b *testing.B) {
	sup, runner := realBinaries(b)
	state := b.TempDir()
	cwd := b.TempDir()
	cmd := exec.Command(sup, "serve", "--state", state, "--runner", runner, "--idle-ttl", "1s", "--log-level", "error", "--stop-runners-on-exit")
	proc.Configure(cmd)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	c, _ := client.ForState(state)
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := c.Health(ctx); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("supervisor did not start")
		}
	}
	const sessions = 1000
	b.ResetTimer()
	var ids []string
	for i := range sessions {
		s, err := c.CreateSession(ctx, wire.Spec{Engine: "script", Cwd: cwd})
		if err != nil {
			b.Fatalf("session %d: %v", i, err)
		}
		ids = append(ids, s.ID)
	}
	b.StopTimer()
	// One idle live runner, measured before the reaper takes it.
	raw, err := os.ReadFile(filepath.Join(state, "sessions", ids[len(ids)-1], pidFile))
	if err != nil {
		b.Fatal(err)
	}
	runnerPID, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	runnerKB := smapsKB(b, runnerPID)["Rss"]
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		h, err := c.Health(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if h.LiveSessions == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d runners still live", h.LiveSessions)
		}
	}
	list, err := c.Sessions(ctx)
	if err != nil || len(list) != sessions {
		b.Fatalf("list: %d sessions, %v", len(list), err)
	}
	b.ReportMetric(float64(smapsKB(b, cmd.Process.Pid)["Rss"])/1024, "supervisor-RSS-MB")
	b.ReportMetric(float64(runnerKB)/1024, "idle-runner-RSS-MB")
}

// BenchmarkIdleRunnerMemory reports the memory of a session's runner idle
// after one turn (opened in the spare, as the daemon does by default) and
// of the spare started behind it. Run it with -benchtime=1x.
func BenchmarkIdleRunnerMemory(b *testing.B) {
	m := benchManager(b)
	s, err := m.Create(ctxT(b), sayOK(b))
	if err != nil {
		b.Fatal(err)
	}
	playTurn(b, m, s.ID, "hello")
	var spare *child
	for deadline := time.Now().Add(time.Minute); spare == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatal("no spare behind the session's runner")
		}
		m.mu.Lock()
		spare = m.spare.child
		m.mu.Unlock()
	}
	time.Sleep(3 * time.Second) // idle: the runtime's background work done
	session := smapsKB(b, runnerPID(b, m, s.ID))
	b.ReportMetric(float64(session["Rss"])/1024, "session-RSS-MB")
	b.ReportMetric(float64(session["Pss"])/1024, "session-PSS-MB")
	b.ReportMetric(float64(session["Anonymous"])/1024, "session-anon-MB")
	b.ReportMetric(float64(smapsKB(b, spare.cmd.Process.Pid)["Rss"])/1024, "spare-RSS-MB")
}

// smapsKB reads the totals of /proc/PID/smaps_rollup, in kB.
func smapsKB(b *testing.B, pid int) map[string]int {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		b.Fatal(err)
	}
	kb := map[string]int{}
	for _, line := range strings.Split(string(raw), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if f := strings.Fields(rest); ok && len(f) == 2 && f[1] == "kB" {
			kb[name], _ = strconv.Atoi(f[0])
		}
	}
	return kb
}

// BenchmarkListLiveSessions lists 32 sessions whose runners (the real
// runner, script engine) are all live, so that each session's status is a
// round trip to its runner: "one at a time" as List did before GetMany,
// against the default, several at once.
func BenchmarkListLiveSessions(b *testing.B) {
	const sessions = 32
	m := benchManager(b)
	ctx := context.Background()
	cwd := b.TempDir()
	for range sessions {
		if _, err := m.Create(ctx, wire.Spec{Engine: "script", Cwd: cwd}); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name    string
		workers int
	}{{"one at a time", 1}, {"default", defaultGetWorkers}} {
		b.Run(bc.name, func(b *testing.B) {
			m.getWorkers = bc.workers
			for b.Loop() {
				list, err := m.List(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if len(list) != sessions || !list[0].Live || list[0].Status == nil {
					b.Fatalf("listed %d sessions, first %+v", len(list), list[0])
				}
			}
		})
	}
}
