//go:build !linux

package proc

import (
	"errors"
	"net"
	"syscall"
)

// On systems without a parent-death signal, children notice their parent's
// death by their stdin closing.
func setDeathSignal(*syscall.SysProcAttr) {}

// KillOwnGroup SIGKILLs the other processes of the group this process
// leads; here, without /proc to list them, the whole group but for this
// process cannot be told apart, so it does nothing and reports 0.
func KillOwnGroup() int { return 0 }

// PeerCredentials is not known here: it always fails, so a check built on
// it refuses every peer.
func PeerCredentials(c *net.UnixConn) (pid, uid int, err error) {
	return 0, 0, errors.New("peer credentials are not available on this system")
}
