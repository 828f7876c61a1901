//go:build !linux

package term

import "golang.org/x/sys/unix"

// sessionMembers has no portable way to list a session; signalling the
// leader's process group covers everything but jobs moved to other groups.
func sessionMembers(int) ([]int, error) { return nil, nil }

// sessionAlive reports whether the leader's process group still has a
// member, the most that can be known portably.
func sessionAlive(sid int) bool { return unix.Kill(-sid, 0) == nil }
