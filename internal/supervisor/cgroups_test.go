//go:build linux

package supervisor

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-dev/corral/internal/cgroup"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// cgroupState is a state folder for a manager with cgroups, whose subtree
// is removed when the test ends, whatever became of the manager.
func cgroupState(t *testing.T) string {
	t.Helper()
	testenv.NeedCgroup2(t, cgroup.Check())
	state := t.TempDir()
	t.Cleanup(func() {
		if err := cgroup.Remove(cgroup.SubtreeName(state)); err != nil {
			t.Errorf("cleaning up the runners' cgroups: %v", err)
		}
	})
	return state
}

// liveChild returns the runner of live session id.
func liveChild(t *testing.T, m *Manager, id string) *child {
	t.Helper()
	e := m.holdLive(id)
	if e == nil {
		t.Fatalf("session %s is not live", id)
	}
	defer m.release(e, false)
	return e.child
}

// startEscapedJob opens a terminal in session id that starts a job in a
// session of its own (setsid), ignoring SIGHUP, and returns its pid: the
// job is in neither the runner's process group nor its session.
func startEscapedJob(t *testing.T, m *Manager, id string) int {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "job.pid")
	if _, err := m.OpenTerm(ctxT(t), id, wire.TermOpen{TermID: "t1", ClientID: "c1", Command: testenv.EscapingJob(pidFile)}, func(wire.Message) {}); err != nil {
		t.Fatal(err)
	}
	var job int
	waitFor(t, func() bool {
		raw, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		job, err = strconv.Atoi(strings.TrimSpace(string(raw)))
		return err == nil
	})
	if job <= 1 {
		t.Fatalf("job pid %d", job)
	}
	t.Cleanup(func() { syscall.Kill(job, syscall.SIGKILL) })
	if !alive(job) {
		t.Fatalf("the job %d is not running", job)
	}
	if pgid, _ := syscall.Getpgid(job); pgid == job {
		return job
	}
	t.Fatalf("the job %d did not leave the runner's process group", job)
	return 0
}

// A job that leaves the runner's process group and session and ignores
// SIGHUP survives the runner's kill -9 with process groups alone; with
// cgroups, the sweep of the runner's leaf takes it.
func TestRunnerKill9LeavesNoEscapedJob(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mode      cgroup.Mode
		survives  bool
		needGroup bool
	}{
		{"with cgroups the job is gone", cgroup.Required, false, true},
		{"with process groups alone the job survives", cgroup.Off, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			if tc.needGroup {
				state = cgroupState(t)
			}
			m := newScriptManager(t, "", func(c *Config) { c.StateDir, c.Cgroups = state, tc.mode })
			s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
			if err != nil {
				t.Fatal(err)
			}
			job := startEscapedJob(t, m, s.ID)
			c := liveChild(t, m, s.ID)
			if tc.needGroup {
				pids, err := c.leaf.Procs()
				if err != nil || !slices.Contains(pids, job) || !slices.Contains(pids, c.pid) {
					t.Fatalf("runner %d and job %d are not both in the leaf %s: %v %v", c.pid, job, c.leaf.Dir(), pids, err)
				}
			}
			if err := syscall.Kill(c.pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-c.done // reaped, and its leaf swept
			if got := alive(job); got != tc.survives {
				t.Errorf("job alive after the runner's kill -9: %v, want %v", got, tc.survives)
			}
			if tc.needGroup {
				if _, err := os.Stat(c.leaf.Dir()); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the dead runner's leaf is still there: %v", err)
				}
			}
		})
	}
}

// A supervisor re-attaching to a runner left for it keeps the runner's
// leaf; stopping the runner sweeps it, and Shutdown leaves no cgroup.
func TestReattachedRunnerKeepsItsLeaf(t *testing.T) {
	state := cgroupState(t)
	mode := func(grace time.Duration) func(*Config) {
		return func(c *Config) { c.StateDir, c.Cgroups, c.RunnerGrace = state, cgroup.Required, grace }
	}
	first := startScriptManager(t, "", mode(time.Minute))
	s, err := first.Create(ctxT(t), scriptSpec(t, slowScenario))
	if err != nil {
		t.Fatal(err)
	}
	// A turn under way, so the runner waits for the next supervisor.
	if _, err := first.Command(ctxT(t), s.ID, command.Send{Text: "go"}); err != nil {
		t.Fatal(err)
	}
	job := startEscapedJob(t, first, s.ID)
	c := liveChild(t, first, s.ID)
	leaf, pid := c.leaf.Dir(), c.pid
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := first.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(leaf); err != nil {
		t.Fatalf("the leaf of a runner left for the next supervisor is gone: %v", err)
	}

	second := startScriptManager(t, "", mode(0))
	adopted := liveChild(t, second, s.ID)
	if adopted.cmd != nil || adopted.pid != pid {
		t.Fatalf("session %s is on runner %d (started here: %v), want runner %d re-attached to", s.ID, adopted.pid, adopted.cmd != nil, pid)
	}
	if adopted.leaf == nil || adopted.leaf.Dir() != leaf {
		t.Fatalf("the re-attached runner's leaf is %v, want %s", adopted.leaf, leaf)
	}
	if !alive(job) {
		t.Fatal("the re-attach killed the runner's job")
	}

	if err := second.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-c.done // the first manager's waiter, which reaps the runner it started
	if alive(job) {
		t.Error("the job outlived its runner's stop")
	}
	if _, err := os.Stat(second.cgroups.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a cgroup is left after Shutdown: %v", err)
	}
}

// A supervisor starting sweeps the leaves of runners that are gone: a
// job left in one (its runner killed while no supervisor ran) dies.
func TestStartSweepsLeavesOfGoneRunners(t *testing.T) {
	state := cgroupState(t)
	tr, err := cgroup.Open(cgroup.SubtreeName(state))
	if err != nil {
		t.Fatal(err)
	}
	stale, err := tr.NewLeaf("s-gone")
	if err != nil {
		t.Fatal(err)
	}
	job := startProcessIn(t, stale)
	newScriptManager(t, "", func(c *Config) { c.StateDir, c.Cgroups = state, cgroup.Required })
	if alive(job.Pid) {
		t.Error("a process left in a gone runner's leaf survived the start")
	}
	if _, err := os.Stat(stale.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the gone runner's leaf is still there: %v", err)
	}
	job.Wait()
}

// startProcessIn starts a sleeper in leaf l, as a runner's job.
func startProcessIn(t *testing.T, l *cgroup.Leaf) *os.Process {
	t.Helper()
	f, err := l.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := os.StartProcess(os.Args[0], []string{os.Args[0]}, &os.ProcAttr{
		Env: append(os.Environ(), sleepEnv+"=1"),
		Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill(); p.Wait() })
	return p
}

// Limits asked for land in each runner's leaf where the kernel offers
// their controllers; where it does not (a hybrid hierarchy whose
// controllers are bound to cgroup v1), required refuses to start, naming
// the controller, and auto starts with a warning.
func TestRunnerLimitsLandOrAreReportedUnavailable(t *testing.T) {
	state := cgroupState(t)
	limits := cgroup.Limits{MemoryMax: 512 << 20, PidsMax: 256}
	probe, err := cgroup.Open(cgroup.SubtreeName(state))
	if err != nil {
		t.Fatal(err)
	}
	offered := probe.SetLimits(limits)

	cfg := Config{StateDir: state, RunnerPath: "runner", Cgroups: cgroup.Required, RunnerLimits: limits}
	m, err := New(cfg)
	if offered != nil {
		if !errors.Is(err, cgroup.ErrUnavailable) || !strings.Contains(err.Error(), "controller") {
			t.Fatalf("New with limits the kernel does not offer = %v, want a cgroup.ErrUnavailable naming the controller", err)
		}
		t.Logf("required: %v", err)
		core, logs := observer.New(zap.InfoLevel)
		cfg.Cgroups, cfg.Logger = cgroup.Auto, zap.New(core)
		if m, err = New(cfg); err != nil {
			t.Fatalf("auto with limits unavailable: %v", err)
		}
		defer m.Shutdown(context.Background())
		if w := logs.FilterMessage("runner limits are not applied").FilterLevelExact(zap.WarnLevel).All(); len(w) != 1 {
			t.Errorf("auto logged %d warnings that the limits are not applied, want 1: %v", len(w), logs.All())
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	l, err := m.newLeaf("limited")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Sweep(time.Second)
	for file, want := range map[string]string{"memory.max": "536870912", "pids.max": "256"} {
		if got, err := os.ReadFile(filepath.Join(l.Dir(), file)); err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("%s = %q, %v; want %s", file, got, err, want)
		}
	}
}
