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
// changed.
func WriteFile(path string, current, result Snapshot, mode fs.FileMode) error {
	switch {
	case current.Exists == result.Exists && bytes.Equal(current.Data, result.Data):
		return nil
	case !result.Exists:
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete %s: %w", path, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return atomicfile.Write(path, result.Data, mode)
}
