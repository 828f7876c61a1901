package testsupervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/proc"
)

// Runners lists the live processes of the runner binary at runner whose
// working folder lies under dir: the runners of the state folders under
// dir (a runner works in its session's folder).
func Runners(runner, dir string) []int {
	if real, err := filepath.EvalSymlinks(runner); err == nil {
		runner = real
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	des, _ := os.ReadDir("/proc")
	var pids []int
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != runner {
			continue
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) && !Gone(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// StopRunners stops the runners of the state folders under dir as their
// supervisor would (SIGTERM), kills the process group of any still there
// after 20 s, and waits for them to be gone. It is the last cleanup of a
// test whose supervisor left runners running on purpose (serve
// --runner-grace): without it they would outlive the test, and write into
// its removed folder.
func StopRunners(runner, dir string) {
	pids := Runners(runner, dir)
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGTERM)
	}
	for _, pid := range pids {
		if !WaitGone(pid, 20*time.Second) {
			proc.KillGroup(pid)
			WaitGone(pid, 20*time.Second)
		}
	}
}

// WaitGone waits up to limit for process pid to end (or be a zombie).
func WaitGone(pid int, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		if syscall.Kill(pid, 0) != nil || Gone(pid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Gone reports whether process pid has ended: it is not there, or is a
// zombie waiting for its parent.
func Gone(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) STATE ...: comm may hold spaces and parentheses.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}
