//go:build !linux

package term

import "errors"

// signalsStopAtReap is false where the program is reaped before its session
// is hung up: the group is still signalled after the reap, as long as it
// has a live member (sessionAlive), which leaves a window in which its id
// could be reused.
const signalsStopAtReap = false

// waitExited cannot wait without reaping here.
func waitExited(int) error {
	return errors.New("waiting without reaping is only implemented on Linux")
}
