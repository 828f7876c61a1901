//go:build unix

package smallfs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Fill leaves about room bytes free on the file system of dir, with a file
// in dir that it returns, for the test to remove when room should return.
func Fill(t testing.TB, dir string, room int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	path := filepath.Join(dir, "filler")
	if err := os.WriteFile(path, make([]byte, max(free-room, 0)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
