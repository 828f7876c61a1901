package hunks

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/internal/atomicfile"
)

// newFileMode is the mode of a file that WriteFile creates.
const newFileMode fs.FileMode = 0o644

// ReadFile reads the file at path as a Snapshot (absent when it does not
// exist) with its mode bits. A symlink is followed: the returned path is the
// file it points to, which is what WriteFile must replace.
func ReadFile(path string) (real string, s Snapshot, mode fs.FileMode, err error) {
	real = path
	if _, err := os.Lstat(path); err == nil {
		if real, err = filepath.EvalSymlinks(path); err != nil {
			return "", Snapshot{}, 0, fmt.Errorf("resolve %s: %w", path, err)
		}
	}
	info, err := os.Stat(real)
	if errors.Is(err, fs.ErrNotExist) {
		return real, Snapshot{}, newFileMode, nil
	}
	if err != nil {
		return "", Snapshot{}, 0, err
	}
	if !info.Mode().IsRegular() {
		return "", Snapshot{}, 0, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return "", Snapshot{}, 0, err
	}
	return real, Present(data), info.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky), nil
}

// WriteFile puts result where current was: it replaces the file atomically,
// creates it (and its folders), removes it, or leaves it alone when nothing
// changed. It refuses a file that is, or has become, a symbolic link or one
// with other hard links. Writes on behalf of an agent use WriteFileIn, which
// also keeps every folder on the way inside the worktree.
func WriteFile(path string, current, result Snapshot, mode fs.FileMode) error {
	dir := filepath.Dir(path)
	if result.Exists {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return WriteFileIn(dir, path, current, result, mode)
}

// WriteFileIn is WriteFile for a path that must stay inside root (a
// session's worktree): the path is resolved from root without following a
// symbolic link, so a file or folder an agent swapped for a link after the
// edit was judged cannot redirect the write. Such a path is refused with an
// error that errors.Is matches to atomicfile.ErrUnsafePath.
func WriteFileIn(root, path string, current, result Snapshot, mode fs.FileMode) error {
	switch {
	case current.Exists == result.Exists && bytes.Equal(current.Data, result.Data):
		return nil
	case !result.Exists:
		return atomicfile.RemoveBeneath(root, path)
	}
	return atomicfile.WriteBeneath(root, path, result.Data, mode, true)
}
