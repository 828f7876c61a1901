package term

import (
	"errors"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// While output streams in, the reader holds a batch of at least lingerMin
// bytes back for up to lingerFor, or until it reaches lingerBytes, so that
// a flood crosses to its clients in a few large writes instead of one per
// 4 KiB read: every write costs a wake-up of each process it passes
// through, and those wake-ups, not the bytes, are most of a terminal's cost
// past the pseudo-terminal. A small batch (a keystroke's echo, a prompt)
// and output after a quiet spell of 2×lingerFor go at once. A millisecond
// is well under a screen refresh.
const (
	lingerFor   = time.Millisecond
	lingerMin   = 2 << 10
	lingerBytes = 64 << 10
)

// OutputReader reads a pseudo-terminal's master in batches. The runner's
// hub reads its terminals with one; so does the supervisor, for a terminal
// whose master the runner handed it (Hub.Export).
//
// The loop runs inside one poller read (a new one after each batch held
// back until its deadline): once a read finds the terminal empty, it waits
// for output rather than first reading again, as a loop of separate poller
// reads would. A read of an empty pseudo-terminal is not free: the kernel
// first waits for its worker to hand over whatever it holds.
type OutputReader struct {
	// Master is the pseudo-terminal's master, non-blocking and served by
	// the runtime's poller. Run sets and clears its read deadline.
	Master *os.File
	// Buf holds a batch; its length bounds one.
	Buf []byte
	// Deliver takes each batch. p is Buf's front, reused once Deliver
	// returns.
	Deliver func(p []byte)
	// Ready, when set, is called before each batch starts: it may wait
	// until the consumers have room, and false ends Run with os.ErrClosed.
	Ready func() bool
	// Pause, when set, is checked after each batch is delivered and when
	// the read deadline passes: true ends Run with nil, leaving the rest of
	// the output in the terminal for the next Run (or another reader). A
	// caller that sets the condition sets the master's read deadline to
	// now, so a reader waiting for output notices at once.
	Pause func() bool
}

// Run reads until Pause says so (nil), the terminal side has no holders
// left (EIO: the program and its session are gone), or the master is
// closed. What was read before either goes out first.
func (r *OutputReader) Run() error {
	raw, err := r.Master.SyscallConn()
	if err != nil {
		return err
	}
	var (
		readErr error
		paused  bool
		batch   pendingOutput
	)
	flush := func() {
		if batch.n > 0 {
			r.Deliver(r.Buf[:batch.n])
			batch.n = 0
			batch.lastFlush = time.Now()
		}
		paused = r.Pause != nil && r.Pause()
	}
	for {
		err = raw.Read(func(fd uintptr) bool {
			for {
				if batch.n == 0 && r.Ready != nil && !r.Ready() {
					readErr = os.ErrClosed
					return true
				}
				n, err := readBatch(int(fd), r.Buf[batch.n:])
				batch.n += n
				switch {
				case err == nil:
					// The batch is full; more may be waiting.
					flush()
					if paused {
						return true
					}
				case errors.Is(err, unix.EAGAIN):
					if batch.hold(time.Now()) {
						if !batch.deadline {
							batch.deadline = true
							r.Master.SetReadDeadline(time.Now().Add(lingerFor))
						}
					} else {
						flush()
						if paused {
							return true
						}
					}
					// Wait for the poller (or the deadline). Output
					// that comes from now on wakes it, and so does
					// output that came while this batch was being
					// read or delivered.
					return false
				default:
					readErr = err
					return true
				}
			}
		})
		if !errors.Is(err, os.ErrDeadlineExceeded) || paused {
			break
		}
		batch.deadline = false
		r.Master.SetReadDeadline(time.Time{})
		if flush(); paused {
			break
		}
	}
	if paused {
		return nil
	}
	// What was read before the program exited (EIO) or the master closed
	// still goes out.
	if batch.n > 0 {
		r.Deliver(r.Buf[:batch.n])
	}
	if err == nil {
		err = readErr
	}
	return err
}

// pendingOutput is the reader's batch: bytes read and not yet delivered.
type pendingOutput struct {
	n         int       // bytes held, at the front of the read buffer
	lastFlush time.Time // when a batch last went out
	deadline  bool      // a read deadline bounds how long the batch waits
}

// hold reports whether the batch, when the terminal has no more output for
// now, waits for more (streaming) rather than going out (an echo, output
// after a quiet spell, or a batch big enough).
func (b *pendingOutput) hold(now time.Time) bool {
	return b.n >= lingerMin && b.n < lingerBytes && (b.deadline || now.Sub(b.lastFlush) < 2*lingerFor)
}

// readBatch reads all the output that is ready into buf, until buf is full
// or a read finds none, and says why it stopped short: unix.EAGAIN when the
// terminal had no more, or the failure of a read. The terminal hands out at
// most 4 KiB per read, so a program writing fast would otherwise cost a
// delivery and a message per 4 KiB; taking all that is there batches a
// flood without delaying a lone keystroke's echo.
func readBatch(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		switch {
		case m > 0:
			n += m
		case err == unix.EINTR:
		case err != nil:
			return n, err
		default:
			return n, io.EOF
		}
	}
	return n, nil
}
