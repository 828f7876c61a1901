package term

import "syscall"

// sessionLeaderAttr makes the child the leader of a new session with the
// pseudo-terminal (its stdin) as controlling terminal, so the whole tree it
// starts can be signalled as one. Pdeathsig kills it if the runner dies
// without cleaning up, and the death of a session leader makes the kernel
// hang up its foreground process group; the runner's death alone would
// only hang up the leader, which may ignore it. Pdeathsig follows the OS
// thread that forked, which the Go runtime only retires for goroutines that
// lock a thread and never unlock it; nothing on the path to Start does.
func sessionLeaderAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Setsid:    true,
		Setctty:   true,
		Ctty:      0,
		Pdeathsig: syscall.SIGKILL,
	}
}
