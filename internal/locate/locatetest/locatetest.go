// Package locatetest finds the project's pinned agent CLIs for tests.
package locatetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/internal/locate"
)

// EnginesDir returns the repository's deploy/engines folder (found by
// walking up from the test's folder to go.mod) after checking that the
// pinned CLI bin is installed there. A missing CLI fails the test: engine
// tests run against the real CLIs, never skip.
func EnginesDir(t testing.TB, bin string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
	engines := filepath.Join(dir, "deploy", "engines")
	if _, _, err := locate.Binary(bin, map[string]string{locate.KeyEnginesDir: engines}); err != nil {
		t.Fatalf("the pinned %s CLI is not installed (%v): run deploy/engines/install.sh", bin, err)
	}
	return engines
}
