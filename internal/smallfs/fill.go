//go:build unix

package smallfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Fill leaves about room bytes free on the file system of dir, with a file
// in dir that it returns, for the test to remove when room should return.
// Others may write on the file system meanwhile (a live runner does): when
// they take the space first and the filler's write meets a full disk, the
// filler gives back room bytes, so that about room is free all the same.
func Fill(t testing.TB, dir string, room int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := f.Write(make([]byte, max(free-room, 0)))
	switch {
	case errors.Is(err, syscall.ENOSPC):
		if err := f.Truncate(max(int64(n)-room, 0)); err != nil {
			t.Fatal(err)
		}
	case err != nil:
		t.Fatal(err)
	}
	if err := f.Close(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	return path
}
