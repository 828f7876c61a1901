package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/console"
	"github.com/corral-dev/corral/internal/testenv"
)

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestConsoleInChromium runs every web/e2e/*.test.mjs.
func TestConsoleInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are long; not with -short")
	}
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	web := filepath.Join(root, "web")
	chromium := os.Getenv("CORRAL_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	node := testenv.NeedProgram(t, "node")
	goCmd := testenv.NeedGo(t)
	if !exists(chromium) {
		testenv.Missing(t, "Chromium", chromium+" does not exist (Debian's chromium package)")
	}
	if !exists(filepath.Join(web, "node_modules", "playwright-core")) {
		testenv.Missing(t, "the console's npm packages", "web/node_modules/playwright-core is missing (deploy/web.sh)")
	}
	if !console.Built(console.Assets()) {
		testenv.Missing(t, "the console's build", "this binary embeds no console (deploy/web.sh)")
	}

	bin := t.TempDir()
	build := exec.Command(goCmd, "build", "-o", bin+"/", "./cmd/supervisor", "./cmd/runner")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	files, err := filepath.Glob(filepath.Join(web, "e2e", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no browser test files in web/e2e: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	// One file at a time: each starts its own supervisor and Chromium.
	args := append([]string{"--test", "--test-concurrency=1", "--test-reporter=spec"}, files...)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = web
	cmd.Env = append(os.Environ(), "CORRAL_BIN="+bin, "CORRAL_CHROMIUM="+chromium)
	if os.Getenv("CORRAL_SCREENSHOTS") == "" {
		cmd.Env = append(cmd.Env, "CORRAL_SCREENSHOTS="+t.TempDir())
	}
	out, err := cmd.CombinedOutput()
	t.Logf("node --test web/e2e/*.test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("browser tests failed: %v", err)
	}
}
