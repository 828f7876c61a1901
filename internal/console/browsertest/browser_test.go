package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/console"
)

// need skips the test with reason when ok is false, or fails it under CI.
func need(t *testing.T, ok bool, reason string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: this test must run; make deps installs what it needs)", reason)
	}
	t.Skipf("skipped: %s (make deps installs it)", reason)
}

func repoRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test's source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestConsoleInChromium runs web/e2e/console.test.mjs.
func TestConsoleInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are long; not with -short")
	}
	root := repoRoot(t)
	web := filepath.Join(root, "web")
	chromium := os.Getenv("CORRAL_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	node, err := exec.LookPath("node")
	need(t, err == nil, "node is not on PATH")
	need(t, exists(chromium), "Chromium is not installed at "+chromium)
	need(t, exists(filepath.Join(web, "node_modules", "playwright-core")), "the console's npm packages are not installed (deploy/web.sh)")
	need(t, console.Built(console.Assets()), "the console is not built into this binary (deploy/web.sh)")

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/supervisor", "./cmd/runner")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-concurrency=1", "--test-reporter=spec",
		filepath.Join("e2e", "console.test.mjs"))
	cmd.Dir = web
	cmd.Env = append(os.Environ(), "CORRAL_BIN="+bin, "CORRAL_CHROMIUM="+chromium)
	if os.Getenv("CORRAL_SCREENSHOTS") == "" {
		cmd.Env = append(cmd.Env, "CORRAL_SCREENSHOTS="+t.TempDir())
	}
	out, err := cmd.CombinedOutput()
	t.Logf("node --test e2e/console.test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("browser tests failed: %v", err)
	}
}
