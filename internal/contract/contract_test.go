package contract

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/go from the Go samples")

// golden is where the Go samples are checked in.
var golden = filepath.Join("testdata", "go")

// TestGoSamplesAreCurrent: the checked-in samples are what Go writes now,
// so the TypeScript side reads what Go really writes.
func TestGoSamplesAreCurrent(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		os.RemoveAll(golden)
		if err := os.MkdirAll(golden, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(golden, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, err := os.ReadDir(golden)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(files) {
		t.Errorf("%s holds %d files, the samples are %d: run go test ./internal/contract -update", golden, len(entries), len(files))
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(golden, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go test ./internal/contract -update (%v)", name, err)
		}
	}
}

// TestGoSamplesFollowTheSchema validates every sample and decodes it back.
func TestGoSamplesFollowTheSchema(t *testing.T) {
	defs, err := CheckFolder(golden)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range Samples() {
		names = append(names, s.Name)
	}
	if err := Covered(names, defs); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(names, "") {
		t.Fatal("a sample has no name")
	}
}
