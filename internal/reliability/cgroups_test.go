package reliability

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/cgroup"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/testsupervisor"
	"github.com/corral-dev/corral/pkg/client"
)

// startEscapingJob opens a terminal in session id whose job leaves the
// runner's process group and session and ignores SIGHUP
// (testenv.EscapingJob), and returns the job's pid and the terminal; the
// job is killed when the test ends, should it survive.
func startEscapingJob(t *testing.T, d *daemon, id, termID string) (int, *client.Terminal) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "job.pid")
	term, err := d.c.AttachTerminal(ctx(t), id, client.TermOptions{TermID: termID, Command: testenv.EscapingJob(pidFile)})
	if err != nil {
		t.Fatalf("terminal: %v\n%s", err, d.Log())
	}
	deadline := time.Now().Add(time.Minute)
	for {
		raw, err := os.ReadFile(pidFile)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && perr == nil && pid > 1 {
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			return pid, term
		}
		if time.Now().After(deadline) {
			term.Close()
			t.Fatalf("the terminal's job never started\n%s", d.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cgroupDir is the folder of process pid's cgroup (v2), empty when it
// cannot be read. Only hybrid (/sys/fs/cgroup/unified) and unified
// (/sys/fs/cgroup) layouts are looked at, which is where the checks run.
func cgroupDir(pid int) string {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(raw)) {
		if rel, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			for _, mount := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
				if dir := filepath.Join(mount, rel); fileExists(filepath.Join(dir, "cgroup.procs")) {
					return dir
				}
			}
		}
	}
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestRunnerKill9WithEscapedJobs kills, again and again, the runner of a
// session whose terminal started a job that left the runner's process
// group and session (setsid) and ignores SIGHUP: the supervisor's sweep
// of the runner's cgroup must take the job. Counted: jobs alive once the
// runner's leaf is gone, and leaves left.
func TestRunnerKill9WithEscapedJobs(t *testing.T) {
	testenv.NeedCgroup2(t, cgroup.Check())
	rounds := size(10, 1000)
	d := startDaemon(t, restartScenario)
	id := d.create(t, "review")
	survivors, leavesLeft := 0, 0
	for round := range rounds {
		// A terminal of its own each round, read to its end (the
		// runner's death) and closed, as a client does.
		job, term := startEscapingJob(t, d, id, fmt.Sprintf("job%d", round))
		pid := d.runnerPID(id)
		leaf := cgroupDir(pid)
		if pid == 0 || leaf == "" || cgroupDir(job) != leaf {
			t.Fatalf("runner %d (cgroup %q) and its job %d (cgroup %q) do not share a leaf", pid, leaf, job, cgroupDir(job))
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := term.Next(ctx(t)); err != nil {
				break
			}
		}
		term.Close()
		// The leaf goes once the supervisor swept it; the job must be
		// gone by then.
		if !waitFor(time.Minute, func() bool { return !fileExists(leaf) }) {
			leavesLeft++
		}
		if !testsupervisor.Gone(job) {
			survivors++
		}
	}
	pass := survivors == 0 && leavesLeft == 0
	report.Record(Figure{
		Scenario: "Runner kill -9 with a job that left its process group",
		Done:     fmt.Sprintf("%d kills of a runner whose terminal started a job with setsid that ignores SIGHUP", rounds),
		Found:    fmt.Sprintf("%d jobs survived; %d runner cgroups left", survivors, leavesLeft),
		Pass:     pass,
	})
	if !pass {
		t.Fatalf("%d of %d escaped jobs survived their runner's kill -9; %d leaves left\n%s", survivors, rounds, leavesLeft, d.Log())
	}
}

// TestRunnerWithoutSupervisorLeavesNoEscapedJob kills the supervisor of a
// session whose terminal started a job that left the runner's process
// group, and starts none: the runner stops after its grace and, with no
// supervisor to sweep its cgroup, kills the rest of it itself. The next
// supervisor removes the empty leaf as it starts.
func TestRunnerWithoutSupervisorLeavesNoEscapedJob(t *testing.T) {
	testenv.NeedCgroup2(t, cgroup.Check())
	d := startKeepingDaemon(t, restartScenario, 2*time.Second)
	id := d.create(t, "review")
	if _, err := sendAcked(t, d, id, "held"); err != nil {
		t.Fatal(err)
	}
	if _, err := waitStaged(d, id, 1); err != nil {
		t.Fatal(err)
	}
	job, term := startEscapingJob(t, d, id, "job")
	defer term.Close()
	pid := d.runnerPID(id)
	leaf := cgroupDir(pid)
	if pid == 0 || leaf == "" || cgroupDir(job) != leaf {
		t.Fatalf("runner %d (cgroup %q) and its job %d (cgroup %q) do not share a leaf", pid, leaf, job, cgroupDir(job))
	}
	d.Kill()
	if !testsupervisor.WaitGone(pid, time.Minute) {
		t.Fatalf("runner %d still runs a minute after its supervisor died", pid)
	}
	// The runner waited for the rest of its leaf to die before it exited.
	if !testsupervisor.Gone(job) {
		t.Fatalf("the job %d outlived its runner, which had no supervisor", job)
	}
	d.Restart()
	if _, err := os.Stat(leaf); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stopped runner's empty leaf is still there after the next supervisor started: %v", err)
	}
}

// waitFor waits up to limit for cond.
func waitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
