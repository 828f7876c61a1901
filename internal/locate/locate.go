// Package locate finds the agent CLI an engine runs: an explicitly configured
// path, else the project's pinned npm install, else PATH.
package locate

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Config keys shared by every CLI engine.
const (
	// KeyPath is an explicit path to the CLI binary.
	KeyPath = "path"
	// KeyEnginesDir is the folder holding the pinned npm install
	// (its node_modules). Defaults to $CORRAL_ENGINES_DIR.
	KeyEnginesDir = "enginesDir"
)

// EnvEnginesDir names the environment variable giving the default engines
// folder.
const EnvEnginesDir = "CORRAL_ENGINES_DIR"

// Binary finds the CLI named bin (for example "claude", "codex", "copilot").
// It returns the path and where it came from ("config", "pinned", "PATH").
func Binary(bin string, config map[string]string) (path, source string, err error) {
	if p := config[KeyPath]; p != "" {
		if err := executable(p); err != nil {
			return "", "", fmt.Errorf("configured %s CLI %s: %w", bin, p, err)
		}
		return p, "config", nil
	}
	dir := config[KeyEnginesDir]
	if dir == "" {
		dir = os.Getenv(EnvEnginesDir)
	}
	if dir != "" {
		p := filepath.Join(dir, "node_modules", ".bin", bin)
		if executable(p) == nil {
			return p, "pinned", nil
		}
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		where := "PATH"
		if dir != "" {
			where = filepath.Join(dir, "node_modules", ".bin") + " or PATH"
		}
		return "", "", fmt.Errorf("no %s CLI in %s: run deploy/engines/install.sh or configure its path", bin, where)
	}
	return p, "PATH", nil
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return errors.New("is a directory")
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return errors.New("is not executable")
	}
	return nil
}
