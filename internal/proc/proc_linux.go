package proc

import (
	"os"
	"strconv"
	"syscall"
)

func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// KillOwnGroup SIGKILLs every other process of the group this process
// leads, and reports how many it found; it does nothing when this process
// leads no group. A runner whose supervisor is gone calls it on its way
// out, as the supervisor would have swept the group after its exit.
func KillOwnGroup() int {
	self := os.Getpid()
	if syscall.Getpgrp() != self {
		return 0
	}
	des, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil || pid == self {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == self {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}
