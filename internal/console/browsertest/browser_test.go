package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/console"
	"github.com/corral-dev/corral/internal/smallfs"
	"github.com/corral-dev/corral/internal/testenv"
)

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestConsoleInChromium runs every web/e2e/*.test.mjs.
func TestConsoleInChromium(t *testing.T) {
	b := prepare(t)
	files, err := filepath.Glob(filepath.Join(b.web, "e2e", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no browser test files in web/e2e: %v", err)
	}
	b.run(t, files)
}

// TestConsoleStorageFailedInChromium runs web/e2e/storage.smallfs.mjs with
// the supervisor's state folder on a small, real tmpfs that fills up
// (smallfs: this test process, and the supervisor and Chromium it starts,
// have a mount namespace of their own).
func TestConsoleStorageFailedInChromium(t *testing.T) {
	var b *browserRig
	if !smallfs.InChild() {
		// Built once, in this process; the child finds the binaries.
		b = prepare(t)
		t.Setenv(envBin, b.bin)
	}
	root := smallfs.Dir(t, 16<<20)
	if root == "" {
		return
	}
	b = prepare(t)
	b.env = append(b.env, "CORRAL_SMALLFS_ROOT="+root)
	b.run(t, []string{filepath.Join(b.web, "e2e", "storage.smallfs.mjs")})
}

// envBin names a folder with the binaries already built.
const envBin = "CORRAL_BROWSERTEST_BIN"

// browserRig is what running a browser test file needs.
type browserRig struct {
	web, node, chromium, bin string
	env                      []string
}

// prepare checks for what the browser tests need (skipping, or failing in
// CI, without it) and builds the supervisor and runner binaries.
func prepare(t *testing.T) *browserRig {
	t.Helper()
	if testing.Short() {
		t.Skip("browser tests are long; not with -short")
	}
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b := &browserRig{web: filepath.Join(root, "web"), chromium: os.Getenv("CORRAL_CHROMIUM")}
	if b.chromium == "" {
		b.chromium = "/usr/bin/chromium"
	}
	b.node = testenv.NeedProgram(t, "node")
	goCmd := testenv.NeedGo(t)
	if !exists(b.chromium) {
		testenv.Missing(t, "Chromium", b.chromium+" does not exist (Debian's chromium package)")
	}
	if !exists(filepath.Join(b.web, "node_modules", "playwright-core")) {
		testenv.Missing(t, "the console's npm packages", "web/node_modules/playwright-core is missing (deploy/web.sh)")
	}
	if !console.Built(console.Assets()) {
		testenv.Missing(t, "the console's build", "this binary embeds no console (deploy/web.sh)")
	}

	if b.bin = os.Getenv(envBin); b.bin != "" {
		return b
	}
	b.bin = t.TempDir()
	build := exec.Command(goCmd, "build", "-o", b.bin+"/", "./cmd/supervisor", "./cmd/runner")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return b
}

// run runs Node's test runner on files, one at a time: each starts its own
// supervisor and Chromium.
func (b *browserRig) run(t *testing.T, files []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	args := append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, files...)
	cmd := exec.CommandContext(ctx, b.node, args...)
	cmd.Dir = b.web
	cmd.Env = append(os.Environ(), "CORRAL_BIN="+b.bin, "CORRAL_CHROMIUM="+b.chromium)
	cmd.Env = append(cmd.Env, b.env...)
	if os.Getenv("CORRAL_SCREENSHOTS") == "" {
		cmd.Env = append(cmd.Env, "CORRAL_SCREENSHOTS="+t.TempDir())
	}
	out, err := cmd.CombinedOutput()
	t.Logf("node --test %v:\n%s", files, out)
	if err != nil {
		t.Fatalf("browser tests failed: %v", err)
	}
}
