package term

import (
	"errors"

	"golang.org/x/sys/unix"
)

// signalsStopAtReap: the program is reaped only after its session was
// ended, so nothing of the session is signalled after the reap.
const signalsStopAtReap = true

// waitExited waits until process pid, a child, has exited, and leaves it
// unreaped: its zombie keeps the pid, and with it the process group and
// session ids the pid names, from being reused until the caller reaps it.
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
