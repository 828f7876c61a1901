//go:build !linux

package term

import "syscall"

// sessionLeaderAttr makes the child the leader of a new session with the
// pseudo-terminal (its stdin) as controlling terminal, so the whole tree it
// starts can be signalled as one. Without Pdeathsig, a runner that dies
// without cleaning up leaves it to the kernel's hangup of the terminal,
// when the master side closes, to end the program.
func sessionLeaderAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setsid:  true,
		Setctty: true,
		Ctty:    0,
	}
}
