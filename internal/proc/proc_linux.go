package proc

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
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

// PeerCredentials returns the pid and uid of the process on the other end
// of a Unix socket connection, as the kernel recorded them when it was
// made (SO_PEERCRED): for an accepted connection the process that
// connected, for a dialled one the process that listens.
func PeerCredentials(c *net.UnixConn) (pid, uid int, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := rc.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if credErr != nil {
		return 0, 0, fmt.Errorf("peer credentials: %w", credErr)
	}
	return int(cred.Pid), int(cred.Uid), nil
}
