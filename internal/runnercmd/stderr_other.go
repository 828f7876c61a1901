//go:build !linux

package runnercmd

import "golang.org/x/sys/unix"

// moveToStderr makes fd the process's standard error (descriptor 2).
func moveToStderr(fd int) error { return unix.Dup2(fd, 2) }
