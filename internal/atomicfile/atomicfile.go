// Package atomicfile replaces files so that a reader sees the old content or
// the new, never a mix, and a crash leaves one of the two.
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data: a temporary file beside it, synced, given
// perm, renamed over path, and the folder synced so the rename is durable.
func Write(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, true)
}

// WriteNoSync replaces path with data as Write does, readers seeing the old
// content or the new, but syncs nothing: for a file a later Write replaces
// durably, where a crash before that loses nothing a caller was promised.
func WriteNoSync(path string, data []byte, perm fs.FileMode) error {
	return write(path, data, perm, false)
}

func write(path string, data []byte, perm fs.FileMode, sync bool) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if err := fill(f, data, perm, sync); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	// A folder that cannot be synced still holds the new file.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// fill writes data to a new temporary file, gives it perm (Chmod rather
// than a create mode, which the umask would trim), syncs it when asked and
// closes it.
func fill(f *os.File, data []byte, perm fs.FileMode, sync bool) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	return f.Close()
}
