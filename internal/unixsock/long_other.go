//go:build !linux

package unixsock

import "fmt"

// reachLong refuses: without /proc there is no shorter name for path.
func reachLong(path string, _ func(name string) error) error {
	return fmt.Errorf("socket %s: its path is longer than a socket address holds (%d bytes)", path, maxPath)
}
