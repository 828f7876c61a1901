// Package testrunner gives the supervisor's tests the real runner: Path
// builds cmd/runner once per test process, Scenario writes what the script
// engine plays, and a fault (Env, Main) puts the test binary between the
// supervisor and the real runner to misbehave in one chosen way, for the
// tests of crashes, silence, garbage and refusals.
package testrunner

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var built struct {
	once sync.Once
	dir  string
	err  error
}

// Path builds cmd/runner once per test process, as the Makefile does, and
// returns its path. A missing go command fails the test: the tests that
// call Path run wherever the package's own tests run.
func Path(tb testing.TB) string {
	tb.Helper()
	built.once.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			built.err = fmt.Errorf("the go command is needed to build the runner: %w", err)
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "corral-testrunner-"); built.err != nil {
			return
		}
		cmd := exec.Command(gobin, "build", "-o", built.dir+string(os.PathSeparator), "github.com/corral-dev/corral/cmd/runner")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			built.err = fmt.Errorf("go build cmd/runner: %v\n%s", err, out.String())
		}
	})
	if built.err != nil {
		tb.Fatal(built.err)
	}
	return filepath.Join(built.dir, "runner")
}

// Remove deletes what Path built; TestMain calls it after the tests ran.
func Remove() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

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
