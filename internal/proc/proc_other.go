//go:build !linux

package proc

import "syscall"

// On systems without a parent-death signal, children notice their parent's
// death by their stdin closing.
func setDeathSignal(*syscall.SysProcAttr) {}
