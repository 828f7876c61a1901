// Package browsertest runs security tests in real headless Chromium:
// Debian's chromium package driven by playwright-core, the copy the web
// console's toolchain pins (web/package.json, installed by deploy/web.sh
// from make deps). internal/console/browsertest drives the console's own
// pages the same way; this package drives hand-made pages against a bare
// supervisor, to test the API's browser access (docs/api.md, "Browsers").
//
// A test writes what the browser does as an ES module in this folder and
// runs it with Run, which hands it a JSON configuration in
// CORRAL_BROWSER_TEST and returns what it printed. The module launches the
// browser with launch (launch.mjs), which passes the flags a headless run
// in a container needs and a fresh user data folder.
//
// When Node.js, the driver or Chromium is missing, a test skips saying
// which; under CI=true it fails instead (internal/testenv).
package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/testenv"
)

// Browser is what a browser test needs: Node.js, the driver and Chromium.
type Browser struct {
	Node       string // the node program
	Dir        string // this folder: the scripts
	Playwright string // playwright-core's entry point
	Chromium   string // the Chromium executable
}

// Find locates Node.js, the installed driver and Chromium, or ends the test
// through testenv.Missing.
func Find(t testing.TB) *Browser {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b := &Browser{Dir: filepath.Dir(file), Node: testenv.NeedProgram(t, "node")}
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b.Playwright = filepath.Join(root, "web", "node_modules", "playwright-core", "index.mjs")
	if _, err := os.Stat(b.Playwright); err != nil {
		testenv.Missing(t, "playwright-core", "web/node_modules/playwright-core is missing (deploy/web.sh)")
	}
	// Debian's /usr/bin/chromium is a shell wrapper; the program itself
	// starts the same without it.
	for _, c := range []string{os.Getenv("CORRAL_CHROMIUM"), "/usr/lib/chromium/chromium", "/usr/bin/chromium"} {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			b.Chromium = c
			return b
		}
	}
	testenv.Missing(t, "Chromium", "neither /usr/lib/chromium/chromium nor /usr/bin/chromium exists (Debian's chromium package)")
	return nil
}

// Run runs script (a .mjs file in this folder) with cfg as its
// configuration and a fresh user data folder, within timeout, and returns
// its standard output. A script that fails fails the test with its
// standard error.
func (b *Browser) Run(t testing.TB, script string, cfg any, timeout time.Duration) []byte {
	t.Helper()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.Node, filepath.Join(b.Dir, script))
	cmd.Dir = b.Dir
	cmd.Env = append(os.Environ(),
		"CORRAL_BROWSER_TEST="+string(raw),
		"CORRAL_PLAYWRIGHT="+b.Playwright,
		"CORRAL_CHROMIUM="+b.Chromium,
		"CORRAL_USER_DATA_DIR="+t.TempDir(),
		"CORRAL_NO_SANDBOX="+fmt.Sprint(os.Geteuid() == 0))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The driver and the browser it starts share a process group, which
	// goes as a whole: on a timeout, and after the run.
	proc.ConfigureContext(cmd, 10*time.Second)
	err = cmd.Run()
	proc.KillGroup(cmd.Process.Pid)
	if err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s\nstdout:\n%s", script, err, tail(stderr.String(), 4000), tail(stdout.String(), 2000))
	}
	return stdout.Bytes()
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
