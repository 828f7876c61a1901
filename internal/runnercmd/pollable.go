package runnercmd

import (
	"os"

	"golang.org/x/sys/unix"
)

// pollableStdin returns the runner's stdin as a file served by the
// runtime's poller when it is a pipe (the supervisor's), and os.Stdin
// otherwise.
//
// The runtime reads an inherited blocking pipe with blocking system calls:
// the goroutine reading stdin then sits in read(2) on a thread of its own,
// and each message that arrives (a terminal's flow-control
// acknowledgements come hundreds of times a second in a flood) has to win
// a P back from the goroutine reading the pseudo-terminal. Served by the
// poller, the message is picked up by a thread that is running anyway: a
// terminal flood reached its client 6% faster (docs/performance.md).
//
// Only a pipe: O_NONBLOCK belongs to the open file, which for a terminal
// is shared with whoever else uses it (the shell that started a runner by
// hand), while the read end of the supervisor's pipe is the runner's own.
func pollableStdin() *os.File {
	var st unix.Stat_t
	if unix.Fstat(0, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO || unix.SetNonblock(0, true) != nil {
		return os.Stdin
	}
	// A non-blocking descriptor given to NewFile is registered with the
	// poller. os.Stdin is not read again.
	return os.NewFile(0, "stdin")
}
