// Package testrunner gives the supervisor's tests the real runner: Path
// builds cmd/runner once per test process, Scenario writes what the script
// engine plays, and a fault (Env, Main) puts the test binary between the
// supervisor and the real runner to misbehave in one chosen way, for the
// tests of crashes, silence, garbage and refusals.
package testrunner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/internal/testbin"
)

var runner testbin.Once

// Path builds cmd/runner once per test process, as the Makefile does, and
// returns its path.
func Path(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(runner.Build(tb, "github.com/corral-dev/corral/cmd/runner"), "runner")
}

// Remove deletes what Path built; TestMain calls it after the tests ran.
func Remove() { runner.Remove() }

// Scenario writes a script-engine scenario (JSON or YAML) to a file of the
// test's own and returns its path, for wire.Spec.Scenario.
func Scenario(tb testing.TB, body string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "scenario.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
