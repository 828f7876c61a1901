package termhost

import (
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// masterWait bounds the wait for a terminal's master on the hand-over
// channel. The runner sends it before its term.opened, so it is there
// already; a longer wait means the runner broke the protocol.
const masterWait = 5 * time.Second

// NewMasterChannel returns a connected pair of Unix sockets: the
// supervisor's end, on which a runner hands over the masters of the
// terminals it exports, and the runner's, to pass it as --term-fds.
// SOCK_SEQPACKET keeps each hand-over's payload, the terminal id, whole.
func NewMasterChannel() (*net.UnixConn, *os.File, error) {
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

// ReceiveMaster takes the master of terminal termID from the channel. The
// descriptor is close-on-exec from the start, so a runner started
// meanwhile cannot inherit it. A master sent for an export whose answer
// came too late for its caller is closed and skipped.
func ReceiveMaster(conn *net.UnixConn, termID string) (*os.File, error) {
	if err := conn.SetReadDeadline(time.Now().Add(masterWait)); err != nil {
		return nil, fmt.Errorf("receive terminal %s: %w", termID, err)
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("receive terminal %s: %w", termID, err)
	}
	for {
		payload, fd, err := receiveOne(rc, len(termID)+1)
		if err != nil {
			return nil, fmt.Errorf("receive terminal %s: %w", termID, err)
		}
		if payload == termID {
			// The descriptor shares the runner's open file,
			// non-blocking, so the runtime's poller serves it.
			return os.NewFile(uintptr(fd), "ptmx:"+termID), nil
		}
		unix.Close(fd)
	}
}

// receiveOne reads one hand-over: its payload (up to max bytes) and the
// one descriptor it must carry.
func receiveOne(rc syscall.RawConn, max int) (string, int, error) {
	payload := make([]byte, max)
	oob := make([]byte, unix.CmsgSpace(4))
	var n, oobn int
	var recvErr error
	err := rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, recvErr = unix.Recvmsg(int(fd), payload, oob, unix.MSG_CMSG_CLOEXEC)
		return recvErr != unix.EAGAIN
	})
	if err == nil {
		err = recvErr
	}
	if err != nil {
		return "", -1, err
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
		fds, _ = unix.ParseUnixRights(&msgs[0])
	}
	if len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return "", -1, fmt.Errorf("the runner sent %q with %d descriptors, want 1", payload[:n], len(fds))
	}
	return string(payload[:n]), fds[0], nil
}
