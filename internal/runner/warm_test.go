package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-dev/corral/internal/engines/script"
	"github.com/corral-dev/corral/pkg/engine"
)

// Warm runs a whole scratch session and leaves nothing behind: no folder,
// no goroutine.
func TestWarmLeavesNothingBehind(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	if err := Warm(context.Background(), Options{Engines: map[string]engine.Factory{"script": script.New}}); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("left in the temporary folder: %v", filepath.Join(tmp, left[0].Name()))
	}
}

func TestWarmNeedsTheScriptEngine(t *testing.T) {
	if err := Warm(context.Background(), Options{Engines: map[string]engine.Factory{}}); err == nil {
		t.Fatal("warmed up without the script engine")
	}
}
