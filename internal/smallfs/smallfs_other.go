//go:build !linux

package smallfs

import (
	"os"
	"testing"
)

// Dir skips the test (and fails it in CI): mount namespaces are Linux's.
func Dir(t *testing.T, size int64) string {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal("CI is set, so this cannot be skipped: a small tmpfs needs Linux mount namespaces")
	}
	t.Skip("a small tmpfs needs Linux mount namespaces")
	return ""
}
