// Package unixsock listens on and dials Unix sockets by paths of any
// length. A socket address holds at most 107 bytes of path on Linux, and a
// session folder under a deep state folder (or a test's temporary folder)
// is longer than that; such a path is reached through the folder's
// descriptor instead, as /proc/self/fd/N/NAME.
package unixsock

import (
	"context"
	"net"
	"os"
)

// maxPath is the longest path a socket address holds (sun_path less its
// terminating NUL).
const maxPath = 107

// Listener is a Unix socket listener that removes its socket file when
// closed.
type Listener struct {
	*net.UnixListener
	path string
}

// Close stops listening and removes the socket file.
func (l *Listener) Close() error {
	err := l.UnixListener.Close()
	os.Remove(l.path)
	return err
}

// Listen listens on a new Unix stream socket at path.
func Listen(path string) (*Listener, error) {
	var ln *net.UnixListener
	err := reach(path, func(name string) error {
		var err error
		ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
		return err
	})
	if err != nil {
		return nil, err
	}
	// Removed by its real path: the short name only lived as long as the
	// folder's descriptor.
	ln.SetUnlinkOnClose(false)
	return &Listener{UnixListener: ln, path: path}, nil
}

// Dial connects to the Unix stream socket at path.
func Dial(ctx context.Context, path string) (*net.UnixConn, error) {
	var c net.Conn
	err := reach(path, func(name string) error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, "unix", name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return c.(*net.UnixConn), nil
}

// reach calls fn with a name for path that fits a socket address.
func reach(path string, fn func(name string) error) error {
	if len(path) <= maxPath {
		return fn(path)
	}
	return reachLong(path, fn)
}
