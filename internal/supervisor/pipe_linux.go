package supervisor

import (
	"os"

	"golang.org/x/sys/unix"
)

// runnerPipeBytes is the capacity asked for the pipe of a runner's stdout.
// A program writing as fast as its terminal allows fills the default 64 KiB
// with two frames of output, and then runner and supervisor take turns
// waking each other; with room for many, each reads and writes whole
// batches. Linux caps it (fs.pipe-max-size, 1 MiB by default).
const runnerPipeBytes = 1 << 20

// growPipe asks for a larger pipe buffer. It is only a hint: on failure
// (a lower cap, the user's pipe quota spent) the pipe keeps its size.
func growPipe(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		unix.FcntlInt(fd, unix.F_SETPIPE_SZ, runnerPipeBytes)
	})
}
