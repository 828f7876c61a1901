package unixsock

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// reachLong calls fn with path's folder reached through a descriptor,
// /proc/self/fd/N/NAME, which fits a socket address.
func reachLong(path string, fn func(name string) error) error {
	dir, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket %s: open its folder: %w", path, err)
	}
	defer unix.Close(dir)
	name := fmt.Sprintf("/proc/self/fd/%d/%s", dir, filepath.Base(path))
	if len(name) > maxPath {
		return fmt.Errorf("socket %s: its name is too long", path)
	}
	if err := fn(name); err != nil {
		return fmt.Errorf("socket %s: %w", path, err)
	}
	return nil
}
