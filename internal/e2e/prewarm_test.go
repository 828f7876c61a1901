package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/sessiondir"
)

// TestPrewarmedSessions runs the real supervisor with --prewarm on Claude
// Code and Codex: after a first session on an engine, the next one's
// engine process was started ahead and the session answers from it; each
// session has a CLI process of its own in its own folder and a
// conversation of its own; a session of another shape starts cold and
// answers; a warm process that died is replaced by a cold start; and
// nothing is left running once the supervisor stops.
func TestPrewarmedSessions(t *testing.T) {
	r := newPrewarmRig(t)
	c := r.sup.Client
	ctx := context.Background()
	for _, engine := range []string{"claude", "codex"} {
		warm := 0
		t.Run(engine, func(t *testing.T) {
			_, first, _ := r.createToFirstOutput(t, r.spec(engine))
			warm++
			r.waitWarm(t, engine, warm)
			adopted := strings.Count(r.sup.Log(), "started ahead takes the session")
			_, second, _ := r.createToFirstOutput(t, r.spec(engine))
			if got := strings.Count(r.sup.Log(), "started ahead takes the session"); got != adopted+1 {
				t.Fatalf("the second session did not take the process started ahead (%d adoptions, want %d)", got, adopted+1)
			}
			procs := engineProcesses(t, r.sup.State, engine)
			if len(procs[first]) != 1 || len(procs[second]) != 1 || procs[first][0] == procs[second][0] {
				t.Fatalf("CLI processes by session: %v; want one each for %s and %s, not shared", procs, first, second)
			}
			a, err := c.Session(ctx, first)
			if err != nil {
				t.Fatal(err)
			}
			b, err := c.Session(ctx, second)
			if err != nil {
				t.Fatal(err)
			}
			if a.Spec.EngineSession == "" || a.Spec.EngineSession == b.Spec.EngineSession {
				t.Fatalf("conversations %q and %q, want two", a.Spec.EngineSession, b.Spec.EngineSession)
			}

			// A session of another shape (another cwd for Claude Code,
			// another endpoint setting for Codex) takes the warm
			// runner, whose engine starts cold, and answers.
			warm++
			r.waitWarm(t, engine, warm)
			cold := strings.Count(r.sup.Log(), "does not fit the session; starting cold")
			other := r.spec(engine)
			if engine == "claude" {
				other.Cwd = t.TempDir()
			} else {
				other.EngineConfig = map[string]any{"requestMaxRetries": 3}
			}
			r.createToFirstOutput(t, other)
			if got := strings.Count(r.sup.Log(), "does not fit the session; starting cold"); got != cold+1 {
				t.Fatalf("the session of another shape did not start cold (%d, want %d)", got, cold+1)
			}

			// The warm process dies: the next session starts cold in
			// its runner and answers.
			warm++
			r.waitWarm(t, engine, warm)
			pids := engineProcesses(t, r.sup.State, engine)
			var reserved []int
			for id, ps := range pids {
				if _, ok := sessiondir.IsReserved(filepath.Join(r.sup.State, "sessions", id)); ok {
					reserved = append(reserved, ps...)
				}
			}
			if len(reserved) != 1 {
				t.Fatalf("processes started ahead: %v (by session %v), want 1", reserved, pids)
			}
			if err := syscall.Kill(reserved[0], syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			enginetest.WaitGone(t, reserved[0])
			cold = strings.Count(r.sup.Log(), "does not fit the session; starting cold")
			r.createToFirstOutput(t, r.spec(engine))
			if got := strings.Count(r.sup.Log(), "does not fit the session; starting cold"); got != cold+1 {
				t.Fatalf("the session after the warm process died did not start cold (%d, want %d)", got, cold+1)
			}
		})
	}
	for _, engine := range []string{"claude", "codex"} {
		r.waitWarm(t, engine, 4)
	}
	if len(engineProcesses(t, r.sup.State, "")) == 0 {
		t.Fatal("no CLI process found before the supervisor stops: the check below would prove nothing")
	}
	r.sup.Stop()
	if left := engineProcesses(t, r.sup.State, ""); len(left) != 0 {
		t.Fatalf("CLI processes left after the supervisor stopped: %v", left)
	}
	des, _ := os.ReadDir(filepath.Join(r.sup.State, "sessions"))
	for _, de := range des {
		if _, ok := sessiondir.IsReserved(filepath.Join(r.sup.State, "sessions", de.Name())); ok {
			t.Errorf("reserved folder %s left after the supervisor stopped", de.Name())
		}
	}
}

// engineProcesses finds the running Claude Code and Codex processes (of
// engine only, unless it is empty) whose config folder (CLAUDE_CONFIG_DIR,
// CODEX_HOME) is in a session folder of state, by session id.
func engineProcesses(t testing.TB, state, engine string) map[string][]int {
	t.Helper()
	sessions := filepath.Join(state, "sessions") + string(filepath.Separator)
	out := map[string][]int{}
	des, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", de.Name(), "comm"))
		if err != nil {
			continue
		}
		if name := strings.TrimSpace(string(comm)); name != "claude" && name != "codex" || engine != "" && name != engine {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", de.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(environ, []byte{0}) {
			_, dir, ok := strings.Cut(string(kv), "=")
			if !ok || !(bytes.HasPrefix(kv, []byte("CLAUDE_CONFIG_DIR=")) || bytes.HasPrefix(kv, []byte("CODEX_HOME="))) {
				continue
			}
			if rest, ok := strings.CutPrefix(dir, sessions); ok {
				id, _, _ := strings.Cut(rest, string(filepath.Separator))
				if !slices.Contains(out[id], pid) {
					out[id] = append(out[id], pid)
				}
			}
		}
	}
	return out
}

// BenchmarkPrewarmedFirstOutput measures, on Claude Code and on Codex, a
// session created over HTTP on the supervisor's unix socket, then sent a
// prompt, to its first output (the first assistant event read from its
// event stream), against the bare CLI started cold by hand on the same
// prompt and the same instant fake model, interleaved round by round. The
// supervisor runs with --prewarm; after each session the benchmark waits,
// untimed, for the runner with the engine started ahead, as between
// sessions a host creates. It reports the medians, their ratio (goal:
// ≤ 0.5) and the median of the rounds' own ratios.
func BenchmarkPrewarmedFirstOutput(b *testing.B) {
	r := newPrewarmRig(b)
	ctx := context.Background()
	engines := []string{"claude", "codex"}
	bare := map[string][]time.Duration{}
	corral := map[string][]time.Duration{}
	created := map[string][]time.Duration{}
	sent := map[string][]time.Duration{}
	warm := map[string]int{}
	// A first session on each engine, untimed, makes the supervisor
	// start one ahead. Each wait for the next one is untimed too, and
	// comes before anything is measured: the CLI starting ahead would
	// slow down whatever ran beside it, a bare CLI as much as a session.
	for _, engine := range engines {
		stream, id, _ := r.createToFirstOutput(b, r.spec(engine))
		stream.Close()
		r.sup.Client.DeleteSession(ctx, id)
		warm[engine]++
		r.waitWarm(b, engine, warm[engine])
	}
	b.ResetTimer()
	for range b.N {
		bare[barePrint] = append(bare[barePrint], r.bareColdStart(b, barePrint))
		for _, engine := range engines {
			bare[engine] = append(bare[engine], r.bareColdStart(b, engine))
			stream, id, d := r.createTimed(b, r.spec(engine))
			corral[engine] = append(corral[engine], d.output)
			created[engine] = append(created[engine], d.created)
			sent[engine] = append(sent[engine], d.sent)
			stream.Close()
			if err := r.sup.Client.DeleteSession(ctx, id); err != nil {
				b.Fatal(err)
			}
			warm[engine]++
			r.waitWarm(b, engine, warm[engine])
		}
	}
	b.StopTimer()
	for _, engine := range engines {
		cold, fast := median(bare[engine]), median(corral[engine])
		b.ReportMetric(ms(cold), "bare-"+engine+"-p50-ms")
		b.ReportMetric(ms(fast), "corral-"+engine+"-p50-ms")
		b.ReportMetric(float64(fast)/float64(cold), engine+"-ratio")
		var ratios []time.Duration // per mille, to reuse median
		for i := range corral[engine] {
			ratios = append(ratios, 1000*corral[engine][i]/bare[engine][i])
		}
		b.ReportMetric(float64(median(ratios))/1000, engine+"-round-ratio-p50")
		b.Logf("%s: bare CLI cold %v, Corral create → first output %v (each sorted); of which create answered (p50) %v, send answered %v",
			engine, sorted(bare[engine]), sorted(corral[engine]), median(created[engine]), median(sent[engine]))
	}
	b.ReportMetric(ms(median(bare[barePrint])), "bare-claude-print-p50-ms")
	b.Logf("claude -p: bare CLI cold %v (sorted)", sorted(bare[barePrint]))
}

func median(ds []time.Duration) time.Duration {
	s := sorted(ds)
	return s[len(s)/2]
}

func sorted(ds []time.Duration) []time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
