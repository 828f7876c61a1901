package term

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func readProcStat(pid int) (procStat, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	st, err := parseStat(raw)
	return st, err == nil
}

// running reports whether pid is a live process. A zombie is dead: it only
// waits for whichever ancestor adopted it to collect its status.
func running(pid int) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	st, ok := readProcStat(pid)
	return ok && st.state != 'Z'
}

// exits reports whether pid stops running within patience. A killed
// process lets go of the terminal before the kernel finishes turning it
// into a zombie, so the end of a terminal can briefly precede it.
func exits(pid int) bool {
	deadline := time.Now().Add(patience)
	for running(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// ignoresHangup reports whether pid has SIGHUP ignored.
func ignoresHangup(t *testing.T, pid int) bool {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^SigIgn:\s*([0-9a-f]+)$`).FindSubmatch(status)
	if m == nil {
		t.Fatalf("no SigIgn in /proc/%d/status", pid)
	}
	mask, err := strconv.ParseUint(string(m[1]), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return mask&(1<<(unix.SIGHUP-1)) != 0
}

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// pidsAfter extracts the numbers a script printed as "label:PID".
func pidsAfter(t *testing.T, out string, labels ...string) []int {
	t.Helper()
	var pids []int
	for _, l := range labels {
		m := regexp.MustCompile(l + `:(\d+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no %s pid in %q", l, out)
		}
		pid, _ := strconv.Atoi(m[1])
		pids = append(pids, pid)
	}
	return pids
}

func TestCloseLeavesNoProcessFileOrGoroutine(t *testing.T) {
	// Each script leaves a job in a process group of its own (job control is
	// on) and a job that ignores SIGHUP and lets go of the terminal, so
	// neither the process group nor the terminal's hangup reaches it.
	// A job inherits SIGHUP ignored from the moment it is forked.
	const jobs = `
		set -m
		sleep 1000 & echo "job:$!"
		trap '' HUP
		sleep 1000 </dev/null >/dev/null 2>&1 & echo "deaf:$!"
		echo "leader:$$"
	`
	tests := []struct {
		name   string
		script string
	}{
		{"program hangs up", jobs + `trap - HUP; echo ready; wait`},
		{"program ignores hangup", jobs + `echo ready; wait`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fds := openFDs(t)
			h := NewHub(HubOptions{KillGrace: 200 * time.Millisecond})
			t.Cleanup(func() { h.Close() }) // if the test stops early; Close is idempotent
			_, g, r := attach(t, h, AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner, Command: shell(tt.script)})
			out := r.waitForText(t, "ready")
			pids := pidsAfter(t, out, "leader", "job", "deaf")
			if pids[0] != g.Pid {
				t.Fatalf("program reports pid %d, grant %d", pids[0], g.Pid)
			}
			// Make sure the test exercises what it claims to.
			if st, _ := readProcStat(pids[1]); st.pgrp == g.Pid {
				t.Fatalf("job %d shares the program's process group; the session sweep goes untested", pids[1])
			}
			if !ignoresHangup(t, pids[2]) {
				t.Fatalf("job %d does not ignore SIGHUP; the SIGKILL escalation goes untested", pids[2])
			}

			if err := h.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			for _, pid := range pids {
				if !exits(pid) {
					t.Errorf("process %d survived Close", pid)
				}
			}
			if members, err := sessionMembers(g.Pid); err != nil || len(members) > 0 {
				t.Errorf("session members %v (%v) survived Close", members, err)
			}
			if got := openFDs(t); got != fds {
				t.Errorf("%d open file descriptors after Close, %d before", got, fds)
			}
			goleak.VerifyNone(t)
		})
	}
}

func TestProgramExitEndsItsSession(t *testing.T) {
	tests := []struct {
		name   string
		script string
	}{
		{"leftover job", `sleep 1000 & echo "job:$!"; exit 4`},
		{"leftover job ignoring hangup", `trap '' HUP; sleep 1000 & echo "job:$!"; exit 4`},
		{"leftover job in its own group", `set -m; sleep 1000 & echo "job:$!"; exit 4`},
		{"leftover job off the terminal ignoring hangup", `trap '' HUP; sleep 1000 </dev/null >/dev/null 2>&1 & echo "job:$!"; exit 4`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHub(t, HubOptions{KillGrace: 200 * time.Millisecond})
			_, _, r := attach(t, h, AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner, Command: shell(tt.script)})
			// Exit is only delivered once nothing holds the terminal open.
			r.checkExit(t, "owner", 4, "")
			job := pidsAfter(t, r.output(), "job")[0]
			if !exits(job) {
				t.Errorf("job %d outlived the program", job)
			}
		})
	}
}

// crashHelperEnv makes the test binary act as a runner that starts a
// terminal and then waits to be killed.
const crashHelperEnv = "TERM_TEST_CRASH_HELPER"

func TestRunnerCrashTakesTerminalDown(t *testing.T) {
	if os.Getenv(crashHelperEnv) != "" {
		runCrashHelper()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunnerCrashTakesTerminalDown$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()

	var seen strings.Builder
	lines := bufio.NewScanner(stdout)
	for !strings.Contains(seen.String(), "ready") && lines.Scan() {
		seen.WriteString(lines.Text() + "\n")
	}
	pids := pidsAfter(t, seen.String(), "leader", "job")

	// No Close, no deferred cleanup: the runner just dies.
	if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if !exits(pid) {
			t.Errorf("process %d outlived the killed runner", pid)
		}
	}
}

// runCrashHelper starts a terminal whose program and job report their pids
// on stdout, then blocks until the parent test kills the process. The
// program ignores the hangup the runner's death causes, so only the
// death signal the hub arranged can end it; the job does not.
func runCrashHelper() {
	h := NewHub(HubOptions{})
	r := newRecorder()
	if _, _, err := h.Attach(context.Background(), AttachRequest{TermID: "t", ClientID: "c", Role: RoleOwner,
		Command: shell(`sleep 1000 & echo "job:$!"; trap '' HUP; echo "leader:$$"; echo ready; wait`)}, r); err != nil {
		fmt.Println("attach:", err)
		os.Exit(1)
	}
	for !strings.Contains(r.output(), "ready") {
		<-r.changed
	}
	fmt.Println(r.output())
	select {}
}
