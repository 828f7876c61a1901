//go:build !linux

package supervisor

import (
	"errors"
	"net"
	"os"
)

// newMasterChannel fails where runners cannot hand terminals over: their
// output then comes over the runner's link.
func newMasterChannel() (*net.UnixConn, *os.File, error) {
	return nil, nil, errors.New("terminal hand-over is only implemented on Linux")
}

func receiveMaster(*net.UnixConn, string) (*os.File, error) {
	return nil, errors.New("terminal hand-over is only implemented on Linux")
}
