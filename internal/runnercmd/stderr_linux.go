package runnercmd

import "golang.org/x/sys/unix"

// moveToStderr makes fd the process's standard error (descriptor 2).
func moveToStderr(fd int) error { return unix.Dup3(fd, 2, 0) }
