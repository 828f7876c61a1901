//go:build !linux

package smallfs

import (
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
)

// Dir skips the test (and fails it in CI): mount namespaces are Linux's.
func Dir(t *testing.T, size int64) string {
	t.Helper()
	if testenv.InCI() {
		t.Fatal("CI is set, so this cannot be skipped: a small tmpfs needs Linux mount namespaces")
	}
	t.Skip("a small tmpfs needs Linux mount namespaces")
	return ""
}

// InChild reports whether this process is the child Dir runs a test in:
// never, where Dir skips.
func InChild() bool { return false }
