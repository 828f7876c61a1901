package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// A warm-up removes the scratch folders of runners killed while warming up
// long ago, and leaves alone one that may be warming up now.
func TestWarmRemovesStaleScratchFolders(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	old := filepath.Join(tmp, warmPrefix+"old")
	fresh := filepath.Join(tmp, warmPrefix+"fresh")
	other := filepath.Join(tmp, "someone-else")
	for _, dir := range []string{old, fresh, other} {
		if err := os.MkdirAll(filepath.Join(dir, "session"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * staleWarmUp)
	for _, dir := range []string{old, other} {
		if err := os.Chtimes(dir, long, long); err != nil {
			t.Fatal(err)
		}
	}
	if err := Warm(context.Background(), Options{Engines: map[string]engine.Factory{"script": script.New}}); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]bool{old: false, fresh: true, other: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: kept %v, want %v", filepath.Base(dir), err == nil, want)
		}
	}
}
