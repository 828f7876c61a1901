//go:build !linux

package atomicfile

import "golang.org/x/sys/unix"

// openBeneath has no one-call form outside Linux: the caller walks.
func openBeneath(int, string) (int, error) { return -1, unix.ENOSYS }
