package term

import (
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// startPTY starts cmd as the leader of a new session whose controlling
// terminal is a fresh pseudo-terminal of the given size, and returns the
// pseudo-terminal's master side.
func startPTY(cmd *exec.Cmd, cols, rows uint16) (*os.File, error) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("open pty: %w", err)
	}
	// The child holds its own copy of the terminal side once started.
	defer tty.Close()

	master, err := pollable(ptmx)
	if err != nil {
		return nil, err
	}
	if err := setWinsize(master, cols, rows); err != nil {
		master.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = sessionLeaderAttr()
	if err := cmd.Start(); err != nil {
		master.Close()
		return nil, err
	}
	return master, nil
}

// pollable replaces f, whose descriptor the pty package left in blocking
// mode, with a non-blocking duplicate served by the runtime's poller. Only
// then does closing the master interrupt a Read blocked on it, and only then
// do write deadlines work; a blocking Read would pin its goroutine until
// every holder of the terminal side let go.
func pollable(f *os.File) (*os.File, error) {
	defer f.Close()
	var fd int
	var dupErr error
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("pty master: %w", err)
	}
	if err := rc.Control(func(old uintptr) {
		fd, dupErr = unix.FcntlInt(old, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, fmt.Errorf("pty master: %w", err)
	}
	if dupErr != nil {
		return nil, fmt.Errorf("duplicate pty master: %w", dupErr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pty master: set non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// Type writes p into the terminal whose master is master (the hub's, or one
// it handed over, Hub.Export), giving up after timeout: a program that
// reads none of its input fills the terminal's buffer, and a write would
// then wait for ever.
func Type(master *os.File, p []byte, timeout time.Duration) error {
	if err := master.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	_, err := master.Write(p)
	return err
}

// Resize sets the size of the terminal whose master is master (one the
// hub handed over, Hub.Export); the program gets SIGWINCH.
func Resize(master *os.File, cols, rows uint16) error { return setWinsize(master, cols, rows) }

// setWinsize sets the terminal size through the poller-owned descriptor;
// pty.Setsize would put the descriptor back into blocking mode.
func setWinsize(master *os.File, cols, rows uint16) error {
	rc, err := master.SyscallConn()
	if err != nil {
		return fmt.Errorf("set terminal size: %w", err)
	}
	var ioctlErr error
	if err := rc.Control(func(fd uintptr) {
		ioctlErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows})
	}); err != nil {
		return fmt.Errorf("set terminal size: %w", err)
	}
	if ioctlErr != nil {
		return fmt.Errorf("set terminal size to %dx%d: %w", cols, rows, ioctlErr)
	}
	return nil
}
