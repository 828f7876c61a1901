//go:build !linux

package sdnotify

// monotonicUsec has no meaning where there is no systemd.
func monotonicUsec() int64 { return 0 }
