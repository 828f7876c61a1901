package supervisor

import (
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// masterWait bounds the wait for a terminal's master on the hand-over
// channel. The runner sends it before its term.opened, so it is there
// already; a longer wait means the runner broke the protocol.
const masterWait = 5 * time.Second

// newMasterChannel returns a connected pair of Unix sockets: the
// supervisor's end, on which a runner hands over the masters of the
// terminals it exports, and the runner's, to pass it as --term-fds.
// SOCK_SEQPACKET keeps each hand-over's payload, the terminal id, whole.
func newMasterChannel() (*net.UnixConn, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("terminal hand-over channel: %w", err)
	}
	ours := os.NewFile(uintptr(fds[0]), "term-fds")
	defer ours.Close()
	c, err := net.FileConn(ours)
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("terminal hand-over channel: %w", err)
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "term-fds"), nil
}

// receiveMaster takes the master of terminal termID from the channel. The
// descriptor is close-on-exec from the start, so a runner started
// meanwhile cannot inherit it.
func receiveMaster(conn *net.UnixConn, termID string) (*os.File, error) {
	if err := conn.SetReadDeadline(time.Now().Add(masterWait)); err != nil {
		return nil, fmt.Errorf("receive terminal %s: %w", termID, err)
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("receive terminal %s: %w", termID, err)
	}
	payload := make([]byte, len(termID)+1)
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn int
	var recvErr error
	err = rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, recvErr = unix.Recvmsg(int(fd), payload, oob, unix.MSG_CMSG_CLOEXEC)
		return recvErr != unix.EAGAIN
	})
	if err == nil {
		err = recvErr
	}
	if err != nil {
		return nil, fmt.Errorf("receive terminal %s: %w", termID, err)
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
		fds, _ = unix.ParseUnixRights(&msgs[0])
	}
	if len(fds) != 1 || string(payload[:n]) != termID {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("receive terminal %s: the runner sent %q with %d descriptors", termID, payload[:n], len(fds))
	}
	// The descriptor shares the runner's open file, non-blocking, so the
	// runtime's poller serves it.
	return os.NewFile(uintptr(fds[0]), "ptmx:"+termID), nil
}
