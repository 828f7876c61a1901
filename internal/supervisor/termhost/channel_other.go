//go:build !linux

package termhost

import (
	"errors"
	"net"
	"os"
)

// NewMasterChannel fails where runners cannot hand terminals over: their
// output then comes over the runner's link.
func NewMasterChannel() (*net.UnixConn, *os.File, error) {
	return nil, nil, errors.New("terminal hand-over is only implemented on Linux")
}

// ReceiveMaster fails: no runner here hands a terminal over.
func ReceiveMaster(*net.UnixConn, string) (*os.File, error) {
	return nil, errors.New("terminal hand-over is only implemented on Linux")
}
